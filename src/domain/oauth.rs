//! OAuth secrets (authorization codes, access and refresh tokens) and PKCE.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::SecretHash;

/// Access tokens start with this (and API keys with `vk_`), so one header carries either.
pub const ACCESS_TOKEN_PREFIX: &str = "vat_";
pub const REFRESH_TOKEN_PREFIX: &str = "vrt_";

/// A new opaque secret: `prefix` then 32 random bytes in base64url. Only its SHA-256 is stored.
pub struct OAuthSecret(String);

impl OAuthSecret {
    pub fn generate(prefix: &str) -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Self(format!("{prefix}{}", URL_SAFE_NO_PAD.encode(bytes)))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }

    pub fn hash(&self) -> SecretHash {
        SecretHash::of(&self.0)
    }
}

/// RFC 7636 §4.1: 43 to 128 characters of `[A-Za-z0-9-._~]`. A code challenge (the S256 of a
/// verifier in base64url: 43 characters) follows the same syntax.
pub fn is_pkce_string(value: &str) -> bool {
    (43..=128).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// Whether `verifier` is the S256 pre-image of `challenge`, compared in constant time.
pub fn pkce_s256_matches(verifier: &str, challenge: &str) -> bool {
    if !is_pkce_string(verifier) {
        return false;
    }
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    bool::from(computed.as_bytes().ct_eq(challenge.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_appendix_b() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(pkce_s256_matches(verifier, challenge));
        assert!(!pkce_s256_matches(
            verifier,
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cN"
        ));
        assert!(!pkce_s256_matches("short", challenge));
        // `plain` is not S256: the verifier itself is not accepted as its challenge.
        assert!(!pkce_s256_matches(verifier, verifier));
    }

    #[test]
    fn secrets() {
        let a = OAuthSecret::generate(ACCESS_TOKEN_PREFIX);
        assert!(a.expose().starts_with("vat_"));
        assert_eq!(a.expose().len(), 4 + 43);
        assert_ne!(
            a.expose(),
            OAuthSecret::generate(ACCESS_TOKEN_PREFIX).expose()
        );
        assert!(is_pkce_string(&"a".repeat(43)));
        assert!(!is_pkce_string(&"a".repeat(42)));
        assert!(!is_pkce_string(&"a".repeat(129)));
        assert!(!is_pkce_string(&format!("{}+", "a".repeat(43))));
    }
}
