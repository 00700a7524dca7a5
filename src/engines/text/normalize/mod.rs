//! Text written out as the words a careful reader says, before phonemizing: espeak-ng reads
//! "$3.50" as "dollar three point five zero", "Dr." as "drive", and saturates long numbers, so
//! numbers, dates, times, currency, units, addresses and symbols become words first, as misaki
//! does for Kokoro. The rules, one per category, are in docs/speech-text.md; the tables under
//! `cases/` (input → spoken words) are their tests.
//!
//! Runs before the text is split into sentences, so that an abbreviation's full stop is not
//! taken for the end of one. Whatever the text, the words are a faithful reading of it: a form
//! no rule knows is left as written, never read as a different value.

pub mod english;
mod romance;

#[cfg(test)]
mod tests;

pub use self::english::{cardinal, english, ordinal, year};

/// `text` normalised for an espeak-ng voice (`phonemize::espeak_voice`): English in its two
/// dialects, Spanish, French, Italian and Portuguese; other languages as written.
pub fn for_voice(text: &str, voice: &str) -> String {
    match voice {
        "en-gb" => english::normalize(text, english::Dialect { gb: true }),
        v if v.starts_with("en") => english::normalize(text, english::Dialect { gb: false }),
        "es" => romance::normalize(text, romance::Language::Spanish),
        "fr-fr" | "fr" => romance::normalize(text, romance::Language::French),
        "it" => romance::normalize(text, romance::Language::Italian),
        "pt" => romance::normalize(text, romance::Language::Portuguese),
        "pt-br" => romance::normalize(text, romance::Language::Brazilian),
        _ => text.to_owned(),
    }
}
