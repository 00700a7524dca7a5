//! LuxTTS (ZipVoice-distill, Apache-2.0) as ONNX: speech in the voice of a reference clip and
//! its transcript, English.
//!
//! Data path: reference clip (first 5 s, 24 kHz) → Vocos log-mel × 0.1 and the transcript's
//! phonemes (the voice print) · text → English normalisation → espeak-ng IPA → `tokens.txt` →
//! `text_encoder` (prompt and text tokens, durations) → four flow-matching steps of
//! `fm_decoder` from start noise drawn on the host from the request's seed → the prompt's
//! frames cut off → the operator's `vocoder.onnx` → waveform at the vocoder's rate.

pub mod files;
pub mod print;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ort::session::Session;
use ort::value::Tensor;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::StandardNormal;

pub use print::LuxPrint;

use crate::domain::{EngineId, EngineInfo};
use crate::engines::files::{Clips, preset_names};
use crate::engines::onnx::{self, inference};
use crate::engines::pieces;
use crate::engines::qwen::expect_io;
use crate::engines::spectrogram::{self, Mel};
use crate::engines::text::{normalize, phonemize, pronounce, split};
use crate::engines::{Engine, EngineError, Pcm, Preset, SynthesisInput};

/// Its capabilities ([`EngineId::info`]).
pub const INFO: &EngineInfo = EngineId::Luxtts.info();
/// The rate of reference audio (and of the features the model was trained on).
pub const REFERENCE_RATE: u32 = 24_000;
/// Upstream `LuxTTS.generate_speech` defaults: 4 steps, guidance 3.0, t_shift 0.5, speed 1.0
/// (× 1.3 inside).
pub const STEPS: usize = 4;
pub const GUIDANCE: f32 = 3.0;
pub const T_SHIFT: f64 = 0.5;
pub const SPEED: f32 = 1.3;
/// `encode_prompt(duration=5, rms=0.001)`: the first 5 s of the clip, normalised up only below
/// this RMS; the output is scaled down to match a clip quieter than `TARGET_RMS`.
pub const PROMPT_SECS: usize = 5;
pub const PROMPT_RMS: f32 = 0.001;
pub const TARGET_RMS: f32 = 0.1;
pub const FEATURE_SCALE: f32 = 0.1;
/// Phoneme tokens per piece; longer text is split at sentences, clauses, words.
pub const MAX_TOKENS: usize = 400;
const HOP: usize = 256;

#[derive(Debug, Clone)]
pub struct LuxConfig {
    /// `<models_dir>/luxtts`.
    pub dir: PathBuf,
    pub ort_library: PathBuf,
    pub intra_threads: usize,
}

impl LuxConfig {
    pub fn from_models_dir(models_dir: &Path) -> Self {
        Self {
            dir: files::dir(models_dir),
            ort_library: onnx::library_path(models_dir),
            intra_threads: 1,
        }
    }
}

/// What one piece went through (for the differential test and diagnostics).
#[derive(Debug, Clone, Default)]
pub struct PieceTrace {
    pub tokens: Vec<i64>,
    /// The start noise x [1, frames, width].
    pub noise: Vec<f32>,
    pub waveform: Vec<f32>,
}

impl pieces::Spoken for PieceTrace {
    fn audio(&self) -> &[f32] {
        &self.waveform
    }
}

#[derive(Debug, Clone, Default)]
pub struct Trace {
    pub print: Option<LuxPrint>,
    pub pieces: Vec<PieceTrace>,
}

/// Lists the preset voices (clips with transcripts) without loading a model.
pub fn presets(dir: &Path) -> Vec<Preset> {
    preset_names(dir, Clips::WithTranscript)
        .into_iter()
        .map(|name| Preset {
            description: format!("reference voice voices/{name}.wav"),
            name,
            language: "en".into(),
        })
        .collect()
}

/// Whether LuxTTS can speak `language` (checked before a generation is queued).
pub fn readable(language: &str) -> Result<(), String> {
    let primary = language.split(['-', '_']).next().unwrap_or_default();
    if primary.eq_ignore_ascii_case("en") {
        Ok(())
    } else {
        Err(format!(
            "the luxtts engine speaks English only, not {language:?}"
        ))
    }
}

pub struct LuxEngine {
    dir: PathBuf,
    text_encoder: Session,
    fm_decoder: Session,
    vocoder: Session,
    tokens: HashMap<char, i64>,
    width: usize,
    sample_rate: u32,
    mel: Mel,
    voices: HashMap<String, LuxPrint>,
}

impl LuxEngine {
    pub fn load(config: &LuxConfig) -> Result<Self, EngineError> {
        let dir = &config.dir;
        let problems = files::problems(dir);
        if !problems.is_empty() {
            return Err(EngineError::NotInstalled(format!(
                "luxtts in {}: {}",
                dir.display(),
                problems.join("; ")
            )));
        }
        let env = onnx::environment(&config.ort_library)?;
        let open = |path: PathBuf| onnx::session(&env, &dir.join(path), config.intra_threads);
        let graph = |name| files::graph(dir, name).expect("checked above");
        let text_encoder = open(graph(files::TEXT_ENCODER))?;
        let fm_decoder = open(graph(files::FM_DECODER))?;
        let vocoder = open(files::VOCODER.into())?;
        expect_io(
            &text_encoder,
            "text_encoder",
            &["tokens", "prompt_tokens", "prompt_features_len", "speed"],
            &["text_condition"],
        )?;
        expect_io(
            &fm_decoder,
            "fm_decoder",
            &[
                "t",
                "x",
                "text_condition",
                "speech_condition",
                "guidance_scale",
            ],
            &["v"],
        )?;
        expect_io(&vocoder, files::VOCODER, &["mel"], &["waveform"])?;
        let meta = |session: &Session, key: &str| {
            session
                .metadata()
                .ok()
                .and_then(|m| m.custom(key))?
                .trim()
                .parse::<u32>()
                .ok()
        };
        let width = meta(&fm_decoder, "feat_dim").unwrap_or(100) as usize;
        if width != spectrogram::VOCOS.n_mels {
            return Err(EngineError::NotInstalled(format!(
                "fm_decoder works on {width} features; voiced computes {} (Vocos)",
                spectrogram::VOCOS.n_mels
            )));
        }
        let sample_rate = meta(&vocoder, "sample_rate").unwrap_or(24_000);
        let tokens = read_tokens(&dir.join(files::TOKENS))?;
        Ok(Self {
            dir: dir.clone(),
            text_encoder,
            fm_decoder,
            vocoder,
            tokens,
            width,
            sample_rate,
            mel: Mel::new(spectrogram::VOCOS),
            voices: HashMap::new(),
        })
    }

    /// The rate of the audio this deployment's vocoder writes.
    pub fn sample_rate(&self) -> u32 {
        self.sample_rate
    }

    /// Phoneme tokens of English text (normalised, espeak-ng `en-us`, `tokens.txt`; symbols
    /// outside the table are dropped as upstream does); a pinned character
    /// (`pronounce::pin`) reads `pins[i]`.
    pub fn tokenize(&self, texts: &[&str], pins: &[String]) -> Result<Vec<Vec<i64>>, EngineError> {
        let normalized: Vec<String> = texts.iter().map(|t| normalize::english(t)).collect();
        let refs: Vec<&str> = normalized.iter().map(String::as_str).collect();
        let ipa = phonemize::ipa_many(&refs, "en-us", pins)?;
        Ok(ipa
            .iter()
            .map(|p| {
                p.chars()
                    .filter_map(|c| self.tokens.get(&c).copied())
                    .collect()
            })
            .collect())
    }

    /// The print of a 24 kHz reference clip and its transcript.
    pub fn print(&mut self, reference: &[f32], transcript: &str) -> Result<LuxPrint, EngineError> {
        let tokens = self
            .tokenize(&[transcript.trim()], &[])?
            .pop()
            .unwrap_or_default();
        if tokens.is_empty() {
            return Err(EngineError::InvalidInput(
                "the reference transcript has nothing to pronounce".into(),
            ));
        }
        let mut clip =
            reference[..reference.len().min(PROMPT_SECS * REFERENCE_RATE as usize)].to_vec();
        let rms = (clip.iter().map(|s| s * s).sum::<f32>() / clip.len().max(1) as f32).sqrt();
        if rms > 0.0 && rms < PROMPT_RMS {
            clip.iter_mut().for_each(|s| *s *= PROMPT_RMS / rms);
        }
        let (frames, mut features) = self.mel.compute(&clip);
        // lhotse's frame count for the clip's duration, the last frame repeated if short.
        let wanted = (clip.len() + HOP / 2) / HOP;
        let width = self.width;
        if frames == 0 || wanted == 0 {
            return Err(EngineError::InvalidInput(
                "the reference audio is too short".into(),
            ));
        }
        features.truncate(wanted * width);
        while features.len() < wanted * width {
            let last = features[features.len() - width..].to_vec();
            features.extend(last);
        }
        features.iter_mut().for_each(|x| *x *= FEATURE_SCALE);
        Ok(LuxPrint {
            width,
            features,
            tokens,
            rms,
        })
    }

    fn preset(&mut self, preset: &str) -> Result<LuxPrint, EngineError> {
        if let Some(print) = self.voices.get(preset) {
            return Ok(print.clone());
        }
        if !preset_names(&self.dir, Clips::WithTranscript)
            .iter()
            .any(|n| n == preset)
        {
            return Err(EngineError::UnknownPreset(preset.to_owned()));
        }
        let clip = self.dir.join(files::VOICES).join(format!("{preset}.wav"));
        let broken = |e: &dyn std::fmt::Display| {
            EngineError::NotInstalled(format!("{}: {e}", clip.display()))
        };
        let bytes = std::fs::read(&clip).map_err(|e| broken(&e))?;
        let reference =
            crate::engines::reference::prepare(&bytes, REFERENCE_RATE).map_err(|e| broken(&e))?;
        let transcript =
            std::fs::read_to_string(clip.with_extension("txt")).map_err(|e| broken(&e))?;
        let print = self.print(&reference, &transcript)?;
        self.voices.insert(preset.to_owned(), print.clone());
        Ok(print)
    }

    /// [`Engine::synthesize`], also returning what each piece went through.
    pub fn synthesize_traced(
        &mut self,
        input: &SynthesisInput<'_>,
    ) -> Result<(Pcm, Trace), EngineError> {
        let text = input.text.trim();
        if text.is_empty() {
            return Err(EngineError::InvalidInput("the text is empty".into()));
        }
        readable(input.language).map_err(EngineError::InvalidInput)?;
        let print = match input.voice_print {
            Some(bytes) => LuxPrint::from_bytes(bytes).ok_or(EngineError::DamagedPrint)?,
            None => self.preset(input.preset)?,
        };
        if print.width != self.width || print.tokens.is_empty() || print.frames() == 0 {
            return Err(EngineError::InvalidInput(
                "the voice print does not fit this model: clone the voice again".into(),
            ));
        }
        let pinned = pronounce::pin(text);
        let mut tokenize = |texts: &[&str]| self.tokenize(texts, &pinned.phonemes);
        let pieces = pieces::some(split::split(&pinned.text, MAX_TOKENS, &mut tokenize)?)?;
        let mut rng = ChaCha8Rng::seed_from_u64(input.seed);
        let rate = self.sample_rate;
        let (pcm, pieces) = pieces::render(&pieces, input, rate, |_, piece| {
            let (noise, waveform) = self.speak(&print, &piece.tokens, &mut rng)?;
            Ok(PieceTrace {
                tokens: piece.tokens.clone(),
                noise,
                waveform,
            })
        })?;
        let trace = Trace {
            print: Some(print),
            pieces,
        };
        Ok((pcm, trace))
    }

    /// One piece: text encoder, the flow-matching steps from seeded noise, the vocoder.
    fn speak(
        &mut self,
        print: &LuxPrint,
        tokens: &[i64],
        rng: &mut ChaCha8Rng,
    ) -> Result<(Vec<f32>, Vec<f32>), EngineError> {
        let width = self.width;
        let prompt_frames = print.frames();
        let outputs = self
            .text_encoder
            .run(ort::inputs! {
                "tokens" => Tensor::from_array(([1, tokens.len()], tokens.to_vec())).map_err(inference)?,
                "prompt_tokens" => Tensor::from_array(([1, print.tokens.len()], print.tokens.clone())).map_err(inference)?,
                "prompt_features_len" => Tensor::from_array(((), vec![prompt_frames as i64])).map_err(inference)?,
                "speed" => Tensor::from_array(((), vec![SPEED])).map_err(inference)?,
            })
            .map_err(inference)?;
        let (shape, condition) = outputs
            .get("text_condition")
            .ok_or_else(|| inference("text_encoder has no output text_condition"))?
            .try_extract_tensor::<f32>()
            .map_err(inference)?;
        let frames = match shape[..] {
            [1, f, w] if w as usize == width => f as usize,
            _ => return Err(inference(format!("text_condition has shape {shape:?}"))),
        };
        let condition = condition.to_vec();
        drop(outputs);
        let noise: Vec<f32> = (0..frames * width)
            .map(|_| rng.sample::<f32, _>(StandardNormal))
            .collect();
        // The prompt's features, zero-padded (or cut, as torch's pad does) to the length.
        let mut speech = print.features.clone();
        speech.resize(frames * width, 0.0);
        let times: Vec<f32> = (0..=STEPS)
            .map(|k| {
                let t = k as f64 / STEPS as f64;
                (T_SHIFT * t / (1.0 + (T_SHIFT - 1.0) * t)) as f32
            })
            .collect();
        let mut x = noise.clone();
        for step in 0..STEPS {
            let (t, next) = (times[step], times[step + 1]);
            let outputs = self
                .fm_decoder
                .run(ort::inputs! {
                    "t" => Tensor::from_array(((), vec![t])).map_err(inference)?,
                    "x" => Tensor::from_array(([1, frames, width], x.clone())).map_err(inference)?,
                    "text_condition" => Tensor::from_array(([1, frames, width], condition.clone())).map_err(inference)?,
                    "speech_condition" => Tensor::from_array(([1, frames, width], speech.clone())).map_err(inference)?,
                    "guidance_scale" => Tensor::from_array(((), vec![GUIDANCE])).map_err(inference)?,
                })
                .map_err(inference)?;
            let (_, v) = outputs
                .get("v")
                .ok_or_else(|| inference("fm_decoder has no output v"))?
                .try_extract_tensor::<f32>()
                .map_err(inference)?;
            if v.len() != x.len() {
                return Err(inference(format!("fm_decoder returned {} values", v.len())));
            }
            for (xi, &vi) in x.iter_mut().zip(v) {
                let x1 = *xi + (1.0 - t) * vi;
                let x0 = *xi - t * vi;
                *xi = if step + 1 < STEPS {
                    (1.0 - next) * x0 + next * x1
                } else {
                    x1
                };
            }
        }
        let kept = frames.saturating_sub(prompt_frames);
        if kept == 0 {
            return Ok((noise, Vec::new()));
        }
        // [1, frames, width] without the prompt → the vocoder's mel [1, width, kept].
        let mut mel = vec![0f32; width * kept];
        for t in 0..kept {
            for c in 0..width {
                mel[c * kept + t] = x[(prompt_frames + t) * width + c] / FEATURE_SCALE;
            }
        }
        let outputs = self
            .vocoder
            .run(ort::inputs! {
                "mel" => Tensor::from_array(([1, width, kept], mel)).map_err(inference)?,
            })
            .map_err(inference)?;
        let (_, waveform) = outputs
            .get("waveform")
            .ok_or_else(|| inference("vocoder has no output waveform"))?
            .try_extract_tensor::<f32>()
            .map_err(inference)?;
        let gain = if print.rms < TARGET_RMS {
            print.rms / TARGET_RMS
        } else {
            1.0
        };
        let waveform = waveform.iter().map(|s| s.clamp(-1.0, 1.0) * gain).collect();
        Ok((noise, waveform))
    }
}

impl Engine for LuxEngine {
    fn synthesize(&mut self, input: &SynthesisInput<'_>) -> Result<Pcm, EngineError> {
        self.synthesize_traced(input).map(|(pcm, _)| pcm)
    }

    fn reference_rate(&self) -> Option<u32> {
        INFO.can_clone.then_some(REFERENCE_RATE)
    }

    fn voice_print(
        &mut self,
        reference: &[f32],
        transcript: Option<&str>,
        language: &str,
    ) -> Result<Vec<u8>, EngineError> {
        readable(language).map_err(EngineError::InvalidInput)?;
        let transcript = transcript
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                EngineError::InvalidInput(
                "the luxtts engine clones from reference audio with its transcript; none was given"
                    .into(),
            )
            })?;
        Ok(self.print(reference, transcript)?.to_bytes())
    }
}

/// `tokens.txt`: one `{token}\t{id}` per line; tokens are single characters (IPA symbols,
/// punctuation, space). Longer tokens (pinyin finals) are never produced for English.
fn read_tokens(path: &Path) -> Result<HashMap<char, i64>, EngineError> {
    let broken = |why: String| EngineError::NotInstalled(format!("{}: {why}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| broken(e.to_string()))?;
    let mut tokens = HashMap::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let (token, id) = line
            .rsplit_once('\t')
            .ok_or_else(|| broken(format!("bad line {line:?}")))?;
        let id: i64 = id
            .trim()
            .parse()
            .map_err(|_| broken(format!("bad id in {line:?}")))?;
        let mut chars = token.chars();
        if let (Some(c), None) = (chars.next(), chars.next()) {
            tokens.insert(c, id);
        }
    }
    if tokens.is_empty() {
        return Err(broken("no tokens".into()));
    }
    Ok(tokens)
}
