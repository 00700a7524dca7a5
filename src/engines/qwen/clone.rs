//! Base's two reference encoders: `speaker_encoder` (ECAPA-TDNN on a 128-band log-mel of the
//! whole clip → one x-vector) and `tokenizer_encoder` (the 12.5 Hz speech tokenizer → 16 codes
//! per 80 ms frame, over a fixed window the graph declares, 10 s upstream).

use std::path::Path;

use ort::environment::Environment;
use ort::session::Session;
use ort::value::{Tensor, ValueType};

use super::files;
use super::graphs::expect_io;
use crate::engines::EngineError;
use crate::engines::onnx::{self, inference};
use crate::engines::spectrogram::{self, Mel};

/// 24 kHz samples per 12.5 Hz frame.
pub const SAMPLES_PER_FRAME: usize = 1920;

pub struct Encoders {
    speaker: Session,
    codes: Session,
    /// The speech tokenizer's input length when the graph fixes it.
    window: Option<usize>,
    mel: Mel,
}

impl Encoders {
    pub fn load(env: &Environment, dir: &Path, intra_threads: usize) -> Result<Self, EngineError> {
        let speaker = onnx::session(env, &dir.join(files::SPEAKER_ENCODER), intra_threads)?;
        let codes = onnx::session(env, &dir.join(files::TOKENIZER_ENCODER), intra_threads)?;
        expect_io(
            &speaker,
            files::SPEAKER_ENCODER,
            &["mels"],
            &["speaker_embedding"],
        )?;
        expect_io(
            &codes,
            files::TOKENIZER_ENCODER,
            &["waveform"],
            &["audio_codes"],
        )?;
        let window = codes
            .inputs()
            .iter()
            .find(|i| i.name() == "waveform")
            .and_then(|i| match i.dtype() {
                ValueType::Tensor { shape, .. } => shape.get(1).copied(),
                _ => None,
            })
            .filter(|&n| n > 0)
            .map(|n| n as usize);
        Ok(Self {
            speaker,
            codes,
            window,
            mel: Mel::new(spectrogram::QWEN_SPEAKER),
        })
    }

    /// The x-vector of a 24 kHz clip.
    pub fn speaker(&mut self, reference: &[f32]) -> Result<Vec<f32>, EngineError> {
        let (frames, mels) = self.mel.compute(reference);
        if frames == 0 {
            return Err(EngineError::InvalidInput(
                "the reference audio is too short".into(),
            ));
        }
        let outputs = self
            .speaker
            .run(ort::inputs! {
                "mels" => Tensor::from_array(([1, frames, self.mel.n_mels()], mels)).map_err(inference)?,
            })
            .map_err(inference)?;
        let (_, embedding) = outputs
            .get("speaker_embedding")
            .ok_or_else(|| inference("speaker encoder has no output speaker_embedding"))?
            .try_extract_tensor::<f32>()
            .map_err(inference)?;
        Ok(embedding.to_vec())
    }

    /// The clip's codes, frame-major (`groups` per frame), or `None` when the clip is longer than
    /// the graph's window (its transcript would then describe more than the codes hold).
    pub fn codes(&mut self, reference: &[f32]) -> Result<Option<(usize, Vec<i64>)>, EngineError> {
        let n = reference.len();
        let window = match self.window {
            Some(w) if n > w => return Ok(None),
            Some(w) => w,
            None => n,
        };
        let mut padded = reference.to_vec();
        padded.resize(window, 0.0);
        let outputs = self
            .codes
            .run(ort::inputs! {
                "waveform" => Tensor::from_array(([1, window], padded)).map_err(inference)?,
            })
            .map_err(inference)?;
        let (shape, codes) = outputs
            .get("audio_codes")
            .ok_or_else(|| inference("speech tokenizer has no output audio_codes"))?
            .try_extract_tensor::<i64>()
            .map_err(inference)?;
        let (groups, total) = match shape[..] {
            [1, g, t] if g > 0 => (g as usize, t as usize),
            _ => return Err(inference(format!("audio_codes has shape {shape:?}"))),
        };
        let frames = n.div_ceil(SAMPLES_PER_FRAME).min(total);
        let mut out = Vec::with_capacity(frames * groups);
        for t in 0..frames {
            out.extend((0..groups).map(|g| codes[g * total + t]));
        }
        Ok(Some((groups, out)))
    }
}
