//! A real webhook receiver (an HTTP server on a loopback port) that records what it is sent, and
//! the independent verifier: the `standardwebhooks` package from PyPI (tests/webhooks/verify.py),
//! in the venv `scripts/test.sh` makes (`VOICED_WEBHOOKS_PYTHON`, default
//! `~/.cache/voiced/venv-webhooks/bin/python`).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub id: String,
    pub timestamp: String,
    pub signature: String,
    pub body: String,
}

impl Received {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("a JSON body")
    }
}

#[derive(Default)]
struct Shared {
    received: Mutex<Vec<Received>>,
    /// Answers with this status once `fail_first` requests have had 500.
    status: AtomicU16,
    fail_first: AtomicUsize,
    /// Requests whose answer is still being held (the slow receiver).
    holding: AtomicUsize,
    hold: Mutex<Option<Duration>>,
}

/// A receiver on a loopback port; stopped when dropped.
pub struct Receiver {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    server: Option<tokio::task::JoinHandle<()>>,
}

async fn receive(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    shared.received.lock().unwrap().push(Received {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        body: String::from_utf8(body.to_vec()).expect("a UTF-8 body"),
    });
    let hold = *shared.hold.lock().unwrap();
    if let Some(hold) = hold {
        shared.holding.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(hold).await;
        shared.holding.fetch_sub(1, Ordering::SeqCst);
    }
    let failing = shared
        .fail_first
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if failing {
        return StatusCode::INTERNAL_SERVER_ERROR;
    }
    StatusCode::from_u16(shared.status.load(Ordering::SeqCst)).unwrap()
}

impl Receiver {
    /// Answers 204 to everything.
    pub async fn start() -> Receiver {
        Self::start_on("127.0.0.1:0".parse().unwrap()).await
    }

    /// Same, on `addr` (a receiver that comes back on the port it was down on).
    pub async fn start_on(addr: SocketAddr) -> Receiver {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_reuseaddr(true).unwrap();
        socket.bind(addr).expect("bind the receiver");
        let listener = socket.listen(64).unwrap();
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            status: AtomicU16::new(204),
            ..Shared::default()
        });
        let app = axum::Router::new()
            .fallback(receive)
            .with_state(shared.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver {
            addr,
            shared,
            server: Some(server),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/hooks", self.addr)
    }

    /// Answers `status` from now on.
    pub fn answer(&self, status: u16) {
        self.shared.status.store(status, Ordering::SeqCst);
    }

    /// Answers 500 to the next `n` requests.
    pub fn fail_next(&self, n: usize) {
        self.shared.fail_first.store(n, Ordering::SeqCst);
    }

    /// Holds every answer this long (a slow receiver).
    pub fn hold(&self, hold: Duration) {
        *self.shared.hold.lock().unwrap() = Some(hold);
    }

    /// Requests whose answer is being held now.
    pub fn holding(&self) -> usize {
        self.shared.holding.load(Ordering::SeqCst)
    }

    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// Waits (bounded) until a request with `event` about `subject` (the data's `id`, or the
    /// capture's `capture.id`) has come in; returns it.
    pub async fn wait_for(&self, event: &str, subject: &str) -> Received {
        super::poll_until(
            Duration::from_secs(120),
            &format!("{event} about {subject} at the receiver"),
            || {
                let found = self.received().into_iter().find(|r| {
                    let body = r.json();
                    body["type"] == event && subject_of(&body) == subject
                });
                async move { found }
            },
        )
        .await
    }

    /// Stops listening (the port is refused from now on).
    pub async fn stop(mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
            let _ = server.await;
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
        }
    }
}

/// The id of what a delivery's payload is about.
pub fn subject_of(body: &Value) -> String {
    body["data"]["id"]
        .as_str()
        .or_else(|| body["data"]["capture"]["id"].as_str())
        .unwrap_or_default()
        .to_owned()
}

/// The Python interpreter with `standardwebhooks`, or `None` (the test says SKIPPED).
pub fn verifier() -> Option<PathBuf> {
    let python = std::env::var_os("VOICED_WEBHOOKS_PYTHON")
        .map(PathBuf::from)
        .or_else(|| {
            let home = std::env::var_os("HOME")?;
            Some(PathBuf::from(home).join(".cache/voiced/venv-webhooks/bin/python"))
        })?;
    let ok = Command::new(&python)
        .args(["-c", "import standardwebhooks"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok && std::env::var("VOICED_REQUIRE_WEBHOOK_VERIFIER").as_deref() == Ok("1") {
        panic!("{} lacks the standardwebhooks package", python.display());
    }
    ok.then_some(python)
}

/// Verifies each `(secret, delivery)` with the `standardwebhooks` package; a copy of each with
/// its body altered must fail. Panics with the verifier's report when any outcome is not so.
pub fn verify_independently(python: &PathBuf, deliveries: &[(String, Received)]) {
    let mut input = Vec::new();
    for (secret, d) in deliveries {
        let entry = json!({
            "secret": secret, "id": d.id, "timestamp": d.timestamp,
            "signature": d.signature, "body": d.body,
        });
        let mut tampered = entry.clone();
        tampered["body"] = json!(d.body.replacen('{', "{ ", 1));
        tampered["expect"] = json!(false);
        input.push(entry);
        input.push(tampered);
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/webhooks/verify.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the verifier starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&input).unwrap().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "standardwebhooks refused a delivery:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let verified = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|l| l.contains("verified=True"))
        .count();
    assert_eq!(verified, deliveries.len(), "every delivery verified");
}

/// A receiver that accepts every connection and never answers: each attempt at it runs into
/// the attempt's time limit (the tarpit of issue 36 item 6). Stopped when dropped.
pub struct Tarpit {
    pub addr: SocketAddr,
    accepted: Arc<AtomicUsize>,
    server: tokio::task::JoinHandle<()>,
}

impl Tarpit {
    pub async fn start() -> Tarpit {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the tarpit");
        let addr = listener.local_addr().unwrap();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = accepted.clone();
        let server = tokio::spawn(async move {
            // Kept open, never read or answered.
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
                counter.fetch_add(1, Ordering::SeqCst);
            }
        });
        Tarpit {
            addr,
            accepted,
            server,
        }
    }

    /// An endpoint URL at the tarpit (`n` tells several endpoints apart).
    pub fn url(&self, n: usize) -> String {
        format!("http://{}/tarpit/{n}", self.addr)
    }

    /// Connections accepted so far (each an attempt that will get no answer).
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Tarpit {
    fn drop(&mut self) {
        self.server.abort();
    }
}
