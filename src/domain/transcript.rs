//! A transcript's timings and the options of a transcription: what the recogniser returns when
//! asked for timestamps, what a capture stores, and the captions (SRT, WebVTT) made from it.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

/// Which timings a transcription returns (and its capture keeps).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timestamps {
    /// Text only.
    #[default]
    None,
    /// Segments with start and end times (Whisper's timestamp tokens).
    Segment,
    /// Segments, and each word's start and end (cross-attention alignment; costs time).
    Word,
}

impl Timestamps {
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "segment" => Some(Self::Segment),
            "word" => Some(Self::Word),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Segment => "segment",
            Self::Word => "word",
        }
    }

    pub fn words(self) -> bool {
        self == Self::Word
    }
}

/// What the recogniser is asked to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Task {
    /// Text in the language spoken.
    #[default]
    Transcribe,
    /// English text, whatever the language spoken (Whisper's translate task).
    Translate,
}

impl Task {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Transcribe => "transcribe",
            Self::Translate => "translate",
        }
    }
}

/// Whisper's language codes (ISO 639-1, and the three codes Whisper uses beyond it).
pub const LANGUAGES: [&str; 100] = [
    "en", "zh", "de", "es", "ru", "ko", "fr", "ja", "pt", "tr", "pl", "ca", "nl", "ar", "sv", "it",
    "id", "hi", "fi", "vi", "he", "uk", "el", "ms", "cs", "ro", "da", "hu", "ta", "no", "th", "ur",
    "hr", "bg", "lt", "la", "mi", "ml", "cy", "sk", "te", "fa", "lv", "bn", "sr", "az", "sl", "kn",
    "et", "mk", "br", "eu", "is", "hy", "ne", "mn", "bs", "kk", "sq", "sw", "gl", "mr", "pa", "si",
    "km", "sn", "yo", "so", "af", "oc", "ka", "be", "tg", "sd", "gu", "am", "yi", "lo", "uz", "fo",
    "ht", "ps", "tk", "nn", "mt", "sa", "lb", "my", "bo", "tl", "mg", "as", "tt", "haw", "ln",
    "ha", "ba", "jw", "su", "yue",
];

/// Longest initial prompt accepted, in characters (Whisper keeps the last 223 tokens of it).
pub const MAX_PROMPT_CHARS: usize = 2000;

/// How to recognise one clip. Built valid by [`RecognitionOptions::new`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecognitionOptions {
    /// Forced language (one of [`LANGUAGES`]); detected when `None`.
    pub language: Option<String>,
    pub task: Task,
    /// Text the decoder is primed with (spelling of names, style), first window only.
    pub prompt: Option<String>,
    /// The first sampling temperature (0 to 1); the decoder falls back to higher ones when
    /// the text is repetitive or improbable.
    pub temperature: f32,
    pub timestamps: Timestamps,
}

/// Which option was refused, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError {
    pub param: &'static str,
    pub message: String,
}

impl RecognitionOptions {
    pub fn new(
        language: Option<&str>,
        task: Task,
        prompt: Option<&str>,
        temperature: Option<f64>,
        timestamps: Timestamps,
    ) -> Result<Self, OptionError> {
        let refuse = |param, message: String| OptionError { param, message };
        let language = match language {
            None => None,
            Some(code) if LANGUAGES.contains(&code) => Some(code.to_owned()),
            Some(code) => {
                return Err(refuse(
                    "language",
                    format!(
                        "language {code:?} is not a language the recogniser knows: use an ISO \
                         639-1 code in lower case, e.g. en, de, fr"
                    ),
                ));
            }
        };
        let prompt = match prompt.map(str::trim) {
            None | Some("") => None,
            Some(p) if p.chars().count() > MAX_PROMPT_CHARS => {
                return Err(refuse(
                    "prompt",
                    format!("prompt is longer than {MAX_PROMPT_CHARS} characters"),
                ));
            }
            Some(p) if p.contains('\0') => {
                return Err(refuse(
                    "prompt",
                    "prompt must not contain a NUL character".into(),
                ));
            }
            Some(p) => Some(p.to_owned()),
        };
        let temperature = match temperature {
            None => 0.0,
            Some(t) if (0.0..=1.0).contains(&t) => t as f32,
            Some(_) => {
                return Err(refuse(
                    "temperature",
                    "temperature must be a number from 0 to 1".into(),
                ));
            }
        };
        Ok(Self {
            language,
            task,
            prompt,
            temperature,
            timestamps,
        })
    }
}

/// One stretch of speech between two of Whisper's timestamp tokens. Times are seconds from the
/// start of the clip, rounded to 10 ms.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    pub id: u32,
    /// Frame (10 ms) at which the window that decoded it starts.
    pub seek: u32,
    pub start: f64,
    pub end: f64,
    pub text: String,
    pub tokens: Vec<u32>,
    pub temperature: f32,
    pub avg_logprob: f32,
    pub compression_ratio: f32,
    pub no_speech_prob: f32,
}

/// One word, its leading space and attached punctuation included (as Whisper writes it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Word {
    pub word: String,
    pub start: f64,
    pub end: f64,
    pub probability: f32,
}

/// A caption file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptionFormat {
    Srt,
    Vtt,
}

impl CaptionFormat {
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "srt" => Some(Self::Srt),
            "vtt" => Some(Self::Vtt),
            _ => None,
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Srt => "application/x-subrip; charset=utf-8",
            Self::Vtt => "text/vtt; charset=utf-8",
        }
    }
}

/// Captions from segments: one cue a segment with text, in order.
pub fn captions(segments: &[Segment], format: CaptionFormat) -> String {
    let mut out = String::new();
    if format == CaptionFormat::Vtt {
        out.push_str("WEBVTT\n\n");
    }
    let cues = segments.iter().filter(|s| !s.text.trim().is_empty());
    for (n, segment) in cues.enumerate() {
        let end = segment.end.max(segment.start);
        let (from, to) = match format {
            CaptionFormat::Srt => (clock(segment.start, ','), clock(end, ',')),
            CaptionFormat::Vtt => (clock(segment.start, '.'), clock(end, '.')),
        };
        if format == CaptionFormat::Srt {
            let _ = writeln!(out, "{}", n + 1);
        }
        // A cue's text never holds an empty line (it would end the cue) nor "-->".
        let text = segment
            .text
            .split('\n')
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join("\n")
            .replace("-->", "->");
        let _ = write!(out, "{from} --> {to}\n{text}\n\n");
    }
    out
}

/// `HH:MM:SS,mmm` (SRT) or `HH:MM:SS.mmm` (WebVTT).
fn clock(seconds: f64, separator: char) -> String {
    let ms = (seconds.max(0.0) * 1000.0).round() as u64;
    let (h, m, s, ms) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    format!("{h:02}:{m:02}:{s:02}{separator}{ms:03}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(start: f64, end: f64, text: &str) -> Segment {
        Segment {
            id: 0,
            seek: 0,
            start,
            end,
            text: text.into(),
            tokens: vec![],
            temperature: 0.0,
            avg_logprob: 0.0,
            compression_ratio: 0.0,
            no_speech_prob: 0.0,
        }
    }

    #[test]
    fn srt_and_vtt_cues() {
        let segments = [
            segment(0.0, 2.5, " Ever tried."),
            segment(2.5, 2.5, "  "),
            segment(3661.04, 3662.0, " Fail better. --> on"),
        ];
        assert_eq!(
            captions(&segments, CaptionFormat::Srt),
            "1\n00:00:00,000 --> 00:00:02,500\nEver tried.\n\n\
             2\n01:01:01,040 --> 01:01:02,000\nFail better. -> on\n\n"
        );
        assert_eq!(
            captions(&segments, CaptionFormat::Vtt),
            "WEBVTT\n\n00:00:00.000 --> 00:00:02.500\nEver tried.\n\n\
             01:01:01.040 --> 01:01:02.000\nFail better. -> on\n\n"
        );
    }

    #[test]
    fn options_are_checked() {
        let ok = RecognitionOptions::new(
            Some("de"),
            Task::Translate,
            Some(" Names: Beckett "),
            Some(0.2),
            Timestamps::Word,
        )
        .unwrap();
        assert_eq!(ok.prompt.as_deref(), Some("Names: Beckett"));
        let param = |r: Result<RecognitionOptions, OptionError>| r.unwrap_err().param;
        let none = Timestamps::None;
        let t = Task::Transcribe;
        assert_eq!(
            param(RecognitionOptions::new(Some("EN"), t, None, None, none)),
            "language"
        );
        assert_eq!(
            param(RecognitionOptions::new(None, t, None, Some(1.5), none)),
            "temperature"
        );
        let long = "a".repeat(MAX_PROMPT_CHARS + 1);
        assert_eq!(
            param(RecognitionOptions::new(None, t, Some(&long), None, none)),
            "prompt"
        );
    }
}
