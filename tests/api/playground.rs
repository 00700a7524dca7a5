//! The console's playground (issue 30 items 1 and 2) over real HTTP: speech through the core
//! from the signed-in session (no key), its page until the audio plays, and a clip transcribed
//! into a capture with `source: "app"`; an account without a plan is refused as on the API.

use std::time::Duration;

use crate::asr;
use crate::common::browser::{Browser, csrf_of};
use crate::common::fixtures;
use crate::common::{TestApp, poll_until};
use voiced::domain::{EngineId, Plan};

async fn account_of(app: &TestApp, email: &str) -> String {
    fixtures::account_id(app, email).await
}

fn attribute<'a>(html: &'a str, marker: &str) -> &'a str {
    let start = html
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} in {html}"))
        + marker.len();
    &html[start..start + html[start..].find('"').unwrap()]
}

/// A multipart body with `fields` and one file part `audio`.
fn multipart(boundary: &str, fields: &[(&str, &str)], audio: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"clip.wav\"\r\nContent-Type: audio/wav\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(audio);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    body
}

#[tokio::test]
async fn the_playground_speaks_and_transcribes_through_the_core() {
    let app = TestApp::start_with_workers(1).await;
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_up("player@example.com").await.status, 303);
    let account = account_of(&app, "player@example.com").await;
    app.voice(&account, "heart", EngineId::Kokoro, "af_heart")
        .await;

    // Without a plan: the playground's free minutes (app_free_minutes, 10 by default), and
    // nothing on the API.
    let page = browser.get("/console/playground").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("free minutes"), "{}", page.body);
    let free = browser
        .submit(
            "/console/playground",
            "/console/playground",
            &[("voice", "heart"), ("text", "Free words.")],
        )
        .await;
    assert_eq!(free.status, 303, "{}", free.body);
    let (_, key) = app
        .key(&account, &[voiced::domain::Scope::VoiceGenerate])
        .await;
    let (status, problem) = app
        .speak(
            &key,
            serde_json::json!({"text": "Hi.", "voice_name": "heart"}),
        )
        .await;
    assert_eq!(
        (status, problem["code"].as_str()),
        (403, Some("pro_plan_required"))
    );
    // The free minutes run out: the page says so, with quota_exhausted's meaning.
    let voice = fixtures::voices_of(&app, &account).await[0].id.clone();
    app.charge(&account, None, &voice, 10 * 60_000).await;
    let spent = browser
        .submit(
            "/console/playground",
            "/console/playground",
            &[("voice", "heart"), ("text", "One more.")],
        )
        .await;
    assert_eq!(spent.status, 429, "{}", spent.body);
    assert!(
        spent
            .body
            .contains("free minutes in the playground are used up"),
        "{}",
        spent.body
    );
    let usage = browser.get("/console/usage").await;
    assert!(usage.body.contains("free in the"), "{}", usage.body);
    fixtures::set_plan(&app, &account, Plan::Pro).await;

    // A bad form shows the reason and starts nothing.
    let refused = browser
        .submit(
            "/console/playground",
            "/console/playground",
            &[("voice", "heart"), ("text", "Hi."), ("seed", "minus one")],
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.body);
    assert!(refused.body.contains("seed"), "{}", refused.body);

    let started = browser
        .submit(
            "/console/playground",
            "/console/playground",
            &[
                ("voice", "heart"),
                ("text", "Hello from the playground."),
                ("seed", "7"),
                ("timestamps", "on"),
            ],
        )
        .await;
    assert_eq!(started.status, 303, "{}", started.body);
    let location = started.headers["location"].to_str().unwrap().to_owned();
    assert!(
        location.starts_with("/console/playground?generation=gen_"),
        "{location}"
    );
    let done = poll_until(
        Duration::from_secs(300),
        "the generation's page to show audio",
        || {
            let request = browser_get(&app, &browser, &location);
            async move {
                let body = request.await;
                (!body.contains("data-status=\"generating\"")).then_some(body)
            }
        },
    )
    .await;
    assert!(done.contains("data-status=\"completed\""), "{done}");
    let audio = attribute(
        &done,
        "<audio id=\"playground-audio\" controls autoplay src=\"",
    )
    .replace("&amp;", "&");
    // The owner's route, with the session (no signed link: that one needs a plan).
    assert!(audio.starts_with("/console/audio/gen_"), "{audio}");
    let anonymous = app.get(&audio).send().await.unwrap();
    assert_eq!(anonymous.url().path(), "/console/sign-in", "signed in only");
    let response = app
        .get(&audio)
        .header("cookie", browser.cookie.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "audio/mpeg");
    assert!(response.bytes().await.unwrap().len() > 5_000);
    assert!(done.contains("data-start="), "word timings: {done}");
    assert!(done.contains(">playground</span>"), "{done}");
    // The same metering as the API, without a key.
    let ledger = fixtures::ledger_of(&app, &account).await;
    let charged = ledger.len();
    let keyless = ledger.iter().filter(|row| row.api_key_id.is_none()).count();
    // The free generation, the charge that used the free minutes up, and this one.
    assert_eq!((charged, keyless), (3, 3));

    // A clip uploaded as a file becomes a capture of the app.
    let page = browser.get("/console/playground").await;
    let token = csrf_of(&page.body);
    let wav = std::fs::read(asr::espeak_wav("en-us", "Transcribe me in the playground.")).unwrap();
    let boundary = "----voiced-playground";
    let request = reqwest::Client::new()
        .post(format!("{}/console/playground/transcribe", app.base))
        .header(
            reqwest::header::CONTENT_TYPE,
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(multipart(boundary, &[("csrf_token", &token)], &wav));
    let heard = browser.send(request).await;
    assert_eq!(heard.status, 200, "{}", heard.body);
    assert!(
        heard.body.to_lowercase().contains("playground"),
        "{}",
        heard.body
    );
    let captures = fixtures::captures_of(&app, &account).await;
    let sources: Vec<&str> = captures.iter().map(|c| c.source.as_str()).collect();
    assert_eq!(sources, ["app"]);

    // The history page deletes a generation's audio and a capture (issue 30 item 4), the
    // owner's only.
    let generation = location.rsplit('=').next().unwrap().to_owned();
    let capture = captures[0].id.clone();
    let mut intruder = Browser::new(&app);
    assert_eq!(intruder.sign_up("other@example.com").await.status, 303);
    let delete_capture = format!("/console/history/captures/{capture}/delete");
    let delete_audio = format!("/console/history/generations/{generation}/delete-audio");
    assert_eq!(
        intruder
            .submit("/console/history", &delete_capture, &[])
            .await
            .status,
        404
    );
    assert_eq!(
        intruder
            .submit("/console/history", &delete_audio, &[])
            .await
            .status,
        404
    );
    let history = browser.get("/console/history").await;
    assert!(history.body.contains(&delete_audio), "{}", history.body);
    assert_eq!(
        browser
            .submit("/console/history", &delete_audio, &[])
            .await
            .status,
        303
    );
    assert_eq!(
        browser
            .submit("/console/history", &delete_capture, &[])
            .await
            .status,
        303
    );
    let has_audio = fixtures::generation(&app, &generation)
        .await
        .audio_key
        .is_some();
    let captures = fixtures::captures_of(&app, &account).await.len();
    assert_eq!((has_audio, captures), (false, 0));
    app.stop().await;
}

/// The page at `path` with the browser's session cookie (a fresh request each poll).
fn browser_get(
    app: &TestApp,
    browser: &Browser,
    path: &str,
) -> impl std::future::Future<Output = String> + use<> {
    let mut request = reqwest::Client::new().get(format!("{}{path}", app.base));
    if let Some(cookie) = browser.cookie.clone() {
        request = request.header(reqwest::header::COOKIE, cookie);
    }
    async move { request.send().await.unwrap().text().await.unwrap() }
}

/// `multipart` with the file part first and the token after it.
fn file_before_token(boundary: &str, token: &str, audio: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"audio\"; filename=\"clip.wav\"\r\nContent-Type: audio/wav\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(audio);
    body.extend_from_slice(
        format!(
            "\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"csrf_token\"\r\n\r\n{token}\r\n--{boundary}--\r\n"
        )
        .as_bytes(),
    );
    body
}

async fn upload(
    browser: &mut Browser,
    app: &TestApp,
    body: Vec<u8>,
) -> crate::common::browser::Page {
    let request = reqwest::Client::new()
        .post(format!("{}/console/playground/transcribe", app.base))
        .header(
            reqwest::header::CONTENT_TYPE,
            "multipart/form-data; boundary=----voiced-free",
        )
        .body(body);
    browser.send(request).await
}

async fn captures_of(app: &TestApp, account: &str) -> usize {
    fixtures::captures_of(app, account).await.len()
}

/// Issue 36 items 2 and 3: the playground's uploads are admitted before they are read (the
/// account's places first, so a held place answers 429 even to a wrong token), the CSRF token
/// must come before the file, and an account without a plan transcribes one clip at a time, off
/// the wide recogniser, metered against its free transcription minutes (the ledger keeps what a
/// deleted capture used).
#[tokio::test]
async fn free_transcription_is_admitted_first_metered_and_bounded() {
    let app = TestApp::start_with(0, &[("VOICED_APP_FREE_TRANSCRIPTION_MINUTES", "1")]).await;
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_up("listener@example.com").await.status, 303);
    let account = account_of(&app, "listener@example.com").await;
    let token = csrf_of(&browser.get("/console/playground").await.body);
    let wav = std::fs::read(asr::espeak_wav("en-us", "Free words, heard once.")).unwrap();
    let boundary = "----voiced-free";

    // The token after the file: the file is never read.
    let refused = upload(
        &mut browser,
        &app,
        file_before_token(boundary, &token, &wav),
    )
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);

    // The account's one free place is taken: 429 before the form is looked at, token or not.
    let held = app.asr.try_ticket(&account, true).expect("the free place");
    assert!(app.asr.try_ticket(&account, true).is_err(), "one at a time");
    let busy = upload(
        &mut browser,
        &app,
        multipart(boundary, &[("csrf_token", "not the token")], &wav),
    )
    .await;
    assert_eq!(busy.status, 429, "{}", busy.body);
    assert!(
        busy.retry_after.is_some(),
        "a busy page says when to come back"
    );
    assert!(busy.body.contains("1 transcription"), "{}", busy.body);
    drop(held);
    assert_eq!(captures_of(&app, &account).await, 0);

    // Heard, metered as free use, never on the wide recogniser.
    let widened = app.asr.widened();
    // The token may travel in the X-CSRF-Token header instead of a form part.
    let request = reqwest::Client::new()
        .post(format!("{}/console/playground/transcribe", app.base))
        .header(
            reqwest::header::CONTENT_TYPE,
            format!("multipart/form-data; boundary={boundary}"),
        )
        .header("x-csrf-token", &token)
        .body(multipart(boundary, &[], &wav));
    let heard = browser.send(request).await;
    assert_eq!(heard.status, 200, "{}", heard.body);
    assert_eq!(app.asr.widened(), widened, "free use never widens");
    let [(metered, free)] = fixtures::transcription_ledger_of(&app, &account).await[..] else {
        panic!("one metered transcription")
    };
    assert!(free);
    assert!(metered > 1000, "{metered} ms");

    // Deleting the capture gives nothing back; the minute runs out and the page says so.
    fixtures::used_free_transcription(&app, &account, 60_000).await;
    let spent = upload(
        &mut browser,
        &app,
        multipart(boundary, &[("csrf_token", &token)], &wav),
    )
    .await;
    assert_eq!(spent.status, 429, "{}", spent.body);
    assert!(
        spent.body.contains("free transcription minutes"),
        "{}",
        spent.body
    );
    assert_eq!(captures_of(&app, &account).await, 1);
    app.stop().await;
}

/// Issue 36 items 3 and 8: an account without a plan plays the audio it made in the
/// playground (the console's own route; the signed `/v1/audio` link needs a plan), nobody
/// else does, and its free minutes must hold a request's whole estimate.
#[tokio::test]
async fn free_speech_is_played_by_its_owner_and_must_fit_the_free_minutes() {
    let app = TestApp::start_with(1, &[("VOICED_APP_FREE_MINUTES", "1")]).await;
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_up("speaker@example.com").await.status, 303);
    let account = account_of(&app, "speaker@example.com").await;
    app.voice(&account, "heart", EngineId::Kokoro, "af_heart")
        .await;
    // About two minutes of speech never starts on one free minute.
    let long = "The free minutes of the playground are not enough for this paragraph. ".repeat(30);
    let refused = browser
        .submit(
            "/console/playground",
            "/console/playground",
            &[("voice", "heart"), ("text", long.as_str())],
        )
        .await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!(refused.body.contains("free minutes"), "{}", refused.body);
    assert_eq!(app.generation_count().await, 0);

    let started = browser
        .submit(
            "/console/playground",
            "/console/playground",
            &[("voice", "heart"), ("text", "Mine to hear.")],
        )
        .await;
    assert_eq!(started.status, 303, "{}", started.body);
    let location = started.location.unwrap();
    let generation = location.rsplit('=').next().unwrap().to_owned();
    poll_until(Duration::from_secs(300), "the free speech", || {
        let (app, generation) = (&app, generation.clone());
        async move {
            let status = fixtures::generation(app, &generation).await.status;
            (status == "completed").then_some(())
        }
    })
    .await;
    let page = browser.get(&location).await;
    assert!(page.body.contains("/console/audio/"), "{}", page.body);
    assert!(!page.body.contains("/v1/audio/"), "{}", page.body);
    let audio = browser.get(&format!("/console/audio/{generation}")).await;
    assert_eq!(audio.status, 200);
    assert_eq!(audio.content_type, "audio/mpeg");
    // Another account's session: not found.
    let mut other = Browser::new(&app);
    assert_eq!(other.sign_up("other@example.com").await.status, 303);
    let theirs = other.get(&format!("/console/audio/{generation}")).await;
    assert_eq!(theirs.status, 404);
    app.stop().await;
}

/// Issue 36 item 3: the console's forms count against the account's own write quota (the
/// limiter's write policy, 600 an hour, under `console:<account id>`), whatever they do.
#[tokio::test]
async fn console_forms_are_rate_limited_per_account() {
    let app = TestApp::start().await; // a still limiter clock: nothing refills
    let mut browser = Browser::new(&app);
    assert_eq!(browser.sign_up("clicker@example.com").await.status, 303);
    let mut refused = None;
    for sent in 1..=700 {
        let page = browser
            .post(
                "/console/pronunciations",
                &[("text", "x"), ("csrf_token", "stale")],
            )
            .await;
        if page.status == 429 {
            refused = Some((sent, page));
            break;
        }
        assert_eq!(page.status, 403, "{}", page.body);
    }
    let (sent, page) = refused.expect("refused within 700 forms");
    assert_eq!(sent, 601, "the 601st form of the hour");
    assert!(page.retry_after.is_some());
    // Another account is not affected.
    let mut other = Browser::new(&app);
    assert_eq!(other.sign_up("calm@example.com").await.status, 303);
    let page = other
        .post(
            "/console/pronunciations",
            &[("text", "x"), ("csrf_token", "stale")],
        )
        .await;
    assert_eq!(page.status, 403, "{}", page.body);
    app.stop().await;
}
