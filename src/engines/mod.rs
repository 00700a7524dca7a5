//! Speech engines: a synchronous trait with no async runtime inside. Each engine instance lives
//! on one dedicated OS thread (ONNX Runtime's `Session::run` takes `&mut self`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use ort::session::RunOptions;

/// One synthesis call. `seed` is already resolved (request → voice pin → random) by the caller.
pub struct SynthesisInput<'a> {
    pub text: &'a str,
    /// The voice profile's preset, e.g. "jf_alpha".
    pub preset: &'a str,
    /// ISO 639-1 language of the voice profile, e.g. "en", "ja"; picks the phonemizer voice.
    pub language: &'a str,
    pub seed: u64,
    /// Only engines that take a temperature look at it (kokoro does not).
    pub temperature: Option<f32>,
    /// Set when the generation's caller went away: engines check it between steps and stop
    /// with [`EngineError::Cancelled`]; an ONNX Runtime run started with
    /// [`Cancel::run_options`] is terminated inside the run.
    pub cancel: Option<&'a Cancel>,
    /// A cloned profile's stored voice print (the bytes [`Engine::voice_print`] returned); `None`
    /// for a preset voice.
    pub voice_print: Option<&'a [u8]>,
    /// The voice profile's personality prompt. Only engines whose model takes an instruction
    /// read it (the 1.7B Qwen CustomVoice model); the others ignore it.
    pub instruction: Option<&'a str>,
}

impl SynthesisInput<'_> {
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_some_and(Cancel::is_cancelled)
    }
}

/// A generation's cancellation, shared by every thread that renders part of it: a flag that
/// engines check between steps, and the ONNX Runtime runs in progress, which [`Cancel::cancel`]
/// terminates where they are (ONNX Runtime checks between graph nodes), so that a long piece
/// stops within a fraction of a second instead of at its end.
#[derive(Default)]
pub struct Cancel {
    flag: AtomicBool,
    runs: Mutex<Vec<Arc<RunOptions>>>,
    /// Milliseconds of audio rendered so far (the worker reports it as the generation's
    /// `progress`).
    rendered_ms: AtomicU64,
}

impl Cancel {
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the flag and terminates every run in progress under it.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::SeqCst);
        for run in self
            .runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            let _ = run.terminate();
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Records that `ms` of audio have been rendered (never less than before).
    pub fn set_rendered_ms(&self, ms: u64) {
        self.rendered_ms.fetch_max(ms, Ordering::Relaxed);
    }

    /// Milliseconds of audio rendered so far.
    pub fn rendered_ms(&self) -> u64 {
        self.rendered_ms.load(Ordering::Relaxed)
    }

    /// ONNX Runtime runs in progress under this cancellation (for tests and diagnostics).
    pub fn runs_in_progress(&self) -> usize {
        self.runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Options for one ONNX Runtime run that [`Cancel::cancel`] terminates (at once, when it
    /// came first); the run is forgotten when the guard drops. The options change nothing else:
    /// the audio is the same as with a plain `run`.
    pub fn run_options(&self) -> Result<RunGuard<'_>, EngineError> {
        let options =
            Arc::new(RunOptions::new().map_err(|e| EngineError::Inference(e.to_string()))?);
        self.runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(options.clone());
        // Registered before the flag is read: a `cancel` after this read terminates it.
        if self.is_cancelled() {
            let _ = options.terminate();
        }
        Ok(RunGuard {
            cancel: self,
            options,
        })
    }
}

impl std::fmt::Debug for Cancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cancel")
            .field("cancelled", &self.is_cancelled())
            .field("runs", &self.runs_in_progress())
            .finish()
    }
}

/// One registered run (see [`Cancel::run_options`]).
pub struct RunGuard<'a> {
    cancel: &'a Cancel,
    options: Arc<RunOptions>,
}

impl std::ops::Deref for RunGuard<'_> {
    type Target = RunOptions;
    fn deref(&self) -> &RunOptions {
        &self.options
    }
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        self.cancel
            .runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|run| !Arc::ptr_eq(run, &self.options));
    }
}

/// Mono PCM, samples in [-1, 1].
pub struct Pcm {
    pub samples: Vec<f32>,
    pub sample_rate: u32,
    /// When each word is said, in seconds from the start of `samples`, where the engine knows
    /// (kokoro, from its predicted durations); empty otherwise.
    pub words: Vec<text::timing::WordTiming>,
}

impl Pcm {
    pub fn duration_ms(&self) -> i64 {
        (self.samples.len() as i64 * 1000) / i64::from(self.sample_rate.max(1))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preset {
    pub name: String,
    pub language: String,
    pub description: String,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("unknown preset {0:?}")]
    UnknownPreset(String),
    #[error("text cannot be spoken: {0}")]
    InvalidInput(String),
    #[error("engine is not installed: {0}")]
    NotInstalled(String),
    #[error("inference failed: {0}")]
    Inference(String),
    /// A cloned voice's stored print cannot be read by this engine (damaged, or written by
    /// another version).
    #[error(
        "the voice's stored print is damaged or from another version of voiced; clone the voice again"
    )]
    DamagedPrint,
    #[error("cancelled")]
    Cancelled,
}

/// A part of a text that an engine renders on its own (kokoro: a sentence, or a part of a long
/// one). Any instance of the engine renders a segment to the same audio, so the segments of one
/// text can be rendered on several sessions at once and joined in order.
#[derive(Debug, Clone)]
pub struct Segment {
    /// The text of this part (for logs and tests).
    pub text: String,
    /// The engine's prepared input (kokoro: phoneme token ids).
    pub tokens: Vec<i64>,
    /// Silence after this part's audio, in seconds (none after the last part).
    pub pause_secs: f32,
}

/// Synchronous; one instance per dedicated OS thread.
pub trait Engine: Send {
    fn synthesize(&mut self, input: &SynthesisInput<'_>) -> Result<Pcm, EngineError>;
    /// The rate reference audio must have for [`Engine::voice_print`]; `None` when the engine
    /// cannot clone (its [`EngineInfo::can_clone`] is false).
    fn reference_rate(&self) -> Option<u32> {
        None
    }
    /// A cloned voice's conditioning, computed once from checked reference audio at
    /// [`Engine::reference_rate`], as opaque versioned bytes stored with the profile.
    fn voice_print(
        &mut self,
        _reference: &[f32],
        _transcript: Option<&str>,
        _language: &str,
    ) -> Result<Vec<u8>, EngineError> {
        Err(EngineError::InvalidInput(
            "this engine cannot clone a voice".into(),
        ))
    }

    /// Splits the input into the segments [`Engine::render_segment`] renders one by one, with
    /// the errors `synthesize` would give for the input as a whole. `None`: this engine renders
    /// whole texts only (`synthesize`), and its audio comes out in one piece.
    fn segments(
        &mut self,
        _input: &SynthesisInput<'_>,
    ) -> Option<Result<Vec<Segment>, EngineError>> {
        None
    }

    /// The audio of segment `index` of `segments(input)`, followed by its pause. It depends on
    /// (input, segment, index) only — not on the instance or on what it rendered before — and
    /// the segments' audio joined in order is what `synthesize` returns for the whole input.
    /// Only called on engines whose `segments` returns `Some`.
    fn render_segment(
        &mut self,
        _input: &SynthesisInput<'_>,
        _segment: &Segment,
        _index: usize,
    ) -> Result<Pcm, EngineError> {
        Err(EngineError::Inference(
            "this engine renders whole texts only".into(),
        ))
    }
}

pub mod chatterbox;
pub mod chatterbox_shared;
pub mod chatterbox_turbo;
pub mod cores;
pub mod files;
#[cfg(feature = "bench-engine")]
pub mod instant;
pub mod kokoro;
pub mod lm;
pub mod luxtts;
pub mod npy;
pub mod onnx;
pub mod pieces;
pub mod print_codec;
pub mod qwen;
pub mod reference;
pub mod registry;
pub mod sampling;
pub mod spectrogram;
pub mod text;
pub mod vad;
pub mod whisper;
