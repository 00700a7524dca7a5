//! The console's playground (issue 30 items 1 and 2) over real HTTP: speech through the core
//! from the signed-in session (no key), its page until the audio plays, and a clip transcribed
//! into a capture with `source: "app"`; an account without a plan is refused as on the API.

use std::time::Duration;

use crate::asr;
use crate::common::browser::{Browser, csrf_of};
use crate::common::{TestApp, poll_until};
use voiced::domain::{EngineId, Plan};

async fn account_of(app: &TestApp, email: &str) -> String {
    voiced::store::accounts::find_id(&app.pool, email)
        .await
        .unwrap()
        .expect("account exists")
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
    let voice = voiced::store::voices::list(&app.pool, &account)
        .await
        .unwrap()[0]
        .id
        .clone();
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
    voiced::store::accounts::set_plan(&app.pool, &account, Plan::Pro)
        .await
        .unwrap();

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
    let response = app.get(&audio).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "audio/mpeg");
    assert!(response.bytes().await.unwrap().len() > 5_000);
    assert!(done.contains("data-start="), "word timings: {done}");
    assert!(done.contains(">playground</span>"), "{done}");
    // The same metering as the API, without a key.
    let (charged, keyless): (i64, i64) = sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE api_key_id IS NULL) FROM usage_ledger
         WHERE account_id = $1",
    )
    .bind(&account)
    .fetch_one(&app.pool)
    .await
    .unwrap();
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
    let source: String = sqlx::query_scalar("SELECT source FROM captures WHERE account_id = $1")
        .bind(&account)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(source, "app");

    // The history page deletes a generation's audio and a capture (issue 30 item 4), the
    // owner's only.
    let generation = location.rsplit('=').next().unwrap().to_owned();
    let capture: String = sqlx::query_scalar("SELECT id FROM captures WHERE account_id = $1")
        .bind(&account)
        .fetch_one(&app.pool)
        .await
        .unwrap();
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
    let (has_audio, captures): (bool, i64) = sqlx::query_as(
        "SELECT audio_key IS NOT NULL, (SELECT count(*) FROM captures WHERE account_id = $2)
         FROM generations WHERE id = $1",
    )
    .bind(&generation)
    .bind(&account)
    .fetch_one(&app.pool)
    .await
    .unwrap();
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
