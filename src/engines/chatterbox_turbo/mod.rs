//! Chatterbox Turbo (Resemble AI, MIT) as four ONNX graphs: 24 kHz speech in the voice of a
//! reference clip.
//!
//! Data path: reference clip → `speech_encoder` once per voice (its four outputs are the voice
//! print) · text → `tokenizer.json` → `embed_tokens` → `language_model` with a KV cache, one
//! speech token per step, sampled on the host from the request's seed → `conditional_decoder`
//! (the seeded copy: its flow noise is an input drawn from the same seed) → waveform.

use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::value::Tensor;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tokenizers::Tokenizer;

use crate::domain::{EngineId, EngineInfo};
use crate::engines::chatterbox_shared::{self as shared, Chatterbox, Graphs, Variant};
pub use crate::engines::chatterbox_shared::{
    Array, NOISE_FRAMES, PieceTrace, SAMPLE_RATE, START_SPEECH, STOP_SPEECH, Trace, VoicePrint,
    files,
};
use crate::engines::onnx::inference;
use crate::engines::sampling::{self, Sampling};
use crate::engines::{EngineError, Preset, SynthesisInput};

/// The engine id, and the directory under the models dir.
pub const DIR: &str = "chatterbox_turbo";
/// Its capabilities ([`EngineId::info`]).
pub const INFO: &EngineInfo = EngineId::ChatterboxTurbo.info();
/// Appended after the generated tokens so that the decoder ends on silence (upstream).
pub const SILENCE: i64 = 4299;
pub const SILENCE_TOKENS: usize = 3;
/// Upper bound on speech tokens per piece (40 s at 25 tokens/s).
pub const MAX_NEW_TOKENS: usize = 1000;
/// Text tokens per piece; longer text is split at sentences, clauses, words.
pub const MAX_TEXT_TOKENS: usize = 300;
pub const DEFAULT_TEMPERATURE: f32 = 0.8;
/// Upstream sampling settings, apart from the temperature.
pub const TOP_K: usize = 1000;
pub const TOP_P: f64 = 0.95;
pub const REPETITION_PENALTY: f64 = 1.2;

/// `<models_dir>/chatterbox_turbo`.
pub fn dir(models_dir: &Path) -> PathBuf {
    models_dir.join(DIR)
}

/// Chatterbox Turbo: the text tokenized as it is, one language-model row per step.
#[derive(Debug, Clone)]
pub struct Turbo;

pub type TurboConfig = shared::Config<Turbo>;
pub type ChatterboxTurboEngine = Chatterbox<Turbo>;

/// Lists the preset voices (reference clips) without loading a model.
pub fn presets(dir: &Path) -> Vec<Preset> {
    shared::presets(dir, "en", "")
}

impl Variant for Turbo {
    const DIR: &'static str = DIR;
    const INFO: &'static EngineInfo = INFO;
    const MAX_TEXT_TOKENS: usize = MAX_TEXT_TOKENS;
    type State = ();
    type Sampling = Sampling;

    fn load(_: &Path, _: &Session, _: &Tokenizer) -> Result<(), EngineError> {
        Ok(())
    }

    fn settings(
        _: &Path,
        input: &SynthesisInput<'_>,
        _: &str,
    ) -> Result<(Sampling, &'static str), EngineError> {
        let sampling = Sampling {
            temperature: f64::from(input.temperature.unwrap_or(DEFAULT_TEMPERATURE)),
            top_k: TOP_K,
            top_p: TOP_P,
            repetition_penalty: REPETITION_PENALTY,
        };
        Ok((sampling, ""))
    }

    fn prompt(_: &(), tokenizer: &Tokenizer, text: &str, _: &str) -> Result<Vec<i64>, EngineError> {
        let encoding = tokenizer
            .encode(text, true)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        Ok(encoding.get_ids().iter().map(|&id| i64::from(id)).collect())
    }

    fn speak(
        graphs: &mut Graphs,
        print: &VoicePrint,
        text_ids: &[i64],
        params: Sampling,
        rng: &mut ChaCha8Rng,
        input: &SynthesisInput<'_>,
    ) -> Result<PieceTrace, EngineError> {
        let mut trace = PieceTrace {
            text_ids: text_ids.to_vec(),
            ..PieceTrace::default()
        };
        let text = embed(&mut graphs.embed, text_ids)?;
        let width = *print.features.shape.last().unwrap_or(&0);
        if width == 0 || text.shape.last() != Some(&width) {
            return Err(inference(format!(
                "speech encoder rows ({width}) and token embeddings ({:?}) differ in width",
                text.shape
            )));
        }
        let mut embeds = print.features.data.clone();
        embeds.extend_from_slice(&text.data);
        let mut rows = embeds.len() / width;
        let mut cache = graphs.lm.start(1)?;
        let mut generated = vec![START_SPEECH];
        for _ in 0..MAX_NEW_TOKENS {
            if input.is_cancelled() {
                return Err(EngineError::Cancelled);
            }
            let logits = graphs.lm.step(&mut cache, embeds, rows, width)?;
            let uniform: f64 = rng.random();
            let next = sampling::sample(&logits[0], &generated, params, uniform) as i64;
            trace.uniforms.push(uniform);
            trace.tokens.push(next);
            generated.push(next);
            if next == STOP_SPEECH {
                break;
            }
            embeds = embed(&mut graphs.embed, &[next])?.data;
            rows = 1;
        }
        let mut speech = print.tokens.clone();
        speech.extend(
            generated[1..]
                .iter()
                .filter(|&&t| t != START_SPEECH && t != STOP_SPEECH),
        );
        speech.extend([SILENCE; SILENCE_TOKENS]);
        trace.noise = shared::draw_noise(rng, graphs.noise_channels);
        trace.waveform = shared::decode(
            &mut graphs.decoder,
            print,
            speech,
            &trace.noise,
            graphs.noise_channels,
        )?;
        Ok(trace)
    }
}

fn embed(session: &mut Session, ids: &[i64]) -> Result<Array, EngineError> {
    let ids = Tensor::from_array(([1, ids.len()], ids.to_vec())).map_err(inference)?;
    let outputs = session
        .run(ort::inputs! { "input_ids" => ids })
        .map_err(inference)?;
    shared::embeddings(&outputs)
}
