//! The recogniser: features for the whole clip, language detection on the first window, and
//! a seek loop over 30 s windows (faster-whisper's `generate_segments` without VAD, word
//! timestamps or conditioning on the previous window's text).
//!
//! The loop decodes with timestamp tokens and cuts each window after its last complete
//! segment, so a word that straddles a window's end is decoded again, whole, in the next
//! window rather than split in two.

use ct2rs::sys::{self, Config, Device, StorageView, Whisper};

use super::decode::{self, Decoded};
use super::mel::{HOP, MelExtractor, SAMPLE_RATE, WINDOW_FRAMES};
use super::prompt::Vocabulary;
use super::{AsrError, ComputeType, Transcript, WhisperConfig};

/// A window whose samples all stay below this amplitude (-60 dBFS) holds no speech; it is not
/// decoded, since Whisper hallucinates text ("You") on near-digital silence.
const SILENCE_PEAK: f32 = 1e-3;

/// A loaded Whisper model. `Send + Sync`: CTranslate2 serialises calls on its replica.
pub struct Recognizer {
    model: Whisper,
    vocab: Vocabulary,
    mel: MelExtractor,
}

impl Recognizer {
    pub fn load(config: &WhisperConfig) -> Result<Self, AsrError> {
        let load_error = |message: String| AsrError::Load {
            dir: config.model_dir.clone(),
            message,
        };
        let ct2_config = Config {
            device: Device::CPU,
            compute_type: match config.compute_type {
                ComputeType::Int8 => sys::ComputeType::INT8,
                ComputeType::Float32 => sys::ComputeType::FLOAT32,
            },
            num_threads_per_replica: config.threads,
            ..Config::default()
        };
        let model =
            Whisper::new(&config.model_dir, ct2_config).map_err(|e| load_error(e.to_string()))?;
        let vocab = Vocabulary::load(&config.model_dir)?;
        let mel = MelExtractor::new(model.n_mels());
        Ok(Self { model, vocab, mel })
    }

    /// Runs one short transcription: the first call in a process is up to 3× slower.
    pub fn warm_up(&self) -> Result<(), AsrError> {
        self.transcribe(&vec![0.0; SAMPLE_RATE]).map(drop)
    }

    pub fn is_multilingual(&self) -> bool {
        self.model.is_multilingual()
    }

    /// Transcribes mono 16 kHz samples in [-1, 1], detecting the language.
    pub fn transcribe(&self, samples_16k: &[f32]) -> Result<Transcript, AsrError> {
        self.transcribe_in(samples_16k, None)
    }

    /// As [`Self::transcribe`], with the language (ISO 639-1) forced when `language` is given.
    pub fn transcribe_in(
        &self,
        samples_16k: &[f32],
        language: Option<&str>,
    ) -> Result<Transcript, AsrError> {
        let features = self.mel.compute(samples_16k);
        // The last frame only covers the trailing padding.
        let content_frames = features.frames.saturating_sub(1);

        let mut seek = 0;
        let first_len = content_frames.min(WINDOW_FRAMES);
        let mut encoded = Some(self.encode(features.window(0, first_len))?);
        let (language, language_probability) = match (self.is_multilingual(), language) {
            (false, _) => ("en".to_owned(), 1.0),
            (true, Some(code)) => (code.to_owned(), 1.0),
            (true, None) => self.detect_language(encoded.as_ref().expect("first window"))?,
        };
        let prompt = self
            .vocab
            .prompt(self.is_multilingual().then_some(language.as_str()));

        let mut text = String::new();
        while seek < content_frames {
            let len = (content_frames - seek).min(WINDOW_FRAMES);
            let audio = samples_16k
                .get(seek * HOP..((seek + len) * HOP).min(samples_16k.len()))
                .unwrap_or_default();
            if audio.iter().all(|s| s.abs() < SILENCE_PEAK) {
                encoded = None;
                seek += len;
                continue;
            }
            let window = match encoded.take() {
                Some(first) => first,
                None => self.encode(features.window(seek, len))?,
            };
            let decoded =
                decode::generate_with_fallback(&self.model, &window, &prompt, &self.vocab)?;
            seek += self.append_window(&decoded, len, &mut text)?;
        }
        Ok(Transcript {
            text: text.trim().to_owned(),
            language,
            language_probability,
        })
    }

    /// Appends the window's text; returns how many frames the seek advances.
    fn append_window(
        &self,
        decoded: &Decoded,
        len: usize,
        text: &mut String,
    ) -> Result<usize, AsrError> {
        if decoded.is_no_speech(self.vocab.end_of_text) {
            return Ok(len);
        }
        let cut = decode::cut_at_timestamps(&decoded.ids, self.vocab.timestamp_begin, len);
        let window_text = self.vocab.decode(&decoded.ids[..cut.keep])?;
        // Punctuation alone (". . ." on hiss with tiny.en) is not speech.
        if window_text.chars().any(char::is_alphanumeric) {
            text.push_str(&window_text);
        }
        // A cut at 0.00 s would never move on.
        Ok(if cut.advance == 0 {
            len
        } else {
            cut.advance.min(len)
        })
    }

    fn encode(&self, mut window: Vec<f32>) -> Result<StorageView<'static>, AsrError> {
        let n_mels = window.len() / WINDOW_FRAMES;
        let view = StorageView::new(&[1, n_mels, WINDOW_FRAMES], &mut window, Device::CPU)
            .map_err(|e| AsrError::Inference(e.to_string()))?;
        self.model
            .encode(&view, false)
            .map_err(|e| AsrError::Inference(format!("encoder: {e}")))
    }

    fn detect_language(&self, encoded: &StorageView) -> Result<(String, f32), AsrError> {
        let best = self
            .model
            .detect_language(encoded)
            .map_err(|e| AsrError::Inference(format!("language detection: {e}")))?
            .into_iter()
            .next()
            .and_then(|candidates| candidates.into_iter().next())
            .ok_or_else(|| AsrError::Inference("language detection gave no result".into()))?;
        let code = best
            .language
            .trim_start_matches("<|")
            .trim_end_matches("|>")
            .to_owned();
        Ok((code, best.probability))
    }
}
