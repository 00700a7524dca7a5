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
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokenizers::Tokenizer;

use crate::domain::{EngineId, EngineInfo};
use crate::engines::chatterbox_shared::{self as shared, Presets};
pub use crate::engines::chatterbox_shared::{
    Array, NOISE_FRAMES, PieceTrace, SAMPLE_RATE, START_SPEECH, STOP_SPEECH, Trace, VoicePrint,
    files,
};
use crate::engines::lm::LanguageModel;
use crate::engines::onnx::{self, inference};
use crate::engines::pieces;
use crate::engines::sampling::{self, Sampling};
use crate::engines::text::split;
use crate::engines::{Engine, EngineError, Pcm, Preset, SynthesisInput};

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

#[derive(Debug, Clone)]
pub struct TurboConfig {
    /// `<models_dir>/chatterbox_turbo`.
    pub dir: PathBuf,
    pub ort_library: PathBuf,
    pub intra_threads: usize,
}

impl TurboConfig {
    pub fn from_models_dir(models_dir: &Path) -> Self {
        Self {
            dir: dir(models_dir),
            ort_library: onnx::library_path(models_dir),
            intra_threads: 1,
        }
    }
}

pub struct ChatterboxTurboEngine {
    dir: PathBuf,
    encoder: Session,
    embed: Session,
    lm: LanguageModel,
    decoder: Session,
    tokenizer: Tokenizer,
    noise_channels: usize,
    voices: Presets,
}

/// Lists the preset voices (reference clips) without loading a model.
pub fn presets(dir: &Path) -> Vec<Preset> {
    shared::presets(dir, "en", "")
}

impl ChatterboxTurboEngine {
    pub fn load(config: &TurboConfig) -> Result<Self, EngineError> {
        let problems = files::problems(&config.dir, DIR);
        if !problems.is_empty() {
            return Err(EngineError::NotInstalled(format!(
                "chatterbox_turbo in {}: {}",
                config.dir.display(),
                problems.join("; ")
            )));
        }
        let env = onnx::environment(&config.ort_library)?;
        let graph = |name| files::graph(&config.dir, name).expect("checked above");
        let open = |path: &Path| onnx::session(&env, path, config.intra_threads);
        let decoder_path = files::verify_seeded(&graph(files::CONDITIONAL_DECODER), DIR)
            .map_err(EngineError::NotInstalled)?;
        let encoder = open(&graph(files::SPEECH_ENCODER))?;
        let embed = open(&graph(files::EMBED_TOKENS))?;
        let lm = LanguageModel::new(open(&graph(files::LANGUAGE_MODEL))?)?;
        let decoder = open(&decoder_path)?;
        let tokenizer = Tokenizer::from_file(config.dir.join(files::TOKENIZER))
            .map_err(|e| EngineError::NotInstalled(format!("{}: {e}", files::TOKENIZER)))?;
        let noise_channels = shared::noise_channels(&decoder, DIR)?;
        Ok(Self {
            dir: config.dir.clone(),
            encoder,
            embed,
            lm,
            decoder,
            tokenizer,
            noise_channels,
            voices: Presets::default(),
        })
    }

    /// Runs the speech encoder on a 24 kHz mono clip: the voice print of a cloned profile.
    pub fn print_of(&mut self, reference: &[f32]) -> Result<VoicePrint, EngineError> {
        shared::encode(&mut self.encoder, reference)
    }

    /// [`Engine::synthesize`], also returning what each piece went through.
    pub fn synthesize_traced(
        &mut self,
        input: &SynthesisInput<'_>,
    ) -> Result<(Pcm, Trace), EngineError> {
        if let Some(stored) = input.voice_print {
            let print = VoicePrint::stored(stored)?;
            return self.synthesize_with_print(input, &print);
        }
        let voice = self
            .voices
            .get(&self.dir, input.preset, &mut self.encoder)?;
        let (print, reference) = (voice.print.clone(), voice.reference.clone());
        let (pcm, mut trace) = self.synthesize_with_print(input, &print)?;
        trace.reference = reference;
        Ok((pcm, trace))
    }

    /// Synthesis in the voice of `print` (a cloned profile's, stored): the speech encoder does
    /// not run. `input.preset` and `input.voice_print` are not looked at.
    pub fn synthesize_with_print(
        &mut self,
        input: &SynthesisInput<'_>,
        print: &VoicePrint,
    ) -> Result<(Pcm, Trace), EngineError> {
        let text = input.text.trim();
        if text.is_empty() {
            return Err(EngineError::InvalidInput("the text is empty".into()));
        }
        let temperature = f64::from(input.temperature.unwrap_or(DEFAULT_TEMPERATURE));
        let params = Sampling {
            temperature,
            top_k: TOP_K,
            top_p: TOP_P,
            repetition_penalty: REPETITION_PENALTY,
        };
        let pieces = pieces::some(self.pieces(text)?)?;
        let mut rng = ChaCha8Rng::seed_from_u64(input.seed);
        let (pcm, pieces) = pieces::render(&pieces, input, SAMPLE_RATE, |_, piece| {
            self.speak(print, &piece.tokens, params, &mut rng, input)
        })?;
        Ok((
            pcm,
            Trace {
                pieces,
                ..Trace::default()
            },
        ))
    }

    fn pieces(&self, text: &str) -> Result<Vec<split::Piece>, EngineError> {
        let tokenizer = &self.tokenizer;
        let mut tokenize = |texts: &[&str]| -> Result<Vec<Vec<i64>>, EngineError> {
            texts
                .iter()
                .map(|t| {
                    let encoding = tokenizer
                        .encode(*t, true)
                        .map_err(|e| EngineError::InvalidInput(e.to_string()))?;
                    Ok(encoding.get_ids().iter().map(|&id| i64::from(id)).collect())
                })
                .collect()
        };
        split::split(text, MAX_TEXT_TOKENS, &mut tokenize)
    }

    /// One piece: the language model's loop, then the decoder.
    fn speak(
        &mut self,
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
        let text = embed(&mut self.embed, text_ids)?;
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
        let mut cache = self.lm.start(1)?;
        let mut generated = vec![START_SPEECH];
        for _ in 0..MAX_NEW_TOKENS {
            if input.is_cancelled() {
                return Err(EngineError::Cancelled);
            }
            let logits = self.lm.step(&mut cache, embeds, rows, width)?;
            let uniform: f64 = rng.random();
            let next = sampling::sample(&logits[0], &generated, params, uniform) as i64;
            trace.uniforms.push(uniform);
            trace.tokens.push(next);
            generated.push(next);
            if next == STOP_SPEECH {
                break;
            }
            embeds = embed(&mut self.embed, &[next])?.data;
            rows = 1;
        }
        let mut speech = print.tokens.clone();
        speech.extend(
            generated[1..]
                .iter()
                .filter(|&&t| t != START_SPEECH && t != STOP_SPEECH),
        );
        speech.extend([SILENCE; SILENCE_TOKENS]);
        trace.noise = shared::draw_noise(rng, self.noise_channels);
        trace.waveform = shared::decode(
            &mut self.decoder,
            print,
            speech,
            &trace.noise,
            self.noise_channels,
        )?;
        Ok(trace)
    }
}

impl Engine for ChatterboxTurboEngine {
    fn synthesize(&mut self, input: &SynthesisInput<'_>) -> Result<Pcm, EngineError> {
        self.synthesize_traced(input).map(|(pcm, _)| pcm)
    }

    fn reference_rate(&self) -> Option<u32> {
        INFO.can_clone.then_some(SAMPLE_RATE)
    }

    /// The speech encoder's four outputs, as [`VoicePrint::to_bytes`]; the transcript and the
    /// language play no part.
    fn voice_print(
        &mut self,
        reference: &[f32],
        _transcript: Option<&str>,
        _language: &str,
    ) -> Result<Vec<u8>, EngineError> {
        Ok(self.print_of(reference)?.to_bytes())
    }
}

fn embed(session: &mut Session, ids: &[i64]) -> Result<Array, EngineError> {
    let ids = Tensor::from_array(([1, ids.len()], ids.to_vec())).map_err(inference)?;
    let outputs = session
        .run(ort::inputs! { "input_ids" => ids })
        .map_err(inference)?;
    let (shape, data) = outputs
        .get("inputs_embeds")
        .ok_or_else(|| inference("embed_tokens has no output inputs_embeds"))?
        .try_extract_tensor::<f32>()
        .map_err(inference)?;
    Ok(Array {
        shape: shape.iter().map(|d| *d as usize).collect(),
        data: data.to_vec(),
    })
}
