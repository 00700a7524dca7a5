//! ElevenLabs' speech dialect over a real socket: the multi-context sequence the agent
//! frameworks send (LiveKit Agents 1.8.9's query and messages: two contexts, interleaved text,
//! a flush, a close_context mid-phrase, close_socket) becomes Kokoro's audio, which Whisper
//! transcribes back, with alignments that spell the text; the cancelled context's audio stops;
//! every phrase is a generation, charged once for what was delivered. Refusals at the upgrade
//! carry ElevenLabs' error shape and voiced's `code`; a ceiling crossed mid-socket refuses the
//! next phrase; the single-context form and the REST twin speak too.

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{self, Message};
use voiced::domain::{EngineId, Plan, Scope};

use crate::common::{TestApp, fixtures, vendor_sdk};

use crate::common::ws::{self, Socket};

/// LiveKit Agents 1.8.9's query (../shared/notes/wave4-facts.md).
const LIVEKIT_QUERY: &str = "model_id=eleven_turbo_v2_5&output_format=mp3_22050_32&enable_ssml_parsing=false&enable_logging=true&inactivity_timeout=180&apply_text_normalization=auto&sync_alignment=true&auto_mode=true";

const FIRST: &str = "The weather is lovely today, so we are going for a walk in the park. ";
const SECOND: &str = "Please remember to buy bread and milk on your way home.";
/// Five sentences (one generation, rendered sentence by sentence) and words never flushed.
const LONG: &str = "Once upon a time there was a lighthouse keeper who lived alone on a rock far out at sea. \
    Every evening he climbed the stairs and lit the great lamp for the ships. \
    He wrote letters to his sister that he could never send, and kept them in a tin box. \
    In the spring the puffins came back to the cliffs below his window. \
    The storms came and went, and the gulls grew old, and still he climbed the stairs. \
    One winter night a small boat appeared out of the fog with a lantern at its bow";

async fn connect(
    app: &TestApp,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Socket, tungstenite::Error> {
    ws::connect(app, path, headers)
        .await
        .map(|(socket, _)| socket)
}

pub(crate) async fn refused(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    ws::refused(app, path, headers).await
}

async fn send(socket: &mut Socket, message: Value) {
    socket
        .send(Message::Text(message.to_string().into()))
        .await
        .unwrap();
}

/// The next JSON message; `None` at the close.
async fn next(socket: &mut Socket) -> Option<Value> {
    loop {
        match tokio::time::timeout(Duration::from_secs(120), socket.next())
            .await
            .expect("the socket answers")?
        {
            Ok(Message::Text(text)) => return Some(serde_json::from_str(text.as_str()).unwrap()),
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(_) => {}
        }
    }
}

/// What one context received.
#[derive(Default, Debug)]
struct Heard {
    audio: Vec<u8>,
    chars: String,
    /// Every character's start, on the context's clock (chunk start + offset), in ms.
    starts: Vec<f64>,
    final_at: Option<usize>,
    audio_after_final: bool,
    generations: Vec<String>,
    chunks: usize,
}

/// Seconds of 22.05 kHz 32 kbit/s mp3 (MPEG-2 layer III: 576 samples and 104 or 105 bytes a frame).
fn mp3_secs(bytes: &[u8]) -> f64 {
    let mut at = 0;
    let mut frames = 0;
    while at + 4 <= bytes.len() {
        if bytes[at] == 0xFF && bytes[at + 1] & 0xE0 == 0xE0 {
            // MPEG-2 layer III at 22.05 kHz: 72 * bitrate / rate (+ padding).
            let padding = usize::from((bytes[at + 2] >> 1) & 1);
            at += 72 * 32_000 / 22_050 + padding;
            frames += 1;
        } else {
            at += 1;
        }
    }
    frames as f64 * 576.0 / 22_050.0
}

async fn hear(app: &TestApp, secret: &str, audio: &[u8]) -> String {
    let (status, body) = app.transcribe(secret, &STANDARD.encode(audio)).await;
    assert_eq!(status, 200, "{body}");
    body["text"].as_str().unwrap().to_lowercase()
}

fn collect(messages: &[Value]) -> HashMap<String, Heard> {
    let mut heard: HashMap<String, Heard> = HashMap::new();
    for (i, message) in messages.iter().enumerate() {
        let context = message["contextId"].as_str().unwrap_or_default().to_owned();
        let entry = heard.entry(context).or_default();
        if message["isFinal"] == true {
            entry.final_at = Some(i);
            continue;
        }
        let Some(audio) = message["audio"].as_str() else {
            continue;
        };
        if entry.final_at.is_some() {
            entry.audio_after_final = true;
        }
        let chunk_start = mp3_secs(&entry.audio) * 1000.0;
        entry.audio.extend(STANDARD.decode(audio).unwrap());
        entry.chunks += 1;
        let generation = message["generationId"].as_str().unwrap().to_owned();
        if !entry.generations.contains(&generation) {
            entry.generations.push(generation);
        }
        let alignment = &message["alignment"];
        if alignment.is_null() {
            continue;
        }
        let chars = alignment["chars"].as_array().unwrap();
        let starts = alignment["charStartTimesMs"].as_array().unwrap();
        let durations = alignment["charDurationsMs"].as_array().unwrap();
        assert_eq!(chars.len(), starts.len(), "{message}");
        assert_eq!(chars.len(), durations.len(), "{message}");
        for (c, s) in chars.iter().zip(starts) {
            entry.chars.push_str(c.as_str().unwrap());
            entry.starts.push(chunk_start + s.as_f64().unwrap());
        }
        assert!(message["normalizedAlignment"]["chars"].is_array());
    }
    heard
}

fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[tokio::test]
async fn livekits_multi_context_sequence_speaks_aligns_cancels_and_charges_once() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    let voice = app
        .voice(&account, "Agent", EngineId::Kokoro, "af_heart")
        .await;
    let path = format!("/v1/text-to-speech/{voice}/multi-stream-input?{LIVEKIT_QUERY}");
    let mut socket = connect(&app, &path, &[("xi-api-key", &secret)])
        .await
        .expect("upgrade");

    // Context a: LiveKit's opening, its text in pieces, a flush; context b interleaved with
    // a long text that is never flushed.
    send(
        &mut socket,
        json!({"text": " ", "voice_settings": {}, "context_id": "a"}),
    )
    .await;
    send(
        &mut socket,
        json!({"text": "The weather is lovely today, ", "context_id": "a"}),
    )
    .await;
    send(
        &mut socket,
        json!({"text": " ", "voice_settings": {}, "context_id": "b"}),
    )
    .await;
    send(
        &mut socket,
        json!({"text": "so we are going for a walk ", "context_id": "a"}),
    )
    .await;
    send(&mut socket, json!({"text": LONG, "context_id": "b"})).await;
    send(
        &mut socket,
        json!({"text": "in the park. ", "context_id": "a"}),
    )
    .await;
    send(
        &mut socket,
        json!({"text": SECOND, "context_id": "a", "flush": true}),
    )
    .await;
    send(
        &mut socket,
        json!({"text": "", "context_id": "a", "flush": true}),
    )
    .await;
    send(
        &mut socket,
        json!({"context_id": "a", "close_context": true}),
    )
    .await;

    // As soon as b speaks, it is cancelled mid-phrase (its last words were never flushed).
    let mut messages = Vec::new();
    let mut closed_b = false;
    let mut closed_socket = false;
    while let Some(message) = next(&mut socket).await {
        assert!(message.get("error").is_none(), "{message}");
        if !closed_b && message["contextId"] == "b" && message["audio"].is_string() {
            send(
                &mut socket,
                json!({"context_id": "b", "close_context": true}),
            )
            .await;
            closed_b = true;
        }
        messages.push(message);
        let a_done = messages
            .iter()
            .any(|m| m["contextId"] == "a" && m["isFinal"] == true);
        if closed_b && a_done && !closed_socket {
            send(&mut socket, json!({"close_socket": true})).await;
            closed_socket = true;
        }
    }
    assert!(closed_b && closed_socket, "{messages:?}");
    let heard = collect(&messages);
    let a = &heard["a"];
    let b = &heard["b"];

    // Context a: its whole text, heard back; its alignment spells it, in order, within its audio.
    let said_a = hear(&app, &secret, &a.audio).await;
    for word in ["weather", "lovely", "park", "bread", "milk", "home"] {
        assert!(said_a.contains(word), "{word} in {said_a:?}");
    }
    assert_eq!(squash(&a.chars), squash(&format!("{FIRST}{SECOND}")));
    let duration_a = mp3_secs(&a.audio) * 1000.0;
    // Positions are counted here from the mp3 frames received, which trail the rendered audio
    // by the encoder's look-ahead (a frame or two): a tolerance of that much.
    assert!(
        a.starts.windows(2).all(|p| p[0] <= p[1] + 150.0),
        "{:?}",
        a.starts
    );
    assert!(
        a.starts.iter().all(|s| *s <= duration_a + 150.0),
        "{:?} within {duration_a}",
        a.starts
    );
    assert!(a.final_at.is_some() && !a.audio_after_final);

    // Context b: cancelled while it spoke: it ended, nothing came after, and it stopped short
    // (its third sentence was never spoken, its unflushed words never admitted).
    assert!(b.final_at.is_some() && !b.audio_after_final, "{b:?}");
    let said_b = hear(&app, &secret, &b.audio).await;
    assert!(said_b.contains("lighthouse"), "{said_b:?}");
    assert!(!said_b.contains("gulls"), "{said_b:?}");

    // Each phrase is a generation, readable afterwards with its words; a phrase cut short
    // failed as cancelled; what was delivered is charged once.
    fixtures::drained(&app, &account, Duration::from_secs(60)).await;
    let generations = fixtures::generations_of(&app, &account).await;
    for id in a.generations.iter().chain(&b.generations) {
        assert!(generations.iter().any(|g| &g.id == id), "{id}");
    }
    for id in &a.generations {
        let (status, generation) = app.generation(&secret, id).await;
        assert_eq!(status, 200, "{generation}");
        assert_eq!(generation["status"], "completed", "{generation}");
        assert!(
            generation["words"]
                .as_array()
                .is_some_and(|w| !w.is_empty()),
            "{generation}"
        );
    }
    for g in &generations {
        assert!(!g.text.contains("lantern"), "never flushed: {g:?}");
    }
    let cut = generations
        .iter()
        .find(|g| g.text.contains("lighthouse"))
        .unwrap();
    assert_eq!(cut.status, "failed", "{cut:?}");
    assert!(
        cut.error
            .as_deref()
            .is_some_and(|e| e.contains("cancelled")),
        "{cut:?}"
    );
    assert!(cut.delivered_ms.is_some_and(|ms| ms > 0), "{cut:?}");
    let ledger = fixtures::ledger_of(&app, &account).await;
    for g in &generations {
        let rows: Vec<_> = ledger.iter().filter(|r| r.generation_id == g.id).collect();
        let expected = match g.status.as_str() {
            "completed" => g.duration_ms,
            _ => g.delivered_ms.filter(|ms| *ms > 0),
        };
        match expected {
            Some(ms) => {
                assert_eq!(rows.len(), 1, "{g:?} {ledger:?}");
                assert_eq!(rows[0].audio_ms, ms, "{g:?}");
            }
            None => assert!(rows.is_empty(), "{g:?} {ledger:?}"),
        }
    }
    app.stop().await;
}

#[tokio::test]
async fn refusals_at_the_upgrade_use_elevenlabs_shape_with_the_code() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    let voice = app
        .voice(&account, "Agent", EngineId::Kokoro, "af_heart")
        .await;
    let path = format!("/v1/text-to-speech/{voice}/multi-stream-input?{LIVEKIT_QUERY}");
    let check = |(status, body): (u16, Value), want: (u16, &str)| {
        assert_eq!(
            (status, body["code"].as_str()),
            (want.0, Some(want.1)),
            "{body}"
        );
        assert_eq!(body["detail"]["code"], want.1, "{body}");
        assert!(body["detail"]["status"].is_string(), "{body}");
        assert!(body["detail"]["message"].is_string(), "{body}");
        body
    };
    check(refused(&app, &path, &[]).await, (401, "invalid_api_key"));
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;
    check(
        refused(&app, &path, &[("xi-api-key", &reader)]).await,
        (403, "insufficient_scope"),
    );
    let free = app.account(Plan::None).await;
    let (_, free_key) = app.key(&free, &Scope::ALL).await;
    check(
        refused(&app, &path, &[("xi-api-key", &free_key)]).await,
        (403, "pro_plan_required"),
    );
    let unknown = format!("/v1/text-to-speech/nobody/multi-stream-input?{LIVEKIT_QUERY}");
    // The same refusal as every speech door: 400 naming the field.
    let body = check(
        refused(&app, &unknown, &[("xi-api-key", &secret)]).await,
        (400, "invalid_request"),
    );
    assert_eq!(body["detail"]["param"], "voice_id");
    let bad = format!("/v1/text-to-speech/{voice}/multi-stream-input?output_format=opus_48000_64");
    let body = check(
        refused(&app, &bad, &[("xi-api-key", &secret)]).await,
        (400, "invalid_request"),
    );
    assert_eq!(body["detail"]["param"], "output_format");
    // Bearer and x-api-key work as well as xi-api-key.
    for header in [
        ("authorization", format!("Bearer {secret}")),
        ("x-api-key", secret.clone()),
    ] {
        connect(&app, &path, &[(header.0, &header.1)])
            .await
            .expect("upgrade");
    }
    app.stop().await;
}

#[tokio::test]
async fn a_ceiling_crossed_mid_socket_refuses_the_next_phrase_with_its_code() {
    let app = TestApp::start().await;
    let account = app.account(Plan::Pro).await;
    let (key_id, secret) = app.key_with_ceiling(&account, &Scope::ALL, Some(1)).await;
    let voice = app
        .voice(&account, "Agent", EngineId::Kokoro, "af_heart")
        .await;
    let path = format!("/v1/text-to-speech/{voice}/stream-input?output_format=pcm_16000");
    let mut socket = connect(&app, &path, &[("xi-api-key", &secret)])
        .await
        .expect("upgrade");
    fixtures::charge(&app, &account, Some(&key_id), &voice, 60_000).await;
    send(&mut socket, json!({"text": "Hello there. ", "flush": true})).await;
    let error = next(&mut socket).await.expect("an error message");
    assert_eq!(error["code"], "key_ceiling_exceeded", "{error}");
    assert_eq!(error["error"], "quota_exceeded", "{error}");
    assert!(next(&mut socket).await.is_none(), "then the socket closes");
    app.stop().await;
}

#[tokio::test]
async fn the_single_context_form_and_the_rest_twin_speak() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Agent", EngineId::Kokoro, "af_heart")
        .await;
    // By name; raw 16 kHz PCM; the single-context form ends with an empty text.
    let path = "/v1/text-to-speech/Agent/stream-input?model_id=kokoro&output_format=pcm_16000";
    let mut socket = connect(&app, path, &[("xi-api-key", &secret)])
        .await
        .expect("upgrade");
    send(
        &mut socket,
        json!({"text": " ", "generation_config": {"chunk_length_schedule": [50]}}),
    )
    .await;
    send(&mut socket, json!({"text": FIRST})).await;
    send(&mut socket, json!({"text": ""})).await;
    let mut pcm = Vec::new();
    let mut finals = 0;
    while let Some(message) = next(&mut socket).await {
        assert!(message.get("contextId").is_none(), "{message}");
        if message["isFinal"] == true {
            finals += 1;
        } else if let Some(audio) = message["audio"].as_str() {
            pcm.extend(STANDARD.decode(audio).unwrap());
        }
    }
    assert_eq!(finals, 1);
    let samples: Vec<f32> = pcm
        .chunks_exact(2)
        .map(|p| f32::from(i16::from_le_bytes([p[0], p[1]])) / 32768.0)
        .collect();
    let wav = voiced::audio::encode(&samples, 16_000, voiced::audio::AudioFormat::Wav).unwrap();
    let said = hear(&app, &secret, &wav).await;
    assert!(
        said.contains("weather") && said.contains("park"),
        "{said:?}"
    );

    // REST: `…/stream` answers audio as it is rendered, in the asked format.
    let response = app
        .post("/v1/text-to-speech/Agent/stream?output_format=mp3_44100_128")
        .header("xi-api-key", &secret)
        .json(&json!({"text": SECOND, "model_id": "eleven_multilingual_v2", "voice_settings": {"speed": 1.0}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "audio/mpeg");
    let mp3 = response.bytes().await.unwrap();
    let said = hear(&app, &secret, &mp3).await;
    assert!(said.contains("bread") && said.contains("milk"), "{said:?}");
    let response = app
        .post("/v1/text-to-speech/Agent?output_format=pcm_16000")
        .header("xi-api-key", &secret)
        .json(&json!({"text": SECOND, "voice_settings": {"style": 0.7}}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["detail"]["param"], "voice_settings.style", "{body}");
    app.stop().await;
}

#[tokio::test]
async fn elevenlabs_python_sdk_converts_and_streams() {
    let Some(python) = vendor_sdk::python(
        "VOICED_ELEVENLABS_PYTHON",
        "venv-elevenlabs",
        "elevenlabs",
        "VOICED_REQUIRE_ELEVENLABS_SDK",
    ) else {
        eprintln!("SKIPPED: no elevenlabs venv (scripts/elevenlabs-sdk-test.sh makes it)");
        return;
    };
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Agent", EngineId::Kokoro, "af_heart")
        .await;
    let stdout = vendor_sdk::run(
        python,
        "tests/elevenlabs_sdk/test_tts.py",
        &[
            ("VOICED_BASE_URL", &app.base),
            ("VOICED_KEY", &secret),
            ("VOICED_VOICE", "Agent"),
        ],
        Duration::from_secs(300),
    )
    .await;
    assert!(
        stdout.contains("convert: ") && stdout.contains("stream: ") && stdout.contains("refused: "),
        "{stdout}"
    );
    app.stop().await;
}
