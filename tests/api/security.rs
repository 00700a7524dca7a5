//! Attacks refused (issue 9, item 4): no account reads another's data, credentials and content
//! never reach the logs, oversized heads and bodies are refused without being buffered, and a
//! slow-header client is cut off.

use std::time::Duration;

use crate::common::child::ChildServer;
use crate::common::fixtures;
use crate::common::{TempDir, TestApp, json, poll_until};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use voiced::domain::EngineId;

/// The same problem document, but for the path it names.
fn without_instance(mut body: Value) -> Value {
    body.as_object_mut().unwrap().remove("instance");
    body
}

#[tokio::test]
async fn another_accounts_resources_look_exactly_like_missing_ones() {
    let app = TestApp::start().await;
    let (owner, owner_secret) = app.pro_user().await;
    let (_, other_secret) = app.pro_user().await;
    app.voice(&owner, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let (_, accepted) = json(
        app.post("/v1/speech")
            .bearer_auth(&owner_secret)
            .json(&json!({"text": "Mine.", "voice_name": "Narrator"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let id = accepted["id"].as_str().unwrap();
    let (status, foreign) = json(
        app.get(&format!("/v1/generations/{id}"))
            .bearer_auth(&other_secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    let (missing_status, missing) = json(
        app.get("/v1/generations/gen_00000000000000000000000000000000")
            .bearer_auth(&other_secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, missing_status), (404, 404));
    assert_eq!(without_instance(foreign), without_instance(missing));

    // Captures: a capture of the owner's is never listed for the other account.
    fixtures::store_capture(&app, &owner, "cap_owner_only", "private words")
        .await
        .expect("stored");
    let (_, listed) = json(
        app.get("/v1/captures?limit=200")
            .bearer_auth(&other_secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(listed["total"], 0, "{listed}");
    let (_, own) = json(
        app.get("/v1/captures")
            .bearer_auth(&owner_secret)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(own["data"][0]["id"], "cap_owner_only");
    app.stop().await;
}

#[tokio::test]
async fn keys_signatures_and_transcripts_never_reach_the_logs() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let dir = TempDir::new("logs", 0o755);
    let log = dir.path().join("serve.log");
    let server = ChildServer::start_logging(
        &app.db.url(),
        &[("VOICED_WORKERS", "1"), ("VOICED_LOG", "debug")],
        Some(&log),
    )
    .await;
    let client = reqwest::Client::new();
    let base = &server.base;
    // Speech: create, poll, download through the signed link.
    let (_, accepted) = json(
        client
            .post(format!("{base}/v1/speech"))
            .header("x-api-key", &secret)
            .json(&json!({"text": "Secret words stay out of logs.", "voice_name": "Narrator"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    let id = accepted["id"].as_str().unwrap().to_owned();
    let generation = poll_until(Duration::from_secs(120), "the generation", || {
        let request = client
            .get(format!("{base}/v1/generations/{id}"))
            .bearer_auth(&secret)
            .send();
        async move {
            let body: Value = request.await.ok()?.json().await.ok()?;
            (body["status"] == "completed").then_some(body)
        }
    })
    .await;
    let audio_url = generation["audio_url"].as_str().unwrap();
    let sig = audio_url.split("sig=").nth(1).unwrap().to_owned();
    let audio = client.get(audio_url).send().await.unwrap();
    assert_eq!(audio.status(), 200);
    // Transcription of real speech, so that there is a transcript to look for.
    let wav = dir.path().join("speech.wav");
    let spoken = std::process::Command::new("espeak-ng")
        .args([
            "-w",
            wav.to_str().unwrap(),
            "The quick brown fox jumps over the lazy dog.",
        ])
        .status()
        .unwrap();
    assert!(spoken.success());
    use base64::Engine as _;
    let (status, transcript) = json(
        client
            .post(format!("{base}/v1/transcriptions"))
            .bearer_auth(&secret)
            .json(&json!({"audio": base64::engine::general_purpose::STANDARD.encode(std::fs::read(&wav).unwrap())}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{transcript}");
    let text = transcript["text"].as_str().unwrap().to_owned();
    assert!(text.to_lowercase().contains("fox"), "{text}");
    // A refused key too.
    let refused = client
        .get(format!("{base}/v1/voices"))
        .header("x-api-key", format!("{secret}x"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    drop(server);

    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.lines().count() > 20,
        "debug logging was on: {logged}"
    );
    for (what, needle) in [
        ("the key", secret.as_str()),
        ("the key's secret part", &secret[3..]),
        ("the signature", sig.as_str()),
        ("the transcript", text.as_str()),
        ("the spoken text", "Secret words stay out of logs"),
    ] {
        assert!(!logged.contains(needle), "{what} is in the log");
    }
    app.stop().await;
}

#[tokio::test]
async fn oversized_heads_and_bodies_are_refused() {
    let app = TestApp::start().await;
    let (account, secret) = app.pro_user().await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "jf_alpha")
        .await;
    let response = app
        .get("/v1/voices")
        .bearer_auth(&secret)
        .header("x-padding", "a".repeat(17 * 1024))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 431);
    // A speech body over its 1 MiB limit, and a transcription over its own.
    for (path, size) in [
        ("/v1/speech", 2 * 1024 * 1024),
        ("/v1/transcriptions", 40 * 1024 * 1024),
    ] {
        let body = format!("{{\"audio\":\"{}\"}}", "A".repeat(size));
        let (status, problem) = json(
            app.post(path)
                .bearer_auth(&secret)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 413, "{path}: {problem}");
        assert_eq!(problem["code"], "payload_too_large");
    }
    app.stop().await;
}

#[tokio::test]
async fn a_slow_header_client_is_cut_off_and_others_are_served() {
    let app = TestApp::start_with(0, &[("VOICED_HEADER_READ_TIMEOUT_SECS", "1")]).await;
    let address = app.base.trim_start_matches("http://").to_owned();
    let mut slow = tokio::net::TcpStream::connect(&address).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    let mut closed = false;
    let mut buf = [0u8; 256];
    // One header byte every 200 ms: the head never completes, and the server hangs up.
    for _ in 0..100 {
        if slow.write_all(b"X").await.is_err() {
            closed = true;
            break;
        }
        match tokio::time::timeout(Duration::from_millis(200), slow.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                closed = true;
                break;
            }
            _ => {}
        }
        // Meanwhile another client is served.
        assert_eq!(app.get("/healthz").send().await.unwrap().status(), 200);
    }
    assert!(closed, "the slow client was cut off");
    app.stop().await;
}

/// Reads one HTTP/1.1 response (head and a `Content-Length` body) from a raw connection.
async fn read_response(stream: &mut tokio::net::TcpStream) -> String {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if data.len() >= end + 4 + length {
                return String::from_utf8_lossy(&data[..end + 4 + length]).into_owned();
            }
        }
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "connection closed mid-response: {data:?}");
        data.extend_from_slice(&buf[..n]);
    }
}

/// A client that trickles its body is cut off (issue 23 item 9): with
/// `body_read_timeout_secs` = 1, a speech request whose body never completes gets 408
/// `request_timeout` and its connection is closed, while others are served.
#[tokio::test]
async fn a_slow_body_client_gets_408_and_its_connection_closed() {
    let app = TestApp::start_with(0, &[("VOICED_BODY_READ_TIMEOUT_SECS", "1")]).await;
    let (_, secret) = app.pro_user().await;
    let address = app.base.trim_start_matches("http://").to_owned();
    let mut slow = tokio::net::TcpStream::connect(&address).await.unwrap();
    slow.write_all(
        format!(
            "POST /v1/speech HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {secret}\r\n\
             Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"text\": \"Hel"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    // Meanwhile another client is served.
    assert_eq!(app.get("/healthz").send().await.unwrap().status(), 200);
    let response = tokio::time::timeout(Duration::from_secs(60), read_response(&mut slow))
        .await
        .expect("an answer");
    assert!(response.starts_with("HTTP/1.1 408"), "{response}");
    assert!(
        response.to_ascii_lowercase().contains("connection: close"),
        "{response}"
    );
    let body: Value =
        serde_json::from_str(&response[response.find("\r\n\r\n").unwrap() + 4..]).unwrap();
    assert_eq!(body["code"], "request_timeout", "{body}");
    assert_eq!(body["status"], 408);
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(60), slow.read_to_end(&mut rest)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "the connection is closed: {read:?}"
    );
    let generations = fixtures::generation_count(&app).await;
    assert_eq!(generations, 0);
    app.stop().await;
}

/// Connections beyond `max_connections` wait in the listen backlog (issue 23 item 9): with a
/// cap of 1, a second connection is not served while the first is open (the first's later
/// request is answered meanwhile), and is served as soon as the first closes.
#[tokio::test]
async fn connections_beyond_the_cap_wait_until_one_closes() {
    let app = TestApp::start_with(0, &[("VOICED_MAX_CONNECTIONS", "1")]).await;
    let address = app.base.trim_start_matches("http://").to_owned();
    const HEALTH: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    let mut first = tokio::net::TcpStream::connect(&address).await.unwrap();
    first.write_all(HEALTH).await.unwrap();
    assert!(read_response(&mut first).await.starts_with("HTTP/1.1 200"));
    // The kernel completes the handshake (backlog); the server does not take it.
    let mut second = tokio::net::TcpStream::connect(&address).await.unwrap();
    second.write_all(HEALTH).await.unwrap();
    first.write_all(HEALTH).await.unwrap();
    assert!(read_response(&mut first).await.starts_with("HTTP/1.1 200"));
    let mut byte = [0u8; 1];
    match second.try_read(&mut byte) {
        Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("the second connection was served past the cap: {other:?}"),
    }
    drop(first);
    let response = tokio::time::timeout(Duration::from_secs(60), read_response(&mut second))
        .await
        .expect("served once the first closed");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    app.stop().await;
}

/// With the cap, a connection that never sends a byte would hold its place for ever: it is
/// closed after `header_read_timeout_secs`, as an idle keep-alive connection is.
#[tokio::test]
async fn silent_and_idle_connections_give_their_place_back() {
    let app = TestApp::start_with(
        0,
        &[
            ("VOICED_HEADER_READ_TIMEOUT_SECS", "1"),
            ("VOICED_MAX_CONNECTIONS", "1"),
        ],
    )
    .await;
    let address = app.base.trim_start_matches("http://").to_owned();
    let mut rest = Vec::new();
    let mut silent = tokio::net::TcpStream::connect(&address).await.unwrap();
    let read = tokio::time::timeout(Duration::from_secs(60), silent.read_to_end(&mut rest)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "the silent connection is closed: {read:?}"
    );
    let mut idle = tokio::net::TcpStream::connect(&address).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    assert!(read_response(&mut idle).await.starts_with("HTTP/1.1 200"));
    let read = tokio::time::timeout(Duration::from_secs(60), idle.read_to_end(&mut rest)).await;
    assert!(
        matches!(read, Ok(Ok(0)) | Ok(Err(_))),
        "the idle connection is closed: {read:?}"
    );
    // The place is free again (the cap is 1): the next connection is served.
    assert_eq!(app.get("/healthz").send().await.unwrap().status(), 200);
    app.stop().await;
}
