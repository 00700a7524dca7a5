//! The playground's live microphone panel, `GET /console/playground/listen` (issue 38 item 5),
//! over a real socket: a signed-in account without a plan streams real speech and gets interims
//! and finals, stored as one `app` capture in its history and metered as free use; only the
//! console's own page may open it (session cookie, `Origin`, CSRF token; a key does not, and the
//! cookie does not open `/v1/listen`); the free transcription minutes cut a session and then
//! refuse one.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::{self, Message};
use voiced::domain::{Plan, Scope};

use crate::asr;
use crate::common::browser::{Browser, csrf_of};
use crate::common::{TestApp, fixtures};

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

const BECKETT: &str = "Ever tried. Ever failed. No matter. Try again. Fail again. Fail better.";
const FOX: &str = "The quick brown fox jumps over the lazy dog near the quiet river bank.";
/// One long utterance (about 10 s without a pause): interims of it come back while it is said,
/// however long a recognition pass takes on a busy machine.
const LONG: &str = "The quick brown fox jumps over the lazy dog near the quiet river bank, and then it runs across the wide green field toward the old wooden barn, where the farmer keeps his horses and his cows.";
const PATH: &str = "/console/playground/listen";

async fn connect(
    app: &TestApp,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<(Socket, tungstenite::handshake::client::Response), tungstenite::Error> {
    let url = format!("{}{path}", app.base.replacen("http", "ws", 1));
    let mut request = url.into_client_request().unwrap();
    for (name, value) in headers {
        request.headers_mut().insert(
            tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            value.parse().unwrap(),
        );
    }
    tokio_tungstenite::connect_async(request).await
}

/// A refused upgrade's status and `Location`.
async fn refused(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> (u16, Option<String>) {
    match connect(app, path, headers).await {
        Ok(_) => panic!("the upgrade to {path} was accepted"),
        Err(tungstenite::Error::Http(response)) => (
            response.status().as_u16(),
            response
                .headers()
                .get("location")
                .map(|l| l.to_str().unwrap().to_owned()),
        ),
        Err(other) => panic!("{other}"),
    }
}

fn pcm16(samples: &[f32]) -> Vec<u8> {
    samples
        .iter()
        .flat_map(|s| ((s.clamp(-1.0, 1.0) * 32767.0) as i16).to_le_bytes())
        .collect()
}

/// Every text message until the server closes, and its close frame.
async fn drain(
    stream: &mut futures_util::stream::SplitStream<Socket>,
) -> (Vec<Value>, Option<(u16, String)>) {
    let mut messages = Vec::new();
    let mut close = None;
    while let Some(Ok(message)) = tokio::time::timeout(Duration::from_secs(120), stream.next())
        .await
        .expect("the session answers")
    {
        match message {
            Message::Text(text) => messages.push(serde_json::from_str(text.as_str()).unwrap()),
            Message::Close(frame) => {
                close = frame.map(|f| (u16::from(f.code), f.reason.to_string()));
            }
            _ => {}
        }
    }
    (messages, close)
}

fn of_type<'a>(messages: &'a [Value], kind: &str) -> Vec<&'a Value> {
    messages.iter().filter(|m| m["type"] == kind).collect()
}

/// A signed-up account (no plan), its session cookie and the playground's CSRF token.
async fn signed_up(app: &TestApp, email: &str) -> (Browser, String, String) {
    let mut browser = Browser::new(app);
    assert_eq!(browser.sign_up(email).await.status, 303);
    let page = browser.get("/console/playground").await;
    assert!(page.body.contains("id=\"live-toggle\""), "{}", page.body);
    let token = csrf_of(&page.body);
    let account = fixtures::account_id(app, email).await;
    (browser, token, account)
}

#[tokio::test]
async fn a_free_account_listens_live_and_its_capture_is_in_its_history() {
    let app = TestApp::start_self_addressed(&[]).await;
    // The recogniser loads its model on its first job: load it (another account's) first, so
    // that the first interim is not lost to the loading.
    let (_, secret) = app.pro_user().await;
    let warm = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        std::fs::read(asr::espeak_wav("en-us", "Warm up.")).unwrap(),
    );
    assert_eq!(app.transcribe(&secret, &warm).await.0, 200);
    let (mut browser, token, account) = signed_up(&app, "live@example.com").await;
    let cookie = browser.cookie.clone().unwrap();
    let (socket, _) = connect(
        &app,
        &format!("{PATH}?csrf_token={token}"),
        &[("cookie", &cookie), ("origin", &app.base)],
    )
    .await
    .expect("upgrade");
    let (mut sink, mut stream) = socket.split();
    let ready: Value = match stream.next().await.unwrap().unwrap() {
        Message::Text(text) => serde_json::from_str(text.as_str()).unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(ready["type"], "ready", "{ready}");
    assert_eq!(ready["sample_rate"], 16_000);
    let session_id = ready["session_id"].as_str().unwrap().to_owned();

    // A long sentence, a pause, the Beckett clip (short phrases with pauses), 1.5 s of
    // silence; at real time, in 100 ms frames as the page's worklet sends them.
    let mut audio = asr::espeak("en-us", LONG);
    audio.extend(vec![0.0; 16_000]);
    audio.extend(asr::beckett());
    audio.extend(vec![0.0; 24_000]);
    let seconds = audio.len() as f64 / 16_000.0;
    let started = Instant::now();
    let sender = tokio::spawn(async move {
        for (n, frame) in audio.chunks(1600).enumerate() {
            tokio::time::sleep_until((started + Duration::from_millis(100 * n as u64)).into())
                .await;
            sink.send(Message::Binary(pcm16(frame).into()))
                .await
                .unwrap();
        }
        sink.send(Message::Text(r#"{"type":"stop"}"#.into()))
            .await
            .unwrap();
        sink
    });
    let (messages, close) = drain(&mut stream).await;
    drop(sender.await.unwrap());

    let interims = of_type(&messages, "interim");
    let finals = of_type(&messages, "final");
    assert!(
        !of_type(&messages, "speech_started").is_empty(),
        "{messages:?}"
    );
    assert!(!interims.is_empty(), "no interim: {messages:?}");
    assert!(
        finals.len() >= 2,
        "the pauses settle utterances: {messages:?}"
    );
    assert!(
        finals.iter().any(|m| m["reason"] == "pause"),
        "{messages:?}"
    );
    let said: Vec<&str> = finals
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .filter(|t| !t.is_empty())
        .collect();
    let said = said.join(" ");
    let wer = asr::wer(&format!("{LONG} {BECKETT}"), &said);
    assert!(wer <= 0.2, "WER {wer}: {said}");
    assert!(
        finals
            .iter()
            .any(|m| !m["words"].as_array().unwrap().is_empty()),
        "finals carry their words: {messages:?}"
    );
    let ended = of_type(&messages, "ended");
    assert_eq!(ended.len(), 1, "{messages:?}");
    assert_eq!(ended[0]["reason"], "stopped");
    assert_eq!(ended[0]["capture_id"], session_id.as_str());
    assert!(ended[0].get("code").is_none(), "{}", ended[0]);
    assert!((ended[0]["duration"].as_f64().unwrap() - seconds).abs() < 0.1);
    assert_eq!(close.map(|(code, _)| code), Some(1000));

    // One capture of the app, in the console's history, metered as free use.
    let captures = fixtures::captures_of(&app, &account).await;
    assert_eq!(captures.len(), 1);
    assert_eq!(
        (captures[0].id.as_str(), captures[0].source.as_str()),
        (session_id.as_str(), "app")
    );
    let history = browser.get("/console/history").await;
    assert!(
        history
            .body
            .contains(&format!("/console/history/captures/{session_id}/delete")),
        "{}",
        history.body
    );
    let [(metered, free)] = fixtures::transcription_ledger_of(&app, &account).await[..] else {
        panic!("one metered transcription")
    };
    assert!(free);
    assert!(
        (metered as f64 / 1000.0 - seconds).abs() < 0.1,
        "{metered} ms"
    );
    app.stop().await;
}

#[tokio::test]
async fn only_the_consoles_own_page_opens_the_live_socket() {
    let app = TestApp::start_self_addressed(&[]).await;
    let (browser, token, account) = signed_up(&app, "guarded@example.com").await;
    let cookie = browser.cookie.clone().unwrap();
    let origin = app.base.as_str();
    let with_token = format!("{PATH}?csrf_token={token}");

    // The CSRF token: missing, empty or another's is a 403 before any upgrade.
    for path in [
        PATH.to_owned(),
        format!("{PATH}?csrf_token="),
        format!("{PATH}?csrf_token=not-the-token"),
    ] {
        let (status, _) = refused(&app, &path, &[("cookie", &cookie), ("origin", origin)]).await;
        assert_eq!(status, 403, "{path}");
    }
    // Another site's page (the cookie rides along on its upgrade), or no Origin at all.
    for headers in [
        vec![
            ("cookie", cookie.as_str()),
            ("origin", "http://evil.example"),
        ],
        vec![("cookie", cookie.as_str())],
    ] {
        let (status, _) = refused(&app, &with_token, &headers).await;
        assert_eq!(status, 403, "{headers:?}");
    }
    // A key is not a console session, whatever its plan: the sign-in page.
    fixtures::set_plan(&app, &account, Plan::Pro).await;
    let (_, key) = app.key(&account, &Scope::ALL).await;
    let bearer = format!("Bearer {key}");
    let (status, location) = refused(
        &app,
        &with_token,
        &[("authorization", &bearer), ("origin", origin)],
    )
    .await;
    assert_eq!(
        (status, location.as_deref()),
        (303, Some("/console/sign-in"))
    );
    // The cookie never authenticates anything under /v1.
    let (status, _) = refused(
        &app,
        "/v1/listen?encoding=linear16&sample_rate=16000",
        &[("cookie", &cookie), ("origin", origin)],
    )
    .await;
    assert_eq!(status, 401);
    assert!(fixtures::captures_of(&app, &account).await.is_empty());

    // The console's own page opens it; a session stopped before any audio stores nothing.
    let (socket, _) = connect(
        &app,
        &with_token,
        &[("cookie", &cookie), ("origin", origin)],
    )
    .await
    .expect("upgrade");
    let (mut sink, mut stream) = socket.split();
    sink.send(Message::Text(r#"{"type":"stop"}"#.into()))
        .await
        .unwrap();
    let (messages, _) = drain(&mut stream).await;
    assert_eq!(messages[0]["type"], "ready", "{messages:?}");
    let ended = of_type(&messages, "ended");
    assert_eq!(ended.len(), 1, "{messages:?}");
    assert!(ended[0]["capture_id"].is_null(), "{}", ended[0]);
    assert!(fixtures::captures_of(&app, &account).await.is_empty());
    app.stop().await;
}

#[tokio::test]
async fn the_free_minutes_end_a_live_session_and_then_refuse_one() {
    let app =
        TestApp::start_self_addressed(&[("VOICED_APP_FREE_TRANSCRIPTION_MINUTES", "1")]).await;
    let (browser, token, account) = signed_up(&app, "frugal@example.com").await;
    let cookie = browser.cookie.clone().unwrap();
    let headers = [("cookie", cookie.as_str()), ("origin", app.base.as_str())];
    let path = format!("{PATH}?csrf_token={token}");
    // 3 s of the free minute are left.
    fixtures::used_free_transcription(&app, &account, 57_000).await;

    let (socket, _) = connect(&app, &path, &headers).await.expect("upgrade");
    let (mut sink, mut stream) = socket.split();
    // Faster than real time (the session paces it); more than the 3 s that are left.
    let mut audio = asr::espeak("en-us", FOX);
    audio.extend(vec![0.0; 8_000]);
    audio.extend(asr::beckett());
    assert!(audio.len() > 6 * 16_000);
    let sender = tokio::spawn(async move {
        for frame in audio.chunks(1600) {
            // The server may already have ended the session.
            if sink
                .send(Message::Binary(pcm16(frame).into()))
                .await
                .is_err()
            {
                break;
            }
        }
        sink
    });
    let (messages, close) = drain(&mut stream).await;
    drop(sender.await.unwrap());
    let ended = of_type(&messages, "ended");
    assert_eq!(ended.len(), 1, "{messages:?}");
    let ended = ended[0];
    assert_eq!(ended["reason"], "free_minutes_used", "{ended}");
    assert_eq!(ended["code"], "quota_exhausted", "{ended}");
    assert!(
        ended["detail"]
            .as_str()
            .unwrap()
            .contains("free transcription minutes"),
        "{ended}"
    );
    assert_eq!(close.map(|(code, _)| code), Some(1008));
    // What was said within the 3 s is kept: the finals, one capture, metered up to the minute.
    let said: Vec<&str> = of_type(&messages, "final")
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    let said = said.join(" ").to_lowercase();
    assert!(said.contains("quick brown"), "{messages:?}");
    assert!(!said.contains("fail"), "nothing past the minute: {said}");
    let duration = ended["duration"].as_f64().unwrap();
    assert!((2.9..=3.0).contains(&duration), "{duration}");
    let capture_id = ended["capture_id"].as_str().unwrap();
    let captures = fixtures::captures_of(&app, &account).await;
    assert_eq!(captures.len(), 1);
    assert_eq!(captures[0].id, capture_id);
    let ledger = fixtures::transcription_ledger_of(&app, &account).await;
    let used: i64 = ledger.iter().map(|(ms, _)| ms).sum();
    assert!((59_900..=60_000).contains(&used), "{ledger:?}");

    // Nothing left: refused at the start with the file transcription's code, nothing stored.
    let (socket, _) = connect(&app, &path, &headers).await.expect("upgrade");
    let (_, mut stream) = socket.split();
    let (messages, close) = drain(&mut stream).await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(
        (
            messages[0]["type"].as_str(),
            messages[0]["status"].as_u64(),
            messages[0]["code"].as_str()
        ),
        (Some("error"), Some(429), Some("quota_exhausted")),
        "{messages:?}"
    );
    assert_eq!(close.map(|(code, _)| code), Some(4429));
    assert_eq!(fixtures::captures_of(&app, &account).await.len(), 1);
    app.stop().await;
}
