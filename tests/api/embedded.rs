//! The embedded cluster against the real PostgreSQL install: first start, restart, reuse of a
//! running server, crash recovery, the long-path and root fallbacks, and the missing-binaries error.

use crate::common;

use std::path::PathBuf;

use crate::common::{TempDir, fixtures};
use sqlx::{Connection, PgConnection};
use voiced::store::embedded::{APP_DATABASE, EmbeddedConfig, EmbeddedError, EmbeddedPostgres};

fn config(dir: &TempDir) -> EmbeddedConfig {
    EmbeddedConfig {
        data_dir: dir.path().join("data"),
        pg_bin: None,
    }
}

/// Connects through the URL string, as `voiced serve` will.
async fn connect(pg: &EmbeddedPostgres) -> PgConnection {
    let url = pg.database_url(APP_DATABASE);
    PgConnection::connect(&url)
        .await
        .unwrap_or_else(|err| panic!("sqlx connecting to {url}: {err}"))
}

#[tokio::test]
async fn first_start_then_restart_keeps_data() {
    let dir = TempDir::new("restart", 0o755);
    let cfg = config(&dir);

    let pg = EmbeddedPostgres::start(&cfg).await.expect("first start");
    eprintln!(
        "first start: {:?}; url {}",
        pg.timings(),
        pg.database_url(APP_DATABASE)
    );
    assert!(pg.timings().initdb.is_some(), "a new data dir needs initdb");
    assert!(
        pg.timings().create_database.is_some(),
        "the voiced database is created"
    );
    assert!(!pg.reused());
    let mut conn = connect(&pg).await;
    let (one, listen) = fixtures::server_answer_and_listen_addresses(&mut conn).await;
    assert_eq!(one, 1);
    assert_eq!(listen, "", "the server must not listen on TCP");
    fixtures::leave_kept_value(&mut conn, "still here").await;
    conn.close().await.unwrap();
    pg.stop().await.expect("stop");

    let pg = EmbeddedPostgres::start(&cfg).await.expect("second start");
    eprintln!("second start: {:?}", pg.timings());
    assert!(
        pg.timings().initdb.is_none(),
        "the cluster is reused, not re-initialised"
    );
    assert!(pg.timings().create_database.is_none());
    assert!(!pg.reused(), "it was stopped, so this start started it");
    let mut conn = connect(&pg).await;
    let kept = fixtures::kept_value(&mut conn).await;
    assert_eq!(kept, "still here");
    conn.close().await.unwrap();
    pg.stop().await.expect("second stop");
}

#[tokio::test]
async fn a_server_left_running_is_reused_and_a_killed_one_recovers() {
    let dir = TempDir::new("reuse", 0o755);
    let cfg = config(&dir);
    let first = EmbeddedPostgres::start(&cfg).await.expect("first start");
    let pid_file = first.cluster_dir().join("postmaster.pid");
    drop(first); // as if voiced had crashed: the server keeps running

    let second = EmbeddedPostgres::start(&cfg)
        .await
        .expect("start over a running server");
    assert!(second.reused());
    connect(&second).await.close().await.unwrap();

    // Kill the postmaster outright: a stale postmaster.pid and a cluster needing recovery.
    let pid_text = std::fs::read_to_string(&pid_file).unwrap();
    let pid = pid_text.lines().next().unwrap().trim().to_owned();
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    wait_gone(&pid).await;
    assert!(pid_file.exists(), "SIGKILL leaves postmaster.pid behind");

    let third = EmbeddedPostgres::start(&cfg)
        .await
        .expect("start after a crash");
    assert!(!third.reused());
    connect(&third).await.close().await.unwrap();
    let live_pid_text = std::fs::read_to_string(&pid_file).unwrap();
    third.stop().await.unwrap();

    // A postmaster.pid naming a live process that is not postgres (pid reuse after a reboot).
    let stand_in = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let mut lines: Vec<&str> = live_pid_text.lines().collect();
    let stand_in_pid = stand_in.id().to_string();
    lines[0] = &stand_in_pid;
    std::fs::write(&pid_file, lines.join("\n") + "\n").unwrap();
    let fourth = EmbeddedPostgres::start(&cfg)
        .await
        .expect("start over a stale pid file");
    connect(&fourth).await.close().await.unwrap();
    fourth.stop().await.unwrap();
    let mut stand_in = stand_in;
    let _ = stand_in.kill();
    let _ = stand_in.wait();
}

async fn wait_gone(pid: &str) {
    let status = PathBuf::from(format!("/proc/{pid}/status"));
    common::poll_until(
        std::time::Duration::from_secs(10),
        "the postmaster to exit",
        || {
            // A zombie still has /proc/<pid>; "State: Z" counts as gone.
            let gone = match std::fs::read_to_string(&status) {
                Err(_) => true,
                Ok(s) => s.contains("State:\tZ"),
            };
            async move { gone.then_some(()) }
        },
    )
    .await;
}

#[tokio::test]
async fn a_long_data_dir_puts_the_socket_in_tmp() {
    let dir = TempDir::new("long", 0o755);
    let deep = dir.path().join("d".repeat(60)).join("e".repeat(60));
    let cfg = EmbeddedConfig {
        data_dir: deep,
        pg_bin: None,
    };
    let pg = EmbeddedPostgres::start(&cfg)
        .await
        .expect("start with a long path");
    assert!(
        pg.socket_dir()
            .to_string_lossy()
            .starts_with("/tmp/voiced-pg-"),
        "{:?}",
        pg.socket_dir()
    );
    connect(&pg).await.close().await.unwrap();
    let socket_dir = pg.socket_dir().to_owned();
    pg.stop().await.unwrap();
    let _ = std::fs::remove_dir_all(socket_dir);
}

/// As root, a data dir the `postgres` account cannot reach (here 0700, like /root) moves the
/// cluster to /var/lib/voiced/pg-<hash>, recorded in <data_dir>/pg.location.
#[tokio::test]
async fn as_root_an_unreachable_data_dir_is_relocated() {
    if !common::root_or_skip("embedded::as_root_an_unreachable_data_dir_is_relocated") {
        return;
    }
    let dir = TempDir::new("private", 0o700);
    let cfg = config(&dir);
    let pg = EmbeddedPostgres::start(&cfg)
        .await
        .expect("start in a private dir");
    assert!(
        pg.cluster_dir().starts_with("/var/lib/voiced/"),
        "{:?}",
        pg.cluster_dir()
    );
    let note = std::fs::read_to_string(cfg.data_dir.join("pg.location")).unwrap();
    assert_eq!(
        PathBuf::from(note.trim()),
        pg.cluster_dir().parent().unwrap()
    );
    connect(&pg).await.close().await.unwrap();
    let base = pg.cluster_dir().parent().unwrap().to_owned();
    pg.stop().await.unwrap();

    // The next start finds it through pg.location.
    let pg = EmbeddedPostgres::start(&cfg)
        .await
        .expect("restart in a private dir");
    assert!(pg.timings().initdb.is_none());
    pg.stop().await.unwrap();
    std::fs::remove_dir_all(base).unwrap();
}

#[tokio::test]
async fn missing_binaries_say_how_to_install_them() {
    let dir = TempDir::new("nobin", 0o755);
    let cfg = EmbeddedConfig {
        data_dir: dir.path().join("data"),
        pg_bin: Some(PathBuf::from("/nonexistent/postgresql/bin")),
    };
    let err = EmbeddedPostgres::start(&cfg)
        .await
        .expect_err("no binaries there");
    eprintln!("error text: {err}");
    assert!(matches!(err, EmbeddedError::NotInstalled(_)), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("apt-get install postgresql"), "{text}");
    assert!(text.contains("/nonexistent/postgresql/bin"), "{text}");
}
