//! Chatterbox Turbo (Resemble AI, MIT) as four ONNX graphs: 24 kHz speech in the voice of a
//! reference clip.
//!
//! Data path: reference clip → `speech_encoder` once per voice (its four outputs are the voice
//! print) · text → `tokenizer.json` → `embed_tokens` → `language_model` with a KV cache, one
//! speech token per step, sampled on the host from the request's seed → `conditional_decoder`
//! (the seeded copy: its flow noise is an input drawn from the same seed) → waveform.

pub mod files;
mod print;

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ort::memory::Allocator;
use ort::session::{Session, SessionInputValue};
use ort::value::{DynTensor, DynValue, Tensor, TensorElementType, ValueType};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;
use tokenizers::Tokenizer;

use crate::engines::kokoro::split;
use crate::engines::onnx::{self, inference};
use crate::engines::sampling::{self, Sampling};
use crate::engines::{Engine, EngineError, Pcm, Preset, SynthesisInput};

pub const SAMPLE_RATE: u32 = 24_000;
pub const START_SPEECH: i64 = 6561;
pub const STOP_SPEECH: i64 = 6562;
/// Appended after the generated tokens so that the decoder ends on silence (upstream).
pub const SILENCE: i64 = 4299;
pub const SILENCE_TOKENS: usize = 3;
/// Upper bound on speech tokens per piece (40 s at 25 tokens/s).
pub const MAX_NEW_TOKENS: usize = 1000;
/// Text tokens per piece; longer text is split at sentences, clauses, words.
pub const MAX_TEXT_TOKENS: usize = 300;
pub const DEFAULT_TEMPERATURE: f32 = 0.8;
/// Frames of decoder noise drawn per piece (tiled by the graph when longer: 80 s of mel).
pub const NOISE_FRAMES: usize = 4096;
/// Upstream sampling settings, apart from the temperature.
pub const TOP_K: usize = 1000;
pub const TOP_P: f64 = 0.95;
pub const REPETITION_PENALTY: f64 = 1.2;

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
            dir: files::dir(models_dir),
            ort_library: onnx::library_path(models_dir),
            intra_threads: 1,
        }
    }
}

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

/// What one piece of text went through (for the differential test and diagnostics).
#[derive(Debug, Clone, Default)]
pub struct PieceTrace {
    pub text_ids: Vec<i64>,
    /// One uniform draw per language-model step, in order.
    pub uniforms: Vec<f64>,
    /// The sampled ids, the stop token included when it was drawn.
    pub tokens: Vec<i64>,
    /// The decoder's noise bank [1, 80, NOISE_FRAMES].
    pub noise: Vec<f32>,
    pub waveform: Vec<f32>,
}

#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// The reference clip fed to the speech encoder (24 kHz).
    pub reference: Vec<f32>,
    pub pieces: Vec<PieceTrace>,
}

struct KvInput {
    past: String,
    present: String,
    ty: TensorElementType,
    heads: i64,
    head_dim: i64,
}

struct Voice {
    print: VoicePrint,
    reference: Vec<f32>,
}

pub struct ChatterboxTurboEngine {
    dir: PathBuf,
    encoder: Session,
    embed: Session,
    lm: Session,
    decoder: Session,
    tokenizer: Tokenizer,
    kv: Vec<KvInput>,
    lm_takes_positions: bool,
    noise_channels: usize,
    voices: HashMap<String, Voice>,
}

/// Lists the preset voices (reference clips) without loading a model.
pub fn presets(dir: &Path) -> Vec<Preset> {
    files::preset_names(dir)
        .into_iter()
        .map(|name| Preset {
            description: format!("reference voice voices/{name}.wav"),
            name,
            language: "en".into(),
        })
        .collect()
}

impl ChatterboxTurboEngine {
    pub fn load(config: &TurboConfig) -> Result<Self, EngineError> {
        let problems = files::problems(&config.dir);
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
        let decoder_path = files::verify_seeded(&graph(files::CONDITIONAL_DECODER))
            .map_err(EngineError::NotInstalled)?;
        let encoder = open(&graph(files::SPEECH_ENCODER))?;
        let embed = open(&graph(files::EMBED_TOKENS))?;
        let lm = open(&graph(files::LANGUAGE_MODEL))?;
        let decoder = open(&decoder_path)?;
        let tokenizer = Tokenizer::from_file(config.dir.join(files::TOKENIZER))
            .map_err(|e| EngineError::NotInstalled(format!("{}: {e}", files::TOKENIZER)))?;
        let kv = kv_inputs(&lm)?;
        let lm_takes_positions = lm.inputs().iter().any(|i| i.name() == "position_ids");
        let noise_channels = decoder
            .inputs()
            .iter()
            .find(|i| i.name() == "noise")
            .and_then(|i| dims(i.dtype()).and_then(|d| d.get(1).copied()))
            .filter(|c| *c > 0)
            .ok_or_else(|| {
                EngineError::NotInstalled(
                    "the seeded decoder has no `noise` input [1, C, K]: run `voiced models prepare chatterbox_turbo`".into(),
                )
            })? as usize;
        Ok(Self {
            dir: config.dir.clone(),
            encoder,
            embed,
            lm,
            decoder,
            tokenizer,
            kv,
            lm_takes_positions,
            noise_channels,
            voices: HashMap::new(),
        })
    }

    /// Runs the speech encoder on a 24 kHz mono clip: the voice print of a cloned profile.
    pub fn voice_print(&mut self, reference: &[f32]) -> Result<VoicePrint, EngineError> {
        let audio =
            Tensor::from_array(([1, reference.len()], reference.to_vec())).map_err(inference)?;
        let outputs = self
            .encoder
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

    /// The preset's print, computed from `voices/<preset>.wav` on first use.
    fn voice(&mut self, preset: &str) -> Result<&Voice, EngineError> {
        if !self.voices.contains_key(preset) {
            if !files::preset_names(&self.dir).iter().any(|n| n == preset) {
                return Err(EngineError::UnknownPreset(preset.to_owned()));
            }
            let path = self.dir.join(files::VOICES).join(format!("{preset}.wav"));
            let bytes = std::fs::read(&path)
                .map_err(|e| EngineError::NotInstalled(format!("{}: {e}", path.display())))?;
            // Preset clips pass the same checks as a clone's reference audio.
            let reference = crate::engines::reference::prepare(&bytes, SAMPLE_RATE)
                .map_err(|e| EngineError::NotInstalled(format!("{}: {e}", path.display())))?;
            let print = self.voice_print(&reference)?;
            self.voices
                .insert(preset.to_owned(), Voice { print, reference });
        }
        Ok(&self.voices[preset])
    }

    /// [`Engine::synthesize`], also returning what each piece went through.
    pub fn synthesize_traced(
        &mut self,
        input: &SynthesisInput<'_>,
    ) -> Result<(Pcm, Trace), EngineError> {
        let voice = self.voice(input.preset)?;
        let (print, reference) = (voice.print.clone(), voice.reference.clone());
        let (pcm, mut trace) = self.synthesize_with_print(input, &print)?;
        trace.reference = reference;
        Ok((pcm, trace))
    }

    /// Synthesis in the voice of a stored print (a cloned profile's): the speech encoder does
    /// not run. `input.preset` is not looked at.
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
        let pieces = self.pieces(text)?;
        if pieces.is_empty() {
            return Err(EngineError::InvalidInput(
                "the text has nothing to pronounce".into(),
            ));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(input.seed);
        let mut trace = Trace::default();
        let mut samples = Vec::new();
        let last = pieces.len() - 1;
        for (i, piece) in pieces.iter().enumerate() {
            if input.is_cancelled() {
                return Err(EngineError::Cancelled);
            }
            let piece_trace = self.speak(print, &piece.tokens, params, &mut rng, input)?;
            samples.extend(piece_trace.waveform.iter().map(|s| s.clamp(-1.0, 1.0)));
            if i < last {
                let pause = (piece.boundary.pause_secs() * SAMPLE_RATE as f32) as usize;
                samples.resize(samples.len() + pause, 0.0);
            }
            trace.pieces.push(piece_trace);
        }
        let pcm = Pcm {
            samples,
            sample_rate: SAMPLE_RATE,
        };
        Ok((pcm, trace))
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
        let prefix = rows;
        let mut first_position = 0i64;
        let mut past: Vec<DynValue> = self.kv.iter().map(empty_cache).collect::<Result<_, _>>()?;
        let mut generated = vec![START_SPEECH];
        for step in 0..MAX_NEW_TOKENS {
            let total = prefix + step;
            if input.is_cancelled() {
                return Err(EngineError::Cancelled);
            }
            let mut inputs: Vec<(Cow<'_, str>, SessionInputValue<'_>)> = vec![
                (
                    "inputs_embeds".into(),
                    Tensor::from_array(([1, rows, width], embeds))
                        .map_err(inference)?
                        .into(),
                ),
                (
                    "attention_mask".into(),
                    Tensor::from_array(([1, total], vec![1i64; total]))
                        .map_err(inference)?
                        .into(),
                ),
            ];
            if self.lm_takes_positions {
                let positions: Vec<i64> = (0..rows as i64).map(|p| first_position + p).collect();
                inputs.push((
                    "position_ids".into(),
                    Tensor::from_array(([1, rows], positions))
                        .map_err(inference)?
                        .into(),
                ));
            }
            for (kv, value) in self.kv.iter().zip(past.drain(..)) {
                inputs.push((kv.past.as_str().into(), value.into()));
            }
            let mut outputs = self.lm.run(inputs).map_err(inference)?;
            let (shape, logits) = outputs
                .get("logits")
                .ok_or_else(|| inference("language model has no output logits"))?
                .try_extract_tensor::<f32>()
                .map_err(inference)?;
            let vocab = *shape.last().unwrap_or(&0) as usize;
            if vocab == 0 || logits.len() < vocab {
                return Err(inference("language model returned no logits"));
            }
            let uniform: f64 = rng.random();
            let next =
                sampling::sample(&logits[logits.len() - vocab..], &generated, params, uniform)
                    as i64;
            for kv in &self.kv {
                past.push(outputs.remove(&kv.present).ok_or_else(|| {
                    inference(format!("language model has no output {}", kv.present))
                })?);
            }
            drop(outputs);
            trace.uniforms.push(uniform);
            trace.tokens.push(next);
            generated.push(next);
            if next == STOP_SPEECH {
                break;
            }
            first_position += rows as i64;
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
        trace.noise = (0..self.noise_channels * NOISE_FRAMES)
            .map(|_| rng.sample::<f32, _>(StandardNormal))
            .collect();
        trace.waveform = self.decode(print, speech, &trace.noise)?;
        Ok(trace)
    }

    fn decode(
        &mut self,
        print: &VoicePrint,
        speech: Vec<i64>,
        noise: &[f32],
    ) -> Result<Vec<f32>, EngineError> {
        let tensor = |a: &Array| Tensor::from_array((a.shape.clone(), a.data.clone()));
        let outputs = self
            .decoder
            .run(ort::inputs! {
                "speech_tokens" => Tensor::from_array(([1, speech.len()], speech)).map_err(inference)?,
                "speaker_embeddings" => tensor(&print.speaker).map_err(inference)?,
                "speaker_features" => tensor(&print.speaker_features).map_err(inference)?,
                "noise" => Tensor::from_array(([1, self.noise_channels, NOISE_FRAMES], noise.to_vec())).map_err(inference)?,
            })
            .map_err(inference)?;
        let (_, waveform) = outputs
            .get("waveform")
            .ok_or_else(|| inference("decoder has no output waveform"))?
            .try_extract_tensor::<f32>()
            .map_err(inference)?;
        Ok(waveform.to_vec())
    }
}

impl Engine for ChatterboxTurboEngine {
    fn presets(&self) -> Vec<Preset> {
        presets(&self.dir)
    }

    fn synthesize(&mut self, input: &SynthesisInput<'_>) -> Result<Pcm, EngineError> {
        self.synthesize_traced(input).map(|(pcm, _)| pcm)
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

fn dims(ty: &ValueType) -> Option<Vec<i64>> {
    match ty {
        ValueType::Tensor { shape, .. } => Some(shape.iter().copied().collect()),
        _ => None,
    }
}

/// The cache inputs `past_key_values.N.{key,value}`, each paired by name with its output
/// `present.N.{key,value}`; head count and head size come from the graph's declared shape
/// [batch, heads, past, head_dim], and the element type from the graph (f16 for the fp16 and
/// q4f16 variants).
fn kv_inputs(lm: &Session) -> Result<Vec<KvInput>, EngineError> {
    let outputs: Vec<&str> = lm.outputs().iter().map(|o| o.name()).collect();
    let mut kv = Vec::new();
    for input in lm.inputs() {
        let Some(rest) = input.name().strip_prefix("past_key_values") else {
            continue;
        };
        let present = format!("present{rest}");
        if !outputs.contains(&present.as_str()) {
            return Err(EngineError::NotInstalled(format!(
                "language model: {} has no matching output {present}",
                input.name()
            )));
        }
        let (ty, shape) = match input.dtype() {
            ValueType::Tensor { ty, shape, .. } => (*ty, shape.clone()),
            _ => return Err(inference(format!("{} is not a tensor", input.name()))),
        };
        if shape.len() != 4 || shape[1] <= 0 || shape[3] <= 0 {
            return Err(EngineError::NotInstalled(format!(
                "language model: {} has shape {:?}, expected [batch, heads, past, head_dim]",
                input.name(),
                &shape[..]
            )));
        }
        kv.push(KvInput {
            past: input.name().to_owned(),
            present,
            ty,
            heads: shape[1],
            head_dim: shape[3],
        });
    }
    if kv.is_empty() {
        return Err(EngineError::NotInstalled(
            "language model has no past_key_values inputs".into(),
        ));
    }
    Ok(kv)
}

/// An empty cache entry [1, heads, 0, head_dim] of the graph's element type.
fn empty_cache(kv: &KvInput) -> Result<DynValue, EngineError> {
    let tensor = DynTensor::new(
        &Allocator::default(),
        kv.ty,
        [1usize, kv.heads as usize, 0, kv.head_dim as usize],
    )
    .map_err(inference)?;
    Ok(tensor.into_dyn())
}
