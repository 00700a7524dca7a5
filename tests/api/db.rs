//! The per-test database helper: distinct databases, in-process and across processes.

use crate::common::db::{fresh_database, stop_shared_cluster};
use crate::common::{self, TempDir, fixtures};

const CHILD_ENV: &str = "PGEMBED_TEST_CHILD";
/// The test each child process runs (its full name in this binary).
const CHILD_TEST: &str = "db::child_uses_a_fresh_database";

#[tokio::test]
async fn two_databases_in_one_process_are_separate() {
    let ((pool_a, db_a), (pool_b, db_b)) = tokio::join!(fresh_database(), fresh_database());
    assert_ne!(db_a.name(), db_b.name());
    fixtures::make_marker_table(&pool_a, "only_in_a").await;
    assert!(fixtures::has_table(&pool_a, "only_in_a").await);
    assert!(
        !fixtures::has_table(&pool_b, "only_in_a").await,
        "a table made in one test database shows in another"
    );
    pool_a.close().await;
    db_a.cleanup().await;
    drop(pool_b);
    drop(db_b); // the Drop path
}

/// Two test processes at once against a cluster neither has started yet: one initdb, one
/// start, two databases.
#[test]
fn two_processes_start_the_shared_cluster_at_once() {
    if std::env::var_os("VOICED_TEST_DATABASE_URL").is_some() {
        common::skip(
            "db::two_processes_start_the_shared_cluster_at_once",
            "VOICED_TEST_DATABASE_URL names an outside server: no shared cluster is started",
        );
        return;
    }
    let dir = TempDir::new("shared", 0o755);
    let pgdata = dir.path().join("test-pg");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(&exe)
                .args([
                    "--exact",
                    CHILD_TEST,
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_ENV, "1")
                .env("VOICED_TEST_PGDATA", &pgdata)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "child failed:\n{text}");
        assert!(
            text.contains("1 passed"),
            "the child test did not run:\n{text}"
        );
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let stopped = runtime.block_on(async {
        let cfg = voiced::store::embedded::EmbeddedConfig {
            data_dir: pgdata.clone(),
            pg_bin: None,
        };
        voiced::store::embedded::EmbeddedPostgres::stop_existing(&cfg)
            .await
            .unwrap()
    });
    assert!(stopped, "the children leave the shared cluster running");
}

/// The child half of `two_processes_start_the_shared_cluster_at_once`: ignored in a normal run
/// (that test runs it, twice at once, in processes of their own).
#[tokio::test]
#[ignore = "a child process of two_processes_start_the_shared_cluster_at_once"]
async fn child_uses_a_fresh_database() {
    assert!(
        std::env::var_os(CHILD_ENV).is_some(),
        "run by two_processes_start_the_shared_cluster_at_once, with {CHILD_ENV} and its own \
         VOICED_TEST_PGDATA"
    );
    let (pool, db) = fresh_database().await;
    let name = fixtures::current_database(&pool).await;
    assert_eq!(name, db.name());
    pool.close().await;
    db.cleanup().await;
}

/// For CI's clean-up step:
/// `cargo test --test api -- --ignored --exact db::stop_shared_test_cluster`.
/// It makes sure the cluster runs (a database made and dropped), so that the stop is exercised
/// every time, and checks that a second stop finds no server.
#[tokio::test]
#[ignore = "stops the shared test cluster; run explicitly at the end of CI"]
async fn stop_shared_test_cluster() {
    if std::env::var_os("VOICED_TEST_DATABASE_URL").is_some() {
        common::skip(
            "db::stop_shared_test_cluster",
            "VOICED_TEST_DATABASE_URL names an outside server: there is no shared cluster to stop",
        );
        return;
    }
    let (pool, db) = fresh_database().await;
    pool.close().await;
    db.cleanup().await;
    assert!(
        stop_shared_cluster().await,
        "the shared test cluster did not run after a database was made on it"
    );
    assert!(
        !stop_shared_cluster().await,
        "the shared test cluster still runs after being stopped"
    );
}
