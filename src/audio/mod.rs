//! Audio in and out of the API: encode engine output (mono `f32`) to mp3 / Ogg Opus / wav, in one
//! go or piece by piece as it is produced ([`StreamEncoder`]), and
//! decode uploaded clips to the 16 kHz mono `f32` the recogniser takes.
//!
//! Everything here is synchronous and CPU-bound: call it from a blocking thread, never from an
//! async task.

mod base64;
mod decode;
mod encode;
mod live;
mod live_container;
mod live_out;
mod matroska_guard;
mod ogg_guard;
mod ogg_opus;
mod resample;
mod stream;

#[cfg(test)]
mod tests;

use std::fmt;
use std::str::FromStr;

pub use self::base64::{Base64Error, MAX_AUDIO_BYTES, decode_base64_audio};
pub use self::decode::{DecodeError, DecodeLimits, DecodedAudio, MAX_CHANNELS, decode_for_asr};
pub use self::encode::{EncodeError, encode};
pub use self::live::{ContainerError, LiveDecoder, LiveEncoding};
pub use self::live_out::{OutputEncoding, OutputFormat, WavTranscoder};
pub use self::resample::{MAX_SAMPLE_RATE, MIN_SAMPLE_RATE, UnsupportedRate, resample};
pub use self::stream::StreamEncoder;

/// Sample rate of the audio handed to the recogniser.
pub const ASR_SAMPLE_RATE: u32 = 16_000;

/// The formats generated speech is delivered in (`response_format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AudioFormat {
    /// MPEG-1/2 Layer III, `audio/mpeg`.
    Mp3,
    /// Opus in an Ogg container (RFC 7845), `audio/ogg`.
    Opus,
    /// 16-bit PCM RIFF WAVE, `audio/wav`.
    Wav,
}

impl AudioFormat {
    pub const ALL: [AudioFormat; 3] = [AudioFormat::Mp3, AudioFormat::Opus, AudioFormat::Wav];

    pub fn content_type(self) -> &'static str {
        match self {
            AudioFormat::Mp3 => "audio/mpeg",
            AudioFormat::Opus => "audio/ogg",
            AudioFormat::Wav => "audio/wav",
        }
    }

    /// The name used in the API (`response_format`).
    pub fn as_str(self) -> &'static str {
        match self {
            AudioFormat::Mp3 => "mp3",
            AudioFormat::Opus => "opus",
            AudioFormat::Wav => "wav",
        }
    }

    /// File extension, without the dot.
    pub fn extension(self) -> &'static str {
        match self {
            AudioFormat::Mp3 => "mp3",
            AudioFormat::Opus => "ogg",
            AudioFormat::Wav => "wav",
        }
    }
}

impl fmt::Display for AudioFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown audio format `{0}`; expected one of mp3, opus, wav")]
pub struct UnknownAudioFormat(pub String);

impl FromStr for AudioFormat {
    type Err = UnknownAudioFormat;

    /// Exact, lower-case API names only: the API rejects `MP3` rather than guessing.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        AudioFormat::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| UnknownAudioFormat(s.to_owned()))
    }
}
