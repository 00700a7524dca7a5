//! The developer console over real HTTP and PostgreSQL: accounts and sessions, CSRF, the
//! sign-in limiter, keys made and managed in pages and used on /v1, and the error pages.

use crate::common;
use voiced::http::error::HttpStatus;

use crate::common::browser::{Browser, PASSWORD, Page, csrf_of};
use crate::common::fixtures;
use crate::common::{TestApp, json};
use reqwest::header::{COOKIE, SET_COOKIE};
use voiced::domain::Plan;
use voiced::service::ErrorCode;

fn secret_of(html: &str) -> String {
    let start = html.find("vk_").expect("the new key's secret");
    html[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect()
}

async fn account_of(app: &TestApp, email: &str) -> String {
    fixtures::account_id(app, email).await
}

#[tokio::test]
async fn sign_up_makes_a_key_that_works_until_revoked() {
    let app = TestApp::start().await;
    let mut browser = Browser::new(&app);

    // Not signed in: the console sends you to sign in.
    let page = browser.get("/console/keys").await;
    assert_eq!(page.status, 303);
    assert_eq!(page.location.as_deref(), Some("/console/sign-in"));

    let page = browser.sign_up("ada@example.com").await;
    assert_eq!(page.status, 303, "{}", page.body);
    assert_eq!(page.location.as_deref(), Some("/console/keys"));
    let cookie = page
        .set_cookie
        .last()
        .expect("a session cookie")
        .to_lowercase();
    for attribute in ["httponly", "samesite=lax", "path=/console"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(!cookie.contains("secure"), "http base URL: {cookie}");

    let page = browser.get("/console/keys").await;
    assert_eq!(page.status, 200);
    assert!(page.content_type.starts_with("text/html"));
    assert!(page.body.contains("ada@example.com"));

    // New accounts start on signup_plan (none).
    let account = account_of(&app, "ada@example.com").await;
    let page = browser
        .submit(
            "/console/keys",
            "/console/keys",
            &[
                ("name", "laptop"),
                ("scope_read", "on"),
                ("ceiling_minutes", "1"),
            ],
        )
        .await;
    // POST/Redirect/GET: the form answers 303; the keys page it leads to shows the secret once.
    assert_eq!(page.status, 303, "{}", page.body);
    assert_eq!(page.location.as_deref(), Some("/console/keys"));
    let page = browser.get("/console/keys").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("shown only this once"));
    assert_eq!(page.cache_control.as_deref(), Some("no-store"));
    let secret = secret_of(&page.body);
    assert_eq!(secret.len(), 46, "{secret}");
    // The list shows the prefix, never the secret, once the page is left (a reload too).
    let list = browser.get("/console/keys").await;
    assert!(!list.body.contains(&secret));
    assert!(!list.body.contains("shown only this once"));
    assert!(list.body.contains(&secret[..12]));
    assert!(list.body.contains("1 min"));

    let voices = |secret: String| {
        let request = app.get("/v1/voices").header("x-api-key", secret);
        async move { json(request.send().await.unwrap()).await }
    };
    let (status, body) = voices(secret.clone()).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("pro_plan_required"))
    );
    assert!(fixtures::set_plan(&app, &account, Plan::Pro).await);
    assert_eq!(voices(secret.clone()).await.0, 200);

    // Only voice:read was ticked.
    let (status, body) = json(
        app.post("/v1/speech")
            .header("x-api-key", &secret)
            .json(&serde_json::json!({"text": "hi", "voice_name": "x"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("insufficient_scope"))
    );

    // Ceiling: change, then remove.
    let key_id = fixtures::keys_of(&app, &account).await[0].id.clone();
    let ceiling_path = format!("/console/keys/{key_id}/ceiling");
    for (value, expected) in [("5", Some(5)), ("", None)] {
        let page = browser
            .submit(
                "/console/keys",
                &ceiling_path,
                &[("ceiling_minutes", value)],
            )
            .await;
        assert_eq!(page.status, 303, "{}", page.body);
        let keys = fixtures::keys_of(&app, &account).await;
        assert_eq!(keys[0].ceiling_minutes, expected);
    }

    // Revoke: a confirmation page, then the key is refused on its next request.
    let revoke_path = format!("/console/keys/{key_id}/revoke");
    let confirm = browser.get(&revoke_path).await;
    assert!(confirm.body.contains("cannot be undone"));
    let page = browser.submit(&revoke_path, &revoke_path, &[]).await;
    assert_eq!(page.status, 303);
    assert_eq!(voices(secret.clone()).await.0, 401);
    assert!(browser.get("/console/keys").await.body.contains("revoked"));

    // last_used_at was recorded by the successful request (off the request path).
    common::poll_until(std::time::Duration::from_secs(10), "last used", || async {
        let keys = fixtures::keys_of(&app, &account).await;
        keys[0].last_used_at.map(|_| ())
    })
    .await;
    app.stop().await;
}

#[tokio::test]
async fn forms_without_this_sessions_csrf_token_are_refused() {
    let app = TestApp::start().await;
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_up("bob@example.com").await.status, 303);
    let account = account_of(&app, "bob@example.com").await;
    for form in [
        vec![("name", "x"), ("scope_read", "on")],
        vec![
            ("name", "x"),
            ("scope_read", "on"),
            ("csrf_token", "forged"),
        ],
    ] {
        let page = browser.post("/console/keys", &form).await;
        assert_eq!(page.status, 403, "{}", page.body);
        assert!(page.content_type.starts_with("text/html"));
        assert!(page.body.contains("Form expired"));
    }
    // Another session's token does not work either.
    let mut other = Browser::new(&app);
    let token = csrf_of(&other.get("/console/sign-in").await.body);
    let page = browser
        .post(
            "/console/keys",
            &[("scope_read", "on"), ("csrf_token", &token)],
        )
        .await;
    assert_eq!(page.status, 403);
    assert!(fixtures::keys_of(&app, &account).await.is_empty());
    // Sign-in itself needs the token.
    let page = other
        .post(
            "/console/sign-in",
            &[("email", "bob@example.com"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(page.status, 403);
    app.stop().await;
}

#[tokio::test]
async fn sign_in_answers_alike_and_is_limited() {
    let app = TestApp::start().await;
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_up("carol@example.com").await.status, 303);

    let mut stranger = Browser::new(&app);
    let wrong_password = stranger
        .sign_in("carol@example.com", "not the password")
        .await;
    let unknown_email = stranger
        .sign_in("nobody@example.com", "not the password")
        .await;
    assert_eq!(wrong_password.status, 401);
    assert_eq!(unknown_email.status, 401);
    let strip = |page: &Page, email: &str| {
        let body = page.body.replace(email, "EMAIL");
        let token = csrf_of(&body);
        body.replace(&token, "TOKEN")
    };
    assert_eq!(
        strip(&wrong_password, "carol@example.com"),
        strip(&unknown_email, "nobody@example.com")
    );

    // The right password signs in (attempt 3 of 10 from this address).
    let mut carol = Browser::new(&app);
    let page = carol.sign_in("carol@example.com", PASSWORD).await;
    assert_eq!(page.status, 303);
    assert_eq!(carol.get("/console/usage").await.status, 200);

    // Seven more attempts from this address are answered; the eleventh is not.
    for _ in 0..7 {
        assert_eq!(
            stranger
                .sign_in("dave@example.com", "guess guess guess")
                .await
                .status,
            401
        );
    }
    let page = stranger
        .sign_in("erin@example.com", "guess guess guess")
        .await;
    assert_eq!(page.status, 429, "{}", page.body);
    assert!(page.content_type.starts_with("text/html"));
    assert!(page.body.contains("Try again in"), "{}", page.body);
    let retry: u64 = page.retry_after.expect("Retry-After").parse().unwrap();
    assert!((1..=900).contains(&retry), "{retry}");
    app.stop().await;
}

#[tokio::test]
async fn v1_ignores_the_console_session() {
    let app = TestApp::start().await;
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_up("frank@example.com").await.status, 303);
    let account = account_of(&app, "frank@example.com").await;
    fixtures::set_plan(&app, &account, Plan::Pro).await;
    let cookie = browser.cookie.clone().expect("signed in");
    let response = app
        .get("/v1/voices")
        .header(COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert!(response.headers().get(SET_COOKIE).is_none());
    app.stop().await;
}

#[tokio::test]
async fn password_change_sign_out_and_closed_sign_up() {
    let app = TestApp::start_with(0, &[("VOICED_SIGNUP", "false")]).await;
    let mut browser = Browser::new(&app);
    let page = browser.get("/console/sign-up").await;
    assert_eq!(page.status, 404);
    assert!(page.body.contains("Sign-up is closed"));

    // An operator-made account with a password signs in.
    fixtures::create_account(&app, "gina@example.com", Some(PASSWORD), Plan::Trial)
        .await
        .unwrap();
    assert_eq!(
        browser.sign_in("gina@example.com", PASSWORD).await.status,
        303
    );
    let page = browser
        .submit(
            "/console/account",
            "/console/account/password",
            &[
                ("current_password", "wrong wrong wrong"),
                ("new_password", "another passphrase"),
            ],
        )
        .await;
    assert_eq!(page.status, 400);
    let page = browser
        .submit(
            "/console/account",
            "/console/account/password",
            &[
                ("current_password", PASSWORD),
                ("new_password", "another passphrase"),
            ],
        )
        .await;
    // POST/Redirect/GET: the change answers 303 to the account page, which says it happened.
    assert_eq!(page.status, 303, "{}", page.body);
    assert_eq!(page.location.as_deref(), Some("/console/account?changed=1"));
    let page = browser.get("/console/account?changed=1").await;
    assert!(page.body.contains("Password changed"));

    let page = browser
        .submit("/console/keys", "/console/sign-out", &[])
        .await;
    assert_eq!(page.status, 303);
    assert_eq!(browser.get("/console/keys").await.status, 303);
    let mut fresh = Browser::new(&app);
    assert_eq!(
        fresh.sign_in("gina@example.com", PASSWORD).await.status,
        401
    );
    assert_eq!(
        fresh
            .sign_in("gina@example.com", "another passphrase")
            .await
            .status,
        303
    );
    app.stop().await;
}

#[tokio::test]
async fn keys_of_other_accounts_are_out_of_reach() {
    let app = TestApp::start().await;
    let (owner, secret) = app.pro_user().await;
    let key_id = fixtures::keys_of(&app, &owner).await[0].id.clone();
    let mut intruder = Browser::new(&app);
    assert_eq!(intruder.sign_up("mallory@example.com").await.status, 303);
    let path = format!("/console/keys/{key_id}/revoke");
    assert_eq!(intruder.get(&path).await.status, 404);
    let page = intruder.submit("/console/keys", &path, &[]).await;
    assert_eq!(page.status, 404);
    let ceiling = format!("/console/keys/{key_id}/ceiling");
    let page = intruder
        .submit("/console/keys", &ceiling, &[("ceiling_minutes", "0")])
        .await;
    assert_eq!(page.status, 404);
    let response = app
        .get("/v1/voices")
        .header("x-api-key", &secret)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let keys = fixtures::keys_of(&app, &owner).await;
    assert_eq!(keys[0].ceiling_minutes, None);
    app.stop().await;
}

#[tokio::test]
async fn every_error_code_has_a_page_and_problem_types_resolve() {
    let app = TestApp::start().await;
    let mut browser = Browser::new(&app);
    for code in ErrorCode::ALL {
        let page = browser.get(&format!("/errors/{}", code.as_str())).await;
        assert_eq!(page.status, 200, "{}", code.as_str());
        assert!(page.content_type.starts_with("text/html"));
        assert!(page.body.contains(code.as_str()));
        assert!(page.body.contains(&code.status().as_u16().to_string()));
        assert!(page.body.contains("What to do"));
    }
    for path in ["/console/nowhere", "/console/keys/x/y/z"] {
        let page = browser.get(path).await;
        assert_eq!(page.status, 404, "{path}");
        assert!(page.content_type.starts_with("text/html"), "{path}");
    }
    let page = browser.get("/errors/no_such_code").await;
    assert_eq!(page.status, 404);
    assert!(page.content_type.starts_with("text/html"));
    assert!(page.body.contains("There is no error code"));

    // The `type` of a real problem document is such a page on this server (default errors_url
    // is {public_base_url}/errors; the test server's base differs only in its port).
    let (_, body) = json(app.get("/v1/voices").send().await.unwrap()).await;
    let type_url = body["type"].as_str().unwrap();
    let path = type_url
        .strip_prefix("http://127.0.0.1:8080")
        .expect("a link to this server");
    let page = browser.get(path).await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("invalid_api_key"));
    app.stop().await;
}

/// `voiced admin … --password-stdin` with `input` on standard input.
fn admin_with_stdin(app: &TestApp, args: &[&str], input: &str) -> serde_json::Value {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_voiced"))
        .arg("admin")
        .arg("--json")
        .args(args)
        .env("VOICED_DATABASE_URL", app.db.url())
        .env("VOICED_LOG", "error")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("voiced runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON")
}

#[tokio::test]
async fn operators_set_passwords_from_standard_input() {
    let app = TestApp::start().await;
    let created = admin_with_stdin(
        &app,
        &[
            "account",
            "create",
            "--email",
            "hal@example.com",
            "--plan",
            "pro",
            "--password-stdin",
        ],
        &format!("{PASSWORD}\n"),
    );
    assert!(created["id"].as_str().unwrap().starts_with("acct_"));
    let mut browser = Browser::new(&app);
    assert_eq!(
        browser.sign_in("hal@example.com", PASSWORD).await.status,
        303
    );

    admin_with_stdin(
        &app,
        &[
            "account",
            "set-password",
            "hal@example.com",
            "--password-stdin",
        ],
        "operator chosen pass\n",
    );
    let mut fresh = Browser::new(&app);
    assert_eq!(fresh.sign_in("hal@example.com", PASSWORD).await.status, 401);
    assert_eq!(
        fresh
            .sign_in("hal@example.com", "operator chosen pass")
            .await
            .status,
        303
    );
    // Only the Argon2id hash is stored.
    let hal = fixtures::account_id(&app, "hal@example.com").await;
    let hash = fixtures::stored_account(&app, &hal)
        .await
        .password_hash
        .expect("a password hash");
    assert!(hash.starts_with("$argon2id$"), "{hash}");
    assert!(!hash.contains("operator chosen pass"));
    app.stop().await;
}

#[tokio::test]
async fn voices_history_and_usage_follow_real_generations() {
    let app = TestApp::start_with_workers(1).await;
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_up("ivy@example.com").await.status, 303);
    let account = account_of(&app, "ivy@example.com").await;
    fixtures::set_plan(&app, &account, Plan::Pro).await;

    // Add a preset voice; the page offers the installed engine's presets.
    let voices = browser.get("/console/voices").await;
    assert!(
        voices.body.contains("value=\"kokoro:jf_alpha\""),
        "{}",
        voices.body
    );
    let page = browser
        .submit(
            "/console/voices",
            "/console/voices",
            &[
                ("name", "Narrator"),
                ("preset", "kokoro:jf_alpha"),
                ("language", "en"),
            ],
        )
        .await;
    assert_eq!(page.status, 303, "{}", page.body);
    let duplicate = browser
        .submit(
            "/console/voices",
            "/console/voices",
            &[
                ("name", "Narrator"),
                ("preset", "kokoro:jf_alpha"),
                ("language", "en"),
            ],
        )
        .await;
    assert_eq!(duplicate.status, 400);
    assert!(duplicate.body.contains("already has a voice"));

    // Pin a seed and a personality; kokoro takes no temperature.
    let voice = fixtures::voice_read(&app, &account, "Narrator").await;
    let path = format!("/console/voices/{}", voice.id);
    let page = browser
        .submit(
            "/console/voices",
            &path,
            &[("seed", "42"), ("temperature", "0.7")],
        )
        .await;
    assert_eq!(page.status, 400);
    assert!(page.body.contains("takes no temperature"));
    let page = browser
        .submit(
            "/console/voices",
            &path,
            &[("seed", "42"), ("personality", "Warm & calm <narrator>")],
        )
        .await;
    assert_eq!(page.status, 303);
    let pinned = fixtures::voice_read(&app, &account, "Narrator").await;
    assert_eq!(pinned.pinned_seed, Some(42));
    assert!(pinned.has_personality);
    let voices = browser.get("/console/voices").await;
    assert!(
        voices.body.contains("Warm &#38; calm &#60;narrator&#62;"),
        "{}",
        voices.body
    );

    // A key from the console generates; history and usage show it.
    let page = browser
        .submit(
            "/console/keys",
            "/console/keys",
            &[("scope_read", "on"), ("scope_generate", "on")],
        )
        .await;
    assert_eq!(page.status, 303);
    let secret = secret_of(&browser.get("/console/keys").await.body);
    let (status, body) = json(
        app.post("/v1/speech")
            .header("x-api-key", &secret)
            .json(&serde_json::json!({"text": "Hello from the console.", "voice_name": "Narrator"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let id = body["id"].as_str().unwrap().to_owned();
    tokio::time::timeout(
        std::time::Duration::from_secs(300),
        app.completion(&id, std::time::Duration::from_secs(5)),
    )
    .await
    .expect("generation finishes")
    .unwrap();

    let history = browser.get("/console/history").await;
    assert_eq!(history.status, 200);
    assert!(history.body.contains("Hello from the console."));
    assert!(history.body.contains("completed"));
    let marker = "<audio controls preload=\"none\" src=\"";
    let start = history.body.find(marker).expect("a player") + marker.len();
    let src =
        history.body[start..][..history.body[start..].find('"').unwrap()].replace("&amp;", "&");
    assert_eq!(src, format!("/console/audio/{id}"));
    let audio = app
        .get(&src)
        .header("cookie", browser.cookie.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(audio.status(), 200);
    assert_eq!(audio.headers()["content-type"], "audio/mpeg");

    let usage = browser.get("/console/usage").await;
    assert_eq!(usage.status, 200);
    assert!(
        !usage.body.contains(">0.0 min</span>"),
        "usage moved: {}",
        usage.body
    );
    assert!(usage.body.contains("of 120.0 min"));
    app.stop().await;
}

#[tokio::test]
async fn the_session_cookie_is_secure_behind_https() {
    let app = TestApp::start_with(
        0,
        &[("VOICED_PUBLIC_BASE_URL", "https://voice.example.com")],
    )
    .await;
    let mut browser = Browser::new(&app);
    // The sign-in page's anonymous CSRF cookie, then the session cookie of the account.
    let page = browser.get("/console/sign-in").await;
    let csrf = page
        .set_cookie
        .first()
        .expect("the anonymous CSRF cookie")
        .to_lowercase();
    let page = browser.sign_up("hal@example.com").await;
    let session = page
        .set_cookie
        .first()
        .expect("a session cookie")
        .to_lowercase();
    for cookie in [csrf, session] {
        assert!(cookie.contains("; secure"), "{cookie}");
        assert!(cookie.contains("httponly"), "{cookie}");
    }
    // The problem `type` and `settings_url` follow the public base URL.
    let (_, body) = json(app.get("/v1/voices").send().await.unwrap()).await;
    assert_eq!(
        body["type"],
        "https://voice.example.com/errors/invalid_api_key"
    );
    app.stop().await;
}

/// A browser whose requests come through a proxy for `client` (X-Forwarded-For).
fn behind_proxy(app: &TestApp, client: &str) -> Browser {
    let mut browser = Browser::new(app);
    browser.forwarded_for = Some(client.to_owned());
    browser
}

#[tokio::test]
async fn anonymous_page_views_store_nothing() {
    let app = TestApp::start().await;
    let mut browser = Browser::new(&app);
    for path in ["/console/sign-in", "/console/sign-up", "/console/sign-in"] {
        let page = browser.get(path).await;
        assert_eq!(page.status, 200);
        // Only the anonymous CSRF cookie, set once.
        assert!(
            page.set_cookie
                .iter()
                .all(|c| c.starts_with("voiced_csrf=")),
            "{:?}",
            page.set_cookie
        );
    }
    assert!(browser.cookie_value("voiced_csrf").is_some());
    assert!(browser.cookie_value("voiced_session").is_none());
    // Strangers without a cookie: still nothing stored.
    for _ in 0..5 {
        assert_eq!(Browser::new(&app).get("/console/sign-in").await.status, 200);
    }
    assert_eq!(fixtures::console_session_count(&app).await, 0);
    // A failed sign-in stores nothing either; the form works again with the same cookie.
    assert_eq!(
        browser.sign_in("nobody@example.com", PASSWORD).await.status,
        401
    );
    assert_eq!(fixtures::console_session_count(&app).await, 0);
    // The anonymous token is refused without its cookie, and with another browser's cookie.
    let token = csrf_of(&browser.get("/console/sign-in").await.body);
    let mut other = Browser::new(&app);
    other.get("/console/sign-in").await;
    for mut client in [Browser::new(&app), other] {
        let page = client
            .post(
                "/console/sign-up",
                &[
                    ("email", "mallory@example.com"),
                    ("password", PASSWORD),
                    ("csrf_token", &token),
                ],
            )
            .await;
        assert_eq!(page.status, 403, "{}", page.body);
    }
    // The session row is made by the first sign-up that succeeds.
    assert_eq!(browser.sign_up("ivy@example.com").await.status, 303);
    assert!(browser.cookie_value("voiced_session").is_some());
    assert_eq!(fixtures::console_session_count(&app).await, 1);
    assert_eq!(browser.get("/console/keys").await.status, 200);
    app.stop().await;
}

#[tokio::test]
async fn sign_ups_are_limited_per_address_and_in_all() {
    let app = TestApp::start_with(
        0,
        &[
            ("VOICED_SIGNUP_PER_ADDRESS_PER_HOUR", "2"),
            ("VOICED_SIGNUP_PER_HOUR", "3"),
            ("VOICED_TRUSTED_PROXIES", "127.0.0.1/32"),
        ],
    )
    .await;
    // A form with a typo is answered without counting.
    let mut first = behind_proxy(&app, "203.0.113.1");
    let page = first
        .submit(
            "/console/sign-up",
            "/console/sign-up",
            &[("email", "not an email"), ("password", PASSWORD)],
        )
        .await;
    assert_eq!(page.status, 400);
    for n in 0..2 {
        let page = behind_proxy(&app, "203.0.113.1")
            .sign_up(&format!("a{n}@example.com"))
            .await;
        assert_eq!(page.status, 303, "{}", page.body);
    }
    // The address has spent its two: 429, Retry-After, and no account.
    let page = behind_proxy(&app, "203.0.113.1")
        .sign_up("a2@example.com")
        .await;
    assert_eq!(page.status, 429, "{}", page.body);
    assert!(page.content_type.starts_with("text/html"));
    assert!(page.body.contains("Too many sign-ups"), "{}", page.body);
    let retry: u64 = page.retry_after.expect("Retry-After").parse().unwrap();
    assert!((1..=3600).contains(&retry), "{retry}");
    assert_eq!(fixtures::accounts(&app).await.len(), 2);
    assert!(
        fixtures::find_account(&app, "a2@example.com")
            .await
            .is_none()
    );
    // Another address makes the third of the hour; the fourth is refused whoever asks.
    assert_eq!(
        behind_proxy(&app, "203.0.113.2")
            .sign_up("b0@example.com")
            .await
            .status,
        303
    );
    let page = behind_proxy(&app, "203.0.113.3")
        .sign_up("c0@example.com")
        .await;
    assert_eq!(page.status, 429, "{}", page.body);
    assert!(page.retry_after.is_some());
    assert_eq!(fixtures::accounts(&app).await.len(), 3);
    app.stop().await;
}

#[tokio::test]
async fn a_password_change_ends_the_other_sessions_and_a_reload_repeats_nothing() {
    let app = TestApp::start().await;
    let mut laptop = Browser::new(&app);
    let page = laptop.sign_up("jo@example.com").await;
    assert_eq!(page.status, 303, "{}", page.body);
    let mut phone = Browser::new(&app);
    let page = phone.sign_in("jo@example.com", PASSWORD).await;
    assert_eq!(page.status, 303, "{}", page.body);
    let mut stranger = Browser::new(&app);
    let page = stranger.sign_up("kim@example.com").await;
    assert_eq!(page.status, 303, "{}", page.body);
    let page = phone.get("/console/keys").await;
    assert_eq!(page.status, 200, "{}", page.body);

    let page = laptop
        .submit(
            "/console/account",
            "/console/account/password",
            &[
                ("current_password", PASSWORD),
                ("new_password", "a brand new passphrase"),
            ],
        )
        .await;
    assert_eq!(page.status, 303, "{}", page.body);
    // The phone is signed out; the laptop that changed it, and other accounts, are not.
    let page = phone.get("/console/keys").await;
    assert_eq!(page.status, 303, "{}", page.body);
    assert_eq!(page.location.as_deref(), Some("/console/sign-in"));
    let page = laptop.get("/console/keys").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let page = stranger.get("/console/keys").await;
    assert_eq!(page.status, 200, "{}", page.body);

    // The key form: 303, the secret once, and a reload of the page makes no second key. The
    // session record holds the secret sealed, never in clear, until the page shows it.
    let account = account_of(&app, "jo@example.com").await;
    let page = laptop
        .submit("/console/keys", "/console/keys", &[("scope_read", "on")])
        .await;
    assert_eq!(page.status, 303, "{}", page.body);
    let stored = fixtures::console_sessions_of(&app, &account).await;
    assert!(stored.iter().any(|d| d.contains("new_key")), "{stored:?}");
    let shown = laptop.get("/console/keys").await;
    let secret = secret_of(&shown.body);
    // The record held the secret sealed: not the secret itself (a check for the bare `vk_`
    // prefix would fail by chance, about once in 2 700 runs, on the sealed text's base64).
    assert!(stored.iter().all(|d| !d.contains(&secret)), "{stored:?}");
    let stored = fixtures::console_sessions_of(&app, &account).await;
    assert!(stored.iter().all(|d| !d.contains("new_key")), "{stored:?}");
    for _ in 0..2 {
        let reload = laptop.get("/console/keys").await;
        assert_eq!(reload.status, 200, "{}", reload.body);
        assert!(!reload.body.contains(&secret));
    }
    let keys = fixtures::keys_of(&app, &account).await;
    assert_eq!(keys.len(), 1);
    assert!(secret.starts_with(&keys[0].prefix));
    app.stop().await;
}

/// Ten wrong passwords from `client` (each for another email), then one more: its status.
async fn eleven_sign_ins(app: &TestApp, client: &str, tag: &str) -> u16 {
    let mut browser = behind_proxy(app, client);
    for n in 0..10 {
        let page = browser
            .sign_in(&format!("{tag}{n}@example.com"), "guess guess guess")
            .await;
        assert_eq!(page.status, 401, "attempt {n}: {}", page.body);
    }
    browser
        .sign_in(&format!("{tag}x@example.com"), "guess guess guess")
        .await
        .status
        .as_u16()
}

#[tokio::test]
async fn clients_behind_a_trusted_proxy_have_their_own_sign_in_limits() {
    // The test client is the proxy (127.0.0.1): two clients behind it count apart.
    let app = TestApp::start_with(0, &[("VOICED_TRUSTED_PROXIES", "127.0.0.1/32")]).await;
    assert_eq!(eleven_sign_ins(&app, "203.0.113.10", "a").await, 429);
    let mut other = behind_proxy(&app, "198.51.100.20, 127.0.0.1");
    assert_eq!(
        other
            .sign_in("someone@example.com", "guess guess guess")
            .await
            .status,
        401
    );
    app.stop().await;

    // Not trusted: the header is ignored, and every client is the peer.
    let app = TestApp::start().await;
    assert_eq!(eleven_sign_ins(&app, "203.0.113.10", "a").await, 429);
    let mut forged = behind_proxy(&app, "198.51.100.20");
    let page = forged
        .sign_in("someone@example.com", "guess guess guess")
        .await;
    assert_eq!(page.status, 429, "{}", page.body);
    app.stop().await;
}

#[tokio::test]
async fn the_request_log_names_the_forwarded_client_of_a_trusted_proxy() {
    let app = TestApp::start().await;
    let dir = common::TempDir::new("client-log", 0o755);
    let no_models = common::TempDir::new("no-models", 0o755);
    let log = dir.path().join("serve.log");
    let server = common::child::ChildServer::start_logging(
        &app.db.url(),
        &[
            ("VOICED_TRUSTED_PROXIES", "127.0.0.1/32"),
            ("VOICED_LOG", "info,tower_http=debug"),
            ("VOICED_LOG_FORMAT", "json"),
            ("VOICED_MODELS_DIR", no_models.path().to_str().unwrap()),
        ],
        Some(&log),
    )
    .await;
    let client = reqwest::Client::new();
    let sent = client
        .get(format!("{}/console/sign-in", server.base))
        .header("x-forwarded-for", "198.51.100.77, 203.0.113.77")
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 200);
    let line = common::poll_until(
        std::time::Duration::from_secs(20),
        "the request's log line",
        || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            async move {
                text.lines()
                    .find(|l| l.contains("/console/sign-in") && l.contains("\"client\""))
                    .map(str::to_owned)
            }
        },
    )
    .await;
    // The right-most hop the trusted proxy added, not the one the client wrote.
    assert!(line.contains("\"client\":\"203.0.113.77\""), "{line}");
    assert!(!line.contains("198.51.100.77"), "{line}");
    drop(server);
    app.stop().await;
}

#[tokio::test]
async fn pronunciations_are_managed_in_the_console_and_by_the_operator() {
    let app = TestApp::start().await;
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_up("lexicon@example.com").await.status, 303);
    let page = "/console/pronunciations";
    let added = browser
        .submit(
            page,
            page,
            &[
                ("text", "Kokoro"),
                ("kind", "phonemes"),
                ("say", "ˈkoʊkəɹoʊ"),
            ],
        )
        .await;
    assert_eq!(added.status, 303, "{}", added.body);
    let listed = browser.get(page).await;
    assert!(listed.body.contains("/ˈkoʊkəɹoʊ/"), "{}", listed.body);
    // A refusal shows the reason and the form as sent, and adds nothing.
    let refused = browser
        .submit(
            page,
            page,
            &[("text", "Kokoro"), ("kind", "phonemes"), ("say", "k☃")],
        )
        .await;
    assert_eq!(refused.status, 400);
    assert!(
        refused.body.contains("cannot be spoken"),
        "{}",
        refused.body
    );
    assert!(refused.body.contains("value=\"k☃\""), "{}", refused.body);

    // The operator sees and adds through the same rules.
    let email = "lexicon@example.com";
    let list = admin_with_stdin(&app, &["pronunciation", "list", "--account", email], "");
    assert_eq!(list["total"], 1, "{list}");
    let id = list["data"][0]["id"].as_str().unwrap().to_owned();
    let alias = admin_with_stdin(
        &app,
        &[
            "pronunciation",
            "create",
            "--account",
            email,
            "--text",
            "SQL",
            "--alias",
            "sequel",
        ],
        "",
    );
    assert_eq!(alias["alias"], "sequel", "{alias}");
    assert!(browser.get(page).await.body.contains("sequel"));

    // Another account's rule is out of reach; the owner deletes it.
    let mut intruder = Browser::new(&app);
    assert_eq!(intruder.sign_up("intruder@example.com").await.status, 303);
    let action = format!("/console/pronunciations/{id}/delete");
    assert_eq!(intruder.submit(page, &action, &[]).await.status, 404);
    assert_eq!(browser.submit(page, &action, &[]).await.status, 303);
    let list = admin_with_stdin(&app, &["pronunciation", "list", "--account", email], "");
    assert_eq!(list["total"], 1, "{list}");
    assert_eq!(list["data"][0]["text"], "SQL");
    app.stop().await;
}

/// A request of a session saves its record when it ends (the session layer does so whenever it
/// changed something). Issue 36 item 5: when the session was ended meanwhile — the owner
/// changed the password, or it signed out — that save must not bring the record back.
#[tokio::test]
async fn a_session_ended_while_its_request_runs_is_not_saved_back() {
    use std::sync::Arc;
    use tower_sessions::Session;
    use tower_sessions::session::Id;
    use tower_sessions::session_store::SessionStore;

    let app = TestApp::start().await;
    let store = Arc::new(fixtures::session_store(&app));
    let session_of = |browser: &Browser| -> Id {
        browser
            .cookie_value("voiced_session")
            .expect("a session cookie")
            .parse()
            .expect("a session id")
    };
    let mut owner = Browser::new(&app);
    assert_eq!(owner.sign_up("noor@example.com").await.status, 303);
    let mut thief = Browser::new(&app);
    let page = thief.sign_in("noor@example.com", PASSWORD).await;
    assert_eq!(page.status, 303, "{}", page.body);
    let stolen = session_of(&thief);

    // A request of the stolen session is in flight: its record loaded and changed...
    let in_flight = Session::new(Some(stolen), store.clone(), None);
    in_flight
        .insert("csrf_token", "changed in flight")
        .await
        .unwrap();
    // ...when the owner changes the password, which ends every other session.
    let page = owner
        .submit(
            "/console/account",
            "/console/account/password",
            &[
                ("current_password", PASSWORD),
                ("new_password", "a brand new passphrase"),
            ],
        )
        .await;
    assert_eq!(page.status, 303, "{}", page.body);
    assert!(store.load(&stolen).await.unwrap().is_none());
    // The request ends and saves its record, as the session layer does: nothing comes back.
    in_flight.save().await.unwrap();
    assert!(store.load(&stolen).await.unwrap().is_none());
    let page = thief.get("/console/keys").await;
    assert_eq!(page.status, 303, "{}", page.body);
    assert_eq!(page.location.as_deref(), Some("/console/sign-in"));

    // The same for a sign-out while another request of that session runs.
    let own = session_of(&owner);
    let in_flight = Session::new(Some(own), store.clone(), None);
    in_flight.insert("csrf_token", "late").await.unwrap();
    let page = owner
        .submit("/console/keys", "/console/sign-out", &[])
        .await;
    assert_eq!(page.status, 303, "{}", page.body);
    in_flight.save().await.unwrap();
    assert!(store.load(&own).await.unwrap().is_none());
    let left = fixtures::console_session_count(&app).await;
    assert_eq!(left, 0);
    // A live session is still saved (an update of its row).
    let mut again = Browser::new(&app);
    let page = again
        .sign_in("noor@example.com", "a brand new passphrase")
        .await;
    assert_eq!(page.status, 303, "{}", page.body);
    let live = session_of(&again);
    let request = Session::new(Some(live), store.clone(), None);
    request.insert("marker", "kept").await.unwrap();
    request.save().await.unwrap();
    let record = store.load(&live).await.unwrap().expect("the live session");
    assert_eq!(record.data["marker"], "kept");
    app.stop().await;
}

/// Issue 36 item 5: the forms that re-enter the password (change it, delete the account) are
/// sign-in attempts: they count in the sign-in limiter under the account's email and the
/// client address, so a stolen session cannot guess the password faster than the sign-in form.
#[tokio::test]
async fn password_re_entry_forms_count_as_sign_in_attempts() {
    // Clients behind a trusted proxy (the test client), so that email and address count apart.
    let app = TestApp::start_with(0, &[("VOICED_TRUSTED_PROXIES", "127.0.0.1/32")]).await;
    let mut thief = behind_proxy(&app, "203.0.113.5");
    assert_eq!(thief.sign_up("ola@example.com").await.status, 303);
    // Five wrong guesses on each form: ten attempts, each answered.
    for n in 0..5 {
        let guess = format!("guess number {n}");
        let page = thief
            .submit(
                "/console/account",
                "/console/account/password",
                &[
                    ("current_password", &guess),
                    ("new_password", "a brand new passphrase"),
                ],
            )
            .await;
        assert_eq!(page.status, 400, "{}", page.body);
        let page = thief
            .submit(
                "/console/account",
                "/console/account/delete",
                &[("password", &guess), ("confirm", "yes")],
            )
            .await;
        assert_eq!(page.status, 400, "{}", page.body);
    }
    // The eleventh is refused before the password is checked, even the right one.
    let page = thief
        .submit(
            "/console/account",
            "/console/account/password",
            &[
                ("current_password", PASSWORD),
                ("new_password", "a brand new passphrase"),
            ],
        )
        .await;
    assert_eq!(page.status, 429, "{}", page.body);
    assert!(page.retry_after.is_some());
    let page = thief
        .submit(
            "/console/account",
            "/console/account/delete",
            &[("password", PASSWORD), ("confirm", "yes")],
        )
        .await;
    assert_eq!(page.status, 429, "{}", page.body);
    // The count is the sign-in form's for the email: the email from another address is refused
    // too. The thief's address is not counted (a session guesses only its own account's
    // password): another email signs in from it as before.
    let mut elsewhere = behind_proxy(&app, "198.51.100.7");
    let page = elsewhere.sign_in("ola@example.com", PASSWORD).await;
    assert_eq!(page.status, 429, "{}", page.body);
    let mut same_address = behind_proxy(&app, "203.0.113.5");
    let page = same_address
        .sign_in("someone@example.com", "guess guess guess")
        .await;
    assert_eq!(page.status, 401, "{}", page.body);
    let page = elsewhere
        .sign_in("someone@example.com", "guess guess guess")
        .await;
    assert_eq!(page.status, 401, "{}", page.body);
    // Nothing was changed or deleted: the account still exists with its password.
    account_of(&app, "ola@example.com").await;
    let ola = fixtures::account_id(&app, "ola@example.com").await;
    let stored = fixtures::stored_account(&app, &ola).await;
    assert!(stored.password_hash.is_some(), "its password stays");
    app.stop().await;
}

/// Issue 36 item 5: an account holds at most `max_keys_per_account` live keys; one more is
/// refused (409 `conflict`) by the core's creation, which the console and `voiced admin key
/// create` share, also when creations race; revoking a key frees its place.
#[tokio::test]
async fn live_keys_per_account_are_capped() {
    let app = TestApp::start_with(0, &[("VOICED_MAX_KEYS_PER_ACCOUNT", "2")]).await;
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_up("pia@example.com").await.status, 303);
    let account = account_of(&app, "pia@example.com").await;
    for name in ["one", "two"] {
        let page = browser
            .submit(
                "/console/keys",
                "/console/keys",
                &[("name", name), ("scope_read", "on")],
            )
            .await;
        assert_eq!(page.status, 303, "{}", page.body);
    }
    let page = browser
        .submit(
            "/console/keys",
            "/console/keys",
            &[("name", "three"), ("scope_read", "on")],
        )
        .await;
    assert_eq!(page.status, 409, "{}", page.body);
    assert!(page.body.contains("(2)"), "{}", page.body);
    // The operator's command is the same operation.
    let err = fixtures::create_key(&app, 2, &account, "cli")
        .await
        .expect_err("refused");
    assert_eq!(err.code, ErrorCode::Conflict, "{}", err.detail);
    assert_eq!(err.code.status(), 409);
    let live = fixtures::keys_of(&app, &account).await;
    assert_eq!(live.len(), 2);

    // Revoking one frees one place; of five racing creations exactly one takes it.
    fixtures::revoke_own_key(&app, &account, &live[0].id).await;
    let racing = fixtures::race_key_creations(&app, 2, &account, 5).await;
    let mut made = 0;
    for outcome in racing {
        match outcome {
            Ok(()) => made += 1,
            Err(code) => assert_eq!(code, ErrorCode::Conflict),
        }
    }
    assert_eq!(made, 1);
    let live = fixtures::keys(&app)
        .await
        .iter()
        .filter(|k| k.account_id == account && !k.revoked)
        .count();
    assert_eq!(live, 2);
    app.stop().await;
}
