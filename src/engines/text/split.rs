//! Long text → pieces Kokoro accepts (fewer than 510 phoneme tokens each).
//!
//! Every sentence is its own piece; a sentence that is too long is cut at clauses, a clause at
//! words, a word (only in pathological input) in halves. Neighbouring clauses or words are packed
//! back together while they fit, so pieces stay as long as the model allows.

use crate::engines::EngineError;

/// What ends a piece; decides the pause that follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    Sentence,
    Clause,
    Word,
}

impl Boundary {
    /// Silence inserted after a piece that ends here (the last piece gets none).
    pub fn pause_secs(self) -> f32 {
        match self {
            Self::Sentence => 0.25,
            Self::Clause => 0.12,
            Self::Word => 0.04,
        }
    }
}

#[derive(Debug)]
pub struct Piece {
    pub text: String,
    pub tokens: Vec<i64>,
    pub boundary: Boundary,
}

/// Phonemizes a batch of texts into token ids, one vector per text.
pub type Tokenize<'a> = dyn FnMut(&[&str]) -> Result<Vec<Vec<i64>>, EngineError> + 'a;

/// Safety margin when packing by summed token counts (joining can add a token or two).
const PACK_MARGIN: usize = 8;

/// Splits `text` into pieces of fewer than `max_tokens` tokens each. Text that yields no tokens
/// at all (stray symbols) is left out.
pub fn split(
    text: &str,
    max_tokens: usize,
    tokenize: &mut Tokenize<'_>,
) -> Result<Vec<Piece>, EngineError> {
    split_pieces(text, max_tokens, tokenize, false)
}

/// [`split`], and a long first sentence is cut after its first clause ([`FIRST_PIECE_TOKENS`]):
/// Kokoro's pieces, whose first one starts a streamed answer.
pub fn split_short_start(
    text: &str,
    max_tokens: usize,
    tokenize: &mut Tokenize<'_>,
) -> Result<Vec<Piece>, EngineError> {
    split_pieces(text, max_tokens, tokenize, true)
}

fn split_pieces(
    text: &str,
    max_tokens: usize,
    tokenize: &mut Tokenize<'_>,
    short_start: bool,
) -> Result<Vec<Piece>, EngineError> {
    let sentences = sentences(text);
    let tokens = tokenize(&sentences)?;
    let mut splitter = Splitter {
        max: max_tokens,
        tokenize,
        out: Vec::new(),
    };
    let mut sentences = sentences.into_iter().zip(tokens);
    if short_start && let Some((first, tokens)) = sentences.next() {
        splitter.first(first, tokens)?;
    }
    for (sentence, tokens) in sentences {
        splitter.fit(sentence, tokens, Level::Sentence, Boundary::Sentence)?;
    }
    Ok(splitter.out)
}

/// A first sentence longer than this (about two seconds of speech) is cut after its first
/// clause, so that the first audio of a streamed answer is ready sooner (the rest of the
/// sentence is the next piece, with a clause's pause between them).
const FIRST_PIECE_TOKENS: usize = 40;

#[derive(Clone, Copy)]
enum Level {
    Sentence,
    Clause,
    Word,
}

impl Level {
    fn parts(self, text: &str) -> Vec<&str> {
        match self {
            Self::Sentence => clauses(text),
            Self::Clause => words(text),
            Self::Word => halves(text),
        }
    }

    fn next(self) -> Self {
        match self {
            Self::Sentence => Self::Clause,
            Self::Clause | Self::Word => Self::Word,
        }
    }

    fn inner_boundary(self) -> Boundary {
        match self {
            Self::Sentence => Boundary::Clause,
            Self::Clause | Self::Word => Boundary::Word,
        }
    }
}

struct Splitter<'t, 'a> {
    max: usize,
    tokenize: &'t mut Tokenize<'a>,
    out: Vec<Piece>,
}

impl Splitter<'_, '_> {
    /// The first sentence: see [`FIRST_PIECE_TOKENS`].
    fn first(&mut self, text: &str, tokens: Vec<i64>) -> Result<(), EngineError> {
        if tokens.len() > FIRST_PIECE_TOKENS
            && let Some(&head) = clauses(text).first()
            && !text[head.len()..].trim().is_empty()
        {
            let rest = &text[head.len()..];
            let mut both = (self.tokenize)(&[head, rest])?.into_iter();
            if let (Some(head_tokens), Some(rest_tokens)) = (both.next(), both.next())
                && !head_tokens.is_empty()
                && !rest_tokens.is_empty()
            {
                self.fit(head, head_tokens, Level::Clause, Boundary::Clause)?;
                return self.fit(rest, rest_tokens, Level::Sentence, Boundary::Sentence);
            }
        }
        self.fit(text, tokens, Level::Sentence, Boundary::Sentence)
    }

    fn fit(
        &mut self,
        text: &str,
        tokens: Vec<i64>,
        level: Level,
        end: Boundary,
    ) -> Result<(), EngineError> {
        if tokens.is_empty() {
            return Ok(());
        }
        if tokens.len() < self.max {
            self.out.push(Piece {
                text: text.trim().to_owned(),
                tokens,
                boundary: end,
            });
            return Ok(());
        }
        let parts = level.parts(text);
        if parts.len() < 2 {
            if matches!(level, Level::Word) {
                return Err(EngineError::InvalidInput(format!(
                    "{text:?} alone yields {} phoneme tokens",
                    tokens.len()
                )));
            }
            return self.fit(text, tokens, level.next(), end);
        }
        let counts: Vec<usize> = (self.tokenize)(&parts)?.iter().map(Vec::len).collect();

        // Greedy packing by summed counts; each group is checked for real by `fit` below.
        let mut groups = Vec::new();
        let (mut start, mut offset, mut sum) = (0, 0, 0);
        for (part, count) in parts.iter().zip(counts) {
            if sum > 0 && sum + count + 1 + PACK_MARGIN >= self.max {
                groups.push(&text[start..offset]);
                (start, sum) = (offset, 0);
            }
            sum += count + usize::from(sum > 0);
            offset += part.len();
        }
        groups.push(&text[start..]);

        let tokens = (self.tokenize)(&groups)?;
        let last = groups.len() - 1;
        for (i, (group, tokens)) in groups.into_iter().zip(tokens).enumerate() {
            let boundary = if i == last {
                end
            } else {
                level.inner_boundary()
            };
            self.fit(group, tokens, level.next(), boundary)?;
        }
        Ok(())
    }
}

/// Cuts `text` after each char for which `ends(part so far, char, rest)` gives `Some(extra)`
/// (plus `extra` bytes, e.g. closing quotes). The parts cover all of `text`.
fn cut(text: &str, ends: impl Fn(&str, char, &str) -> Option<usize>) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut iter = text.char_indices();
    while let Some((i, c)) = iter.next() {
        let after = &text[i + c.len_utf8()..];
        if let Some(extra) = ends(&text[start..i], c, after) {
            let end = i + c.len_utf8() + extra;
            if end > start && !text[start..end].trim().is_empty() {
                parts.push(&text[start..end]);
                start = end;
            }
            // Skip what `extra` swallowed.
            while iter.offset() < end {
                iter.next();
            }
        }
    }
    if start < text.len() {
        if !text[start..].trim().is_empty() || parts.is_empty() {
            parts.push(&text[start..]);
        } else if let Some(last) = parts.last_mut() {
            // Trailing whitespace joins the last part so nothing is lost.
            *last = &text[start - last.len()..];
        }
    }
    parts
}

const CLOSERS: &[char] = &['"', '”', '’', '\'', ')', ']', '」', '』', '»'];
const ABBREVIATIONS: &[&str] = &[
    "Mr", "Mrs", "Ms", "Dr", "Prof", "St", "Sr", "Jr", "vs", "Mt",
];

/// Sentences: after . ! ? … (followed by closing quotes, then whitespace or the end), after
/// 。！？ and at line breaks. "Dr. Smith", "3.5" and initials do not end sentences.
pub(crate) fn sentences(text: &str) -> Vec<&str> {
    cut(text, |before, c, after| match c {
        '。' | '！' | '？' | '\n' => Some(0),
        '.' | '!' | '?' | '…' => {
            let closers = after.len() - after.trim_start_matches(CLOSERS).len();
            let rest = &after[closers..];
            if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
                return None;
            }
            let word = before
                .rsplit(|ch: char| ch.is_whitespace())
                .next()
                .unwrap_or("");
            let initial = word.chars().count() == 1 && word.chars().all(char::is_uppercase);
            if c == '.' && closers == 0 && (ABBREVIATIONS.contains(&word) || initial) {
                return None;
            }
            Some(closers)
        }
        _ => None,
    })
}

/// Clauses: after , ; : and dashes (followed by whitespace), after 、，；： always.
fn clauses(text: &str) -> Vec<&str> {
    cut(text, |_, c, after| match c {
        '、' | '，' | '；' | '：' | '—' | '–' => Some(0),
        ',' | ';' | ':' if after.is_empty() || after.starts_with(char::is_whitespace) => Some(0),
        _ => None,
    })
}

/// Words, each with the whitespace before the next one.
fn words(text: &str) -> Vec<&str> {
    cut(text, |before, c, after| {
        let in_word = !before.trim().is_empty();
        (c.is_whitespace() && in_word && after.starts_with(|n: char| !n.is_whitespace()))
            .then_some(0)
    })
}

/// Last resort for a "word" that is too long by itself.
fn halves(text: &str) -> Vec<&str> {
    let count = text.chars().count();
    if count < 2 {
        return vec![text];
    }
    let (mid, _) = text.char_indices().nth(count / 2).expect("count >= 2");
    vec![&text[..mid], &text[mid..]]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One token per non-space character: enough to exercise the splitter without espeak.
    fn fake(texts: &[&str]) -> Result<Vec<Vec<i64>>, EngineError> {
        Ok(texts
            .iter()
            .map(|t| {
                t.chars()
                    .filter(|c| !c.is_whitespace())
                    .map(|_| 1)
                    .collect()
            })
            .collect())
    }

    fn squash(s: &str) -> String {
        s.split_whitespace().collect()
    }

    #[test]
    fn sentences_respect_abbreviations_numbers_and_quotes() {
        let s = sentences(
            "Dr. Smith paid 3.5 euros. \"Really?\" she asked! J. R. R. Tolkien… wrote.\nNext",
        );
        assert_eq!(
            s,
            vec![
                "Dr. Smith paid 3.5 euros.",
                " \"Really?\"",
                " she asked!",
                " J. R. R. Tolkien…",
                " wrote.",
                "\nNext",
            ]
        );
        assert_eq!(
            sentences("こんにちは。元気？はい"),
            vec!["こんにちは。", "元気？", "はい"]
        );
    }

    #[test]
    fn clauses_and_words_cover_the_text() {
        let t = "one, two; three: four—five, ";
        assert_eq!(
            clauses(t),
            vec!["one,", " two;", " three:", " four—", "five, "]
        );
        assert_eq!(words("  a bb  ccc "), vec!["  a ", "bb  ", "ccc "]);
        assert_eq!(halves("abcd"), vec!["ab", "cd"]);
    }

    #[test]
    fn long_sentence_splits_at_clauses_then_words() {
        let clause = "word ".repeat(30); // 120 tokens with the fake tokenizer
        let text = format!("{clause}, {clause}, {clause}.");
        let pieces = split(&text, 200, &mut fake).unwrap();
        assert!(pieces.iter().all(|p| p.tokens.len() < 200));
        assert_eq!(
            pieces.iter().map(|p| p.boundary).collect::<Vec<_>>(),
            vec![Boundary::Clause, Boundary::Clause, Boundary::Sentence]
        );
        let long_word = "x".repeat(450);
        let pieces = split(&long_word, 200, &mut fake).unwrap();
        assert!(pieces.iter().all(|p| p.tokens.len() < 200));
        assert_eq!(
            squash(&pieces.iter().map(|p| p.text.as_str()).collect::<String>()),
            long_word
        );
    }

    #[test]
    fn a_long_first_sentence_starts_with_its_first_clause_alone() {
        let text = "The weather was cold and windy this morning, so we stayed inside and read. \
                    Later, we walked to the market, which was busy.";
        assert_eq!(
            split(text, 500, &mut fake).unwrap().len(),
            2,
            "other engines: sentences"
        );
        let pieces = split_short_start(text, 500, &mut fake).unwrap();
        let texts: Vec<_> = pieces.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "The weather was cold and windy this morning,",
                "so we stayed inside and read.",
                "Later, we walked to the market, which was busy.",
            ]
        );
        assert_eq!(
            pieces.iter().map(|p| p.boundary).collect::<Vec<_>>(),
            vec![Boundary::Clause, Boundary::Sentence, Boundary::Sentence]
        );
        // A short first sentence stays whole.
        let short = split_short_start("Hello there, friend. Bye.", 500, &mut fake).unwrap();
        assert_eq!(short[0].text, "Hello there, friend.");
    }
}
