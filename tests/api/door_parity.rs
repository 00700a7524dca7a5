//! The door-parity matrix (issue 23, item 2): the same refusal through every door that can
//! express it answers the same stable `code` and status, each door in its own envelope
//! (problem+json on `/v1`, OpenAI's `{"error": …}` on `/v1/audio/speech`, an HTTP problem
//! document or a tool error carrying the problem's members on `/mcp`), and changes nothing.
//!
//! A rule added to one door and not to another fails here. The console's playground (issue 30)
//! is two more speech doors, signed in by a session rather than a key: its form (an HTML page
//! whose error carries the code as `data-code`) and its streamed speech (a problem document).
//! They join the rows that a session can express; a credential's rows (keys, tokens, ceilings)
//! have no session, and an account without a plan speaks there on the free minutes (its own
//! row).

use crate::common;

use std::time::Duration;

use crate::common::client::mcp_tools_call;
use crate::common::fixtures;
use crate::common::{TestApp, json};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use voiced::domain::{EngineId, Plan, Scope};

/// The doors a case is sent through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Door {
    /// `POST /v1/speech`
    Speech,
    /// `POST /v1/audio/speech` (OpenAI's dialect)
    OpenAiSpeech,
    /// `POST /v1/transcriptions`
    Transcriptions,
    /// `/mcp` tool `speak`
    McpSpeak,
    /// `/mcp` tool `transcribe`
    McpTranscribe,
    /// `POST /console/playground` (the form), with the account's console session
    ConsoleSpeak,
    /// `POST /console/playground/stream` (the page's streamed speech), with the session
    ConsoleStream,
    /// `GET /v1/listen` upgraded to a WebSocket (Deepgram's live dialect): refused at the
    /// upgrade, in Deepgram's envelope around the problem document
    Listen,
    /// `POST /v1/listen` (Deepgram's pre-recorded call: the audio as the body)
    ListenFile,
    /// `GET /v1/realtime?intent=transcription` upgraded (OpenAI's realtime transcription):
    /// refused at the upgrade in OpenAI's envelope
    Realtime,
    /// `GET /v1/text-to-speech/{voice}/multi-stream-input` upgraded (ElevenLabs' socket):
    /// refused at the upgrade in ElevenLabs' envelope
    ElevenSocket,
    /// `POST /v1/text-to-speech/{voice}` (ElevenLabs' REST speech)
    ElevenRest,
    /// `GET /tts/websocket` upgraded (Cartesia's socket): refused at the upgrade in Cartesia's
    /// envelope
    Cartesia,
}

const SPEECH_DOORS: &[Door] = &[
    Door::Speech,
    Door::OpenAiSpeech,
    Door::McpSpeak,
    Door::ElevenRest,
];
/// The speech doors and the playground's, for rows whose account has a console session.
const SPEECH_AND_CONSOLE_DOORS: &[Door] = &[
    Door::Speech,
    Door::OpenAiSpeech,
    Door::McpSpeak,
    Door::ElevenRest,
    Door::ConsoleSpeak,
    Door::ConsoleStream,
];
/// Speech doors whose body can carry a `temperature` (ElevenLabs' has none).
const TEMPERATURE_DOORS: &[Door] = &[
    Door::Speech,
    Door::OpenAiSpeech,
    Door::McpSpeak,
    Door::ConsoleSpeak,
    Door::ConsoleStream,
];
/// Speech doors that refuse an unknown voice before anything is admitted, the socket included.
const VOICE_DOORS: &[Door] = &[
    Door::Speech,
    Door::OpenAiSpeech,
    Door::McpSpeak,
    Door::ElevenRest,
    Door::ElevenSocket,
    Door::ConsoleSpeak,
    Door::ConsoleStream,
];
const CONSOLE_DOORS: &[Door] = &[Door::ConsoleSpeak, Door::ConsoleStream];
const TRANSCRIPTION_DOORS: &[Door] = &[Door::Transcriptions, Door::McpTranscribe, Door::ListenFile];
/// Every door a credential reaches, the live ones included.
const CREDENTIAL_DOORS: &[Door] = &[
    Door::Speech,
    Door::OpenAiSpeech,
    Door::Transcriptions,
    Door::McpSpeak,
    Door::McpTranscribe,
    Door::Listen,
    Door::ListenFile,
    Door::Realtime,
    Door::ElevenSocket,
    Door::ElevenRest,
    Door::Cartesia,
];
const ALL_DOORS: &[Door] = &[
    Door::Speech,
    Door::OpenAiSpeech,
    Door::Transcriptions,
    Door::McpSpeak,
    Door::McpTranscribe,
    Door::ListenFile,
];

/// What a case sends, beyond its credential.
#[derive(Clone, Default)]
struct Input {
    /// The voice named by the speech doors.
    voice: String,
    temperature: Option<f64>,
    /// A body past the door's limit.
    oversized: bool,
    /// The text the speech doors send (an ordinary sentence when `None`).
    text: Option<String>,
    /// The clip the transcription doors send (a valid tone when `None`).
    audio: Option<Vec<u8>>,
}

/// One row of the matrix.
struct Case {
    name: &'static str,
    credential: String,
    /// The account's console session (cookie header, CSRF token), for the console doors.
    session: Option<(String, String)>,
    input: Input,
    doors: &'static [Door],
    status: u16,
    code: &'static str,
}

/// What a door answered: the HTTP status and, from whichever envelope it used, the code and
/// the status the error states.
#[derive(Debug)]
struct Refusal {
    http_status: u16,
    status: u16,
    code: String,
}

#[tokio::test]
async fn every_door_refuses_the_same_input_with_the_same_code() {
    let app = TestApp::start_with(
        0,
        &[
            // One queued generation fills an account (the pending-cap row).
            ("VOICED_MAX_PENDING_PER_ACCOUNT", "1"),
            // The chatterbox engine is left out of this deployment (the engine row).
            ("VOICED_MODELS_DIR", &models_without_chatterbox()),
        ],
    )
    .await;
    let cases = cases(&app).await;
    let before = counts(&app).await;
    let mut failures = Vec::new();
    for case in &cases {
        for &door in case.doors {
            let refusal = match door {
                Door::ConsoleSpeak | Door::ConsoleStream => {
                    let session = case.session.as_ref().expect("a console row has a session");
                    send_console(&app, door, session, &case.input).await
                }
                Door::Listen => {
                    let (status, body) = crate::listen::refused(
                        &app,
                        "model=nova-3&encoding=linear16&sample_rate=16000",
                        &[("authorization", &format!("Token {}", case.credential))],
                    )
                    .await;
                    refusal(door, status, &body)
                }
                Door::ListenFile => send_listen_file(&app, &case.credential, &case.input).await,
                Door::Realtime => {
                    let (status, body) = crate::realtime::refused(
                        &app,
                        "intent=transcription&model=gpt-4o-mini-transcribe",
                        &[("authorization", &format!("Bearer {}", case.credential))],
                    )
                    .await;
                    refusal(door, status, &body)
                }
                Door::Cartesia => {
                    let (status, body) = crate::common::ws::refused(
                        &app,
                        "/tts/websocket?cartesia_version=2025-04-16",
                        // The SDK's header (an OAuth token is no `X-API-Key`).
                        &[("authorization", &format!("Bearer {}", case.credential))],
                    )
                    .await;
                    refusal(door, status, &body)
                }
                Door::ElevenSocket => {
                    let path = format!(
                        "/v1/text-to-speech/{}/multi-stream-input?model_id=eleven_turbo_v2_5",
                        case.input.voice
                    );
                    let (status, body) = crate::elevenlabs::refused(
                        &app,
                        &path,
                        &[("xi-api-key", &case.credential)],
                    )
                    .await;
                    refusal(door, status, &body)
                }
                _ => send(&app, door, &case.credential, &case.input).await,
            };
            if (refusal.status, refusal.code.as_str()) != (case.status, case.code) {
                failures.push(format!(
                    "{} through {door:?}: expected {} {}, got {} {} (HTTP {})",
                    case.name,
                    case.status,
                    case.code,
                    refusal.status,
                    refusal.code,
                    refusal.http_status
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "doors disagree:\n{}",
        failures.join("\n")
    );
    assert_eq!(
        counts(&app).await,
        before,
        "a refused request created a generation or a capture"
    );
    app.stop().await;
}

/// A models dir holding every installed model but chatterbox's (symbolic links to the real
/// one), so that a voice on `chatterbox` names an engine this deployment lacks.
fn models_without_chatterbox() -> String {
    let real = std::path::PathBuf::from(
        std::env::var("VOICED_MODELS_DIR")
            .unwrap_or_else(|_| format!("{}/.cache/voiced/models", env!("HOME"))),
    );
    let dir = std::env::temp_dir().join(format!("voiced-parity-models-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(&real).expect("the models dir") {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name.to_string_lossy().starts_with("chatterbox") {
            continue;
        }
        std::os::unix::fs::symlink(entry.path(), dir.join(&name)).unwrap();
    }
    dir.to_string_lossy().into_owned()
}

async fn cases(app: &TestApp) -> Vec<Case> {
    let normal = |voice: &str| Input {
        voice: voice.to_owned(),
        ..Input::default()
    };

    // An account for each row, each with a kokoro voice named "Mine".
    let paid = |plan| async move {
        let account = app.account(plan).await;
        app.voice(&account, "Mine", EngineId::Kokoro, "af_heart")
            .await;
        account
    };

    let free = paid(Plan::None).await;
    let (_, free_key) = app.key(&free, &Scope::ALL).await;

    let reader_account = paid(Plan::Pro).await;
    let (_, reader) = app.key(&reader_account, &[Scope::VoiceRead]).await;

    let revoked_account = paid(Plan::Pro).await;
    let (revoked_id, revoked) = app.key(&revoked_account, &Scope::ALL).await;
    fixtures::revoke_key(app, &revoked_id).await;

    let token_account = paid(Plan::Pro).await;
    let read_token = access_token(app, &token_account, &[Scope::VoiceRead]).await;

    let ceiling_account = paid(Plan::Pro).await;
    let (ceiling_id, ceiling_key) = app
        .key_with_ceiling(&ceiling_account, &Scope::ALL, Some(1))
        .await;
    charge(app, &ceiling_account, Some(&ceiling_id), 60_000).await;

    let spent_account = paid(Plan::Pro).await;
    let (_, spent_key) = app.key(&spent_account, &Scope::ALL).await;
    charge(app, &spent_account, None, 120 * 60_000).await;

    let busy_account = paid(Plan::Pro).await;
    let (_, busy_key) = app.key(&busy_account, &Scope::ALL).await;
    let queued = app
        .post("/v1/speech")
        .header("x-api-key", &busy_key)
        .json(&json!({"text": "Waiting in the queue.", "voice_name": "Mine"}))
        .send()
        .await
        .unwrap();
    assert_eq!(queued.status(), 202, "the pending-cap row's first request");

    let (owner, key) = app.pro_user().await;
    app.voice(&owner, "Mine", EngineId::Kokoro, "af_heart")
        .await;
    app.voice(&owner, "Absent", EngineId::Chatterbox, "default")
        .await;

    let spent_session = session_of(app, &spent_account).await;
    let busy_session = session_of(app, &busy_account).await;
    let owner_session = session_of(app, &owner).await;
    // An account without a plan whose free minutes in the playground are used.
    let free_spent = paid(Plan::None).await;
    charge(app, &free_spent, None, 10 * 60_000).await;
    let free_spent_session = session_of(app, &free_spent).await;

    let case = |name, credential: &str, input, doors, status, code| Case {
        name,
        credential: credential.to_owned(),
        session: None,
        input,
        doors,
        status,
        code,
    };
    let console_case = |session: &(String, String), mut case: Case| {
        case.session = Some(session.clone());
        case
    };
    vec![
        console_case(
            &free_spent_session,
            case(
                "free minutes used (playground)",
                "",
                normal("Mine"),
                CONSOLE_DOORS,
                429,
                "quota_exhausted",
            ),
        ),
        case(
            "no plan",
            &free_key,
            normal("Mine"),
            CREDENTIAL_DOORS,
            403,
            "pro_plan_required",
        ),
        case(
            "read-only key",
            &reader,
            normal("Mine"),
            CREDENTIAL_DOORS,
            403,
            "insufficient_scope",
        ),
        case(
            "revoked key",
            &revoked,
            normal("Mine"),
            CREDENTIAL_DOORS,
            401,
            "invalid_api_key",
        ),
        case(
            "OAuth token without voice:generate",
            &read_token,
            normal("Mine"),
            CREDENTIAL_DOORS,
            403,
            "insufficient_scope",
        ),
        case(
            "key ceiling reached",
            &ceiling_key,
            normal("Mine"),
            SPEECH_DOORS,
            429,
            "key_ceiling_exceeded",
        ),
        console_case(
            &spent_session,
            case(
                "plan allowance used",
                &spent_key,
                normal("Mine"),
                SPEECH_AND_CONSOLE_DOORS,
                429,
                "quota_exhausted",
            ),
        ),
        console_case(
            &busy_session,
            case(
                "pending cap reached",
                &busy_key,
                normal("Mine"),
                SPEECH_AND_CONSOLE_DOORS,
                429,
                "rate_limit_exceeded",
            ),
        ),
        case(
            "oversized body",
            &key,
            Input {
                oversized: true,
                ..normal("Mine")
            },
            ALL_DOORS,
            413,
            "payload_too_large",
        ),
        console_case(
            &owner_session,
            case(
                "unknown voice",
                &key,
                normal("Nobody"),
                VOICE_DOORS,
                400,
                "invalid_request",
            ),
        ),
        console_case(
            &owner_session,
            case(
                // PostgreSQL text cannot hold a NUL: refused before any statement, not a 500.
                "text with a NUL character",
                &key,
                Input {
                    text: Some("Parity \u{0} is a promise.".to_owned()),
                    ..normal("Mine")
                },
                SPEECH_AND_CONSOLE_DOORS,
                400,
                "invalid_request",
            ),
        ),
        console_case(
            &owner_session,
            case(
                // Issue 26: the inline pronunciation's IPA is the core's to check, on every door.
                "inline pronunciation no voice can say",
                &key,
                Input {
                    text: Some("Parity is a [promise](/p☃/).".to_owned()),
                    ..normal("Mine")
                },
                SPEECH_AND_CONSOLE_DOORS,
                400,
                "invalid_request",
            ),
        ),
        console_case(
            &owner_session,
            case(
                "engine not installed",
                &key,
                normal("Absent"),
                VOICE_DOORS,
                400,
                "invalid_request",
            ),
        ),
        console_case(
            &owner_session,
            case(
                "temperature on an engine without one",
                &key,
                Input {
                    temperature: Some(0.7),
                    ..normal("Mine")
                },
                TEMPERATURE_DOORS,
                400,
                "invalid_request",
            ),
        ),
        case(
            "hostile audio (a wav claiming 4 GHz)",
            &key,
            Input {
                audio: Some(wav_at(u32::MAX)),
                ..normal("Mine")
            },
            TRANSCRIPTION_DOORS,
            400,
            "invalid_request",
        ),
    ]
}

/// A live access token of a fresh authorization of `account` for both resources (`/v1` and
/// `/mcp`), holding `scopes`.
async fn access_token(app: &TestApp, account: &str, scopes: &[Scope]) -> String {
    fixtures::oauth_access_token(app, account, scopes).await
}

/// Charges `audio_ms` to the account (and the key, when given) on its first voice.
async fn charge(app: &TestApp, account: &str, key_id: Option<&str>, audio_ms: i64) {
    let voice = fixtures::voices_of(app, account).await[0].id.clone();
    app.charge(account, key_id, &voice, audio_ms).await;
}

/// Generations and captures in the database.
async fn counts(app: &TestApp) -> (i64, i64) {
    (
        fixtures::generation_count(app).await as i64,
        fixtures::captures(app).await.len() as i64,
    )
}

/// A short 16 kHz mono wav whose header claims `rate` samples a second.
fn wav_at(rate: u32) -> Vec<u8> {
    let mut wav = STANDARD.decode(common::tone_wav_base64()).unwrap();
    wav[24..28].copy_from_slice(&rate.to_le_bytes());
    wav
}

/// The text of an oversized speech body: past every speech door's 1 MiB body limit.
fn oversized_text() -> String {
    "a".repeat(2 * 1024 * 1024)
}

/// The base64 of an oversized upload: past the transcription doors' limit (25 MiB of audio).
fn oversized_audio() -> String {
    "A".repeat(voiced::audio::MAX_AUDIO_BYTES / 3 * 4 + 2 * 1024 * 1024)
}

/// Sends `input` through `door` with `credential`; the refusal as the door rendered it.
async fn send(app: &TestApp, door: Door, credential: &str, input: &Input) -> Refusal {
    let text = if input.oversized {
        oversized_text()
    } else {
        input
            .text
            .clone()
            .unwrap_or_else(|| "Parity is a promise.".to_owned())
    };
    let audio = if input.oversized {
        oversized_audio()
    } else {
        STANDARD.encode(
            input
                .audio
                .clone()
                .unwrap_or_else(|| STANDARD.decode(common::tone_wav_base64()).unwrap()),
        )
    };
    let mut speech = json!({"text": text, "voice_name": input.voice});
    let mut openai = json!({"model": "tts-1", "input": text, "voice": input.voice,
                            "response_format": "wav"});
    let mut speak = json!({"text": text, "voice": input.voice});
    if let Some(t) = input.temperature {
        for body in [&mut speech, &mut openai, &mut speak] {
            body["temperature"] = json!(t);
        }
    }
    let (path, body) = match door {
        Door::Speech => ("/v1/speech", speech),
        Door::OpenAiSpeech => ("/v1/audio/speech", openai),
        Door::Transcriptions => ("/v1/transcriptions", json!({"audio": audio})),
        Door::McpSpeak => ("/mcp", mcp_tools_call("speak", speak)),
        Door::McpTranscribe => (
            "/mcp",
            mcp_tools_call("transcribe", json!({"audio_base64": audio})),
        ),
        Door::ElevenRest => (
            "/v1/text-to-speech/{voice}",
            json!({"text": text, "model_id": "eleven_turbo_v2_5"}),
        ),
        Door::ConsoleSpeak
        | Door::ConsoleStream
        | Door::Listen
        | Door::ListenFile
        | Door::Realtime
        | Door::ElevenSocket
        | Door::Cartesia => {
            unreachable!("sent by their own functions")
        }
    };
    let path = path.replace("{voice}", &input.voice);
    let mut request = app
        .post(&path)
        .header("authorization", format!("Bearer {credential}"))
        .timeout(Duration::from_secs(60))
        .json(&body);
    if path == "/mcp" {
        request = request
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
    }
    let response = request
        .send()
        .await
        .unwrap_or_else(|e| panic!("{door:?}: {e}"));
    let http_status = response.status().as_u16();
    let (_, body) = json(response).await;
    refusal(door, http_status, &body)
}

/// Sends `input`'s clip as the body of Deepgram's pre-recorded call (oversized: past the
/// transcription doors' 25 MiB).
async fn send_listen_file(app: &TestApp, credential: &str, input: &Input) -> Refusal {
    let audio = if input.oversized {
        vec![0u8; voiced::audio::MAX_AUDIO_BYTES + 1024 * 1024]
    } else {
        input
            .audio
            .clone()
            .unwrap_or_else(|| STANDARD.decode(common::tone_wav_base64()).unwrap())
    };
    let response = app
        .post("/v1/listen?model=nova-3")
        .header("authorization", format!("Token {credential}"))
        .header("content-type", "audio/wav")
        .timeout(Duration::from_secs(60))
        .body(audio)
        .send()
        .await
        .unwrap_or_else(|e| panic!("ListenFile: {e}"));
    let http_status = response.status().as_u16();
    let (_, body) = json(response).await;
    refusal(Door::ListenFile, http_status, &body)
}

/// A console session of `account` (created without a password: one is set, then signed in).
async fn session_of(app: &TestApp, account: &str) -> (String, String) {
    fixtures::set_password(app, account, common::browser::PASSWORD).await;
    let mut browser = common::browser::Browser::new(app);
    let email = fixtures::stored_account(app, account).await.email;
    let signed_in = browser.sign_in(&email, common::browser::PASSWORD).await;
    assert_eq!(signed_in.status, 303, "{}", signed_in.body);
    let page = browser.get("/console/playground").await;
    assert_eq!(page.status, 200, "{}", page.body);
    (
        browser.cookie.clone().expect("a session cookie"),
        common::browser::csrf_of(&page.body),
    )
}

/// Sends `input` through a playground door with the account's session.
async fn send_console(
    app: &TestApp,
    door: Door,
    (cookie, csrf): &(String, String),
    input: &Input,
) -> Refusal {
    let text = input
        .text
        .clone()
        .unwrap_or_else(|| "Parity is a promise.".to_owned());
    let path = match door {
        Door::ConsoleSpeak => "/console/playground",
        _ => "/console/playground/stream",
    };
    let temperature = input.temperature.map(|t| t.to_string()).unwrap_or_default();
    let response = app
        .post(path)
        .header("cookie", cookie)
        .timeout(Duration::from_secs(60))
        .form(&[
            ("voice", input.voice.as_str()),
            ("text", text.as_str()),
            ("temperature", temperature.as_str()),
            ("csrf_token", csrf.as_str()),
        ])
        .send()
        .await
        .unwrap_or_else(|e| panic!("{door:?}: {e}"));
    let http_status = response.status().as_u16();
    if door == Door::ConsoleStream {
        let (_, body) = json(response).await;
        return refusal(door, http_status, &body);
    }
    // The form's page: the refusal's code is its error's `data-code`.
    let html = response.text().await.unwrap();
    let code = html
        .split_once("data-code=\"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(code, _)| code.to_owned())
        .unwrap_or_else(|| format!("(no error on the page, HTTP {http_status})"));
    Refusal {
        http_status,
        status: http_status,
        code,
    }
}

/// Reads the refusal out of whichever envelope the door used.
fn refusal(door: Door, http_status: u16, body: &Value) -> Refusal {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let accepted = match door {
        Door::McpSpeak | Door::McpTranscribe => {
            http_status == 200 && body["result"]["isError"] != true
        }
        _ => http_status < 400,
    };
    if accepted {
        // Not refused at all: the matrix reports it beside the other rows.
        return Refusal {
            http_status,
            status: http_status,
            code: format!("(accepted: {body})"),
        };
    }
    match door {
        Door::ElevenSocket | Door::ElevenRest => {
            // ElevenLabs' envelope: `detail.status` is ElevenLabs' word, voiced's code beside it.
            assert!(
                body["detail"]["message"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty()),
                "{door:?}: {body}"
            );
            assert_eq!(body["detail"]["code"], body["code"], "{door:?}: {body}");
            Refusal {
                http_status,
                status: http_status,
                code: text(&body["code"]),
            }
        }
        Door::Cartesia => {
            // Cartesia's envelope: `status_code` and `message`, voiced's code beside them.
            assert!(
                body["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{door:?}: {body}"
            );
            assert_eq!(body["status_code"], http_status, "{door:?}: {body}");
            Refusal {
                http_status,
                status: http_status,
                code: text(&body["code"]),
            }
        }
        Door::OpenAiSpeech | Door::Realtime => {
            // OpenAI's envelope carries no status member: the HTTP status is the error's.
            let error = &body["error"];
            assert!(
                error["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{door:?}: {body}"
            );
            Refusal {
                http_status,
                status: http_status,
                code: text(&error["code"]),
            }
        }
        Door::McpSpeak | Door::McpTranscribe if http_status == 200 => {
            // Admitted: a tool error whose text is the problem document.
            let result = &body["result"];
            assert_eq!(result["isError"], true, "{door:?}: {body}");
            let problem: Value = serde_json::from_str(
                result["content"][0]["text"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{door:?}: {body}")),
            )
            .expect("a tool error's text is a problem document");
            Refusal {
                http_status,
                status: problem["status"].as_u64().unwrap_or_default() as u16,
                code: text(&problem["code"]),
            }
        }
        _ => {
            assert_eq!(body["status"], http_status, "{door:?}: {body}");
            Refusal {
                http_status,
                status: http_status,
                code: text(&body["code"]),
            }
        }
    }
}

/// The row "hang-up after the first byte is charged alike" (issue 36 item 1): through every
/// door that streams a synchronous generation (`/v1/audio/speech` with a key,
/// `/console/playground/stream` with a session), a client that reads the first audio and then
/// hangs up leaves the generation `failed` (cancelled), charged once the audio that had left:
/// more than nothing, less than the whole, its `duration_ms` the ledger's row, against the key
/// where there is one.
#[tokio::test]
async fn a_hang_up_after_the_first_byte_is_charged_alike_on_every_streaming_door() {
    let app = TestApp::start_with_workers(1).await;
    let account = app.account(Plan::Pro).await;
    let (key_id, secret) = app.key(&account, &Scope::ALL).await;
    app.voice(&account, "Narrator", EngineId::Kokoro, "af_heart")
        .await;
    let session = session_of(&app, &account).await;
    let long =
        "This sentence is one of eight that a client asked for and stopped hearing. ".repeat(8);
    for door in [Door::OpenAiSpeech, Door::ElevenRest, Door::ConsoleStream] {
        let request = match door {
            Door::OpenAiSpeech => app
                .post("/v1/audio/speech")
                .bearer_auth(&secret)
                .json(&json!({"model": "kokoro", "input": long, "voice": "Narrator", "seed": 7})),
            Door::ElevenRest => app
                .post("/v1/text-to-speech/Narrator/stream?output_format=pcm_24000")
                .header("xi-api-key", &secret)
                .json(&json!({"text": long, "model_id": "eleven_turbo_v2_5", "seed": 7})),
            _ => app
                .post("/console/playground/stream")
                .header("cookie", &session.0)
                .form(&[
                    ("voice", "Narrator"),
                    ("text", long.as_str()),
                    ("seed", "7"),
                    ("csrf_token", session.1.as_str()),
                ]),
        };
        let mut response = request.send().await.unwrap();
        assert_eq!(response.status(), 200, "{door:?}");
        let id = response.headers()["x-service-generation-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let first = response.chunk().await.unwrap().expect("a first chunk");
        assert!(!first.is_empty(), "{door:?}");
        drop(response); // the hang-up

        let (status, error, duration_ms, estimated_ms) = common::poll_until(
            Duration::from_secs(120),
            "the generation to be cancelled",
            || {
                let (app, id) = (&app, id.clone());
                async move {
                    let g = fixtures::generation(app, &id).await;
                    let row = (g.status, g.error, g.duration_ms, g.estimated_ms);
                    (row.0 != "generating").then_some(row)
                }
            },
        )
        .await;
        assert_eq!(status, "failed", "{door:?}");
        let error = error.unwrap_or_default();
        assert!(
            error.starts_with("cancelled: the client disconnected") && error.contains("charged"),
            "{door:?}: {error}"
        );
        let charged: Vec<(i64, Option<String>)> = fixtures::ledger(&app)
            .await
            .into_iter()
            .filter(|row| row.generation_id == id)
            .map(|row| (row.audio_ms, row.api_key_id))
            .collect();
        assert_eq!(charged.len(), 1, "{door:?}: charged once");
        let (audio_ms, charged_key) = charged[0].clone();
        assert_eq!(Some(audio_ms), duration_ms, "{door:?}");
        assert!(
            audio_ms > 0 && audio_ms < estimated_ms,
            "{door:?}: {audio_ms} ms charged of about {estimated_ms}"
        );
        let expected_key = (door != Door::ConsoleStream).then(|| key_id.clone());
        assert_eq!(charged_key, expected_key, "{door:?}");
        // The generation object says what was charged.
        let (_, generation) = app.generation(&secret, &id).await;
        assert_eq!(generation["status"], "failed", "{door:?}");
        assert_eq!(generation["duration_ms"], audio_ms, "{door:?}");
    }
    app.stop().await;
}

/// The operations check their own requirement with no door in front of them (issue 37 item 2):
/// a principal that lacks the scope, the feature or the plan is refused by the core operation
/// itself, with the code every door shows.
#[tokio::test]
async fn each_operation_refuses_what_its_requirement_refuses_without_a_door() {
    use voiced::domain::Feature;
    use voiced::service::principal::Credential;
    use voiced::service::{ErrorCode, Principal, deletion, reads};
    let app = TestApp::start().await;
    let (account, _) = app.pro_user().await;
    let principal = |plan: Plan, scopes: &[Scope], features: &[Feature]| Principal {
        account_id: account.clone(),
        scopes: scopes.to_vec(),
        plan,
        features: features.to_vec(),
        credential: Credential::ApiKey {
            key_id: "key_none".into(),
            ceiling_minutes: None,
        },
    };
    let all = [Feature::Speech, Feature::Transcription];
    let writer = principal(Plan::Pro, &[Scope::VoiceGenerate], &all);
    let reader = principal(Plan::Pro, &[Scope::VoiceRead], &all);
    let free = principal(Plan::None, &Scope::ALL, &all);
    let code = |r: Result<(), voiced::service::ServiceError>| r.err().map(|e| e.code);
    assert_eq!(
        code(reads::voices(&app.core, &writer, None).await.map(|_| ())),
        Some(ErrorCode::InsufficientScope)
    );
    assert_eq!(
        code(reads::voices(&app.core, &free, None).await.map(|_| ())),
        Some(ErrorCode::ProPlanRequired)
    );
    assert_eq!(
        code(reads::voices(&app.core, &reader, None).await.map(|_| ())),
        None
    );
    assert_eq!(
        code(deletion::delete_capture(&app.core, &reader, "cap_none").await),
        Some(ErrorCode::InsufficientScope)
    );
    assert_eq!(
        code(deletion::delete_capture(&app.core, &writer, "cap_none").await),
        Some(ErrorCode::NotFound)
    );
    assert_eq!(
        code(
            voiced::service::transcription::take_place(
                &app.core,
                &principal(Plan::Pro, &Scope::ALL, &[Feature::Speech])
            )
            .await
            .map(|_| ())
        ),
        Some(ErrorCode::FeatureNotEnabled)
    );
    app.stop().await;
}
