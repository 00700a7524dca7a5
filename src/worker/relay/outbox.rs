//! The publishing side of the relay: a worker's chunks written to its generation's stream, in
//! order, by a task of their own.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionManager;
use tokio::sync::mpsc;

use super::{Inner, KEEP, MAX_ENTRIES, alive_key, millis, stream_key};
use crate::engines::text::timing::WordTiming;
use crate::worker::streams::{AudioChunk, StreamEnd};

/// Starts relaying an attempt at generation `id` (see [`super::Relay::publish`]).
pub(super) fn publish(inner: Arc<Inner>, id: &str, content_type: &str) -> Outbox {
    let (sender, receiver) = mpsc::unbounded_channel();
    let attempt = format!("{:016x}", rand::random::<u64>());
    let task = Writer {
        inner,
        key: stream_key(id),
        alive_key: alive_key(id, &attempt),
        attempt,
    };
    let content_type = content_type.to_owned();
    let id = id.to_owned();
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn(async move {
                if let Err(err) = task.run(&content_type, receiver).await {
                    // The error names the failure, never the URL (it may carry a password).
                    tracing::warn!(generation_id = %id, error = %err, "Redis unreachable: this generation's audio reaches only this process's requests");
                }
            });
        }
        Err(_) => tracing::warn!(generation_id = %id, "no runtime: the audio is not relayed"),
    }
    Outbox(sender)
}

/// A publisher's side: dropped, the writer ends the attempt broken.
pub(in crate::worker) struct Outbox(mpsc::UnboundedSender<Out>);

enum Out {
    Chunk(AudioChunk),
    End(StreamEnd),
}

impl Outbox {
    pub(in crate::worker) fn chunk(&self, chunk: AudioChunk) {
        // A writer that stopped (Redis failed) has logged why.
        let _ = self.0.send(Out::Chunk(chunk));
    }

    pub(in crate::worker) fn end(&self, end: StreamEnd) {
        let _ = self.0.send(Out::End(end));
    }
}

struct Writer {
    inner: Arc<Inner>,
    key: String,
    alive_key: String,
    attempt: String,
}

impl Writer {
    async fn run(
        self,
        content_type: &str,
        mut outbox: mpsc::UnboundedReceiver<Out>,
    ) -> redis::RedisResult<()> {
        let mut connection = self
            .inner
            .writer
            .get_or_try_init(|| async {
                let config = redis::aio::ConnectionManagerConfig::new()
                    .set_connection_timeout(Duration::from_secs(2))
                    .set_response_timeout(Duration::from_secs(5))
                    .set_number_of_retries(1);
                ConnectionManager::new_with_config(self.inner.client.clone(), config).await
            })
            .await?
            .clone();
        self.write(
            &mut connection,
            &[("k", b"s"), ("t", content_type.as_bytes())],
        )
        .await?;
        let mut beat = tokio::time::interval(self.inner.alive / 3);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        beat.tick().await;
        let mut number = 0u64;
        loop {
            tokio::select! {
                out = outbox.recv() => match out {
                    Some(Out::Chunk(chunk)) => {
                        let (n, m) = (number.to_string(), chunk.end_ms.to_string());
                        let w = words_json(&chunk.words);
                        let fields: [(&str, &[u8]); 5] = [
                            ("k", b"c"),
                            ("n", n.as_bytes()),
                            ("m", m.as_bytes()),
                            ("b", &chunk.bytes),
                            ("w", w.as_bytes()),
                        ];
                        self.write(&mut connection, &fields).await?;
                        number += 1;
                    }
                    end => {
                        // Dropped without an end: broken (`streams::Publisher` always sends
                        // one; this is the same rule).
                        let end = match end {
                            Some(Out::End(StreamEnd::Completed)) => "completed",
                            _ => "broken",
                        };
                        return self.end(&mut connection, end).await;
                    }
                },
                _ = beat.tick() => {
                    redis::pipe()
                        .cmd("SET").arg(&self.alive_key).arg(1).arg("PX").arg(millis(self.inner.alive)).ignore()
                        .cmd("PEXPIRE").arg(&self.key).arg(millis(KEEP)).ignore()
                        .query_async::<()>(&mut connection)
                        .await?;
                }
            }
        }
    }

    /// Appends an entry of this attempt, keeps the stream and the alive key.
    async fn write(
        &self,
        connection: &mut ConnectionManager,
        fields: &[(&str, &[u8])],
    ) -> redis::RedisResult<()> {
        let mut xadd = redis::cmd("XADD");
        xadd.arg(&self.key)
            .arg("MAXLEN")
            .arg("~")
            .arg(MAX_ENTRIES)
            .arg("*")
            .arg("a")
            .arg(&self.attempt);
        for (name, value) in fields {
            xadd.arg(*name).arg(*value);
        }
        redis::pipe()
            .atomic()
            .add_command(xadd)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&self.key)
            .arg(millis(KEEP))
            .ignore()
            .cmd("SET")
            .arg(&self.alive_key)
            .arg(1)
            .arg("PX")
            .arg(millis(self.inner.alive))
            .ignore()
            .query_async::<()>(connection)
            .await
    }

    /// The end entry, then the alive key goes (in one transaction: a subscriber that finds the
    /// key gone and reads again finds the end).
    async fn end(&self, connection: &mut ConnectionManager, end: &str) -> redis::RedisResult<()> {
        redis::pipe()
            .atomic()
            .cmd("XADD")
            .arg(&self.key)
            .arg("MAXLEN")
            .arg("~")
            .arg(MAX_ENTRIES)
            .arg("*")
            .arg("a")
            .arg(&self.attempt)
            .arg("k")
            .arg("e")
            .arg("x")
            .arg(end)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&self.key)
            .arg(millis(KEEP))
            .ignore()
            .cmd("DEL")
            .arg(&self.alive_key)
            .ignore()
            .query_async::<()>(connection)
            .await
    }
}

/// A chunk's words as its `w` field.
pub(super) fn words_json(words: &[WordTiming]) -> String {
    serde_json::Value::Array(
        words
            .iter()
            .map(|w| serde_json::json!([w.text, w.start, w.end]))
            .collect(),
    )
    .to_string()
}
