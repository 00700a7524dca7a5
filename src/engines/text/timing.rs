//! When each word of generated speech is said (issue 26 item 2; docs/speech-text.md "Word
//! timestamps"), from the durations Kokoro's own predictor gave each phoneme token.
//!
//! - [`piece_words`]: one piece's words and their times, from its tokens' phoneme symbols and
//!   durations. The phonemiser writes one space-separated group per word it read; when the groups
//!   and the piece's words line up one to one (the usual case) each word gets its group's time,
//!   otherwise the piece's span is shared among its words in proportion to their letters.
//! - [`with_sources`]: the words of a whole generation tied back to the caller's text (character
//!   offsets): words that are the text's own words anchor, and the words normalisation or a
//!   pronunciation made (numbers, symbols, aliases) take the span of the text between anchors.

use super::pronounce;

/// A word said, in seconds from the start of its audio.
#[derive(Debug, Clone, PartialEq)]
pub struct WordTiming {
    /// The word as spoken (after normalisation; an inline pronunciation's word as written).
    pub text: String,
    pub start: f64,
    pub end: f64,
}

/// A generated word with where it came from in the caller's text.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SpokenWord {
    pub text: String,
    pub start: f64,
    pub end: f64,
    /// Character offsets (Unicode scalar values) of the caller's text the word reads, end
    /// exclusive.
    pub source_start: usize,
    pub source_end: usize,
}

/// Frames the audio of a token lags its place in the durations (Kokoro's pipeline: 3).
const LEAD_FRAMES: f64 = 3.0;

/// Phoneme symbols that are punctuation (pauses), not sounds of a word.
const MARKS: &str = "!\"(),.:;?—“”…";

/// The words of one piece: `text` as the phonemiser read it (normalised, pins as private-use
/// characters), `phonemes` the symbol of each token, `durations` the frames of each token with
/// the padding token at each end, `frame_secs` the length of a frame.
pub fn piece_words(
    text: &str,
    phonemes: &[char],
    durations: &[i64],
    frame_secs: f64,
) -> Vec<WordTiming> {
    if durations.len() != phonemes.len() + 2 {
        return Vec::new();
    }
    // Token i spans frames [start[i], start[i] + durations[i + 1]).
    let mut starts = Vec::with_capacity(phonemes.len());
    let mut at = durations[0];
    for d in &durations[1..=phonemes.len()] {
        starts.push(at);
        at += d;
    }
    // As Kokoro's own pipeline reads its durations (hexgrad/kokoro `join_timestamps`): the audio
    // runs LEAD_FRAMES behind the frames, and a space between two words is shared between them.
    let half_space = |token: Option<usize>| {
        token
            .filter(|&t| phonemes.get(t) == Some(&' '))
            .map_or(0.0, |t| durations[t + 1] as f64 / 2.0)
    };
    let span = |first: usize, last: usize| {
        let start = starts[first] as f64 - half_space(first.checked_sub(1)) - LEAD_FRAMES;
        let end =
            (starts[last] + durations[last + 1]) as f64 + half_space(Some(last + 1)) - LEAD_FRAMES;
        (start.max(0.0) * frame_secs, end.max(0.0) * frame_secs)
    };
    // The phoneme groups: tokens between spaces, less punctuation.
    let mut groups: Vec<(usize, usize)> = Vec::new();
    let mut open: Option<(usize, usize)> = None;
    for (i, &c) in phonemes.iter().enumerate() {
        if c == ' ' {
            groups.extend(open.take());
        } else if !MARKS.contains(c) {
            open = Some(open.map_or((i, i), |(first, _)| (first, i)));
        }
    }
    groups.extend(open);
    let words = spoken_words(text);
    if groups.is_empty() || words.is_empty() {
        return Vec::new();
    }
    if groups.len() == words.len() {
        return words
            .into_iter()
            .zip(groups)
            .map(|(text, (first, last))| {
                let (start, end) = span(first, last);
                WordTiming { text, start, end }
            })
            .collect();
    }
    // The groups do not line up with the words: share the piece's span by letters.
    let (start, _) = span(groups[0].0, groups[0].1);
    let (_, end) = span(groups[groups.len() - 1].0, groups[groups.len() - 1].1);
    let weights: Vec<f64> = words
        .iter()
        .map(|w| w.chars().count().max(1) as f64)
        .collect();
    let total: f64 = weights.iter().sum();
    let mut at = start;
    words
        .into_iter()
        .zip(weights)
        .map(|(text, weight)| {
            let from = at;
            at += (end - start) * weight / total;
            WordTiming {
                text,
                start: from,
                end: at,
            }
        })
        .collect()
}

/// The words of a piece's text as the phonemiser reads them: split at spaces and hyphens, pins on
/// their own, bare punctuation dropped.
fn spoken_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, words: &mut Vec<String>| {
        let trimmed =
            word.trim_matches(|c: char| !c.is_alphanumeric() && pronounce::pin_index(c).is_none());
        if !trimmed.is_empty() {
            words.push(trimmed.to_owned());
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_whitespace() || matches!(c, '-' | '–' | '—') {
            flush(&mut word, &mut words);
        } else if pronounce::pin_index(c).is_some() {
            flush(&mut word, &mut words);
            word.push(c);
            flush(&mut word, &mut words);
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut words);
    words
}

/// A word of the caller's text: its comparison key and character span.
struct SourceToken {
    key: String,
    start: usize,
    end: usize,
}

/// Lower-case letters and digits only: "Hello," and "hello" are the same word.
fn key(word: &str) -> String {
    word.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The caller's text as words with character spans; an inline override is one word (its word).
fn source_tokens(text: &str) -> Vec<SourceToken> {
    let overrides = pronounce::overrides(text);
    let mut tokens = Vec::new();
    let mut chars = 0;
    let mut current: Option<(String, usize)> = None;
    let mut byte = 0;
    let mut next_override = overrides.iter().peekable();
    let push =
        |current: &mut Option<(String, usize)>, end: usize, tokens: &mut Vec<SourceToken>| {
            if let Some((word, start)) = current.take() {
                let key = key(&word);
                if !key.is_empty() {
                    tokens.push(SourceToken { key, start, end });
                }
            }
        };
    while byte < text.len() {
        if let Some(o) = next_override.peek().filter(|o| o.range.start == byte) {
            push(&mut current, chars, &mut tokens);
            let length = text[o.range.clone()].chars().count();
            tokens.push(SourceToken {
                key: key(o.word),
                start: chars,
                end: chars + length,
            });
            chars += length;
            byte = o.range.end;
            next_override.next();
            continue;
        }
        let c = text[byte..].chars().next().expect("in bounds");
        if c.is_whitespace() || matches!(c, '-' | '–' | '—') {
            push(&mut current, chars, &mut tokens);
        } else {
            current
                .get_or_insert_with(|| (String::new(), chars))
                .0
                .push(c);
        }
        chars += 1;
        byte += c.len_utf8();
    }
    push(&mut current, chars, &mut tokens);
    tokens
}

/// How far ahead a spoken word looks for the caller's word it reads (words normalisation or an
/// alias inserted between two of the text's words).
const LOOKAHEAD: usize = 12;

/// `words` (a whole generation's, in order) with the spans of `source` (the caller's text) they
/// read. `engine_text` is the text the engine read (the caller's with the account's
/// pronunciations written in): its pins name the words of inline pronunciations.
pub fn with_sources(source: &str, engine_text: &str, words: Vec<WordTiming>) -> Vec<SpokenWord> {
    let pinned = pronounce::pin(engine_text);
    let words: Vec<WordTiming> = words
        .into_iter()
        .map(|mut w| {
            let mut chars = w.text.chars();
            if let (Some(c), None) = (chars.next(), chars.next())
                && let Some(word) = pronounce::pin_index(c).and_then(|i| pinned.words.get(i))
            {
                w.text = word.clone();
            }
            w
        })
        .collect();
    let tokens = source_tokens(source);
    // Anchors: spoken word i reads token anchor[i].
    let mut anchor: Vec<Option<usize>> = vec![None; words.len()];
    let mut next = 0;
    for (i, w) in words.iter().enumerate() {
        let k = key(&w.text);
        if k.is_empty() {
            continue;
        }
        let found = (next..tokens.len().min(next + LOOKAHEAD)).find(|&t| tokens[t].key == k);
        if let Some(t) = found {
            anchor[i] = Some(t);
            next = t + 1;
        }
    }
    let total_chars = source.chars().count();
    let mut out = Vec::with_capacity(words.len());
    for (i, w) in words.into_iter().enumerate() {
        let (source_start, source_end) = match anchor[i] {
            Some(t) => (tokens[t].start, tokens[t].end),
            None => {
                // The source tokens between the anchors around this word.
                let before = anchor[..i].iter().rev().flatten().next().copied();
                let after = anchor[i + 1..].iter().flatten().next().copied();
                let first = before.map_or(0, |t| t + 1);
                let last = after.unwrap_or(tokens.len());
                if first < last {
                    (tokens[first].start, tokens[last - 1].end)
                } else if let Some(t) = before.or(after) {
                    (tokens[t].start, tokens[t].end)
                } else {
                    (0, total_chars)
                }
            }
        };
        out.push(SpokenWord {
            text: w.text,
            start: round_ms(w.start),
            end: round_ms(w.end),
            source_start,
            source_end,
        });
    }
    out
}

fn round_ms(secs: f64) -> f64 {
    (secs * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_line_up_with_words() {
        // "həlˈO, wˈɜɹld." with a padding frame of 2 at each end.
        let phonemes: Vec<char> = "həlˈO, wˈɜɹld.".chars().collect();
        let mut durations = vec![4];
        durations.extend(std::iter::repeat_n(2, phonemes.len()));
        durations.push(2);
        let words = piece_words("Hello, world.", &phonemes, &durations, 0.025);
        assert_eq!(words.len(), 2);
        assert_eq!(words[0].text, "Hello");
        // Frame 4, less the 3 frames of lead.
        assert!((words[0].start - 0.025).abs() < 1e-9);
        // "həlˈO" is 5 tokens; the comma follows it (no space to share).
        assert!((words[0].end - 0.275).abs() < 1e-9);
        assert_eq!(words[1].text, "world");
        // "w" starts at frame 4 + 7 × 2 = 18, less half the space before it, less the lead.
        assert!((words[1].start - 0.35).abs() < 1e-9, "{words:?}");
        assert!((words[1].end - 0.675).abs() < 1e-9, "{words:?}");
    }

    #[test]
    fn words_that_do_not_line_up_share_the_span_by_letters() {
        let phonemes: Vec<char> = "ab cd ef".chars().collect();
        let durations = vec![3, 1, 1, 1, 1, 1, 1, 1, 1, 0];
        let words = piece_words("one two", &phonemes, &durations, 1.0);
        assert_eq!(words.len(), 2);
        assert_eq!((words[0].start, words[1].end), (0.0, 8.0));
        assert!((words[0].end - 4.0).abs() < 1e-9);
    }

    #[test]
    fn spoken_words_split_at_hyphens_and_pins() {
        assert_eq!(
            spoken_words("twenty-six \u{E000}'s, “quoted” — x"),
            vec!["twenty", "six", "\u{E000}", "s", "quoted", "x"]
        );
    }

    #[test]
    fn sources_anchor_on_the_texts_words() {
        let w = |text: &str, start: f64| WordTiming {
            text: text.into(),
            start,
            end: start + 0.1,
        };
        let source = "I paid $3.50 to ACME for [Kokoro](/kˈOkəɹO/)-style tea.";
        let engine = "I paid $3.50 to bananas for [Kokoro](/kˈOkəɹO/)-style tea.";
        let spoken = vec![
            w("I", 0.0),
            w("paid", 0.2),
            w("three", 0.4),
            w("dollars", 0.6),
            w("fifty", 0.8),
            w("to", 1.0),
            w("bananas", 1.2),
            w("for", 1.4),
            w("\u{E000}", 1.6),
            w("style", 1.8),
            w("tea", 2.0),
        ];
        let words = with_sources(source, engine, spoken);
        let said = |i: usize| {
            let chars: Vec<char> = source.chars().collect();
            chars[words[i].source_start..words[i].source_end]
                .iter()
                .collect::<String>()
        };
        assert_eq!(said(0), "I");
        assert_eq!(said(2), "$3.50");
        assert_eq!(said(4), "$3.50");
        assert_eq!(said(6), "ACME");
        assert_eq!(words[8].text, "Kokoro");
        assert_eq!(said(8), "[Kokoro](/kˈOkəɹO/)");
        assert_eq!(said(9), "style");
        assert_eq!(said(10), "tea.");
        assert_eq!(words[10].start, 2.0);
    }
}
