//! Decoding one 30 s window, as faster-whisper's `generate_with_fallback` and
//! `_split_segments_by_timestamps` do: beam search at temperature 0, falling back to sampling
//! at rising temperatures when the text is repetitive or improbable, and cutting the window
//! after its last complete timestamped segment.

use std::io::Write;

use ct2rs::sys::{StorageView, Whisper, WhisperOptions};

use super::AsrError;
use super::prompt::Vocabulary;

const TEMPERATURES: [f32; 6] = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0];
const BEAM_SIZE: usize = 5;
const BEST_OF: usize = 5;
/// Above this gzip compression ratio the text is a repetition loop.
const COMPRESSION_RATIO_THRESHOLD: f32 = 2.4;
/// Below this average token log-probability the text is unreliable.
pub const LOG_PROB_THRESHOLD: f32 = -1.0;
/// Above this probability of `<|nospeech|>` (with a low log-probability) the window is silence.
pub const NO_SPEECH_THRESHOLD: f32 = 0.6;
/// At most this many text tokens in a window that is probably silence is taken for one of
/// Whisper's stock hallucinations ("You", "Thank you.") rather than speech.
const SHORT_TEXT_TOKENS: usize = 4;
/// A timestamp token advances by 0.02 s, two mel frames.
const FRAMES_PER_TIMESTAMP: usize = 2;

/// The chosen decoding of one window.
pub struct Decoded {
    pub ids: Vec<usize>,
    pub avg_logprob: f32,
    pub no_speech_prob: f32,
    /// The sampling temperature that gave this decoding (0: beam search).
    pub temperature: f32,
    pub compression_ratio: f32,
}

impl Decoded {
    /// faster-whisper's rule: likely `<|nospeech|>` and not a confident text. Such a window
    /// needs no temperature fallback.
    fn is_silence(&self) -> bool {
        self.no_speech_prob > NO_SPEECH_THRESHOLD && self.avg_logprob <= LOG_PROB_THRESHOLD
    }

    /// Whether to drop the window's text: faster-whisper's rule, and also a short text in a
    /// window that is probably silent (faster-whisper itself answers "You" to 5 s of silence
    /// with base: no_speech_prob 0.7, avg_logprob -0.8).
    pub fn is_no_speech(&self, end_of_text: usize) -> bool {
        let text_tokens = self.ids.iter().filter(|&&id| id < end_of_text).count();
        self.is_silence()
            || (self.no_speech_prob > NO_SPEECH_THRESHOLD && text_tokens <= SHORT_TEXT_TOKENS)
    }
}

/// The temperatures tried in turn when the first is `first`: `first`, then the higher ones of
/// the standard ladder (OpenAI's `temperature`: 0 is the whole ladder).
fn temperatures(first: f32) -> Vec<f32> {
    let mut ladder = vec![first];
    ladder.extend(TEMPERATURES.iter().copied().filter(|&t| t > first + 1e-6));
    ladder
}

pub fn generate_with_fallback(
    model: &Whisper,
    encoded: &StorageView,
    prompt: &[String],
    vocab: &Vocabulary,
    first_temperature: f32,
) -> Result<Decoded, AsrError> {
    let mut tried: Vec<(Decoded, f32)> = Vec::new();
    for temperature in temperatures(first_temperature) {
        let options = options(temperature);
        let result = model
            .generate(encoded, &[prompt.to_vec()], &options)
            .map_err(|e| AsrError::Inference(e.to_string()))?
            .into_iter()
            .next()
            .ok_or_else(|| AsrError::Inference("generate returned no result".into()))?;
        let ids = result.sequences_ids.into_iter().next().unwrap_or_default();
        let score = result.scores.first().copied().unwrap_or(f32::NEG_INFINITY);
        // CTranslate2 returns the cumulative log-probability divided by the length.
        let avg_logprob = score * ids.len() as f32 / (ids.len() + 1) as f32;
        let ratio = compression_ratio(vocab.decode(&ids)?.trim());
        let decoded = Decoded {
            ids,
            avg_logprob,
            no_speech_prob: result.no_speech_prob,
            temperature,
            compression_ratio: ratio,
        };
        let needs_fallback = !decoded.is_silence()
            && (ratio > COMPRESSION_RATIO_THRESHOLD || avg_logprob < LOG_PROB_THRESHOLD);
        if !needs_fallback {
            return Ok(decoded);
        }
        tried.push((decoded, ratio));
    }
    // Every temperature failed: the most probable text that is not a repetition loop.
    let any_below = tried.iter().any(|(_, r)| *r <= COMPRESSION_RATIO_THRESHOLD);
    tried
        .into_iter()
        .filter(|(_, r)| !any_below || *r <= COMPRESSION_RATIO_THRESHOLD)
        .map(|(d, _)| d)
        .max_by(|a, b| a.avg_logprob.total_cmp(&b.avg_logprob))
        .ok_or_else(|| AsrError::Inference("no decoding attempted".into()))
}

fn options(temperature: f32) -> WhisperOptions {
    let base = WhisperOptions {
        beam_size: BEAM_SIZE,
        patience: 1.0,
        length_penalty: 1.0,
        repetition_penalty: 1.0,
        no_repeat_ngram_size: 0,
        max_length: 448,
        sampling_topk: 1,
        sampling_temperature: 1.0,
        num_hypotheses: 1,
        return_scores: true,
        return_logits_vocab: false,
        return_no_speech_prob: true,
        // The first timestamp may be at most 1 s into the window.
        max_initial_timestamp_index: 50,
        suppress_blank: true,
        suppress_tokens: vec![-1],
    };
    if temperature > 0.0 {
        WhisperOptions {
            beam_size: 1,
            num_hypotheses: BEST_OF,
            sampling_topk: 0,
            sampling_temperature: temperature,
            ..base
        }
    } else {
        base
    }
}

/// gzip-style compression ratio of the text: high for repetition loops.
fn compression_ratio(text: &str) -> f32 {
    if text.is_empty() {
        return 0.0;
    }
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing into a Vec cannot fail.
    let compressed = encoder
        .write_all(text.as_bytes())
        .and_then(|()| encoder.finish())
        .map(|v| v.len())
        .unwrap_or(text.len());
    text.len() as f32 / compressed.max(1) as f32
}

/// Where to cut a window's tokens: the ids to keep and how many frames the seek advances.
#[derive(Debug, PartialEq)]
pub struct Cut {
    pub keep: usize,
    pub advance: usize,
}

/// faster-whisper's rule: with complete segments (two timestamps in a row) keep the tokens up
/// to the last one and seek to its time, unless the text ends on a single timestamp (nothing
/// after it); otherwise keep everything and move a whole window on.
pub fn cut_at_timestamps(ids: &[usize], timestamp_begin: usize, window_frames: usize) -> Cut {
    let is_ts = |id: usize| id >= timestamp_begin;
    let n = ids.len();
    let single_ending = n >= 2 && !is_ts(ids[n - 2]) && is_ts(ids[n - 1]);
    let last_pair = (1..n).rev().find(|&i| is_ts(ids[i]) && is_ts(ids[i - 1]));
    match last_pair {
        Some(_) if single_ending => Cut {
            keep: n,
            advance: window_frames,
        },
        Some(i) => Cut {
            keep: i,
            advance: (ids[i - 1] - timestamp_begin) * FRAMES_PER_TIMESTAMP,
        },
        None => Cut {
            keep: n,
            advance: window_frames,
        },
    }
}

/// One segment of a window: seconds from the window's start and the range of its tokens.
#[derive(Debug, PartialEq)]
pub struct Span {
    pub start: f64,
    pub end: f64,
    pub tokens: std::ops::Range<usize>,
}

/// faster-whisper's `_split_segments_by_timestamps`: the window's segments between pairs of
/// timestamp tokens (up to [`cut_at_timestamps`]'s `keep`), or one segment for the whole
/// window when there is no pair.
pub fn spans(ids: &[usize], timestamp_begin: usize, window_frames: usize) -> Vec<Span> {
    let is_ts = |id: usize| id >= timestamp_begin;
    let seconds = |id: usize| (id - timestamp_begin) as f64 * 0.02;
    let n = ids.len();
    let mut slices: Vec<usize> = (1..n)
        .filter(|&i| is_ts(ids[i]) && is_ts(ids[i - 1]))
        .collect();
    if slices.is_empty() {
        let window = window_frames as f64 * 0.01;
        let end = match ids.iter().rev().find(|&&id| is_ts(id)) {
            Some(&last) if last != timestamp_begin => seconds(last),
            _ => window,
        };
        return vec![Span {
            start: 0.0,
            end,
            tokens: 0..n,
        }];
    }
    let single_ending = n >= 2 && !is_ts(ids[n - 2]) && is_ts(ids[n - 1]);
    if single_ending {
        slices.push(n);
    }
    let mut last = 0;
    let mut out = Vec::with_capacity(slices.len());
    for current in slices {
        let sliced = &ids[last..current];
        let (first, final_) = (sliced[0], sliced[sliced.len() - 1]);
        out.push(Span {
            start: if is_ts(first) { seconds(first) } else { 0.0 },
            end: if is_ts(final_) { seconds(final_) } else { 0.0 },
            tokens: last..current,
        });
        last = current;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TS: usize = 1000;

    #[test]
    fn cuts_after_the_last_complete_segment() {
        // <0.00> a b <2.00><2.00> c d <4.00><4.00> e (unfinished)
        let ids = [TS, 1, 2, TS + 100, TS + 100, 3, 4, TS + 200, TS + 200, 5];
        let cut = cut_at_timestamps(&ids, TS, 3000);
        assert_eq!(
            cut,
            Cut {
                keep: 8,
                advance: 400
            }
        );
    }

    #[test]
    fn spans_between_timestamp_pairs() {
        let ids = [TS, 1, 2, TS + 100, TS + 100, 3, 4, TS + 200, TS + 200, 5];
        let spans = spans(&ids, TS, 3000);
        assert_eq!(spans.len(), 2);
        assert_eq!(
            (spans[0].start, spans[0].end, spans[0].tokens.clone()),
            (0.0, 2.0, 0..4)
        );
        assert_eq!(
            (spans[1].start, spans[1].end, spans[1].tokens.clone()),
            (2.0, 4.0, 4..8)
        );
        // No pair: one segment to the last timestamp, or to the window's end.
        let lone = spans_of_lone();
        assert_eq!((lone.start, lone.end, lone.tokens), (0.0, 30.0, 0..4));
    }

    fn spans_of_lone() -> Span {
        spans(&[TS, 1, 2, 3], TS, 3000).remove(0)
    }

    #[test]
    fn single_timestamp_ending_consumes_the_window() {
        let ids = [TS, 1, 2, TS + 100, TS + 100, 3, TS + 150];
        assert_eq!(
            cut_at_timestamps(&ids, TS, 2500),
            Cut {
                keep: 7,
                advance: 2500
            }
        );
    }

    #[test]
    fn no_complete_segment_keeps_everything() {
        let ids = [TS, 1, 2, 3];
        assert_eq!(
            cut_at_timestamps(&ids, TS, 3000),
            Cut {
                keep: 4,
                advance: 3000
            }
        );
    }

    #[test]
    fn temperature_ladder_starts_at_the_first() {
        assert_eq!(temperatures(0.0), TEMPERATURES);
        assert_eq!(temperatures(0.5), [0.5, 0.6, 0.8, 1.0]);
        assert_eq!(temperatures(1.0), [1.0]);
    }

    #[test]
    fn repetition_compresses_well() {
        let loop_text = "thank you ".repeat(40);
        assert!(compression_ratio(&loop_text) > COMPRESSION_RATIO_THRESHOLD);
        assert!(compression_ratio("Ever tried. Ever failed. No matter.") < 2.0);
    }
}
