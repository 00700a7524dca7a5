//! Chatterbox multilingual (Resemble AI, MIT; `onnx-community/chatterbox-multilingual-ONNX`):
//! 24 kHz speech in 23 languages in the voice of a reference clip.
//!
//! Data path: reference clip → `speech_encoder` once per voice (the voice print) · text →
//! [`text::prepare`] (`[lang]` prefix) → `tokenizer.json` → `embed_tokens` (with
//! `position_ids` and `exaggeration`) → `language_model` run as a batch of two — the prompt, and
//! the prompt with its text rows zeroed — whose logits are combined by classifier-free guidance
//! and sampled on the host from the request's seed → the seeded `conditional_decoder` →
//! waveform.

pub mod text;

use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::value::Tensor;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use tokenizers::Tokenizer;

use crate::domain::{EngineId, EngineInfo};
use crate::engines::chatterbox_shared::{
    self as shared, Array, Chatterbox, Graphs, PieceTrace, START_SPEECH, STOP_SPEECH, Variant,
    VoicePrint,
};
use crate::engines::onnx::inference;
use crate::engines::sampling::{self, GuidedSampling};
use crate::engines::{EngineError, Preset, SynthesisInput};
use text::Cangjie;

/// The engine id, and the directory under the models dir.
pub const DIR: &str = "chatterbox";
/// Its capabilities ([`EngineId::info`]).
pub const INFO: &EngineInfo = EngineId::Chatterbox.info();
/// The embedder puts the exaggeration (emotion) vector at this id's row.
pub const EXAGGERATION_TOKEN: i64 = 6563;
pub const START_TEXT: i64 = 255;
pub const STOP_TEXT: i64 = 0;
/// Ids below this are speech tokens the decoder understands (upstream `drop_invalid_tokens`).
pub const SPEECH_VOCAB: i64 = 6561;
pub const SAMPLES_PER_TOKEN: usize = 960;
/// Upper bound on speech tokens per piece (40 s at 25 tokens/s).
pub const MAX_NEW_TOKENS: usize = 1000;
/// Text tokens per piece (the tokenizer is close to one token a character).
pub const MAX_TEXT_TOKENS: usize = 300;
pub const DEFAULT_TEMPERATURE: f32 = 0.8;
/// Upstream `generate` defaults apart from the temperature.
pub const EXAGGERATION: f32 = 0.5;
pub const CFG_WEIGHT: f64 = 0.5;
pub const REPETITION_PENALTY: f64 = 1.2;
pub const MIN_P: f64 = 0.05;
pub const TOP_P: f64 = 1.0;

/// `<models_dir>/chatterbox`.
pub fn dir(models_dir: &Path) -> PathBuf {
    models_dir.join(DIR)
}

/// Chatterbox multilingual: the `[lang]`-prefixed text in the upstream template, sampled with
/// classifier-free guidance.
#[derive(Debug, Clone)]
pub struct Multilingual;

pub type ChatterboxConfig = shared::Config<Multilingual>;
pub type ChatterboxEngine = Chatterbox<Multilingual>;

/// What the multilingual tokenizer needs besides its file.
pub struct Prompting {
    space_token: bool,
    cangjie: Option<Cangjie>,
}

/// Lists the preset voices (reference clips) without loading a model.
pub fn presets(dir: &Path) -> Vec<Preset> {
    shared::presets(dir, "en", " (speaks any of the 23 languages)")
}

/// Whether a voice in `language` can read `text` here (checked before a generation is queued).
pub fn readable(dir: &Path, language: &str, text: &str) -> Result<(), String> {
    let Some(language) = text::language(language) else {
        return Err(format!(
            "The chatterbox engine speaks {}; the voice's language {language:?} is not one of them.",
            text::LANGUAGES.join(", ")
        ));
    };
    if language == "zh" && text::has_han(text) && !dir.join(text::CANGJIE).is_file() {
        return Err(format!(
            "Chinese needs the Cangjie table {} next to the chatterbox model on this deployment.",
            text::CANGJIE
        ));
    }
    Ok(())
}

impl Variant for Multilingual {
    const DIR: &'static str = DIR;
    const INFO: &'static EngineInfo = INFO;
    const MAX_TEXT_TOKENS: usize = MAX_TEXT_TOKENS;
    type State = Prompting;
    type Sampling = GuidedSampling;

    fn load(dir: &Path, embed: &Session, tokenizer: &Tokenizer) -> Result<Prompting, EngineError> {
        for name in ["input_ids", "position_ids", "exaggeration"] {
            if !embed.inputs().iter().any(|i| i.name() == name) {
                return Err(EngineError::NotInstalled(format!(
                    "chatterbox: embed_tokens has no input {name} (is this the multilingual export?)"
                )));
            }
        }
        Ok(Prompting {
            space_token: tokenizer.token_to_id("[SPACE]").is_some(),
            cangjie: Cangjie::load(dir).map_err(EngineError::NotInstalled)?,
        })
    }

    fn settings(
        dir: &Path,
        input: &SynthesisInput<'_>,
        text: &str,
    ) -> Result<(GuidedSampling, &'static str), EngineError> {
        readable(dir, input.language, text).map_err(EngineError::InvalidInput)?;
        let language = text::language(input.language).expect("checked by readable");
        let params = GuidedSampling {
            cfg_weight: CFG_WEIGHT,
            repetition_penalty: REPETITION_PENALTY,
            temperature: f64::from(input.temperature.unwrap_or(DEFAULT_TEMPERATURE)),
            min_p: MIN_P,
            top_p: TOP_P,
        };
        Ok((params, language))
    }

    /// The text tokenized with the upstream template
    /// `[exaggeration, start text, …, stop text, start speech, start speech]`.
    fn prompt(
        state: &Prompting,
        tokenizer: &Tokenizer,
        text: &str,
        language: &str,
    ) -> Result<Vec<i64>, EngineError> {
        let prepared = text::prepare(text, language, state.cangjie.as_ref(), state.space_token);
        let encoding = tokenizer
            .encode(prepared, true)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))?;
        let ids: Vec<i64> = encoding.get_ids().iter().map(|&id| i64::from(id)).collect();
        Ok(templated(ids))
    }

    /// One piece: the guided language-model loop, then the decoder.
    fn speak(
        graphs: &mut Graphs,
        print: &VoicePrint,
        ids: &[i64],
        params: GuidedSampling,
        rng: &mut ChaCha8Rng,
        input: &SynthesisInput<'_>,
    ) -> Result<PieceTrace, EngineError> {
        let mut trace = PieceTrace {
            text_ids: ids.to_vec(),
            ..PieceTrace::default()
        };
        let positions = prompt_positions(ids);
        let text = embed(&mut graphs.embed, ids, &positions)?;
        let width = *print.features.shape.last().unwrap_or(&0);
        if width == 0 || text.shape.last() != Some(&width) {
            return Err(inference(format!(
                "speech encoder rows ({width}) and token embeddings ({:?}) differ in width",
                text.shape
            )));
        }
        // Row 0 conditions on the text; row 1 is the same prompt with the text rows zeroed
        // (upstream zeroes their token embeddings for the unconditional half of the batch).
        let mut cond = print.features.data.clone();
        cond.extend_from_slice(&text.data);
        let mut uncond = cond.clone();
        let offset = print.features.data.len() / width;
        for row in text_rows(ids) {
            let start = (offset + row) * width;
            uncond[start..start + width].fill(0.0);
        }
        let mut rows = cond.len() / width;
        let mut embeds = cond;
        embeds.extend(uncond);
        let mut cache = graphs.lm.start(2)?;
        let mut generated = vec![START_SPEECH];
        for step in 0..MAX_NEW_TOKENS {
            if input.is_cancelled() {
                return Err(EngineError::Cancelled);
            }
            let logits = graphs.lm.step(&mut cache, embeds, rows, width)?;
            let uniform: f64 = rng.random();
            let next =
                sampling::sample_guided(&logits[0], &logits[1], &generated, params, uniform) as i64;
            trace.uniforms.push(uniform);
            trace.tokens.push(next);
            generated.push(next);
            if next == STOP_SPEECH {
                break;
            }
            let row = embed(&mut graphs.embed, &[next], &[step as i64 + 1])?.data;
            embeds = [row.clone(), row].concat();
            rows = 1;
        }
        let spoken: Vec<i64> = generated[1..]
            .iter()
            .copied()
            .filter(|t| (0..SPEECH_VOCAB).contains(t))
            .collect();
        let mut speech = print.tokens.clone();
        speech.extend(&spoken);
        trace.noise = shared::draw_noise(rng, graphs.noise_channels);
        let mut waveform = shared::decode(
            &mut graphs.decoder,
            print,
            speech,
            &trace.noise,
            graphs.noise_channels,
        )?;
        // Upstream drops the last token's audio: it comes just before the stop token with
        // degraded attention and decodes to about 40 ms of noise.
        let keep = spoken.len().saturating_sub(1).max(1) * SAMPLES_PER_TOKEN;
        waveform.truncate(keep);
        trace.waveform = waveform;
        Ok(trace)
    }
}

/// The upstream template around tokenizer ids, when `tokenizer.json` does not add it itself.
fn templated(ids: Vec<i64>) -> Vec<i64> {
    if ids.first() == Some(&EXAGGERATION_TOKEN) {
        return ids;
    }
    let mut out = vec![EXAGGERATION_TOKEN, START_TEXT];
    out.extend(ids);
    out.extend([STOP_TEXT, START_SPEECH, START_SPEECH]);
    out
}

/// Upstream positions of the prompt ids: speech and exaggeration ids at 0, text ids counted
/// from the start-of-text token.
pub fn prompt_positions(ids: &[i64]) -> Vec<i64> {
    ids.iter()
        .enumerate()
        .map(|(i, &id)| if id >= START_SPEECH { 0 } else { i as i64 - 1 })
        .collect()
}

/// The rows the embedder treats as text: up to the first stop-text id, the exaggeration slot
/// excepted.
pub fn text_rows(ids: &[i64]) -> Vec<usize> {
    let Some(end) = ids.iter().position(|&id| id == STOP_TEXT) else {
        return Vec::new();
    };
    (0..=end)
        .filter(|&i| ids[i] != EXAGGERATION_TOKEN)
        .collect()
}

fn embed(session: &mut Session, ids: &[i64], positions: &[i64]) -> Result<Array, EngineError> {
    let outputs = session
        .run(ort::inputs! {
            "input_ids" => Tensor::from_array(([1, ids.len()], ids.to_vec())).map_err(inference)?,
            "position_ids" => Tensor::from_array(([1, positions.len()], positions.to_vec())).map_err(inference)?,
            "exaggeration" => Tensor::from_array(([1usize], vec![EXAGGERATION])).map_err(inference)?,
        })
        .map_err(inference)?;
    shared::embeddings(&outputs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_template_positions_and_text_rows_follow_upstream() {
        let ids = templated(vec![9, 8, 7]);
        assert_eq!(ids, [6563, 255, 9, 8, 7, 0, 6561, 6561]);
        assert_eq!(templated(ids.clone()), ids);
        assert_eq!(prompt_positions(&ids), [0, 0, 1, 2, 3, 4, 0, 0]);
        assert_eq!(text_rows(&ids), [1, 2, 3, 4, 5]);
    }

    #[test]
    fn languages_outside_the_23_and_chinese_without_its_table_are_refused() {
        let dir = Path::new("/nonexistent");
        assert!(readable(dir, "pt-br", "Olá").is_ok());
        assert!(readable(dir, "zh", "ni hao").is_ok());
        let why = readable(dir, "zh", "你好").unwrap_err();
        assert!(why.contains(text::CANGJIE), "{why}");
        let why = readable(dir, "xx", "hello").unwrap_err();
        assert!(why.contains("ar, da, de"), "{why}");
    }
}
