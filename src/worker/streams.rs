//! The audio of running generations as it is produced, for the synchronous requests
//! (`POST /v1/audio/speech`, and every door that streams a generation) that stream it to their
//! clients.
//!
//! A worker publishes each encoded chunk of the generation it runs; a request subscribes to its
//! generation's id and receives every chunk from the first, whenever it subscribes while the
//! worker runs. Inside one process this registry carries it. With Redis (`redis_url`, the
//! scaled layout) every publisher also relays its chunks there and every subscriber also reads
//! them from there ([`super::relay`]), so that a generation a `voiced worker` process renders
//! reaches a `voiced serve` process's request as it is rendered. A subscriber follows whichever
//! source gives it something first (this process's worker, when it runs the generation here).
//! Without Redis, or while it fails, a generation another process runs is never seen here, and
//! its request answers from the blob store once the generation has completed
//! (`worker::completions`). The audio is the same either way: the stored file is the
//! concatenation of the published chunks, finished (exact wav sizes where the stream carried
//! the placeholder, the mp3 Info tag frame in front; `audio::StreamEncoder`).
//!
//! An entry lives while a worker publishes or a request listens, whichever is longer; the chunks
//! of a generation nobody listens to are dropped when it ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use tokio::sync::Notify;

use super::relay::{Inbox, Outbox, Relay};

/// How a published generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// Every chunk was published, and the generation is stored, completed and charged.
    Completed,
    /// The generation failed, was cancelled or handed back: what was published is not the
    /// whole audio (it may be nothing at all).
    Broken,
}

/// One encoded chunk and how far into the audio it reaches: `end_ms` is the audio rendered
/// when the chunk was encoded (the charge of a delivery cut short after this chunk). `words`:
/// the words the chunk's piece says, in seconds from the start of the generation's audio, for
/// engines that know them (the live speech socket's alignment); empty otherwise.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioChunk {
    pub bytes: Bytes,
    pub end_ms: u64,
    pub words: Vec<crate::engines::text::timing::WordTiming>,
}

/// What a subscription yields next.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    Chunk(AudioChunk),
    End(StreamEnd),
}

/// The registry of one process (cheap to clone).
#[derive(Clone, Default)]
pub struct Streams {
    entries: Arc<Mutex<HashMap<String, Arc<Entry>>>>,
    /// Redis, in the scaled layout: chunks cross processes there too.
    relay: Option<Relay>,
}

#[derive(Default)]
struct Entry {
    state: Mutex<EntryState>,
    changed: Notify,
}

#[derive(Default)]
struct EntryState {
    content_type: Option<String>,
    chunks: Vec<AudioChunk>,
    end: Option<StreamEnd>,
    /// A worker has started publishing (and may have ended).
    published: bool,
    publishing: bool,
    subscribers: usize,
}

impl Streams {
    /// A registry whose publishers and subscribers meet other processes' in Redis too.
    pub fn relayed(relay: Relay) -> Self {
        Self {
            entries: Arc::default(),
            relay: Some(relay),
        }
    }

    /// Starts publishing generation `id`. A previous attempt's entry (a generation handed back
    /// and claimed again here) is left to its subscribers, who saw it end broken.
    pub fn publish(&self, id: &str, content_type: &str) -> Publisher {
        let mut entries = lock(&self.entries);
        let entry = match entries.get(id) {
            Some(entry) if !lock(&entry.state).published => entry.clone(),
            _ => {
                let entry = Arc::new(Entry::default());
                entries.insert(id.to_owned(), entry.clone());
                entry
            }
        };
        {
            let mut state = lock(&entry.state);
            state.published = true;
            state.publishing = true;
            state.content_type = Some(content_type.to_owned());
        }
        Publisher {
            streams: self.clone(),
            id: id.to_owned(),
            entry,
            outbox: self.relay.as_ref().map(|r| r.publish(id, content_type)),
            ended: false,
        }
    }

    /// Listens to generation `id`: every chunk from the first, then its end. Until a worker
    /// publishes it, the subscription waits (forever, when another process runs it and there is
    /// no Redis).
    pub fn subscribe(&self, id: &str) -> Subscription {
        let mut entries = lock(&self.entries);
        let entry = entries.entry(id.to_owned()).or_default().clone();
        lock(&entry.state).subscribers += 1;
        Subscription {
            streams: self.clone(),
            id: id.to_owned(),
            entry,
            next: 0,
            remote: self.relay.as_ref().map(|r| r.subscribe(id)),
            source: Source::Undecided,
        }
    }

    /// Entries held (for tests: none may be left behind).
    pub fn open(&self) -> usize {
        lock(&self.entries).len()
    }

    /// Drops the entry when nobody publishes or listens any more (and it is still the one
    /// registered under `id`).
    fn release(&self, id: &str, entry: &Arc<Entry>) {
        let mut entries = lock(&self.entries);
        let idle = {
            let state = lock(&entry.state);
            !state.publishing && state.subscribers == 0
        };
        if idle && entries.get(id).is_some_and(|e| Arc::ptr_eq(e, entry)) {
            entries.remove(id);
        }
    }
}

/// The worker's end of a stream. Dropped without [`Publisher::finish`], it ends the stream
/// broken.
pub struct Publisher {
    streams: Streams,
    id: String,
    entry: Arc<Entry>,
    /// Redis's copy, in the scaled layout.
    outbox: Option<Outbox>,
    ended: bool,
}

impl Publisher {
    pub fn chunk(&self, chunk: AudioChunk) {
        if let Some(outbox) = &self.outbox {
            outbox.chunk(chunk.clone());
        }
        lock(&self.entry.state).chunks.push(chunk);
        self.entry.changed.notify_waiters();
    }

    pub fn finish(mut self, end: StreamEnd) {
        self.end(end);
    }

    fn end(&mut self, end: StreamEnd) {
        if self.ended {
            return;
        }
        self.ended = true;
        if let Some(outbox) = &self.outbox {
            outbox.end(end);
        }
        {
            let mut state = lock(&self.entry.state);
            state.end = Some(end);
            state.publishing = false;
        }
        self.entry.changed.notify_waiters();
        self.streams.release(&self.id, &self.entry);
    }
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.end(StreamEnd::Broken);
    }
}

/// A request's end of a stream.
pub struct Subscription {
    streams: Streams,
    id: String,
    entry: Arc<Entry>,
    next: usize,
    /// Redis's copy, in the scaled layout (gone once this process's stream is followed, or
    /// when Redis fails).
    remote: Option<Inbox>,
    source: Source,
}

/// Where a subscription's chunks come from: decided by the first event either gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Undecided,
    Local,
    Remote,
}

impl Subscription {
    /// The next chunk, or the end. Waits while the worker renders (or while no worker has
    /// claimed the generation). Cancel-safe.
    pub async fn next(&mut self) -> StreamEvent {
        loop {
            let remote = match (self.source, self.remote.as_mut()) {
                (Source::Remote, Some(remote)) => {
                    return remote.next().await.unwrap_or_else(|err| {
                        // Redis failed under a stream already under way: it is cut.
                        tracing::warn!(generation_id = %self.id, error = %err, "Redis failed mid-stream");
                        self.remote = None;
                        StreamEvent::End(StreamEnd::Broken)
                    });
                }
                // Its Redis failed after it chose it: that stream has ended.
                (Source::Remote, None) => return StreamEvent::End(StreamEnd::Broken),
                (Source::Undecided, Some(remote)) if !lock(&self.entry.state).published => remote,
                _ => {
                    // A worker of this process runs it (or there is no Redis to hear another's).
                    self.source = Source::Local;
                    self.remote = None;
                    return next_local(&self.entry, &mut self.next).await;
                }
            };
            tokio::select! {
                biased;
                event = next_local(&self.entry, &mut self.next) => {
                    self.source = Source::Local;
                    self.remote = None;
                    return event;
                }
                event = remote.next() => match event {
                    Ok(event) => {
                        self.source = Source::Remote;
                        return event;
                    }
                    Err(err) => {
                        tracing::warn!(generation_id = %self.id, error = %err, "Redis unreachable: waiting for this process's worker or the stored file");
                        self.remote = None;
                    }
                },
            }
        }
    }

    /// The content type the worker announced (known once it publishes).
    pub fn content_type(&self) -> Option<String> {
        match (self.source, &self.remote) {
            (Source::Remote, Some(remote)) => remote.content_type(),
            _ => lock(&self.entry.state).content_type.clone(),
        }
    }
}

/// The next chunk of this process's entry after `next`, or its end.
async fn next_local(entry: &Entry, next: &mut usize) -> StreamEvent {
    loop {
        let changed = entry.changed.notified();
        tokio::pin!(changed);
        // Registered before looking, so that a chunk published in between is not missed.
        changed.as_mut().enable();
        {
            let state = lock(&entry.state);
            if let Some(chunk) = state.chunks.get(*next) {
                *next += 1;
                return StreamEvent::Chunk(chunk.clone());
            }
            if let Some(end) = state.end {
                return StreamEvent::End(end);
            }
        }
        changed.await;
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        lock(&self.entry.state).subscribers -= 1;
        self.streams.release(&self.id, &self.entry);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn audio(s: &'static str) -> AudioChunk {
        AudioChunk {
            bytes: Bytes::from_static(s.as_bytes()),
            end_ms: s.len() as u64 * 100,
            words: Vec::new(),
        }
    }

    fn chunk(s: &'static str) -> StreamEvent {
        StreamEvent::Chunk(audio(s))
    }

    #[tokio::test]
    async fn a_late_subscriber_gets_every_chunk_from_the_first() {
        let streams = Streams::default();
        let publisher = streams.publish("gen_1", "audio/wav");
        publisher.chunk(audio("a"));
        let mut early = streams.subscribe("gen_1");
        publisher.chunk(audio("b"));
        let mut late = streams.subscribe("gen_1");
        assert_eq!(late.content_type().as_deref(), Some("audio/wav"));
        assert_eq!(early.next().await, chunk("a"));
        assert_eq!(late.next().await, chunk("a"));
        assert_eq!(late.next().await, chunk("b"));
        let waiting = tokio::spawn(async move {
            let mut seen = Vec::new();
            loop {
                match early.next().await {
                    StreamEvent::Chunk(c) => seen.push(c),
                    StreamEvent::End(end) => return (seen, end),
                }
            }
        });
        publisher.chunk(audio("c"));
        publisher.finish(StreamEnd::Completed);
        let (seen, end) = waiting.await.unwrap();
        assert_eq!(seen, [audio("b"), audio("c")]);
        assert_eq!(end, StreamEnd::Completed);
        assert_eq!(late.next().await, chunk("c"));
        assert_eq!(late.next().await, StreamEvent::End(StreamEnd::Completed));
        assert_eq!(streams.open(), 1, "held by the late subscriber");
        drop(late);
        assert_eq!(streams.open(), 0);
    }

    #[tokio::test]
    async fn a_subscriber_first_then_the_worker_and_nothing_left_behind() {
        let streams = Streams::default();
        let mut sub = streams.subscribe("gen_2");
        assert_eq!(sub.content_type(), None);
        let publisher = streams.publish("gen_2", "audio/mpeg");
        publisher.chunk(audio("x"));
        drop(publisher); // dropped without finishing: broken
        assert_eq!(sub.next().await, chunk("x"));
        assert_eq!(sub.next().await, StreamEvent::End(StreamEnd::Broken));
        drop(sub);
        assert_eq!(streams.open(), 0);
        // Published with nobody listening: gone when it ends.
        streams
            .publish("gen_3", "audio/ogg")
            .finish(StreamEnd::Completed);
        assert_eq!(streams.open(), 0);
        // Listened to and never published here (another process runs it): gone with the
        // listener.
        drop(streams.subscribe("gen_4"));
        assert_eq!(streams.open(), 0);
    }

    #[tokio::test]
    async fn a_second_attempt_starts_a_new_stream() {
        let streams = Streams::default();
        let mut first = streams.subscribe("gen_5");
        let attempt = streams.publish("gen_5", "audio/wav");
        attempt.chunk(audio("1"));
        drop(attempt);
        let again = streams.publish("gen_5", "audio/wav");
        let mut second = streams.subscribe("gen_5");
        again.chunk(audio("2"));
        assert_eq!(first.next().await, chunk("1"));
        assert_eq!(first.next().await, StreamEvent::End(StreamEnd::Broken));
        assert_eq!(second.next().await, chunk("2"));
        drop((first, second, again));
        assert_eq!(streams.open(), 0);
    }
}
