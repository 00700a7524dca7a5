//! The OAuth 2.1 authorization server and OAuth tokens on /v1, over real HTTP and PostgreSQL,
//! driven headlessly the way an MCP client does it: discovery from a 401, dynamic registration
//! (or a client ID metadata document), the console's sign-in and consent pages, PKCE, refresh
//! rotation, revocation. See docs/oauth.md.

use std::collections::HashMap;

use crate::common::browser::{Browser, PASSWORD, Page, consent_page, csrf_of, field_of};
use crate::common::fixtures;
use crate::common::{TestApp, json};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use reqwest::header::{CACHE_CONTROL, LOCATION, WWW_AUTHENTICATE};
use reqwest::redirect;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use voiced::domain::{EngineId, Plan, Scope};

const CALLBACK: &str = "http://127.0.0.1:9/callback";

/// A query parameter; `None` leaves it out.
type Param<'a> = (&'a str, Option<&'a str>);

/// A client without a redirect policy: every 3xx is read, not followed.
fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(redirect::Policy::none())
        .build()
        .unwrap()
}

/// An account on `plan` that can sign in; returns (account id, email).
async fn user(app: &TestApp, plan: Plan) -> (String, String) {
    let account = app.account(plan).await;
    fixtures::set_password(app, &account, PASSWORD).await;
    let email = format!("{account}@example.com");
    (account, email)
}

struct Pkce {
    verifier: String,
    challenge: String,
}

impl Pkce {
    fn new() -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let verifier = URL_SAFE_NO_PAD.encode(bytes);
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        Self {
            verifier,
            challenge,
        }
    }
}

/// `POST /oauth/register` for a public client; returns its client_id.
async fn register(app: &TestApp, name: &str, redirect_uri: &str) -> String {
    let response = app
        .post("/oauth/register")
        .json(&json!({
            "client_name": name,
            "redirect_uris": [redirect_uri],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()[CACHE_CONTROL], "no-store");
    let (status, body) = json(response).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["token_endpoint_auth_method"], "none");
    assert_eq!(body["redirect_uris"], json!([redirect_uri]));
    body["client_id"].as_str().unwrap().to_owned()
}

/// An authorization request (path and query) with `extra` parameters; `None` values leave a
/// parameter out.
fn authorize_path(params: &[Param]) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (name, value) in params {
        if let Some(value) = value {
            query.append_pair(name, value);
        }
    }
    format!("/oauth/authorize?{}", query.finish())
}

struct Request<'a> {
    client_id: &'a str,
    redirect_uri: &'a str,
    pkce: &'a Pkce,
    scope: Option<&'a str>,
    resource: Option<&'a str>,
    state: &'a str,
}

impl Request<'_> {
    fn path(&self) -> String {
        authorize_path(&[
            ("response_type", Some("code")),
            ("client_id", Some(self.client_id)),
            ("redirect_uri", Some(self.redirect_uri)),
            ("code_challenge", Some(&self.pkce.challenge)),
            ("code_challenge_method", Some("S256")),
            ("scope", self.scope),
            ("resource", self.resource),
            ("state", Some(self.state)),
        ])
    }
}

/// Posts the consent form's answer; returns the redirect's query parameters.
async fn answer(browser: &mut Browser, consent: &Page, decision: &str) -> HashMap<String, String> {
    let fields = [
        ("request", field_of(&consent.body, "request")),
        ("decision", decision.to_owned()),
        ("csrf_token", csrf_of(&consent.body)),
    ];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let page = browser.post("/console/authorize", &fields).await;
    assert_eq!(page.status, 302, "{}", page.body);
    callback(&page.location.unwrap())
}

/// The query of a redirect to [`CALLBACK`] (or another registered redirect URI).
fn callback(location: &str) -> HashMap<String, String> {
    let url = url::Url::parse(location).unwrap();
    url.query_pairs().into_owned().collect()
}

async fn token_request(app: &TestApp, form: &[(&str, &str)]) -> (u16, Value) {
    let response = app.post("/oauth/token").form(form).send().await.unwrap();
    assert_eq!(response.headers()[CACHE_CONTROL], "no-store");
    json(response).await
}

struct Tokens {
    access: String,
    refresh: String,
    body: Value,
}

impl Tokens {
    fn from(status: u16, body: Value) -> Self {
        assert_eq!(status, 200, "{body}");
        Self {
            access: body["access_token"].as_str().unwrap().to_owned(),
            refresh: body["refresh_token"].as_str().unwrap().to_owned(),
            body,
        }
    }
}

/// The whole authorization: consent (signing in if needed), then the code for tokens.
async fn authorize(
    app: &TestApp,
    browser: &mut Browser,
    client_id: &str,
    email: &str,
    scope: Option<&str>,
    resource: Option<&str>,
) -> Tokens {
    let pkce = Pkce::new();
    let request = Request {
        client_id,
        redirect_uri: CALLBACK,
        pkce: &pkce,
        scope,
        resource,
        state: "s1",
    };
    let consent = consent_page(browser, &request.path(), email).await;
    let params = answer(browser, &consent, "allow").await;
    let (status, body) = token_request(
        app,
        &[
            ("grant_type", "authorization_code"),
            ("code", &params["code"]),
            ("redirect_uri", CALLBACK),
            ("client_id", client_id),
            ("code_verifier", &pkce.verifier),
        ],
    )
    .await;
    Tokens::from(status, body)
}

async fn get_with(app: &TestApp, path: &str, token: &str) -> reqwest::Response {
    app.get(path).bearer_auth(token).send().await.unwrap()
}

fn challenge(response: &reqwest::Response) -> String {
    response.headers()[WWW_AUTHENTICATE]
        .to_str()
        .unwrap()
        .to_owned()
}

/// `name="value"` out of a `WWW-Authenticate` challenge.
fn auth_param(challenge: &str, name: &str) -> Option<String> {
    let marker = format!("{name}=\"");
    let start = challenge.find(&marker)? + marker.len();
    Some(challenge[start..][..challenge[start..].find('"')?].to_owned())
}

#[tokio::test]
async fn an_mcp_style_client_discovers_registers_authorizes_refreshes_and_revokes() {
    let app = TestApp::start_self_addressed(&[]).await;
    let base = app.base.clone();
    let (account, email) = user(&app, Plan::Pro).await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "af_heart")
        .await;
    let http = http();

    // 1. No credential: 401 whose challenge names the protected-resource metadata (readable
    // by browser-based clients too: the header is exposed to other origins).
    let response = http
        .get(format!("{base}/v1/voices"))
        .header("origin", "https://inspector.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let exposed = response.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    assert!(exposed.contains("www-authenticate"), "{exposed}");
    let header = challenge(&response);
    assert!(!header.contains("error="), "no token was sent: {header}");
    let metadata_url = auth_param(&header, "resource_metadata").expect(&header);
    assert_eq!(
        metadata_url,
        format!("{base}/.well-known/oauth-protected-resource/v1")
    );
    assert_eq!(
        auth_param(&header, "scope").as_deref(),
        Some("voice:read voice:generate")
    );

    // 2. Protected-resource metadata (RFC 9728), for the API and for the agent interface.
    let (status, resource) = json(http.get(&metadata_url).send().await.unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(resource["resource"], format!("{base}/v1"));
    assert_eq!(resource["authorization_servers"], json!([base]));
    assert_eq!(resource["bearer_methods_supported"], json!(["header"]));
    let (_, mcp) = json(
        http.get(format!("{base}/.well-known/oauth-protected-resource/mcp"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(mcp["resource"], format!("{base}/mcp"));
    let (_, root) = json(
        http.get(format!("{base}/.well-known/oauth-protected-resource"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(root["resource"], base);

    // 3. Authorization server metadata (RFC 8414): the issuer is the configured base URL,
    // whatever Host the request carried.
    let issuer = resource["authorization_servers"][0].as_str().unwrap();
    let (status, server) = json(
        http.get(format!("{issuer}/.well-known/oauth-authorization-server"))
            .header("host", "evil.example.com")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(server["issuer"], base);
    assert_eq!(server["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(
        server["authorization_response_iss_parameter_supported"],
        true
    );
    assert_eq!(server["client_id_metadata_document_supported"], true);
    assert_eq!(
        server["token_endpoint_auth_methods_supported"],
        json!(["none"])
    );
    for endpoint in [
        "authorization_endpoint",
        "token_endpoint",
        "registration_endpoint",
        "revocation_endpoint",
    ] {
        assert!(
            server[endpoint].as_str().unwrap().starts_with(&base),
            "{endpoint}: {server}"
        );
    }

    // Browser-based clients may call the token endpoint from another origin.
    let preflight = http
        .request(reqwest::Method::OPTIONS, format!("{base}/oauth/token"))
        .header("origin", "https://inspector.example")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "content-type")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.headers()["access-control-allow-origin"], "*");

    // 4. Dynamic registration.
    let client_id = register(&app, "Test agent", CALLBACK).await;

    // 5. The authorization request: the console's sign-in, then the consent page.
    let pkce = Pkce::new();
    let request = Request {
        client_id: &client_id,
        redirect_uri: CALLBACK,
        pkce: &pkce,
        scope: Some("voice:read voice:generate"),
        resource: Some(&format!("{base}/v1")),
        state: "opaque-state-123",
    };
    assert_eq!(
        server["authorization_endpoint"],
        format!("{base}/oauth/authorize")
    );
    let mut browser = Browser::new(&app);
    let consent = consent_page(&mut browser, &request.path(), &email).await;
    assert!(consent.body.contains("Test agent"), "{}", consent.body);
    assert!(consent.body.contains(&email));
    assert!(consent.body.contains("127.0.0.1:9"), "the redirect host");
    assert!(consent.body.contains("voice:generate"));
    let csp = consent.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(
        csp.contains("form-action 'self' http://127.0.0.1:9"),
        "{csp}"
    );
    assert_eq!(consent.headers["x-frame-options"], "DENY");
    // The form needs this session's CSRF token.
    let forged = browser
        .post(
            "/console/authorize",
            &[
                ("request", &field_of(&consent.body, "request")),
                ("decision", "allow"),
                ("csrf_token", "forged"),
            ],
        )
        .await;
    assert_eq!(forged.status, 403);
    assert!(forged.location.is_none());

    // 6. Allow: back to the client with code, state and iss (RFC 9207).
    let params = answer(&mut browser, &consent, "allow").await;
    assert_eq!(params["state"], "opaque-state-123");
    assert_eq!(params["iss"], base);
    let code = &params["code"];

    // 7. The code for tokens, with the PKCE verifier.
    let (status, body) = token_request(
        &app,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", CALLBACK),
            ("client_id", &client_id),
            ("code_verifier", &pkce.verifier),
            ("resource", &format!("{base}/v1")),
        ],
    )
    .await;
    let first = Tokens::from(status, body);
    assert!(first.access.starts_with("vat_"), "{}", first.body);
    assert!(first.refresh.starts_with("vrt_"));
    assert_eq!(first.body["token_type"], "Bearer");
    assert_eq!(first.body["expires_in"], 3600);
    assert_eq!(first.body["scope"], "voice:read voice:generate");

    // 8. The token on /v1: the account's data, and no RateLimit headers (spec §8.1).
    let response = get_with(&app, "/v1/voices", &first.access).await;
    assert!(response.headers().get("ratelimit").is_none());
    assert!(response.headers().get("ratelimit-policy").is_none());
    let (status, voices) = json(response).await;
    assert_eq!(status, 200, "{voices}");
    assert_eq!(voices["data"][0]["name"], "Narrator");
    // A key of the same account still gets them.
    let (_, key) = app.key(&account, &Scope::ALL).await;
    let response = app
        .get("/v1/voices")
        .header("x-api-key", &key)
        .send()
        .await
        .unwrap();
    assert!(response.headers().get("ratelimit").is_some());

    // 9. Refresh: a new pair; the old refresh token is spent.
    let refresh = |token: String| {
        let (app, client_id) = (&app, client_id.clone());
        async move {
            token_request(
                app,
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", &token),
                    ("client_id", &client_id),
                ],
            )
            .await
        }
    };
    let (status, body) = refresh(first.refresh.clone()).await;
    let second = Tokens::from(status, body);
    assert_ne!(second.refresh, first.refresh);
    assert_ne!(second.access, first.access);
    assert_eq!(
        get_with(&app, "/v1/voices", &second.access).await.status(),
        200
    );

    // 10. The old refresh token again: refused, and the whole family is revoked.
    let (status, body) = refresh(first.refresh.clone()).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"], "invalid_grant");
    let response = get_with(&app, "/v1/voices", &second.access).await;
    assert_eq!(response.status(), 401);
    assert!(challenge(&response).contains("error=\"invalid_token\""));
    let (status, body) = refresh(second.refresh.clone()).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );

    // 11. A new authorization (the browser is signed in: straight to consent), then revoked
    // through /oauth/revoke: the next call is refused.
    let third = authorize(&app, &mut browser, &client_id, &email, None, None).await;
    assert_eq!(
        get_with(&app, "/v1/voices", &third.access).await.status(),
        200
    );
    let response = app
        .post("/oauth/revoke")
        .form(&[
            ("token", third.refresh.as_str()),
            ("token_type_hint", "refresh_token"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()[CACHE_CONTROL], "no-store");
    let response = get_with(&app, "/v1/voices", &third.access).await;
    assert_eq!(response.status(), 401);
    // Revoking an unknown token is not an error (RFC 7009 §2.2).
    let response = app
        .post("/oauth/revoke")
        .form(&[("token", "vat_unknown")])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    app.stop().await;
}

#[tokio::test]
async fn authorization_requests_are_checked_before_anything_is_shown() {
    let app = TestApp::start_self_addressed(&[]).await;
    let client_id = register(&app, "Checked", CALLBACK).await;
    let pkce = Pkce::new();
    let http = http();
    let get = |path: String| {
        let http = http.clone();
        let base = app.base.clone();
        async move { http.get(format!("{base}{path}")).send().await.unwrap() }
    };
    let good = Request {
        client_id: &client_id,
        redirect_uri: CALLBACK,
        pkce: &pkce,
        scope: None,
        resource: None,
        state: "st",
    };
    assert_eq!(get(good.path()).await.status(), 303);

    // A redirect URI the client did not register, or an unknown client: an error page, never a
    // redirect (the console consent path checks the same).
    for path in [
        Request {
            redirect_uri: "http://127.0.0.1:9/elsewhere",
            ..good
        }
        .path(),
        Request {
            redirect_uri: "https://attacker.example/cb",
            ..good
        }
        .path(),
        Request {
            client_id: "client_unknown",
            ..good
        }
        .path(),
        authorize_path(&[("response_type", Some("code"))]),
    ] {
        for path in [
            path.clone(),
            path.replace("/oauth/authorize", "/console/authorize"),
        ] {
            let response = get(path.clone()).await;
            assert_eq!(response.status(), 400, "{path}");
            assert!(response.headers().get(LOCATION).is_none(), "{path}");
            assert!(
                response.headers()["content-type"]
                    .to_str()
                    .unwrap()
                    .starts_with("text/html")
            );
        }
    }

    // Every other fault is told on the error page too (RFC 9700 §4.11.2): the user has seen no
    // consent page on this path, so nothing goes back to the redirect URI, whoever registered it.
    let cases: [(&str, Vec<Param>); 6] = [
        ("invalid_request", vec![("code_challenge_method", None)]),
        (
            "invalid_request",
            vec![("code_challenge_method", Some("plain"))],
        ),
        ("invalid_request", vec![("code_challenge", None)]),
        (
            "unsupported_response_type",
            vec![("response_type", Some("token"))],
        ),
        ("invalid_scope", vec![("scope", Some("voice:read admin"))]),
        (
            "invalid_target",
            vec![("resource", Some("https://elsewhere.example/v1"))],
        ),
    ];
    let case_path = |changes: &[Param]| {
        let mut params: Vec<Param> = vec![
            ("response_type", Some("code")),
            ("client_id", Some(&client_id)),
            ("redirect_uri", Some(CALLBACK)),
            ("code_challenge", Some(&pkce.challenge)),
            ("code_challenge_method", Some("S256")),
            ("state", Some("st")),
        ];
        for &(name, value) in changes {
            params.retain(|(n, _)| *n != name);
            params.push((name, value));
        }
        authorize_path(&params)
    };
    for (error, changes) in &cases {
        for path in [
            case_path(changes),
            case_path(changes).replace("/oauth/authorize", "/console/authorize"),
        ] {
            let response = get(path.clone()).await;
            assert_eq!(response.status(), 400, "{path}");
            assert!(response.headers().get(LOCATION).is_none(), "{path}");
            let page = response.text().await.unwrap();
            assert!(page.contains(error), "{path}: {page}");
        }
    }
    // Still so once the client has redeemed a code at its redirect URI (the former "proven"
    // gate), and for a signed-in browser: a redirect needs the consent page of this request.
    let (_, email) = user(&app, Plan::Pro).await;
    let mut browser = Browser::new(&app);
    authorize(&app, &mut browser, &client_id, &email, None, None).await;
    for (error, changes) in cases {
        for path in [
            case_path(&changes),
            case_path(&changes).replace("/oauth/authorize", "/console/authorize"),
        ] {
            let page = browser.get(&path).await;
            assert_eq!(page.status, 400, "{path}: {}", page.body);
            assert!(page.location.is_none(), "{path}");
            assert!(page.body.contains(error), "{path}: {}", page.body);
        }
    }
    app.stop().await;
}

/// Issue 36 item 5 (RFC 9700 §4.11.2): an attacker registers a client naming its own site and
/// redeems a code for it with its own account. A victim who follows a link to that client's
/// authorization request with a fault in it gets the error page, never a redirect to the
/// attacker; and an answer (deny or allow) for a consent page the victim's browser was not
/// shown goes nowhere either. The victim's own consent page is answered normally, once.
#[tokio::test]
async fn an_attackers_client_cannot_bounce_a_victim_off_this_server() {
    const ATTACKER: &str = "https://attacker.example/landing";
    let app = TestApp::start_self_addressed(&[]).await;
    let attacker_client = register(&app, "Totally Legit", ATTACKER).await;
    // The attacker redeems a code for its own client, with its own account.
    let (_, attacker_email) = user(&app, Plan::Pro).await;
    let mut attacker = Browser::new(&app);
    let pkce = Pkce::new();
    let own = Request {
        client_id: &attacker_client,
        redirect_uri: ATTACKER,
        pkce: &pkce,
        scope: None,
        resource: None,
        state: "a",
    };
    let consent = consent_page(&mut attacker, &own.path(), &attacker_email).await;
    let code = answer(&mut attacker, &consent, "allow").await["code"].clone();
    let (status, body) = token_request(
        &app,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", ATTACKER),
            ("client_id", &attacker_client),
            ("code_verifier", &pkce.verifier),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // The victim, signed in to the console, follows the attacker's links with a fault in them.
    let (_, victim_email) = user(&app, Plan::Pro).await;
    let mut victim = Browser::new(&app);
    assert_eq!(victim.sign_in(&victim_email, PASSWORD).await.status, 303);
    let faulty = |changes: &[Param]| {
        let mut params: Vec<Param> = vec![
            ("response_type", Some("code")),
            ("client_id", Some(&attacker_client)),
            ("redirect_uri", Some(ATTACKER)),
            ("code_challenge", Some(&pkce.challenge)),
            ("code_challenge_method", Some("S256")),
            ("state", Some("x")),
        ];
        for &(name, value) in changes {
            params.retain(|(n, _)| *n != name);
            params.push((name, value));
        }
        authorize_path(&params)
    };
    for changes in [
        vec![("response_type", Some("token"))],
        vec![("scope", Some("everything"))],
        vec![("code_challenge_method", None)],
    ] {
        for path in [
            faulty(&changes),
            faulty(&changes).replace("/oauth/authorize", "/console/authorize"),
        ] {
            let page = victim.get(&path).await;
            assert_eq!(page.status, 400, "{path}: {}", page.body);
            assert!(page.location.is_none(), "{path} redirected");
            assert!(!page.body.contains("attacker.example/landing?"), "{path}");
        }
    }

    // A forged answer in the victim's session (its CSRF token, a request it was never shown):
    // the error page, no redirect, no code.
    let keys_page = victim.get("/console/keys").await;
    let token = csrf_of(&keys_page.body);
    let unseen = faulty(&[])
        .trim_start_matches("/oauth/authorize?")
        .to_owned();
    for decision in ["deny", "allow"] {
        let page = victim
            .post(
                "/console/authorize",
                &[
                    ("request", unseen.as_str()),
                    ("decision", decision),
                    ("csrf_token", token.as_str()),
                ],
            )
            .await;
        assert_eq!(page.status, 400, "{decision}: {}", page.body);
        assert!(page.location.is_none(), "{decision} redirected");
    }
    let codes = fixtures::row_count(&app, "oauth_codes").await;
    assert_eq!(codes, 1, "only the attacker's own code");

    // Shown the consent page, the victim's answer goes back (deny here), and only once.
    let consent = consent_page(&mut victim, &faulty(&[]), &victim_email).await;
    let params = answer(&mut victim, &consent, "deny").await;
    assert_eq!(params["error"], "access_denied");
    let fields = [
        ("request", field_of(&consent.body, "request")),
        ("decision", "deny".to_owned()),
        ("csrf_token", csrf_of(&consent.body)),
    ];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let again = victim.post("/console/authorize", &fields).await;
    assert_eq!(again.status, 400, "{}", again.body);
    assert!(again.location.is_none());
    app.stop().await;
}

#[tokio::test]
async fn codes_are_single_use_and_bound_to_verifier_client_and_redirect() {
    let app = TestApp::start_self_addressed(&[]).await;
    let (_, email) = user(&app, Plan::Pro).await;
    let client_id = register(&app, "Bound", CALLBACK).await;
    let other_client = register(&app, "Other", CALLBACK).await;
    let pkce = Pkce::new();
    let mut browser = Browser::new(&app);
    let request = Request {
        client_id: &client_id,
        redirect_uri: CALLBACK,
        pkce: &pkce,
        scope: None,
        resource: None,
        state: "s",
    };
    let consent = consent_page(&mut browser, &request.path(), &email).await;
    let code = answer(&mut browser, &consent, "allow").await["code"].clone();
    let exchange = |verifier: String, client: String, redirect: &'static str| {
        let (app, code) = (&app, code.clone());
        async move {
            token_request(
                app,
                &[
                    ("grant_type", "authorization_code"),
                    ("code", &code),
                    ("redirect_uri", redirect),
                    ("client_id", &client),
                    ("code_verifier", &verifier),
                ],
            )
            .await
        }
    };
    // Wrong verifier, wrong client, wrong redirect URI: invalid_grant (RFC 6749 §5.2).
    for (verifier, client, redirect) in [
        (Pkce::new().verifier, client_id.clone(), CALLBACK),
        (pkce.challenge.clone(), client_id.clone(), CALLBACK),
        (pkce.verifier.clone(), other_client.clone(), CALLBACK),
        (
            pkce.verifier.clone(),
            client_id.clone(),
            "http://127.0.0.1:9/other",
        ),
    ] {
        let (status, body) = exchange(verifier, client, redirect).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["error"], "invalid_grant", "{body}");
        assert!(body["error_description"].is_string());
    }
    // Missing verifier: invalid_request. Unknown grant type: unsupported_grant_type.
    let (status, body) = token_request(
        &app,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CALLBACK),
            ("client_id", &client_id),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_request"))
    );
    let (status, body) = token_request(
        &app,
        &[("grant_type", "password"), ("client_id", &client_id)],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("unsupported_grant_type"))
    );

    // The right one works once.
    let (status, body) = exchange(pkce.verifier.clone(), client_id.clone(), CALLBACK).await;
    let tokens = Tokens::from(status, body);
    assert_eq!(
        get_with(&app, "/v1/voices", &tokens.access).await.status(),
        200
    );
    // Again: refused, and what it issued is revoked.
    let (status, body) = exchange(pkce.verifier.clone(), client_id.clone(), CALLBACK).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    assert_eq!(
        get_with(&app, "/v1/voices", &tokens.access).await.status(),
        401
    );
    let (status, body) = token_request(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &tokens.refresh),
            ("client_id", &client_id),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );

    // Denying: back to the client with access_denied, no code.
    let consent = consent_page(&mut browser, &request.path(), &email).await;
    let params = answer(&mut browser, &consent, "deny").await;
    assert_eq!(params["error"], "access_denied");
    assert_eq!(params["state"], "s");
    assert_eq!(params["iss"], app.base);
    assert!(!params.contains_key("code"));
    app.stop().await;
}

#[tokio::test]
async fn audience_scopes_plan_and_limits_of_tokens_on_v1() {
    let app = TestApp::start_self_addressed(&[]).await;
    let base = app.base.clone();
    let (account, email) = user(&app, Plan::Pro).await;
    let voice = app
        .voice(&account, "Narrator", EngineId::Kokoro, "af_heart")
        .await;
    let client_id = register(&app, "Limited", CALLBACK).await;
    let mut browser = Browser::new(&app);

    // A token for the agent interface only is not a token for the API.
    let mcp_only = authorize(
        &app,
        &mut browser,
        &client_id,
        &email,
        None,
        Some(&format!("{base}/mcp")),
    )
    .await;
    let response = get_with(&app, "/v1/voices", &mcp_only.access).await;
    assert_eq!(response.status(), 401);
    let header = challenge(&response);
    assert!(header.contains("error=\"invalid_token\""), "{header}");
    let (_, body) = json(response).await;
    assert_eq!(body["code"], "invalid_api_key");
    // Nor can a refresh widen it to the API.
    let (status, body) = token_request(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &mcp_only.refresh),
            ("client_id", &client_id),
            ("resource", &format!("{base}/v1")),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_target"))
    );

    // voice:read only: reads work, generation is 403 insufficient_scope with the challenge.
    let reader = authorize(
        &app,
        &mut browser,
        &client_id,
        &email,
        Some("voice:read"),
        Some(&format!("{base}/v1")),
    )
    .await;
    assert_eq!(reader.body["scope"], "voice:read");
    let response = app
        .post("/v1/speech")
        .bearer_auth(&reader.access)
        .json(&json!({"text": "hi", "voice_name": "Narrator"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    let header = challenge(&response);
    assert!(header.contains("error=\"insufficient_scope\""), "{header}");
    assert_eq!(
        auth_param(&header, "scope").as_deref(),
        Some("voice:generate")
    );
    assert!(response.headers().get("ratelimit").is_none());
    let (_, body) = json(response).await;
    assert_eq!(body["code"], "insufficient_scope");
    assert_eq!(body["required_scope"], "voice:generate");

    // The read-burst limit (300 a minute; the test clock stands still) counts per
    // authorization, without RateLimit headers: the 301st read is 429 with Retry-After, and a
    // refreshed token of the same authorization is still limited.
    for _ in 0..300 {
        let response = get_with(&app, "/v1/voices", &reader.access).await;
        assert_eq!(response.status(), 200);
        assert!(response.headers().get("ratelimit").is_none());
    }
    let response = get_with(&app, "/v1/voices", &reader.access).await;
    assert_eq!(response.status(), 429);
    assert!(response.headers().get("retry-after").is_some());
    assert!(response.headers().get("ratelimit").is_none());
    assert!(response.headers().get("ratelimit-policy").is_none());
    let (status, body) = token_request(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &reader.refresh),
            ("client_id", &client_id),
        ],
    )
    .await;
    let refreshed = Tokens::from(status, body);
    assert_eq!(
        get_with(&app, "/v1/voices", &refreshed.access)
            .await
            .status(),
        429
    );

    // A key's ceiling does not bind tokens; the plan's allowance does.
    let writer = authorize(&app, &mut browser, &client_id, &email, None, None).await;
    let (key_id, key) = app.key_with_ceiling(&account, &Scope::ALL, Some(0)).await;
    let speak = |auth: (&'static str, String)| {
        let app = &app;
        async move {
            let request = app
                .post("/v1/speech")
                .json(&json!({"text": "Hello there.", "voice_name": "Narrator"}));
            let request = match auth.0 {
                "key" => request.header("x-api-key", auth.1),
                _ => request.bearer_auth(auth.1),
            };
            json(request.send().await.unwrap()).await
        }
    };
    let (status, body) = speak(("key", key.clone())).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (429, Some("key_ceiling_exceeded"))
    );
    let (status, body) = speak(("token", writer.access.clone())).await;
    assert_eq!(status, 202, "{body}");
    // The generation records no key.
    let key_of = fixtures::generation(&app, body["id"].as_str().unwrap())
        .await
        .api_key_id;
    assert_eq!(key_of, None);
    app.charge(&account, Some(&key_id), &voice, 120 * 60_000)
        .await;
    let (status, body) = speak(("token", writer.access.clone())).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (429, Some("quota_exhausted"))
    );

    // Plan none: 403 pro_plan_required for tokens too; nothing revoked.
    fixtures::set_plan(&app, &account, Plan::None).await;
    let (status, body) = json(get_with(&app, "/v1/voices", &writer.access).await).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("pro_plan_required"))
    );
    app.stop().await;
}

/// Serves `document` at `/client.json` on a port-0 loopback listener; returns its URL.
async fn serve_document(document: impl Fn(&str) -> Value + Send + Sync + 'static) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/client.json", listener.local_addr().unwrap());
    let body = document(&url);
    let app = axum::Router::new().route(
        "/client.json",
        axum::routing::get(move || {
            let body = body.clone();
            async move { axum::Json(body) }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

#[tokio::test]
async fn client_id_metadata_documents_are_fetched_with_ssrf_rules() {
    let app = TestApp::start_self_addressed(&[("VOICED_OAUTH_ALLOW_LOOPBACK_FETCH", "true")]).await;
    let (_, email) = user(&app, Plan::Pro).await;
    let client_id = serve_document(|url| {
        json!({
            "client_id": url,
            "client_name": "Document Agent",
            "redirect_uris": [CALLBACK],
            "token_endpoint_auth_method": "none",
        })
    })
    .await;
    let mut browser = Browser::new(&app);
    let pkce = Pkce::new();
    let request = Request {
        client_id: &client_id,
        redirect_uri: CALLBACK,
        pkce: &pkce,
        scope: None,
        resource: None,
        state: "cimd",
    };
    let consent = consent_page(&mut browser, &request.path(), &email).await;
    assert!(consent.body.contains("Document Agent"));
    assert!(consent.body.contains(&client_id));
    // Loopback-only redirects of a document client are flagged.
    assert!(consent.body.contains("program on your own computer"));
    let code = answer(&mut browser, &consent, "allow").await["code"].clone();
    let (status, body) = token_request(
        &app,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", CALLBACK),
            ("client_id", &client_id),
            ("code_verifier", &pkce.verifier),
        ],
    )
    .await;
    let tokens = Tokens::from(status, body);
    assert_eq!(
        get_with(&app, "/v1/voices", &tokens.access).await.status(),
        200
    );

    // A document that names another client_id, a redirect URI it does not list, and addresses
    // the server must never fetch: error pages, no redirect.
    let liar = serve_document(
        |_| json!({"client_id": "https://other.example/client.json", "redirect_uris": [CALLBACK]}),
    )
    .await;
    let http = http();
    for (client, redirect, says) in [
        (liar.as_str(), CALLBACK, "not the URL"),
        (
            client_id.as_str(),
            "http://127.0.0.1:9/elsewhere",
            "redirect_uri",
        ),
        ("https://10.1.2.3/client.json", CALLBACK, "private"),
        ("http://192.168.0.7/client.json", CALLBACK, "private"),
        (
            "https://169.254.169.254/latest/meta-data",
            CALLBACK,
            "private",
        ),
        ("https://[fd00::1]/client.json", CALLBACK, "private"),
        ("https://[::ffff:a00:1]/client.json", CALLBACK, "private"),
        ("ftp://example.com/client.json", CALLBACK, "registered here"),
    ] {
        let path = Request {
            client_id: client,
            redirect_uri: redirect,
            ..request
        }
        .path();
        let response = http
            .get(format!("{}{path}", app.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 400, "{client}");
        assert!(response.headers().get(LOCATION).is_none());
        let page = response.text().await.unwrap();
        assert!(page.contains(says), "{client}: {page}");
    }
    app.stop().await;

    // Without the test allowance, loopback and http are refused as well.
    let strict = TestApp::start_self_addressed(&[]).await;
    let path = Request {
        client_id: &client_id,
        ..request
    }
    .path();
    let response = http
        .get(format!("{}{path}", strict.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert!(response.text().await.unwrap().contains("https"));
    strict.stop().await;
}

#[tokio::test]
async fn registration_is_validated_and_rate_limited() {
    let app = TestApp::start_self_addressed(&[("VOICED_OAUTH_REGISTRATIONS_PER_HOUR", "4")]).await;
    let cases = [
        (
            json!({"redirect_uris": ["http://example.com/cb"]}),
            "invalid_redirect_uri",
        ),
        (json!({"redirect_uris": []}), "invalid_redirect_uri"),
        (
            json!({"redirect_uris": [CALLBACK], "grant_types": ["client_credentials"]}),
            "invalid_client_metadata",
        ),
    ];
    for (body, error) in cases {
        let (status, answer) = json(
            app.post("/oauth/register")
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(answer["error"], error, "{body}");
    }
    let id = register(
        &app,
        "Fourth",
        "cursor://anysphere.cursor-retrieval/oauth/callback",
    )
    .await;
    assert!(id.starts_with("client_"));
    let response = app
        .post("/oauth/register")
        .json(&json!({"redirect_uris": [CALLBACK]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    assert!(response.headers().get("retry-after").is_some());
    let (_, body) = json(response).await;
    assert_eq!(body["error"], "rate_limit_exceeded");
    app.stop().await;
}

#[tokio::test]
async fn tenants_are_isolated_and_the_console_lists_and_revokes_applications() {
    let app = TestApp::start_self_addressed(&[]).await;
    let (alice, alice_email) = user(&app, Plan::Pro).await;
    let (bob, bob_email) = user(&app, Plan::Pro).await;
    app.voice(&alice, "Alpha", EngineId::Kokoro, "af_heart")
        .await;
    app.voice(&bob, "Bravo", EngineId::Kokoro, "am_adam").await;
    let client_id = register(&app, "Shared Agent", CALLBACK).await;

    let mut alice_browser = Browser::new(&app);
    let alice_tokens = authorize(
        &app,
        &mut alice_browser,
        &client_id,
        &alice_email,
        None,
        None,
    )
    .await;
    let mut bob_browser = Browser::new(&app);
    let bob_tokens = authorize(&app, &mut bob_browser, &client_id, &bob_email, None, None).await;

    // Each token reads its own account only.
    let (_, voices) = json(get_with(&app, "/v1/voices", &alice_tokens.access).await).await;
    let names: Vec<&str> = voices["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Alpha"]);
    let (status, speech) = json(
        app.post("/v1/speech")
            .bearer_auth(&bob_tokens.access)
            .json(&json!({"text": "Hi.", "voice_name": "Bravo"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 202, "{speech}");
    let generation = speech["id"].as_str().unwrap();
    let response = get_with(
        &app,
        &format!("/v1/generations/{generation}"),
        &alice_tokens.access,
    )
    .await;
    assert_eq!(response.status(), 404);
    // Bob's voice is not Alice's to use.
    let (status, _) = json(
        app.post("/v1/speech")
            .bearer_auth(&alice_tokens.access)
            .json(&json!({"text": "Hi.", "voice_name": "Bravo"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400);

    // The console lists the application with its scopes and last use.
    let page = alice_browser.get("/console/applications").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("Shared Agent"), "{}", page.body);
    assert!(page.body.contains("voice:read, voice:generate"));
    let authorization = fixtures::oauth_authorizations_of(&app, &alice).await[0].clone();
    assert!(page.body.contains(&authorization));
    let bob_authorization = fixtures::oauth_authorizations_of(&app, &bob).await[0].clone();

    // Alice cannot revoke Bob's authorization, nor without the form's token.
    let page = alice_browser
        .submit(
            "/console/applications",
            &format!("/console/applications/{bob_authorization}/revoke"),
            &[],
        )
        .await;
    assert_eq!(page.status, 404);
    let page = alice_browser
        .post(
            &format!("/console/applications/{authorization}/revoke"),
            &[("csrf_token", "forged")],
        )
        .await;
    assert_eq!(page.status, 403);
    assert_eq!(
        get_with(&app, "/v1/voices", &bob_tokens.access)
            .await
            .status(),
        200
    );
    assert_eq!(
        get_with(&app, "/v1/voices", &alice_tokens.access)
            .await
            .status(),
        200
    );

    // Revoked in the console: refused from the next request on, and gone from the list.
    let page = alice_browser
        .submit(
            "/console/applications",
            &format!("/console/applications/{authorization}/revoke"),
            &[],
        )
        .await;
    assert_eq!(page.status, 303);
    assert_eq!(
        get_with(&app, "/v1/voices", &alice_tokens.access)
            .await
            .status(),
        401
    );
    let (status, body) = token_request(
        &app,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &alice_tokens.refresh),
            ("client_id", &client_id),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let page = alice_browser.get("/console/applications").await;
    assert!(!page.body.contains(&authorization));
    assert_eq!(
        get_with(&app, "/v1/voices", &bob_tokens.access)
            .await
            .status(),
        200
    );
    app.stop().await;
}

/// `POST /oauth/register` from `client` (behind the trusted proxy): the status.
async fn register_from(app: &TestApp, client: &str) -> reqwest::Response {
    app.post("/oauth/register")
        .header("x-forwarded-for", client)
        .json(&json!({"client_name": "Capped", "redirect_uris": [CALLBACK]}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn registrations_are_capped_per_address_and_per_day_in_all() {
    let app = TestApp::start_self_addressed(&[
        ("VOICED_TRUSTED_PROXIES", "127.0.0.1/32"),
        ("VOICED_OAUTH_REGISTRATIONS_PER_ADDRESS_PER_DAY", "2"),
        ("VOICED_OAUTH_REGISTRATIONS_PER_DAY", "3"),
    ])
    .await;
    for _ in 0..2 {
        assert_eq!(register_from(&app, "203.0.113.1").await.status(), 201);
    }
    // The address's day is spent (its hourly quota of 20 is not).
    let response = register_from(&app, "203.0.113.1").await;
    assert_eq!(response.status(), 429);
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry > 3600, "a day's quota refills by the day: {retry}");
    assert_eq!(json(response).await.1["error"], "rate_limit_exceeded");
    // A second address makes the third of the day; after that nobody registers.
    assert_eq!(register_from(&app, "203.0.113.2").await.status(), 201);
    let response = register_from(&app, "203.0.113.3").await;
    assert_eq!(response.status(), 429);
    assert!(response.headers().get("retry-after").is_some());
    let n = fixtures::row_count(&app, "oauth_clients").await;
    assert_eq!(n, 3);
    app.stop().await;
}

/// A metadata document server that takes each request and answers only when released: it
/// reports each arrival on the returned channel.
async fn serve_slow_document() -> (
    String,
    tokio::sync::mpsc::UnboundedReceiver<()>,
    std::sync::Arc<tokio::sync::Notify>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/client.json", listener.local_addr().unwrap());
    let (arrived, arrivals) = tokio::sync::mpsc::unbounded_channel();
    let release = std::sync::Arc::new(tokio::sync::Notify::new());
    let (document, gate) = (
        json!({"client_id": url, "client_name": "Slow", "redirect_uris": [CALLBACK]}),
        release.clone(),
    );
    let app = axum::Router::new().route(
        "/client.json",
        axum::routing::get(move || {
            let (document, gate, arrived) = (document.clone(), gate.clone(), arrived.clone());
            async move {
                let _ = arrived.send(());
                gate.notified().await;
                axum::Json(document)
            }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, arrivals, release)
}

#[tokio::test]
async fn metadata_document_fetches_are_bounded_at_once_and_per_address() {
    let app = TestApp::start_self_addressed(&[
        ("VOICED_OAUTH_ALLOW_LOOPBACK_FETCH", "true"),
        ("VOICED_TRUSTED_PROXIES", "127.0.0.1/32"),
        ("VOICED_OAUTH_METADATA_FETCHES_IN_FLIGHT", "1"),
        ("VOICED_OAUTH_METADATA_FETCHES_PER_ADDRESS_PER_HOUR", "2"),
    ])
    .await;
    let pkce = Pkce::new();
    let path = |client_id: &str| {
        Request {
            client_id,
            redirect_uri: CALLBACK,
            pkce: &pkce,
            scope: None,
            resource: None,
            state: "s",
        }
        .path()
    };
    let http = http();
    let get = |path: String, client: &'static str| {
        let request = http
            .get(format!("{}{path}", app.base))
            .header("x-forwarded-for", client);
        async move { request.send().await.unwrap() }
    };

    // One fetch in flight (its server holds the answer): a second new document is refused at
    // once with the error page; the first completes when its server answers.
    let (slow, mut arrivals, release) = serve_slow_document().await;
    let first = tokio::spawn(get(path(&slow), "203.0.113.1"));
    arrivals
        .recv()
        .await
        .expect("the fetch reached the document's server");
    let other = serve_document(
        |url| json!({"client_id": url, "client_name": "Other", "redirect_uris": [CALLBACK]}),
    )
    .await;
    let response = get(path(&other), "203.0.113.2").await;
    assert_eq!(response.status(), 400);
    assert!(response.headers().get(LOCATION).is_none());
    let page = response.text().await.unwrap();
    assert!(
        page.contains("too many client metadata documents"),
        "{page}"
    );
    release.notify_one();
    assert_eq!(first.await.unwrap().status(), 303);
    // The refusal was not cached: the same document is fetched now.
    assert_eq!(get(path(&other), "203.0.113.2").await.status(), 303);

    // Per address: 203.0.113.1 has one fetch left of two; cached documents cost nothing.
    let third = serve_document(|url| json!({"client_id": url, "redirect_uris": [CALLBACK]})).await;
    assert_eq!(get(path(&third), "203.0.113.1").await.status(), 303);
    assert_eq!(get(path(&slow), "203.0.113.1").await.status(), 303);
    let fourth = serve_document(|url| json!({"client_id": url, "redirect_uris": [CALLBACK]})).await;
    let response = get(path(&fourth), "203.0.113.1").await;
    assert_eq!(response.status(), 400);
    let page = response.text().await.unwrap();
    assert!(page.contains("from this address"), "{page}");
    // Another address may still fetch it.
    assert_eq!(get(path(&fourth), "203.0.113.9").await.status(), 303);
    app.stop().await;
}
