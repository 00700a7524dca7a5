//! One ONNX Runtime session of the Kokoro graph and one inference call.

use std::path::Path;

use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::Tensor;

use super::noise::{BANK_FRAMES, HARMONICS, SourceNoise};
use crate::engines::{Cancel, EngineError};

pub struct KokoroSession {
    session: Session,
    /// The rewritten graph takes `sine_noise`/`sine_phase`; the original one does not.
    seeded: bool,
    /// The rewritten graph also outputs `durations`.
    timed: bool,
}

/// What one run made: the audio, and (rewritten graph) the frames each token was given.
pub struct Spoken {
    pub audio: Vec<f32>,
    /// Frames of [`SAMPLES_PER_FRAME`] per input token, the padding zero at each end included.
    pub durations: Option<Vec<i64>>,
}

/// Samples of the 24 kHz audio per predicted duration frame.
pub const SAMPLES_PER_FRAME: usize = 600;

/// The shared environment (kept here for existing callers).
pub use crate::engines::onnx::environment;

fn inference(e: impl std::fmt::Display) -> EngineError {
    EngineError::Inference(e.to_string())
}

impl KokoroSession {
    pub fn load(
        model: &Path,
        ort_library: &Path,
        intra_threads: usize,
    ) -> Result<Self, EngineError> {
        Self::load_spinning(model, ort_library, intra_threads, true)
    }

    /// [`KokoroSession::load`]; `spinning`: with more than one intra-op thread, whether the
    /// session's idle threads spin-wait for work between operators (ONNX Runtime's default) or
    /// sleep (they then leave the core to other sessions at once).
    pub fn load_spinning(
        model: &Path,
        ort_library: &Path,
        intra_threads: usize,
        spinning: bool,
    ) -> Result<Self, EngineError> {
        let env = environment(ort_library)?;
        if !model.is_file() {
            return Err(EngineError::NotInstalled(format!(
                "Kokoro model {} is missing: run `voiced models fetch kokoro`",
                model.display()
            )));
        }
        let session = Session::builder(&env)
            .map_err(inference)?
            // `All` is ONNX Runtime's default (and Python's); ort's `Level3` is not the same.
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(inference)?
            .with_intra_threads(intra_threads.max(1))
            .map_err(inference)?
            .with_intra_op_spinning(spinning)
            .map_err(inference)?
            .commit_from_file(model)
            .map_err(|e| {
                EngineError::NotInstalled(format!("cannot load {}: {e}", model.display()))
            })?;
        let seeded = session.inputs().iter().any(|i| i.name() == "sine_noise");
        let timed = session.outputs().iter().any(|o| o.name() == "durations");
        Ok(Self {
            session,
            seeded,
            timed,
        })
    }

    pub fn is_seeded(&self) -> bool {
        self.seeded
    }

    /// Whether runs report the tokens' durations (the rewritten graph).
    pub fn is_timed(&self) -> bool {
        self.timed
    }

    /// Audio (24 kHz) for one piece: `tokens` without the padding zeros, one style row.
    pub fn infer(
        &mut self,
        tokens: &[i64],
        style: &[f32],
        source: &SourceNoise,
    ) -> Result<Vec<f32>, EngineError> {
        Ok(self.infer_until(tokens, style, source, None)?.audio)
    }

    /// [`KokoroSession::infer`], stopped inside the run when `cancel` is cancelled
    /// ([`EngineError::Cancelled`]): a piece of 500 tokens takes seconds, the run stops between
    /// two graph nodes.
    pub fn infer_until(
        &mut self,
        tokens: &[i64],
        style: &[f32],
        source: &SourceNoise,
        cancel: Option<&Cancel>,
    ) -> Result<Spoken, EngineError> {
        let run = match cancel {
            Some(cancel) => Some(cancel.run_options()?),
            None => None,
        };
        let cancelled = |e: ort::Error| match cancel {
            Some(cancel) if cancel.is_cancelled() => EngineError::Cancelled,
            _ => inference(e),
        };
        let mut padded = Vec::with_capacity(tokens.len() + 2);
        padded.push(0);
        padded.extend_from_slice(tokens);
        padded.push(0);
        let tokens = Tensor::from_array(([1, padded.len()], padded)).map_err(inference)?;
        let style = Tensor::from_array(([1, style.len()], style.to_vec())).map_err(inference)?;
        let speed = Tensor::from_array(([1], vec![1.0f32])).map_err(inference)?;
        let outputs = match (self.seeded, run.as_deref()) {
            (true, run) => {
                let noise = Tensor::from_array(([1, BANK_FRAMES, HARMONICS], source.noise.clone()))
                    .map_err(inference)?;
                let phase = Tensor::from_array(([1, 1, HARMONICS], source.phase.clone()))
                    .map_err(inference)?;
                let inputs = ort::inputs! {
                    "tokens" => tokens, "style" => style, "speed" => speed,
                    "sine_noise" => noise, "sine_phase" => phase,
                };
                match run {
                    Some(run) => self.session.run_with_options(inputs, run),
                    None => self.session.run(inputs),
                }
            }
            (false, run) => {
                let inputs =
                    ort::inputs! { "tokens" => tokens, "style" => style, "speed" => speed };
                match run {
                    Some(run) => self.session.run_with_options(inputs, run),
                    None => self.session.run(inputs),
                }
            }
        }
        .map_err(cancelled)?;
        let (_, audio) = outputs["audio"]
            .try_extract_tensor::<f32>()
            .map_err(inference)?;
        let durations = match self.timed {
            true => Some(
                outputs["durations"]
                    .try_extract_tensor::<i64>()
                    .map_err(inference)?
                    .1
                    .to_vec(),
            ),
            false => None,
        };
        Ok(Spoken {
            audio: audio.to_vec(),
            durations,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::kokoro::{KokoroConfig, files, noise};

    /// The rewritten graph fed zeros is the original graph, sample for sample.
    #[test]
    fn silent_seed_inputs_reproduce_the_original_model() {
        let dir = std::env::var_os("VOICED_MODELS_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::PathBuf::from(std::env::var_os("HOME").unwrap())
                    .join(".cache/voiced/models")
            });
        let config = KokoroConfig::from_models_dir(&dir);
        let mut original =
            KokoroSession::load(&config.model_dir.join(files::MODEL), &config.ort_library, 1)
                .unwrap();
        let mut seeded = KokoroSession::load(
            &config.model_dir.join(files::SEEDED_MODEL),
            &config.ort_library,
            1,
        )
        .unwrap();
        assert!(seeded.is_seeded() && !original.is_seeded());
        assert!(seeded.is_timed() && !original.is_timed());
        // "ðɪs ɪz ə tˈɛst." through vocab.json.
        let tokens = [81, 102, 61, 16, 102, 68, 16, 83, 16, 62, 156, 86, 61, 62, 4];
        let style = vec![0.05f32; 256];
        let silent = noise::SourceNoise::silent();
        let a = original.infer(&tokens, &style, &silent).unwrap();
        let b = seeded.infer(&tokens, &style, &silent).unwrap();
        assert!(a.len() > 12_000);
        assert_eq!(a, b);
        // The durations output is what the length regulator used: the audio is its frames.
        let spoken = seeded.infer_until(&tokens, &style, &silent, None).unwrap();
        let durations = spoken.durations.unwrap();
        assert_eq!(durations.len(), tokens.len() + 2);
        assert!(durations.iter().all(|&d| d >= 1));
        let frames: i64 = durations.iter().sum();
        assert_eq!(spoken.audio.len(), frames as usize * SAMPLES_PER_FRAME);
        assert_eq!(spoken.audio, a);
        let c = seeded
            .infer(
                &tokens,
                &style,
                &noise::SourceNoise::draw(&mut noise::rng(1)),
            )
            .unwrap();
        assert_ne!(a, c);
    }
}
