//! The agent interface at `/mcp`, driven by the official Rust SDK's client (rmcp) and by raw
//! HTTP where the exact status and headers matter: both protocol revisions, every tool on the
//! real models (audio decoded, speech transcribed back), credentials, scopes, plans, tenancy,
//! the DNS-rebinding guard, idempotency shared with REST, and metering once per generation.

mod common;

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use common::{TestApp, json};
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult, ProtocolVersion, Tool};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};
use voiced::audio::{DecodeLimits, decode_for_asr};
use voiced::domain::{EngineId, Plan, Scope};

type Client = RunningService<RoleClient, ()>;

/// The public base URL the test server hands out (the default configuration's).
const PUBLIC: &str = "http://127.0.0.1:8080";
const SENTENCE: &str = "The quick brown fox jumps over the lazy dog.";

/// The SDK's client on `/mcp` with `secret` as its bearer credential.
async fn connect(
    app: &TestApp,
    secret: &str,
    lifecycle: ClientLifecycleMode,
) -> Result<Client, ClientInitializeError> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", app.base))
            .auth_header(secret),
    );
    ().serve_with_lifecycle(transport, lifecycle).await
}

/// A client on the 2025-11-25 handshake (`initialize`).
async fn legacy_client(app: &TestApp, secret: &str) -> Client {
    connect(app, secret, ClientLifecycleMode::Initialize)
        .await
        .expect("initialize")
}

/// A client on the 2026-07-28 revision (`server/discover`, no handshake).
async fn modern_client(app: &TestApp, secret: &str) -> Client {
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    connect(app, secret, lifecycle).await.expect("discover")
}

async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
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

/// A raw JSON-RPC POST to `/mcp` (2025-11-25 headers, no session), with extra headers.
async fn rpc(app: &TestApp, headers: &[(&str, &str)], body: Value) -> reqwest::Response {
    let mut request = app
        .post("/mcp")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

fn tools_call(tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

fn header(response: &reqwest::Response, name: &str) -> String {
    response
        .headers()
        .get(name)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

async fn generations(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM generations")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// Downloads through `audio_url` (its path and query, against the test server).
async fn download(app: &TestApp, audio_url: &str) -> Vec<u8> {
    assert!(audio_url.starts_with(PUBLIC), "{audio_url}");
    let response = app.get(&audio_url[PUBLIC.len()..]).send().await.unwrap();
    assert_eq!(response.status(), 200);
    response.bytes().await.unwrap().to_vec()
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
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Agent Voice", EngineId::Kokoro, "af_heart")
        .await;

    // The 2025-11-25 handshake: who the server is, and its tools.
    let client = legacy_client(&app, &secret).await;
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
        let reads = !matches!(&*tool.name, "speak" | "transcribe");
        assert_eq!(annotations.read_only_hint, Some(reads), "{}", tool.name);
    }

    let voices = call(&client, "list_voices", json!({})).await;
    assert_eq!(structured(&voices)["total"], 1);
    assert_eq!(structured(&voices)["data"][0]["name"], "Agent Voice");

    // speak: waits for the audio and links it; the link downloads and decodes.
    let spoken = call(
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
    let heard = call(
        &client,
        "transcribe",
        json!({"audio_base64": STANDARD.encode(&wav)}),
    )
    .await;
    let transcript = structured(&heard).clone();
    let missing = missing_words(SENTENCE, transcript["text"].as_str().unwrap());
    assert!(missing.len() <= 1, "missed {missing:?} in {transcript}");
    assert_eq!(transcript["language"], "en");
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
    let captures = call(&client, "list_captures", json!({"limit": 1})).await;
    assert_eq!(structured(&captures)["data"][0]["source"], "agent");
    assert_eq!(structured(&captures)["limit"], 1);
    client.cancel().await.unwrap();

    // The 2026-07-28 revision: no handshake, the same tools.
    let client = modern_client(&app, &secret).await;
    let generation = call(
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
    let inline = call(
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
    let queued = call(
        &client,
        "speak",
        json!({"text": "Later.", "voice": "Agent Voice", "wait_seconds": 0}),
    )
    .await;
    let queued = structured(&queued).clone();
    assert_eq!(queued["audio_url"], Value::Null, "{queued}");
    let id = queued["generation_id"].as_str().unwrap().to_owned();
    app.completions
        .wait(&id, Duration::from_secs(5))
        .await
        .unwrap();
    let polled = call(&client, "get_generation", json!({"generation_id": id})).await;
    assert_eq!(structured(&polled)["status"], "completed");
    client.cancel().await.unwrap();
    app.stop().await;
}

#[tokio::test]
async fn one_idempotency_key_one_generation_one_charge_across_doors() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Agent Voice", EngineId::Kokoro, "af_heart")
        .await;
    let client = legacy_client(&app, &secret).await;
    let args = json!({"text": "Once only.", "voice": "Agent Voice", "format": "wav",
                      "wait_seconds": 120, "idempotency_key": "mcp-first"});

    // MCP first, then MCP again, then REST with the same key and the same request.
    let first = structured(&call(&client, "speak", args.clone()).await).clone();
    let again = structured(&call(&client, "speak", args.clone()).await).clone();
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
    let refused = tool_error(&call(&client, "speak", other).await);
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
        &call(
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
    assert_eq!(generations(&app).await, 2);

    // Metered once each: the usage page's ledger holds one row per generation, summing to the
    // audio made.
    let month = voiced::store::usage::month_of(chrono::Utc::now());
    let days = voiced::store::usage::daily(&app.pool, &account, month)
        .await
        .unwrap();
    let charged: i64 = days.iter().map(|d| d.audio_ms).sum();
    let made = first["duration_ms"].as_i64().unwrap() + via_mcp["duration_ms"].as_i64().unwrap();
    assert_eq!(charged, made);
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM usage_ledger WHERE account_id = $1")
        .bind(&account)
        .fetch_one(&app.pool)
        .await
        .unwrap();
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
    let response = rpc(&app, &[], list.clone()).await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        header(&response, "www-authenticate"),
        format!("Bearer resource_metadata=\"{metadata}\", scope=\"voice:read voice:generate\"")
    );
    let (_, body) = json(response).await;
    assert_eq!(body["code"], "invalid_api_key");
    // A bad one: the same, with error="invalid_token".
    let response = rpc(
        &app,
        &[("authorization", "Bearer vk_not_a_key")],
        list.clone(),
    )
    .await;
    assert_eq!(response.status(), 401);
    assert_eq!(
        header(&response, "www-authenticate"),
        format!(
            "Bearer error=\"invalid_token\", resource_metadata=\"{metadata}\", scope=\"voice:read voice:generate\""
        )
    );
    assert!(
        connect(&app, "vk_not_a_key", ClientLifecycleMode::Initialize)
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
    let response = rpc(&app, &[("authorization", &bearer)], list.clone()).await;
    assert_eq!(response.status(), 200);
    // Reads count against the read-burst policy, generating calls against writes.
    assert!(header(&response, "ratelimit").starts_with("\"read-burst\""));
    let speak = tools_call("speak", json!({"text": "Hi.", "voice": "Mine"}));
    let response = rpc(&app, &[("authorization", &bearer)], speak.clone()).await;
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
    let client = legacy_client(&app, &reader).await;
    assert_eq!(
        structured(&call(&client, "list_voices", json!({})).await)["total"],
        1
    );
    let refused = client
        .call_tool(
            CallToolRequestParams::new("transcribe")
                .with_arguments(Map::from_iter([("audio_base64".into(), json!("AAAA"))])),
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");
    assert_eq!(generations(&app).await, 0);
    client.cancel().await.unwrap();

    // A generate-only key cannot read.
    let (_, writer) = app.key(&account, &[Scope::VoiceGenerate]).await;
    let response = rpc(
        &app,
        &[("authorization", &format!("Bearer {writer}"))],
        tools_call("list_voices", json!({})),
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
        ("transcribe", json!({}), "audio_base64"),
        ("transcribe", json!({"audio_base64": "%%%"}), "audio_base64"),
        (
            "transcribe",
            json!({"audio_url": "http://example.com/a.wav"}),
            "audio_url",
        ),
    ] {
        let error = tool_error(&call(&client, tool, arguments.clone()).await);
        assert_eq!(
            error["code"], "invalid_request",
            "{tool} {arguments}: {error}"
        );
        assert_eq!(error["param"], param, "{tool} {arguments}: {error}");
    }
    assert_eq!(generations(&app).await, 0);
    // An unknown tool is a protocol error, not a crash of the stream.
    let unknown = client.call_tool(CallToolRequestParams::new("sing")).await;
    assert!(unknown.is_err());
    assert_eq!(
        structured(&call(&client, "list_voices", json!({})).await)["total"],
        1
    );

    // Tenancy: another account's generation is not found, like a missing one.
    let queued = structured(
        &call(
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
        let error = tool_error(&call(&other, "get_generation", json!({"generation_id": id})).await);
        assert_eq!(error["code"], "not_found", "{error}");
    }
    assert_eq!(
        structured(&call(&other, "list_captures", json!({})).await)["total"],
        0
    );
    other.cancel().await.unwrap();
    client.cancel().await.unwrap();

    // No plan: every tool answers pro_plan_required with the billing page.
    let unpaid = app.account(Plan::None).await;
    let (_, unpaid_key) = app.key(&unpaid, &Scope::ALL).await;
    let client = legacy_client(&app, &unpaid_key).await;
    let error = tool_error(&call(&client, "list_voices", json!({})).await);
    assert_eq!(error["code"], "pro_plan_required");
    assert_eq!(error["settings_url"], format!("{PUBLIC}/console/billing"));
    client.cancel().await.unwrap();

    // DNS rebinding: a foreign Host or Origin is refused; the public origin is accepted.
    let auth = format!("Bearer {secret}");
    let response = rpc(
        &app,
        &[("authorization", &auth), ("host", "evil.example")],
        list.clone(),
    )
    .await;
    assert_eq!(response.status(), 403);
    let response = rpc(
        &app,
        &[("authorization", &auth), ("origin", "http://evil.example")],
        list.clone(),
    )
    .await;
    assert_eq!(response.status(), 403);
    let response = rpc(
        &app,
        &[("authorization", &auth), ("origin", PUBLIC)],
        list.clone(),
    )
    .await;
    assert_eq!(response.status(), 200);
    // Base64 audio well past rmcp's default 4 MiB body limit reaches the tool (this clip is
    // not audio, so the tool refuses it by name); a body past the 25 MiB audio limit is 413.
    let not_audio = STANDARD.encode(vec![0u8; 6 * 1024 * 1024]);
    let client = modern_client(&app, &secret).await;
    let error = tool_error(&call(&client, "transcribe", json!({"audio_base64": not_audio})).await);
    assert_eq!(
        (error["code"].as_str(), error["param"].as_str()),
        (Some("invalid_request"), Some("audio_base64")),
        "{error}"
    );
    client.cancel().await.unwrap();
    let huge = STANDARD.encode(vec![0u8; 26 * 1024 * 1024]);
    let response = rpc(
        &app,
        &[("authorization", &auth)],
        tools_call("transcribe", json!({"audio_base64": huge})),
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
