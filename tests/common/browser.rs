//! A browser without JavaScript for the console and OAuth pages: a cookie jar (the session
//! cookie, and the anonymous CSRF cookie of the sign-in and sign-up pages), no redirects
//! followed, forms posted with the page's CSRF token.

use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use reqwest::{Client, StatusCode, redirect};

use super::TestApp;

pub const PASSWORD: &str = "a long enough passphrase";

/// A browser without JavaScript: a cookie jar, no redirects followed.
pub struct Browser {
    client: Client,
    base: String,
    /// The `Cookie` header it sends (`name=value; …`), once the server set a cookie.
    pub cookie: Option<String>,
    jar: Vec<(String, String)>,
    /// Sent as `X-Forwarded-For` on every request (a client behind a proxy).
    pub forwarded_for: Option<String>,
}

pub struct Page {
    pub status: StatusCode,
    pub location: Option<String>,
    pub content_type: String,
    pub retry_after: Option<String>,
    pub cache_control: Option<String>,
    pub set_cookie: Vec<String>,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Browser {
    pub fn new(app: &TestApp) -> Self {
        Self {
            // No idle connection is kept (see `super::http_client`).
            client: super::http_client_builder()
                .redirect(redirect::Policy::none())
                .build()
                .unwrap(),
            base: app.base.clone(),
            cookie: None,
            jar: Vec::new(),
            forwarded_for: None,
        }
    }

    pub async fn send(&mut self, request: reqwest::RequestBuilder) -> Page {
        let request = match &self.cookie {
            Some(cookie) => request.header(COOKIE, cookie),
            None => request,
        };
        let request = match &self.forwarded_for {
            Some(client) => request.header("x-forwarded-for", client),
            None => request,
        };
        let response = request.send().await.unwrap();
        let header = |name| {
            response
                .headers()
                .get(name)
                .map(|v: &reqwest::header::HeaderValue| v.to_str().unwrap().to_owned())
        };
        let set_cookie: Vec<String> = response
            .headers()
            .get_all(SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect();
        for set in &set_cookie {
            let pair = set.split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            self.jar.retain(|(n, _)| n != name);
            // A removal (sign-out) sets an empty value.
            if !value.is_empty() {
                self.jar.push((name.to_owned(), value.to_owned()));
            }
        }
        let pairs: Vec<String> = self.jar.iter().map(|(n, v)| format!("{n}={v}")).collect();
        self.cookie = (!pairs.is_empty()).then(|| pairs.join("; "));
        Page {
            status: response.status(),
            location: header(LOCATION),
            content_type: header(reqwest::header::CONTENT_TYPE).unwrap_or_default(),
            retry_after: header(reqwest::header::RETRY_AFTER),
            cache_control: header(reqwest::header::CACHE_CONTROL),
            set_cookie,
            headers: response.headers().clone(),
            body: response.text().await.unwrap(),
        }
    }

    pub async fn get(&mut self, path: &str) -> Page {
        let request = self.client.get(format!("{}{path}", self.base));
        self.send(request).await
    }

    pub async fn post(&mut self, path: &str, form: &[(&str, &str)]) -> Page {
        let request = self.client.post(format!("{}{path}", self.base)).form(form);
        self.send(request).await
    }

    /// GETs `path` and posts `form` plus the page's CSRF token to `action`.
    pub async fn submit(&mut self, path: &str, action: &str, form: &[(&str, &str)]) -> Page {
        let page = self.get(path).await;
        assert_eq!(page.status, 200, "{path}: {}", page.body);
        let token = csrf_of(&page.body);
        let mut fields = form.to_vec();
        fields.push(("csrf_token", &token));
        self.post(action, &fields).await
    }

    pub async fn sign_up(&mut self, email: &str) -> Page {
        self.submit(
            "/console/sign-up",
            "/console/sign-up",
            &[("email", email), ("password", PASSWORD)],
        )
        .await
    }

    /// The value of cookie `name`, if the browser holds it.
    pub fn cookie_value(&self, name: &str) -> Option<&str> {
        self.jar
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub async fn sign_in(&mut self, email: &str, password: &str) -> Page {
        self.submit(
            "/console/sign-in",
            "/console/sign-in",
            &[("email", email), ("password", password)],
        )
        .await
    }
}

/// Follows `GET /oauth/authorize` to the consent page, signing in on the way when the browser
/// has no session. Returns the consent page.
pub async fn consent_page(browser: &mut Browser, path: &str, email: &str) -> Page {
    let page = browser.get(path).await;
    assert_eq!(page.status, 303, "{path}: {}", page.body);
    let consent = page.location.expect("to the consent page");
    assert!(consent.starts_with("/console/authorize?"), "{consent}");
    let page = browser.get(&consent).await;
    if page.status == 200 {
        return page;
    }
    // Not signed in: the console's own sign-in, which comes back here.
    assert_eq!(page.status, 303, "{}", page.body);
    let sign_in = page.location.unwrap();
    assert!(sign_in.starts_with("/console/sign-in?next="), "{sign_in}");
    let page = browser.get(&sign_in).await;
    assert_eq!(page.status, 200);
    assert_eq!(field_of(&page.body, "next"), consent);
    let fields = [
        ("email", email),
        ("password", PASSWORD),
        ("csrf_token", &csrf_of(&page.body)),
        ("next", &field_of(&page.body, "next")),
    ];
    let page = browser.post("/console/sign-in", &fields).await;
    assert_eq!(page.status, 303, "{}", page.body);
    assert_eq!(page.location.as_deref(), Some(consent.as_str()));
    let page = browser.get(&consent).await;
    assert_eq!(page.status, 200, "{}", page.body);
    page
}

pub fn csrf_of(html: &str) -> String {
    let marker = "name=\"csrf_token\" value=\"";
    let start = html.find(marker).expect("a form with a csrf_token") + marker.len();
    html[start..][..html[start..].find('"').unwrap()].to_owned()
}

/// The value of the form field `name` in `html`, HTML character references decoded (askama
/// escapes `&`, `<`, `>`, `"` and `'`, as named or numeric references).
pub fn field_of(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("a form field {name}"))
        + marker.len();
    unescape(&html[start..][..html[start..].find('"').unwrap()])
}

fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let end = rest.find(';').expect("a terminated character reference");
        let entity = &rest[1..end];
        let decoded = match entity {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let code = match entity.strip_prefix("#x").or(entity.strip_prefix("#X")) {
                    Some(hex) => u32::from_str_radix(hex, 16),
                    None => entity.trim_start_matches('#').parse(),
                };
                char::from_u32(code.expect("a numeric reference")).expect("a character")
            }
        };
        out.push(decoded);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}
