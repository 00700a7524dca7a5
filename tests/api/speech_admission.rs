//! Speech admission decided once in the core (`service::speech`) for every door that speaks:
//! `POST /v1/speech`, `POST /v1/audio/speech` and the agent's `speak` (issue 23 items 7 and 24's
//! door parity): a voice whose engine is not installed, and a text whose estimate alone is
//! beyond `max_audio_per_request_secs`, are refused with 400 `invalid_request` naming the field,
//! before anything is queued.

use crate::common::client::{McpClient, mcp_call};
use crate::common::fixtures;
use crate::common::{TestApp, assert_problem};
use serde_json::{Value, json};
use voiced::domain::EngineId;

type Client = McpClient;

/// The agent's `speak`, answered as a tool error: its JSON error object.
async fn speak_refused(client: &Client, arguments: Value) -> Value {
    let result = mcp_call(client, "speak", arguments).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let text = &result.content[0].as_text().expect("text").text;
    serde_json::from_str(text).expect("JSON error")
}

/// The OpenAI envelope's `code` and `param`.
fn envelope(body: &Value) -> (&str, Option<&str>) {
    (
        body["error"]["code"].as_str().unwrap_or_default(),
        body["error"]["param"].as_str(),
    )
}

/// "1th 2th 3th …": the ordinals of issue 23, about `chars` characters. Read out ("first,
/// second, …"), they speak about four times longer than their characters suggest.
fn ordinals(chars: usize) -> String {
    let mut text = String::new();
    for n in 1.. {
        let word = format!("{n}th ");
        if text.len() + word.len() > chars {
            break;
        }
        text.push_str(&word);
    }
    text.trim_end().to_owned()
}

#[tokio::test]
async fn an_engine_not_installed_is_refused_at_every_door() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    // Known to voiced; its weights are not in the test models dir.
    app.voice(&account, "Qwen voice", EngineId::Qwen, "default")
        .await;

    let (status, problem) = app
        .post_json(
            "/v1/speech",
            &secret,
            &json!({"text": "Hi.", "voice_name": "Qwen voice"}),
        )
        .await;
    assert_eq!(status, 400, "{problem}");
    assert_problem(&problem, 400, "invalid_request", "/v1/speech");
    assert_eq!(problem["param"], "voice_name", "{problem}");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("not installed"),
        "{problem}"
    );

    // On the OpenAI dialect the field is what chose the engine: the voice (tts-1 uses the
    // voice's engine), or a model that names the engine.
    for (model, param) in [("tts-1", "voice"), ("qwen", "model")] {
        let (status, error) = app
            .post_json(
                "/v1/audio/speech",
                &secret,
                &json!({"model": model, "input": "Hi.", "voice": "Qwen voice"}),
            )
            .await;
        assert_eq!(status, 400, "{model}: {error}");
        assert_eq!(
            envelope(&error),
            ("invalid_request", Some(param)),
            "{error}"
        );
    }

    let client = app.mcp_client(&secret).await;
    let error = speak_refused(&client, json!({"text": "Hi.", "voice": "Qwen voice"})).await;
    assert_eq!(error["code"], "invalid_request", "{error}");
    assert_eq!(error["status"], 400, "{error}");
    assert_eq!(error["param"], "voice", "{error}");
    client.cancel().await.unwrap();

    assert_eq!(app.generation_count().await, 0, "nothing was queued");
    app.stop().await;
}

#[tokio::test]
async fn a_text_that_would_speak_too_long_is_refused_at_every_door() {
    let app = TestApp::start().await; // no workers: whatever is admitted stays queued
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "af_heart")
        .await;
    // 9 400 characters of ordinals: within the 10 000-character limit, estimated (from what
    // is spoken) well past 15 minutes of audio.
    let long = ordinals(9_400);
    let registry = voiced::engines::registry::EngineRegistry::new(Default::default(), 1);
    let estimate = registry.estimated_audio_ms(EngineId::Kokoro, "en", "af_heart", &long);
    assert!(estimate > 900_000, "{estimate}");

    let (status, problem) = app
        .post_json(
            "/v1/speech",
            &secret,
            &json!({"text": long, "voice_name": "Narrator"}),
        )
        .await;
    assert_eq!(status, 400, "{problem}");
    assert_problem(&problem, 400, "invalid_request", "/v1/speech");
    assert_eq!(problem["param"], "text", "{problem}");
    assert!(
        problem["detail"].as_str().unwrap().contains("minutes"),
        "{problem}"
    );

    let (status, error) = app
        .post_json(
            "/v1/audio/speech",
            &secret,
            &json!({"model": "tts-1", "input": long, "voice": "Narrator"}),
        )
        .await;
    assert_eq!(status, 400, "{error}");
    assert_eq!(
        envelope(&error),
        ("invalid_request", Some("input")),
        "{error}"
    );

    let client = app.mcp_client(&secret).await;
    let error = speak_refused(
        &client,
        json!({"text": long, "voice": "Narrator", "wait_seconds": 0}),
    )
    .await;
    assert_eq!(error["code"], "invalid_request", "{error}");
    assert_eq!(error["param"], "text", "{error}");
    client.cancel().await.unwrap();
    assert_eq!(app.generation_count().await, 0, "nothing was queued");

    // The longest plain prose a request may carry (10 000 characters) stays within the bound.
    let prose = "Every request is admitted against what was charged and what is still in flight. "
        .repeat(130);
    let prose = prose[..10_000].trim_end();
    let (status, accepted) = app
        .post_json(
            "/v1/speech",
            &secret,
            &json!({"text": prose, "voice_name": "Narrator"}),
        )
        .await;
    assert_eq!(status, 202, "{accepted}");
    let [stored] = &fixtures::all_generations(&app).await[..] else {
        panic!("one generation")
    };
    let reserved = stored.estimated_ms;
    assert_eq!(
        reserved,
        registry.estimated_audio_ms(EngineId::Kokoro, "en", "af_heart", prose),
        "the reservation is the estimate"
    );
    app.stop().await;
}

#[tokio::test]
async fn the_bound_on_one_request_is_a_setting() {
    let app = TestApp::start_with(0, &[("VOICED_MAX_AUDIO_PER_REQUEST_SECS", "5")]).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "af_heart")
        .await;
    let (status, accepted) = app
        .post_json(
            "/v1/speech",
            &secret,
            &json!({"text": "Hello there.", "voice_name": "Narrator"}),
        )
        .await;
    assert_eq!(status, 202, "{accepted}");
    // Thirty characters, read out as about ten seconds.
    let (status, problem) = app
        .post_json(
            "/v1/speech",
            &secret,
            &json!({"text": "1999 2024 1066 3141 2718 1618", "voice_name": "Narrator"}),
        )
        .await;
    assert_eq!(status, 400, "{problem}");
    assert_eq!(problem["param"], "text", "{problem}");
    assert_eq!(app.generation_count().await, 1);
    app.stop().await;
}
