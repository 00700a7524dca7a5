//! Whether a voice's language can read a text at all, decided before the text is queued (so that
//! a request the engine could never speak is a 400 naming the field, not a failed generation).
//!
//! espeak-ng reads Latin letters in every language; besides them a language reads its own
//! script. Japanese reads kana but not kanji, and Mandarin reads pinyin but not hanzi (espeak-ng
//! has no reading of ideographs). Digits, punctuation, symbols and emoji are not letters: they
//! are skipped, but a text made only of them has nothing to pronounce.

/// `Err` with a message for the client when `text` cannot be spoken in `language` (ISO 639-1,
/// optionally with a region).
pub fn check(language: &str, text: &str) -> Result<(), String> {
    let primary = language
        .split(['-', '_'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut speakable = false;
    for c in text.chars() {
        if c.is_numeric() {
            speakable = true;
            continue;
        }
        if !c.is_alphabetic() {
            continue;
        }
        if is_latin(c) || native_script(&primary, c) {
            speakable = true;
            continue;
        }
        let hint = match primary.as_str() {
            "ja" if is_ideograph(c) => " (kanji cannot be read; write the text in kana)",
            "zh" if is_ideograph(c) => " (hanzi cannot be read; write the text in pinyin)",
            _ => "",
        };
        return Err(format!(
            "This voice's language ({language}) cannot read these characters: {c:?}{hint}."
        ));
    }
    if speakable {
        Ok(())
    } else {
        Err("The text has nothing to pronounce (no letters or digits).".into())
    }
}

fn is_latin(c: char) -> bool {
    c.is_ascii_alphabetic()
        || matches!(c,
            '\u{00C0}'..='\u{024F}'   // Latin-1 Supplement letters, Latin Extended-A/B
            | '\u{1E00}'..='\u{1EFF}' // Latin Extended Additional (Vietnamese…)
            | 'ª' | 'º')
}

fn is_ideograph(c: char) -> bool {
    matches!(c, '\u{3400}'..='\u{4DBF}' | '\u{4E00}'..='\u{9FFF}' | '\u{F900}'..='\u{FAFF}')
}

/// The language's own script, where it has one that espeak-ng reads.
fn native_script(language: &str, c: char) -> bool {
    match language {
        "ja" => {
            matches!(c, '\u{3040}'..='\u{30FF}' | '\u{31F0}'..='\u{31FF}' | '\u{FF66}'..='\u{FF9D}')
        }
        "hi" | "mr" | "ne" => matches!(c, '\u{0900}'..='\u{097F}'),
        "ru" | "uk" | "bg" | "sr" | "mk" | "be" => matches!(c, '\u{0400}'..='\u{04FF}'),
        "el" => matches!(c, '\u{0370}'..='\u{03FF}' | '\u{1F00}'..='\u{1FFF}'),
        "ar" | "fa" | "ur" => matches!(c, '\u{0600}'..='\u{06FF}'),
        "he" => matches!(c, '\u{0590}'..='\u{05FF}'),
        "ko" => {
            matches!(c, '\u{AC00}'..='\u{D7AF}' | '\u{1100}'..='\u{11FF}' | '\u{3130}'..='\u{318F}')
        }
        "th" => matches!(c, '\u{0E00}'..='\u{0E7F}'),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::check;

    #[test]
    fn each_language_reads_latin_and_its_own_script() {
        assert!(check("en", "Hello, world!").is_ok());
        assert!(check("fr", "Ça coûte 3 €.").is_ok());
        assert!(check("ja", "こんにちは、カタカナ").is_ok());
        assert!(check("ja", "Hello").is_ok());
        assert!(check("hi", "नमस्ते").is_ok());
        assert!(check("en", "2026").is_ok());
        assert!(check("en", "I ❤ it 😀").is_ok());
    }

    #[test]
    fn unreadable_text_is_refused_with_the_reason() {
        let err = check("en", "Привет").unwrap_err();
        assert!(err.contains("(en)") && err.contains('П'), "{err}");
        let err = check("ja", "日本語").unwrap_err();
        assert!(err.contains("kana"), "{err}");
        let err = check("zh", "你好").unwrap_err();
        assert!(err.contains("pinyin"), "{err}");
        let err = check("en", "😀🎉 !!").unwrap_err();
        assert!(err.contains("nothing to pronounce"), "{err}");
        assert!(check("en-gb", "שלום").is_err());
    }
}
