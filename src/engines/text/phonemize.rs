//! Text → Kokoro phoneme tokens, through espeak-ng.
//!
//! Licence: espeak-ng is GPL-3.0-or-later. voiced runs it as a separate program (the Debian
//! package `espeak-ng`), writing text to its stdin and reading IPA from its stdout; nothing of it
//! is linked into or shipped with our binary, so its licence does not extend to voiced. Keep it
//! that way: do not link libespeak-ng or vendor its data.
//!
//! espeak-ng drops punctuation, which Kokoro uses for pauses and intonation, so the text is cut at
//! punctuation first, each run of words is phonemized on its own line (one process per call), and
//! the punctuation is put back between them, as the `phonemizer` package does for kokoro-onnx.
//! Its output is then brought to the symbols Kokoro v1.0 was trained on (misaki's): tied
//! diphthongs and affricates become single letters (`a͡ɪ` → `I`, `t͡ʃ` → `ʧ`), American English
//! loses length marks, and anything outside `vocab.json` is dropped.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use unicode_normalization::UnicodeNormalization;

use super::pronounce;
use crate::engines::EngineError;

/// The phoneme-character → token-id map of `vocab.json`, and its inverse (built once at load:
/// word timings read it for every piece).
pub struct Vocab(HashMap<char, i64>, HashMap<i64, char>);

impl Vocab {
    pub fn load(path: &Path) -> Result<Self, EngineError> {
        let broken = |e: &dyn std::fmt::Display| {
            EngineError::NotInstalled(format!("cannot read {}: {e}", path.display()))
        };
        let text = std::fs::read_to_string(path).map_err(|e| broken(&e))?;
        let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| broken(&e))?;
        let map = json["vocab"]
            .as_object()
            .ok_or_else(|| broken(&"no \"vocab\" map"))?;
        let mut vocab = HashMap::new();
        for (key, id) in map {
            let mut chars = key.chars();
            match (chars.next(), chars.next(), id.as_i64()) {
                (Some(c), None, Some(id)) => vocab.insert(c, id),
                _ => return Err(broken(&format!("bad entry {key:?}: {id}"))),
            };
        }
        let symbols = vocab.iter().map(|(&c, &id)| (id, c)).collect();
        Ok(Self(vocab, symbols))
    }

    /// The phoneme symbol of each token id (unknown ids as `?`).
    pub fn symbols(&self, tokens: &[i64]) -> Vec<char> {
        tokens
            .iter()
            .map(|id| self.1.get(id).copied().unwrap_or('?'))
            .collect()
    }

    /// Token ids of a phoneme string; characters outside the vocabulary are dropped.
    pub fn tokens(&self, phonemes: &str) -> Vec<i64> {
        phonemes
            .chars()
            .filter_map(|c| self.0.get(&c).copied())
            .collect()
    }
}

/// The espeak-ng voice for a profile language (ISO 639-1, optionally with a region) and a
/// Kokoro preset. A region the profile names wins (`en-gb`, `en-us`, `pt-br`, `pt-pt`); plain
/// English follows the preset's dialect (`b…` presets are British).
pub fn espeak_voice(language: &str, preset: &str) -> Result<String, EngineError> {
    let language = language.trim().to_ascii_lowercase().replace('_', "-");
    let (primary, region) = language.split_once('-').unwrap_or((&language, ""));
    let voice = match (primary, region) {
        ("en", "gb" | "uk") => "en-gb",
        ("en", "us") => "en-us",
        ("en", _) if preset.starts_with('b') => "en-gb",
        ("en", _) => "en-us",
        ("zh", _) => "cmn",
        ("fr", _) => "fr-fr",
        ("pt", "pt") => "pt",
        ("pt", _) => "pt-br",
        (other, _)
            if (2..=3).contains(&other.len()) && other.bytes().all(|b| b.is_ascii_lowercase()) =>
        {
            other
        }
        _ => {
            return Err(EngineError::InvalidInput(format!(
                "unsupported language {language:?}"
            )));
        }
    };
    Ok(voice.to_owned())
}

/// Tied pairs (espeak `--tie=^`) that Kokoro spells as one symbol, in every language.
const TIES: &[(&str, &str)] = &[
    ("a^ɪ", "I"),
    ("a^ʊ", "W"),
    ("d^z", "ʣ"),
    ("d^ʒ", "ʤ"),
    ("d^ʑ", "ʥ"),
    ("e^ɪ", "A"),
    ("o^ʊ", "O"),
    ("ə^ʊ", "Q"),
    ("s^s", "S"),
    ("t^s", "ʦ"),
    ("t^ʃ", "ʧ"),
    ("t^ɕ", "ʨ"),
    ("ɔ^ɪ", "Y"),
];

/// English espeak → misaki spellings (after `TIES`), longest first.
const ENGLISH: &[(&str, &str)] = &[
    ("ə^l", "ᵊl"),
    ("e^ə", "ɛː"),
    ("ɪ^ə", "ɪə"),
    ("ʊ^ə", "ʊə"),
    ("r", "ɹ"),
    ("x", "k"),
    ("ç", "k"),
    ("ɬ", "l"),
    ("ʲ", ""),
];

/// American English only: misaki writes r-coloured vowels out and has no length marks; the
/// flapped t of "ninety" is a d (kokoro-js's fix-up).
const AMERICAN: &[(&str, &str)] = &[
    ("nˈInti", "nˈIndi"),
    ("ɜːɹ", "ɜɹ"),
    ("ɜː", "ɜɹ"),
    ("ɚ", "əɹ"),
    ("ɐ", "ə"),
    ("ː", ""),
];

/// A piece of input text: words for espeak, a pinned pronunciation (`pronounce::pin`), or a
/// punctuation mark Kokoro knows.
#[derive(Debug, PartialEq)]
enum Item<'a> {
    Words(&'a str),
    Pinned(usize),
    Mark { mark: char, opening: bool },
}

#[cfg(test)]
/// Phonemizes `text` with espeak-ng `voice`, punctuation preserved.
pub fn phonemize(text: &str, voice: &str) -> Result<String, EngineError> {
    Ok(phonemize_many(&[text], voice, &[])?
        .pop()
        .unwrap_or_default())
}

/// How phonemes are spelled for a model: those espeak-ng wrote, and those a caller gave.
struct Spelling<'a> {
    espeak: &'a dyn Fn(&str) -> String,
    caller: &'a dyn Fn(&str) -> String,
}

/// Phonemizes several texts with one espeak-ng process; a pinned character (`pronounce::pin`)
/// stands for `pins[i]`, the caller's IPA in Kokoro's symbols.
pub fn phonemize_many(
    texts: &[&str],
    voice: &str,
    pins: &[String],
) -> Result<Vec<String>, EngineError> {
    let spelling = Spelling {
        espeak: &|ipa| clean(ipa, voice),
        caller: &|ipa| caller_ipa(ipa, voice),
    };
    phonemize_with(texts, voice, pins, &spelling)
}

/// espeak-ng's own IPA of several texts, punctuation put back the same way but without Kokoro's
/// spellings (ties and language tags removed): for models trained on piper-phonemize's output
/// (LuxTTS). Pins are the caller's IPA as written, less tie bars.
pub fn ipa_many(texts: &[&str], voice: &str, pins: &[String]) -> Result<Vec<String>, EngineError> {
    let spelling = Spelling {
        espeak: &plain,
        caller: &|ipa| {
            plain(
                &ipa.nfd()
                    .filter(|c| !matches!(c, '\u{0361}' | '\u{035C}'))
                    .nfc()
                    .collect::<String>(),
            )
        },
    };
    phonemize_with(texts, voice, pins, &spelling)
}

/// Kokoro v1.0's phoneme symbols (`vocab.json` less punctuation).
const KOKORO_SYMBOLS: &str = "AIOQSTWYabcdefhijklmnopqrstuvwxyzæçðøŋœɐɑɒɔɕɖəɚɛɜɟɡɣɤɥɨɪɯɰɲɳɴɸɹɻɽɾʁʂʃʈʊʋʌʎʒʔʝʣʤʥʦʧʨʰʲˈˌː\u{303}βθχᵊᵝᵻ→↓↗↘ꭧ";

/// Untied pairs callers write for one sound, tied the way espeak writes them (then `TIES`).
const UNTIED: &[(&str, &str)] = &[
    ("aɪ", "a^ɪ"),
    ("aʊ", "a^ʊ"),
    ("eɪ", "e^ɪ"),
    ("oʊ", "o^ʊ"),
    ("əʊ", "ə^ʊ"),
    ("ɔɪ", "ɔ^ɪ"),
    ("tʃ", "t^ʃ"),
    ("dʒ", "d^ʒ"),
];

/// A caller's IPA in Kokoro's symbols for espeak voice `voice`: tie bars and untied diphthongs
/// and affricates become Kokoro's single letters, ASCII `g`, `'` and `:` their IPA letters, and
/// the dialect's spellings apply as to espeak's output.
pub fn caller_ipa(ipa: &str, voice: &str) -> String {
    let mut s: String = ipa
        .trim()
        .nfd()
        .map(|c| match c {
            '\u{0361}' | '\u{035C}' => '^',
            'g' => 'ɡ',
            '\'' | '’' => 'ˈ',
            ':' => 'ː',
            c => c,
        })
        .collect();
    s = replace_all(s, UNTIED);
    stress_before_vowels(&clean(&s, voice))
}

/// Vowels of Kokoro's symbols (its single-letter diphthongs included).
const VOWELS: &str = "AIOQWYaeiouyæøœɐɑɒɔəɚɛɜɤɨɪɯʊʌᵊᵻ";

/// Stress marks moved from where IPA puts them (the start of the syllable: "ˈkoʊ") to where
/// espeak and misaki, and so Kokoro's training data, put them (before its vowel: "kˈO").
fn stress_before_vowels(ipa: &str) -> String {
    let mut out = String::with_capacity(ipa.len());
    let mut pending: Option<char> = None;
    for c in ipa.chars() {
        match c {
            'ˈ' | 'ˌ' => {
                if let Some(mark) = pending.replace(c) {
                    out.push(mark);
                }
            }
            ' ' => {
                if let Some(mark) = pending.take() {
                    out.push(mark);
                }
                out.push(c);
            }
            c if VOWELS.contains(c) => {
                if let Some(mark) = pending.take() {
                    out.push(mark);
                }
                out.push(c);
            }
            c => out.push(c),
        }
    }
    if let Some(mark) = pending {
        out.push(mark);
    }
    out
}

/// Why a caller's IPA cannot be spoken by Kokoro with espeak voice `voice`: the symbols outside
/// its inventory (diacritics other than the nasal tilde and tie bars included), or no symbol at
/// all. `None` when it can.
pub fn unspeakable(ipa: &str, voice: &str) -> Option<String> {
    let marks: String = ipa
        .nfd()
        .filter(|c| ('\u{0300}'..='\u{036F}').contains(c))
        .filter(|c| !matches!(c, '\u{0303}' | '\u{0361}' | '\u{035C}'))
        .collect();
    let spelled = caller_ipa(ipa, voice);
    let mut unknown: Vec<char> = spelled
        .chars()
        .filter(|&c| c != ' ' && !KOKORO_SYMBOLS.contains(c))
        .chain(marks.chars())
        .collect();
    unknown.sort_unstable();
    unknown.dedup();
    if !unknown.is_empty() {
        let listed: Vec<String> = unknown
            .iter()
            .map(|c| format!("\"{}\" (U+{:04X})", c, *c as u32))
            .collect();
        return Some(format!(
            "these symbols are not phonemes the voices know: {}",
            listed.join(", ")
        ));
    }
    // Stress, length and the modifier letters only mark a phoneme; alone they say nothing.
    let marks_only = |c: char| matches!(c, 'ˈ' | 'ˌ' | 'ː' | 'ʰ' | 'ʲ' | '\u{303}' | ' ');
    if spelled.chars().all(marks_only) {
        return Some("it has no phoneme".into());
    }
    None
}

fn phonemize_with(
    texts: &[&str],
    voice: &str,
    pins: &[String],
    spelling: &Spelling<'_>,
) -> Result<Vec<String>, EngineError> {
    if matches!(voice, "ja" | "cmn") && texts.iter().any(|t| t.chars().any(is_ideograph)) {
        return Err(EngineError::InvalidInput(
            "espeak-ng cannot read kanji/hanzi; write the text in kana (Japanese) or pinyin".into(),
        ));
    }
    let items: Vec<Vec<Item<'_>>> = texts.iter().map(|t| items(t)).collect();
    let words: Vec<&str> = items
        .iter()
        .flatten()
        .filter_map(|i| match i {
            Item::Words(w) => Some(*w),
            Item::Mark { .. } | Item::Pinned(_) => None,
        })
        .collect();
    let mut ipa = espeak(&words, voice)?.into_iter();
    Ok(items
        .iter()
        .map(|items| assemble(items, &mut ipa, pins, spelling))
        .collect())
}

/// Joins phonemized word runs and punctuation the way misaki writes them: "həlˈO, wˈɜɹld."
fn assemble(
    items: &[Item<'_>],
    ipa: &mut impl Iterator<Item = String>,
    pins: &[String],
    spelling: &Spelling<'_>,
) -> String {
    let mut out = String::new();
    let mut after_opening = false;
    for item in items {
        match item {
            Item::Words(_) | Item::Pinned(_) => {
                let ph = match item {
                    Item::Pinned(i) => pins.get(*i).map(|p| (spelling.caller)(p)),
                    _ => Some((spelling.espeak)(&ipa.next().unwrap_or_default())),
                }
                .unwrap_or_default();
                if ph.is_empty() {
                    continue;
                }
                if !out.is_empty() && !out.ends_with(' ') && !after_opening {
                    out.push(' ');
                }
                out.push_str(&ph);
                after_opening = false;
            }
            Item::Mark {
                mark,
                opening: true,
            } => {
                if !out.is_empty() && !out.ends_with(' ') {
                    out.push(' ');
                }
                out.push(*mark);
                after_opening = true;
            }
            Item::Mark {
                mark,
                opening: false,
            } => {
                out.truncate(out.trim_end().len());
                out.push(*mark);
                after_opening = false;
            }
        }
    }
    out.trim().to_owned()
}

fn is_ideograph(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}')
}

/// Cuts text into word runs and the punctuation marks of Kokoro's vocabulary.
fn items(text: &str) -> Vec<Item<'_>> {
    let mut items = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, n)| n);
        let prev = text[..i].chars().next_back();
        let mark = match c {
            ',' | '、' | '，' => Some(','),
            ';' | '；' => Some(';'),
            ':' | '：' => Some(':'),
            '!' | '！' => Some('!'),
            '?' | '？' => Some('?'),
            '。' | '．' => Some('.'),
            '…' => Some('…'),
            '—' | '–' => Some('—'),
            '(' | ')' | '“' | '”' | '"' => Some(c),
            '«' | '「' | '『' => Some('“'),
            '»' | '」' | '』' => Some('”'),
            // A full stop only where it ends something: "3.5" and "e.g" stay words.
            '.' if next.is_none_or(|n| !n.is_alphanumeric()) => {
                if next == Some('.') {
                    // "..." → "…": swallow the run of dots.
                    while chars.peek().is_some_and(|&(_, n)| n == '.') {
                        chars.next();
                    }
                    Some('…')
                } else {
                    Some('.')
                }
            }
            _ => None,
        };
        if let Some(mark) = mark {
            push_words(&mut items, &text[start..i]);
            let opening =
                matches!(mark, '(' | '“') || (mark == '"' && prev.is_none_or(char::is_whitespace));
            items.push(Item::Mark { mark, opening });
            start = chars.peek().map_or(text.len(), |&(j, _)| j);
        }
    }
    push_words(&mut items, &text[start..]);
    items
}

/// A run between marks: its words, and the pins among them as items of their own.
fn push_words<'a>(items: &mut Vec<Item<'a>>, run: &'a str) {
    let mut start = 0;
    for (i, c) in run.char_indices() {
        if let Some(pin) = pronounce::pin_index(c) {
            push_plain(items, &run[start..i]);
            items.push(Item::Pinned(pin));
            start = i + c.len_utf8();
        }
    }
    push_plain(items, &run[start..]);
}

fn push_plain<'a>(items: &mut Vec<Item<'a>>, words: &'a str) {
    let words = words.trim();
    if words.chars().any(char::is_alphanumeric) {
        items.push(Item::Words(words));
    }
}

/// One espeak-ng process for all runs: each on its own input line gives one output line.
/// Should espeak break a line into several clauses anyway, fall back to one process per run.
fn espeak(runs: &[&str], voice: &str) -> Result<Vec<String>, EngineError> {
    if runs.is_empty() {
        return Ok(Vec::new());
    }
    let lines: Vec<String> = runs.iter().map(|r| r.replace(['\n', '\r'], " ")).collect();
    let out = run_espeak(&lines.join("\n"), voice)?;
    let out: Vec<String> = out.lines().map(str::to_owned).collect();
    if out.len() == runs.len() {
        return Ok(out);
    }
    lines
        .iter()
        .map(|line| {
            Ok(run_espeak(line, voice)?
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "))
        })
        .collect()
}

fn run_espeak(input: &str, voice: &str) -> Result<String, EngineError> {
    let mut child = Command::new("espeak-ng")
        .args(["-q", "--ipa", "--tie=^", "-b", "1", "-v", voice])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            EngineError::NotInstalled(format!(
                "cannot run espeak-ng (apt-get install espeak-ng): {e}"
            ))
        })?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    // Write from a thread so a large input cannot deadlock against a full stdout pipe.
    let input = format!("{input}\n");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let output = child
        .wait_with_output()
        .map_err(|e| EngineError::Inference(format!("espeak-ng: {e}")))?;
    let written = writer
        .join()
        .map_err(|_| EngineError::Inference("espeak-ng writer".into()))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() || stderr.contains("Failed to read voice") {
        return Err(EngineError::InvalidInput(format!(
            "espeak-ng has no voice {voice:?}: {}",
            stderr.trim()
        )));
    }
    written.map_err(|e| EngineError::Inference(format!("espeak-ng stdin: {e}")))?;
    String::from_utf8(output.stdout)
        .map_err(|_| EngineError::Inference("espeak-ng wrote invalid UTF-8".into()))
}

/// Brings one line of espeak IPA to Kokoro's symbols.
fn clean(ipa: &str, voice: &str) -> String {
    // Language-switch marks such as "(en)" (tied: "(^e^n)").
    let mut s = String::with_capacity(ipa.len());
    let mut in_tag = false;
    for c in ipa.nfd() {
        match c {
            '(' => in_tag = true,
            ')' => in_tag = false,
            // Diacritics Kokoro does not know (lowering, centralisation…); the nasal tilde stays.
            '\u{0300}'..='\u{036F}' if c != '\u{0303}' => {}
            _ if !in_tag => s.push(c),
            _ => {}
        }
    }
    let mut s = replace_all(s, TIES);
    if voice == "cmn" {
        // espeak writes Mandarin tones as digits after the syllable; misaki's Kokoro symbols are
        // contour arrows (1 high level, 2 rising, 3 low, 4 falling; 5 neutral has none).
        s = s
            .chars()
            .filter_map(|c| match c {
                '1' => Some('→'),
                '2' => Some('↗'),
                '3' => Some('↓'),
                '4' => Some('↘'),
                '5' => None,
                c => Some(c),
            })
            .collect();
    }
    if voice.starts_with("en") {
        s = replace_all(s, ENGLISH);
        if voice == "en-us" {
            s = replace_all(s, AMERICAN);
        }
    }
    s.replace('^', "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// One line of espeak IPA as espeak writes it, minus ties and language-switch tags.
fn plain(ipa: &str) -> String {
    let mut s = String::with_capacity(ipa.len());
    let mut in_tag = false;
    for c in ipa.chars() {
        match c {
            '(' => in_tag = true,
            ')' => in_tag = false,
            '^' => {}
            _ if !in_tag => s.push(c),
            _ => {}
        }
    }
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn replace_all(mut s: String, table: &[(&str, &str)]) -> String {
    for (from, to) in table {
        if s.contains(from) {
            s = s.replace(from, to);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_keep_punctuation_and_numbers() {
        let items = items("Well, it costs 3.5 dollars... \"Really?\" (yes)");
        assert_eq!(
            items,
            vec![
                Item::Words("Well"),
                Item::Mark {
                    mark: ',',
                    opening: false
                },
                Item::Words("it costs 3.5 dollars"),
                Item::Mark {
                    mark: '…',
                    opening: false
                },
                Item::Mark {
                    mark: '"',
                    opening: true
                },
                Item::Words("Really"),
                Item::Mark {
                    mark: '?',
                    opening: false
                },
                Item::Mark {
                    mark: '"',
                    opening: false
                },
                Item::Mark {
                    mark: '(',
                    opening: true
                },
                Item::Words("yes"),
                Item::Mark {
                    mark: ')',
                    opening: false
                },
            ]
        );
    }

    #[test]
    fn cleans_ties_and_american_length() {
        assert_eq!(clean("həlˈo^ʊ wˈɜːld", "en-us"), "həlˈO wˈɜɹld");
        assert_eq!(clean("t^ʃˈa^ɪniːz", "en-gb"), "ʧˈIniːz");
        assert_eq!(
            clean("(^e^n)hˈa^ɪ(^j^a) kˌo̞nnit^ɕˈihä", "ja"),
            "hˈI kˌonniʨˈiha"
        );
    }

    #[test]
    fn voices_follow_language_and_dialect() {
        assert_eq!(espeak_voice("en", "bf_emma").unwrap(), "en-gb");
        assert_eq!(espeak_voice("en", "jf_alpha").unwrap(), "en-us");
        assert_eq!(espeak_voice("pt", "pf_dora").unwrap(), "pt-br");
        assert!(espeak_voice("-x", "jf_alpha").is_err());
        // A region on the profile wins over the preset's dialect.
        assert_eq!(espeak_voice("en-gb", "af_heart").unwrap(), "en-gb");
        assert_eq!(espeak_voice("en-us", "bf_emma").unwrap(), "en-us");
        assert_eq!(espeak_voice("pt-br", "pf_dora").unwrap(), "pt-br");
        assert_eq!(espeak_voice("fr", "ff_siwis").unwrap(), "fr-fr");
        assert_eq!(espeak_voice("zh", "zf_xiaoxiao").unwrap(), "cmn");
        for (language, voice) in [("es", "es"), ("hi", "hi"), ("it", "it"), ("ja", "ja")] {
            assert_eq!(espeak_voice(language, "x").unwrap(), voice);
        }
    }

    #[test]
    fn espeak_english_sentence() {
        let ph = phonemize("Hello, world. This is a test!", "en-us").unwrap();
        assert_eq!(ph, "həlˈO, wˈɜɹld. ðɪs ɪz ə tˈɛst!");
    }

    #[test]
    fn a_pinned_pronunciation_is_spoken_as_given() {
        use crate::engines::text::{normalize, pronounce};
        let pinned = pronounce::pin("Say [Kokoro](/ˈkoʊkəɹoʊ/) 3 times, [Kokoro](/kˈO/).");
        let text = normalize::for_voice(&pinned.text, "en-us");
        assert_eq!(text, "Say \u{E000} three times, \u{E001}.");
        let ph = phonemize_many(&[&text], "en-us", &pinned.phonemes).unwrap();
        assert_eq!(ph[0], "sˈA kˈOkəɹO θɹˈi tˈImz, kˈO.");
        // The same pins for a model trained on espeak's own IPA: as the caller wrote them.
        let ipa = ipa_many(&[&text], "en-us", &pinned.phonemes).unwrap();
        assert!(ipa[0].contains(" ˈkoʊkəɹoʊ "), "{ipa:?}");
        // A pin the text does not hold says nothing (never another pin's phonemes).
        let ph = phonemize_many(&["a \u{E005} b"], "en-us", &pinned.phonemes).unwrap();
        assert_eq!(ph[0], "ˈA bˈi");
    }

    #[test]
    fn callers_ipa_becomes_kokoros_symbols() {
        assert_eq!(caller_ipa("ˈtʃaɪ lˈæt͡ʃeɪ", "en-us"), "ʧˈI lˈæʧA");
        assert_eq!(caller_ipa("'gɑ:ɹdən", "en-us"), "ɡˈɑɹdən");
        assert_eq!(caller_ipa("ˌʌndərˈstænd", "en-us"), "ˌʌndəɹstˈænd");
        assert_eq!(caller_ipa("təmˈɑːtəʊ", "en-gb"), "təmˈɑːtQ");
        assert_eq!(unspeakable("kˈOkəɹO", "en-us"), None);
        assert!(unspeakable("k☃", "en-us").unwrap().contains("U+2603"));
    }

    #[test]
    fn espeak_ninety_is_flapped_in_american_only() {
        assert_eq!(phonemize("ninety", "en-us").unwrap(), "nˈIndi");
        assert_eq!(phonemize("ninety", "en-gb").unwrap(), "nˈInti");
    }

    #[test]
    fn every_profile_language_phonemizes_into_kokoro_symbols() {
        // Kokoro v1.0's symbols (vocab.json) besides ASCII letters and punctuation.
        let kokoro =
            "AIOQSTWYæçðøŋœɐɑɒɔɕɖəɚɛɜɟɡɣɤɥɨɪɯɰɲɳɴɸɹɻɽɾʁʂʃʈʊʋʌʎʒʔʝʣʤʥʦʧʨʰʲˈˌː\u{303}βθχᵊᵝᵻ→↓↗↘";
        for (language, preset, text) in [
            ("en-us", "af_heart", "The weather is lovely today."),
            ("en-gb", "bf_emma", "The weather is lovely today."),
            ("es", "ef_dora", "Hoy hace muy buen tiempo."),
            ("fr", "ff_siwis", "Il fait très beau aujourd'hui."),
            ("hi", "hf_alpha", "नमस्ते, आप कैसे हैं?"),
            ("it", "if_sara", "Oggi il tempo è molto bello."),
            ("pt-br", "pf_dora", "O tempo está muito bonito hoje."),
            ("zh", "zf_xiaoxiao", "ni3 hao3, wo3 shi4 xue2sheng1"),
            ("ja", "jf_alpha", "こんにちは"),
        ] {
            let voice = espeak_voice(language, preset).unwrap();
            let ph = phonemize(text, &voice).unwrap();
            assert!(
                ph.chars().filter(|c| c.is_alphabetic()).count() > 3,
                "{language}: {ph:?}"
            );
            for c in ph.chars() {
                assert!(
                    c.is_ascii_alphabetic() || " !\"(),.:;?—“”…".contains(c) || kokoro.contains(c),
                    "{language}: {c:?} of {ph:?} is not a Kokoro symbol"
                );
            }
        }
    }

    #[test]
    fn espeak_rejects_kanji_and_unknown_voice() {
        assert!(matches!(
            phonemize("日本", "ja"),
            Err(EngineError::InvalidInput(_))
        ));
        assert!(matches!(
            phonemize("hello", "xx"),
            Err(EngineError::InvalidInput(_))
        ));
        assert!(!phonemize("こんにちは", "ja").unwrap().is_empty());
    }
}
