//! One context's task: its phrases one after the other, each admitted, then delivered as this
//! process's worker renders it (else, rendered elsewhere, the stored file once it has
//! completed), transcoded, aligned and handed to the door through the session's bounded event
//! queue. Stopped (cancelled, the client gone, the time limit, shutdown), the phrase it
//! delivers is cancelled through delivery's hold, which charges the audio handed out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, watch};

use super::alignment::Aligner;
use super::{Delivered, Queued, SpeechEvent};
use crate::audio::{OutputFormat, WavTranscoder};
use crate::domain::{CancelReason, GenerationStatus, SpeechText};
use crate::service::core::Core;
use crate::service::delivery::{CancelOnDrop, generation_failed};
use crate::service::error::ServiceError;
use crate::service::principal::Principal;
use crate::service::speech::{self, Fields};
use crate::worker::streams::{StreamEnd, StreamEvent};

/// The voice a context speaks with, and the format its audio is delivered in.
#[derive(Debug, Clone)]
pub(super) struct Speaker {
    /// The voice profile's id: a rename mid-socket does not change what speaks.
    pub voice: String,
    pub output: OutputFormat,
}

/// What a context is given, in order.
pub(super) enum Work {
    Phrase(String),
    /// Reported to the door ([`Delivered::Mark`]) once the phrases before it are delivered.
    Mark(u64),
}

/// What a session's contexts share.
pub(super) struct Shared {
    pub core: Core,
    pub principal: Principal,
    pub fields: Fields,
    pub events: mpsc::Sender<Queued>,
    /// Phrases queued or being spoken, over every context.
    pub busy: AtomicUsize,
    pub done: mpsc::UnboundedSender<Finished>,
}

impl Shared {
    /// Hands the door an event that is never dropped (an end, a refusal).
    pub async fn send(&self, event: SpeechEvent) {
        let _ = self.events.send((Delivered::Event(event), None)).await;
    }
}

/// What a context's task tells the session.
pub(super) enum Finished {
    /// A phrase ended (spoken, cut or refused).
    Spoken,
    /// The context ended.
    Done,
    /// A phrase was refused: the refusal went to the door, the socket ends.
    Refused,
}

/// How a phrase ended.
enum Spoken {
    Done,
    /// The context was stopped, or the door is gone.
    Stopped,
}

pub(super) async fn context(
    shared: Arc<Shared>,
    speaker: Speaker,
    id: String,
    mut phrases: mpsc::Receiver<Work>,
    mut stop: watch::Receiver<Option<CancelReason>>,
    cut: Arc<AtomicBool>,
) {
    loop {
        let phrase = tokio::select! {
            biased;
            _ = stop.changed() => None,
            phrase = phrases.recv() => phrase,
        };
        let phrase = match phrase {
            Some(Work::Phrase(phrase)) => phrase,
            Some(Work::Mark(mark)) => {
                let mark = Delivered::Mark {
                    context: id.clone(),
                    mark,
                };
                let _ = shared.events.send((mark, Some(cut.clone()))).await;
                continue;
            }
            None => break,
        };
        let spoken = speak(&shared, &speaker, &id, &phrase, &mut stop, &cut).await;
        shared.busy.fetch_sub(1, Ordering::AcqRel);
        let _ = shared.done.send(Finished::Spoken);
        match spoken {
            Ok(Spoken::Done) => {}
            Ok(Spoken::Stopped) => break,
            Err(error) => {
                shared
                    .send(SpeechEvent::Refused {
                        context: Some(id),
                        error,
                    })
                    .await;
                drain(&shared, &mut phrases);
                let _ = shared.done.send(Finished::Refused);
                return;
            }
        }
    }
    drain(&shared, &mut phrases);
    shared.send(SpeechEvent::ContextDone { context: id }).await;
    let _ = shared.done.send(Finished::Done);
}

/// Drops what is still queued (phrases were counted busy; marks die with the context).
fn drain(shared: &Shared, phrases: &mut mpsc::Receiver<Work>) {
    while let Ok(work) = phrases.try_recv() {
        if let Work::Phrase(_) = work {
            shared.busy.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// The reason the context was stopped for.
fn reason(stop: &watch::Receiver<Option<CancelReason>>) -> CancelReason {
    stop.borrow().unwrap_or(CancelReason::Disconnected)
}

/// Speaks one phrase (see the module).
async fn speak(
    shared: &Shared,
    speaker: &Speaker,
    context: &str,
    phrase: &str,
    stop: &mut watch::Receiver<Option<CancelReason>>,
    cut: &Arc<AtomicBool>,
) -> Result<Spoken, ServiceError> {
    let core = &shared.core;
    let text = SpeechText::new(phrase)
        .map_err(|e| ServiceError::invalid(shared.fields.text, format!("text {e}")))?;
    // Not raced with a stop: a generation admitted is always held (the loop's first turn
    // cancels it when the context stopped meanwhile).
    let admitted =
        speech::admit_phrase(core, &shared.principal, &speaker.voice, text, shared.fields).await?;
    let id = admitted.id;
    let mut hold = CancelOnDrop::new(&core.pool, &id);
    let mut stream = core.streams.subscribe(&id);
    let mut out = Out {
        shared,
        context,
        generation_id: &id,
        cut,
        transcoder: Some(WavTranscoder::new(speaker.output)),
    };
    let mut aligner = Aligner::new(phrase);
    // Until the first chunk: a worker of another process may render it (its completion
    // comes, and the stored file is read).
    let mut started = false;
    let mut published = true;
    loop {
        let chunk = tokio::select! {
            biased;
            _ = stop.changed() => {
                hold.cancel_now(reason(stop)).await?;
                return Ok(Spoken::Stopped);
            }
            event = stream.next(), if published => match event {
                StreamEvent::Chunk(chunk) => chunk,
                StreamEvent::End(StreamEnd::Completed) => {
                    hold.disarm();
                    let tail = out.transcode(None).await?;
                    if !out.send(tail, None, stop).await {
                        return Ok(Spoken::Stopped);
                    }
                    return Ok(Spoken::Done);
                }
                // Failed or handed back: its completion (or failure) says which.
                StreamEvent::End(StreamEnd::Broken) => {
                    if started {
                        return Err(generation_failed(&id, &format!("GET /v1/generations/{id}")));
                    }
                    published = false;
                    continue;
                }
            },
            status = core.completions.wait(&id, Duration::from_secs(5)), if !started => {
                hold.disarm();
                if status? != GenerationStatus::Completed {
                    return Err(generation_failed(&id, &format!("GET /v1/generations/{id}")));
                }
                let bytes = stored(core, &id).await?;
                let mut audio = out.transcode(Some(Bytes::from(bytes))).await?;
                audio.extend(out.transcode(None).await?);
                if !out.send(audio, None, stop).await {
                    return Ok(Spoken::Stopped);
                }
                return Ok(Spoken::Done);
            }
        };
        started = true;
        let start_ms = out.emitted_ms();
        let audio = out.transcode(Some(chunk.bytes)).await?;
        let alignment = (!chunk.words.is_empty()).then(|| aligner.chunk(&chunk.words, start_ms));
        if !out.send(audio, alignment, stop).await {
            hold.cancel_now(reason(stop)).await?;
            return Ok(Spoken::Stopped);
        }
        hold.delivered(chunk.end_ms);
    }
}

/// The stored file of a completed generation (rendered by another process), whole: one
/// phrase's audio, read by `service::audio::small` within what `max_audio_per_request_secs`
/// of 16-bit audio at 48 kHz can weigh (a larger file is an internal error, never read).
async fn stored(core: &Core, id: &str) -> Result<Vec<u8>, ServiceError> {
    let bound = u64::try_from(core.admission.max_audio_per_request_ms)
        .unwrap_or(0)
        .saturating_mul(96)
        .saturating_add(4096);
    match crate::service::audio::small(core, id, bound).await? {
        Ok(blob) => Ok(blob.bytes),
        Err(len) => Err(ServiceError::internal(format!(
            "a phrase's stored audio is {len} bytes, past {bound}"
        ))),
    }
}

/// Where a phrase's audio goes.
struct Out<'a> {
    shared: &'a Shared,
    context: &'a str,
    generation_id: &'a str,
    cut: &'a Arc<AtomicBool>,
    /// Out while it works on the blocking pool.
    transcoder: Option<WavTranscoder>,
}

impl Out<'_> {
    fn emitted_ms(&self) -> f64 {
        self.transcoder
            .as_ref()
            .map_or(0.0, WavTranscoder::emitted_ms)
    }

    /// `bytes` of the generation's wav in the socket's format (`None`: the encoder's tail).
    /// Encoding is CPU work: it runs on the blocking pool.
    async fn transcode(&mut self, bytes: Option<Bytes>) -> Result<Vec<u8>, ServiceError> {
        let mut transcoder = self
            .transcoder
            .take()
            .ok_or_else(|| ServiceError::internal("transcoder lost"))?;
        let (transcoder, out) = tokio::task::spawn_blocking(move || {
            let out = match bytes {
                Some(bytes) => transcoder.push(&bytes),
                None => transcoder.finish(),
            };
            (transcoder, out)
        })
        .await
        .map_err(ServiceError::internal)?;
        self.transcoder = Some(transcoder);
        out.map_err(ServiceError::internal)
    }

    /// Hands a chunk to the door, waiting while its queue is full (a slow reader pauses the
    /// delivery here). `false`: stopped, or the door is gone.
    async fn send(
        &self,
        audio: Vec<u8>,
        alignment: Option<super::ChunkAlignment>,
        stop: &mut watch::Receiver<Option<CancelReason>>,
    ) -> bool {
        if audio.is_empty() && alignment.is_none() {
            return true;
        }
        let event = SpeechEvent::Audio {
            context: self.context.to_owned(),
            generation_id: self.generation_id.to_owned(),
            audio: Bytes::from(audio),
            alignment,
        };
        tokio::select! {
            biased;
            _ = stop.changed() => false,
            sent = self.shared.events.send((Delivered::Event(event), Some(self.cut.clone()))) => sent.is_ok(),
        }
    }
}
