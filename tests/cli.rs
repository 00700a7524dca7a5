//! The `voiced` binary as an operator uses it: `admin` output (text and `--json`), refusals,
//! bad configuration, and `serve` on its embedded PostgreSQL default.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

use common::{TempDir, TestApp};
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
    let (stored_prefix, hash, ceiling): (String, Vec<u8>, Option<i32>) =
        sqlx::query_as("SELECT prefix, secret_sha256, ceiling_minutes FROM api_keys WHERE id = $1")
            .bind(key_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(stored_prefix, prefix);
    assert_eq!(hash, Sha256::digest(secret.as_bytes()).to_vec());
    assert_eq!(ceiling, Some(30));
    // The secret is nowhere in the database.
    let leaked: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM api_keys WHERE position($1 in prefix || name || id) > 0",
    )
    .bind(secret)
    .fetch_one(&app.pool)
    .await
    .unwrap();
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
