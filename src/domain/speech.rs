//! Values of the speech endpoints, validated from raw JSON so that a string "7" or 1.5 is
//! refused rather than coerced.

use serde_json::Value;

/// Largest seed: 2^53 − 1, the largest integer every JSON client represents exactly.
pub const MAX_SEED: u64 = (1 << 53) - 1;
/// Longest `text` / `input`, in characters after trimming.
pub const MAX_TEXT_CHARS: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seed(u64);

impl Seed {
    /// The refusal of anything but an integer from 0 to [`MAX_SEED`].
    pub const REFUSAL: &'static str = "seed must be an integer from 0 to 9007199254740991";

    pub fn new(value: u64) -> Result<Self, String> {
        if value > MAX_SEED {
            return Err(Self::REFUSAL.into());
        }
        Ok(Self(value))
    }

    pub fn from_json(value: &Value) -> Result<Self, String> {
        match value.as_u64() {
            Some(n) if value.is_u64() => Self::new(n),
            _ => Err(Self::REFUSAL.into()),
        }
    }

    /// A random seed, for when neither the request nor the voice pins one.
    pub fn random() -> Self {
        Self(rand::random::<u64>() & MAX_SEED)
    }

    pub fn get(self) -> u64 {
        self.0
    }

    /// PostgreSQL stores it as BIGINT; always in range because of MAX_SEED.
    pub fn as_i64(self) -> i64 {
        self.0 as i64
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Temperature(f32);

impl Temperature {
    pub const MIN: f64 = 0.05;
    pub const MAX: f64 = 2.0;
    /// The refusal of anything but a number from [`Self::MIN`] to [`Self::MAX`].
    pub const REFUSAL: &'static str = "temperature must be a number from 0.05 to 2";

    pub fn new(value: f64) -> Result<Self, String> {
        if !(Self::MIN..=Self::MAX).contains(&value) {
            return Err(Self::REFUSAL.into());
        }
        Ok(Self(value as f32))
    }

    pub fn from_json(value: &Value) -> Result<Self, String> {
        match value.as_f64() {
            Some(n) => Self::new(n),
            None => Err(Self::REFUSAL.into()),
        }
    }

    pub fn get(self) -> f32 {
        self.0
    }
}

/// Text to speak: 1 to 10 000 characters after trimming. Errors leave the field's name to the
/// caller (`text` on one endpoint, `input` on the other).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeechText(String);

impl SpeechText {
    pub fn new(raw: &str) -> Result<Self, String> {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err("must not be empty".into());
        }
        if trimmed.chars().count() > MAX_TEXT_CHARS {
            return Err(format!("must be at most {MAX_TEXT_CHARS} characters"));
        }
        // Nothing speaks a NUL, and PostgreSQL text cannot hold one (it was a 500).
        if trimmed.contains('\0') {
            return Err("must not contain NUL characters".into());
        }
        Ok(Self(trimmed.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn speech_text_refuses_nul() {
        assert_eq!(
            SpeechText::new("a\u{0}b").unwrap_err(),
            "must not contain NUL characters"
        );
        assert_eq!(SpeechText::new("  a b ").unwrap().as_str(), "a b");
    }

    #[test]
    fn seeds() {
        assert_eq!(Seed::from_json(&json!(0)).unwrap().get(), 0);
        assert_eq!(Seed::from_json(&json!(MAX_SEED)).unwrap().get(), MAX_SEED);
        for bad in [
            json!(-1),
            json!(1.5),
            json!("7"),
            json!(MAX_SEED + 1),
            json!(null),
        ] {
            assert!(Seed::from_json(&bad).is_err(), "{bad}");
        }
        assert!(Seed::random().get() <= MAX_SEED);
        assert_eq!(
            Seed::REFUSAL,
            format!("seed must be an integer from 0 to {MAX_SEED}")
        );
    }

    #[test]
    fn temperatures() {
        assert!(Temperature::from_json(&json!(0.05)).is_ok());
        assert!(Temperature::from_json(&json!(2)).is_ok());
        for bad in [json!(0.01), json!(2.5), json!("hot"), json!(null)] {
            assert!(Temperature::from_json(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn texts() {
        assert_eq!(SpeechText::new("  hi ").unwrap().as_str(), "hi");
        assert!(SpeechText::new("   ").is_err());
        assert!(SpeechText::new(&"a".repeat(MAX_TEXT_CHARS)).is_ok());
        assert!(SpeechText::new(&"a".repeat(MAX_TEXT_CHARS + 1)).is_err());
        // Characters, not bytes.
        assert!(SpeechText::new(&"é".repeat(MAX_TEXT_CHARS)).is_ok());
    }
}
