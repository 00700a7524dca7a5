//! The service core against real PostgreSQL: credentials, plan gate, scopes, rate limits,
//! reads, and error documents.

use crate::common;

use std::time::Duration;

use crate::common::fixtures;
use crate::common::{TestApp, assert_problem, json};
use serde_json::Value;
use voiced::domain::{EngineId, Feature, Plan, Scope, new_id};

const V1_ROUTES: [&str; 3] = ["/v1/voices", "/v1/captures", "/v1/generations/gen_x"];

#[tokio::test]
async fn bad_credentials_get_401_invalid_api_key() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    let (revoked_id, revoked) = app.key(&account, &Scope::ALL).await;
    fixtures::revoke_key(&app, &revoked_id).await;

    let cases: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("no key", vec![]),
        (
            "unknown key",
            vec![(
                "x-api-key",
                "vk_notarealkey00000000000000000000000000000000".into(),
            )],
        ),
        ("revoked key", vec![("x-api-key", revoked.clone())]),
        (
            "revoked bearer",
            vec![("authorization", format!("Bearer {revoked}"))],
        ),
        (
            "basic",
            vec![("authorization", "Basic dXNlcjpwYXNz".into())],
        ),
        ("empty bearer", vec![("authorization", "Bearer ".into())]),
        (
            "cookie only",
            vec![("cookie", format!("session={secret}; api_key={secret}"))],
        ),
    ];
    for (what, headers) in cases {
        let mut request = app.get("/v1/voices");
        for (name, value) in &headers {
            request = request.header(*name, value);
        }
        let response = request.send().await.unwrap();
        assert_eq!(
            response.headers()["content-type"],
            "application/problem+json",
            "{what}"
        );
        // The challenge names the protected-resource metadata (RFC 9728), and says
        // invalid_token when a credential was sent (docs/oauth.md).
        let challenge = response.headers()["www-authenticate"].to_str().unwrap();
        assert!(
            challenge.starts_with("Bearer resource_metadata=\"http://127.0.0.1:8080/.well-known/oauth-protected-resource/v1\""),
            "{what}: {challenge}"
        );
        let sent = headers.iter().any(|(n, _)| *n != "cookie");
        assert_eq!(
            challenge.contains("error=\"invalid_token\""),
            sent,
            "{what}: {challenge}"
        );
        assert!(response.headers().get("x-request-id").is_some(), "{what}");
        let (status, body) = json(response).await;
        assert_eq!(status, 401, "{what}: {body}");
        assert_problem(&body, 401, "invalid_api_key", "/v1/voices");
    }

    // Both header forms work for a live key.
    let ok = app
        .get("/v1/voices")
        .header("x-api-key", &secret)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let ok = app
        .get("/v1/voices")
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    app.stop().await;
}

#[tokio::test]
async fn revocation_takes_effect_on_the_next_request() {
    let app = TestApp::start().await;
    let account = app.account(Plan::Pro).await;
    let (key_id, secret) = app.key(&account, &Scope::ALL).await;
    let first = app
        .get("/v1/voices")
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 200);
    fixtures::revoke_key(&app, &key_id).await;
    let second = app
        .get("/v1/voices")
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), 401);
    app.stop().await;
}

/// Every authenticated read route, and the answer it gives this test's live key.
const READ_ROUTES: [(&str, u16); 4] = [
    ("/v1/voices", 200),
    ("/v1/voices/presets", 200),
    ("/v1/captures", 200),
    ("/v1/generations/gen_none", 404),
];

/// Reads start from the principal kept in memory (one round trip: the read's statement checks
/// the key). Whatever changes about the key or its account shows on the very next request of
/// every read route, refusals and grants alike.
#[tokio::test]
async fn changes_apply_on_the_next_request_while_the_principal_is_in_memory() {
    let app = TestApp::start().await;
    let account = app.account(Plan::Pro).await;
    let (key_id, secret) = app.key(&account, &Scope::ALL).await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let read = |path: &'static str| {
        let request = app.get(path).bearer_auth(&secret).send();
        async move {
            let response = request.await.unwrap();
            let limited = response.headers().get("ratelimit").is_some();
            let (status, body) = json(response).await;
            (status, body, limited)
        }
    };
    let all_served = || async {
        for (path, expected) in READ_ROUTES {
            let (status, body, _) = read(path).await;
            assert_eq!(status, expected, "{path}: {body}");
        }
    };
    // Twice: the first lookup fills the memory, the second read is served from it.
    all_served().await;
    all_served().await;
    let (_, voices, _) = read("/v1/voices").await;
    assert_eq!(voices["total"], 1, "{voices}");

    // Scopes narrowed: refused; widened again: served, each on the next request.
    fixtures::set_key_scopes(&app, &key_id, &["voice:generate"]).await;
    for (path, _) in READ_ROUTES {
        let (status, body, _) = read(path).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert_problem(&body, 403, "insufficient_scope", path);
    }
    fixtures::set_key_scopes(&app, &key_id, &["voice:read", "voice:generate"]).await;
    all_served().await;

    // The plan: none is refused, and a paid plan is served again.
    fixtures::set_plan(&app, &account, Plan::None).await;
    for (path, _) in READ_ROUTES {
        let (status, body, _) = read(path).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert_problem(&body, 403, "pro_plan_required", path);
    }
    fixtures::set_plan(&app, &account, Plan::Pro).await;
    all_served().await;

    // Features (only writes need them; writes always look the key up): speech removed while the
    // principal is in memory is refused, given back is admitted; reads go on either way.
    let speak = || {
        app.post("/v1/speech")
            .bearer_auth(&secret)
            .json(&serde_json::json!({"text": "Hello.", "voice_name": "Narrator"}))
            .send()
    };
    fixtures::set_features(&app, &account, &[Feature::Transcription]).await;
    all_served().await;
    let (status, body) = json(speak().await.unwrap()).await;
    assert_eq!(status, 403, "{body}");
    assert_problem(&body, 403, "feature_not_enabled", "/v1/speech");
    fixtures::set_features(&app, &account, &Feature::ALL).await;
    all_served().await;
    let (status, body) = json(speak().await.unwrap()).await;
    assert_eq!(status, 202, "{body}");

    // Revoked: every read route answers 401 on its next request (with no quota headers: a
    // revoked key has no quota), and keeps doing so; the credential comes before the rate
    // limit, so a key that spent its read quota is told 401 too, not to wait.
    all_served().await;
    loop {
        let (status, body, _) = read("/v1/voices").await;
        match status {
            200 => continue,
            429 => break,
            other => panic!("{other}: {body}"),
        }
    }
    fixtures::revoke_key(&app, &key_id).await;
    for _ in 0..2 {
        for (path, _) in READ_ROUTES {
            let (status, body, limited) = read(path).await;
            assert_eq!(status, 401, "{path}: {body}");
            assert_problem(&body, 401, "invalid_api_key", path);
            assert!(!limited, "{path}");
        }
    }
    app.stop().await;
}

/// The fingerprint kept on each key row (migration 0009) is, after every kind of change to what
/// it is made of, exactly what the join it replaced computes; a change to anything else leaves
/// it alone. Keys of another account never move.
#[tokio::test]
async fn the_stored_key_fingerprint_follows_every_change() {
    let app = TestApp::start().await;
    let account = app.account(Plan::Pro).await;
    let other = app.account(Plan::Pro).await;
    let (key_id, _) = app.key(&account, &[Scope::VoiceRead]).await;
    let (second_id, _) = app.key(&account, &Scope::ALL).await;
    let (other_id, _) = app.key(&other, &Scope::ALL).await;
    let stored = |id: String| {
        let app = &app;
        async move { fixtures::key_fingerprint(app, &id).await }
    };
    let all_exact = || async {
        let mut seen = Vec::new();
        for id in [&key_id, &second_id, &other_id] {
            let (kept, computed) = stored(id.clone()).await;
            assert_eq!(kept, computed, "{id}");
            seen.push(kept);
        }
        seen
    };
    let first = all_exact().await;
    assert!(first[0].contains("pro"), "{}", first[0]);

    fixtures::set_key_scopes(&app, &key_id, &["voice:read", "voice:generate"]).await;
    fixtures::set_ceiling(
        &app,
        &key_id,
        Some(voiced::domain::CeilingMinutes::new(30).unwrap()),
    )
    .await
    .unwrap();
    let after_key = all_exact().await;
    assert_ne!(after_key[0], first[0]);
    assert_eq!(after_key[1..], first[1..]);

    fixtures::set_plan(&app, &account, Plan::None).await;
    let after_plan = all_exact().await;
    assert_ne!(after_plan[0], after_key[0]);
    assert_ne!(after_plan[1], after_key[1]);
    assert_eq!(after_plan[2], first[2], "another account's key moved");

    fixtures::set_features(&app, &account, &[Feature::Transcription]).await;
    let after_features = all_exact().await;
    assert_ne!(after_features[0], after_plan[0]);

    // Recording a use changes nothing it is made of.
    fixtures::touch_key(&app, &key_id).await;
    assert_eq!(all_exact().await, after_features);

    // A key for an account that does not exist is still refused by the foreign key.
    let missing = fixtures::key_of_missing_account(&app).await;
    let code = missing.as_database_error().and_then(|e| e.code());
    assert_eq!(code.as_deref(), Some("23503"), "{missing}");
    app.stop().await;
}

#[tokio::test]
async fn plan_none_is_refused_on_every_v1_route_and_recovers_with_the_plan() {
    let app = TestApp::start().await;
    let account = app.account(Plan::None).await;
    let (_, secret) = app.key(&account, &Scope::ALL).await;
    for path in V1_ROUTES {
        let response = app.get(path).bearer_auth(&secret).send().await.unwrap();
        // A key request: rate-limit headers ride on refusals too.
        assert!(response.headers().get("ratelimit").is_some(), "{path}");
        let (status, body) = json(response).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert_problem(&body, 403, "pro_plan_required", path);
        assert_eq!(
            body["settings_url"],
            "http://127.0.0.1:8080/console/billing"
        );
    }
    // The same key works again on the next request after the account returns to a paid plan.
    fixtures::set_plan(&app, &account, Plan::Trial).await;
    let response = app
        .get("/v1/voices")
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    app.stop().await;
}

#[tokio::test]
async fn missing_scope_is_403_insufficient_scope() {
    let app = TestApp::start().await;
    let account = app.account(Plan::Pro).await;
    let (_, generate_only) = app.key(&account, &[Scope::VoiceGenerate]).await;
    for path in V1_ROUTES {
        let (status, body) = json(
            app.get(path)
                .bearer_auth(&generate_only)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 403, "{path}: {body}");
        assert_problem(&body, 403, "insufficient_scope", path);
        assert_eq!(body["required_scope"], "voice:read");
    }
    app.stop().await;
}

#[tokio::test]
async fn voices_list_only_the_accounts_profiles() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    let (other, _) = app.pro_user().await;
    let (status, empty) = json(
        app.get("/v1/voices")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(empty, serde_json::json!({ "data": [], "total": 0 }));

    let id = app
        .voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    app.voice(&other, "Someone else", EngineId::Kokoro, "jf_alpha")
        .await;
    let (status, body) = json(
        app.get("/v1/voices")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["total"], 1);
    let voice = &body["data"][0];
    assert_eq!(voice["id"], id);
    assert_eq!(voice["name"], "Narrator");
    assert_eq!(voice["voice_type"], "preset");
    assert_eq!(voice["default_engine"], "kokoro");
    assert_eq!(voice["language"], "en");
    assert_eq!(voice["has_personality"], false);
    assert_eq!(voice["generation_count"], 0);
    assert_eq!(voice["sample_count"], 0);
    for field in ["description", "created_at", "updated_at"] {
        assert!(voice.get(field).is_some(), "{field} missing: {voice}");
    }
    app.stop().await;
}

async fn insert_capture(app: &TestApp, account: &str, text: &str) -> String {
    let id = new_id("cap");
    fixtures::store_capture(app, account, &id, text)
        .await
        .expect("stored");
    id
}

#[tokio::test]
async fn captures_page_newest_first_with_totals() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    let (other, _) = app.pro_user().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(insert_capture(&app, &account, &format!("capture {i}")).await);
    }
    insert_capture(&app, &other, "not mine").await;

    let (status, body) = json(
        app.get("/v1/captures")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["total"], 5);
    assert_eq!(body["limit"], 50);
    assert_eq!(body["offset"], 0);
    let listed: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let newest_first: Vec<&str> = ids.iter().rev().map(String::as_str).collect();
    assert_eq!(listed, newest_first);

    let (_, page) = json(
        app.get("/v1/captures?limit=2&offset=1")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(page["total"], 5);
    assert_eq!(page["limit"], 2);
    assert_eq!(page["offset"], 1);
    assert_eq!(page["data"][0]["id"], ids[3]);
    assert_eq!(page["data"][1]["id"], ids[2]);
    assert_eq!(page["data"][0]["transcript_raw"], "capture 3");

    let (status, beyond) = json(
        app.get("/v1/captures?limit=200&offset=9007199254740991")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(beyond["data"], serde_json::json!([]));
    app.stop().await;
}

#[tokio::test]
async fn bad_paging_parameters_are_400_naming_the_param() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    let cases = [
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=-1", "limit"),
        ("limit=abc", "limit"),
        ("limit=1.5", "limit"),
        ("limit=", "limit"),
        ("offset=-1", "offset"),
        ("offset=9007199254740992", "offset"),
        ("offset=x", "offset"),
    ];
    for (query, param) in cases {
        let (status, body) = json(
            app.get(&format!("/v1/captures?{query}"))
                .bearer_auth(&secret)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 400, "{query}: {body}");
        assert_problem(&body, 400, "invalid_request", "/v1/captures");
        assert_eq!(body["param"], param, "{query}");
    }
    app.stop().await;
}

#[tokio::test]
async fn generations_are_private_and_ids_are_bounded() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    let (other, other_secret) = app.pro_user().await;
    let voice = app.voice(&other, "v", EngineId::Kokoro, "jf_alpha").await;
    let generation = fixtures::left_generation(
        &app,
        fixtures::LeftGeneration::running(&other, &voice),
        false,
    )
    .await;
    let _ = account;

    // The owner sees it.
    let (status, body) = json(
        app.get(&format!("/v1/generations/{generation}"))
            .bearer_auth(&other_secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], generation);
    assert_eq!(body["status"], "generating");
    assert_eq!(body["profile"], voice);
    assert_eq!(body["has_audio"], false);
    assert_eq!(body["seed"], 7);
    assert!(body.get("audio_url").is_none());

    // Another account gets exactly what a missing id gets.
    let strip = |mut v: Value| {
        v.as_object_mut().unwrap().remove("instance");
        v
    };
    let (s1, theirs) = json(
        app.get(&format!("/v1/generations/{generation}"))
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    let (s2, missing) = json(
        app.get("/v1/generations/gen_missing")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((s1, s2), (404, 404));
    assert_problem(
        &theirs,
        404,
        "not_found",
        &format!("/v1/generations/{generation}"),
    );
    assert_eq!(strip(theirs), strip(missing));

    let long = "g".repeat(201);
    let (status, body) = json(
        app.get(&format!("/v1/generations/{long}"))
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "invalid_request");
    assert_eq!(body["param"], "generationId");
    let ok_len = "g".repeat(200);
    let response = app
        .get(&format!("/v1/generations/{ok_len}"))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    app.stop().await;
}

#[tokio::test]
async fn completed_generation_carries_a_fresh_signed_audio_url() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    let voice = app.voice(&account, "v", EngineId::Kokoro, "jf_alpha").await;
    let completed = fixtures::LeftGeneration {
        status: "completed",
        duration_ms: Some(900),
        audio_key: Some("k"),
        ..fixtures::LeftGeneration::running(&account, &voice)
    };
    let generation = fixtures::left_generation(&app, completed, false).await;
    let (_, body) = json(
        app.get(&format!("/v1/generations/{generation}"))
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(body["status"], "completed");
    assert_eq!(body["has_audio"], true);
    let url = body["audio_url"].as_str().unwrap();
    let prefix = format!("http://127.0.0.1:8080/v1/audio/{generation}?sig=");
    assert!(url.starts_with(&prefix), "{url}");
    let sig = &url[prefix.len()..];
    let signer = voiced::signing::AudioSigner::new(common::SIGNING_SECRET.to_vec());
    assert!(
        signer
            .verify(&generation, sig, chrono::Utc::now().timestamp())
            .is_ok()
    );
    assert!(
        signer
            .verify("gen_other", sig, chrono::Utc::now().timestamp())
            .is_err()
    );
    app.stop().await;
}

#[tokio::test]
async fn the_301st_read_in_a_minute_is_429_with_headers() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    let (_, other_key) = app.pro_user().await;
    for i in 0..300u32 {
        let response = app
            .get("/v1/voices")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "request {}", i + 1);
        if i == 0 {
            assert_eq!(
                response.headers()["ratelimit-policy"],
                "\"writes\";q=600;w=3600, \"read-burst\";q=300;w=60"
            );
            assert_eq!(response.headers()["ratelimit"], "\"read-burst\";r=299;t=1");
        }
    }
    let response = app
        .get("/v1/captures")
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    let retry_after: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    assert_eq!(response.headers()["ratelimit"], "\"read-burst\";r=0;t=60");
    assert!(response.headers().get("ratelimit-policy").is_some());
    let (_, body) = json(response).await;
    assert_problem(&body, 429, "rate_limit_exceeded", "/v1/captures");

    // Another key is not affected; time refills the first.
    let response = app
        .get("/v1/voices")
        .bearer_auth(&other_key)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    app.clock.advance(Duration::from_secs(retry_after));
    let response = app
        .get("/v1/voices")
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    app.stop().await;
}

#[tokio::test]
async fn unknown_routes_and_wrong_methods_are_problem_documents() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    let response = app
        .get("/v1/nothing-here")
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    let (status, body) = json(response).await;
    assert_eq!(status, 404);
    assert_problem(&body, 404, "not_found", "/v1/nothing-here");

    // GET lists voices and POST adds one (two scope groups on one path); PUT is neither.
    let response = app
        .client
        .put(format!("{}/v1/voices", app.base))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    let allow = response.headers()["allow"].to_str().unwrap().to_owned();
    assert!(allow.contains("GET") && allow.contains("POST"), "{allow}");
    let (_, body) = json(response).await;
    assert_problem(&body, 405, "method_not_allowed", "/v1/voices");

    let (status, body) = json(
        app.client
            .delete(format!("{}/healthz", app.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 405);
    assert_problem(&body, 405, "method_not_allowed", "/healthz");
    app.stop().await;
}

#[tokio::test]
async fn request_ids_health_cors_and_openapi() {
    let app = TestApp::start().await;
    let response = app
        .get("/healthz")
        .header("x-request-id", "req-abc-123")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "req-abc-123");
    assert_eq!(
        json(response).await,
        (200, serde_json::json!({ "status": "ok" }))
    );
    let response = app.get("/readyz").send().await.unwrap();
    assert!(!response.headers()["x-request-id"].is_empty());
    assert_eq!(json(response).await.0, 200);

    // Preflight from any origin, no credentials, our headers exposed.
    let response = app
        .client
        .request(reqwest::Method::OPTIONS, format!("{}/v1/voices", app.base))
        .header("origin", "https://example.org")
        .header("access-control-request-method", "GET")
        .header("access-control-request-headers", "x-api-key")
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    assert!(
        response
            .headers()
            .get("access-control-allow-credentials")
            .is_none()
    );
    // The preflight the OpenAI JS SDK sends from a browser, its `x-stainless-*` headers included.
    let requested = "authorization,content-type,x-stainless-arch,x-stainless-lang,\
                     x-stainless-os,x-stainless-package-version,x-stainless-retry-count,\
                     x-stainless-runtime,x-stainless-runtime-version,x-stainless-timeout";
    let response = app
        .client
        .request(
            reqwest::Method::OPTIONS,
            format!("{}/v1/audio/speech", app.base),
        )
        .header("origin", "http://localhost:5173")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", requested)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success());
    assert_eq!(response.headers()["access-control-allow-origin"], "*");
    let allowed = response.headers()["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    for header in requested.split(',') {
        assert!(allowed.contains(header), "{header} not in {allowed}");
    }
    let response = app
        .get("/healthz")
        .header("origin", "https://example.org")
        .send()
        .await
        .unwrap();
    let exposed = response.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    for header in [
        "ratelimit",
        "ratelimit-policy",
        "retry-after",
        "x-request-id",
        "location",
    ] {
        assert!(exposed.contains(header), "{header} not exposed: {exposed}");
    }

    // The served document is the committed one.
    let (status, served) = json(app.get("/openapi.json").send().await.unwrap()).await;
    assert_eq!(status, 200);
    let committed: Value =
        serde_json::from_str(include_str!("../../openapi/openapi.json")).unwrap();
    assert_eq!(
        served, committed,
        "openapi/openapi.json is stale: run `cargo run -- openapi > openapi/openapi.json`"
    );
    assert_eq!(served["openapi"], "3.1.0");
    app.stop().await;
}
