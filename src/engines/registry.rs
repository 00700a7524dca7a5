//! Which engines this deployment has, built from configuration. Every engine id of the spec is
//! known; those whose models are not installed are unavailable, and a generation on one fails
//! with a clear error instead of being refused as unknown.

use std::path::PathBuf;

use super::chatterbox::{self, ChatterboxConfig, ChatterboxEngine};
use super::chatterbox_shared::files as chatterbox_files;
use super::chatterbox_turbo::{self, ChatterboxTurboEngine, TurboConfig};
use super::kokoro::{self, KokoroConfig, KokoroEngine};
use super::luxtts::{self, LuxConfig, LuxEngine};
use super::qwen::{self, QwenEngine, QwenEngineConfig, Variant};
use super::{Engine, EngineError, Preset, onnx};
use crate::domain::EngineId;

/// Whether the wide Kokoro session's idle pool threads spin ([`EngineRegistry::load_wide`]).
const WIDE_SPINNING: bool = false;

/// Why tada voices are refused (no ONNX export exists; see docs/engines.md).
pub const TADA_UNAVAILABLE: &str = "the tada engine is not available on this deployment";

#[derive(Debug, Clone)]
pub struct EngineRegistry {
    models_dir: PathBuf,
    intra_threads: usize,
}

impl EngineRegistry {
    pub fn new(models_dir: PathBuf, intra_threads: usize) -> Self {
        Self {
            models_dir,
            intra_threads,
        }
    }

    fn kokoro_config(&self) -> KokoroConfig {
        KokoroConfig {
            intra_threads: self.intra_threads,
            ..KokoroConfig::from_models_dir(&self.models_dir)
        }
    }

    fn turbo_config(&self) -> TurboConfig {
        TurboConfig {
            intra_threads: self.intra_threads,
            ..TurboConfig::from_models_dir(&self.models_dir)
        }
    }

    fn qwen_config(&self, variant: Variant) -> QwenEngineConfig {
        QwenEngineConfig {
            intra_threads: self.intra_threads,
            ..QwenEngineConfig::from_models_dir(&self.models_dir, variant)
        }
    }

    fn lux_config(&self) -> LuxConfig {
        LuxConfig {
            intra_threads: self.intra_threads,
            ..LuxConfig::from_models_dir(&self.models_dir)
        }
    }

    fn chatterbox_config(&self) -> ChatterboxConfig {
        ChatterboxConfig {
            intra_threads: self.intra_threads,
            ..ChatterboxConfig::from_models_dir(&self.models_dir)
        }
    }

    /// Whether `engine` can exist on any deployment: tada has no ONNX export (docs/engines.md),
    /// so its voices are refused at request time rather than failing later.
    pub fn is_available(engine: EngineId) -> bool {
        engine.info().available
    }

    /// Whether generations on `engine` can run here (its models are in place). Runs on
    /// requests (`GET /v1/voices/presets`): an engine whose folder is absent costs one `stat`,
    /// not one per expected file and precision variant.
    pub fn is_installed(&self, engine: EngineId) -> bool {
        // Every engine's folder is named by its id.
        let dir = self.models_dir.join(engine.as_str());
        let runtime = || onnx::library_path(&self.models_dir).is_file();
        let placed =
            |problems: &dyn Fn() -> Vec<String>| dir.is_dir() && runtime() && problems().is_empty();
        match engine {
            EngineId::ChatterboxTurbo | EngineId::Chatterbox => {
                placed(&|| chatterbox_files::problems(&dir, engine.as_str()))
            }
            EngineId::Qwen | EngineId::QwenCustomVoice => {
                placed(&|| qwen::files::problems(&dir, qwen_variant(engine)))
            }
            EngineId::Luxtts => placed(&|| luxtts::files::problems(&dir)),
            EngineId::Kokoro => {
                runtime()
                    && [
                        kokoro::files::SEEDED_MODEL,
                        kokoro::files::VOCAB,
                        kokoro::files::VOICES_JA,
                    ]
                    .iter()
                    .all(|file| dir.join(file).is_file())
            }
            EngineId::Tada => false,
        }
    }

    /// Whether `engine` can pronounce `text` in `language` at all (checked before queueing):
    /// `Err` carries the message for the client. Engines that are not installed accept anything
    /// here; their generations fail.
    pub fn readable(&self, engine: EngineId, language: &str, text: &str) -> Result<(), String> {
        match engine {
            EngineId::Kokoro => kokoro::readable::check(language, text),
            EngineId::Luxtts => luxtts::readable(language),
            EngineId::Chatterbox => {
                chatterbox::readable(&self.chatterbox_config().dir, language, text)
            }
            _ => Ok(()),
        }
    }

    /// Estimated audio of `text` spoken by a voice of `engine` (its `language` and `preset`), in
    /// milliseconds: what admission reserves against the allowance and the key's ceiling until
    /// the generation's measured duration replaces it, and what bounds one request
    /// (`max_audio_per_request_secs`). It is computed from what the engine will read, not from
    /// the raw input: kokoro's text normalised and phonemized as for synthesis, counted in
    /// phonemes ([`kokoro::estimate`]); the other engines' text normalised ([`normalized_chars_ms`]).
    /// Runs espeak-ng for kokoro: call it off the async workers.
    pub fn estimated_audio_ms(
        &self,
        engine: EngineId,
        language: &str,
        preset: &str,
        text: &str,
    ) -> i64 {
        if engine == EngineId::Kokoro {
            match kokoro::estimate::reading(text, preset, language) {
                Ok(reading) => return kokoro::estimate::estimated_ms(reading),
                // espeak-ng missing or failing: the generation will fail too; reserve by the
                // characters meanwhile.
                Err(err) => tracing::warn!(error = %err, "kokoro estimate by phonemes failed"),
            }
        }
        normalized_chars_ms(language, &super::text::pronounce::words_only(text))
    }

    /// Loads an engine instance (one per engine thread).
    pub fn load(&self, engine: EngineId) -> Result<Box<dyn Engine>, EngineError> {
        #[cfg(feature = "bench-engine")]
        if super::instant::enabled() {
            return Ok(Box::new(super::instant::InstantEngine));
        }
        #[cfg(debug_assertions)]
        if let Some(marker) = test_panic_marker() {
            return Ok(Box::new(PanicOnMarker {
                inner: self.load_real(engine)?,
                marker,
            }));
        }
        self.load_real(engine)
    }

    /// Loads the process's wide instance of `engine`: one with every core as intra-op threads,
    /// which an engine thread uses for a run that starts with no other run in progress
    /// ([`super::cores`]). `None` when the engine has none: only Kokoro has one (a second
    /// session of about 260 MiB; the larger models would double far more memory), and only
    /// when the machine has more cores than a session's own threads.
    pub fn load_wide(&self, engine: EngineId) -> Option<Result<Box<dyn Engine>, EngineError>> {
        let threads = super::cores::wide_threads(self.intra_threads)?;
        let config = KokoroConfig {
            intra_threads: threads,
            // Its pool threads sleep when idle instead of spinning: a run that starts beside
            // it gets the core at once.
            spinning: WIDE_SPINNING,
            ..self.kokoro_config()
        };
        let load = || -> Result<Box<dyn Engine>, EngineError> {
            let wide: Box<dyn Engine> = Box::new(KokoroEngine::load(&config)?);
            #[cfg(debug_assertions)]
            if let Some(marker) = test_panic_marker() {
                return Ok(Box::new(PanicOnMarker {
                    inner: wide,
                    marker,
                }));
            }
            Ok(wide)
        };
        (engine == EngineId::Kokoro).then(load)
    }

    fn load_real(&self, engine: EngineId) -> Result<Box<dyn Engine>, EngineError> {
        match engine {
            EngineId::Kokoro => Ok(Box::new(KokoroEngine::load(&self.kokoro_config())?)),
            EngineId::ChatterboxTurbo => {
                Ok(Box::new(ChatterboxTurboEngine::load(&self.turbo_config())?))
            }
            EngineId::Qwen | EngineId::QwenCustomVoice => Ok(Box::new(QwenEngine::load(
                &self.qwen_config(qwen_variant(engine)),
            )?)),
            EngineId::Luxtts => Ok(Box::new(LuxEngine::load(&self.lux_config())?)),
            EngineId::Chatterbox => {
                Ok(Box::new(ChatterboxEngine::load(&self.chatterbox_config())?))
            }
            EngineId::Tada => Err(EngineError::NotInstalled(TADA_UNAVAILABLE.into())),
        }
    }

    /// Presets of each installed engine, without loading a model, in [`LISTED`] order.
    pub fn presets(&self) -> Vec<(EngineId, Vec<Preset>)> {
        LISTED
            .into_iter()
            .filter(|engine| self.is_installed(*engine))
            .filter_map(|engine| Some((engine, self.presets_of(engine)?)))
            .collect()
    }

    fn presets_of(&self, engine: EngineId) -> Option<Vec<Preset>> {
        let dir = self.models_dir.join(engine.as_str());
        Some(match engine {
            EngineId::Kokoro => kokoro::presets(&dir).ok()?,
            EngineId::ChatterboxTurbo => chatterbox_turbo::presets(&dir),
            EngineId::Qwen | EngineId::QwenCustomVoice => qwen::presets(&dir, qwen_variant(engine)),
            EngineId::Luxtts => luxtts::presets(&dir),
            EngineId::Chatterbox => chatterbox::presets(&dir),
            EngineId::Tada => return None,
        })
    }
}

/// The order [`EngineRegistry::presets`] lists the engines in (what `GET /v1/voices/presets`
/// and `voiced admin voice presets` show).
const LISTED: [EngineId; 6] = [
    EngineId::Kokoro,
    EngineId::ChatterboxTurbo,
    EngineId::Qwen,
    EngineId::QwenCustomVoice,
    EngineId::Luxtts,
    EngineId::Chatterbox,
];

/// Fixed milliseconds and milliseconds per character of [`normalized_chars_ms`].
pub const CHARS_ESTIMATE: (i64, i64) = (600, 74);

/// The estimate of the engines without a phoneme count (qwen, qwen_custom_voice, luxtts,
/// chatterbox, chatterbox_turbo): 600 ms + 74 ms per character of the text as it is read, English
/// written out by kokoro's normaliser (numbers, dates, currency, ordinals, abbreviations), so that
/// "1984" counts as "nineteen eighty-four". The rate is Kokoro's for plain English (those engines'
/// weights are not on the machine that calibrated it); ideographs and kana count three
/// characters each (a syllable, about as long as three Latin letters).
pub fn normalized_chars_ms(language: &str, text: &str) -> i64 {
    let english = language
        .get(..2)
        .is_some_and(|p| p.eq_ignore_ascii_case("en"));
    let normalized;
    let text = if english {
        normalized = super::text::normalize::english(text.trim());
        normalized.as_str()
    } else {
        text.trim()
    };
    let chars: i64 = text
        .chars()
        .map(|c| {
            if matches!(c, '\u{3040}'..='\u{30FF}' | '\u{3400}'..='\u{9FFF}' | '\u{AC00}'..='\u{D7AF}') {
                3
            } else {
                1
            }
        })
        .sum();
    CHARS_ESTIMATE.0 + CHARS_ESTIMATE.1 * chars
}

fn qwen_variant(engine: EngineId) -> Variant {
    if engine == EngineId::QwenCustomVoice {
        Variant::CustomVoice
    } else {
        Variant::Base
    }
}

/// Test-only (debug builds): with `VOICED_TEST_ENGINE_PANIC_MARKER` set, every engine panics on
/// a text containing the marker (engines that render segments: on its last segment), so that
/// tests can prove a panicking engine thread fails only its own job and is replaced, and that a
/// stream broken after its first bytes ends as an error. Release builds do not contain this.
#[cfg(debug_assertions)]
fn test_panic_marker() -> Option<String> {
    std::env::var("VOICED_TEST_ENGINE_PANIC_MARKER")
        .ok()
        .filter(|m| !m.is_empty())
}

#[cfg(debug_assertions)]
struct PanicOnMarker {
    inner: Box<dyn Engine>,
    marker: String,
}

#[cfg(debug_assertions)]
impl Engine for PanicOnMarker {
    fn synthesize(&mut self, input: &super::SynthesisInput<'_>) -> Result<super::Pcm, EngineError> {
        assert!(
            !input.text.contains(&self.marker),
            "test engine panics on its marker text"
        );
        self.inner.synthesize(input)
    }

    fn reference_rate(&self) -> Option<u32> {
        self.inner.reference_rate()
    }

    fn voice_print(
        &mut self,
        reference: &[f32],
        transcript: Option<&str>,
        language: &str,
    ) -> Result<Vec<u8>, EngineError> {
        self.inner.voice_print(reference, transcript, language)
    }

    fn segments(
        &mut self,
        input: &super::SynthesisInput<'_>,
    ) -> Option<Result<Vec<super::Segment>, EngineError>> {
        self.inner.segments(input)
    }

    fn render_segment(
        &mut self,
        input: &super::SynthesisInput<'_>,
        segment: &super::Segment,
        index: usize,
    ) -> Result<super::Pcm, EngineError> {
        // On the last segment only (the one without a pause after it), so that the segments
        // before it stream out first.
        assert!(
            !(input.text.contains(&self.marker) && segment.pause_secs == 0.0),
            "test engine panics on its marker text"
        );
        self.inner.render_segment(input, segment, index)
    }
}
