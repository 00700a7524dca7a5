//! `POST /v1/voices` and `GET /v1/voices/presets`: real PostgreSQL, the real Kokoro voices
//! (`voiced models fetch kokoro` installs kokoro-js's 54).

use crate::common;
use voiced::http::error::HttpStatus;

use crate::common::fixtures;
use crate::common::{TestApp, assert_problem, json};
use serde_json::{Value, json};
use voiced::domain::{Plan, Scope};

#[tokio::test]
async fn presets_list_all_54_kokoro_voices_with_language_and_gender() {
    let app = TestApp::start().await;
    let account = app.account(Plan::Pro).await;
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;
    let (status, body) = json(
        app.get("/v1/voices/presets")
            .bearer_auth(&reader)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let data = body["data"].as_array().unwrap();
    assert_eq!(body["total"], data.len(), "{body}");
    let kokoro: Vec<&Value> = data.iter().filter(|p| p["engine"] == "kokoro").collect();
    assert_eq!(kokoro.len(), 54, "{body}");
    let find = |name: &str| {
        *kokoro
            .iter()
            .find(|p| p["preset"] == name)
            .unwrap_or_else(|| panic!("{name} missing"))
    };
    for (name, language, words) in [
        ("af_heart", "en-us", ["American English", "female"]),
        ("bm_george", "en-gb", ["British English", "male"]),
        ("ef_dora", "es", ["Spanish", "female"]),
        ("ff_siwis", "fr", ["French", "female"]),
        ("hm_omega", "hi", ["Hindi", "male"]),
        ("im_nicola", "it", ["Italian", "male"]),
        ("jf_alpha", "ja", ["Japanese", "female"]),
        ("pm_alex", "pt-br", ["Brazilian Portuguese", "male"]),
        ("zf_xiaoxiao", "zh", ["Mandarin", "female"]),
    ] {
        let preset = find(name);
        assert_eq!(preset["language"], language, "{preset}");
        let description = preset["description"].as_str().unwrap();
        for word in words {
            assert!(description.contains(word), "{preset}");
        }
        let mut keys: Vec<&str> = preset
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(keys, ["description", "engine", "language", "preset"]);
    }
    // "female" is not in a male voice's description.
    assert!(
        !find("am_adam")["description"]
            .as_str()
            .unwrap()
            .contains("female")
    );

    let (_, writer) = app.key(&account, &[Scope::VoiceGenerate]).await;
    let (status, body) = json(
        app.get("/v1/voices/presets")
            .bearer_auth(&writer)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_problem(&body, 403, "insufficient_scope", "/v1/voices/presets");
    assert_eq!(status, 403);
    app.stop().await;
}

#[tokio::test]
async fn a_preset_voice_is_added_once_and_listed_as_specified() {
    let app = TestApp::start().await;
    let account = app.account(Plan::Pro).await;
    let (_, writer) = app.key(&account, &[Scope::VoiceGenerate]).await;
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;

    let response = app
        .post("/v1/voices")
        .bearer_auth(&writer)
        .json(
            &json!({"name": "Emma", "engine": "kokoro", "preset": "bf_emma",
                      "description": "  Calm British narrator  "}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["location"].to_str().unwrap(),
        "/v1/voices"
    );
    let (status, created) = json(response).await;
    assert_eq!(status, 201, "{created}");
    assert!(created["id"].as_str().unwrap().starts_with("voice_"));
    assert_eq!(created["name"], "Emma");
    assert_eq!(created["description"], "Calm British narrator");
    // The preset's language when none is given.
    assert_eq!(created["language"], "en-gb");
    assert_eq!(created["voice_type"], "preset");
    assert_eq!(created["default_engine"], "kokoro");
    assert_eq!(created["sample_count"], 0);
    assert_eq!(created["generation_count"], 0);
    assert_eq!(created["has_personality"], false);

    let (status, explicit) = app
        .create_voice(
            &writer,
            None,
            json!({"name": "Sara", "engine": "kokoro", "preset": "if_sara", "language": "IT"}),
        )
        .await;
    assert_eq!(status, 201, "{explicit}");
    assert_eq!(explicit["language"], "it");

    let (status, list) = json(
        app.get("/v1/voices")
            .bearer_auth(&reader)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["total"], 2);
    assert_eq!(list["data"][0], created);
    assert_eq!(list["data"][1], explicit);

    // The same name again, whatever the preset: 409 conflict naming `name`.
    let (status, body) = app
        .create_voice(
            &writer,
            None,
            json!({"name": "Emma", "engine": "kokoro", "preset": "af_heart"}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_problem(&body, 409, "conflict", "/v1/voices");
    assert_eq!(body["param"], "name");

    // Another account may use the name.
    let (_, other) = app.pro_user().await;
    let (status, body) = app
        .create_voice(
            &other,
            None,
            json!({"name": "Emma", "engine": "kokoro", "preset": "bf_emma"}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    app.stop().await;
}

#[tokio::test]
async fn invalid_voices_are_refused_naming_the_field() {
    let app = TestApp::start().await;
    let account = app.account(Plan::Pro).await;
    let (_, writer) = app.key(&account, &[Scope::VoiceGenerate]).await;
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;
    let base = json!({"name": "v", "engine": "kokoro", "preset": "af_heart"});
    let with = |field: &str, value: Value| {
        let mut body = base.clone();
        body[field] = value;
        body
    };
    let without = |field: &str| {
        let mut body = base.clone();
        body.as_object_mut().unwrap().remove(field);
        body
    };
    for (body, param) in [
        (with("preset", json!("af_nobody")), "preset"),
        (with("preset", json!("nova")), "preset"),
        (with("engine", json!("elevenlabs")), "engine"),
        // Known to voiced, not installed here.
        (with("engine", json!("chatterbox")), "engine"),
        (with("language", json!("english")), "language"),
        (with("language", json!("en-")), "language"),
        (with("name", json!("   ")), "name"),
        (with("name", json!("n".repeat(101))), "name"),
        (with("name", json!("a\u{0}b")), "name"),
        (with("description", json!("a\u{0}b")), "description"),
        (with("description", json!(7)), "description"),
        (without("preset"), "preset"),
        (without("name"), "name"),
        (with("seed", json!(1)), "seed"),
        // Cloning is never done through the API.
        (
            with("reference_audio", json!("UklGRg==")),
            "reference_audio",
        ),
        (
            with("audio_url", json!("https://example.com/a.wav")),
            "audio_url",
        ),
        (with("samples", json!(["UklGRg=="])), "samples"),
    ] {
        // The router alone answers these: no socket needed for each case.
        let (status, problem) = app.oneshot("POST", "/v1/voices", &writer, &body).await;
        assert_eq!(status, 400, "{body} → {problem}");
        assert_problem(&problem, 400, "invalid_request", "/v1/voices");
        assert_eq!(problem["param"], param, "{body} → {problem}");
    }
    let (status, problem) = app
        .create_voice(&writer, None, with("reference_audio", json!("UklGRg==")))
        .await;
    assert_eq!(status, 400);
    assert!(
        problem["detail"].as_str().unwrap().contains("not cloned"),
        "{problem}"
    );

    let (status, problem) = app.create_voice(&reader, None, base.clone()).await;
    assert_eq!(status, 403, "{problem}");
    assert_problem(&problem, 403, "insufficient_scope", "/v1/voices");
    assert_eq!(problem["required_scope"], "voice:generate");

    // Nothing was added by any of these.
    let (_, list) = json(
        app.get("/v1/voices")
            .bearer_auth(&reader)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(list["total"], 0, "{list}");
    app.stop().await;
}

#[tokio::test]
async fn adding_a_voice_is_idempotent() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    let body = json!({"name": "Heart", "engine": "kokoro", "preset": "af_heart"});
    let first = app
        .post("/v1/voices")
        .bearer_auth(&secret)
        .header("Idempotency-Key", "add-heart")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(first.headers().get("idempotent-replayed").is_none());
    let (status, created) = json(first).await;
    assert_eq!(status, 201, "{created}");

    // The same request again: the first answer, not a 409 for the name it took.
    let replay = app
        .post("/v1/voices")
        .bearer_auth(&secret)
        .header("Idempotency-Key", "add-heart")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(replay.headers()["idempotent-replayed"], "true");
    let (status, replayed) = json(replay).await;
    assert_eq!(status, 201);
    assert_eq!(replayed, created);

    let (status, problem) = app
        .create_voice(
            &secret,
            Some("add-heart"),
            json!({"name": "Other", "engine": "kokoro", "preset": "af_heart"}),
        )
        .await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["code"], "idempotency_key_reused");

    // A refused request releases its key: the corrected retry with the same key succeeds.
    let (status, _) = app
        .create_voice(
            &secret,
            Some("retry"),
            json!({"name": "Heart", "engine": "kokoro", "preset": "af_bella"}),
        )
        .await;
    assert_eq!(status, 409);
    let (status, body) = app
        .create_voice(
            &secret,
            Some("retry"),
            json!({"name": "Bella", "engine": "kokoro", "preset": "af_bella"}),
        )
        .await;
    assert_eq!(status, 201, "{body}");

    let (_, list) = json(
        app.get("/v1/voices")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(list["total"], 2, "{list}");
    app.stop().await;
}

/// A clone request that passed `cloning::check` (the engine need not be installed: the print
/// is left as a job, and nothing here runs it).
async fn cloned_voices(app: &TestApp, account: &str) -> usize {
    fixtures::voices_of(app, account)
        .await
        .iter()
        .filter(|v| v.voice_type == "cloned")
        .count()
}

/// Clones per calendar month (issue 36 item 6): deleting a cloned voice frees its place under
/// the live cap but not under the monthly one, so delete-and-clone-again stops at the monthly
/// figure with 429 `rate_limit_exceeded` and a `Retry-After` no later than the month's end;
/// clones of earlier months do not count.
#[tokio::test]
async fn deleting_and_cloning_again_stops_at_the_monthly_cap() {
    use voiced::service::ErrorCode;
    use voiced::service::cloning::CloneLimits;
    let app = TestApp::start().await;
    let (pro, _) = app.pro_user().await;
    let limits = CloneLimits {
        max_voices: 1,
        max_per_month: 3,
    };
    for round in 0..3 {
        let voice = fixtures::store_clone(&app, &pro, limits, &format!("Round {round}"))
            .await
            .unwrap_or_else(|e| panic!("clone {round}: {}", e.detail));
        // The live cap is reached until the voice is deleted.
        let err = fixtures::store_clone(&app, &pro, limits, "Extra")
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::Conflict, "{}", err.detail);
        voiced::service::deletion::delete_voice(&app.core, &pro, &voice)
            .await
            .unwrap();
    }
    let live = fixtures::voices_of(&app, &pro)
        .await
        .iter()
        .filter(|v| !v.deleted)
        .count();
    assert_eq!(live, 0, "every clone was deleted");
    let err = fixtures::store_clone(&app, &pro, limits, "Fourth")
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::RateLimitExceeded, "{}", err.detail);
    assert!(err.detail.contains("(3)"), "{}", err.detail);
    let retry = err.retry_after_secs.expect("Retry-After");
    assert!((1..=31 * 24 * 3600).contains(&retry), "{retry}");
    assert_eq!(
        fixtures::clone_refusal(&app, &pro, limits).await,
        Some(ErrorCode::RateLimitExceeded)
    );
    // Clones made in an earlier month are not this month's.
    fixtures::age_voices(&app, &pro, 40).await;
    assert_eq!(fixtures::clone_refusal(&app, &pro, limits).await, None);
    app.stop().await;
}

/// Cloning's caps with room enough under the monthly one: the live-voice cap is the subject.
fn cap(max_voices: u32) -> voiced::service::cloning::CloneLimits {
    voiced::service::cloning::CloneLimits {
        max_voices,
        max_per_month: 100,
    }
}

/// Cloning (issue 23 item 6): a plan (403 `pro_plan_required`) that includes the `cloning`
/// feature (403 `feature_not_enabled`), and at most `max_cloned_voices_per_account` cloned
/// voices (409 `conflict`), also when clones race; the console's form is refused alike, before
/// anything is stored.
#[tokio::test]
async fn cloning_needs_a_plan_with_the_feature_and_stays_under_the_cap() {
    use voiced::domain::Feature;
    use voiced::service::ErrorCode;
    let app = TestApp::start().await;
    let refusal = |account: String, max: u32| {
        let app = &app;
        async move { fixtures::clone_refusal(app, &account, cap(max)).await }
    };

    let free = app.account(Plan::None).await;
    assert_eq!(
        refusal(free.clone(), 20).await,
        Some(ErrorCode::ProPlanRequired)
    );
    let err = fixtures::store_clone(&app, &free, cap(20), "Ada")
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ProPlanRequired);

    let (pro, _) = app.pro_user().await;
    assert_eq!(refusal(pro.clone(), 20).await, None, "pro includes cloning");
    fixtures::set_features(&app, &pro, &[Feature::Speech, Feature::Transcription]).await;
    assert_eq!(
        refusal(pro.clone(), 20).await,
        Some(ErrorCode::FeatureNotEnabled)
    );
    let err = fixtures::store_clone(&app, &pro, cap(20), "Ada")
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::FeatureNotEnabled);
    assert_eq!(err.code.status(), 403);
    assert_eq!(cloned_voices(&app, &pro).await, 0);
    fixtures::set_features(&app, &pro, &Feature::ALL).await;

    // A cap of 3: two clones, then five at once; exactly one of the five gets the last place.
    for name in ["Ada", "Grace"] {
        fixtures::store_clone(&app, &pro, cap(3), name)
            .await
            .unwrap();
    }
    let names = ["V1", "V2", "V3", "V4", "V5"];
    let racing = fixtures::race_clones(&app, &pro, cap(3), &names).await;
    let mut stored = 0;
    for outcome in racing {
        match outcome {
            Ok(()) => stored += 1,
            Err((code, detail)) => {
                assert_eq!(code, ErrorCode::Conflict, "{detail}");
                assert!(detail.contains("(3)"), "{detail}");
            }
        }
    }
    assert_eq!(stored, 1);
    assert_eq!(cloned_voices(&app, &pro).await, 3);
    assert_eq!(refusal(pro.clone(), 3).await, Some(ErrorCode::Conflict));
    assert_eq!(refusal(pro.clone(), 4).await, None);

    // The console's clone form, for an account signed up without a plan: 403, nothing stored.
    let mut browser = common::browser::Browser::new(&app);
    assert_eq!(browser.sign_up("eve@example.com").await.status, 303);
    let page = browser.get("/console/voices").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let token = common::browser::csrf_of(&page.body);
    let boundary = "----voiced-clone-boundary";
    let mut body = String::new();
    for (name, value) in [
        ("csrf_token", token.as_str()),
        ("name", "Eve"),
        ("engine", "chatterbox"),
        ("consent", "yes"),
        ("audio", "not audio"),
    ] {
        body.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
        ));
    }
    body.push_str(&format!("--{boundary}--\r\n"));
    let request = reqwest::Client::new()
        .post(format!("{}/console/voices/clone", app.base))
        .header(
            reqwest::header::CONTENT_TYPE,
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body);
    let page = browser.send(request).await;
    assert_eq!(page.status, 403, "{}", page.body);
    let eve = fixtures::account_id(&app, "eve@example.com").await;
    let eve = fixtures::voices_of(&app, &eve).await.len();
    assert_eq!(eve, 0);
    app.stop().await;
}

/// Issue 36 item 2: the clone form is admitted before its recording is read: an account
/// with its uploads in flight (2) is answered 429 at once, before the plan, the form or the
/// token are looked at, and nothing is stored.
#[tokio::test]
async fn clone_uploads_in_flight_are_capped_per_account_before_the_form_is_read() {
    let app = TestApp::start().await;
    let mut browser = common::browser::Browser::new(&app);
    assert_eq!(browser.sign_up("busy@example.com").await.status, 303);
    let account = fixtures::account_id(&app, "busy@example.com").await;
    let held: Vec<_> =
        std::iter::from_fn(|| voiced::service::cloning::upload_slot(&app.core, &account)).collect();
    assert_eq!(held.len(), voiced::service::core::MAX_UPLOADS_PER_ACCOUNT);
    let boundary = "----voiced-busy";
    let body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"csrf_token\"\r\n\r\nnot the token\r\n--{boundary}--\r\n"
    );
    let request = reqwest::Client::new()
        .post(format!("{}/console/voices/clone", app.base))
        .header(
            reqwest::header::CONTENT_TYPE,
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body.clone());
    let page = browser.send(request).await;
    assert_eq!(page.status, 429, "{}", page.body);
    assert!(page.retry_after.is_some());
    assert!(page.body.contains("uploads in progress"), "{}", page.body);
    // A place given back: the next check answers (this account has no plan: 403).
    drop(held);
    let request = reqwest::Client::new()
        .post(format!("{}/console/voices/clone", app.base))
        .header(
            reqwest::header::CONTENT_TYPE,
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body);
    let page = browser.send(request).await;
    assert_eq!(page.status, 403, "{}", page.body);
    assert!(!page.body.contains("uploads in progress"), "{}", page.body);
    assert_eq!(cloned_voices(&app, &account).await, 0);
    app.stop().await;
}
