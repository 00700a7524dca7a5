//! When each character of a phrase is said, chunk by chunk, from the words the engine timed
//! (`engines::text::timing`: Kokoro's predicted durations).
//!
//! - The phrase's own characters (ElevenLabs' `alignment`): the words are tied back to the
//!   phrase (`timing::with_sources`), each word's characters share its span evenly, and the
//!   characters between two words (spaces, punctuation) share the gap between them. A chunk
//!   carries the characters up to the end of its last word; the chunk of the phrase's last word
//!   carries the rest of the phrase too. Joined over a phrase's chunks they are the phrase.
//! - The words as spoken (`normalizedAlignment`): each word's characters, then a space.
//!
//! Times are milliseconds from the start of the chunk's own audio (as ElevenLabs' are), never
//! negative, in order.

use crate::engines::text::timing::{self, WordTiming};

/// Characters and when each is said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CharTimes {
    pub chars: Vec<String>,
    pub starts_ms: Vec<u64>,
    pub durations_ms: Vec<u64>,
}

impl CharTimes {
    fn push(&mut self, c: char, start_ms: f64, end_ms: f64) {
        let start = start_ms.max(0.0);
        self.chars.push(c.to_string());
        self.starts_ms.push(start.round() as u64);
        self.durations_ms
            .push((end_ms.max(start) - start).round().max(0.0) as u64);
    }

    /// Characters `chars` spread evenly over `[start_ms, end_ms)`.
    fn spread(&mut self, chars: &[char], start_ms: f64, end_ms: f64) {
        let step = (end_ms - start_ms).max(0.0) / chars.len().max(1) as f64;
        for (i, &c) in chars.iter().enumerate() {
            let at = start_ms + step * i as f64;
            self.push(c, at, at + step);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.chars.is_empty()
    }
}

/// A chunk's two alignments.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChunkAlignment {
    pub alignment: CharTimes,
    pub normalized: CharTimes,
}

/// One phrase's alignment state.
pub struct Aligner {
    /// The phrase as the client sent it (its characters).
    phrase: Vec<char>,
    /// The phrase as admitted (trimmed), and where it starts in `phrase`.
    spoken: String,
    lead: usize,
    /// Every word timed so far (seconds from the start of the phrase's audio).
    words: Vec<WordTiming>,
    /// Characters of `phrase` already handed out.
    emitted: usize,
    /// Where the last handed-out word ended (ms from the start of the phrase's audio).
    last_end_ms: f64,
}

impl Aligner {
    pub fn new(phrase: &str) -> Self {
        let lead = phrase.chars().take_while(|c| c.is_whitespace()).count();
        Self {
            phrase: phrase.chars().collect(),
            spoken: phrase.trim().to_owned(),
            lead,
            words: Vec::new(),
            emitted: 0,
            last_end_ms: 0.0,
        }
    }

    /// The alignment of a chunk that says `words` and starts `chunk_start_ms` into the phrase's
    /// audio.
    pub fn chunk(&mut self, words: &[WordTiming], chunk_start_ms: f64) -> ChunkAlignment {
        let mut out = ChunkAlignment::default();
        if words.is_empty() {
            return out;
        }
        let first_new = self.words.len();
        self.words.extend(words.iter().cloned());
        let sourced = timing::with_sources(&self.spoken, &self.spoken, self.words.clone());
        let rel = |secs: f64| secs * 1000.0 - chunk_start_ms;
        for (i, word) in sourced.iter().enumerate().skip(first_new) {
            let (start_ms, end_ms) = (word.start * 1000.0, word.end * 1000.0);
            // The word as spoken.
            let said: Vec<char> = word.text.chars().collect();
            out.normalized.spread(&said, rel(word.start), rel(word.end));
            out.normalized.push(' ', rel(word.end), rel(word.end));
            // The phrase's characters up to the end of this word (or to the phrase's end after
            // its last word, or when nothing but punctuation and spaces is left).
            let from = self.lead + word.source_start;
            let to = (self.lead + word.source_end).min(self.phrase.len());
            let last =
                i + 1 == sourced.len() && !self.phrase[to..].iter().any(|c| c.is_alphanumeric());
            if to <= self.emitted {
                self.last_end_ms = self.last_end_ms.max(end_ms);
                continue;
            }
            let from = from.max(self.emitted);
            let gap: Vec<char> = self.phrase[self.emitted..from].to_vec();
            let word_start = start_ms.max(self.last_end_ms);
            out.alignment.spread(
                &gap,
                self.last_end_ms - chunk_start_ms,
                word_start - chunk_start_ms,
            );
            out.alignment.spread(
                &self.phrase[from..to],
                word_start - chunk_start_ms,
                end_ms.max(word_start) - chunk_start_ms,
            );
            self.emitted = to;
            self.last_end_ms = end_ms.max(self.last_end_ms);
            if last {
                let rest: Vec<char> = self.phrase[to..].to_vec();
                let at = self.last_end_ms - chunk_start_ms;
                out.alignment.spread(&rest, at, at);
                self.emitted = self.phrase.len();
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(text: &str, start: f64, end: f64) -> WordTiming {
        WordTiming {
            text: text.into(),
            start,
            end,
        }
    }

    #[test]
    fn the_chunks_characters_joined_are_the_phrase_and_times_run_forward() {
        let phrase = " Hello there, it costs 5 dollars. ";
        let mut aligner = Aligner::new(phrase);
        let first = aligner.chunk(&[w("Hello", 0.1, 0.4), w("there", 0.4, 0.7)], 0.0);
        let second = aligner.chunk(
            &[
                w("it", 0.9, 1.0),
                w("costs", 1.0, 1.3),
                w("five", 1.3, 1.6),
                w("dollars", 1.6, 2.0),
            ],
            800.0,
        );
        let joined: String = first
            .alignment
            .chars
            .iter()
            .chain(&second.alignment.chars)
            .map(String::as_str)
            .collect();
        assert_eq!(joined, phrase);
        for chunk in [&first, &second] {
            let a = &chunk.alignment;
            assert_eq!(a.chars.len(), a.starts_ms.len());
            assert_eq!(a.chars.len(), a.durations_ms.len());
            assert!(a.starts_ms.windows(2).all(|p| p[0] <= p[1]), "{a:?}");
        }
        // Relative to the second chunk's start (800 ms): "it" at 900 ms is 100 ms in.
        let it = second
            .alignment
            .chars
            .iter()
            .position(|c| c == "i")
            .unwrap();
        assert_eq!(second.alignment.starts_ms[it], 100);
        let normalized: String = second.normalized.chars.concat();
        assert_eq!(normalized, "it costs five dollars ");
    }

    #[test]
    fn a_chunk_without_words_has_no_alignment() {
        let mut aligner = Aligner::new("Hello.");
        assert!(aligner.chunk(&[], 0.0).alignment.is_empty());
    }
}
