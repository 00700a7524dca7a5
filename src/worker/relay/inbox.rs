//! The subscribing side of the relay: one generation's stream read from its first entry, its
//! attempts followed, and the wire's entries parsed.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use redis::Value;
use redis::aio::MultiplexedConnection;

use super::{BLOCK, IDLE_READERS, KEEP, READ_COUNT, Relay, alive_key, lock, millis, stream_key};
use crate::engines::text::timing::WordTiming;
use crate::worker::streams::{AudioChunk, StreamEnd, StreamEvent};

/// A subscriber's side: the generation's entries from the first, as it asks for them.
pub(in crate::worker) struct Inbox {
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
    pub(in crate::worker) fn content_type(&self) -> Option<String> {
        self.content_type.clone()
    }

    /// The next chunk or the end; `Err` when Redis does not answer (the caller stops asking).
    /// Cancel-safe: nothing is consumed until an answer has arrived.
    pub(in crate::worker) async fn next(&mut self) -> redis::RedisResult<StreamEvent> {
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

impl Inbox {
    /// A subscriber of generation `id`, from its first entry.
    pub(super) fn new(relay: Relay, id: &str) -> Self {
        Inbox {
            relay,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::relay::outbox::words_json;

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
