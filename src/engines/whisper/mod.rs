//! Speech recognition with OpenAI Whisper on CTranslate2 (through `ct2rs`'s low-level API).
//!
//! `mel` turns 16 kHz samples into log-mel features, `prompt` holds the vocabulary,
//! `recognizer` runs the encoder/decoder over 30 s windows, `words` aligns words to time,
//! `refine` cleans text for reading.

mod decode;
pub mod mel;
mod prompt;
mod recognizer;
mod refine;
mod words;

use std::path::PathBuf;

use crate::domain::{Segment, Word};

pub use recognizer::Recognizer;
pub use refine::refine;

/// How to load a model.
#[derive(Clone, Debug)]
pub struct WhisperConfig {
    /// A directory assembled by `models::whisper::fetch`.
    pub model_dir: PathBuf,
    /// Threads for one transcription (CTranslate2 intra-op threads); 0 lets it choose.
    pub threads: usize,
    pub compute_type: ComputeType,
}

/// Weight precision at run time; the packaged float16 weights are converted at load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ComputeType {
    /// 8-bit integer weights: the fastest on CPU, as faster-whisper's `compute_type="int8"`.
    #[default]
    Int8,
    Float32,
}

/// The recogniser's result for one clip.
#[derive(Clone, Debug, PartialEq)]
pub struct Transcript {
    /// Raw text, trimmed; empty when no speech was found.
    pub text: String,
    /// ISO 639-1 code of the detected language ("en" for English-only models).
    pub language: String,
    /// Probability of `language` from language detection (1.0 for English-only models).
    pub language_probability: f32,
    /// Seconds of audio.
    pub duration: f64,
    /// The text's segments, in order; their texts joined are `text` (before trimming).
    pub segments: Vec<Segment>,
    /// Each word's timing, in order, when word timestamps were asked for; empty otherwise.
    pub words: Vec<Word>,
}

#[derive(Debug, thiserror::Error)]
pub enum AsrError {
    #[error("cannot load the Whisper model in {dir}: {message}")]
    Load { dir: PathBuf, message: String },
    #[error("Whisper inference failed: {0}")]
    Inference(String),
    /// The request asks for what this model cannot do (e.g. translation by an English-only
    /// model); `param` names the request field.
    #[error("{message}")]
    Refused {
        param: &'static str,
        message: String,
    },
    /// Its caller went away: recognition stopped between two windows.
    #[error("recognition stopped: its caller went away")]
    Stopped,
}
