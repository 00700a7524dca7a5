//! CSRF tokens of the pages seen before signing in (sign-in, sign-up), without a session row.
//!
//! A signed double-submit cookie: the browser gets a random `voiced_csrf` cookie (HttpOnly,
//! SameSite=Lax, path `/console`, Secure behind https) and its forms carry
//! `HMAC-SHA256(key, cookie)` as `csrf_token`, the key derived from the server's signing secret.
//! A POST is accepted when the token is the MAC of the cookie it came with (constant-time
//! compare). Another site can neither read the cookie nor compute the MAC, so it cannot forge a
//! sign-in or sign-up form; and a page view stores nothing (the session row is made when a
//! sign-in or sign-up succeeds). Every serve process shares the signing secret, so a token from
//! one is good on another.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::response::Response;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use tower_sessions::cookie::{Cookie, SameSite};

use super::page::PageError;
use crate::console::ConsoleState;

/// Name of the anonymous CSRF cookie.
pub const CSRF_COOKIE: &str = "voiced_csrf";

/// This browser's anonymous CSRF token (and the cookie to set, for a browser that had none).
pub struct AnonymousCsrf {
    /// The cookie's value as the request sent it (`None`: it sent none, or not one of ours).
    sent: Option<String>,
    /// The cookie's value from this response on.
    nonce: String,
    key: [u8; 32],
    secure: bool,
}

fn well_formed(nonce: &str) -> bool {
    nonce.len() == 43
        && nonce
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn mac(key: &[u8; 32], nonce: &str) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key");
    mac.update(nonce.as_bytes());
    mac
}

impl FromRequestParts<ConsoleState> for AnonymousCsrf {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &ConsoleState,
    ) -> Result<Self, Self::Rejection> {
        let sent = parts
            .headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(Cookie::split_parse)
            .filter_map(Result::ok)
            .find(|c| c.name() == CSRF_COOKIE && well_formed(c.value()))
            .map(|c| c.value().to_owned());
        let nonce = sent.clone().unwrap_or_else(|| {
            let mut bytes = [0u8; 32];
            rand::rng().fill_bytes(&mut bytes);
            URL_SAFE_NO_PAD.encode(bytes)
        });
        Ok(Self {
            sent,
            nonce,
            key: state.console.csrf_key,
            secure: state.console.secure_cookies,
        })
    }
}

impl AnonymousCsrf {
    /// The token the page's forms carry.
    pub fn token(&self) -> String {
        URL_SAFE_NO_PAD.encode(mac(&self.key, &self.nonce).finalize().into_bytes())
    }

    /// Refuses (403 page) a form whose token is not the MAC of the cookie it came with.
    pub fn check(&self, presented: &str) -> Result<(), PageError> {
        let Some(sent) = &self.sent else {
            return Err(PageError::Csrf);
        };
        let Ok(tag) = URL_SAFE_NO_PAD.decode(presented) else {
            return Err(PageError::Csrf);
        };
        mac(&self.key, sent)
            .verify_slice(&tag)
            .map_err(|_| PageError::Csrf)
    }

    /// `response` with the cookie set, when the browser does not have it yet.
    pub fn attach(&self, mut response: Response) -> Response {
        if self.sent.is_none() {
            let cookie = Cookie::build((CSRF_COOKIE, self.nonce.clone()))
                .path("/console")
                .http_only(true)
                .same_site(SameSite::Lax)
                .secure(self.secure)
                .build();
            if let Ok(value) = HeaderValue::from_str(&cookie.to_string()) {
                response.headers_mut().append(header::SET_COOKIE, value);
            }
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csrf(sent: Option<&str>) -> AnonymousCsrf {
        AnonymousCsrf {
            sent: sent.map(str::to_owned),
            nonce: sent.unwrap_or("A".repeat(43).as_str()).to_owned(),
            key: [7; 32],
            secure: false,
        }
    }

    #[test]
    fn the_token_is_the_mac_of_the_cookie_it_came_with() {
        let nonce = "n".repeat(43);
        let page = csrf(Some(&nonce));
        let token = page.token();
        assert!(page.check(&token).is_ok());
        assert!(page.check("").is_err());
        assert!(page.check(&nonce).is_err());
        // Another browser's cookie, or none at all, does not go with this token.
        assert!(csrf(Some(&"m".repeat(43))).check(&token).is_err());
        assert!(csrf(None).check(&token).is_err());
        // Another key (another deployment's secret) makes other tokens.
        let other = AnonymousCsrf {
            key: [8; 32],
            ..csrf(Some(&nonce))
        };
        assert_ne!(other.token(), token);
    }
}
