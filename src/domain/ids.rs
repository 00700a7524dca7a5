/// A new resource id: a short type prefix and a time-ordered UUIDv7, e.g. `gen_0192…`.
/// Prefixes make ids self-describing in logs and support tickets.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", uuid::Uuid::now_v7().simple())
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_prefixed_and_unique() {
        let a = super::new_id("gen");
        let b = super::new_id("gen");
        assert!(a.starts_with("gen_") && a.len() == 36, "{a}");
        assert_ne!(a, b);
    }
}
