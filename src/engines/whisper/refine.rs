//! The recogniser's raw text cleaned for reading: whitespace collapsed, filler words dropped,
//! sentences capitalised, no space before punctuation. Never adds or reorders words.

/// Hesitation sounds, matched case-insensitively, elongations included ("ummm", "hmmm").
fn is_filler(word: &str) -> bool {
    let w = word.to_lowercase();
    let squeezed: String = {
        let mut s = String::new();
        for c in w.chars() {
            if !s.ends_with(c) {
                s.push(c);
            }
        }
        s
    };
    matches!(squeezed.as_str(), "um" | "uh" | "erm" | "hm")
}

/// Punctuation that belongs to the word before it.
fn is_closing_punctuation(token: &str) -> bool {
    token
        .chars()
        .all(|c| matches!(c, ',' | '.' | ';' | ':' | '!' | '?' | ')' | ']' | '…'))
}

/// Ends a sentence, so the next word starts with a capital letter.
fn ends_sentence(token: &str) -> bool {
    const ABBREVIATIONS: [&str; 8] = ["e.g.", "i.e.", "mr.", "mrs.", "ms.", "dr.", "vs.", "st."];
    let lower = token.to_lowercase();
    token.ends_with(['.', '!', '?'])
        && !token.ends_with("..")
        && !ABBREVIATIONS.contains(&lower.trim_start_matches(['(', '"']))
}

pub fn refine(raw: &str) -> String {
    // Re-attach punctuation that the recogniser spaced off its word.
    let mut tokens: Vec<String> = Vec::new();
    for token in raw.split_whitespace() {
        match tokens.last_mut() {
            Some(last) if is_closing_punctuation(token) => last.push_str(token),
            _ => tokens.push(token.to_owned()),
        }
    }

    let mut kept: Vec<String> = Vec::with_capacity(tokens.len());
    for token in tokens {
        let word = token.trim_end_matches(|c: char| !c.is_alphanumeric());
        if !is_filler(word) {
            kept.push(token);
            continue;
        }
        // A filler ending a sentence ("… it was, um.") hands its full stop to the word before.
        let tail = &token[word.len()..];
        if let Some(stop) = tail.chars().find(|c| matches!(c, '.' | '!' | '?'))
            && let Some(last) = kept.last_mut()
        {
            let bare = last.trim_end_matches([',', ';', ':']).len();
            last.truncate(bare);
            if !last.ends_with(['.', '!', '?']) {
                last.push(stop);
            }
        }
    }

    let mut capitalise = true;
    for token in &mut kept {
        if capitalise && let Some((i, c)) = token.char_indices().find(|(_, c)| c.is_alphabetic()) {
            let upper: String = c.to_uppercase().collect();
            token.replace_range(i..i + c.len_utf8(), &upper);
        }
        capitalise = ends_sentence(token);
    }
    kept.join(" ")
}

#[cfg(test)]
mod tests {
    use super::refine;

    #[test]
    fn collapses_whitespace_and_trims() {
        assert_eq!(refine("  hello \n\t world  "), "Hello world");
        assert_eq!(refine("   "), "");
    }

    #[test]
    fn drops_fillers_with_their_comma() {
        assert_eq!(
            refine("Um, I think, uh, we should go. Hmm, maybe not."),
            "I think, we should go. Maybe not."
        );
        assert_eq!(refine("so UMM yes erm, fine"), "So yes fine");
    }

    #[test]
    fn a_filler_ending_a_sentence_leaves_the_full_stop() {
        assert_eq!(refine("it was, um. then we left"), "It was. Then we left");
    }

    #[test]
    fn keeps_words_that_merely_contain_fillers() {
        assert_eq!(
            refine("the umbrella and the hummus"),
            "The umbrella and the hummus"
        );
    }

    #[test]
    fn capitalises_sentences_but_not_after_abbreviations_or_ellipses() {
        assert_eq!(
            refine("ever tried. ever failed! no matter? try again"),
            "Ever tried. Ever failed! No matter? Try again"
        );
        assert_eq!(refine("wait... what, e.g. this"), "Wait... what, e.g. this");
        assert_eq!(refine("élan vital. über alles"), "Élan vital. Über alles");
    }

    #[test]
    fn removes_space_before_punctuation() {
        assert_eq!(refine("yes , really ! (sure)"), "Yes, really! (Sure)");
    }

    #[test]
    fn never_adds_words() {
        let raw = "so, um, the thing is , uh, we ship on friday . ok ?";
        let refined = refine(raw);
        assert_eq!(refined, "So, the thing is, we ship on friday. Ok?");
        let words = |s: &str| s.split_whitespace().count();
        assert!(words(&refined) <= words(raw));
    }
}
