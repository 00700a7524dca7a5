//! Text as the multilingual model reads it (upstream `mtl_tts.punc_norm` and
//! `MTLTokenizer.encode`): punctuation normalised, lower case, NFKD, Chinese as Cangjie codes,
//! a `[lang]` prefix, spaces as `[SPACE]` tokens.
//!
//! Not reproduced (no package carries what they need): Japanese kanji → hiragana (pykakasi),
//! Hebrew diacritics (dicta) and Russian stress marks; upstream itself passes the text through
//! unchanged when those are missing. Chinese word segmentation (pkuseg) is skipped too: the
//! Cangjie codes follow each other without `[SPACE]` between words.

use std::collections::HashMap;
use std::path::Path;

use unicode_normalization::UnicodeNormalization;

/// The 23 languages of `onnx-community/chatterbox-multilingual-ONNX` (upstream
/// `SUPPORTED_LANGUAGES`).
pub const LANGUAGES: [&str; 23] = [
    "ar", "da", "de", "el", "en", "es", "fi", "fr", "he", "hi", "it", "ja", "ko", "ms", "nl", "no",
    "pl", "pt", "ru", "sv", "sw", "tr", "zh",
];

/// The Cangjie table Chinese needs, from the upstream model repository.
pub const CANGJIE: &str = "Cangjie5_TC.json";

/// The model's language for a profile language (`pt-br` → `pt`), if it speaks it.
pub fn language(profile_language: &str) -> Option<&'static str> {
    let base = profile_language
        .split('-')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    LANGUAGES.iter().copied().find(|l| *l == base)
}

/// Upstream `punc_norm`: the punctuation the model saw in training, and a final full stop.
pub fn normalize_punctuation(text: &str) -> String {
    let mut text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for (from, to) in [
        ("...", ", "),
        ("…", ", "),
        (":", ","),
        (" - ", ", "),
        (";", ", "),
        ("—", "-"),
        ("–", "-"),
        (" ,", ","),
        ("“", "\""),
        ("”", "\""),
        ("‘", "'"),
        ("’", "'"),
    ] {
        text = text.replace(from, to);
    }
    let text = text.trim_end_matches(' ').to_owned();
    let enders = [".", "!", "?", "-", ",", "、", "，", "。", "？", "！"];
    if enders.iter().any(|e| text.ends_with(e)) {
        text
    } else {
        text + "."
    }
}

/// Character → Cangjie code with its homograph index, built as upstream's
/// `ChineseCangjieConverter` does from `Cangjie5_TC.json` (lines "word\tcode…"): a glyph's code
/// is the last line naming it, and its index is its first position among all the words of
/// that code, in file order.
#[derive(Debug, Default)]
pub struct Cangjie(HashMap<char, String>);

impl Cangjie {
    /// Reads the table from `dir`, `None` when it is not there.
    pub fn load(dir: &Path) -> Result<Option<Cangjie>, String> {
        let path = dir.join(CANGJIE);
        if !path.is_file() {
            return Ok(None);
        }
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let entries: Vec<String> = serde_json::from_slice(&bytes)
            .map_err(|e| format!("{}: not a JSON list of strings: {e}", path.display()))?;
        let mut code_of: HashMap<&str, &str> = HashMap::new();
        let mut words_of: HashMap<&str, Vec<&str>> = HashMap::new();
        for entry in &entries {
            let mut fields = entry.split('\t');
            let (Some(word), Some(code)) = (fields.next(), fields.next()) else {
                continue;
            };
            code_of.insert(word, code);
            words_of.entry(code).or_default().push(word);
        }
        let mut table = HashMap::new();
        for (word, code) in code_of {
            let mut chars = word.chars();
            let (Some(glyph), None) = (chars.next(), chars.next()) else {
                continue;
            };
            let index = words_of[code].iter().position(|w| *w == word).unwrap_or(0);
            let suffix = if index > 0 {
                index.to_string()
            } else {
                String::new()
            };
            table.insert(glyph, format!("{code}{suffix}"));
        }
        Ok(Some(Cangjie(table)))
    }

    /// Every Han glyph the table knows as `[cj_x]…[cj_.]`, the rest unchanged.
    fn convert(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() * 4);
        for c in text.chars() {
            match self.0.get(&c).filter(|_| is_han(c)) {
                Some(code) => {
                    for part in code.chars() {
                        out.push_str(&format!("[cj_{part}]"));
                    }
                    out.push_str("[cj_.]");
                }
                None => out.push(c),
            }
        }
        out
    }
}

/// The text of one piece as the tokenizer gets it. `space_token`: the tokenizer has a
/// `[SPACE]` token (the upstream vocabulary does).
pub fn prepare(text: &str, language: &str, cangjie: Option<&Cangjie>, space_token: bool) -> String {
    let text: String = normalize_punctuation(text).to_lowercase().nfkd().collect();
    let text = match (language, cangjie) {
        ("zh", Some(table)) => table.convert(&text),
        _ => text,
    };
    let text = format!("[{language}]{text}");
    if space_token {
        text.replace(' ', "[SPACE]")
    } else {
        text
    }
}

/// Whether `text` has Han characters (which need the Cangjie table).
pub fn has_han(text: &str) -> bool {
    text.chars().any(is_han)
}

/// CJK ideographs (the letters upstream converts, category Lo, that have Cangjie codes).
fn is_han(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_prepared_as_upstream_does() {
        assert_eq!(
            prepare("Hello  there: friend…", "en", None, true),
            "[en]hello[SPACE]there,[SPACE]friend,"
        );
        assert_eq!(
            prepare("¿Qué tal?", "es", None, false),
            "[es]¿que\u{301} tal?"
        );
        // NFKD decomposes Hangul into conjoining jamo, as upstream's korean_normalize does.
        assert_eq!(
            prepare("한", "ko", None, false),
            "[ko]\u{1112}\u{1161}\u{11ab}."
        );
        assert_eq!(language("pt-br"), Some("pt"));
        assert_eq!(language("xx"), None);
    }

    #[test]
    fn chinese_becomes_cangjie_codes_with_their_homograph_index() {
        let dir = std::env::temp_dir().join(format!("voiced-cangjie-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // 日 is listed twice: its last code counts. "日曰" (a word) takes a place in a's list.
        std::fs::write(
            dir.join(CANGJIE),
            r#"["日\tz", "日曰\ta", "日\ta", "曰\ta", "月\tb", "。\tzz"]"#,
        )
        .unwrap();
        let table = Cangjie::load(&dir).unwrap().unwrap();
        assert_eq!(
            prepare("日曰月。", "zh", Some(&table), true),
            "[zh][cj_a][cj_1][cj_.][cj_a][cj_2][cj_.][cj_b][cj_.]。"
        );
        assert!(has_han("日") && !has_han("abc"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
