//! A fresh, empty PostgreSQL database per test: `let (pool, db) = fresh_database().await;`
//! … `db.cleanup().await;` at the end (dropping `db` also drops the database, best effort).
//!
//! Where the databases live:
//! - `VOICED_TEST_DATABASE_URL` set: on that server (a URL whose user may create databases,
//!   e.g. `postgresql://postgres:secret@localhost:5432/postgres`);
//! - otherwise: in a shared embedded cluster under `$VOICED_TEST_PGDATA` (default
//!   `$HOME/.cache/voiced/test-pg`), started by the first test that needs it (same code as
//!   `voiced serve`'s embedded cluster, so as root it runs as `postgres`) and **left running**
//!   for the test processes after it. CI stops it at the end with [`stop_shared_cluster`]
//!   (e.g. `cargo test --test api -- --ignored --exact db::stop_shared_test_cluster`); by hand:
//!   `pg_ctl stop -m fast -D ~/.cache/voiced/test-pg/pg` (as root: `runuser -u postgres --
//!   /usr/lib/postgresql/15/bin/pg_ctl …`, and if `test-pg/pg.location` exists the cluster is
//!   in `<that dir>/pg`).
//!
//! Databases are named `voiced_test_<unix seconds>_<random>`; the first use in each test process
//! drops those older than an hour, left behind by killed test runs.

#![allow(dead_code)] // each test binary uses a different part of this module

use std::hash::{BuildHasher, RandomState};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool};
use tokio::sync::OnceCell;
use voiced::store::embedded::{EmbeddedConfig, EmbeddedPostgres, quote_ident};

const PREFIX: &str = "voiced_test_";
const STALE_AFTER: Duration = Duration::from_secs(3600);

/// A test's database; dropped by [`TestDb::cleanup`] or, failing that, on drop.
pub struct TestDb {
    admin: PgConnectOptions,
    name: String,
    dropped: bool,
}

/// Creates an empty database and returns a pool to it. Panics (failing the test) with the
/// reason when no database can be had.
pub async fn fresh_database() -> (PgPool, TestDb) {
    let admin = server().await.clone();
    let name = unique_name();
    let mut conn = PgConnection::connect_with(&admin)
        .await
        .unwrap_or_else(|err| panic!("connecting to the test PostgreSQL server: {err}"));
    sqlx::raw_sql(&format!("CREATE DATABASE {}", quote_ident(&name)))
        .execute(&mut conn)
        .await
        .unwrap_or_else(|err| panic!("creating test database {name}: {err}"));
    let _ = conn.close().await;
    let db = TestDb {
        admin: admin.clone(),
        name,
        dropped: false,
    };
    let pool = PgPoolOptions::new()
        .max_connections(10)
        .connect_with(admin.database(&db.name))
        .await
        .unwrap_or_else(|err| panic!("connecting to test database {}: {err}", db.name));
    prepare(&pool).await;
    (pool, db)
}

/// Every fresh database gets the current schema.
async fn prepare(pool: &PgPool) {
    voiced::store::MIGRATOR
        .run(pool)
        .await
        .unwrap_or_else(|err| panic!("migrating the test database: {err}"));
}

impl TestDb {
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A URL for this database, for child processes (`voiced worker`, `voiced admin`).
    pub fn url(&self) -> String {
        match std::env::var("VOICED_TEST_DATABASE_URL") {
            Ok(url) if !url.is_empty() => {
                let (base, query) = url
                    .split_once('?')
                    .map_or((url.as_str(), None), |(b, q)| (b, Some(q)));
                let server = base.rsplit_once('/').map_or(base, |(server, _)| server);
                match query {
                    Some(query) => format!("{server}/{}?{query}", self.name),
                    None => format!("{server}/{}", self.name),
                }
            }
            _ => {
                let host = self.admin.get_socket().map_or_else(
                    || self.admin.get_host().to_owned(),
                    |socket| socket.display().to_string(),
                );
                format!(
                    "postgresql:///{}?host={host}&port={}&user={}",
                    self.name,
                    self.admin.get_port(),
                    self.admin.get_username()
                )
            }
        }
    }

    /// Drops the database (terminating connections still open to it, so close the pool first
    /// for a quiet log).
    pub async fn cleanup(mut self) {
        self.dropped = true;
        if let Err(err) = drop_database(&self.admin, &self.name).await {
            panic!("dropping test database {}: {err}", self.name);
        }
    }
}

impl Drop for TestDb {
    /// Runs the drop on a private thread with its own runtime, so it works inside or outside
    /// any runtime and never blocks on the test's runtime (which may be shutting down).
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        let (admin, name) = (self.admin.clone(), self.name.clone());
        let dropper = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime
                .block_on(drop_database(&admin, &name))
                .map_err(std::io::Error::other)
        });
        if let Ok(Err(err)) = dropper.join() {
            eprintln!("warning: could not drop test database {}: {err}", self.name);
        }
    }
}

/// Stops the shared embedded test cluster, if one runs; `true` when it was running.
pub async fn stop_shared_cluster() -> bool {
    EmbeddedPostgres::stop_existing(&shared_cluster_config())
        .await
        .unwrap_or_else(|err| panic!("stopping the shared test cluster: {err}"))
}

fn shared_cluster_config() -> EmbeddedConfig {
    let data_dir = std::env::var_os("VOICED_TEST_PGDATA")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").expect("HOME or VOICED_TEST_PGDATA must be set");
            PathBuf::from(home).join(".cache/voiced/test-pg")
        });
    EmbeddedConfig {
        data_dir,
        pg_bin: None,
    }
}

/// Connect options for the server's maintenance database, set up once per test process.
/// Holds no connection, so it is safe to share between the tests' separate runtimes.
async fn server() -> &'static PgConnectOptions {
    static SERVER: OnceCell<PgConnectOptions> = OnceCell::const_new();
    SERVER
        .get_or_init(|| async {
            let admin = match std::env::var("VOICED_TEST_DATABASE_URL") {
                Ok(url) if !url.is_empty() => PgConnectOptions::from_str(&url)
                    .unwrap_or_else(|err| panic!("VOICED_TEST_DATABASE_URL is not usable: {err}")),
                _ => EmbeddedPostgres::start(&shared_cluster_config())
                    .await
                    .unwrap_or_else(|err| panic!("starting the shared test cluster: {err}"))
                    .connect_options("postgres"),
            };
            drop_stale_databases(&admin).await;
            admin
        })
        .await
}

async fn drop_stale_databases(admin: &PgConnectOptions) {
    let Ok(mut conn) = PgConnection::connect_with(admin).await else {
        return;
    };
    let names: Vec<String> =
        sqlx::query_scalar("SELECT datname FROM pg_database WHERE starts_with(datname, $1)")
            .bind(PREFIX)
            .fetch_all(&mut conn)
            .await
            .unwrap_or_default();
    let _ = conn.close().await;
    let now = unix_seconds();
    for name in names {
        let created = name
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split('_').next())
            .and_then(|secs| secs.parse::<u64>().ok());
        if created.is_some_and(|secs| now.saturating_sub(secs) > STALE_AFTER.as_secs())
            && let Err(err) = drop_database(admin, &name).await
        {
            eprintln!("warning: could not drop stale test database {name}: {err}");
        }
    }
}

async fn drop_database(admin: &PgConnectOptions, name: &str) -> Result<(), sqlx::Error> {
    let mut conn = PgConnection::connect_with(admin).await?;
    let quoted = quote_ident(name);
    // WITH (FORCE) (PostgreSQL 13+) ends the test's leftover connections.
    let forced = sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS {quoted} WITH (FORCE)"))
        .execute(&mut conn)
        .await;
    if forced.is_err() {
        sqlx::raw_sql(&format!("DROP DATABASE IF EXISTS {quoted}"))
            .execute(&mut conn)
            .await?;
    }
    let _ = conn.close().await;
    Ok(())
}

/// `voiced_test_<unix seconds>_<64 random bits>`: unique across processes and machines
/// sharing one server; the timestamp lets a later run spot leftovers.
fn unique_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // RandomState is seeded from the OS's randomness: no RNG crate needed for a name.
    let random = RandomState::new().hash_one((
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        SystemTime::now(),
    ));
    format!("{PREFIX}{}_{random:016x}", unix_seconds())
}

fn unix_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}
