//! Word timestamps, as faster-whisper's `add_word_timestamps` makes them: CTranslate2's
//! `align` (DTW over the alignment heads' cross-attention) gives each text token a frame; the
//! tokens are grouped into words (split at spaces, or at characters for languages written
//! without them), punctuation is merged into its word, words at sentence ends longer than twice
//! the median are clamped, and each segment's first and last word are reconciled with the
//! segment's own timestamps.

use ct2rs::sys::{StorageView, Whisper};

use super::AsrError;
use super::prompt::Vocabulary;
use crate::domain::{Segment, Word};

/// Encoder frames (tokens of time) per second.
const TOKENS_PER_SECOND: f64 = 50.0;
const MEDIAN_FILTER_WIDTH: i64 = 7;
const PREPEND_PUNCTUATIONS: &str = "\"'“¿([{-";
const APPEND_PUNCTUATIONS: &str = "\"'.。,，!！?？:：”)]}、";
const SENTENCE_END_MARKS: &str = ".。!！?？";
/// Python's `string.punctuation`: a word that is a substring of it stands alone.
const ASCII_PUNCTUATION: &str = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

/// A word as aligned, seconds from the window's start.
#[derive(Debug, Clone)]
struct Timing {
    word: String,
    tokens: usize,
    start: f64,
    end: f64,
    probability: f32,
}

/// One window to align: its encoder output, start sequence, segments and content frames.
pub struct Window<'a> {
    pub encoded: &'a StorageView<'a>,
    pub start_sequence: &'a [usize],
    /// Each segment's text token ids (timestamps and specials removed).
    pub segment_tokens: &'a [Vec<usize>],
    pub num_frames: usize,
    /// The window's start in the clip, seconds.
    pub offset: f64,
    pub language: &'a str,
}

/// Adds word timings to the window's `segments` (adjusting their start and end as
/// faster-whisper does); returns the words of each segment and the new last speech time.
pub fn add_word_timestamps(
    model: &Whisper,
    vocab: &Vocabulary,
    window: &Window<'_>,
    segments: &mut [Segment],
    mut last_speech: f64,
) -> Result<(Vec<Vec<Word>>, f64), AsrError> {
    let text_tokens: Vec<usize> = window.segment_tokens.iter().flatten().copied().collect();
    if text_tokens.is_empty() {
        return Ok((vec![Vec::new(); segments.len()], last_speech));
    }
    let mut alignment = find_alignment(model, vocab, window, &text_tokens)?;

    let mut durations: Vec<f64> = alignment
        .iter()
        .map(|t| t.end - t.start)
        .filter(|d| *d != 0.0)
        .collect();
    durations.sort_by(f64::total_cmp);
    let median = median(&durations).min(0.7);
    let max_duration = median * 2.0;
    if !durations.is_empty() {
        // Truncate long words at sentence boundaries.
        for i in 1..alignment.len() {
            if alignment[i].end - alignment[i].start > max_duration {
                // Python's `in` on strings: a substring test.
                if SENTENCE_END_MARKS.contains(alignment[i].word.as_str()) {
                    alignment[i].end = alignment[i].start + max_duration;
                } else if SENTENCE_END_MARKS.contains(alignment[i - 1].word.as_str()) {
                    alignment[i].start = alignment[i].end - max_duration;
                }
            }
        }
    }
    merge_punctuations(&mut alignment);

    let round = |x: f64| (x * 100.0).round() / 100.0;
    let mut all = Vec::with_capacity(segments.len());
    let mut index = 0;
    for (segment, tokens) in segments.iter_mut().zip(window.segment_tokens) {
        let mut saved = 0;
        let mut words: Vec<Word> = Vec::new();
        while index < alignment.len() && saved < tokens.len() {
            let timing = &alignment[index];
            if !timing.word.is_empty() {
                words.push(Word {
                    word: timing.word.clone(),
                    start: round(window.offset + timing.start),
                    end: round(window.offset + timing.end),
                    probability: timing.probability,
                });
            }
            saved += timing.tokens;
            index += 1;
        }
        if let Some(first) = words.first() {
            // The first and second word after a pause are not longer than twice the median.
            let long_first = first.end - first.start > max_duration;
            let long_pair = words.len() > 1 && words[1].end - first.start > max_duration * 2.0;
            if first.end - last_speech > median * 4.0 && (long_first || long_pair) {
                if words.len() > 1 && words[1].end - words[1].start > max_duration {
                    let boundary = (words[1].end / 2.0).max(words[1].end - max_duration);
                    words[0].end = boundary;
                    words[1].start = boundary;
                }
                words[0].start = (words[0].end - max_duration).max(0.0);
            }
            // Prefer the segment's start when the first word is too long.
            if segment.start < words[0].end && segment.start - 0.5 > words[0].start {
                words[0].start = (words[0].end - median).min(segment.start).max(0.0);
            } else {
                segment.start = words[0].start;
            }
            // Prefer the segment's end when the last word is too long.
            let last = words.len() - 1;
            if segment.end > words[last].start && segment.end + 0.5 < words[last].end {
                words[last].end = (words[last].start + median).max(segment.end);
            } else {
                segment.end = words[last].end;
            }
            last_speech = segment.end;
        }
        all.push(words);
    }
    Ok((all, last_speech))
}

fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// faster-whisper's `find_alignment`: token frames from `align`, grouped into words.
fn find_alignment(
    model: &Whisper,
    vocab: &Vocabulary,
    window: &Window<'_>,
    text_tokens: &[usize],
) -> Result<Vec<Timing>, AsrError> {
    let result = model
        .align(
            window.encoded,
            window.start_sequence,
            &[text_tokens.to_vec()],
            &[window.num_frames],
            MEDIAN_FILTER_WIDTH,
        )
        .map_err(|e| AsrError::Inference(format!("alignment: {e}")))?
        .into_iter()
        .next()
        .ok_or_else(|| AsrError::Inference("alignment gave no result".into()))?;
    let (words, word_tokens) = split_to_word_tokens(vocab, text_tokens, window.language)?;
    if word_tokens.is_empty() {
        return Ok(Vec::new());
    }
    // Frames where the token index moves on: one a token, then one for `<|endoftext|>`.
    let mut jump_times = Vec::with_capacity(text_tokens.len() + 1);
    let mut previous: Option<i64> = None;
    for step in &result.alignments {
        if previous != Some(step.token_x) {
            jump_times.push(step.frame_x as f64 / TOKENS_PER_SECOND);
        }
        previous = Some(step.token_x);
    }
    let time_at = |i: usize| {
        jump_times
            .get(i)
            .or(jump_times.last())
            .copied()
            .unwrap_or(0.0)
    };
    let probs = &result.text_token_probs;
    let mut timings = Vec::with_capacity(words.len());
    let mut boundary = 0;
    for (word, tokens) in words.into_iter().zip(word_tokens) {
        let next = boundary + tokens.len();
        let slice = probs
            .get(boundary..next.min(probs.len()))
            .unwrap_or_default();
        let probability = if slice.is_empty() {
            0.0
        } else {
            slice.iter().sum::<f32>() / slice.len() as f32
        };
        timings.push(Timing {
            word,
            tokens: tokens.len(),
            start: time_at(boundary),
            end: time_at(next),
            probability,
        });
        boundary = next;
    }
    Ok(timings)
}

/// Words and their tokens: split where a decoded piece is a whole character sequence, then
/// (except for languages written without spaces) joined until the next space or punctuation.
fn split_to_word_tokens(
    vocab: &Vocabulary,
    tokens: &[usize],
    language: &str,
) -> Result<(Vec<String>, Vec<Vec<usize>>), AsrError> {
    let (subwords, subword_tokens) = split_on_unicode(vocab, tokens)?;
    if matches!(language, "zh" | "ja" | "th" | "lo" | "my" | "yue") {
        return Ok((subwords, subword_tokens));
    }
    let mut words: Vec<String> = Vec::new();
    let mut word_tokens: Vec<Vec<usize>> = Vec::new();
    for (subword, ids) in subwords.into_iter().zip(subword_tokens) {
        let with_space = subword.starts_with(' ');
        let punctuation = ASCII_PUNCTUATION.contains(subword.trim());
        match (words.last_mut(), word_tokens.last_mut()) {
            (Some(word), Some(last)) if !with_space && !punctuation => {
                word.push_str(&subword);
                last.extend(ids);
            }
            _ => {
                words.push(subword);
                word_tokens.push(ids);
            }
        }
    }
    Ok((words, word_tokens))
}

/// Pieces of whole characters: tokens are added to the current piece until its text has no
/// replacement character that the full text does not have.
fn split_on_unicode(
    vocab: &Vocabulary,
    tokens: &[usize],
) -> Result<(Vec<String>, Vec<Vec<usize>>), AsrError> {
    const REPLACEMENT: char = '\u{fffd}';
    let full: Vec<char> = vocab.decode(tokens)?.chars().collect();
    let mut words = Vec::new();
    let mut word_tokens = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut offset = 0;
    for &token in tokens {
        current.push(token);
        let decoded = vocab.decode(&current)?;
        let complete = match decoded.chars().position(|c| c == REPLACEMENT) {
            None => true,
            Some(i) => full.get(offset + i) == Some(&REPLACEMENT),
        };
        if complete {
            offset += decoded.chars().count();
            words.push(decoded);
            word_tokens.push(std::mem::take(&mut current));
        }
    }
    Ok((words, word_tokens))
}

/// Leading punctuation joins the next word, trailing punctuation the word before.
fn merge_punctuations(alignment: &mut [Timing]) {
    if alignment.len() < 2 {
        return;
    }
    let mut i = alignment.len() as isize - 2;
    let mut j = alignment.len() - 1;
    while i >= 0 {
        let iu = i as usize;
        let previous = &alignment[iu];
        if previous.word.starts_with(' ') && PREPEND_PUNCTUATIONS.contains(previous.word.trim()) {
            let word = std::mem::take(&mut alignment[iu].word);
            let tokens = std::mem::take(&mut alignment[iu].tokens);
            alignment[j].word = word + &alignment[j].word;
            alignment[j].tokens += tokens;
        } else {
            j = iu;
        }
        i -= 1;
    }
    let (mut i, mut j) = (0, 1);
    while j < alignment.len() {
        let following = &alignment[j].word;
        if !alignment[i].word.ends_with(' ') && APPEND_PUNCTUATIONS.contains(following.as_str()) {
            let word = std::mem::take(&mut alignment[j].word);
            let tokens = std::mem::take(&mut alignment[j].tokens);
            alignment[i].word.push_str(&word);
            alignment[i].tokens += tokens;
        } else {
            i = j;
        }
        j += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing(word: &str) -> Timing {
        Timing {
            word: word.into(),
            tokens: 1,
            start: 0.0,
            end: 0.0,
            probability: 1.0,
        }
    }

    #[test]
    fn punctuation_joins_its_word() {
        let mut words: Vec<Timing> = [" \"", "Hello", ",", " world", ".", "\""]
            .into_iter()
            .map(timing)
            .collect();
        merge_punctuations(&mut words);
        let texts: Vec<&str> = words.iter().map(|t| t.word.as_str()).collect();
        assert_eq!(texts, ["", " \"Hello,", "", " world.\"", "", ""]);
        let tokens: usize = words.iter().map(|t| t.tokens).sum();
        assert_eq!(tokens, 6);
    }

    #[test]
    fn median_of_sorted() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[1.0, 2.0, 4.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 4.0, 5.0]), 3.0);
    }
}
