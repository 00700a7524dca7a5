//! Endpointing: the voice activity detector's frame probabilities in, utterances out. Pure and
//! synchronous (no model, no clock but the audio's own), so that its rules are tested frame by
//! frame.
//!
//! - Speech starts at the first frame at or above [`THRESHOLD`]; the utterance takes the
//!   [`PRE_ROLL`] of audio before it too (a word's onset is quieter than the frame that trips the
//!   detector).
//! - Inside speech a frame is silence below [`THRESHOLD`] − 0.15 (Silero's own hysteresis).
//! - The utterance ends when the silence after its last speech frame reaches the endpointing
//!   time (when endpointing is on), on Finalize, at [`MAX_UTTERANCE`] (one recogniser window),
//!   or when the stream closes.
//! - An utterance ended by silence with less than [`MIN_SPEECH`] of speech frames was a click or
//!   a breath: it is dropped without a final.

use std::time::Duration;

use crate::engines::vad::{FRAME, SAMPLE_RATE, THRESHOLD};

/// Audio kept in front of the first speech frame.
pub const PRE_ROLL: Duration = Duration::from_millis(256);
/// The longest utterance: one 30 s window of the recogniser.
pub const MAX_UTTERANCE: Duration = Duration::from_secs(30);
/// Speech shorter than this, ended by silence, is dropped.
pub const MIN_SPEECH: Duration = Duration::from_millis(160);
/// Inside speech, a frame is silence below the threshold less this.
const HYSTERESIS: f32 = 0.15;
/// The longest pre-roll a session may ask for.
pub const MAX_PRE_ROLL: Duration = Duration::from_secs(1);

/// Why an utterance ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// The speaker was silent for the endpointing time.
    Endpoint,
    /// The client asked (Finalize, a manual commit).
    Finalize,
    /// It reached [`MAX_UTTERANCE`].
    MaxLength,
    /// The stream closed.
    Close,
}

/// A finished utterance: its audio and where it sits on the session's clock.
#[derive(Debug, Clone)]
pub struct Utterance {
    /// The session's sample (16 kHz) the audio starts at.
    pub start_sample: u64,
    pub samples: Vec<f32>,
    pub reason: EndReason,
}

impl Utterance {
    /// Seconds from the session's start.
    pub fn start(&self) -> f64 {
        self.start_sample as f64 / f64::from(SAMPLE_RATE)
    }

    pub fn duration(&self) -> f64 {
        self.samples.len() as f64 / f64::from(SAMPLE_RATE)
    }
}

/// What one frame did.
#[derive(Debug, Clone, PartialEq)]
pub enum Mark {
    /// Speech started at this sample of the session.
    SpeechStarted { at_sample: u64 },
    /// Silence reached the endpointing time (or the utterance its longest): the utterance is
    /// over. `speech_end_sample`: the end of its last speech frame.
    Ended {
        speech_end_sample: u64,
        utterance: Option<UtteranceBox>,
    },
}

/// Boxed so that `Mark` stays small (it is compared in tests).
pub type UtteranceBox = Box<UtteranceParts>;

/// An utterance's parts as `Mark` carries them (an [`Utterance`] by another name, comparable).
#[derive(Debug, Clone, PartialEq)]
pub struct UtteranceParts {
    pub start_sample: u64,
    pub len: usize,
    pub reason: EndReason,
}

struct Open {
    start_sample: u64,
    samples: Vec<f32>,
    speech_frames: usize,
    /// Frames of silence since the last speech frame.
    silence_frames: usize,
    speech_end_sample: u64,
}

/// The session's endpointer and the audio of its open utterance.
pub struct Utterances {
    /// Silence frames that end an utterance; `None`: only Finalize, the length and the close do.
    endpoint_frames: Option<usize>,
    /// Samples seen so far (the session's clock, 16 kHz).
    clock: u64,
    /// The last [`PRE_ROLL`] of audio outside speech.
    pre_roll: std::collections::VecDeque<f32>,
    /// Samples of pre-roll kept ([`PRE_ROLL`] unless the session asked otherwise).
    pre_roll_len: usize,
    /// The speech probability that starts an utterance ([`THRESHOLD`] unless asked otherwise).
    threshold: f32,
    open: Option<Open>,
    /// The utterance just ended, until [`Self::take_ended`].
    ended: Option<Utterance>,
}

fn samples_of(duration: Duration) -> usize {
    (duration.as_secs_f64() * f64::from(SAMPLE_RATE)).round() as usize
}

impl Utterances {
    /// `endpointing`: the silence that ends an utterance (rounded up to whole frames), or `None`.
    pub fn new(endpointing: Option<Duration>) -> Self {
        Self {
            endpoint_frames: endpointing.map(|d| samples_of(d).div_ceil(FRAME).max(1)),
            clock: 0,
            pre_roll: std::collections::VecDeque::with_capacity(samples_of(PRE_ROLL)),
            pre_roll_len: samples_of(PRE_ROLL),
            threshold: THRESHOLD,
            open: None,
            ended: None,
        }
    }

    /// Changes the endpointing of the utterances to come (and of the open one).
    pub fn set_endpointing(&mut self, endpointing: Option<Duration>) {
        self.endpoint_frames = endpointing.map(|d| samples_of(d).div_ceil(FRAME).max(1));
    }

    /// Changes the speech threshold (0 to 1; inside speech a frame is silence below it less
    /// the hysteresis) and the pre-roll (at most [`MAX_PRE_ROLL`]).
    pub fn set_detection(&mut self, threshold: f32, pre_roll: Duration) {
        self.threshold = threshold.clamp(0.0, 1.0);
        self.pre_roll_len = samples_of(pre_roll.min(MAX_PRE_ROLL));
        while self.pre_roll.len() > self.pre_roll_len {
            self.pre_roll.pop_front();
        }
    }

    /// Drops the open utterance and the pre-roll without ending anything (a client's clear).
    /// The clock runs on.
    pub fn clear(&mut self) {
        self.open = None;
        self.pre_roll.clear();
    }

    /// Samples seen so far.
    pub fn clock(&self) -> u64 {
        self.clock
    }

    /// Whether an utterance is open.
    pub fn in_speech(&self) -> bool {
        self.open.is_some()
    }

    /// The open utterance's start and audio so far.
    pub fn open_audio(&self) -> Option<(u64, &[f32])> {
        self.open.as_ref().map(|o| (o.start_sample, &o.samples[..]))
    }

    /// One frame of [`FRAME`] samples and its speech probability.
    pub fn frame(&mut self, frame: &[f32], probability: f32) -> Option<Mark> {
        let frame_start = self.clock;
        self.clock += frame.len() as u64;
        let Some(open) = &mut self.open else {
            if probability >= self.threshold {
                let mut samples = Vec::with_capacity(samples_of(Duration::from_secs(4)));
                samples.extend(self.pre_roll.drain(..));
                let start_sample = frame_start - samples.len() as u64;
                samples.extend_from_slice(frame);
                self.open = Some(Open {
                    start_sample,
                    samples,
                    speech_frames: 1,
                    silence_frames: 0,
                    speech_end_sample: self.clock,
                });
                return Some(Mark::SpeechStarted {
                    at_sample: frame_start,
                });
            }
            let keep = self.pre_roll_len;
            self.pre_roll.extend(frame.iter().copied());
            while self.pre_roll.len() > keep {
                self.pre_roll.pop_front();
            }
            return None;
        };
        open.samples.extend_from_slice(frame);
        if probability >= self.threshold - HYSTERESIS {
            open.speech_frames += 1;
            open.silence_frames = 0;
            open.speech_end_sample = self.clock;
        } else {
            open.silence_frames += 1;
        }
        let reason = if self
            .endpoint_frames
            .is_some_and(|n| open.silence_frames >= n)
        {
            EndReason::Endpoint
        } else if open.samples.len() + FRAME > samples_of(MAX_UTTERANCE) {
            EndReason::MaxLength
        } else {
            return None;
        };
        let speech_end_sample = open.speech_end_sample;
        let kept =
            reason != EndReason::Endpoint || open.speech_frames * FRAME >= samples_of(MIN_SPEECH);
        let ended = self.close(reason).filter(|_| kept);
        let parts = ended.as_ref().map(|u| {
            Box::new(UtteranceParts {
                start_sample: u.start_sample,
                len: u.samples.len(),
                reason: u.reason,
            })
        });
        self.ended = ended;
        Some(Mark::Ended {
            speech_end_sample,
            utterance: parts,
        })
    }

    /// The utterance the last [`Mark::Ended`] announced.
    pub fn take_ended(&mut self) -> Option<Utterance> {
        self.ended.take()
    }

    /// Ends the open utterance now (Finalize, the close), if one is open.
    pub fn close(&mut self, reason: EndReason) -> Option<Utterance> {
        let open = self.open.take()?;
        Some(Utterance {
            start_sample: open.start_sample,
            samples: open.samples,
            reason,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEECH: f32 = 0.9;
    const QUIET: f32 = 0.05;

    fn feed(u: &mut Utterances, probabilities: &[f32]) -> Vec<Mark> {
        probabilities
            .iter()
            .filter_map(|&p| u.frame(&[0.0; FRAME], p))
            .collect()
    }

    fn frames(n: usize, p: f32) -> Vec<f32> {
        vec![p; n]
    }

    #[test]
    fn silence_after_speech_ends_the_utterance_with_its_pre_roll() {
        // 500 ms endpointing = 16 frames of 32 ms.
        let mut u = Utterances::new(Some(Duration::from_millis(500)));
        let mut p = frames(20, QUIET);
        p.extend(frames(30, SPEECH));
        p.extend(frames(15, QUIET));
        let marks = feed(&mut u, &p);
        assert_eq!(
            marks,
            vec![Mark::SpeechStarted {
                at_sample: 20 * 512
            }]
        );
        assert!(u.in_speech());
        let marks = feed(&mut u, &[QUIET]);
        let pre_roll = samples_of(PRE_ROLL);
        assert_eq!(
            marks,
            vec![Mark::Ended {
                speech_end_sample: 50 * 512,
                utterance: Some(Box::new(UtteranceParts {
                    start_sample: (20 * 512 - pre_roll) as u64,
                    len: pre_roll + 46 * 512,
                    reason: EndReason::Endpoint,
                })),
            }]
        );
        let utterance = u.take_ended().unwrap();
        assert_eq!(utterance.samples.len(), pre_roll + 46 * 512);
        assert!(!u.in_speech());
    }

    #[test]
    fn a_short_pause_inside_speech_and_the_hysteresis_keep_it_open() {
        let mut u = Utterances::new(Some(Duration::from_millis(300)));
        let mut p = frames(10, SPEECH);
        p.extend(frames(5, QUIET)); // 160 ms: shorter than 300 ms
        p.extend(frames(10, 0.4)); // above 0.5 - 0.15: still speech
        p.extend(frames(10, SPEECH));
        let marks = feed(&mut u, &p);
        assert_eq!(marks.len(), 1, "{marks:?}");
        assert!(u.in_speech());
    }

    #[test]
    fn a_blip_is_dropped_and_without_endpointing_nothing_ends_but_the_length() {
        let mut u = Utterances::new(Some(Duration::from_millis(100)));
        let marks = feed(&mut u, &[SPEECH, SPEECH, QUIET, QUIET, QUIET, QUIET]);
        assert!(matches!(
            marks.last(),
            Some(Mark::Ended {
                utterance: None,
                ..
            })
        ));
        assert!(u.take_ended().is_none());

        let mut u = Utterances::new(None);
        let mut p = frames(5, SPEECH);
        p.extend(frames(200, QUIET));
        assert_eq!(feed(&mut u, &p).len(), 1);
        assert!(u.in_speech());
        // 30 s is 937.5 frames: the utterance ends before it would pass a window.
        let marks = feed(&mut u, &frames(800, QUIET));
        let Some(Mark::Ended {
            utterance: Some(parts),
            ..
        }) = marks.last()
        else {
            panic!("{marks:?}")
        };
        assert_eq!(parts.reason, EndReason::MaxLength);
        assert!(parts.len <= samples_of(MAX_UTTERANCE));
        let closed = u.take_ended().unwrap();
        assert_eq!(closed.reason, EndReason::MaxLength);
    }

    #[test]
    fn the_threshold_pre_roll_endpointing_and_clear_are_the_sessions() {
        let mut u = Utterances::new(Some(Duration::from_millis(500)));
        u.set_detection(0.8, Duration::from_millis(64));
        // 0.7 no longer starts speech; 0.9 does, with 64 ms (2 frames) of pre-roll.
        assert!(feed(&mut u, &frames(10, 0.7)).is_empty());
        let marks = feed(&mut u, &[0.9]);
        assert_eq!(
            marks,
            vec![Mark::SpeechStarted {
                at_sample: 10 * 512
            }]
        );
        assert_eq!(u.open_audio().unwrap().0, 8 * 512);
        // Inside speech 0.6 is still speech (above 0.8 − 0.15), 0.5 is silence.
        assert!(feed(&mut u, &frames(20, 0.66)).is_empty());
        u.set_endpointing(Some(Duration::from_millis(64)));
        let marks = feed(&mut u, &[0.5, 0.5]);
        assert!(
            matches!(
                marks.as_slice(),
                [Mark::Ended {
                    utterance: Some(_),
                    ..
                }]
            ),
            "{marks:?}"
        );
        u.take_ended().unwrap();
        // Clear drops what is open; the clock runs on and nothing ends.
        feed(&mut u, &frames(3, 0.9));
        assert!(u.in_speech());
        let clock = u.clock();
        u.clear();
        assert!(!u.in_speech());
        assert_eq!(u.clock(), clock);
        assert!(u.close(EndReason::Finalize).is_none());
        // After a clear the pre-roll starts empty.
        feed(&mut u, &[0.9]);
        assert_eq!(u.open_audio().unwrap().1.len(), 512);
    }

    #[test]
    fn close_ends_the_open_utterance() {
        let mut u = Utterances::new(Some(Duration::from_millis(500)));
        feed(&mut u, &frames(10, SPEECH));
        let closed = u.close(EndReason::Finalize).unwrap();
        assert_eq!(closed.reason, EndReason::Finalize);
        assert_eq!(closed.samples.len(), 10 * 512);
        assert_eq!(closed.start_sample, 0);
        assert!(u.close(EndReason::Close).is_none());
    }
}
