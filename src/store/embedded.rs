//! The private PostgreSQL cluster `voiced serve` runs when no database URL is configured.
//!
//! [`EmbeddedPostgres::start`] makes the cluster the first time (`initdb`, UTF8, locale C, trust
//! auth: it listens only on a Unix socket in a 0700 directory, never on TCP), starts it with
//! `pg_ctl`, waits until it accepts connections, and creates the `voiced` database. A server left
//! running by an earlier run that crashed is reused; a stale `postmaster.pid` is cleared.
//! [`EmbeddedPostgres::stop`] is `pg_ctl stop -m fast`. Start and stop hold a file lock, so
//! several processes may start the same cluster at once. As root, the server runs as the
//! `postgres` account (see [`run_as`]); the file layout is described in [`layout`].

mod layout;
mod pg_bin;
mod process;
mod run_as;

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sqlx::postgres::PgConnectOptions;
use sqlx::{Connection, PgConnection};

use layout::{Layout, PORT};
use pg_bin::PgBin;
use process::{PidState, blocking, command_error, lock, output, pid_state, run};
use run_as::RunAs;

pub use pg_bin::INSTALL_HINT;

/// The application's database, created by [`EmbeddedPostgres::start`] when missing.
pub const APP_DATABASE: &str = "voiced";
/// The cluster's superuser (`initdb -U`); with trust auth on a private socket, no password.
pub const SUPERUSER: &str = "postgres";
const START_TIMEOUT: Duration = Duration::from_secs(60);
const LOG_TAIL_LINES: usize = 30;

#[derive(Debug, Clone)]
pub struct EmbeddedConfig {
    /// `VOICED_DATA_DIR`; the cluster lives in `<data_dir>/pg`.
    pub data_dir: PathBuf,
    /// Directory of `initdb`/`pg_ctl`/`postgres`; `None`: `VOICED_PG_BIN`, then discovery.
    pub pg_bin: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    /// No usable PostgreSQL installation; the message says how to install one.
    #[error("{0}")]
    NotInstalled(String),
    #[error("embedded PostgreSQL: {0}")]
    Setup(String),
    #[error("embedded PostgreSQL: {context}: {err}")]
    Io { context: String, err: io::Error },
    #[error("embedded PostgreSQL: `{command}` failed ({status}): {output}")]
    Command {
        command: String,
        status: String,
        output: String,
    },
    #[error("embedded PostgreSQL did not start: {reason}\n--- last lines of {} ---\n{tail}", log.display())]
    Start {
        reason: String,
        log: PathBuf,
        tail: String,
    },
    #[error("embedded PostgreSQL: {context}: {err}")]
    Sql { context: String, err: sqlx::Error },
}

impl EmbeddedError {
    fn io(context: impl Into<String>, err: io::Error) -> Self {
        Self::Io {
            context: context.into(),
            err,
        }
    }

    fn sql(context: impl Into<String>, err: sqlx::Error) -> Self {
        Self::Sql {
            context: context.into(),
            err,
        }
    }
}

/// How long the steps of [`EmbeddedPostgres::start`] took; `None` for a step that was skipped.
#[derive(Debug, Clone, Default)]
pub struct StartTimings {
    pub initdb: Option<Duration>,
    pub start: Option<Duration>,
    pub create_database: Option<Duration>,
}

/// A running embedded cluster. Dropping it leaves the server running (the next start reuses it);
/// call [`EmbeddedPostgres::stop`] on shutdown.
#[derive(Debug)]
pub struct EmbeddedPostgres {
    layout: Layout,
    bin: PgBin,
    run_as: RunAs,
    reused: bool,
    timings: StartTimings,
}

impl EmbeddedPostgres {
    pub async fn start(cfg: &EmbeddedConfig) -> Result<Self, EmbeddedError> {
        let run_as = RunAs::detect().await?;
        let layout = plan_layout(cfg, &run_as).await?;
        // Routine facts about where the cluster lives: said once, when it is first created.
        if !layout.pgdata.join("PG_VERSION").exists() {
            for note in layout.notes() {
                tracing::info!("{note}");
            }
        }
        let _lock = lock(&layout).await?;
        blocking({
            let (layout, run_as) = (layout.clone(), run_as.clone());
            move || layout.prepare(&run_as)
        })
        .await?;
        let bin = pg_bin::find(cfg.pg_bin.as_deref(), cluster_major(&layout.pgdata)).await?;
        let mut pg = Self {
            layout,
            bin,
            run_as,
            reused: false,
            timings: StartTimings::default(),
        };
        if !pg.layout.pgdata.join("PG_VERSION").exists() {
            let began = Instant::now();
            pg.initdb().await?;
            pg.timings.initdb = Some(began.elapsed());
            tracing::info!(cluster = %pg.layout.pgdata.display(), elapsed = ?began.elapsed(), "initdb done");
        }
        pg.ensure_ownership().await?;
        pg.ensure_running().await?;
        let began = Instant::now();
        if pg.create_database(APP_DATABASE).await? {
            pg.timings.create_database = Some(began.elapsed());
        }
        tracing::info!(
            cluster = %pg.layout.pgdata.display(),
            socket = %pg.layout.socket_dir.display(),
            reused = pg.reused,
            "embedded PostgreSQL ready"
        );
        Ok(pg)
    }

    /// Stops the server (`pg_ctl stop -m fast`). Stopping one that is not running is not an error.
    pub async fn stop(self) -> Result<(), EmbeddedError> {
        let _lock = lock(&self.layout).await?;
        self.stop_server().await
    }

    /// Stops the cluster under `cfg.data_dir` if one is running, without starting anything
    /// (e.g. a CI script's clean-up). Returns whether a server was running.
    pub async fn stop_existing(cfg: &EmbeddedConfig) -> Result<bool, EmbeddedError> {
        if !cfg.data_dir.is_dir() {
            return Ok(false);
        }
        let run_as = RunAs::detect().await?;
        let layout = plan_layout(cfg, &run_as).await?;
        if !layout.pgdata.join("PG_VERSION").exists() {
            return Ok(false);
        }
        let _lock = lock(&layout).await?;
        let bin = pg_bin::find(cfg.pg_bin.as_deref(), cluster_major(&layout.pgdata)).await?;
        let pg = Self {
            layout,
            bin,
            run_as,
            reused: true,
            timings: StartTimings::default(),
        };
        let running = pg.status().await?.is_some();
        pg.stop_server().await?;
        Ok(running)
    }

    /// A URL for `dbname` that sqlx and libpq (psql) accept:
    /// `postgresql:///voiced?host=/data/pg-socket&port=5432&user=postgres`.
    pub fn database_url(&self, dbname: &str) -> String {
        socket_url(&self.layout.socket_dir, dbname)
    }

    /// The same target as [`Self::database_url`], without a round trip through a string.
    pub fn connect_options(&self, dbname: &str) -> PgConnectOptions {
        PgConnectOptions::new_without_pgpass()
            .socket(&self.layout.socket_dir)
            .port(PORT)
            .username(SUPERUSER)
            .database(dbname)
    }

    /// The cluster directory (PGDATA).
    pub fn cluster_dir(&self) -> &Path {
        &self.layout.pgdata
    }

    pub fn socket_dir(&self) -> &Path {
        &self.layout.socket_dir
    }

    /// Whether start found the server already running (left by an earlier or a parallel run).
    pub fn reused(&self) -> bool {
        self.reused
    }

    /// The PostgreSQL major version of the binaries in use.
    pub fn server_major(&self) -> u32 {
        self.bin.major
    }

    pub fn timings(&self) -> &StartTimings {
        &self.timings
    }

    /// Creates `dbname` unless it exists; returns whether it created it.
    pub async fn create_database(&self, dbname: &str) -> Result<bool, EmbeddedError> {
        let mut conn = PgConnection::connect_with(&self.connect_options("postgres"))
            .await
            .map_err(|err| EmbeddedError::sql("connecting to the server", err))?;
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
                .bind(dbname)
                .fetch_one(&mut conn)
                .await
                .map_err(|err| EmbeddedError::sql("looking up databases", err))?;
        let created = if exists {
            false
        } else {
            let sql = format!("CREATE DATABASE {}", quote_ident(dbname));
            match sqlx::raw_sql(&sql).execute(&mut conn).await {
                Ok(_) => true,
                // Created meanwhile by another process: 42P04 duplicate_database, or 23505 when
                // both passed the catalog check at once.
                Err(sqlx::Error::Database(db))
                    if matches!(db.code().as_deref(), Some("42P04" | "23505")) =>
                {
                    false
                }
                Err(err) => return Err(EmbeddedError::sql(format!("creating {dbname}"), err)),
            }
        };
        let _ = conn.close().await;
        Ok(created)
    }

    async fn initdb(&self) -> Result<(), EmbeddedError> {
        let tmp = self.layout.initdb_tmp.clone();
        let owner = self.run_as.owner();
        // initdb into a scratch dir renamed into place once complete, so a run killed halfway
        // leaves nothing that looks like a cluster.
        blocking(move || {
            match std::fs::remove_dir_all(&tmp) {
                Err(err) if err.kind() != io::ErrorKind::NotFound => {
                    return Err(EmbeddedError::io(
                        format!("removing {}", tmp.display()),
                        err,
                    ));
                }
                _ => {}
            }
            layout::make_dir(&tmp, 0o700, owner)
        })
        .await?;
        let mut cmd = self.run_as.command(&self.bin.tool("initdb"));
        cmd.arg("-D").arg(&self.layout.initdb_tmp).args([
            "-U",
            SUPERUSER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
        ]);
        run(cmd, "initdb").await?;
        let (tmp, pgdata) = (self.layout.initdb_tmp.clone(), self.layout.pgdata.clone());
        blocking(move || {
            std::fs::rename(&tmp, &pgdata).map_err(|err| {
                EmbeddedError::io(
                    format!("renaming {} to {}", tmp.display(), pgdata.display()),
                    err,
                )
            })
        })
        .await
    }

    /// A cluster made by another account (e.g. by this user before running as root) is handed
    /// to the server's account; one it cannot reach is an error that says why.
    async fn ensure_ownership(&self) -> Result<(), EmbeddedError> {
        let Some((uid, gid)) = self.run_as.owner() else {
            return Ok(());
        };
        if !self.run_as.can_reach(&self.layout.base) {
            return Err(EmbeddedError::Setup(format!(
                "running as root, the cluster runs as the `{}` account, which cannot reach {}; \
                 make its parent directories searchable (chmod o+x), or move the data dir \
                 (VOICED_DATA_DIR) somewhere it can reach",
                run_as::SERVICE_ACCOUNT,
                self.layout.pgdata.display()
            )));
        }
        let pgdata = self.layout.pgdata.clone();
        blocking(move || {
            layout::chown_tree(&pgdata, uid, gid).map_err(|err| {
                EmbeddedError::io(format!("changing the owner of {}", pgdata.display()), err)
            })
        })
        .await
    }

    async fn ensure_running(&mut self) -> Result<(), EmbeddedError> {
        if let Some(pid) = self.status().await?
            && pid_state(pid) == PidState::Alive
            && self.is_our_postmaster(pid)
        {
            if self.wait_ready(Duration::from_secs(5)).await? {
                tracing::info!(pid, "reusing the running embedded PostgreSQL");
                self.reused = true;
                return Ok(());
            }
            // Running, but not on our socket (e.g. the socket dir moved): restart it.
            tracing::warn!(
                pid,
                "embedded PostgreSQL not answering on its socket; restarting"
            );
            self.stop_server().await?;
        }
        self.clear_dead_lock_files().await?;
        let began = Instant::now();
        let options = format!(
            "-c listen_addresses='' -c unix_socket_directories='{}' -c port={PORT}",
            self.layout.socket_dir.display()
        );
        let mut cmd = self.run_as.command(&self.bin.tool("pg_ctl"));
        cmd.arg("start")
            .arg("-D")
            .arg(&self.layout.pgdata)
            .arg("-l")
            .arg(&self.layout.log)
            .args([
                "-w",
                "-s",
                "-t",
                &START_TIMEOUT.as_secs().to_string(),
                "-o",
                &options,
            ]);
        if let Err(err) = run(cmd, "pg_ctl start").await {
            return Err(self.start_error(err.to_string()).await);
        }
        if !self.wait_ready(START_TIMEOUT).await? {
            return Err(self
                .start_error("not accepting connections on its socket".into())
                .await);
        }
        self.timings.start = Some(began.elapsed());
        tracing::info!(elapsed = ?began.elapsed(), "embedded PostgreSQL started");
        Ok(())
    }

    /// The postmaster's pid when `pg_ctl status` says the server is running.
    async fn status(&self) -> Result<Option<u32>, EmbeddedError> {
        let mut cmd = self.run_as.command(&self.bin.tool("pg_ctl"));
        cmd.arg("status").arg("-D").arg(&self.layout.pgdata);
        let out = output(cmd, "pg_ctl status").await?;
        match out.status.code() {
            Some(0) => Ok(
                std::fs::read_to_string(self.layout.pgdata.join("postmaster.pid"))
                    .ok()
                    .and_then(|text| text.lines().next()?.trim().parse().ok())
                    .or(Some(0)),
            ),
            Some(3) => Ok(None),
            _ => Err(command_error("pg_ctl status", &out)),
        }
    }

    /// Removes `postmaster.pid` and the socket's lock file when the process they name is gone,
    /// a zombie (a crashed postmaster whose parent, e.g. a container's PID 1, does not reap it:
    /// the server's own stale-lock check still sees it alive), or not this cluster's server (a
    /// pid reused after a reboot). The server's shared-memory check still guards against a
    /// second postmaster.
    async fn clear_dead_lock_files(&self) -> Result<(), EmbeddedError> {
        let pid_file = self.layout.pgdata.join("postmaster.pid");
        let socket_lock = self.layout.socket_dir.join(".s.PGSQL.5432.lock");
        for file in [pid_file, socket_lock] {
            let Ok(text) = tokio::fs::read_to_string(&file).await else {
                continue;
            };
            let Some(pid) = text
                .lines()
                .next()
                .and_then(|l| l.trim().parse::<i64>().ok())
            else {
                continue;
            };
            // The server writes a negative pid when running single-user.
            let pid = u32::try_from(pid.unsigned_abs()).unwrap_or(0);
            if pid == 0 {
                continue;
            }
            let dead = match pid_state(pid) {
                PidState::Gone | PidState::Zombie => true,
                PidState::Alive => !self.is_our_postmaster(pid),
            };
            if dead {
                tracing::warn!(pid, file = %file.display(), "removing a stale lock file");
                tokio::fs::remove_file(&file).await.map_err(|err| {
                    EmbeddedError::io(format!("removing {}", file.display()), err)
                })?;
            }
        }
        Ok(())
    }

    /// Whether `pid` is this cluster's postmaster. Only a definite "no" counts (its command
    /// line, readable in /proc, does not name this cluster; or it has just exited): removing
    /// the pid file of a live server would make it shut down.
    fn is_our_postmaster(&self, pid: u32) -> bool {
        if pid == 0 {
            return true;
        }
        match std::fs::read(format!("/proc/{pid}/cmdline")) {
            Ok(cmdline) => {
                let pgdata = self.layout.pgdata.as_os_str().as_encoded_bytes();
                cmdline.split(|b| *b == 0).any(|arg| arg == pgdata)
            }
            Err(err) => err.kind() != io::ErrorKind::NotFound || !Path::new("/proc/self").exists(),
        }
    }

    /// Polls `pg_isready` until the server accepts connections. Gives up (`false`) when nothing
    /// answers on the socket for `within`, or when a server that answers "starting up" (crash
    /// recovery) is still not ready after the start timeout.
    async fn wait_ready(&self, within: Duration) -> Result<bool, EmbeddedError> {
        let began = Instant::now();
        loop {
            let mut cmd = tokio::process::Command::new(self.bin.tool("pg_isready"));
            cmd.arg("-h").arg(&self.layout.socket_dir).args([
                "-p",
                &PORT.to_string(),
                "-U",
                SUPERUSER,
                "-d",
                "postgres",
                "-q",
            ]);
            let limit = match output(cmd, "pg_isready").await?.status.code() {
                Some(0) => return Ok(true),
                Some(1) => START_TIMEOUT, // rejecting connections: starting up
                _ => within,
            };
            if began.elapsed() >= limit {
                return Ok(false);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn stop_server(&self) -> Result<(), EmbeddedError> {
        if self.status().await?.is_none() {
            return Ok(());
        }
        let mut cmd = self.run_as.command(&self.bin.tool("pg_ctl"));
        cmd.arg("stop").arg("-D").arg(&self.layout.pgdata).args([
            "-m",
            "fast",
            "-w",
            "-s",
            "-t",
            &START_TIMEOUT.as_secs().to_string(),
        ]);
        run(cmd, "pg_ctl stop").await
    }

    async fn start_error(&self, reason: String) -> EmbeddedError {
        let tail = match tokio::fs::read_to_string(&self.layout.log).await {
            Ok(text) => {
                let lines: Vec<&str> = text.lines().collect();
                lines[lines.len().saturating_sub(LOG_TAIL_LINES)..].join("\n")
            }
            Err(err) => format!("(cannot read the log: {err})"),
        };
        EmbeddedError::Start {
            reason,
            log: self.layout.log.clone(),
            tail,
        }
    }
}

async fn plan_layout(cfg: &EmbeddedConfig, run_as: &RunAs) -> Result<Layout, EmbeddedError> {
    let data_dir = std::path::absolute(&cfg.data_dir)
        .map_err(|err| EmbeddedError::io(format!("resolving {}", cfg.data_dir.display()), err))?;
    // As root, a data dir made here is searchable by others (0711: not listable) so the
    // `postgres` account can reach the 0700 cluster inside it.
    let mode = if run_as.owner().is_some() {
        0o711
    } else {
        0o700
    };
    let run_as = run_as.clone();
    blocking(move || {
        if !data_dir.is_dir() {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(mode)
                .create(&data_dir)
                .map_err(|err| {
                    EmbeddedError::io(format!("creating {}", data_dir.display()), err)
                })?;
        }
        Layout::plan(&data_dir, &run_as)
    })
    .await
}

fn cluster_major(pgdata: &Path) -> Option<u32> {
    std::fs::read_to_string(pgdata.join("PG_VERSION"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// `"name"` with inner quotes doubled.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// `postgresql:///DB?host=SOCKET_DIR&port=5432&user=postgres`: the form libpq documents for
/// Unix sockets, which sqlx 0.8 also reads (an empty host with a user, `postgres@/db`, it refuses).
fn socket_url(socket_dir: &Path, dbname: &str) -> String {
    // The socket dir is limited to [A-Za-z0-9/._-] (see `layout`), so it needs no escaping.
    format!(
        "postgresql:///{}?host={}&port={PORT}&user={SUPERUSER}",
        percent_encode(dbname),
        socket_dir.display()
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::str::FromStr;

    use sqlx::postgres::PgConnectOptions;

    #[test]
    fn socket_urls_parse_in_sqlx() {
        let url = super::socket_url(Path::new("/srv/voiced/pg-socket"), "voiced test");
        assert_eq!(
            url,
            "postgresql:///voiced%20test?host=/srv/voiced/pg-socket&port=5432&user=postgres"
        );
        let options = PgConnectOptions::from_str(&url).unwrap();
        assert_eq!(
            options.get_socket().map(|p| p.as_path()),
            Some(Path::new("/srv/voiced/pg-socket"))
        );
        assert_eq!(options.get_database(), Some("voiced test"));
        assert_eq!(options.get_username(), "postgres");
        assert_eq!(options.get_port(), 5432);
    }
}
