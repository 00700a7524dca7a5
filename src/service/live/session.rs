//! A live session's task: it reads the door's inputs, decodes and detects speech, endpoints
//! utterances, runs their recognitions ([`recognition`]), emits the events, and at its end
//! recognises what is left and stores the finals as one capture. The pacing and the ends are
//! the module's (see [`super`]).

mod recognition;

use std::collections::VecDeque;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::{Instant, sleep_until};

use self::recognition::{Running, Waiting, finished};
use super::utterances::{EndReason, Mark, Utterance, Utterances};
use super::{
    CloseReason, Ending, Hypothesis, LiveEvent, LiveInput, LiveOptions, LiveSettings,
    MAX_WAITING_FINALS, MIN_ENDPOINTING, Tuned,
};
use crate::audio::{LiveDecoder, LiveEncoding};
use crate::domain::{RecognitionOptions, Segment, Task, Timestamps};
use crate::engines::vad::{FRAME, SAMPLE_RATE, Vad};
use crate::service::core::{Core, Slot};
use crate::service::error::ServiceError;
use crate::service::principal::Principal;
use crate::service::transcription::{self, Place, Transcribed};

/// What [`super::open`] admitted and checked: the session's places, its detector and decoder,
/// its options and the channel its events go out on.
pub(super) struct Admitted {
    pub(super) core: Core,
    pub(super) principal: Principal,
    pub(super) id: String,
    pub(super) place: Place,
    pub(super) free_left: Option<u64>,
    pub(super) slot: Slot,
    pub(super) vad: Vad,
    pub(super) decoder: LiveDecoder,
    pub(super) recognition: RecognitionOptions,
    pub(super) options: LiveOptions,
    pub(super) settings: LiveSettings,
    pub(super) events: mpsc::Sender<LiveEvent>,
}

/// Runs the admitted session on its own task, reading `inputs` until it ends.
pub(super) fn spawn(admitted: Admitted, inputs: mpsc::Receiver<LiveInput>) {
    let Admitted {
        core,
        principal,
        id,
        place,
        free_left,
        slot,
        vad,
        decoder,
        recognition,
        options,
        settings,
        events,
    } = admitted;
    let endpointing = options.endpointing.map(|d| d.max(MIN_ENDPOINTING));
    let session = Session {
        core,
        principal,
        id,
        place,
        free_left,
        _slot: slot,
        vad: Some(vad),
        decoder,
        format: (options.encoding, options.sample_rate),
        utterances: Utterances::new(endpointing),
        pending: Vec::new(),
        recognition,
        interim_results: options.interim_results,
        utterance_end: options.utterance_end,
        source: options.source,
        settings,
        events,
        waiting: VecDeque::new(),
        running: None,
        finals: Vec::new(),
        utterance_seq: 0,
        interim_mark: 0,
        utterance_end_due: None,
        last_word_end: 0.0,
        opened: Instant::now(),
    };
    metrics::gauge!("voiced_live_sessions").increment(1.0);
    tokio::spawn(session.run(inputs));
}

struct Session {
    core: Core,
    principal: Principal,
    id: String,
    place: Place,
    /// The app's free use: the session's audio may not pass this sample.
    free_left: Option<u64>,
    _slot: Slot,
    /// Out while a batch of frames is on the blocking pool.
    vad: Option<Vad>,
    decoder: LiveDecoder,
    /// The decoder's encoding and rate.
    format: (LiveEncoding, u32),
    utterances: Utterances,
    /// Decoded audio not yet a whole frame.
    pending: Vec<f32>,
    recognition: RecognitionOptions,
    interim_results: bool,
    utterance_end: Option<Duration>,
    source: &'static str,
    settings: LiveSettings,
    events: mpsc::Sender<LiveEvent>,
    waiting: VecDeque<Waiting>,
    running: Option<Running>,
    /// Finals so far (for the capture), with their segments on the session's clock.
    finals: Vec<(Hypothesis, Vec<Segment>)>,
    /// The open (or next) utterance's number.
    utterance_seq: u64,
    /// The open utterance's length at its last interim.
    interim_mark: usize,
    /// The session's sample at which silence will have lasted `utterance_end`.
    utterance_end_due: Option<u64>,
    last_word_end: f64,
    opened: Instant,
}

fn seconds(samples: u64) -> f64 {
    samples as f64 / f64::from(SAMPLE_RATE)
}

impl Session {
    async fn run(mut self, mut inputs: mpsc::Receiver<LiveInput>) {
        let deadline = self.opened + self.settings.max_session;
        let mut idle_deadline = Instant::now() + self.settings.idle_timeout;
        let mut shutdown = self.core.shutdown_deadline.clone();
        let reason = loop {
            let reading = self.waiting.len() < MAX_WAITING_FINALS;
            if !reading {
                // Idle time counts only while the session reads.
                idle_deadline = Instant::now() + self.settings.idle_timeout;
            }
            // Biased: what the client sent is taken before the idle deadline is looked at, so a
            // session that was busy (a batch on the detector, a full queue of finals) longer
            // than the idle time does not take its own delay for the client's silence.
            tokio::select! {
                biased;
                result = finished(&mut self.running), if self.running.is_some() => {
                    let running = self.running.take().expect("guarded");
                    if let Err(e) = self.recognised(running, result).await {
                        tracing::error!(error = ?e, "live transcription: the recogniser failed");
                        break (CloseReason::Failed, Some(e));
                    }
                    self.next_job();
                }
                input = inputs.recv(), if reading => {
                    // Any message from the client (audio, a keep-alive, a control) resets the idle
                    // time.
                    idle_deadline = Instant::now() + self.settings.idle_timeout;
                    match input {
                        Some(LiveInput::Audio(bytes)) => {
                            if let Err(e) = self.audio(&bytes).await {
                                break (CloseReason::Failed, Some(e));
                            }
                            if seconds(self.utterances.clock()) >= self.settings.max_session.as_secs_f64() {
                                break (CloseReason::MaxDuration, None);
                            }
                            if self.free_minutes_spent() {
                                break (CloseReason::FreeMinutesUsed, None);
                            }
                        }
                        Some(LiveInput::KeepAlive) => {}
                        Some(LiveInput::Finalize) => {
                            self.finalize(EndReason::Finalize);
                            self.next_job();
                        }
                        Some(LiveInput::Clear) => self.clear(),
                        Some(LiveInput::Tune(tuned)) => self.tune(tuned),
                        Some(LiveInput::Close) | None => break (CloseReason::Client, None),
                    }
                }
                // While it does not read, the session cannot tell a silent client.
                () = sleep_until(idle_deadline), if reading => break (CloseReason::Idle, None),
                () = sleep_until(deadline) => break (CloseReason::MaxDuration, None),
                Ok(()) = shutdown.changed() => {
                    if shutdown.borrow().is_some() {
                        break (CloseReason::Shutdown, None);
                    }
                }
            }
        };
        let ending = self.end(reason).await;
        let _ = self.events.send(LiveEvent::Ended(ending)).await;
        metrics::gauge!("voiced_live_sessions").decrement(1.0);
    }

    /// Sends `event` unless the door has gone; waits at most until the session's deadline.
    async fn emit(&mut self, event: LiveEvent) {
        let until = self.opened + self.settings.max_session;
        let _ = tokio::time::timeout_at(until, self.events.send(event)).await;
    }

    /// Whether no whole frame fits in the free minutes left (never without a free allowance).
    fn free_minutes_spent(&self) -> bool {
        self.free_left
            .is_some_and(|left| self.utterances.clock() + FRAME as u64 > left)
    }

    /// Decodes `bytes` (cut where the free minutes end), runs the detector over the whole
    /// frames and endpoints them.
    async fn audio(&mut self, bytes: &[u8]) -> Result<(), ServiceError> {
        self.decoder.push(bytes, &mut self.pending).map_err(|e| {
            ServiceError::invalid("audio", format!("the audio cannot be decoded: {e}"))
        })?;
        if let Some(left) = self.free_left {
            let room = left.saturating_sub(self.utterances.clock());
            self.pending
                .truncate(usize::try_from(room).unwrap_or(usize::MAX));
        }
        let whole = self.pending.len() / FRAME * FRAME;
        if whole == 0 {
            return Ok(());
        }
        let frames: Vec<f32> = self.pending.drain(..whole).collect();
        let mut vad = self
            .vad
            .take()
            .expect("the detector is back between batches");
        let (vad, frames, probabilities) = tokio::task::spawn_blocking(move || {
            let probabilities = vad.probabilities(&frames);
            (vad, frames, probabilities)
        })
        .await
        .map_err(ServiceError::internal)?;
        self.vad = Some(vad);
        let probabilities = probabilities
            .map_err(|e| ServiceError::internal(format!("voice activity detector: {e}")))?;
        for (frame, probability) in frames.chunks(FRAME).zip(probabilities) {
            match self.utterances.frame(frame, probability) {
                Some(Mark::SpeechStarted { at_sample }) => {
                    self.utterance_end_due = None;
                    self.interim_mark = 0;
                    self.emit(LiveEvent::SpeechStarted {
                        at: seconds(at_sample),
                    })
                    .await;
                }
                Some(Mark::Ended {
                    speech_end_sample, ..
                }) => {
                    self.emit(LiveEvent::SpeechStopped {
                        at: seconds(speech_end_sample),
                    })
                    .await;
                    if let Some(utterance) = self.utterances.take_ended() {
                        self.wait_final(utterance);
                    }
                    self.utterance_seq += 1;
                    if let Some(after) = self.utterance_end {
                        self.utterance_end_due = Some(
                            speech_end_sample
                                + (after.as_secs_f64() * f64::from(SAMPLE_RATE)) as u64,
                        );
                    }
                }
                None => {}
            }
            self.announce_utterance_end().await;
        }
        self.next_job();
        Ok(())
    }

    /// Clear: the open utterance's audio is dropped; an interim of it still running is not
    /// sent (it is of an older utterance now).
    fn clear(&mut self) {
        self.utterances.clear();
        self.utterance_seq += 1;
        self.interim_mark = 0;
    }

    /// New settings from now on; audio already decoded keeps its place on the clock.
    fn tune(&mut self, tuned: Tuned) {
        let format = (tuned.encoding, tuned.sample_rate);
        if format != self.format
            && let Ok(decoder) = LiveDecoder::new(tuned.encoding, tuned.sample_rate)
        {
            self.decoder.finish(&mut self.pending);
            self.decoder = decoder;
            self.format = format;
        }
        self.utterances.set_endpointing(tuned.endpointing);
        self.utterances
            .set_detection(tuned.threshold, tuned.pre_roll);
        self.recognition = tuned.recognition;
    }

    /// Finalize (or the close): the open utterance ends now; with nothing open, an empty
    /// final answers after those waiting.
    fn finalize(&mut self, reason: EndReason) {
        let utterance = self.utterances.close(reason).unwrap_or(Utterance {
            start_sample: self.utterances.clock(),
            samples: Vec::new(),
            reason,
        });
        self.wait_final(utterance);
        self.utterance_seq += 1;
    }

    /// `UtteranceEnd` once silence has lasted `utterance_end` after the last speech, and only
    /// after that speech's final went out.
    async fn announce_utterance_end(&mut self) {
        let Some(due) = self.utterance_end_due else {
            return;
        };
        let final_outstanding = !self.waiting.is_empty()
            || self
                .running
                .as_ref()
                .is_some_and(|r| r.final_reason.is_some());
        if self.utterances.in_speech() || final_outstanding || self.utterances.clock() < due {
            return;
        }
        self.utterance_end_due = None;
        self.emit(LiveEvent::UtteranceEnd {
            last_word_end: self.last_word_end,
        })
        .await;
    }

    /// Starts the next recognition when none is running: a waiting final first, else an
    /// The close: what is still open becomes a final, every final waiting is recognised (until
    /// the session's deadline, or at shutdown the server's), the capture is stored.
    async fn end(&mut self, (reason, error): (CloseReason, Option<ServiceError>)) -> Ending {
        if error.is_none() {
            let mut tail = Vec::new();
            self.decoder.finish(&mut tail);
            self.pending.extend(tail);
            if let Some(open) = self.utterances.close(EndReason::Close) {
                self.wait_final(open);
            }
            if let Some(running) = &self.running
                && running.final_reason.is_none()
            {
                self.running = None; // an interim nobody needs any more
            }
            self.next_job();
            let until = match *self.core.shutdown_deadline.borrow() {
                Some(at) => at,
                None => self.opened + self.settings.max_session + Duration::from_secs(60),
            };
            while let Some(running) = self.running.as_mut() {
                let Ok(result) = tokio::time::timeout_at(until, &mut running.future).await else {
                    break;
                };
                let running = self.running.take().expect("present");
                if let Err(e) = self.recognised(running, result).await {
                    tracing::error!(error = ?e, "live transcription: the last final failed");
                    break;
                }
                self.next_job();
            }
        }
        let duration = seconds(self.utterances.clock());
        let mut ending = Ending {
            reason,
            duration,
            capture_id: None,
            error,
        };
        if self.utterances.clock() == 0 {
            return ending;
        }
        match self.store().await {
            Ok(()) => ending.capture_id = Some(self.id.clone()),
            Err(e) => {
                tracing::error!(error = ?e, "live transcription: storing the capture failed");
                ending.error.get_or_insert(e);
            }
        }
        ending
    }

    async fn store(&mut self) -> Result<(), ServiceError> {
        let said: Vec<&Hypothesis> = self
            .finals
            .iter()
            .map(|(h, _)| h)
            .filter(|h| !h.text.is_empty())
            .collect();
        let mut segments: Vec<Segment> = self.finals.iter().flat_map(|(_, s)| s.clone()).collect();
        for (id, segment) in segments.iter_mut().enumerate() {
            segment.id = u32::try_from(id).unwrap_or(u32::MAX);
        }
        let duration = seconds(self.utterances.clock());
        let done = Transcribed {
            capture_id: self.id.clone(),
            text: said
                .iter()
                .map(|h| h.text.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            language: said
                .first()
                .map(|h| h.language.clone())
                .or_else(|| self.recognition.language.clone())
                .unwrap_or_else(|| "en".to_owned()),
            duration_ms: (duration * 1000.0).round() as i64,
            task: Task::Transcribe,
            timestamps: Timestamps::Word,
            duration,
            segments,
            words: said.iter().flat_map(|h| h.words.clone()).collect(),
        };
        transcription::store_capture(&self.core.pool, &self.principal, self.source, &done, None)
            .await
    }
}
