//! Deepgram's live dialect, `GET /v1/listen`, over a real socket: real speech with pauses
//! (the Beckett clip, streamed at real time) becomes interim and final results and one stored
//! capture; refusals at the upgrade carry REST's status and `code`; an idle session ends.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::{self, Message};
use voiced::domain::{Feature, Plan, Scope};

use crate::asr;
use crate::common::{TestApp, fixtures, json, vendor_sdk};

use crate::common::ws::{self, Socket};

const BECKETT: &str = "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.";
const FOX: &str = "The quick brown fox jumps over the lazy dog near the quiet river bank.";
/// LiveKit Agents 1.8.9's query (docs: ../shared/notes/wave4-facts.md).
const LIVEKIT_QUERY: &str = "model=nova-3&punctuate=true&smart_format=false&no_delay=true&interim_results=true&encoding=linear16&vad_events=true&sample_rate=16000&channels=1&endpointing=25&filler_words=true&profanity_filter=false&numerals=false&mip_opt_out=false&language=en-US&utterance_end_ms=1000";

async fn connect(
    app: &TestApp,
    query: &str,
    headers: &[(&str, &str)],
) -> Result<(Socket, tungstenite::handshake::client::Response), tungstenite::Error> {
    ws::connect(app, &format!("/v1/listen?{query}"), headers).await
}

/// The refusal of an upgrade: status and body.
pub(crate) async fn refused(app: &TestApp, query: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    ws::refused(app, &format!("/v1/listen?{query}"), headers).await
}

fn pcm16(samples: &[f32]) -> Vec<u8> {
    samples
        .iter()
        .flat_map(|s| ((s.clamp(-1.0, 1.0) * 32767.0) as i16).to_le_bytes())
        .collect()
}

#[tokio::test]
async fn speech_with_pauses_streams_interims_and_finals_and_becomes_one_capture() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    // The recogniser loads its model on its first job: load it before the clock matters.
    let warm = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        std::fs::read(asr::espeak_wav("en-us", "Warm up.")).unwrap(),
    );
    assert_eq!(app.transcribe(&secret, &warm).await.0, 200);
    let (socket, _) = connect(
        &app,
        LIVEKIT_QUERY,
        &[("authorization", &format!("Token {secret}"))],
    )
    .await
    .expect("upgrade");
    let (mut sink, mut stream) = socket.split();

    // A long sentence, a pause, the Beckett clip (short phrases with pauses), 1.5 s of
    // silence; at real time in 50 ms frames (as LiveKit sends).
    let mut audio = asr::espeak("en-us", FOX);
    audio.extend(vec![0.0; 16_000]);
    let beckett_at = audio.len() as f64 / 16_000.0;
    audio.extend(asr::beckett());
    audio.extend(vec![0.0; 24_000]);
    let total = audio.len() as f64 / 16_000.0;
    let started = Instant::now();
    let sender = tokio::spawn(async move {
        for (n, frame) in audio.chunks(800).enumerate() {
            tokio::time::sleep_until((started + Duration::from_millis(50 * n as u64)).into()).await;
            sink.send(Message::Binary(pcm16(frame).into()))
                .await
                .unwrap();
        }
        sink.send(Message::Text(r#"{"type":"CloseStream"}"#.into()))
            .await
            .unwrap();
        sink
    });

    let mut messages: Vec<(Duration, Value)> = Vec::new();
    while let Some(Ok(message)) = tokio::time::timeout(Duration::from_secs(60), stream.next())
        .await
        .expect("the session answers")
    {
        if let Message::Text(text) = message {
            messages.push((
                started.elapsed(),
                serde_json::from_str(text.as_str()).unwrap(),
            ));
        }
    }
    drop(sender.await.unwrap());

    let of_type = |t: &str| -> Vec<&(Duration, Value)> {
        messages.iter().filter(|(_, m)| m["type"] == t).collect()
    };
    let results = of_type("Results");
    let interims: Vec<_> = results
        .iter()
        .filter(|(_, m)| m["is_final"] == false)
        .collect();
    let finals: Vec<_> = results
        .iter()
        .filter(|(_, m)| m["is_final"] == true)
        .collect();
    assert!(!of_type("SpeechStarted").is_empty(), "{messages:?}");
    assert!(!interims.is_empty(), "no interim: {messages:?}");
    assert!(finals.len() >= 2, "the pauses end utterances: {messages:?}");
    assert!(finals.iter().any(|(_, m)| m["speech_final"] == true));
    assert!(!of_type("UtteranceEnd").is_empty(), "{messages:?}");
    let transcript: Vec<&str> = finals
        .iter()
        .map(|(_, m)| {
            m["channel"]["alternatives"][0]["transcript"]
                .as_str()
                .unwrap()
        })
        .filter(|t| !t.is_empty())
        .collect();
    let transcript = transcript.join(" ");
    let wer = asr::wer(&format!("{FOX} {BECKETT}"), &transcript);
    assert!(wer <= 0.2, "WER {wer}: {transcript}");
    // Words on the session's clock: inside their utterance's span, which is inside the clip.
    for (_, m) in &finals {
        let from = m["start"].as_f64().unwrap();
        let to = from + m["duration"].as_f64().unwrap();
        assert!(from >= 0.0 && to <= total + 0.01, "{m}");
        for w in m["channel"]["alternatives"][0]["words"].as_array().unwrap() {
            let (start, end) = (w["start"].as_f64().unwrap(), w["end"].as_f64().unwrap());
            assert!(
                start >= from - 0.1 && end >= start && end <= to + 0.1,
                "{w} in {m}"
            );
        }
    }
    // Latency, measured: the first interim after the first speech, each final after its
    // last word was sent.
    let first_speech = of_type("SpeechStarted")[0].1["timestamp"].as_f64().unwrap();
    let first_interim = interims[0].0.as_secs_f64() - first_speech;
    let mut final_lags: Vec<f64> = finals
        .iter()
        .filter_map(|(at, m)| {
            let last = m["channel"]["alternatives"][0]["words"]
                .as_array()?
                .last()?["end"]
                .as_f64()?;
            Some(at.as_secs_f64() - last)
        })
        .collect();
    final_lags.sort_by(f64::total_cmp);
    eprintln!(
        "live: first interim {first_interim:.2} s after speech started; finals {final_lags:.2?} s after their last word; {} interims, {} finals",
        interims.len(),
        finals.len()
    );

    let metadata = of_type("Metadata");
    assert_eq!(metadata.len(), 1, "{messages:?}");
    let capture_id = metadata[0].1["capture_id"].as_str().unwrap().to_owned();
    assert_eq!(metadata[0].1["request_id"], capture_id.as_str());
    assert!((metadata[0].1["duration"].as_f64().unwrap() - total).abs() < 0.1);
    assert!(beckett_at > 3.0, "the sentence is long enough for interims");

    let (status, capture) = json(
        app.get(&format!("/v1/captures/{capture_id}"))
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
    let captions = app
        .get(&format!("/v1/captures/{capture_id}/captions?format=vtt"))
        .bearer_auth(&secret)
        .send()
        .await
        .unwrap();
    assert_eq!(captions.status(), 200);
    assert!(captions.text().await.unwrap().starts_with("WEBVTT"));
    app.stop().await;
}

/// The Beckett clip (and 1.5 s of silence) as a browser's MediaRecorder sends it: Opus in a
/// streamed WebM (unknown sizes, no cues), made by ffmpeg into a pipe.
fn beckett_webm() -> Vec<u8> {
    let output = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ffmpeg -hide_banner -loglevel error -i {} -af apad=pad_dur=1.5 -ac 1 -c:a libopus -b:a 32k -f webm - | cat",
            asr::beckett_wav().display()
        ))
        .output()
        .expect("ffmpeg");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

#[tokio::test]
async fn opus_in_webm_with_no_encoding_is_transcribed_and_garbage_is_refused() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    let token = format!("Token {secret}");
    // No `encoding`: containerised audio, as Deepgram reads it.
    let (socket, _) = connect(
        &app,
        "model=nova-3&language=en",
        &[("authorization", &token)],
    )
    .await
    .expect("upgrade");
    let (mut sink, mut stream) = socket.split();
    let webm = beckett_webm();
    let sender = tokio::spawn(async move {
        // About a quarter of a second of audio per message, a little faster than real time.
        for piece in webm.chunks(1000) {
            sink.send(Message::Binary(piece.to_vec().into()))
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        sink.send(Message::Text(r#"{"type":"CloseStream"}"#.into()))
            .await
            .unwrap();
        sink
    });
    let mut finals = Vec::new();
    let mut duration = None;
    while let Some(message) = ws::next_json(&mut stream, Duration::from_secs(60)).await {
        if message["type"] == "Results" && message["is_final"] == true {
            let text = message["channel"]["alternatives"][0]["transcript"]
                .as_str()
                .unwrap();
            if !text.is_empty() {
                finals.push(text.to_owned());
            }
        }
        if message["type"] == "Metadata" {
            duration = message["duration"].as_f64();
        }
    }
    drop(sender.await.unwrap());
    let transcript = finals.join(" ");
    let wer = asr::wer(BECKETT, &transcript);
    assert!(wer <= 0.2, "WER {wer}: {transcript}");
    let expected = asr::beckett().len() as f64 / 16_000.0 + 1.5;
    let duration = duration.expect("a Metadata message");
    assert!(
        (duration - expected).abs() < 0.1,
        "{duration} s of {expected}"
    );

    // A stream that is neither Ogg nor WebM: closed with Deepgram's DATA-0000, nothing stored.
    let before = fixtures::captures(&app).await.len();
    let (mut socket, _) = connect(&app, "model=nova-3", &[("authorization", &token)])
        .await
        .expect("upgrade");
    socket
        .send(Message::Binary(vec![7u8; 4096].into()))
        .await
        .unwrap();
    let close = loop {
        match tokio::time::timeout(Duration::from_secs(10), socket.next())
            .await
            .expect("the session closes")
        {
            Some(Ok(Message::Close(frame))) => break frame.expect("a close frame"),
            Some(Ok(_)) => {}
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(u16::from(close.code), 1008, "{close:?}");
    assert!(close.reason.starts_with("DATA-0000"), "{close:?}");
    assert!(close.reason.contains("neither Ogg nor WebM"), "{close:?}");
    assert_eq!(fixtures::captures(&app).await.len(), before);
    app.stop().await;
}

#[tokio::test]
async fn refusals_at_the_upgrade_carry_the_rest_status_and_code() {
    let app = TestApp::start().await;
    let query = "encoding=linear16&sample_rate=16000";
    let (status, body) = refused(&app, query, &[]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (401, Some("invalid_api_key"))
    );
    assert_eq!(body["err_code"], "INVALID_AUTH");
    let (status, body) = refused(&app, query, &[("authorization", "Token vk_nonsense")]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (401, Some("invalid_api_key"))
    );

    let account = app.account(Plan::Pro).await;
    let (_, reader) = app.key(&account, &[Scope::VoiceRead]).await;
    let (status, body) = refused(&app, query, &[("x-api-key", &reader)]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("insufficient_scope"))
    );

    let free = app.account(Plan::None).await;
    let (_, free_key) = app.key(&free, &Scope::ALL).await;
    let (status, body) = refused(
        &app,
        query,
        &[("authorization", &format!("Bearer {free_key}"))],
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("pro_plan_required"))
    );

    let (_, secret) = app.key(&account, &Scope::ALL).await;
    fixtures::set_features(&app, &account, &[Feature::Speech]).await;
    let (status, body) = refused(&app, query, &[("x-api-key", &secret)]).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("feature_not_enabled"))
    );
    fixtures::set_features(&app, &account, &Feature::ALL).await;

    // Something voiced cannot do at all: 400 naming it.
    let diarize = format!("{query}&diarize=true");
    let (status, body) = refused(&app, &diarize, &[("x-api-key", &secret)]).await;
    assert_eq!(
        (status, body["code"].as_str(), body["param"].as_str()),
        (400, Some("invalid_request"), Some("diarize"))
    );
    // Each upgrade counts as one write: the key's write policy runs out.
    let mut writes = 2;
    let (status, body) = loop {
        let (status, body) = refused(&app, &diarize, &[("x-api-key", &secret)]).await;
        writes += 1;
        if status != 400 || writes > 700 {
            break (status, body);
        }
    };
    assert_eq!(
        (status, body["code"].as_str()),
        (429, Some("rate_limit_exceeded")),
        "after {writes}"
    );
    assert_eq!(body["err_code"], "TOO_MANY_REQUESTS");
    app.stop().await;
}

#[tokio::test]
async fn the_token_subprotocol_authenticates_and_an_idle_session_ends() {
    let app = TestApp::start_with(0, &[("VOICED_LIVE_IDLE_TIMEOUT_SECS", "1")]).await;
    let (_, secret) = app.pro_user().await;
    let protocol = format!("token, {secret}");
    let (mut socket, response) = connect(
        &app,
        "encoding=mulaw&sample_rate=8000",
        &[("sec-websocket-protocol", &protocol)],
    )
    .await
    .expect("upgrade");
    assert_eq!(response.headers()["sec-websocket-protocol"], "token");

    // Finalize with nothing open answers at once, empty and from_finalize.
    socket
        .send(Message::Text(r#"{"type":"Finalize"}"#.into()))
        .await
        .unwrap();
    let answer = ws::next_json(&mut socket, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(answer["type"], "Results", "{answer}");
    assert_eq!(answer["from_finalize"], true);
    assert_eq!(answer["channel"]["alternatives"][0]["transcript"], "");

    // A keep-alive keeps it open past the idle time; then silence ends it.
    let opened = Instant::now();
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(600)).await;
        socket
            .send(Message::Text(r#"{"type":"KeepAlive"}"#.into()))
            .await
            .unwrap();
    }
    let metadata = ws::next_json(&mut socket, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(metadata["type"], "Metadata", "{metadata}");
    assert!(
        metadata["capture_id"].is_null(),
        "no audio, no capture: {metadata}"
    );
    let ended = opened.elapsed();
    assert!(
        ended >= Duration::from_millis(2_500) && ended < Duration::from_secs(5),
        "{ended:?}"
    );
    assert!(
        ws::next_json(&mut socket, Duration::from_secs(2))
            .await
            .is_none()
    );
    app.stop().await;
}

/// `POST /v1/listen` with `query` and a wav body, `Authorization: Token`.
async fn prerecorded(
    app: &TestApp,
    secret: &str,
    query: &str,
    content_type: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    json(
        app.post(&format!("/v1/listen?{query}"))
            .header("authorization", format!("Token {secret}"))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn prerecorded_speech_answers_in_deepgrams_shape_and_becomes_a_capture() {
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    let wav = std::fs::read(asr::beckett_wav()).unwrap();
    let seconds = asr::beckett().len() as f64 / 16_000.0;
    let (status, body) = prerecorded(
        &app,
        &secret,
        "model=nova-3&smart_format=true&punctuate=true&language=en-US&diarize=false",
        "audio/wav",
        wav.clone(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let alternative = &body["results"]["channels"][0]["alternatives"][0];
    let transcript = alternative["transcript"].as_str().unwrap();
    let wer = asr::wer(BECKETT, transcript);
    assert!(wer <= 0.2, "WER {wer}: {transcript}");
    let confidence = alternative["confidence"].as_f64().unwrap();
    assert!(confidence > 0.0 && confidence <= 1.0, "{body}");
    let words = alternative["words"].as_array().unwrap();
    assert!(words.len() >= 10, "{body}");
    let mut previous = 0.0;
    for w in words {
        let (start, end) = (w["start"].as_f64().unwrap(), w["end"].as_f64().unwrap());
        assert!(
            start >= previous - 0.01 && end >= start && end <= seconds + 0.1,
            "{w}"
        );
        previous = start;
        let bare = w["word"].as_str().unwrap();
        let punctuated = w["punctuated_word"].as_str().unwrap();
        assert_eq!(
            bare,
            punctuated
                .chars()
                .filter(|c| c.is_alphanumeric() || *c == '\'' || *c == '-')
                .collect::<String>()
                .to_lowercase(),
            "{w}"
        );
    }
    let metadata = &body["metadata"];
    assert!((metadata["duration"].as_f64().unwrap() - seconds).abs() < 0.1);
    assert_eq!(metadata["channels"], 1);
    let model = metadata["models"][0].as_str().unwrap();
    assert_eq!(metadata["model_info"][model]["name"], "nova-3");
    let capture_id = metadata["capture_id"].as_str().unwrap();
    let (status, capture) = json(
        app.get(&format!("/v1/captures/{capture_id}"))
            .bearer_auth(&secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{capture}");
    assert_eq!(capture["source"], "api");

    // The live route's refusals, and the body's.
    for (query, content_type, expected, param) in [
        ("model=nova-3&diarize=true", "audio/wav", 400, "diarize"),
        (
            "encoding=linear16&sample_rate=16000",
            "audio/wav",
            400,
            "encoding",
        ),
        ("interim_results=maybe", "audio/wav", 400, "interim_results"),
        ("model=nova-3", "application/json", 400, "url"),
        ("model=nova-3", "text/plain", 415, "body"),
    ] {
        let (status, body) = prerecorded(&app, &secret, query, content_type, wav.clone()).await;
        assert_eq!(status, expected, "{query} {content_type}: {body}");
        assert_eq!(body["param"], param, "{body}");
    }
    let (status, body) = prerecorded(&app, &secret, "", "audio/wav", b"not audio".to_vec()).await;
    assert_eq!(status, 400, "{body}");
    let (status, _) = json(
        app.post("/v1/listen")
            .header("content-type", "audio/wav")
            .body(wav)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn deepgram_python_sdk_streams_and_transcribes_a_real_clip() {
    let Some(python) = vendor_sdk::python(
        "VOICED_DEEPGRAM_PYTHON",
        "venv-deepgram",
        "deepgram",
        "VOICED_REQUIRE_DEEPGRAM_SDK",
    ) else {
        eprintln!("SKIPPED: no deepgram-sdk venv (scripts/deepgram-sdk-test.sh makes it)");
        return;
    };
    let app = TestApp::start().await;
    let (_, secret) = app.pro_user().await;
    let clip = asr::espeak_wav("en-us", FOX);
    let stdout = vendor_sdk::run(
        python,
        "tests/deepgram_sdk/test_listen.py",
        &[
            ("VOICED_BASE_URL", &app.base),
            ("VOICED_KEY", &secret),
            ("VOICED_CLIP", &clip.to_string_lossy()),
            ("VOICED_EXPECTED", "quick brown fox lazy dog quiet"),
        ],
        Duration::from_secs(180),
    )
    .await;
    assert!(
        stdout.contains("live: ") && stdout.contains("pre-recorded: "),
        "{stdout}"
    );
}
