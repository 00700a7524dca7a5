//! OpenAI's realtime transcription, `GET /v1/realtime?intent=transcription`, over a real
//! socket: real speech with pauses streamed at real time in PCM16 at 24 kHz with LiveKit's
//! `session.update` becomes speech events, deltas and completed items matching the batch
//! transcript, and one stored capture; manual commits with μ-law in the beta names; `clear`;
//! refusals at the upgrade carry REST's status and `code` in OpenAI's envelope.

use std::time::{Duration, Instant};

use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{self, Message};
use voiced::domain::{Plan, Scope};

use crate::asr;
use crate::common::{TestApp, json};

use crate::common::ws::{self, Socket};

const BECKETT: &str = "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.";
const FOX: &str = "The quick brown fox jumps over the lazy dog near the quiet river bank.";
/// What LiveKit Agents 1.8.9's `openai.STT(use_realtime=True)` sends first
/// (../shared/notes/wave4-facts.md).
const LIVEKIT_UPDATE: &str = r#"{"type":"session.update","session":{"type":"transcription","audio":{"input":{"format":{"type":"audio/pcm","rate":24000},"transcription":{"model":"gpt-4o-mini-transcribe","language":"en"},"turn_detection":{"type":"server_vad","threshold":0.5,"prefix_padding_ms":600,"silence_duration_ms":350}}}}}"#;
const QUERY: &str = "intent=transcription&model=gpt-4o-mini-transcribe";

async fn connect(
    app: &TestApp,
    query: &str,
    headers: &[(&str, &str)],
) -> Result<(Socket, tungstenite::handshake::client::Response), tungstenite::Error> {
    ws::connect(app, &format!("/v1/realtime?{query}"), headers).await
}

/// The refusal of an upgrade: status and body.
pub(crate) async fn refused(app: &TestApp, query: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    ws::refused(app, &format!("/v1/realtime?{query}"), headers).await
}

/// The next event of `kind`, skipping others (returned too, in order).
async fn until(socket: &mut Socket, kind: &str) -> (Value, Vec<Value>) {
    let mut skipped = Vec::new();
    loop {
        let event = ws::next_json(socket, Duration::from_secs(60))
            .await
            .unwrap_or_else(|| panic!("no {kind}: {skipped:?}"));
        assert!(event["event_id"].is_string(), "{event}");
        if event["type"] == kind {
            return (event, skipped);
        }
        skipped.push(event);
    }
}

/// 16 kHz → `rate` (sox's resampler), as 16-bit little-endian PCM.
fn pcm16_at(samples: &[f32], rate: u32) -> Vec<u8> {
    let dir = asr::scratch_dir();
    let (from, to) = (
        dir.join("realtime-16k.wav"),
        dir.join(format!("realtime-{rate}.wav")),
    );
    write_wav(&from, samples);
    let ok = std::process::Command::new("sox")
        .arg(&from)
        .args(["-r", &rate.to_string()])
        .arg(&to)
        .status()
        .expect("run sox")
        .success();
    assert!(ok, "sox failed");
    let mut reader = hound::WavReader::open(&to).unwrap();
    assert_eq!(reader.spec().sample_rate, rate);
    reader
        .samples::<i16>()
        .flat_map(|s| s.unwrap().to_le_bytes())
        .collect()
}

fn write_wav(path: &std::path::Path, samples: &[f32]) {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: 16_000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut writer = hound::WavWriter::create(path, spec).unwrap();
    for s in samples {
        writer
            .write_sample((s.clamp(-1.0, 1.0) * 32767.0) as i16)
            .unwrap();
    }
    writer.finalize().unwrap();
}

/// 16 kHz → 8 kHz G.711 μ-law (every other sample of a 2-tap average).
fn mulaw_8k(samples: &[f32]) -> Vec<u8> {
    samples
        .chunks(2)
        .map(|p| {
            let s = p.iter().sum::<f32>() / p.len() as f32;
            let x = (s.clamp(-1.0, 1.0) * 32635.0) as i32;
            let sign = if x < 0 { 0x80 } else { 0 };
            let magnitude = x.abs() + 0x84;
            let exponent = (0..8).rev().find(|e| magnitude >= 0x80 << e).unwrap_or(0);
            let mantissa = (magnitude >> (exponent + 3)) & 0x0f;
            !(sign | (exponent << 4) | mantissa) as u8
        })
        .collect()
}

fn append(bytes: &[u8]) -> Message {
    let audio = base64::engine::general_purpose::STANDARD.encode(bytes);
    Message::Text(
        json!({"type": "input_audio_buffer.append", "audio": audio})
            .to_string()
            .into(),
    )
}

fn text(event: &str) -> Message {
    Message::Text(event.to_owned().into())
}

/// Words as compared: lower-case letters and digits.
fn words(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|w| {
            w.chars()
                .filter(|c| c.is_alphanumeric())
                .flat_map(char::to_lowercase)
                .collect::<String>()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

/// The same audio transcribed as a file (`POST /v1/transcriptions`).
async fn batch_transcript(app: &TestApp, secret: &str, samples: &[f32]) -> String {
    let path = asr::scratch_dir().join("realtime-batch.wav");
    write_wav(&path, samples);
    let audio = base64::engine::general_purpose::STANDARD.encode(std::fs::read(&path).unwrap());
    let (status, body) = app.transcribe(secret, &audio).await;
    assert_eq!(status, 200, "{body}");
    body["text"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn livekits_session_streams_deltas_and_completed_items_and_becomes_one_capture() {
    // A short idle time ends the session soon after the audio, the way a client's close would.
    let app = TestApp::start_with(0, &[("VOICED_LIVE_IDLE_TIMEOUT_SECS", "2")]).await;
    let (_, secret) = app.pro_user().await;
    let mut audio = asr::espeak("en-us", FOX);
    audio.extend(vec![0.0; 16_000]);
    audio.extend(asr::beckett());
    audio.extend(vec![0.0; 24_000]);
    // The batch transcript also loads the recogniser before the clock matters.
    let batch = batch_transcript(&app, &secret, &audio).await;

    let (mut socket, response) = connect(
        &app,
        QUERY,
        &[("authorization", &format!("Bearer {secret}"))],
    )
    .await
    .expect("upgrade");
    assert_eq!(response.status(), 101);
    let (created, _) = until(&mut socket, "session.created").await;
    let session_id = created["session"]["id"].as_str().unwrap().to_owned();
    assert_eq!(created["session"]["type"], "transcription");
    socket.send(text(LIVEKIT_UPDATE)).await.unwrap();
    let (updated, _) = until(&mut socket, "session.updated").await;
    let turn = &updated["session"]["audio"]["input"]["turn_detection"];
    assert_eq!(turn["silence_duration_ms"], 350, "{updated}");
    assert_eq!(turn["prefix_padding_ms"], 600, "{updated}");

    // At real time in 20 ms appends of 24 kHz PCM16 (as LiveKit sends).
    let (mut sink, mut stream) = socket.split();
    let bytes = pcm16_at(&audio, 24_000);
    let started = Instant::now();
    let sender = tokio::spawn(async move {
        for (n, frame) in bytes.chunks(960).enumerate() {
            tokio::time::sleep_until((started + Duration::from_millis(20 * n as u64)).into()).await;
            sink.send(append(frame)).await.unwrap();
        }
        // A commit with nothing open answers after every final before it: the barrier.
        sink.send(text(r#"{"type":"input_audio_buffer.commit"}"#))
            .await
            .unwrap();
        sink
    });
    let mut events: Vec<Value> = Vec::new();
    while let Some(Ok(message)) = tokio::time::timeout(Duration::from_secs(60), stream.next())
        .await
        .expect("the session answers")
    {
        if let Message::Text(text) = message {
            let event: Value = serde_json::from_str(text.as_str()).unwrap();
            assert!(event["event_id"].is_string(), "{event}");
            events.push(event);
        }
    }
    drop(sender.await.unwrap());

    let of_type = |t: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == t).collect() };
    let started_events = of_type("input_audio_buffer.speech_started");
    let stopped = of_type("input_audio_buffer.speech_stopped");
    let committed = of_type("input_audio_buffer.committed");
    let completed = of_type("conversation.item.input_audio_transcription.completed");
    let deltas = of_type("conversation.item.input_audio_transcription.delta");
    assert!(started_events.len() >= 2, "the pauses: {events:?}");
    assert!(!stopped.is_empty() && !deltas.is_empty(), "{events:?}");
    assert!(completed.len() >= 2, "{events:?}");
    for event in started_events.iter().chain(&stopped) {
        assert!(event["item_id"].is_string(), "{event}");
    }
    assert!(started_events[0]["audio_start_ms"].is_u64(), "{events:?}");
    // Every completed item was committed just before, in order, each after the previous one.
    let mut previous = Value::Null;
    for done in &completed {
        let item = &done["item_id"];
        let commit = committed
            .iter()
            .find(|c| c["item_id"] == *item)
            .unwrap_or_else(|| panic!("{item} not committed: {events:?}"));
        assert_eq!(commit["previous_item_id"], previous, "{events:?}");
        previous = item.clone();
        assert_eq!(done["content_index"], 0);
        // The item's deltas (append-only) are words of its own utterance; the completed
        // transcript is authoritative where the final heard a word otherwise.
        let sent: String = deltas
            .iter()
            .filter(|d| d["item_id"] == *item)
            .map(|d| d["delta"].as_str().unwrap())
            .collect();
        let (sent, transcript) = (words(&sent), words(done["transcript"].as_str().unwrap()));
        let shared = sent.iter().filter(|w| transcript.contains(w)).count();
        assert!(
            shared * 2 >= sent.len(),
            "deltas {sent:?} of {transcript:?}"
        );
    }
    let speech_items: Vec<&Value> = started_events.iter().map(|e| &e["item_id"]).collect();
    assert!(
        completed
            .iter()
            .all(|c| speech_items.contains(&&c["item_id"])),
        "completed items are the speech's items: {events:?}"
    );
    // The barrier: the empty commit's error came last, and the socket stayed open for it.
    let errors = of_type("error");
    assert_eq!(errors.len(), 1, "{events:?}");
    assert_eq!(
        errors[0]["error"]["code"],
        "input_audio_buffer_commit_empty"
    );
    let transcript = completed
        .iter()
        .map(|c| c["transcript"].as_str().unwrap())
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let against_batch = asr::wer(&batch, &transcript);
    let against_text = asr::wer(&format!("{FOX} {BECKETT}"), &transcript);
    eprintln!(
        "realtime: WER {against_batch:.3} against the batch transcript, {against_text:.3} against the text; {} deltas, {} items",
        deltas.len(),
        completed.len()
    );
    // Whisper's temperature fallback (unseeded sampling) makes both vary from run to run
    // (measured 0.00–0.08 against the batch, 0.12–0.31 against the text).
    assert!(
        against_batch <= 0.25,
        "WER {against_batch}: {transcript} / {batch}"
    );
    assert!(against_text <= 0.35, "WER {against_text}: {transcript}");

    // The session became one capture of this door (`source: api`), its id the session's.
    let (status, capture) = json(
        app.get(&format!("/v1/captures/{session_id}"))
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{capture}");
    assert_eq!(capture["source"], "api");
    assert_eq!(capture["transcript_raw"], transcript.as_str());
    assert!(
        capture["words"].as_array().unwrap().len() >= 10,
        "{capture}"
    );
    app.stop().await;
}

#[tokio::test]
async fn manual_commits_with_mulaw_in_the_beta_names_and_clear() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    // The browser's credential: the key as a subprotocol beside `realtime`.
    let protocols = format!("realtime, openai-insecure-api-key.{secret}, openai-beta.realtime-v1");
    let (mut socket, response) = connect(
        &app,
        "intent=transcription",
        &[("sec-websocket-protocol", &protocols)],
    )
    .await
    .expect("upgrade");
    assert_eq!(response.headers()["sec-websocket-protocol"], "realtime");
    until(&mut socket, "session.created").await;
    socket
        .send(text(
            r#"{"type":"transcription_session.update","session":{"input_audio_format":"g711_ulaw","input_audio_transcription":{"model":"whisper-1","language":"en"},"turn_detection":null}}"#,
        ))
        .await
        .unwrap();
    let (updated, _) = until(&mut socket, "transcription_session.updated").await;
    assert_eq!(updated["session"]["input_audio_format"], "g711_ulaw");
    assert!(updated["session"]["turn_detection"].is_null());

    // An event a transcription session does not know: an error naming it; the socket stays.
    socket
        .send(text(r#"{"type":"response.create","event_id":"evt_1"}"#))
        .await
        .unwrap();
    let (error, _) = until(&mut socket, "error").await;
    assert_eq!(error["error"]["param"], "type", "{error}");
    assert_eq!(error["error"]["event_id"], "evt_1");
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("response.create")
    );

    // The clip with its pauses, then one commit: one item, no speech events (manual mode).
    let clip = mulaw_8k(&asr::beckett());
    for piece in clip.chunks(1600) {
        socket.send(append(piece)).await.unwrap();
    }
    socket
        .send(text(r#"{"type":"input_audio_buffer.commit"}"#))
        .await
        .unwrap();
    let (done, before) = until(
        &mut socket,
        "conversation.item.input_audio_transcription.completed",
    )
    .await;
    assert!(
        before
            .iter()
            .all(|e| !e["type"].as_str().unwrap().contains("speech_")),
        "{before:?}"
    );
    assert!(
        before
            .iter()
            .any(|e| e["type"] == "input_audio_buffer.committed"
                && e["item_id"] == done["item_id"]),
        "{before:?}"
    );
    let transcript = done["transcript"].as_str().unwrap();
    let wer = asr::wer(BECKETT, transcript);
    assert!(wer <= 0.2, "WER {wer}: {transcript}");

    // Clear drops what was appended: the commit after it has nothing to commit.
    let fox = mulaw_8k(&asr::espeak("en-us", FOX));
    for piece in fox.chunks(1600) {
        socket.send(append(piece)).await.unwrap();
    }
    socket
        .send(text(r#"{"type":"input_audio_buffer.clear"}"#))
        .await
        .unwrap();
    until(&mut socket, "input_audio_buffer.cleared").await;
    socket
        .send(text(r#"{"type":"input_audio_buffer.commit"}"#))
        .await
        .unwrap();
    let (error, before) = until(&mut socket, "error").await;
    assert_eq!(error["error"]["code"], "input_audio_buffer_commit_empty");
    assert!(
        before
            .iter()
            .all(|e| e["type"] != "conversation.item.input_audio_transcription.completed"),
        "{before:?}"
    );
    app.stop().await;
}

#[tokio::test]
async fn refusals_at_the_upgrade_carry_the_rest_status_and_code() {
    let app = TestApp::start().await;
    let envelope = |body: &Value, code: &str| {
        assert_eq!(body["error"]["code"], code, "{body}");
        assert!(body["error"]["type"].as_str().unwrap().ends_with("_error"));
    };
    let (status, body) = refused(&app, QUERY, &[]).await;
    assert_eq!(status, 401);
    envelope(&body, "invalid_api_key");
    let (status, body) = refused(&app, QUERY, &[("authorization", "Bearer vk_nonsense")]).await;
    assert_eq!(status, 401);
    envelope(&body, "invalid_api_key");

    let account = app.account(Plan::Pro).await;
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;
    let (status, body) = refused(
        &app,
        QUERY,
        &[("authorization", &format!("Bearer {reader}"))],
    )
    .await;
    assert_eq!(status, 403);
    envelope(&body, "insufficient_scope");

    let free = app.account(Plan::None).await;
    let (_, free_key) = app.key(&free, &Scope::ALL).await;
    let (status, body) = refused(
        &app,
        QUERY,
        &[("authorization", &format!("Bearer {free_key}"))],
    )
    .await;
    assert_eq!(status, 403);
    envelope(&body, "pro_plan_required");

    // A conversation session, or a model that is not a transcription model: 400 naming it.
    let (_, secret) = app.key(&account, &Scope::ALL).await;
    let bearer = format!("Bearer {secret}");
    for (query, param) in [
        ("model=gpt-realtime", "intent"),
        ("intent=conversation", "intent"),
        ("intent=transcription&model=gpt-realtime", "model"),
    ] {
        let (status, body) = refused(&app, query, &[("authorization", &bearer)]).await;
        assert_eq!(status, 400, "{query}: {body}");
        envelope(&body, "invalid_request");
        assert_eq!(body["error"]["param"], param, "{body}");
    }
    // Each upgrade counts as one write: the key's write policy runs out.
    let mut writes = 4;
    let (status, body) = loop {
        let (status, body) =
            refused(&app, "intent=conversation", &[("authorization", &bearer)]).await;
        writes += 1;
        if status != 400 || writes > 700 {
            break (status, body);
        }
    };
    assert_eq!(status, 429, "after {writes}: {body}");
    envelope(&body, "rate_limit_exceeded");
    app.stop().await;
}
