//! The agent interface at `/mcp`, driven by the official Rust SDK's client (rmcp) and by raw
//! HTTP where the exact status and headers matter: both protocol revisions, every tool on the
//! real models (audio decoded, speech transcribed back), credentials, scopes, plans, tenancy,
//! the DNS-rebinding guard, idempotency shared with REST, and metering once per generation.

use std::time::Duration;

use crate::common::browser::{Browser, PASSWORD, consent_page, csrf_of, field_of};
use crate::common::client::{McpClient, mcp_call, mcp_tools_call};
use crate::common::fixtures;
use crate::common::{TestApp, assert_problem, json};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion, Tool};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::{AuthClient, AuthorizationManager, AuthorizationRequest, OAuthState};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};
use voiced::audio::{DecodeLimits, decode_for_asr};
use voiced::domain::{EngineId, Plan, Scope};

type Client = McpClient;

/// The public base URL the test server hands out (the default configuration's).
const PUBLIC: &str = "http://127.0.0.1:8080";
const SENTENCE: &str = "The quick brown fox jumps over the lazy dog.";

/// A client on the 2026-07-28 revision (`server/discover`, no handshake).
async fn modern_client(app: &TestApp, secret: &str) -> Client {
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    app.mcp_connect(secret, lifecycle).await.expect("discover")
}

fn structured(result: &CallToolResult) -> &Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result
        .structured_content
        .as_ref()
        .expect("structured content")
}

/// The JSON error object of a tool error.
fn tool_error(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(true), "{result:?}");
    let text = &result.content[0].as_text().expect("text").text;
    let error: Value = serde_json::from_str(text).expect("JSON error");
    // The members of a REST problem document.
    let code = error["code"].as_str().expect("code");
    assert_eq!(error["type"], format!("{PUBLIC}/errors/{code}"), "{error}");
    assert!(
        error["status"].as_u64().is_some_and(|s| s >= 400),
        "{error}"
    );
    assert!(
        error["detail"].as_str().is_some_and(|d| !d.is_empty()),
        "{error}"
    );
    error
}

fn header(response: &reqwest::Response, name: &str) -> String {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// Downloads through `audio_url` (its path and query, against the test server).
async fn download(app: &TestApp, audio_url: &str) -> Vec<u8> {
    assert!(audio_url.starts_with(PUBLIC), "{audio_url}");
    let response = app.get(&audio_url[PUBLIC.len()..]).send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.bytes().await.unwrap().to_vec()
}

/// Serves `audio` at `/clip.wav` on a port-0 loopback listener; returns its URL.
async fn serve_audio(audio: Vec<u8>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/clip.wav", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/clip.wav",
        axum::routing::get(move || {
            let audio = audio.clone();
            async move { ([("content-type", "audio/wav")], audio) }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

fn wav_ms(bytes: &[u8]) -> i64 {
    let reader = hound::WavReader::new(std::io::Cursor::new(bytes)).expect("a wav file");
    let spec = reader.spec();
    assert_eq!((spec.channels, spec.bits_per_sample), (1, 16));
    i64::from(reader.duration()) * 1000 / i64::from(spec.sample_rate)
}

/// Words of `reference` the transcript misses (case and punctuation aside).
fn missing_words(reference: &str, transcript: &str) -> Vec<String> {
    let words = |s: &str| -> Vec<String> {
        s.split_whitespace()
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .filter(|w| !w.is_empty())
            .collect()
    };
    let heard = words(transcript);
    words(reference)
        .into_iter()
        .filter(|w| !heard.contains(w))
        .collect()
}

#[tokio::test]
async fn every_tool_on_both_revisions_with_real_audio() {
    // The fetch allowance for tests: `audio_url` may name the loopback server below.
    let app = TestApp::start_with(1, &[("VOICED_OAUTH_ALLOW_LOOPBACK_FETCH", "true")]).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Agent Voice", EngineId::Kokoro, "af_heart")
        .await;

    // The 2025-11-25 handshake: who the server is, and its tools.
    let client = app.mcp_client(&secret).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(info.server_info.as_ref().unwrap().name, "voiced");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_11_25);
    assert!(info.capabilities.tools.is_some());
    let tools: Vec<Tool> = client.list_all_tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| &*t.name).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "cancel_generation",
            "get_generation",
            "list_captures",
            "list_voices",
            "speak",
            "transcribe"
        ]
    );
    for tool in &tools {
        assert!(tool.output_schema.is_some(), "{}", tool.name);
        let annotations = tool.annotations.as_ref().expect("annotations");
        let reads = !matches!(&*tool.name, "speak" | "transcribe" | "cancel_generation");
        assert_eq!(annotations.read_only_hint, Some(reads), "{}", tool.name);
    }

    let voices = mcp_call(&client, "list_voices", json!({})).await;
    assert_eq!(structured(&voices)["total"], 1);
    assert_eq!(structured(&voices)["data"][0]["name"], "Agent Voice");

    // speak: waits for the audio and links it; the link downloads and decodes.
    let spoken = mcp_call(
        &client,
        "speak",
        json!({"text": SENTENCE, "voice": "Agent Voice", "format": "wav", "wait_seconds": 120}),
    )
    .await;
    let out = structured(&spoken).clone();
    assert_eq!(out["status"], "completed", "{out}");
    assert_eq!(out["replayed"], false);
    let url = out["audio_url"].as_str().unwrap();
    let text = &spoken.content[0].as_text().unwrap().text;
    assert!(text.contains(url), "the summary names the link: {text}");
    let link = spoken
        .content
        .iter()
        .find_map(|c| c.as_resource_link().cloned())
        .expect("a resource_link");
    assert_eq!(link.uri, url);
    assert_eq!(link.mime_type.as_deref(), Some("audio/wav"));
    let wav = download(&app, url).await;
    let ms = wav_ms(&wav);
    assert!((1000..8000).contains(&ms), "{ms} ms");
    assert!(
        (ms - out["duration_ms"].as_i64().unwrap()).abs() <= 50,
        "{out}"
    );

    // The same speech through transcribe (base64), stored as an agent capture.
    let heard = mcp_call(
        &client,
        "transcribe",
        json!({"audio_base64": STANDARD.encode(&wav)}),
    )
    .await;
    let transcript = structured(&heard).clone();
    let missing = missing_words(SENTENCE, transcript["text"].as_str().unwrap());
    assert!(missing.len() <= 1, "missed {missing:?} in {transcript}");
    assert_eq!(transcript["language"], "en");
    assert!(transcript.get("words").is_none(), "{transcript}");

    let (_, listed) = json(
        app.get("/v1/captures")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["data"][0]["id"], transcript["capture_id"]);
    assert_eq!(listed["data"][0]["source"], "agent");
    let captures = mcp_call(&client, "list_captures", json!({"limit": 1})).await;
    assert_eq!(structured(&captures)["data"][0]["source"], "agent");
    assert_eq!(structured(&captures)["limit"], 1);

    // The same speech by URL: fetched through the SSRF guard (loopback admitted by the test
    // allowance), transcribed, stored as an agent capture.
    let served = serve_audio(wav.clone()).await;
    let heard = mcp_call(&client, "transcribe", json!({"audio_url": served})).await;
    let by_url = structured(&heard).clone();
    let missing = missing_words(SENTENCE, by_url["text"].as_str().unwrap());
    assert!(missing.len() <= 1, "missed {missing:?} in {by_url}");
    assert_ne!(by_url["capture_id"], transcript["capture_id"]);
    let (_, listed) = json(
        app.get("/v1/captures")
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(listed["total"], 2);
    let stored = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == by_url["capture_id"])
        .expect("the URL's capture is listed");
    assert_eq!(stored["source"], "agent");
    assert_eq!(stored["transcript_raw"], by_url["text"], "{stored}");
    // With word timestamps: segments and words, the words spelling the text.
    let timed = mcp_call(
        &client,
        "transcribe",
        json!({"audio_base64": STANDARD.encode(&wav), "timestamps": "word"}),
    )
    .await;
    let timed = structured(&timed).clone();
    assert!(
        timed["segments"].as_array().is_some_and(|s| !s.is_empty()),
        "{timed}"
    );
    let words: String = timed["words"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["word"].as_str().unwrap())
        .collect();
    assert_eq!(words.trim(), timed["text"], "{timed}");
    // The allowance is loopback only: a private address stays refused, before any connection.
    let error = tool_error(
        &mcp_call(
            &client,
            "transcribe",
            json!({"audio_url": "http://10.1.2.3/a.wav"}),
        )
        .await,
    );
    assert_eq!(
        (error["code"].as_str(), error["param"].as_str()),
        (Some("invalid_request"), Some("audio_url")),
        "{error}"
    );
    assert!(
        error["detail"]
            .as_str()
            .unwrap()
            .contains("non-public address"),
        "{error}"
    );
    client.cancel().await.unwrap();

    // The 2026-07-28 revision: no handshake, the same tools.
    let client = modern_client(&app, &secret).await;
    let generation = mcp_call(
        &client,
        "get_generation",
        json!({"generation_id": out["generation_id"]}),
    )
    .await;
    let generation = structured(&generation).clone();
    assert_eq!(generation["status"], "completed");
    assert_eq!(generation["format"], "wav");
    assert_eq!(
        wav_ms(&download(&app, generation["audio_url"].as_str().unwrap()).await),
        ms
    );

    // Inline audio on request: an Ogg Opus clip in the result that decodes.
    let inline = mcp_call(
        &client,
        "speak",
        json!({"text": "Short.", "voice": "Agent Voice", "format": "opus", "inline_audio": true, "wait_seconds": 120}),
    )
    .await;
    assert_eq!(structured(&inline)["status"], "completed");
    let audio = inline
        .content
        .iter()
        .find_map(|c| c.as_audio().cloned())
        .expect("inline audio");
    assert_eq!(audio.mime_type, "audio/ogg");
    let decoded = decode_for_asr(
        STANDARD.decode(&audio.data).unwrap(),
        &DecodeLimits::default(),
    )
    .expect("the inline audio decodes");
    assert!(decoded.duration_ms > 200, "{}", decoded.duration_ms);

    // wait_seconds 0: the id to poll, at once.
    let queued = mcp_call(
        &client,
        "speak",
        json!({"text": "Later.", "voice": "Agent Voice", "wait_seconds": 0}),
    )
    .await;
    let queued = structured(&queued).clone();
    assert_eq!(queued["audio_url"], Value::Null, "{queued}");
    let id = queued["generation_id"].as_str().unwrap().to_owned();
    app.completion(&id, Duration::from_secs(5)).await.unwrap();
    let polled = mcp_call(&client, "get_generation", json!({"generation_id": id})).await;
    assert_eq!(structured(&polled)["status"], "completed");
    // A completed generation cannot be cancelled; a queued one can (the core's rule, as on
    // POST /v1/generations/{id}/cancel).
    let refused =
        tool_error(&mcp_call(&client, "cancel_generation", json!({"generation_id": id})).await);
    assert_eq!(refused["code"], "generation_finished", "{refused}");
    assert_eq!(refused["status"], 409);
    client.cancel().await.unwrap();
    app.stop().await;
}

#[tokio::test]
async fn one_idempotency_key_one_generation_one_charge_across_doors() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Agent Voice", EngineId::Kokoro, "af_heart")
        .await;
    let client = app.mcp_client(&secret).await;
    let args = json!({"text": "Once only.", "voice": "Agent Voice", "format": "wav",
                      "wait_seconds": 120, "idempotency_key": "mcp-first"});

    // MCP first, then MCP again, then REST with the same key and the same request.
    let first = structured(&mcp_call(&client, "speak", args.clone()).await).clone();
    let again = structured(&mcp_call(&client, "speak", args.clone()).await).clone();
    assert_eq!(again["generation_id"], first["generation_id"]);
    assert_eq!(
        (first["replayed"].clone(), again["replayed"].clone()),
        (json!(false), json!(true))
    );
    let rest = app
        .post("/v1/speech")
        .bearer_auth(&secret)
        .header("idempotency-key", "mcp-first")
        .json(&json!({"text": "Once only.", "voice_name": "Agent Voice", "response_format": "wav"}))
        .send()
        .await
        .unwrap();
    assert_eq!(rest.status(), 202);
    assert_eq!(header(&rest, "idempotent-replayed"), "true");
    let (_, accepted) = json(rest).await;
    assert_eq!(accepted["id"], first["generation_id"]);

    // The same key with another request is refused, and nothing is made.
    let mut other = args.clone();
    other["text"] = json!("Twice?");
    let refused = tool_error(&mcp_call(&client, "speak", other).await);
    assert_eq!(refused["code"], "idempotency_key_reused", "{refused}");

    // REST first, then MCP.
    let rest = app
        .post("/v1/speech")
        .bearer_auth(&secret)
        .header("idempotency-key", "rest-first")
        .json(&json!({"text": "From REST.", "voice_name": "Agent Voice"}))
        .send()
        .await
        .unwrap();
    let (status, accepted) = json(rest).await;
    assert_eq!(status, 202);
    let via_mcp = structured(
        &mcp_call(
            &client,
            "speak",
            json!({"text": "From REST.", "voice": "Agent Voice", "idempotency_key": "rest-first", "wait_seconds": 120}),
        )
        .await,
    )
    .clone();
    assert_eq!(via_mcp["generation_id"], accepted["id"]);
    assert_eq!(via_mcp["replayed"], true);
    assert_eq!(via_mcp["status"], "completed");
    assert_eq!(app.generation_count().await, 2);

    // Metered once each: the usage page's ledger holds one row per generation, summing to the
    // audio made.
    let charged = fixtures::usage_this_month_ms(&app, &account).await;
    let made = first["duration_ms"].as_i64().unwrap() + via_mcp["duration_ms"].as_i64().unwrap();
    assert_eq!(charged, made);
    let rows = fixtures::ledger_of(&app, &account).await.len();
    assert_eq!(rows, 2);
    client.cancel().await.unwrap();
    app.stop().await;
}

#[tokio::test]
async fn credentials_scopes_plans_tenants_and_the_rebinding_guard() {
    let app = TestApp::start().await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let metadata = format!("{PUBLIC}/.well-known/oauth-protected-resource/mcp");

    // No credential: 401 with the challenge that leads to the OAuth metadata.
    let response = app.mcp_rpc(&[], list.clone()).await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        header(&response, "www-authenticate"),
        format!("Bearer resource_metadata=\"{metadata}\", scope=\"voice:read voice:generate\"")
    );
    let (_, body) = json(response).await;
    assert_eq!(body["code"], "invalid_api_key");
    // A bad one: the same, with error="invalid_token" (one builder for every door: REST's).
    let response = app
        .mcp_rpc(&[("authorization", "Bearer vk_not_a_key")], list.clone())
        .await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        header(&response, "www-authenticate"),
        format!(
            "Bearer resource_metadata=\"{metadata}\", scope=\"voice:read voice:generate\", error=\"invalid_token\""
        )
    );
    assert!(
        app.mcp_connect("vk_not_a_key", ClientLifecycleMode::Initialize)
            .await
            .is_err(),
        "the SDK client cannot connect with a bad key"
    );

    // A read-only key reads, and calling a generating tool is 403 with the scope to ask for.
    let account = app.account(Plan::Pro).await;
    let voice = app
        .voice(&account, "Mine", EngineId::Kokoro, "af_heart")
        .await;
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;
    let bearer = format!("Bearer {reader}");
    let response = app
        .mcp_rpc(&[("authorization", &bearer)], list.clone())
        .await;
    assert_eq!(response.status(), 200);
    // Reads count against the read-burst policy, generating calls against writes.
    assert!(header(&response, "ratelimit").starts_with("\"read-burst\""));
    let speak = mcp_tools_call("speak", json!({"text": "Hi.", "voice": "Mine"}));
    let response = app
        .mcp_rpc(&[("authorization", &bearer)], speak.clone())
        .await;
    assert_eq!(response.status(), 403);
    assert_eq!(
        header(&response, "www-authenticate"),
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"voice:generate\", resource_metadata=\"{metadata}\""
        )
    );
    assert!(header(&response, "ratelimit").starts_with("\"writes\""));
    let (_, body) = json(response).await;
    assert_eq!(body["code"], "insufficient_scope");
    assert_eq!(body["required_scope"], "voice:generate");
    let client = app.mcp_client(&reader).await;
    assert_eq!(
        structured(&mcp_call(&client, "list_voices", json!({})).await)["total"],
        1
    );
    let refused = client
        .call_tool(
            CallToolRequestParams::new("transcribe")
                .with_arguments(Map::from_iter([("audio_base64".into(), json!("AAAA"))])),
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(app.generation_count().await, 0);
    client.cancel().await.unwrap();

    // A generate-only key cannot read.
    let (_, writer) = app.key(&account, &[Scope::VoiceGenerate]).await;
    let response = app
        .mcp_rpc(
            &[("authorization", &format!("Bearer {writer}"))],
            mcp_tools_call("list_voices", json!({})),
        )
        .await;
    assert_eq!(response.status(), 403);
    assert!(header(&response, "www-authenticate").contains("scope=\"voice:read\""));

    // Bad arguments are tool errors naming the argument; nothing is created.
    let (_, secret) = app.key(&account, &Scope::ALL).await;
    let client = modern_client(&app, &secret).await;
    for (tool, arguments, param) in [
        ("speak", json!({"voice": "Mine"}), "text"),
        ("speak", json!({"text": "Hi.", "voice": "Nobody"}), "voice"),
        (
            "speak",
            json!({"text": "Hi.", "voice": "Mine", "seed": -1}),
            "seed",
        ),
        (
            "speak",
            json!({"text": "Hi.", "voice": "Mine", "format": "flac"}),
            "format",
        ),
        (
            "speak",
            json!({"text": "Hi.", "voice": "Mine", "wait_seconds": 999}),
            "wait_seconds",
        ),
        (
            "speak",
            json!({"text": "Hi.", "voice": "Mine", "temperature": 0.5}),
            "temperature",
        ),
        (
            "speak",
            json!({"text": "Hi.", "voice": "Mine", "colour": "red"}),
            "colour",
        ),
        ("list_captures", json!({"limit": 500}), "limit"),
        (
            "get_generation",
            json!({"generation_id": "g".repeat(201)}),
            "generation_id",
        ),
        ("cancel_generation", json!({}), "generation_id"),
        (
            "cancel_generation",
            json!({"generation_id": "gen_x", "reason": "bored"}),
            "reason",
        ),
        ("transcribe", json!({}), "audio_base64"),
        ("transcribe", json!({"audio_base64": "%%%"}), "audio_base64"),
        (
            "transcribe",
            json!({"audio_base64": "AAAA", "timestamps": "char"}),
            "timestamps",
        ),
        (
            "transcribe",
            json!({"audio_url": "http://example.com/a.wav"}),
            "audio_url",
        ),
        // Without the test allowance: loopback, private and link-local addresses are refused
        // (over https too), and so is plain http to loopback.
        (
            "transcribe",
            json!({"audio_url": "https://127.0.0.1:9/a.wav"}),
            "audio_url",
        ),
        (
            "transcribe",
            json!({"audio_url": "https://localhost/a.wav"}),
            "audio_url",
        ),
        (
            "transcribe",
            json!({"audio_url": "https://10.0.0.8/a.wav"}),
            "audio_url",
        ),
        (
            "transcribe",
            json!({"audio_url": "https://169.254.169.254/latest/meta-data"}),
            "audio_url",
        ),
        (
            "transcribe",
            json!({"audio_url": "http://127.0.0.1:9/a.wav"}),
            "audio_url",
        ),
    ] {
        let error = tool_error(&mcp_call(&client, tool, arguments.clone()).await);
        assert_eq!(
            error["code"], "invalid_request",
            "{tool} {arguments}: {error}"
        );
        assert_eq!(error["param"], param, "{tool} {arguments}: {error}");
    }
    assert_eq!(app.generation_count().await, 0);
    // The loopback refusal is the SSRF guard's, made before any connection.
    let error = tool_error(
        &mcp_call(
            &client,
            "transcribe",
            json!({"audio_url": "https://127.0.0.1:9/a.wav"}),
        )
        .await,
    );
    assert!(
        error["detail"].as_str().unwrap().contains("loopback"),
        "{error}"
    );
    // An unknown tool is a protocol error, not a crash of the stream.
    let unknown = client.call_tool(CallToolRequestParams::new("sing")).await;
    assert!(unknown.is_err());
    assert_eq!(
        structured(&mcp_call(&client, "list_voices", json!({})).await)["total"],
        1
    );

    // Tenancy: another account's generation is not found, like a missing one.
    let queued = structured(
        &mcp_call(
            &client,
            "speak",
            json!({"text": "Mine only.", "voice": voice, "wait_seconds": 0}),
        )
        .await,
    )
    .clone();
    let (_, stranger) = app.pro_user().await;
    let other = modern_client(&app, &stranger).await;
    for id in [queued["generation_id"].as_str().unwrap(), "gen_missing"] {
        let error =
            tool_error(&mcp_call(&other, "get_generation", json!({"generation_id": id})).await);
        assert_eq!(error["code"], "not_found", "{error}");
        let error =
            tool_error(&mcp_call(&other, "cancel_generation", json!({"generation_id": id})).await);
        assert_eq!(error["code"], "not_found", "{error}");
    }
    assert_eq!(
        structured(&mcp_call(&other, "list_captures", json!({})).await)["total"],
        0
    );
    other.cancel().await.unwrap();
    client.cancel().await.unwrap();

    // No plan: every message is refused as on /v1, 403 pro_plan_required with the billing
    // page, before it is read (admission_comes_before_the_message_is_read); the SDK's client
    // cannot even connect.
    let unpaid = app.account(Plan::None).await;
    let (_, unpaid_key) = app.key(&unpaid, &Scope::ALL).await;
    let response = app
        .mcp_rpc(
            &[("authorization", &format!("Bearer {unpaid_key}"))],
            mcp_tools_call("list_voices", json!({})),
        )
        .await;
    assert_eq!(response.status(), 403);
    let (_, problem) = json(response).await;
    assert_eq!(problem["code"], "pro_plan_required");
    assert_eq!(problem["settings_url"], format!("{PUBLIC}/console/billing"));
    assert!(
        app.mcp_connect(&unpaid_key, ClientLifecycleMode::Initialize)
            .await
            .is_err()
    );

    // DNS rebinding: a foreign Host or Origin is refused; the public origin is accepted.
    let auth = format!("Bearer {secret}");
    let response = app
        .mcp_rpc(
            &[("authorization", &auth), ("host", "evil.example")],
            list.clone(),
        )
        .await;
    assert_eq!(response.status(), 403);
    let response = app
        .mcp_rpc(
            &[("authorization", &auth), ("origin", "http://evil.example")],
            list.clone(),
        )
        .await;
    assert_eq!(response.status(), 403);
    let response = app
        .mcp_rpc(
            &[("authorization", &auth), ("origin", PUBLIC)],
            list.clone(),
        )
        .await;
    assert_eq!(response.status(), 200);
    // Base64 audio well past rmcp's default 4 MiB body limit reaches the tool (this clip is
    // not audio, so the tool refuses it by name); a body past the 25 MiB audio limit is 413.
    let not_audio = STANDARD.encode(vec![0u8; 6 * 1024 * 1024]);
    let client = modern_client(&app, &secret).await;
    let error =
        tool_error(&mcp_call(&client, "transcribe", json!({"audio_base64": not_audio})).await);
    assert_eq!(
        (error["code"].as_str(), error["param"].as_str()),
        (Some("invalid_request"), Some("audio_base64")),
        "{error}"
    );
    client.cancel().await.unwrap();
    let huge = STANDARD.encode(vec![0u8; 26 * 1024 * 1024]);
    let response = app
        .mcp_rpc(
            &[("authorization", &auth)],
            mcp_tools_call("transcribe", json!({"audio_base64": huge})),
        )
        .await;
    assert_eq!(response.status(), 413);
    assert_eq!(json(response).await.1["code"], "payload_too_large");
    // Stateless: no session stream to open.
    let response = app
        .get("/mcp")
        .bearer_auth(&secret)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 405);
    app.stop().await;
}

/// POSTs to `/mcp` a body of `first`, then nothing more until the answer has come (then the
/// body ends): a server that read the message before answering would wait for ever, and the
/// client's time limit would fail the test.
async fn answered_unread(app: &TestApp, secret: &str, first: Vec<u8>) -> reqwest::Response {
    use futures_util::StreamExt as _;
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let head = futures_util::stream::once(async move { Ok::<_, std::io::Error>(first) });
    let rest = futures_util::stream::once(async move {
        let _ = released.await;
        Ok(Vec::new())
    });
    let response = app
        .post("/mcp")
        .bearer_auth(secret)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2025-11-25")
        .body(reqwest::Body::wrap_stream(head.chain(rest)))
        .send()
        .await
        .expect("an answer before the body ended");
    drop(release);
    response
}

/// A problem document answered by HTTP at `/mcp`, with its content type.
async fn mcp_problem(response: reqwest::Response, status: u16, code: &str) -> Value {
    assert_eq!(response.status(), status);
    assert_eq!(
        header(&response, "content-type"),
        "application/problem+json"
    );
    let (_, problem) = json(response).await;
    assert_problem(&problem, status, code, "/mcp");
    problem
}

/// A `tools/call` message as the SDKs write it: `method`, then `params` with `name` before
/// `arguments` (the JSON text of an object).
fn call_text(id: u32, tool: &str, arguments: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
    )
}

/// `n` bytes of JSON array elements (`1,1,…,1`): what made trees of gigabytes before.
fn array_of(n: usize) -> String {
    let mut junk = "1,".repeat(n / 2);
    junk.pop();
    junk
}

#[tokio::test]
async fn admission_comes_before_the_message_is_read() {
    let app = TestApp::start().await;

    // No plan, a read-only key: 403 pro_plan_required as /v1 renders it, before any of a
    // message (here one that never ends) is read.
    let unpaid = app.account(Plan::None).await;
    let (_, unpaid_key) = app.key(&unpaid, &[Scope::VoiceRead]).await;
    let first = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_voices","arguments":{"junk":[1"#;
    let problem = mcp_problem(
        answered_unread(&app, &unpaid_key, first.to_vec()).await,
        403,
        "pro_plan_required",
    )
    .await;
    assert_eq!(problem["settings_url"], format!("{PUBLIC}/console/billing"));
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let response = app
        .mcp_rpc(&[("authorization", &format!("Bearer {unpaid_key}"))], list)
        .await;
    mcp_problem(response, 403, "pro_plan_required").await;

    // A paid reader: any message but transcribe is at most 1 MiB. 2 MiB of list_voices is 413
    // (counted as a read first: the rate limit came before the body).
    let account = app.account(Plan::Pro).await;
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;
    let junk = format!(r#"{{"junk":[{}]}}"#, array_of(2 * 1024 * 1024));
    let big = call_text(2, "list_voices", &junk);
    let response = app
        .post("/mcp")
        .bearer_auth(&reader)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(big.clone())
        .send()
        .await
        .unwrap();
    assert!(header(&response, "ratelimit").starts_with("\"read-burst\""));
    mcp_problem(response, 413, "payload_too_large").await;
    // Without a declared length (chunked), reading stops at the limit: the rest is never
    // waited for.
    let problem = mcp_problem(
        answered_unread(&app, &reader, big.as_bytes()[..1536 * 1024].to_vec()).await,
        413,
        "payload_too_large",
    )
    .await;
    assert!(
        problem["detail"].as_str().unwrap().contains("1 MiB"),
        "{problem}"
    );
    // A transcribe call may be larger, but only by its audio_base64 string.
    let padded = call_text(
        3,
        "transcribe",
        &format!(
            r#"{{"audio_base64":"AAAA","junk":[{}]}}"#,
            array_of(2 * 1024 * 1024)
        ),
    );
    let response = app
        .post("/mcp")
        .bearer_auth(&reader)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(padded)
        .send()
        .await
        .unwrap();
    // (The read-only key is refused its scope first, before the body.)
    mcp_problem(response, 403, "insufficient_scope").await;
    let (_, writer) = app.key(&account, &Scope::ALL).await;
    let padded = call_text(
        3,
        "transcribe",
        &format!(
            r#"{{"audio_base64":"AAAA","junk":[{}]}}"#,
            array_of(2 * 1024 * 1024)
        ),
    );
    let response = app
        .post("/mcp")
        .bearer_auth(&writer)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(padded)
        .send()
        .await
        .unwrap();
    mcp_problem(response, 413, "payload_too_large").await;
    // In rmcp's order (arguments before name) an audio_base64 string makes the call a presumed
    // transcribe, admitted as one and then read whole: 413 unless it is a transcribe whose bulk
    // is its audio.
    for (name, arguments) in [
        (
            "transcribe",
            format!(
                r#"{{"audio_base64":"AAAA","junk":[{}]}}"#,
                array_of(2 * 1024 * 1024)
            ),
        ),
        (
            "list_voices",
            format!(r#"{{"audio_base64":"{}"}}"#, "A".repeat(2 * 1024 * 1024)),
        ),
    ] {
        let alphabetical = format!(
            r#"{{"id":8,"jsonrpc":"2.0","method":"tools/call","params":{{"arguments":{arguments},"name":"{name}"}}}}"#
        );
        let response = app
            .post("/mcp")
            .bearer_auth(&writer)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(alphabetical)
            .send()
            .await
            .unwrap();
        assert!(header(&response, "ratelimit").starts_with("\"writes\""));
        mcp_problem(response, 413, "payload_too_large").await;
    }
    // A message whose tool is named twice is refused (by the gate, or by rmcp, which does not
    // parse duplicate members): its first bytes chose the rate-limit class and the scope.
    let twice = r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_voices"},"params":{"name":"speak","arguments":{"text":"Hi.","voice":"x"}}}"#;
    let response = app
        .post("/mcp")
        .bearer_auth(&reader)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(twice)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_client_error(), "{response:?}");
    assert_eq!(app.generation_count().await, 0);

    // A transcribe call when every recogniser place is taken: 503 with Retry-After, answered
    // before the audio is read (the upload is drained afterwards, never buffered).
    let mut places = Vec::new();
    while let Some(place) = app.asr.try_admit() {
        places.push(place);
    }
    let first = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"transcribe","arguments":{"audio_base64":"AAAA"#;
    let response = answered_unread(&app, &writer, first.to_vec()).await;
    assert!(!header(&response, "retry-after").is_empty());
    mcp_problem(response, 503, "service_unavailable").await;
    drop(places);
    // With a place free the same call reaches the tool (this audio is not a clip).
    let client = modern_client(&app, &writer).await;
    let error = tool_error(&mcp_call(&client, "transcribe", json!({"audio_base64": "AAAA"})).await);
    assert_eq!(error["param"], "audio_base64", "{error}");
    client.cancel().await.unwrap();
    app.stop().await;
}

/// Accepts connections and answers none until `release` is sent (then closes them all); each
/// connection is announced on the channel. The URL of a clip that never comes.
async fn silent_server() -> (
    String,
    tokio::sync::mpsc::UnboundedReceiver<()>,
    tokio::sync::oneshot::Sender<()>,
) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/slow.wav", listener.local_addr().unwrap());
    let (accepted, connections) = tokio::sync::mpsc::unbounded_channel();
    let (release, mut released) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            tokio::select! {
                Ok((socket, _)) = listener.accept() => {
                    held.push(socket);
                    let _ = accepted.send(());
                }
                _ = &mut released => break,
            }
        }
    });
    (url, connections, release)
}

#[tokio::test]
async fn transcriptions_in_flight_are_capped_per_account_on_both_doors() {
    // The default cap: two transcriptions in flight per account.
    let app = TestApp::start_with(0, &[("VOICED_OAUTH_ALLOW_LOOPBACK_FETCH", "true")]).await;
    assert_eq!(app.config.max_transcriptions_per_account, 2);
    let (_, secret) = app.pro_user().await;
    let (_, other) = app.pro_user().await;

    // Two agent transcriptions of an audio_url that never answers hold the account's places.
    let (url, mut connections, release) = silent_server().await;
    let mut slow = Vec::new();
    for _ in 0..2 {
        let request = app
            .post("/mcp")
            .bearer_auth(&secret)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&mcp_tools_call("transcribe", json!({"audio_url": url})));
        slow.push(tokio::spawn(async move {
            json(request.send().await.unwrap()).await
        }));
    }
    for _ in 0..2 {
        connections.recv().await.expect("the fetch connects");
    }

    // The third, through either door: 429 with Retry-After, before its upload is read.
    let response = app
        .post("/v1/transcriptions")
        .bearer_auth(&secret)
        .json(&json!({"audio": "AAAA"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    assert!(!header(&response, "retry-after").is_empty());
    let (_, problem) = json(response).await;
    assert_problem(&problem, 429, "rate_limit_exceeded", "/v1/transcriptions");
    let first = br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"transcribe","arguments":{"audio_base64":"AAAA"#;
    let response = answered_unread(&app, &secret, first.to_vec()).await;
    assert!(!header(&response, "retry-after").is_empty());
    mcp_problem(response, 429, "rate_limit_exceeded").await;
    // Another account is not held back (its audio is not a clip: refused by name, not 429).
    let response = app
        .post("/v1/transcriptions")
        .bearer_auth(&other)
        .json(&json!({"audio": "AAAA"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);

    // The URL fails; both calls end as tool errors and give their places back.
    release.send(()).unwrap();
    for call in slow {
        let (status, body) = call.await.unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["result"]["isError"], true, "{body}");
    }
    let response = app
        .post("/v1/transcriptions")
        .bearer_auth(&secret)
        .json(&json!({"audio": "AAAA"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    app.stop().await;
}

/// Where the OAuth tests' authorization ends (never fetched: the test reads the redirect).
const CALLBACK: &str = "http://127.0.0.1:9/callback";

/// The SDK's client on `/mcp` through rmcp's `AuthClient`, which sends the manager's token,
/// refreshes it when refused, and returns the challenge when that fails too.
async fn oauth_connect(
    mcp_url: &str,
    auth: AuthClient<reqwest_rmcp::Client>,
) -> Result<Client, ClientInitializeError> {
    let transport = StreamableHttpClientTransport::with_client(
        auth,
        StreamableHttpClientTransportConfig::with_uri(mcp_url.to_owned()),
    );
    ().serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
        .await
}

/// rmcp's OAuth client from a 401 `challenge` to tokens: discovery (protected-resource, then
/// authorization-server metadata), dynamic registration (unless `client_id` is given), the
/// authorization URL, then the code exchange with PKCE and the `iss` check. The user's part (the
/// console's sign-in and the consent page) is done by `browser`, headlessly.
async fn sdk_authorize(
    app: &TestApp,
    browser: &mut Browser,
    email: &str,
    challenge: &str,
    client_id: Option<&str>,
) -> AuthorizationManager {
    let mut state = OAuthState::new(format!("{}/mcp", app.base), None)
        .await
        .unwrap();
    let mut request = AuthorizationRequest::new(CALLBACK)
        .with_client_name("rmcp test agent")
        .with_challenge(challenge);
    if let Some(client_id) = client_id {
        request = request.with_preregistered_client(client_id);
    }
    state.start_authorization(request).await.unwrap();
    let url = state.get_authorization_url().await.unwrap();
    let path = url
        .strip_prefix(&app.base)
        .unwrap_or_else(|| panic!("the authorization endpoint is the server's: {url}"));
    assert!(path.starts_with("/oauth/authorize?"), "{url}");
    let consent = consent_page(browser, path, email).await;
    assert!(consent.body.contains("rmcp test agent"), "{}", consent.body);
    let fields = [
        ("request", field_of(&consent.body, "request")),
        ("decision", "allow".to_owned()),
        ("csrf_token", csrf_of(&consent.body)),
    ];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let page = browser.post("/console/authorize", &fields).await;
    assert_eq!(page.status, 302, "{}", page.body);
    let location = page.location.expect("the redirect to the client");
    assert!(location.starts_with(CALLBACK), "{location}");
    state.handle_callback_url(&location).await.unwrap();
    state.into_authorization_manager().expect("authorized")
}

/// The access and refresh tokens the manager holds.
async fn held_tokens(manager: &tokio::sync::Mutex<AuthorizationManager>) -> (String, String) {
    let (_, tokens) = manager.lock().await.get_credentials().await.unwrap();
    let tokens = serde_json::to_value(tokens.expect("tokens")).unwrap();
    let token = |name: &str| tokens[name].as_str().expect(name).to_owned();
    (token("access_token"), token("refresh_token"))
}

#[tokio::test]
async fn the_sdk_oauth_client_authorizes_speaks_refreshes_and_is_revoked() {
    let app = TestApp::start_self_addressed_with(1, &[]).await;
    let mcp_url = format!("{}/mcp", app.base);
    let account = app.account(Plan::Pro).await;
    fixtures::set_password(&app, &account, PASSWORD).await;
    let email = format!("{account}@example.com");
    app.voice(&account, "Agent Voice", EngineId::Kokoro, "af_heart")
        .await;

    // 1. No token yet: rmcp's client is refused with the challenge naming the metadata.
    let unauthorized = AuthorizationManager::new(mcp_url.as_str()).await.unwrap();
    let refused = oauth_connect(
        &mcp_url,
        AuthClient::new(reqwest_rmcp::Client::default(), unauthorized),
    )
    .await
    .expect_err("no credential");
    let challenge = refused
        .auth_challenge()
        .expect("a 401 challenge")
        .to_owned();
    assert_eq!(
        challenge,
        format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", scope=\"voice:read voice:generate\"",
            app.base
        )
    );

    // 2. Discovery, registration, sign-in and consent, the code for tokens: all rmcp's.
    let mut browser = Browser::new(&app);
    let manager = sdk_authorize(&app, &mut browser, &email, &challenge, None).await;
    let (client_id, _) = manager.get_credentials().await.unwrap();
    assert!(client_id.starts_with("client_"), "{client_id}");
    let auth = AuthClient::new(reqwest_rmcp::Client::default(), manager);
    let manager = auth.auth_manager.clone();
    let (first_access, first_refresh) = held_tokens(&manager).await;
    assert!(first_access.starts_with("vat_") && first_refresh.starts_with("vrt_"));
    // The token's audience is the agent interface: /v1 refuses it.
    let response = app
        .get("/v1/voices")
        .bearer_auth(&first_access)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);

    // 3. tools/list and speak with the token; the audio link downloads and decodes.
    let client = oauth_connect(&mcp_url, auth.clone()).await.unwrap();
    let tools = client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 6);
    let spoken = mcp_call(
        &client,
        "speak",
        json!({"text": "Signed in by OAuth.", "voice": "Agent Voice", "format": "wav", "wait_seconds": 120}),
    )
    .await;
    let out = structured(&spoken).clone();
    assert_eq!(out["status"], "completed", "{out}");
    let url = out["audio_url"].as_str().unwrap();
    let path = url.strip_prefix(&app.base).expect("a link on this server");
    let wav = app.get(path).send().await.unwrap().bytes().await.unwrap();
    assert!(wav_ms(&wav) > 500, "{} ms", wav_ms(&wav));
    let stored = fixtures::generation(&app, out["generation_id"].as_str().unwrap()).await;
    let generation = (stored.account_id, stored.api_key_id);
    assert_eq!(generation, (account.clone(), None), "the account's, no key");

    // 4. Refresh through rmcp: a new pair, and the client goes on with it.
    manager.lock().await.refresh_token().await.unwrap();
    let (second_access, second_refresh) = held_tokens(&manager).await;
    assert_ne!(second_access, first_access);
    assert_ne!(second_refresh, first_refresh);
    assert_eq!(client.list_all_tools().await.unwrap().len(), 6);
    client.cancel().await.unwrap();

    // 5. The old refresh token is refused (invalid_grant), and its reuse revokes the family:
    // the client's next connection fails with the challenge (its silent refresh fails too).
    let response = app
        .post("/oauth/token")
        .form(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", first_refresh.as_str()),
            ("client_id", client_id.as_str()),
        ])
        .send()
        .await
        .unwrap();
    let (status, body) = json(response).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let refused = oauth_connect(&mcp_url, auth.clone())
        .await
        .expect_err("the family is revoked");
    let challenge = refused
        .auth_challenge()
        .expect("a 401 challenge")
        .to_owned();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");

    // 6. A new authorization for the same client (signed in: straight to consent), revoked at
    // /oauth/revoke (RFC 7009; rmcp has no revocation call): the next MCP call is 401.
    let manager = sdk_authorize(&app, &mut browser, &email, &challenge, Some(&client_id)).await;
    let auth = AuthClient::new(reqwest_rmcp::Client::default(), manager);
    let client = oauth_connect(&mcp_url, auth.clone()).await.unwrap();
    assert_eq!(
        structured(&mcp_call(&client, "list_voices", json!({})).await)["total"],
        1
    );
    let (_, refresh) = held_tokens(&auth.auth_manager).await;
    let response = app
        .post("/oauth/revoke")
        .form(&[
            ("token", refresh.as_str()),
            ("token_type_hint", "refresh_token"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let refused = client
        .call_tool(CallToolRequestParams::new("list_voices"))
        .await
        .expect_err("revoked");
    let challenge = refused.auth_challenge().expect("a 401 challenge");
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    client.cancel().await.ok();
    app.stop().await;
}
