//! Qwen3-TTS-12Hz (Alibaba Qwen, Apache-2.0) on the public wavekat ONNX layout: `qwen` (the
//! Base model, which clones a voice from reference audio) and `qwen_custom_voice` (nine
//! built-in speakers), 24 kHz.
//!
//! Data path: text → Qwen2 BPE → prompt rows built on the host from the exported embedding
//! tables (speaker slot: a built-in speaker's row, or the x-vector of a reference clip, which
//! with its transcript can also be an in-context example) → `talker_prefill`, then per 80 ms
//! frame one talker draw (code group 0) and fifteen `code_predictor` draws, all sampled on the
//! host from the request's seed → `vocoder` on the codes. No graph draws noise of its own
//! (`voiced models prepare` checks), so the seed decides the take.

mod clone;
mod config;
pub mod files;
mod graphs;
pub mod print;
mod prompt;
mod sampling;
mod tokenizer;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub use config::QwenConfig;
pub use files::Variant;
pub use graphs::Generated;
pub(crate) use graphs::expect_io;
pub use print::QwenPrint;

use self::clone::Encoders;
use self::graphs::{Graphs, LoopSettings};
use self::prompt::{Example, Prompt, Speaker, Tables};
use self::sampling::Warp;
use self::tokenizer::TextTokenizer;
use crate::domain::{EngineId, EngineInfo};
use crate::engines::files::{Clips, preset_names};
use crate::engines::onnx;
use crate::engines::pieces;
use crate::engines::text::split;
use crate::engines::{Engine, EngineError, Pcm, Preset, SynthesisInput};

/// Base's and CustomVoice's capabilities ([`EngineId::info`]).
pub const INFO_BASE: &EngineInfo = EngineId::Qwen.info();
pub const INFO_CUSTOM_VOICE: &EngineInfo = EngineId::QwenCustomVoice.info();

pub const SAMPLE_RATE: u32 = 24_000;
pub const SAMPLES_PER_FRAME: usize = clone::SAMPLES_PER_FRAME;
/// Text tokens per piece; longer text is split at sentences, clauses, words.
pub const MAX_TEXT_TOKENS: usize = 200;
/// Frames per piece at most (2 minutes), whatever `max_new_tokens` the config allows.
pub const MAX_FRAMES: usize = 1500;

/// CustomVoice's built-in speakers: (name, native language, description), upstream's table.
pub const SPEAKERS: [(&str, &str, &str); 9] = [
    ("vivian", "zh", "bright, slightly edgy young female voice"),
    ("serena", "zh", "warm, gentle young female voice"),
    (
        "uncle_fu",
        "zh",
        "seasoned male voice with a low, mellow timbre",
    ),
    (
        "dylan",
        "zh",
        "youthful Beijing male voice (Beijing dialect)",
    ),
    ("eric", "zh", "lively Chengdu male voice (Sichuan dialect)"),
    (
        "ryan",
        "en",
        "dynamic male voice with strong rhythmic drive",
    ),
    (
        "aiden",
        "en",
        "sunny American male voice with a clear midrange",
    ),
    ("ono_anna", "ja", "playful Japanese female voice"),
    ("sohee", "ko", "warm Korean female voice with rich emotion"),
];

#[derive(Debug, Clone)]
pub struct QwenEngineConfig {
    pub variant: Variant,
    /// `<models_dir>/qwen` or `<models_dir>/qwen_custom_voice`.
    pub dir: PathBuf,
    pub ort_library: PathBuf,
    pub intra_threads: usize,
}

impl QwenEngineConfig {
    pub fn from_models_dir(models_dir: &Path, variant: Variant) -> Self {
        Self {
            variant,
            dir: variant.dir(models_dir),
            ort_library: onnx::library_path(models_dir),
            intra_threads: 1,
        }
    }
}

/// What one piece went through (for the differential test and diagnostics).
#[derive(Debug, Clone, Default)]
pub struct PieceTrace {
    pub text_ids: Vec<u32>,
    pub generated: Generated,
    pub waveform: Vec<f32>,
}

impl pieces::Spoken for PieceTrace {
    fn audio(&self) -> &[f32] {
        &self.waveform
    }
}

#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// The 24 kHz reference clip of a Base preset (empty for a stored print or CustomVoice).
    pub reference: Vec<f32>,
    pub pieces: Vec<PieceTrace>,
}

/// Lists the presets without loading a model: Base's reference clips, CustomVoice's speakers.
pub fn presets(dir: &Path, variant: Variant) -> Vec<Preset> {
    match variant {
        Variant::Base => preset_names(dir, Clips::Any)
            .into_iter()
            .map(|name| Preset {
                description: format!("reference voice voices/{name}.wav"),
                name,
                language: "en".into(),
            })
            .collect(),
        Variant::CustomVoice => {
            let config = QwenConfig::load(&dir.join(files::CONFIG)).unwrap_or_default();
            SPEAKERS
                .iter()
                .filter(|(name, ..)| config.spk_id.contains_key(*name))
                .map(|(name, language, description)| Preset {
                    name: (*name).to_owned(),
                    language: (*language).to_owned(),
                    description: (*description).to_owned(),
                })
                .collect()
        }
    }
}

struct PresetVoice {
    print: QwenPrint,
    reference: Vec<f32>,
}

pub struct QwenEngine {
    variant: Variant,
    dir: PathBuf,
    config: QwenConfig,
    tokenizer: TextTokenizer,
    role_ids: [u32; 3],
    tables: Tables,
    graphs: Graphs,
    encoders: Option<Encoders>,
    voices: HashMap<String, PresetVoice>,
}

impl QwenEngine {
    pub fn load(config: &QwenEngineConfig) -> Result<Self, EngineError> {
        let variant = config.variant;
        let dir = &config.dir;
        let problems = files::problems(dir, variant);
        if !problems.is_empty() {
            return Err(EngineError::NotInstalled(format!(
                "{} in {}: {}",
                variant.engine(),
                dir.display(),
                problems.join("; ")
            )));
        }
        let model = QwenConfig::load(&dir.join(files::CONFIG))?;
        if model.tts_model_type != variant.model_type() {
            return Err(EngineError::NotInstalled(format!(
                "{}/{} is a {:?} model; the {} engine needs a {:?} one",
                dir.display(),
                files::CONFIG,
                model.tts_model_type,
                variant.engine(),
                variant.model_type()
            )));
        }
        let env = onnx::environment(&config.ort_library)?;
        let tokenizer = TextTokenizer::load(&dir.join(files::VOCAB), &dir.join(files::MERGES))?;
        let role_ids = [
            model.im_start_token_id,
            tokenizer.single("assistant")?,
            tokenizer.single("\n")?,
        ];
        let tables = Tables::load(dir, model.talker_num_code_groups)?;
        let graphs = Graphs::load(&env, dir, config.intra_threads)?;
        let encoders = match variant {
            Variant::Base => Some(Encoders::load(&env, dir, config.intra_threads)?),
            Variant::CustomVoice => None,
        };
        Ok(Self {
            variant,
            dir: dir.clone(),
            config: model,
            tokenizer,
            role_ids,
            tables,
            graphs,
            encoders,
            voices: HashMap::new(),
        })
    }

    /// The print of a 24 kHz reference clip: its x-vector, and with a transcript (when the clip
    /// fits the speech tokenizer's window) the transcript's tokens and the clip's codes.
    pub fn print(
        &mut self,
        reference: &[f32],
        transcript: Option<&str>,
    ) -> Result<QwenPrint, EngineError> {
        let encoders = self.encoders.as_mut().ok_or_else(|| {
            EngineError::InvalidInput(format!(
                "the {} engine cannot clone a voice",
                self.variant.engine()
            ))
        })?;
        let speaker = encoders.speaker(reference)?;
        let transcript = transcript.map(str::trim).filter(|t| !t.is_empty());
        let example = match transcript {
            Some(text) => encoders
                .codes(reference)?
                .map(|codes| Ok::<_, EngineError>((self.tokenizer.encode(text)?, codes)))
                .transpose()?,
            None => None,
        };
        let (text_ids, (groups, codes)) =
            example.unwrap_or((Vec::new(), (self.config.talker_num_code_groups, Vec::new())));
        Ok(QwenPrint {
            speaker,
            text_ids,
            groups,
            codes,
        })
    }

    /// A Base preset's print, from `voices/<preset>.wav` (and `.txt`) on first use.
    fn preset(&mut self, preset: &str) -> Result<&PresetVoice, EngineError> {
        if !self.voices.contains_key(preset) {
            if !preset_names(&self.dir, Clips::Any)
                .iter()
                .any(|n| n == preset)
            {
                return Err(EngineError::UnknownPreset(preset.to_owned()));
            }
            let clip = self.dir.join(files::VOICES).join(format!("{preset}.wav"));
            let bytes = std::fs::read(&clip)
                .map_err(|e| EngineError::NotInstalled(format!("{}: {e}", clip.display())))?;
            let reference = crate::engines::reference::prepare(&bytes, SAMPLE_RATE)
                .map_err(|e| EngineError::NotInstalled(format!("{}: {e}", clip.display())))?;
            let transcript = std::fs::read_to_string(clip.with_extension("txt")).ok();
            let print = self.print(&reference, transcript.as_deref())?;
            self.voices
                .insert(preset.to_owned(), PresetVoice { print, reference });
        }
        Ok(&self.voices[preset])
    }

    /// [`Engine::synthesize`], also returning what each piece went through. The input's
    /// instruction (the voice's personality prompt) goes before the prompt as
    /// `<|im_start|>user\n…<|im_end|>\n` where the model takes one (the 1.7B CustomVoice
    /// model); the 0.6B models ignore it, as upstream does.
    pub fn synthesize_traced(
        &mut self,
        input: &SynthesisInput<'_>,
    ) -> Result<(Pcm, Trace), EngineError> {
        let text = input.text.trim();
        if text.is_empty() {
            return Err(EngineError::InvalidInput("the text is empty".into()));
        }
        let mut reference = Vec::new();
        let print = match (self.variant, input.voice_print) {
            (Variant::CustomVoice, Some(_)) => {
                return Err(EngineError::InvalidInput(
                    "the qwen_custom_voice engine cannot speak a cloned voice".into(),
                ));
            }
            (Variant::CustomVoice, None) => None,
            (Variant::Base, Some(bytes)) => {
                Some(QwenPrint::from_bytes(bytes).ok_or(EngineError::DamagedPrint)?)
            }
            (Variant::Base, None) => {
                let voice = self.preset(input.preset)?;
                reference = voice.reference.clone();
                Some(voice.print.clone())
            }
        };
        let speaker_name = input.preset.to_ascii_lowercase();
        let speaker = match &print {
            Some(print) => Speaker::Vector(&print.speaker),
            None => Speaker::Id(
                *self
                    .config
                    .spk_id
                    .get(&speaker_name)
                    .ok_or_else(|| EngineError::UnknownPreset(input.preset.to_owned()))?,
            ),
        };
        let instruction_ids = match input.instruction.map(str::trim).filter(|i| !i.is_empty()) {
            Some(text) if self.config.takes_instruction() => {
                // "<|im_start|>user\n{instruction}<|im_end|>\n", the markers as special ids.
                let mut ids = vec![self.config.im_start_token_id];
                ids.extend(self.tokenizer.encode(&format!("user\n{text}"))?);
                ids.push(self.config.im_end_token_id);
                ids.push(self.role_ids[2]);
                Some(ids)
            }
            _ => None,
        };
        let language_id = self.config.language_id(
            input.language,
            (print.is_none()).then_some(speaker_name.as_str()),
        );
        let example = print.as_ref().filter(|p| p.has_example()).map(|p| Example {
            text_ids: &p.text_ids,
            codes: &p.codes,
        });
        if let Some(print) = print.as_ref().filter(|p| p.has_example())
            && print.groups != self.config.talker_num_code_groups
        {
            return Err(EngineError::InvalidInput(
                "the voice print's codes do not fit this model: clone the voice again".into(),
            ));
        }
        let generate = self.config.generate_config;
        let settings = LoopSettings {
            talker: Warp {
                temperature: generate.temperature,
                top_k: generate.top_k,
                top_p: generate.top_p,
                repetition_penalty: generate.repetition_penalty,
            },
            predictor: Warp {
                temperature: generate.subtalker_temperature,
                top_k: generate.subtalker_top_k,
                top_p: generate.subtalker_top_p,
                repetition_penalty: 1.0,
            },
            eos: self.config.codec_eos_token_id,
            groups: self.config.talker_num_code_groups,
            max_frames: generate.max_new_tokens.min(MAX_FRAMES),
        };
        let pieces = pieces::some(self.pieces(text)?)?;
        let pad = self.tables.project(self.config.tts_pad_token_id)?;
        let mut rng = ChaCha8Rng::seed_from_u64(input.seed);
        let (pcm, pieces) = pieces::render(&pieces, input, SAMPLE_RATE, |_, piece| {
            let text_ids: Vec<u32> = piece.tokens.iter().map(|&t| t as u32).collect();
            let prompt = Prompt {
                instruction_ids: instruction_ids.as_deref(),
                role_ids: self.role_ids,
                language_id,
                speaker,
                text_ids: &text_ids,
                example,
            };
            let rows = self.tables.prompt(&self.config, &prompt)?;
            let generated =
                self.graphs
                    .generate(&self.tables, rows, &pad, &settings, &mut rng, input)?;
            let waveform = self.speak(&generated.codes, example.map(|e| e.codes))?;
            Ok(PieceTrace {
                text_ids,
                generated,
                waveform,
            })
        })?;
        Ok((pcm, Trace { reference, pieces }))
    }

    /// The vocoder on the generated codes; with an in-context example, on the reference codes
    /// followed by the generated ones, the reference's share of the audio cut off (upstream).
    fn speak(&mut self, codes: &[i64], example: Option<&[i64]>) -> Result<Vec<f32>, EngineError> {
        let groups = self.config.talker_num_code_groups;
        if codes.is_empty() {
            return Ok(Vec::new());
        }
        let Some(reference) = example else {
            return self.graphs.vocode(codes, groups);
        };
        let all = [reference, codes].concat();
        let waveform = self.graphs.vocode(&all, groups)?;
        let (ref_frames, frames) = (reference.len() / groups, all.len() / groups);
        let cut = (ref_frames as f64 / frames as f64 * waveform.len() as f64) as usize;
        Ok(waveform[cut.min(waveform.len())..].to_vec())
    }

    fn pieces(&self, text: &str) -> Result<Vec<split::Piece>, EngineError> {
        let tokenizer = &self.tokenizer;
        let mut tokenize = |texts: &[&str]| -> Result<Vec<Vec<i64>>, EngineError> {
            texts
                .iter()
                .map(|t| Ok(tokenizer.encode(t)?.into_iter().map(i64::from).collect()))
                .collect()
        };
        split::split(text, MAX_TEXT_TOKENS, &mut tokenize)
    }
}

impl Engine for QwenEngine {
    fn synthesize(&mut self, input: &SynthesisInput<'_>) -> Result<Pcm, EngineError> {
        self.synthesize_traced(input).map(|(pcm, _)| pcm)
    }

    fn reference_rate(&self) -> Option<u32> {
        self.variant.info().can_clone.then_some(SAMPLE_RATE)
    }

    fn voice_print(
        &mut self,
        reference: &[f32],
        transcript: Option<&str>,
        _language: &str,
    ) -> Result<Vec<u8>, EngineError> {
        Ok(self.print(reference, transcript)?.to_bytes())
    }
}
