//! The session's recognitions: one at a time through the recogniser's queue, a waiting final
//! first, else an interim of the open utterance; their answers become interims and finals on
//! the session's clock.

use std::future::Future;
use std::pin::Pin;

use super::super::utterances::{EndReason, Utterance};
use super::super::{Hypothesis, LiveEvent};
use super::{Session, seconds};
use crate::domain::{Segment, Timestamps, Word};
use crate::engines::vad::SAMPLE_RATE;
use crate::engines::whisper::Transcript;
use crate::service::error::ServiceError;
use crate::worker::asr::Failure;

pub(super) type Recognition = Pin<Box<dyn Future<Output = Result<Transcript, Failure>> + Send>>;

/// A recognition of the session in flight.
pub(super) struct Running {
    pub(super) future: Recognition,
    /// The utterance (its number and audio's place) it recognises.
    seq: u64,
    start_sample: u64,
    len: usize,
    /// `Some`: a final, and why its utterance ended.
    pub(super) final_reason: Option<EndReason>,
}

/// A final waiting for the recogniser.
pub(super) struct Waiting {
    seq: u64,
    utterance: Utterance,
}

impl Session {
    pub(super) fn wait_final(&mut self, utterance: Utterance) {
        self.waiting.push_back(Waiting {
            seq: self.utterance_seq,
            utterance,
        });
    }

    /// Starts the next recognition when none is running: a waiting final first, else an
    /// interim of the open utterance when it grew by the interim interval.
    pub(super) fn next_job(&mut self) {
        if self.running.is_some() {
            return;
        }
        if let Some(waiting) = self.waiting.pop_front() {
            let Waiting { seq, utterance } = waiting;
            let (start_sample, len) = (utterance.start_sample, utterance.samples.len());
            let reason = utterance.reason;
            let future: Recognition = if utterance.samples.is_empty() {
                Box::pin(std::future::ready(Ok(Transcript {
                    text: String::new(),
                    language: self.recognition.language.clone().unwrap_or_default(),
                    language_probability: 1.0,
                    duration: 0.0,
                    segments: Vec::new(),
                    words: Vec::new(),
                })))
            } else {
                self.recognise(utterance.samples, Timestamps::Word)
            };
            self.running = Some(Running {
                future,
                seq,
                start_sample,
                len,
                final_reason: Some(reason),
            });
            return;
        }
        if !self.interim_results {
            return;
        }
        let interval =
            (self.settings.interim_interval.as_secs_f64() * f64::from(SAMPLE_RATE)) as usize;
        let Some((start_sample, audio)) = self.utterances.open_audio() else {
            return;
        };
        if audio.len() < self.interim_mark + interval {
            return;
        }
        self.interim_mark = audio.len();
        let (samples, len) = (audio.to_vec(), audio.len());
        let future = self.recognise(samples, Timestamps::None);
        self.running = Some(Running {
            future,
            seq: self.utterance_seq,
            start_sample,
            len,
            final_reason: None,
        });
    }

    fn recognise(&self, samples: Vec<f32>, timestamps: Timestamps) -> Recognition {
        let mut options = self.recognition.clone();
        options.timestamps = timestamps;
        // The previous final primes the decoder (a caller's own prompt, when it sent one).
        if options.prompt.is_none()
            && let Some((last, _)) = self.finals.iter().rev().find(|(h, _)| !h.text.is_empty())
        {
            options.prompt = Some(last.text.clone());
        }
        let asr = self.core.asr.clone();
        let may_widen = self.place.ticket.may_widen();
        // A final (the one with word timings) is urgent: the recogniser's live lane.
        let urgent = timestamps == Timestamps::Word;
        Box::pin(async move {
            asr.recognize_held(samples, options, may_widen, urgent)
                .await
        })
    }

    /// A recognition came back: an interim of the still open utterance goes out, a stale one
    /// is dropped; a final goes out and is kept for the capture.
    pub(super) async fn recognised(
        &mut self,
        running: Running,
        result: Result<Transcript, Failure>,
    ) -> Result<(), ServiceError> {
        let transcript = result.map_err(|e| match e {
            Failure::Refused { param, message } => ServiceError::invalid(param, message),
            Failure::Failed(e) => ServiceError::internal(format!("recogniser: {e}")),
            Failure::Stopped => ServiceError::internal("recogniser: stopped"),
        })?;
        let offset = seconds(running.start_sample);
        let mut hypothesis = Hypothesis {
            text: transcript.text.trim().to_owned(),
            start: offset,
            duration: seconds(running.len as u64),
            words: transcript
                .words
                .iter()
                .map(|w| Word {
                    word: w.word.trim().to_owned(),
                    start: round_ms(w.start + offset),
                    end: round_ms(w.end + offset),
                    probability: w.probability,
                })
                .filter(|w| !w.word.is_empty())
                .collect(),
            confidence: 0.0,
            language: transcript.language.clone(),
        };
        hypothesis.confidence = confidence(&hypothesis.words, &transcript.segments);
        match running.final_reason {
            None => {
                if running.seq == self.utterance_seq && self.utterances.in_speech() {
                    self.emit(LiveEvent::Interim(hypothesis)).await;
                }
            }
            Some(reason) => {
                if let Some(last) = hypothesis.words.last() {
                    self.last_word_end = last.end;
                }
                let segments = transcript
                    .segments
                    .iter()
                    .map(|s| Segment {
                        start: round_ms(s.start + offset),
                        end: round_ms(s.end + offset),
                        seek: (offset * 100.0) as u32,
                        ..s.clone()
                    })
                    .collect();
                self.finals.push((hypothesis.clone(), segments));
                self.emit(LiveEvent::Final { hypothesis, reason }).await;
                self.announce_utterance_end().await;
            }
        }
        Ok(())
    }
}

/// The running recognition's answer (never, with none running: the branch is off then).
pub(super) async fn finished(running: &mut Option<Running>) -> Result<Transcript, Failure> {
    match running {
        Some(running) => (&mut running.future).await,
        None => std::future::pending().await,
    }
}

fn round_ms(seconds: f64) -> f64 {
    (seconds * 1000.0).round() / 1000.0
}

/// The mean of the words' probabilities; without words, the segments' mean token probability.
fn confidence(words: &[Word], segments: &[Segment]) -> f32 {
    if !words.is_empty() {
        return words.iter().map(|w| w.probability).sum::<f32>() / words.len() as f32;
    }
    if segments.is_empty() {
        return 0.0;
    }
    segments.iter().map(|s| s.avg_logprob.exp()).sum::<f32>() / segments.len() as f32
}
