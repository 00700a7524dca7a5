//! A running session's new settings ([`Tuning`]), checked as [`super::open`] checks its
//! options, into the [`Tuned`] the session applies.

use std::time::Duration;

use super::{MIN_ENDPOINTING, utterances};
use crate::audio::{LiveDecoder, LiveEncoding};
use crate::domain::{RecognitionOptions, Task, Timestamps};
use crate::service::error::ServiceError;

/// New settings for a running session: its audio format, endpointing, detection and the
/// recogniser's language and prompt. Every field replaces the session's.
#[derive(Debug, Clone)]
pub struct Tuning {
    pub encoding: LiveEncoding,
    pub sample_rate: u32,
    /// As [`LiveOptions::endpointing`](super::LiveOptions::endpointing) (raised to
    /// [`MIN_ENDPOINTING`]; at most 60 s).
    pub endpointing: Option<Duration>,
    /// The speech probability that starts an utterance (0 to 1); `None`: the detector's own.
    pub threshold: Option<f32>,
    /// Audio kept before the first speech frame (at most
    /// [`utterances::MAX_PRE_ROLL`]); `None`: [`utterances::PRE_ROLL`].
    pub pre_roll: Option<Duration>,
    /// ISO 639-1; detected when `None`.
    pub language: Option<String>,
    pub prompt: Option<String>,
}

/// A [`Tuning`] that passed [`Tuning::check`].
#[derive(Debug, Clone)]
pub struct Tuned {
    pub(super) encoding: LiveEncoding,
    pub(super) sample_rate: u32,
    pub(super) endpointing: Option<Duration>,
    pub(super) threshold: f32,
    pub(super) pre_roll: Duration,
    pub(super) recognition: RecognitionOptions,
}

/// The longest endpointing a session takes.
pub const MAX_ENDPOINTING: Duration = Duration::from_secs(60);

impl Tuning {
    /// Checks the settings as [`super::open`] checks its options: 400 naming `sample_rate`,
    /// `endpointing`, `threshold`, `pre_roll`, `language` or `prompt`.
    pub fn check(self) -> Result<Tuned, ServiceError> {
        LiveDecoder::new(self.encoding, self.sample_rate).map_err(|_| {
            ServiceError::invalid(
                "sample_rate",
                "sample_rate must be between 8000 and 384000 Hz",
            )
        })?;
        if self.endpointing.is_some_and(|d| d > MAX_ENDPOINTING) {
            return Err(ServiceError::invalid(
                "endpointing",
                "the silence that ends an utterance is at most 60000 ms",
            ));
        }
        let threshold = match self.threshold {
            None => crate::engines::vad::THRESHOLD,
            Some(t) if (0.0..=1.0).contains(&t) => t,
            Some(_) => {
                return Err(ServiceError::invalid(
                    "threshold",
                    "threshold must be a number from 0 to 1",
                ));
            }
        };
        let pre_roll = match self.pre_roll {
            None => utterances::PRE_ROLL,
            Some(d) if d <= utterances::MAX_PRE_ROLL => d,
            Some(_) => {
                return Err(ServiceError::invalid(
                    "pre_roll",
                    "the audio kept before speech is at most 1000 ms",
                ));
            }
        };
        let recognition = RecognitionOptions::new(
            self.language.as_deref(),
            Task::Transcribe,
            self.prompt.as_deref(),
            None,
            Timestamps::Word,
        )
        .map_err(|e| ServiceError::invalid(e.param, e.message))?;
        Ok(Tuned {
            encoding: self.encoding,
            sample_rate: self.sample_rate,
            endpointing: self.endpointing.map(|d| d.max(MIN_ENDPOINTING)),
            threshold,
            pre_roll,
            recognition,
        })
    }
}
