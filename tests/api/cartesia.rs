//! Cartesia's speech socket over a real socket: LiveKit Agents 1.8.9's exact messages (the
//! same fields on every piece, `continue: true` then a last `" "` with `continue: false`)
//! become Kokoro's audio at the asked rate, which Whisper transcribes back, with word
//! timestamps that are the text's words, in order, within the audio; a second context,
//! cancelled as soon as it speaks, stops; every phrase is a generation, charged once for what
//! was delivered. A flush answers `flush_done` between its audio and the next; float PCM is
//! the same speech. Refusals at the upgrade carry Cartesia's error shape and voiced's `code`;
//! refusals of a message (an unknown voice, a bad output format, a ceiling crossed) are
//! Cartesia's `error` message naming the field, then the close.

use std::collections::HashMap;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{self, Message};
use voiced::domain::{EngineId, Plan, Scope};

use crate::common::ws::{self, Socket};
use crate::common::{TestApp, fixtures, vendor_sdk};

/// LiveKit Agents 1.8.9's upgrade (../shared/notes/wave4-facts.md).
const PATH: &str = "/tts/websocket?cartesia_version=2025-04-16";

const FIRST: &str = "The weather is lovely today, so we are going for a walk in the park. ";
const SECOND: &str = "Please remember to buy bread and milk on your way home. ";
/// Five sentences (one phrase, rendered sentence by sentence) and words never flushed.
const LONG: &str = "Once upon a time there was a lighthouse keeper who lived alone on a rock far out at sea. \
    Every evening he climbed the stairs and lit the great lamp for the ships. \
    He wrote letters to his sister that he could never send, and kept them in a tin box. \
    In the spring the puffins came back to the cliffs below his window. \
    The storms came and went, and the gulls grew old, and still he climbed the stairs. \
    One winter night a small boat appeared out of the fog with a lantern at its bow";

/// LiveKit's message: every field it sends, on every piece.
fn livekit(voice: &str, context: &str, transcript: &str, more: bool) -> Value {
    json!({
        "model_id": "sonic-3",
        "voice": {"mode": "id", "id": voice},
        "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000},
        "language": "en",
        "add_timestamps": true,
        "max_buffer_delay_ms": 0,
        "context_id": context,
        "transcript": transcript,
        "continue": more,
    })
}

async fn connect(
    app: &TestApp,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Socket, tungstenite::Error> {
    ws::connect(app, path, headers)
        .await
        .map(|(socket, _)| socket)
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
    words: Vec<String>,
    starts: Vec<f64>,
    ends: Vec<f64>,
    done_at: Option<usize>,
    audio_after_done: bool,
    generations: Vec<String>,
    /// Each chunk's `flush_id`, and where each `flush_done` came.
    flush_ids: Vec<u64>,
    flush_done: Vec<(usize, u64)>,
}

fn collect(messages: &[Value]) -> HashMap<String, Heard> {
    let mut heard: HashMap<String, Heard> = HashMap::new();
    for (i, message) in messages.iter().enumerate() {
        let context = message["context_id"].as_str().unwrap().to_owned();
        let entry = heard.entry(context).or_default();
        match message["type"].as_str().unwrap() {
            "chunk" => {
                assert_eq!(message["done"], false, "{message}");
                assert_eq!(message["status_code"], 206, "{message}");
                assert!(message["step_time"].is_number(), "{message}");
                if entry.done_at.is_some() {
                    entry.audio_after_done = true;
                }
                entry
                    .audio
                    .extend(STANDARD.decode(message["data"].as_str().unwrap()).unwrap());
                entry.flush_ids.push(message["flush_id"].as_u64().unwrap());
                let generation = message["generation_id"].as_str().unwrap().to_owned();
                if !entry.generations.contains(&generation) {
                    entry.generations.push(generation);
                }
            }
            "timestamps" => {
                let words = &message["word_timestamps"];
                let list = words["words"].as_array().unwrap();
                let (starts, ends) = (
                    words["start"].as_array().unwrap(),
                    words["end"].as_array().unwrap(),
                );
                assert_eq!(list.len(), starts.len(), "{message}");
                assert_eq!(list.len(), ends.len(), "{message}");
                for ((w, s), e) in list.iter().zip(starts).zip(ends) {
                    entry.words.push(w.as_str().unwrap().to_owned());
                    entry.starts.push(s.as_f64().unwrap());
                    entry.ends.push(e.as_f64().unwrap());
                }
            }
            "flush_done" => entry
                .flush_done
                .push((entry.flush_ids.len(), message["flush_id"].as_u64().unwrap())),
            "done" => {
                assert_eq!(message["done"], true, "{message}");
                assert_eq!(message["status_code"], 200, "{message}");
                entry.done_at = Some(i);
            }
            other => panic!("unexpected {other}: {message}"),
        }
    }
    heard
}

/// The words of `text` as compared: lower case, letters and digits only.
fn plain(words: impl IntoIterator<Item = impl AsRef<str>>) -> Vec<String> {
    words
        .into_iter()
        .map(|w| {
            w.as_ref()
                .chars()
                .filter(|c| c.is_alphanumeric())
                .collect::<String>()
                .to_lowercase()
        })
        .filter(|w| !w.is_empty())
        .collect()
}

fn wav_of_pcm16(pcm: &[u8], rate: u32) -> Vec<u8> {
    let samples: Vec<f32> = pcm
        .chunks_exact(2)
        .map(|p| f32::from(i16::from_le_bytes([p[0], p[1]])) / 32768.0)
        .collect();
    voiced::audio::encode(&samples, rate, voiced::audio::AudioFormat::Wav).unwrap()
}

async fn hear(app: &TestApp, secret: &str, wav: &[u8]) -> String {
    let (status, body) = app.transcribe(secret, &STANDARD.encode(wav)).await;
    assert_eq!(status, 200, "{body}");
    body["text"].as_str().unwrap().to_lowercase()
}

#[tokio::test]
async fn livekits_sequence_speaks_with_word_times_cancels_and_charges_once() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Agent", EngineId::Kokoro, "af_heart")
        .await;
    let mut socket = connect(&app, PATH, &[("x-api-key", &secret)])
        .await
        .expect("upgrade");

    // Context a: LiveKit's exact messages, two pieces then its closing " ". Context b,
    // interleaved, buffers (no max_buffer_delay_ms): its five sentences are one phrase, its
    // last words wait for more.
    send(&mut socket, livekit("Agent", "a", FIRST, true)).await;
    let mut long = livekit("Agent", "b", LONG, true);
    long.as_object_mut().unwrap().remove("max_buffer_delay_ms");
    send(&mut socket, long).await;
    send(&mut socket, livekit("Agent", "a", SECOND, true)).await;
    send(&mut socket, livekit("Agent", "a", " ", false)).await;

    // As soon as b speaks, it is cancelled mid-phrase.
    let mut messages = Vec::new();
    let mut cancelled = false;
    while let Some(message) = next(&mut socket).await {
        assert_ne!(message["type"], "error", "{message}");
        if !cancelled && message["context_id"] == "b" && message["type"] == "chunk" {
            send(&mut socket, json!({"context_id": "b", "cancel": true})).await;
            cancelled = true;
        }
        messages.push(message);
        let done = |c: &str| {
            messages
                .iter()
                .any(|m| m["context_id"] == c && m["type"] == "done")
        };
        if done("a") && done("b") {
            break;
        }
    }
    assert!(cancelled, "{messages:?}");
    socket.close(None).await.unwrap();
    let heard = collect(&messages);
    let (a, b) = (&heard["a"], &heard["b"]);

    // Context a: its whole text at 24 kHz, heard back; its words are the text's, in order,
    // within its audio.
    let said = hear(&app, &secret, &wav_of_pcm16(&a.audio, 24_000)).await;
    for word in ["weather", "lovely", "park", "bread", "milk", "home"] {
        assert!(said.contains(word), "{word} in {said:?}");
    }
    let text = format!("{FIRST}{SECOND}");
    assert_eq!(plain(&a.words), plain(text.split_whitespace()));
    let seconds = a.audio.len() as f64 / 2.0 / 24_000.0;
    for i in 0..a.words.len() {
        assert!(a.starts[i] <= a.ends[i], "{a:?}");
        assert!(
            a.ends[i] <= seconds + 0.05,
            "{} ends past {seconds}",
            a.words[i]
        );
        if i > 0 {
            assert!(a.starts[i - 1] <= a.starts[i], "{:?}", a.starts);
        }
    }
    // The second phrase's words count from the context's start, after the first's.
    let please = a.words.iter().position(|w| w == "Please").unwrap();
    assert!(a.starts[please] > 1.0, "{:?}", a.starts);
    assert!(a.done_at.is_some() && !a.audio_after_done);

    // Context b: cancelled while it spoke: done, nothing after, and short of its end.
    assert!(b.done_at.is_some() && !b.audio_after_done, "{b:?}");
    let said_b = hear(&app, &secret, &wav_of_pcm16(&b.audio, 24_000)).await;
    assert!(said_b.contains("lighthouse"), "{said_b:?}");
    assert!(!said_b.contains("gulls"), "{said_b:?}");

    // Each phrase is a generation; a's completed with its words, b's cut failed as
    // cancelled; what was delivered is charged once.
    fixtures::drained(&app, &account, Duration::from_secs(60)).await;
    let generations = fixtures::generations_of(&app, &account).await;
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
    assert!(b.generations.contains(&cut.id), "{cut:?}");
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
async fn a_flush_answers_flush_done_between_its_audio_and_float_pcm_speaks() {
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Agent", EngineId::Kokoro, "af_heart")
        .await;
    // The key in the query, as Cartesia's browser clients send it; the version as a header.
    let path = format!("/tts/websocket?api_key={secret}");
    let mut socket = connect(&app, &path, &[("cartesia-version", "2024-11-13")])
        .await
        .expect("upgrade");
    // The SDK's shapes: the voice as its id alone, float PCM, a flush mid-context.
    let message = |transcript: &str, more: bool, flush: bool| {
        json!({
            "context_id": "f",
            "model_id": "kokoro",
            "voice": "Agent",
            "output_format": {"container": "raw", "encoding": "pcm_f32le", "sample_rate": 16000},
            "transcript": transcript,
            "continue": more,
            "flush": flush,
        })
    };
    send(
        &mut socket,
        message("The weather is lovely today", true, false),
    )
    .await;
    send(
        &mut socket,
        message(", so we are going for a walk.", true, true),
    )
    .await;
    send(
        &mut socket,
        message("Please buy bread and milk.", false, false),
    )
    .await;
    let mut messages = Vec::new();
    while let Some(message) = next(&mut socket).await {
        assert_ne!(message["type"], "error", "{message}");
        let done = message["type"] == "done";
        messages.push(message);
        if done {
            break;
        }
    }
    let heard = collect(&messages);
    let f = &heard["f"];
    // One flush_done (id 1), after the chunks of the flushed text and before the rest's.
    assert_eq!(f.flush_done.len(), 1, "{messages:?}");
    let (at, id) = f.flush_done[0];
    assert_eq!(id, 1);
    assert!(at > 0 && at < f.flush_ids.len(), "{messages:?}");
    assert!(
        f.flush_ids[..at].iter().all(|&i| i == 1),
        "{:?}",
        f.flush_ids
    );
    assert!(
        f.flush_ids[at..].iter().all(|&i| i == 2),
        "{:?}",
        f.flush_ids
    );
    assert!(f.words.is_empty(), "no timestamps were asked for");
    // Float samples in [-1, 1] at 16 kHz: the same speech.
    assert_eq!(f.audio.len() % 4, 0);
    let samples: Vec<f32> = f
        .audio
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert!(samples.iter().all(|s| (-1.0..=1.0).contains(s)));
    let wav = voiced::audio::encode(&samples, 16_000, voiced::audio::AudioFormat::Wav).unwrap();
    let said = hear(&app, &secret, &wav).await;
    for word in ["weather", "walk", "bread", "milk"] {
        assert!(said.contains(word), "{word} in {said:?}");
    }
    app.stop().await;
}

#[tokio::test]
async fn refusals_use_cartesias_shape_with_the_code() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    let voice = app
        .voice(&account, "Agent", EngineId::Kokoro, "af_heart")
        .await;
    let check = |(status, body): (u16, Value), want: (u16, &str)| {
        assert_eq!(
            (status, body["code"].as_str()),
            (want.0, Some(want.1)),
            "{body}"
        );
        assert_eq!(body["error_code"], want.1, "{body}");
        assert!(
            body["title"].is_string() && body["message"].is_string(),
            "{body}"
        );
        body
    };
    check(ws::refused(&app, PATH, &[]).await, (401, "invalid_api_key"));
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;
    check(
        ws::refused(&app, PATH, &[("x-api-key", &reader)]).await,
        (403, "insufficient_scope"),
    );
    let free = app.account(Plan::None).await;
    let (_, free_key) = app.key(&free, &Scope::ALL).await;
    check(
        ws::refused(&app, PATH, &[("x-api-key", &free_key)]).await,
        (403, "pro_plan_required"),
    );
    let body = check(
        ws::refused(
            &app,
            "/tts/websocket?cartesia_version=latest",
            &[("x-api-key", &secret)],
        )
        .await,
        (400, "invalid_request"),
    );
    assert_eq!(body["param"], "cartesia_version");
    // Bearer works as well as X-API-Key.
    connect(
        &app,
        PATH,
        &[("authorization", &format!("Bearer {secret}"))],
    )
    .await
    .expect("upgrade");

    // Refusals of a message: Cartesia's error message naming the field, then the close.
    let refusal = |message: Value| {
        let app = &app;
        let secret = secret.clone();
        async move {
            let mut socket = connect(app, PATH, &[("x-api-key", &secret)])
                .await
                .expect("upgrade");
            send(&mut socket, message).await;
            let error = next(&mut socket).await.expect("an error message");
            assert_eq!(error["type"], "error", "{error}");
            assert_eq!(error["done"], true, "{error}");
            assert!(next(&mut socket).await.is_none(), "then the socket closes");
            error
        }
    };
    let error = refusal(livekit("nobody", "c", "Hello. ", false)).await;
    assert_eq!(
        (error["status_code"].as_u64(), error["code"].as_str()),
        (Some(400), Some("invalid_request")),
        "{error}"
    );
    assert_eq!(error["param"], "voice.id", "{error}");
    assert_eq!(error["context_id"], "c", "{error}");
    let mut bad = livekit("Agent", "c", "Hello. ", false);
    bad["output_format"]["sample_rate"] = json!(11025);
    let error = refusal(bad).await;
    assert_eq!(error["param"], "output_format.sample_rate", "{error}");
    assert_eq!(error["error_code"], "invalid_request", "{error}");
    let mut embedding = livekit("Agent", "c", "Hello. ", false);
    embedding["voice"] = json!({"mode": "embedding", "embedding": [0.1, 0.2]});
    let error = refusal(embedding).await;
    assert_eq!(error["param"], "voice.mode", "{error}");

    // A ceiling crossed mid-socket refuses the next phrase with its code; nothing is charged.
    let (key_id, capped) = app.key_with_ceiling(&account, &Scope::ALL, Some(1)).await;
    let mut socket = connect(&app, PATH, &[("x-api-key", &capped)])
        .await
        .expect("upgrade");
    app.charge(&account, Some(&key_id), &voice, 60_000).await;
    send(&mut socket, livekit("Agent", "c", "Hello there. ", false)).await;
    let error = next(&mut socket).await.expect("an error message");
    assert_eq!(error["code"], "key_ceiling_exceeded", "{error}");
    assert_eq!(error["context_id"], "c", "{error}");
    assert!(next(&mut socket).await.is_none(), "then the socket closes");
    app.stop().await;
}

#[tokio::test]
async fn cartesia_python_sdk_speaks_over_the_socket() {
    let Some(python) = vendor_sdk::python(
        "VOICED_CARTESIA_PYTHON",
        "venv-cartesia",
        "cartesia, websockets",
        "VOICED_REQUIRE_CARTESIA_SDK",
    ) else {
        eprintln!("SKIPPED: no cartesia venv (scripts/cartesia-sdk-test.sh makes it)");
        return;
    };
    let app = TestApp::start_with_workers(1).await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Agent", EngineId::Kokoro, "af_heart")
        .await;
    let stdout = vendor_sdk::run(
        python,
        "tests/cartesia_sdk/test_tts.py",
        &[
            ("VOICED_BASE_URL", &app.base),
            ("VOICED_KEY", &secret),
            ("VOICED_VOICE", "Agent"),
        ],
        Duration::from_secs(300),
    )
    .await;
    assert!(
        stdout.contains("websocket: ") && stdout.contains("refused: "),
        "{stdout}"
    );
    app.stop().await;
}
