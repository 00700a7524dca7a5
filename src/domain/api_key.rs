use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Every key starts with this, so that secret scanners and people recognise it.
pub const KEY_PREFIX: &str = "vk_";
/// How many leading characters of a key are stored to recognise it in lists.
const STORED_PREFIX_CHARS: usize = 12;

/// A freshly generated key secret. Shown once; only its hash and prefix are stored.
pub struct ApiKeySecret(String);

impl ApiKeySecret {
    /// `vk_` followed by 32 random bytes in base64url (43 characters).
    pub fn generate() -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        Self(format!("{KEY_PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes)))
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn prefix(&self) -> String {
        self.0.chars().take(STORED_PREFIX_CHARS).collect()
    }

    pub fn hash(&self) -> SecretHash {
        SecretHash::of(&self.0)
    }
}

/// SHA-256 of a presented credential. A plain hash is enough: the secret has 256 bits of entropy,
/// so there is nothing to brute-force, and it costs microseconds on the request path.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretHash(pub [u8; 32]);

impl SecretHash {
    pub fn of(presented: &str) -> Self {
        Self(Sha256::digest(presented.as_bytes()).into())
    }

    /// Constant-time comparison with a stored hash.
    pub fn matches(&self, stored: &[u8]) -> bool {
        stored.len() == 32 && bool::from(self.0.as_slice().ct_eq(stored))
    }
}

impl std::fmt::Debug for SecretHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretHash(…)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_have_prefix_entropy_and_stable_hash() {
        let a = ApiKeySecret::generate();
        let b = ApiKeySecret::generate();
        assert!(a.expose().starts_with("vk_"));
        assert_eq!(a.expose().len(), 3 + 43);
        assert_ne!(a.expose(), b.expose());
        assert_eq!(a.prefix().len(), 12);
        assert!(a.hash().matches(&SecretHash::of(a.expose()).0));
        assert!(!a.hash().matches(&b.hash().0));
        assert!(!a.hash().matches(&[0u8; 5]));
    }
}
