//! A client's idempotency key (the `Idempotency-Key` header, or a tool's `idempotency_key`).

/// Longest key, in bytes (all ASCII).
pub const MAX_KEY_CHARS: usize = 255;

/// 1 to [`MAX_KEY_CHARS`] visible ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// `None` for a key outside the rule; each door words the refusal for its own field name
    /// with [`IdempotencyKey::refusal`].
    pub fn parse(raw: &str) -> Option<Self> {
        let ok = !raw.is_empty()
            && raw.len() <= MAX_KEY_CHARS
            && raw.bytes().all(|b| b.is_ascii_graphic());
        ok.then(|| Self(raw.to_owned()))
    }

    /// The refusal naming `field` (`Idempotency-Key`, `idempotency_key`).
    pub fn refusal(field: &str) -> String {
        format!("{field} must be 1 to {MAX_KEY_CHARS} visible ASCII characters")
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_visible_ascii() {
        assert!(IdempotencyKey::parse("k").is_some());
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_some());
        assert!(IdempotencyKey::parse(&"k".repeat(256)).is_none());
        assert!(IdempotencyKey::parse("").is_none());
        assert!(IdempotencyKey::parse("a b").is_none());
        assert!(IdempotencyKey::parse("é").is_none());
    }
}
