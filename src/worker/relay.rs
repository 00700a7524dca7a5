//! The audio of running generations across processes, through Redis (`redis_url`): a
//! generation rendered by a `voiced worker` reaches the synchronous request that waits for it in
//! a `voiced serve` process as it is rendered, the way [`super::streams`] carries it inside one
//! process. [`super::streams::Streams`] uses this when Redis is configured; its interface (and
//! so every door's) is the same either way.
//!
//! One Redis stream per generation, `voiced:audio:{id}`, written by the worker that runs it
//! (`XADD`, in order, on one connection), read from its first entry by every subscriber
//! (`XREAD BLOCK`, each on a connection of its own). Entries:
//! - `k=s`: an attempt starts: `a` (the attempt's random token), `t` (the content type);
//! - `k=c`: a chunk of that attempt: `a`, `n` (its number from 0), `b` (the bytes), `m` (the
//!   audio rendered up to its end, ms: what a delivery cut short after it charges), `w` (the
//!   words its piece says, JSON `[[text, start, end], …]`, for the live speech socket's
//!   alignment);
//! - `k=e`: the attempt ends: `a`, `x` (`completed` or `broken`).
//!
//! Bounds: the stream keeps at most [`MAX_ENTRIES`] entries (`MAXLEN ~`) and expires
//! [`KEEP`] after its last write or read (a subscriber that reads refreshes it, as an
//! in-process entry lives while a request listens). A subscriber holds at most
//! [`READ_COUNT`] entries at a time, read as its caller asks for them: a slow reader holds
//! nothing more. While an attempt runs, its worker keeps `voiced:audio:{id}:alive:{token}` alive
//! (refreshed every third of its time to live, which is 1.5 leases: it outlives the
//! generation's lease). A subscriber that hears nothing for [`BLOCK`] checks it: gone (the
//! worker died) ends the stream broken, as the lease's expiry ends the attempt. A new attempt's
//! start after chunks of an earlier one, or a gap in the chunk numbers (entries trimmed under a
//! subscriber that lagged by more than [`MAX_ENTRIES`]), end it broken too; a subscriber that
//! has seen no chunk yet follows the newest attempt instead.
//!
//! Redis failing never fails a generation: the worker stops relaying it (logged) and renders on;
//! a subscriber whose Redis fails falls back to this process's stream, and the caller to the
//! stored file ([`super::streams`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use redis::Value;
use redis::aio::{ConnectionManager, MultiplexedConnection};
use tokio::sync::mpsc;

use super::streams::{AudioChunk, StreamEnd, StreamEvent};
use crate::engines::text::timing::WordTiming;

/// Entries a generation's stream keeps at most (approximate trimming): start, end and the
/// chunks, one per rendered segment.
pub const MAX_ENTRIES: usize = 4096;
/// How long a stream is kept after its last write or read.
pub const KEEP: Duration = Duration::from_secs(60);
/// How long a subscriber's `XREAD` waits before it checks that the worker is alive.
pub const BLOCK: Duration = Duration::from_secs(1);
/// Entries one `XREAD` returns at most.
pub const READ_COUNT: usize = 16;
/// Idle subscriber connections kept for the next subscriber.
const IDLE_READERS: usize = 32;

/// Redis for this process's streams (cheap to clone).
#[derive(Clone)]
pub struct Relay(Arc<Inner>);

struct Inner {
    client: redis::Client,
    /// The connection every publisher of the process writes on (made on first need).
    writer: tokio::sync::OnceCell<ConnectionManager>,
    /// Subscribers' connections whose last command has answered.
    idle: Mutex<Vec<MultiplexedConnection>>,
    /// Time to live of an attempt's alive key.
    alive: Duration,
}

impl Relay {
    /// Redis at `url` (`redis://…`, `rediss://…`, `unix:///path`); only the URL is checked
    /// here. `lease` is the generations' lease (`lease_secs`): the alive key outlives it.
    pub fn open(url: &str, lease: Duration) -> Result<Self, redis::RedisError> {
        Ok(Self(Arc::new(Inner {
            client: redis::Client::open(url)?,
            writer: tokio::sync::OnceCell::new(),
            idle: Mutex::new(Vec::new()),
            alive: (lease + lease / 2).max(Duration::from_millis(300)),
        })))
    }

    /// Starts relaying an attempt at generation `id`: what the returned outbox is given goes to
    /// Redis in order, on a task of its own (the worker never waits for Redis).
    pub(super) fn publish(&self, id: &str, content_type: &str) -> Outbox {
        let (sender, receiver) = mpsc::unbounded_channel();
        let attempt = format!("{:016x}", rand::random::<u64>());
        let task = Writer {
            inner: self.0.clone(),
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

    /// Reads generation `id`'s stream from its first entry.
    pub(super) fn subscribe(&self, id: &str) -> Inbox {
        Inbox {
            relay: self.clone(),
            key: stream_key(id),
            id: id.to_owned(),
            connection: None,
            cursor: "0".to_owned(),
            buffer: VecDeque::new(),
            attempt: None,
            next_chunk: 0,
            content_type: None,
            yielded: false,
            ended: None,
        }
    }
}

fn stream_key(id: &str) -> String {
    format!("voiced:audio:{id}")
}

fn alive_key(id: &str, attempt: &str) -> String {
    format!("voiced:audio:{id}:alive:{attempt}")
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A publisher's side: dropped, the writer ends the attempt broken.
pub(super) struct Outbox(mpsc::UnboundedSender<Out>);

enum Out {
    Chunk(AudioChunk),
    End(StreamEnd),
}

impl Outbox {
    pub(super) fn chunk(&self, chunk: AudioChunk) {
        // A writer that stopped (Redis failed) has logged why.
        let _ = self.0.send(Out::Chunk(chunk));
    }

    pub(super) fn end(&self, end: StreamEnd) {
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

/// A subscriber's side: the generation's entries from the first, as it asks for them.
pub(super) struct Inbox {
    relay: Relay,
    key: String,
    id: String,
    /// `(connection, busy)`: busy while a command is on its way (a connection dropped busy is
    /// not reused: its answer is still to come).
    connection: Option<(MultiplexedConnection, bool)>,
    /// The id of the last entry read.
    cursor: String,
    buffer: VecDeque<Entry>,
    /// The attempt followed (the newest start seen before any chunk).
    attempt: Option<String>,
    next_chunk: u64,
    content_type: Option<String>,
    /// A chunk has been handed out: from then on only this attempt counts.
    yielded: bool,
    ended: Option<StreamEnd>,
}

enum Entry {
    Start {
        attempt: String,
        content_type: String,
    },
    Chunk {
        attempt: String,
        number: u64,
        chunk: AudioChunk,
    },
    End {
        attempt: String,
        end: StreamEnd,
    },
}

impl Inbox {
    /// The content type of the attempt followed (once its start is read).
    pub(super) fn content_type(&self) -> Option<String> {
        self.content_type.clone()
    }

    /// The next chunk or the end; `Err` when Redis does not answer (the caller stops asking).
    /// Cancel-safe: nothing is consumed until an answer has arrived.
    pub(super) async fn next(&mut self) -> redis::RedisResult<StreamEvent> {
        loop {
            if let Some(end) = self.ended {
                return Ok(StreamEvent::End(end));
            }
            if let Some(entry) = self.buffer.pop_front() {
                if let Some(event) = self.take(entry) {
                    return Ok(event);
                }
                continue;
            }
            if self.read(Some(BLOCK)).await? {
                continue;
            }
            // Nothing for a while: the attempt followed must still be alive.
            let Some(attempt) = self.attempt.clone() else {
                continue;
            };
            let alive: bool = self
                .command(
                    redis::cmd("EXISTS")
                        .arg(alive_key(&self.id, &attempt))
                        .clone(),
                )
                .await?;
            // The end is written before the key goes: read once more before concluding.
            if !alive && !self.read(None).await? {
                tracing::warn!(generation_id = %self.id, "the worker rendering this generation stopped answering");
                self.ended = Some(StreamEnd::Broken);
            }
        }
    }

    /// What one entry means to this subscriber (`None`: nothing to hand out).
    fn take(&mut self, entry: Entry) -> Option<StreamEvent> {
        match entry {
            Entry::Start {
                attempt,
                content_type,
            } => {
                if self.yielded {
                    // Another attempt took over after this one's audio began.
                    self.ended = Some(StreamEnd::Broken);
                    return Some(StreamEvent::End(StreamEnd::Broken));
                }
                self.attempt = Some(attempt);
                self.content_type = Some(content_type);
                self.next_chunk = 0;
                None
            }
            Entry::Chunk {
                attempt,
                number,
                chunk,
            } => {
                if self.attempt.as_deref() != Some(&attempt) {
                    return None;
                }
                if number != self.next_chunk {
                    // Trimmed under a lagging reader: what follows would not be the audio.
                    self.ended = Some(StreamEnd::Broken);
                    return Some(StreamEvent::End(StreamEnd::Broken));
                }
                self.next_chunk += 1;
                self.yielded = true;
                Some(StreamEvent::Chunk(chunk))
            }
            Entry::End { attempt, end } => {
                if self.attempt.as_deref() != Some(&attempt) {
                    return None;
                }
                self.ended = Some(end);
                Some(StreamEvent::End(end))
            }
        }
    }

    /// Reads the entries after the cursor into the buffer, waiting up to `block` for one;
    /// whether any came. Refreshes the stream's time to live (a reader keeps it).
    async fn read(&mut self, block: Option<Duration>) -> redis::RedisResult<bool> {
        let mut xread = redis::cmd("XREAD");
        xread.arg("COUNT").arg(READ_COUNT);
        if let Some(block) = block {
            xread.arg("BLOCK").arg(millis(block));
        }
        xread.arg("STREAMS").arg(&self.key).arg(&self.cursor);
        let replies: Vec<Value> = self
            .pipeline(
                redis::pipe()
                    .cmd("PEXPIRE")
                    .arg(&self.key)
                    .arg(millis(KEEP))
                    .ignore()
                    .add_command(xread)
                    .clone(),
            )
            .await?;
        let entries = replies
            .into_iter()
            .next()
            .map(parse_xread)
            .unwrap_or_default();
        let any = !entries.is_empty();
        for (id, entry) in entries {
            self.cursor = id;
            if let Some(entry) = entry {
                self.buffer.push_back(entry);
            }
        }
        Ok(any)
    }

    async fn command<T: redis::FromRedisValue>(
        &mut self,
        command: redis::Cmd,
    ) -> redis::RedisResult<T> {
        let connection = self.connection().await?;
        let answer = command.query_async(connection).await;
        self.settled();
        answer
    }

    async fn pipeline<T: redis::FromRedisValue>(
        &mut self,
        pipeline: redis::Pipeline,
    ) -> redis::RedisResult<T> {
        let connection = self.connection().await?;
        let answer = pipeline.query_async(connection).await;
        self.settled();
        answer
    }

    /// This subscriber's connection, marked busy until [`Inbox::settled`].
    async fn connection(&mut self) -> redis::RedisResult<&mut MultiplexedConnection> {
        if self.connection.as_ref().is_some_and(|(_, busy)| *busy) {
            // A command was abandoned on it (the caller stopped waiting): its answer would
            // come first.
            self.connection = None;
        }
        if self.connection.is_none() {
            let idle = lock(&self.relay.0.idle).pop();
            let connection = match idle {
                Some(connection) => connection,
                None => {
                    let config = redis::AsyncConnectionConfig::new()
                        .set_connection_timeout(Duration::from_secs(2))
                        .set_response_timeout(BLOCK + Duration::from_secs(5));
                    self.relay
                        .0
                        .client
                        .get_multiplexed_async_connection_with_config(&config)
                        .await?
                }
            };
            self.connection = Some((connection, false));
        }
        let (connection, busy) = self.connection.as_mut().expect("just set");
        *busy = true;
        Ok(connection)
    }

    fn settled(&mut self) {
        if let Some((_, busy)) = self.connection.as_mut() {
            *busy = false;
        }
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        if let Some((connection, false)) = self.connection.take() {
            let mut idle = lock(&self.relay.0.idle);
            if idle.len() < IDLE_READERS {
                idle.push(connection);
            }
        }
    }
}

/// `XREAD`'s answer for one stream: each entry's id and what it is (`None`: not an entry of
/// this format, skipped).
fn parse_xread(reply: Value) -> Vec<(String, Option<Entry>)> {
    let streams = match reply {
        Value::Array(streams) => streams,
        // RESP3 answers a map of key → entries.
        Value::Map(pairs) => pairs
            .into_iter()
            .map(|(k, v)| Value::Array(vec![k, v]))
            .collect(),
        _ => return Vec::new(),
    };
    let mut out = Vec::new();
    for stream in streams {
        let Value::Array(mut pair) = stream else {
            continue;
        };
        let Some(Value::Array(entries)) = pair.pop() else {
            continue;
        };
        for entry in entries {
            let Value::Array(mut parts) = entry else {
                continue;
            };
            let (Some(fields), Some(id)) = (parts.pop(), parts.pop()) else {
                continue;
            };
            let Some(id) = text(id) else { continue };
            let fields = match fields {
                Value::Array(fields) => fields,
                Value::Map(pairs) => pairs.into_iter().flat_map(|(k, v)| [k, v]).collect(),
                _ => Vec::new(),
            };
            out.push((id, entry_of(fields)));
        }
    }
    out
}

fn entry_of(fields: Vec<Value>) -> Option<Entry> {
    let mut kind = None;
    let (mut attempt, mut content_type, mut number, mut end_ms, mut bytes, mut end) =
        (None, None, None, None, None, None);
    let mut words = Vec::new();
    let mut fields = fields.into_iter();
    while let (Some(name), Some(value)) = (fields.next(), fields.next()) {
        match text(name)?.as_str() {
            "k" => kind = text(value),
            "a" => attempt = text(value),
            "t" => content_type = text(value),
            "n" => number = text(value)?.parse::<u64>().ok(),
            "m" => end_ms = text(value)?.parse::<u64>().ok(),
            "b" => bytes = blob(value),
            "x" => end = text(value),
            "w" => words = words_of(&text(value)?)?,
            _ => {}
        }
    }
    let attempt = attempt?;
    match kind?.as_str() {
        "s" => Some(Entry::Start {
            attempt,
            content_type: content_type?,
        }),
        "c" => Some(Entry::Chunk {
            attempt,
            number: number?,
            chunk: AudioChunk {
                bytes: bytes?,
                end_ms: end_ms?,
                words,
            },
        }),
        "e" => Some(Entry::End {
            attempt,
            end: match end?.as_str() {
                "completed" => StreamEnd::Completed,
                _ => StreamEnd::Broken,
            },
        }),
        _ => None,
    }
}

/// A chunk's words as its `w` field.
fn words_json(words: &[WordTiming]) -> String {
    serde_json::Value::Array(
        words
            .iter()
            .map(|w| serde_json::json!([w.text, w.start, w.end]))
            .collect(),
    )
    .to_string()
}

/// A `w` field's words; `None` when it is not what [`words_json`] writes.
fn words_of(json: &str) -> Option<Vec<WordTiming>> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    value
        .as_array()?
        .iter()
        .map(|w| {
            Some(WordTiming {
                text: w.get(0)?.as_str()?.to_owned(),
                start: w.get(1)?.as_f64()?,
                end: w.get(2)?.as_f64()?,
            })
        })
        .collect()
}

fn blob(value: Value) -> Option<Bytes> {
    match value {
        Value::BulkString(bytes) => Some(Bytes::from(bytes)),
        Value::SimpleString(s) => Some(Bytes::from(s.into_bytes())),
        _ => None,
    }
}

fn text(value: Value) -> Option<String> {
    String::from_utf8(blob(value)?.to_vec()).ok()
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunks_words_cross_as_its_w_field() {
        let words = vec![
            WordTiming {
                text: "Hello,".into(),
                start: 0.0,
                end: 0.42,
            },
            WordTiming {
                text: "\"world\"".into(),
                start: 0.5,
                end: 1.25,
            },
        ];
        assert_eq!(words_of(&words_json(&words)), Some(words));
        assert_eq!(words_of("[]"), Some(Vec::new()));
        assert_eq!(words_of("[[1, 2]]"), None);
    }

    fn inbox() -> Inbox {
        // Only the URL is checked: nothing here talks to Redis.
        Relay::open("redis://127.0.0.1:1", Duration::from_secs(2))
            .unwrap()
            .subscribe("gen_1")
    }

    fn start(attempt: &str) -> Entry {
        Entry::Start {
            attempt: attempt.into(),
            content_type: format!("audio/{attempt}"),
        }
    }

    fn chunk(attempt: &str, number: u64) -> Entry {
        Entry::Chunk {
            attempt: attempt.into(),
            number,
            chunk: AudioChunk {
                bytes: Bytes::from(format!("{attempt}{number}")),
                end_ms: 100 * (number + 1),
                words: Vec::new(),
            },
        }
    }

    fn bytes(event: Option<StreamEvent>) -> String {
        match event {
            Some(StreamEvent::Chunk(c)) => String::from_utf8(c.bytes.to_vec()).unwrap(),
            other => panic!("a chunk expected, got {other:?}"),
        }
    }

    #[test]
    fn a_subscriber_without_audio_yet_follows_the_newest_attempt() {
        let mut inbox = inbox();
        assert_eq!(inbox.take(start("a")), None);
        // The first attempt ended before any chunk; the second takes over.
        assert_eq!(
            inbox.take(Entry::End {
                attempt: "a".into(),
                end: StreamEnd::Broken
            }),
            Some(StreamEvent::End(StreamEnd::Broken))
        );
        let mut inbox = self::inbox();
        assert_eq!(inbox.take(start("a")), None);
        assert_eq!(inbox.take(start("b")), None);
        assert_eq!(inbox.content_type().as_deref(), Some("audio/b"));
        // A late chunk of the first attempt (a worker that lost its lease) is not this audio.
        assert_eq!(inbox.take(chunk("a", 0)), None);
        assert_eq!(bytes(inbox.take(chunk("b", 0))), "b0");
        assert_eq!(bytes(inbox.take(chunk("b", 1))), "b1");
        assert_eq!(
            inbox.take(Entry::End {
                attempt: "b".into(),
                end: StreamEnd::Completed
            }),
            Some(StreamEvent::End(StreamEnd::Completed))
        );
    }

    #[test]
    fn a_new_attempt_after_audio_or_a_gap_ends_the_stream_broken() {
        let mut inbox = inbox();
        inbox.take(start("a"));
        assert_eq!(bytes(inbox.take(chunk("a", 0))), "a0");
        assert_eq!(
            inbox.take(start("b")),
            Some(StreamEvent::End(StreamEnd::Broken))
        );
        assert_eq!(inbox.ended, Some(StreamEnd::Broken));

        let mut inbox = self::inbox();
        inbox.take(start("a"));
        assert_eq!(bytes(inbox.take(chunk("a", 0))), "a0");
        // Chunk 1 was trimmed away under this reader.
        assert_eq!(
            inbox.take(chunk("a", 2)),
            Some(StreamEvent::End(StreamEnd::Broken))
        );
    }

    #[test]
    fn entries_parse_from_xread_answers() {
        let field = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let reply = Value::Array(vec![Value::Array(vec![
            field("voiced:audio:gen_1"),
            Value::Array(vec![
                Value::Array(vec![
                    field("1-0"),
                    Value::Array(vec![
                        field("a"),
                        field("x1"),
                        field("k"),
                        field("s"),
                        field("t"),
                        field("audio/wav"),
                    ]),
                ]),
                Value::Array(vec![
                    field("2-0"),
                    Value::Array(vec![
                        field("a"),
                        field("x1"),
                        field("k"),
                        field("c"),
                        field("n"),
                        field("0"),
                        field("m"),
                        field("250"),
                        field("b"),
                        Value::BulkString(vec![0, 255, 1]),
                    ]),
                ]),
                Value::Array(vec![
                    field("3-0"),
                    Value::Array(vec![field("k"), field("?")]),
                ]),
            ]),
        ])]);
        let entries = parse_xread(reply);
        let ids: Vec<&str> = entries.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["1-0", "2-0", "3-0"]);
        assert!(
            matches!(&entries[0].1, Some(Entry::Start { content_type, .. }) if content_type == "audio/wav")
        );
        assert!(matches!(
            &entries[1].1,
            Some(Entry::Chunk { number: 0, chunk, .. }) if chunk.end_ms == 250 && chunk.bytes[..] == [0, 255, 1]
        ));
        assert!(
            entries[2].1.is_none(),
            "an entry of another format is skipped"
        );
        assert!(parse_xread(Value::Nil).is_empty(), "BLOCK ran out");
    }
}
