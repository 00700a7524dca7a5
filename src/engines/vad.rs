//! Voice activity detection: Silero VAD (MIT) as ONNX on `ort`, frame by frame, the way its own
//! Python package runs the same model (`silero_vad.utils_vad.OnnxWrapper`): 16 kHz mono frames
//! of [`FRAME`] samples (32 ms), each given to the model behind the last [`CONTEXT`] samples of
//! the one before, with the model's recurrent state carried from frame to frame. The answer is
//! the probability that the frame is speech; a frame is speech at [`THRESHOLD`] or above (the
//! package's default). Synchronous, no tokio: the live sessions run it on their own threads.
//!
//! The model comes from the pinned `silero-vad` wheel (`voiced models fetch vad`,
//! `models::vad`); ONNX Runtime is the one `voiced models fetch kokoro` installs.

use std::path::Path;

use ort::session::Session;
use ort::value::Tensor;

use super::EngineError;
use super::onnx::{self, inference};

/// Samples of one frame at 16 kHz.
pub const FRAME: usize = 512;
/// Samples of the previous frame put in front of each (the model's receptive field).
pub const CONTEXT: usize = 64;
/// The sample rate the detector runs at.
pub const SAMPLE_RATE: u32 = 16_000;
/// Probability at and above which a frame is speech.
pub const THRESHOLD: f32 = 0.5;
/// The recurrent state's size: 2 × 1 × 128.
const STATE: usize = 2 * 128;

/// `<models_dir>/silero-vad/silero_vad.onnx`, where `voiced models fetch vad` puts the model.
pub fn model_path(models_dir: &Path) -> std::path::PathBuf {
    models_dir.join("silero-vad").join("silero_vad.onnx")
}

/// One stream's detector: the session and what it carries from frame to frame. Give each
/// stream its own (or [`Vad::reset`] between streams).
pub struct Vad {
    session: Session,
    state: Vec<f32>,
    context: [f32; CONTEXT],
}

impl Vad {
    /// Loads the model under `models_dir` (`silero-vad/silero_vad.onnx`) with ONNX Runtime
    /// from `models_dir` too, on one intra-op thread (a frame is 32 ms of audio and a few
    /// microseconds of work: more threads only cost).
    pub fn load(models_dir: &Path) -> Result<Self, EngineError> {
        let env = onnx::environment(&onnx::library_path(models_dir))?;
        let model = model_path(models_dir);
        if !model.is_file() {
            return Err(EngineError::NotInstalled(format!(
                "{} is missing: run `voiced models fetch vad`",
                model.display()
            )));
        }
        Ok(Self {
            session: onnx::session(&env, &model, 1)?,
            state: vec![0.0; STATE],
            context: [0.0; CONTEXT],
        })
    }

    /// Forgets the stream so far (a new stream starts from silence).
    pub fn reset(&mut self) {
        self.state.iter_mut().for_each(|s| *s = 0.0);
        self.context = [0.0; CONTEXT];
    }

    /// The probability that `frame` ([`FRAME`] samples of 16 kHz mono in -1..1) is speech.
    pub fn probability(&mut self, frame: &[f32]) -> Result<f32, EngineError> {
        if frame.len() != FRAME {
            return Err(EngineError::InvalidInput(format!(
                "a VAD frame is {FRAME} samples at 16 kHz, not {}",
                frame.len()
            )));
        }
        let mut input = Vec::with_capacity(CONTEXT + FRAME);
        input.extend_from_slice(&self.context);
        input.extend_from_slice(frame);
        let outputs = self
            .session
            .run(ort::inputs! {
                "input" => Tensor::from_array(([1usize, CONTEXT + FRAME], input)).map_err(inference)?,
                "state" => Tensor::from_array(([2usize, 1, 128], self.state.clone())).map_err(inference)?,
                "sr" => Tensor::from_array(((), vec![i64::from(SAMPLE_RATE)])).map_err(inference)?,
            })
            .map_err(inference)?;
        let (_, probability) = outputs["output"]
            .try_extract_tensor::<f32>()
            .map_err(inference)?;
        let probability = *probability
            .first()
            .ok_or_else(|| inference("the VAD model gave no probability"))?;
        let (_, state) = outputs["stateN"]
            .try_extract_tensor::<f32>()
            .map_err(inference)?;
        if state.len() != STATE {
            return Err(inference("the VAD model's state has another size"));
        }
        self.state.copy_from_slice(state);
        self.context.copy_from_slice(&frame[FRAME - CONTEXT..]);
        Ok(probability)
    }

    /// The probability of each whole frame of `samples` (16 kHz mono), in order; a last partial
    /// frame is padded with silence, as the package's `audio_forward` does.
    pub fn probabilities(&mut self, samples: &[f32]) -> Result<Vec<f32>, EngineError> {
        let mut out = Vec::with_capacity(samples.len().div_ceil(FRAME));
        for chunk in samples.chunks(FRAME) {
            if chunk.len() == FRAME {
                out.push(self.probability(chunk)?);
            } else {
                let mut padded = chunk.to_vec();
                padded.resize(FRAME, 0.0);
                out.push(self.probability(&padded)?);
            }
        }
        Ok(out)
    }
}
