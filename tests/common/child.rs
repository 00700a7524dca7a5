//! The real `voiced serve` binary as a child process on a test database: for tests that crash
//! it, restart it, or need process-wide settings (environment) that an in-process server cannot
//! take.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `voiced serve`; killed when dropped.
pub struct ChildServer {
    pub base: String,
    child: Child,
}

/// A free loopback port (bound and released: a child process cannot take a port-0 listener).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl ChildServer {
    /// Starts `voiced serve` on `database_url` with `env` added, and waits until it answers
    /// `/healthz` (not `/readyz`: some tests start it deliberately unready).
    pub async fn start(database_url: &str, env: &[(&str, &str)]) -> ChildServer {
        Self::start_logging(database_url, env, None).await
    }

    /// Same, with the server's log (stderr) written to `log`.
    pub async fn start_logging(
        database_url: &str,
        env: &[(&str, &str)],
        log: Option<&std::path::Path>,
    ) -> ChildServer {
        let port = free_port();
        let base = format!("http://127.0.0.1:{port}");
        let mut command = Command::new(env!("CARGO_BIN_EXE_voiced"));
        command
            .arg("serve")
            .env("VOICED_DATABASE_URL", database_url)
            .env("VOICED_BIND", format!("127.0.0.1:{port}"))
            .env("VOICED_PUBLIC_BASE_URL", &base)
            .env(
                "VOICED_SIGNING_SECRET",
                std::str::from_utf8(super::SIGNING_SECRET).unwrap(),
            )
            .env("VOICED_WORKERS", "0")
            .env("VOICED_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        for (name, value) in env {
            command.env(name, value);
        }
        if let Some(log) = log {
            command.stderr(std::fs::File::create(log).expect("log file"));
        }
        let mut child = command.spawn().expect("voiced serve starts");
        let client = super::http_client();
        let healthz = format!("{base}/healthz");
        super::poll_until(Duration::from_secs(120), "voiced serve to answer", || {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("voiced serve exited early: {status}");
            }
            let request = client.get(&healthz).send();
            async move { request.await.ok().filter(|r| r.status() == 200).map(drop) }
        })
        .await;
        ChildServer { base, child }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the process to exit by itself (e.g. at a failpoint).
    pub async fn exited(&mut self) -> std::process::ExitStatus {
        let child = &mut self.child;
        super::poll_until(Duration::from_secs(60), "voiced serve to exit", || {
            let status = child.try_wait().expect("try_wait");
            async move { status }
        })
        .await
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
