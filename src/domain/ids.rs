/// A new resource id: a short type prefix and a time-ordered UUIDv7, e.g. `gen_0192…`.
/// Prefixes make ids self-describing in logs and support tickets.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}

/// Longest generation id a client may send (spec §8).
pub const MAX_ID_CHARS: usize = 200;

/// A generation id as a client sends it (a path segment, a tool argument): 1 to
/// [`MAX_ID_CHARS`] characters. Longer ones are refused rather than looked up; whether the
/// generation exists is the store's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenerationId(String);

impl GenerationId {
    /// `field` names the id in the refusal (`generationId` in a path, `generation_id` in a
    /// tool's arguments).
    pub fn parse(raw: &str, field: &str) -> Result<Self, String> {
        let chars = raw.chars().count();
        if chars == 0 || chars > MAX_ID_CHARS {
            return Err(format!("{field} must be 1 to {MAX_ID_CHARS} characters"));
        }
        if raw.contains('\0') {
            return Err(format!("{field} has no NUL characters"));
        }
        Ok(Self(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_and_unique() {
        let a = new_id("gen");
        let b = new_id("gen");
        assert!(a.starts_with("gen_") && a.len() == 36, "{a}");
        assert_ne!(a, b);
    }

    #[test]
    fn generation_ids_are_bounded_in_characters() {
        assert!(GenerationId::parse("gen_1", "id").is_ok());
        assert!(GenerationId::parse(&"é".repeat(MAX_ID_CHARS), "id").is_ok());
        assert_eq!(
            GenerationId::parse("", "generationId").unwrap_err(),
            "generationId must be 1 to 200 characters"
        );
        assert!(GenerationId::parse(&"a".repeat(MAX_ID_CHARS + 1), "id").is_err());
    }
}
