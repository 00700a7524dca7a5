//! `POST /v1/voices` and `GET /v1/voices/presets`: real PostgreSQL, the real Kokoro voices
//! (`voiced models fetch kokoro` installs kokoro-js's 54).

mod common;

use common::{TestApp, assert_problem, json};
use serde_json::{Value, json};
use voiced::domain::{Plan, Scope};

async fn create(app: &TestApp, secret: &str, key: Option<&str>, body: Value) -> (u16, Value) {
    let mut request = app.post("/v1/voices").bearer_auth(secret).json(&body);
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    json(request.send().await.unwrap()).await
}

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

    let (status, explicit) = create(
        &app,
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
    let (status, body) = create(
        &app,
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
    let (status, body) = create(
        &app,
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
        let (status, problem) = create(&app, &writer, None, body.clone()).await;
        assert_eq!(status, 400, "{body} → {problem}");
        assert_problem(&problem, 400, "invalid_request", "/v1/voices");
        assert_eq!(problem["param"], param, "{body} → {problem}");
    }
    let (status, problem) = create(
        &app,
        &writer,
        None,
        with("reference_audio", json!("UklGRg==")),
    )
    .await;
    assert_eq!(status, 400);
    assert!(
        problem["detail"].as_str().unwrap().contains("not cloned"),
        "{problem}"
    );

    let (status, problem) = create(&app, &reader, None, base.clone()).await;
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

    let (status, problem) = create(
        &app,
        &secret,
        Some("add-heart"),
        json!({"name": "Other", "engine": "kokoro", "preset": "af_heart"}),
    )
    .await;
    assert_eq!(status, 422, "{problem}");
    assert_eq!(problem["code"], "idempotency_key_reused");

    // A refused request releases its key: the corrected retry with the same key succeeds.
    let (status, _) = create(
        &app,
        &secret,
        Some("retry"),
        json!({"name": "Heart", "engine": "kokoro", "preset": "af_bella"}),
    )
    .await;
    assert_eq!(status, 409);
    let (status, body) = create(
        &app,
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
