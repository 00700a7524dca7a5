//! Pronunciations: an account's rules and the inline override `[word](/IPA/)` (the syntax of
//! misaki, Kokoro's own front end), docs/speech-text.md "Pronunciations".
//!
//! - [`apply`] writes an account's rules into a text before anything else reads it: an alias rule
//!   replaces each whole-word occurrence of its text by the alias (which is then normalised like
//!   the rest); a phoneme rule wraps each occurrence as an inline override.
//! - An engine that phonemises (kokoro, luxtts) [`pin`]s the overrides: each becomes one
//!   private-use character that normalisation leaves alone, and phonemisation puts the given
//!   phonemes where it stands. An engine that reads letters takes [`words_only`]: the word as
//!   written.
//! - Text that only looks like an override (a missing slash, an empty word) is left as written,
//!   brackets and all.

use std::borrow::Cow;
use std::ops::Range;

use crate::domain::EngineId;

/// What a rule says instead of its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Say {
    /// Other words, read (and normalised) in place of the text.
    Alias(String),
    /// IPA, given to the phonemiser in place of the text's own phonemes.
    Phonemes(String),
}

/// One pronunciation rule, as generation applies it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub text: String,
    pub say: Say,
    pub case_sensitive: bool,
}

/// The longest word of an override, and of a rule's text, in characters.
pub const MAX_WORD_CHARS: usize = 100;
/// The longest IPA of an override or a rule, in characters.
pub const MAX_PHONEMES_CHARS: usize = 200;

/// The first private-use character a pinned override becomes; there are [`MAX_PINS`].
const PIN_BASE: u32 = 0xE000;
/// How many overrides one text may pin (the Basic Multilingual Plane's private-use area); any
/// beyond are read as their words.
pub const MAX_PINS: usize = 0x1900;

/// An inline override in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override<'a> {
    /// Where the whole `[word](/IPA/)` stands, in bytes.
    pub range: Range<usize>,
    pub word: &'a str,
    pub phonemes: &'a str,
}

/// The inline overrides of `text`, in order: exactly `[word](/IPA/)`, the word 1 to
/// [`MAX_WORD_CHARS`] characters without brackets or line breaks, the IPA 1 to
/// [`MAX_PHONEMES_CHARS`] characters without slashes, brackets, parentheses or line breaks.
pub fn overrides(text: &str) -> Vec<Override<'_>> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find('[').map(|i| from + i) {
        match override_at(text, open) {
            Some(o) => {
                from = o.range.end;
                found.push(o);
            }
            None => from = open + 1,
        }
    }
    found
}

fn override_at(text: &str, open: usize) -> Option<Override<'_>> {
    let rest = &text[open + 1..];
    let close = rest.find([']', '[', '\n', '\r'])?;
    if !rest[close..].starts_with("](/") {
        return None;
    }
    let word = &rest[..close];
    let ipa_start = close + 3;
    let ipa_len = rest[ipa_start..].find(['/', '(', ')', '[', ']', '\n', '\r'])?;
    let phonemes = &rest[ipa_start..ipa_start + ipa_len];
    if !rest[ipa_start + ipa_len..].starts_with("/)") {
        return None;
    }
    let word_chars = word.chars().count();
    let ipa_chars = phonemes.chars().count();
    if word.trim().is_empty()
        || word_chars > MAX_WORD_CHARS
        || phonemes.trim().is_empty()
        || ipa_chars > MAX_PHONEMES_CHARS
    {
        return None;
    }
    let end = open + 1 + ipa_start + ipa_len + 2;
    Some(Override {
        range: open..end,
        word,
        phonemes,
    })
}

/// `text` with each override replaced by its word (for engines that read letters).
pub fn words_only(text: &str) -> Cow<'_, str> {
    let found = overrides(text);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for o in found {
        out.push_str(&text[at..o.range.start]);
        out.push_str(o.word);
        at = o.range.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// The text an engine reads: as it is for an engine that phonemises (it pins the overrides
/// itself), [`words_only`] for one that reads letters.
pub fn for_engine(text: &str, engine: EngineId) -> Cow<'_, str> {
    if engine.phonemizes() {
        Cow::Borrowed(text)
    } else {
        words_only(text)
    }
}

/// A text whose overrides are pinned: each is one private-use character standing for
/// `phonemes[i]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pinned {
    pub text: String,
    pub phonemes: Vec<String>,
    /// The word of each pin, as written.
    pub words: Vec<String>,
}

/// Pins `text`'s overrides (see the module docs). Private-use characters the caller wrote are
/// dropped first (they say nothing, and must not stand for a pin).
pub fn pin(text: &str) -> Pinned {
    let cleaned: Cow<'_, str> = if text.chars().any(|c| pin_index(c).is_some()) {
        Cow::Owned(text.chars().filter(|&c| pin_index(c).is_none()).collect())
    } else {
        Cow::Borrowed(text)
    };
    let mut out = String::with_capacity(cleaned.len());
    let mut phonemes = Vec::new();
    let mut words = Vec::new();
    let mut at = 0;
    for o in overrides(&cleaned) {
        out.push_str(&cleaned[at..o.range.start]);
        match char::from_u32(PIN_BASE + phonemes.len() as u32).filter(|_| phonemes.len() < MAX_PINS)
        {
            Some(c) => {
                out.push(c);
                phonemes.push(o.phonemes.trim().to_owned());
                words.push(o.word.to_owned());
            }
            None => out.push_str(o.word),
        }
        at = o.range.end;
    }
    out.push_str(&cleaned[at..]);
    Pinned {
        text: out,
        phonemes,
        words,
    }
}

/// The pin a character stands for, if it is one.
pub fn pin_index(c: char) -> Option<usize> {
    let code = c as u32;
    (PIN_BASE..PIN_BASE + MAX_PINS as u32)
        .contains(&code)
        .then(|| (code - PIN_BASE) as usize)
}

/// A piece of text while rules are applied: still open to rules, or already decided (an
/// override, or what a rule put there).
enum Span {
    Open(String),
    Fixed(String),
}

/// `text` with `rules` written in (see the module docs). Longer rule texts go first, and a
/// case-sensitive rule before a case-insensitive one of the same length; what one rule wrote is
/// not rewritten by another, and overrides already in the text are left as they are.
pub fn apply(text: &str, rules: &[Rule]) -> String {
    apply_within(text, rules, usize::MAX).unwrap_or_default()
}

/// [`apply`], stopping as soon as the text would grow past `max_chars` characters (`None`):
/// rules multiply a text (an alias for a one-letter word), so the work is bounded by what may
/// come out, not by what the rules could make of it.
pub fn apply_within(text: &str, rules: &[Rule], max_chars: usize) -> Option<String> {
    let mut chars = text.chars().count();
    if chars > max_chars {
        return None;
    }
    if rules.is_empty() {
        return Some(text.to_owned());
    }
    let mut spans = Vec::new();
    let mut at = 0;
    for o in overrides(text) {
        spans.push(Span::Open(text[at..o.range.start].to_owned()));
        spans.push(Span::Fixed(text[o.range.clone()].to_owned()));
        at = o.range.end;
    }
    spans.push(Span::Open(text[at..].to_owned()));

    let mut order: Vec<&Rule> = rules.iter().filter(|r| !r.text.trim().is_empty()).collect();
    order.sort_by_key(|r| (std::cmp::Reverse(r.text.chars().count()), !r.case_sensitive));
    let folded = text.to_lowercase();
    for rule in order {
        // Most rules of a large list are not in a given text: skip them with one search.
        if !folded.contains(&rule.text.to_lowercase()) {
            continue;
        }
        let mut next = Vec::with_capacity(spans.len());
        for span in spans {
            match span {
                Span::Fixed(_) => next.push(span),
                Span::Open(open) => {
                    chars = rewrite(&open, rule, &mut next, chars, max_chars)?;
                }
            }
        }
        spans = next;
    }
    Some(
        spans
            .into_iter()
            .map(|s| match s {
                Span::Open(s) | Span::Fixed(s) => s,
            })
            .collect(),
    )
}

/// One open span with `rule` applied to each whole-word occurrence of its text, pushed onto
/// `out`; the text's length in characters after it (`None` past `max_chars`).
fn rewrite(
    open: &str,
    rule: &Rule,
    out: &mut Vec<Span>,
    mut chars: usize,
    max_chars: usize,
) -> Option<usize> {
    let mut at = 0;
    let mut search = 0;
    while search < open.len() {
        let Some((start, end)) = find_word(open, search, &rule.text, rule.case_sensitive) else {
            break;
        };
        out.push(Span::Open(open[at..start].to_owned()));
        let said = &open[start..end];
        let written = match &rule.say {
            Say::Alias(alias) => alias.clone(),
            Say::Phonemes(ipa) => format!("[{said}](/{ipa}/)"),
        };
        chars = (chars + written.chars().count()).saturating_sub(said.chars().count());
        if chars > max_chars {
            return None;
        }
        out.push(Span::Fixed(written));
        at = end;
        search = end;
    }
    out.push(Span::Open(open[at..].to_owned()));
    Some(chars)
}

/// The first whole-word occurrence of `needle` in `hay` at or after byte `from`: neither
/// neighbour is a letter or digit (so "C#" matches in "(C#)" but not in "C#m").
fn find_word(hay: &str, from: usize, needle: &str, case_sensitive: bool) -> Option<(usize, usize)> {
    for (start, _) in hay[from..].char_indices().map(|(i, c)| (from + i, c)) {
        let Some(end) = match_at(hay, start, needle, case_sensitive) else {
            continue;
        };
        let before = hay[..start].chars().next_back();
        let after = hay[end..].chars().next();
        let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
        if !word(before) && !word(after) {
            return Some((start, end));
        }
    }
    None
}

/// Where `needle` ends if it is written at byte `start` of `hay`.
fn match_at(hay: &str, start: usize, needle: &str, case_sensitive: bool) -> Option<usize> {
    let mut hay_chars = hay[start..].char_indices();
    for n in needle.chars() {
        let (_, h) = hay_chars.next()?;
        let same = h == n || (!case_sensitive && h.to_lowercase().eq(n.to_lowercase()));
        if !same {
            return None;
        }
    }
    Some(hay_chars.next().map_or(hay.len(), |(i, _)| start + i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alias(text: &str, alias: &str) -> Rule {
        Rule {
            text: text.into(),
            say: Say::Alias(alias.into()),
            case_sensitive: false,
        }
    }

    #[test]
    fn overrides_are_exact_or_literal() {
        let text =
            "Say [Kokoro](/kˈOkəɹO/) and [x](/y) and [](/a/) and [a](b) and [tomato](/təmˈɑːtəʊ/).";
        let found = overrides(text);
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].word, "Kokoro");
        assert_eq!(found[0].phonemes, "kˈOkəɹO");
        assert_eq!(&text[found[0].range.clone()], "[Kokoro](/kˈOkəɹO/)");
        assert_eq!(found[1].word, "tomato");
        assert_eq!(
            words_only(text),
            "Say Kokoro and [x](/y) and [](/a/) and [a](b) and tomato."
        );
        assert_eq!(words_only("plain [brackets]"), "plain [brackets]");
        // A nested bracket ends the word: the inner pattern is the override.
        assert_eq!(overrides("[[a](/b/)")[0].word, "a");
    }

    #[test]
    fn pins_replace_overrides_and_drop_callers_private_use() {
        let pinned = pin("\u{E000}Hi [Kokoro](/kˈOkəɹO/), [Kokoro](/ kˈO /)!");
        assert_eq!(pinned.text, "Hi \u{E000}, \u{E001}!");
        assert_eq!(pinned.phonemes, vec!["kˈOkəɹO", "kˈO"]);
        assert_eq!(pin_index('\u{E001}'), Some(1));
        assert_eq!(pin_index('a'), None);
    }

    #[test]
    fn rules_match_whole_words_longest_first_and_never_twice() {
        let rules = vec![
            alias("SQL", "sequel"),
            alias("PostgreSQL", "post gres Q L"),
            Rule {
                text: "Kokoro".into(),
                say: Say::Phonemes("kˈOkəɹO".into()),
                case_sensitive: true,
            },
            alias("sequel", "NOT AGAIN"),
        ];
        assert_eq!(
            apply("PostgreSQL, SQL and mysql; Kokoro's kokoro.", &rules),
            "post gres Q L, sequel and mysql; [Kokoro](/kˈOkəɹO/)'s kokoro."
        );
        // An override already in the text is left as the caller wrote it.
        assert_eq!(apply("[SQL](/ɛs/) SQL", &rules), "[SQL](/ɛs/) sequel");
        // Case-insensitive matching keeps byte offsets right around letters whose lowercase
        // has another length.
        assert_eq!(apply("İstanbul sql", &rules), "İstanbul sequel");
    }

    #[test]
    fn a_word_is_bounded_by_what_is_not_a_letter_or_digit() {
        let rules = vec![alias("C#", "C sharp")];
        assert_eq!(
            apply("I write C#, (C#) not C#m or AC#.", &rules),
            "I write C sharp, (C sharp) not C#m or AC#."
        );
    }

    #[test]
    fn rules_stop_at_the_length_they_may_reach() {
        let rules = vec![alias("a", &"x".repeat(200))];
        let bomb = "a ".repeat(4990);
        // 4 990 aliases of 200 characters would make about a million characters: refused
        // after the first hundred or so.
        assert_eq!(apply_within(&bomb, &rules, 20_000), None);
        let few = "a b a";
        let spoken = apply_within(few, &rules, 20_000).unwrap();
        assert_eq!(spoken.chars().count(), 403);
        assert_eq!(apply_within(few, &rules, 402), None);
        assert_eq!(
            apply_within(few, &rules, 403).as_deref(),
            Some(spoken.as_str())
        );
        // A text already past the bound is refused with or without rules.
        assert_eq!(apply_within("abc", &[], 2), None);
    }
}
