//! What Chatterbox Turbo and Chatterbox (multilingual) share: the file layout, the speech
//! encoder whose four outputs are a voice (its print), and the seeded conditional decoder (the
//! language model's KV cache is [`crate::engines::lm`]).

mod engine;
pub mod files;
mod print;

pub(crate) use engine::embeddings;
pub use engine::{Chatterbox, Config, Graphs, Variant};

use std::collections::HashMap;
use std::path::Path;

use ort::session::Session;
use ort::value::{Tensor, ValueType};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

use crate::engines::files::{Clips, preset_names};
use crate::engines::onnx::inference;
use crate::engines::{EngineError, Preset};

pub const SAMPLE_RATE: u32 = 24_000;
pub const START_SPEECH: i64 = 6561;
pub const STOP_SPEECH: i64 = 6562;
/// Frames of decoder noise drawn per piece (tiled by the graph when longer: 80 s of mel).
pub const NOISE_FRAMES: usize = 4096;

/// A float tensor kept on the host: shape and data.
#[derive(Debug, Clone, PartialEq)]
pub struct Array {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
}

/// The speech encoder's four outputs for one reference clip: everything the voice is.
#[derive(Debug, Clone, PartialEq)]
pub struct VoicePrint {
    /// `audio_features` [1, N, D]: the language model's prefix.
    pub features: Array,
    /// `audio_tokens` [1, P]: the decoder's prompt tokens.
    pub tokens: Vec<i64>,
    /// `speaker_embeddings` [1, 192].
    pub speaker: Array,
    /// `speaker_features` [1, F, 80].
    pub speaker_features: Array,
}

impl VoicePrint {
    /// A stored print, or the error a generation fails with when it is damaged.
    pub fn stored(bytes: &[u8]) -> Result<VoicePrint, EngineError> {
        VoicePrint::from_bytes(bytes).ok_or(EngineError::DamagedPrint)
    }
}

/// What one piece of text went through (for the differential tests and diagnostics).
#[derive(Debug, Clone, Default)]
pub struct PieceTrace {
    pub text_ids: Vec<i64>,
    /// One uniform draw per language-model step, in order.
    pub uniforms: Vec<f64>,
    /// The sampled ids, the stop token included when it was drawn.
    pub tokens: Vec<i64>,
    /// The decoder's noise bank [1, C, NOISE_FRAMES].
    pub noise: Vec<f32>,
    pub waveform: Vec<f32>,
}

impl crate::engines::pieces::Spoken for PieceTrace {
    fn audio(&self) -> &[f32] {
        &self.waveform
    }
}

#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// The reference clip fed to the speech encoder (24 kHz; empty when speaking from a stored
    /// print).
    pub reference: Vec<f32>,
    pub pieces: Vec<PieceTrace>,
}

/// A preset's reference clip and print, computed on first use per engine thread.
pub(crate) struct Voice {
    pub print: VoicePrint,
    pub reference: Vec<f32>,
}

/// Preset voices (the reference clips `voices/<preset>.wav`) already encoded.
#[derive(Default)]
pub(crate) struct Presets(HashMap<String, Voice>);

impl Presets {
    /// The preset's print, from `dir/voices/<preset>.wav` through the speech encoder on first
    /// use. Preset clips pass the same checks as a clone's reference audio.
    pub fn get(
        &mut self,
        dir: &Path,
        preset: &str,
        encoder: &mut Session,
    ) -> Result<&Voice, EngineError> {
        if !self.0.contains_key(preset) {
            if !preset_names(dir, Clips::Any).iter().any(|n| n == preset) {
                return Err(EngineError::UnknownPreset(preset.to_owned()));
            }
            let path = dir.join(files::VOICES).join(format!("{preset}.wav"));
            let bytes = std::fs::read(&path)
                .map_err(|e| EngineError::NotInstalled(format!("{}: {e}", path.display())))?;
            let reference = crate::engines::reference::prepare(&bytes, SAMPLE_RATE)
                .map_err(|e| EngineError::NotInstalled(format!("{}: {e}", path.display())))?;
            let print = encode(encoder, &reference)?;
            self.0.insert(preset.to_owned(), Voice { print, reference });
        }
        Ok(&self.0[preset])
    }
}

/// Lists the preset voices (reference clips) of `dir` without loading a model.
pub fn presets(dir: &Path, language: &str, note: &str) -> Vec<Preset> {
    preset_names(dir, Clips::Any)
        .into_iter()
        .map(|name| Preset {
            description: format!("reference voice voices/{name}.wav{note}"),
            name,
            language: language.into(),
        })
        .collect()
}

/// Runs the speech encoder on a 24 kHz mono clip: the voice print.
pub(crate) fn encode(encoder: &mut Session, reference: &[f32]) -> Result<VoicePrint, EngineError> {
    let audio =
        Tensor::from_array(([1, reference.len()], reference.to_vec())).map_err(inference)?;
    let outputs = encoder
        .run(ort::inputs! { "audio_values" => audio })
        .map_err(inference)?;
    let float = |name: &str| -> Result<Array, EngineError> {
        let value = outputs
            .get(name)
            .ok_or_else(|| inference(format!("speech encoder has no output {name}")))?;
        let (shape, data) = value.try_extract_tensor::<f32>().map_err(inference)?;
        Ok(Array {
            shape: shape.iter().map(|d| *d as usize).collect(),
            data: data.to_vec(),
        })
    };
    let tokens = outputs
        .get("audio_tokens")
        .ok_or_else(|| inference("speech encoder has no output audio_tokens"))?
        .try_extract_tensor::<i64>()
        .map_err(inference)?
        .1
        .to_vec();
    Ok(VoicePrint {
        features: float("audio_features")?,
        tokens,
        speaker: float("speaker_embeddings")?,
        speaker_features: float("speaker_features")?,
    })
}

/// The mel channels of the seeded decoder's `noise` input [1, C, K].
pub(crate) fn noise_channels(decoder: &Session, engine: &str) -> Result<usize, EngineError> {
    decoder
        .inputs()
        .iter()
        .find(|i| i.name() == "noise")
        .and_then(|i| dims(i.dtype()).and_then(|d| d.get(1).copied()))
        .filter(|c| *c > 0)
        .map(|c| c as usize)
        .ok_or_else(|| {
            EngineError::NotInstalled(format!(
                "the seeded decoder has no `noise` input [1, C, K]: run `voiced models prepare {engine}`"
            ))
        })
}

/// The decoder's noise bank for one piece, drawn from the generation's RNG after the
/// language model's draws.
pub(crate) fn draw_noise(rng: &mut ChaCha8Rng, channels: usize) -> Vec<f32> {
    (0..channels * NOISE_FRAMES)
        .map(|_| rng.sample::<f32, _>(StandardNormal))
        .collect()
}

/// Runs the seeded decoder on `speech` tokens (prompt tokens first) in the voice of `print`.
pub(crate) fn decode(
    decoder: &mut Session,
    print: &VoicePrint,
    speech: Vec<i64>,
    noise: &[f32],
    channels: usize,
) -> Result<Vec<f32>, EngineError> {
    let tensor = |a: &Array| Tensor::from_array((a.shape.clone(), a.data.clone()));
    let outputs = decoder
        .run(ort::inputs! {
            "speech_tokens" => Tensor::from_array(([1, speech.len()], speech)).map_err(inference)?,
            "speaker_embeddings" => tensor(&print.speaker).map_err(inference)?,
            "speaker_features" => tensor(&print.speaker_features).map_err(inference)?,
            "noise" => Tensor::from_array(([1, channels, NOISE_FRAMES], noise.to_vec())).map_err(inference)?,
        })
        .map_err(inference)?;
    let (_, waveform) = outputs
        .get("waveform")
        .ok_or_else(|| inference("decoder has no output waveform"))?
        .try_extract_tensor::<f32>()
        .map_err(inference)?;
    Ok(waveform.to_vec())
}

pub(crate) fn dims(ty: &ValueType) -> Option<Vec<i64>> {
    match ty {
        ValueType::Tensor { shape, .. } => Some(shape.iter().copied().collect()),
        _ => None,
    }
}
