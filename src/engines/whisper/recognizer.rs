//! The recogniser: features for the whole clip, language detection on the first window, and
//! a seek loop over 30 s windows (faster-whisper's `generate_segments` without VAD or
//! conditioning on the previous window's text). Each window gives segments (between Whisper's
//! timestamp tokens) and, when asked, words (`words`: alignment by cross-attention).
//!
//! The loop decodes with timestamp tokens and cuts each window after its last complete
//! segment, so a word that straddles a window's end is decoded again, whole, in the next
//! window rather than split in two.

use ct2rs::sys::{self, Config, Device, StorageView, Whisper};

use super::decode::{self, Decoded};
use super::mel::{HOP, MelExtractor, SAMPLE_RATE, WINDOW_FRAMES};
use super::prompt::Vocabulary;
use super::words;
use super::{AsrError, ComputeType, Transcript, WhisperConfig};
use crate::domain::{RecognitionOptions, Segment, Task, Word};

/// What the seek loop has recognised so far.
struct Recognized {
    text: String,
    segments: Vec<Segment>,
    words: Vec<Word>,
    /// End of the last word aligned (faster-whisper's `last_speech_timestamp`).
    last_speech: f64,
}

/// The window being appended: its encoder output and where it lies.
struct Place<'a> {
    window: &'a StorageView<'a>,
    start_ids: &'a [usize],
    seek: usize,
    len: usize,
    language: &'a str,
    words: bool,
}

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
        let options = RecognitionOptions {
            language: language.map(str::to_owned),
            ..RecognitionOptions::default()
        };
        self.recognize(samples_16k, &options, &mut |_, _| {})
    }

    /// Recognises mono 16 kHz samples as `options` say, handing each segment to `on_segment`
    /// as soon as its window is decoded (and its words aligned). Segments are always returned;
    /// words only when `options.timestamps` asks for them (the alignment pass costs time).
    pub fn recognize(
        &self,
        samples_16k: &[f32],
        options: &RecognitionOptions,
        on_segment: &mut dyn FnMut(&Segment, &[Word]),
    ) -> Result<Transcript, AsrError> {
        self.recognize_until(samples_16k, options, on_segment, &|| false)
    }

    /// [`Self::recognize`], asking `stop` before each window after the first: when it answers
    /// true (the caller went away), recognition ends there with [`AsrError::Stopped`], so that
    /// nobody's 15-minute clip keeps a thread busy for nothing.
    pub fn recognize_until(
        &self,
        samples_16k: &[f32],
        options: &RecognitionOptions,
        on_segment: &mut dyn FnMut(&Segment, &[Word]),
        stop: &dyn Fn() -> bool,
    ) -> Result<Transcript, AsrError> {
        self.check(options)?;
        let features = self.mel.compute(samples_16k);
        // The last frame only covers the trailing padding.
        let content_frames = features.frames.saturating_sub(1);

        let mut seek = 0;
        let first_len = content_frames.min(WINDOW_FRAMES);
        let mut encoded = Some(self.encode(features.window(0, first_len))?);
        let (language, language_probability) =
            match (self.is_multilingual(), options.language.as_deref()) {
                (false, _) => ("en".to_owned(), 1.0),
                (true, Some(code)) => (code.to_owned(), 1.0),
                (true, None) => self.detect_language(encoded.as_ref().expect("first window"))?,
            };
        let translate = options.task == Task::Translate;
        let start_sequence = self.vocab.prompt(
            self.is_multilingual().then_some(language.as_str()),
            translate,
        );
        let start_ids = self.vocab.ids(&start_sequence)?;
        let mut first_prompt = match &options.prompt {
            Some(text) => {
                let mut prompt = self.vocab.previous_text(text)?;
                prompt.extend(start_sequence.iter().cloned());
                Some(prompt)
            }
            None => None,
        };

        let mut out = Recognized {
            text: String::new(),
            segments: Vec::new(),
            words: Vec::new(),
            last_speech: 0.0,
        };
        while seek < content_frames {
            if seek > 0 && stop() {
                return Err(AsrError::Stopped);
            }
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
            let prompt = first_prompt
                .take()
                .unwrap_or_else(|| start_sequence.clone());
            let decoded = decode::generate_with_fallback(
                &self.model,
                &window,
                &prompt,
                &self.vocab,
                options.temperature,
            )?;
            let place = Place {
                window: &window,
                start_ids: &start_ids,
                seek,
                len,
                language: &language,
                words: options.timestamps.words(),
            };
            seek += self.append_window(&decoded, &place, &mut out, on_segment)?;
        }
        Ok(Transcript {
            text: out.text.trim().to_owned(),
            language,
            language_probability,
            duration: samples_16k.len() as f64 / SAMPLE_RATE as f64,
            segments: out.segments,
            words: out.words,
        })
    }

    /// Refuses what this model cannot do: an English-only model neither translates nor
    /// recognises another language.
    fn check(&self, options: &RecognitionOptions) -> Result<(), AsrError> {
        if self.is_multilingual() {
            if let Some(code) = options.language.as_deref()
                && !self.vocab.knows_language(code)
            {
                return Err(AsrError::Refused {
                    param: "language",
                    message: format!("this recogniser does not know the language {code:?}"),
                });
            }
            return Ok(());
        }
        if options.task == Task::Translate {
            return Err(AsrError::Refused {
                param: "model",
                message: "the recogniser is English-only: it cannot translate; use a \
                          multilingual model such as whisper-base"
                    .into(),
            });
        }
        match options.language.as_deref() {
            Some(code) if code != "en" => Err(AsrError::Refused {
                param: "language",
                message: format!(
                    "the recogniser is English-only: language {code:?} cannot be recognised"
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Appends the window's segments (and words); returns how many frames the seek advances.
    fn append_window(
        &self,
        decoded: &Decoded,
        place: &Place<'_>,
        out: &mut Recognized,
        on_segment: &mut dyn FnMut(&Segment, &[Word]),
    ) -> Result<usize, AsrError> {
        let len = place.len;
        if decoded.is_no_speech(self.vocab.end_of_text) {
            return Ok(len);
        }
        let cut = decode::cut_at_timestamps(&decoded.ids, self.vocab.timestamp_begin, len);
        let kept = &decoded.ids[..cut.keep];
        let window_text = self.vocab.decode(kept)?;
        // Punctuation alone (". . ." on hiss with tiny.en) is not speech.
        if window_text.chars().any(char::is_alphanumeric) {
            let offset = place.seek as f64 * HOP as f64 / SAMPLE_RATE as f64;
            let round = |x: f64| (x * 100.0).round() / 100.0;
            let mut segments = Vec::new();
            let mut segment_tokens = Vec::new();
            for span in decode::spans(&decoded.ids, self.vocab.timestamp_begin, len) {
                let ids = &decoded.ids[span.tokens];
                let text_ids: Vec<usize> = ids
                    .iter()
                    .copied()
                    .filter(|&id| id < self.vocab.end_of_text)
                    .collect();
                segments.push(Segment {
                    id: 0,
                    seek: u32::try_from(place.seek).unwrap_or(u32::MAX),
                    start: round(offset + span.start),
                    end: round(offset + span.end),
                    text: self.vocab.decode(&text_ids)?,
                    tokens: ids.iter().map(|&id| id as u32).collect(),
                    temperature: decoded.temperature,
                    avg_logprob: decoded.avg_logprob,
                    compression_ratio: decoded.compression_ratio,
                    no_speech_prob: decoded.no_speech_prob,
                });
                segment_tokens.push(text_ids);
            }
            let words = if place.words {
                let window = words::Window {
                    encoded: place.window,
                    start_sequence: place.start_ids,
                    segment_tokens: &segment_tokens,
                    num_frames: len,
                    offset,
                    language: place.language,
                };
                let (words, last) = words::add_word_timestamps(
                    &self.model,
                    &self.vocab,
                    &window,
                    &mut segments,
                    out.last_speech,
                )?;
                out.last_speech = last;
                words
            } else {
                vec![Vec::new(); segments.len()]
            };
            for (mut segment, words) in segments.into_iter().zip(words) {
                segment.id = u32::try_from(out.segments.len()).unwrap_or(u32::MAX);
                // A window starts where the last one was cut, which can be inside the last
                // segment's aligned end: a segment never starts before the one before it ends
                // (captions would overlap).
                if let Some(previous) = out.segments.last()
                    && segment.start < previous.end
                {
                    segment.start = previous.end.min(segment.end);
                }
                out.text.push_str(&segment.text);
                on_segment(&segment, &words);
                out.segments.push(segment);
                out.words.extend(words);
            }
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
