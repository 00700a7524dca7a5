//! Signed, short-lived audio links: `sig` = `<expiry unix seconds>.<HMAC-SHA256(id, expiry)>`
//! (base64url). Verification is constant-time (`hmac`'s `verify_slice`).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use rand::RngCore;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use sha2::Sha256;

/// How long an `audio_url` stays valid (spec: about 15 minutes).
pub const LINK_LIFETIME_SECS: i64 = 15 * 60;

#[derive(Clone)]
pub struct AudioSigner {
    /// Shared: the application state (which holds a signer) is cloned for every request.
    secret: std::sync::Arc<[u8]>,
}

impl std::fmt::Debug for AudioSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AudioSigner(…)")
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum SignatureError {
    Malformed,
    Expired,
    Mismatch,
}

impl AudioSigner {
    pub fn new(secret: impl Into<Vec<u8>>) -> Self {
        Self {
            secret: secret.into().into(),
        }
    }

    /// A 256-bit key for `purpose`, derived from the signing secret (HMAC-SHA256 of the purpose
    /// under the secret): one secret to configure and share between processes, and no key used
    /// for two purposes (the console's CSRF tokens and its one-time key flash use these).
    pub fn derive_key(&self, purpose: &str) -> [u8; 32] {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret).expect("HMAC takes any key");
        mac.update(b"voiced derived key\n");
        mac.update(purpose.as_bytes());
        mac.finalize().into_bytes().into()
    }

    fn mac(&self, generation_id: &str, expires: i64) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret).expect("HMAC takes any key");
        mac.update(generation_id.as_bytes());
        mac.update(b"\n");
        mac.update(expires.to_string().as_bytes());
        mac
    }

    /// A signature valid until `now + LINK_LIFETIME_SECS`.
    pub fn sign(&self, generation_id: &str, now_unix: i64) -> String {
        let expires = now_unix + LINK_LIFETIME_SECS;
        let tag = self.mac(generation_id, expires).finalize().into_bytes();
        format!("{expires}.{}", URL_SAFE_NO_PAD.encode(tag))
    }

    /// Checks the signature; `Ok` holds the link's expiry (unix seconds).
    pub fn verify(
        &self,
        generation_id: &str,
        sig: &str,
        now_unix: i64,
    ) -> Result<i64, SignatureError> {
        let (expires, tag) = sig.split_once('.').ok_or(SignatureError::Malformed)?;
        let expires: i64 = expires.parse().map_err(|_| SignatureError::Malformed)?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag)
            .map_err(|_| SignatureError::Malformed)?;
        self.mac(generation_id, expires)
            .verify_slice(&tag)
            .map_err(|_| SignatureError::Mismatch)?;
        if now_unix > expires {
            return Err(SignatureError::Expired);
        }
        Ok(expires)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sign_verify_tamper_expire() {
        let signer = AudioSigner::new(b"0123456789abcdef0123456789abcdef".to_vec());
        let sig = signer.sign("gen_1", 1_000);
        assert_eq!(
            signer.verify("gen_1", &sig, 1_000),
            Ok(1_000 + LINK_LIFETIME_SECS)
        );
        assert_eq!(
            signer.verify("gen_1", &sig, 1_000 + LINK_LIFETIME_SECS),
            Ok(1_000 + LINK_LIFETIME_SECS)
        );
        assert_eq!(
            signer.verify("gen_1", &sig, 1_001 + LINK_LIFETIME_SECS),
            Err(SignatureError::Expired)
        );
        assert_eq!(
            signer.verify("gen_2", &sig, 1_000),
            Err(SignatureError::Mismatch)
        );
        // Pushing the expiry forward breaks the MAC.
        let (_, tag) = sig.split_once('.').unwrap();
        let forged = format!("{}.{tag}", 1_000 + 10 * LINK_LIFETIME_SECS);
        assert_eq!(
            signer.verify("gen_1", &forged, 1_000),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            signer.verify("gen_1", "garbage", 1_000),
            Err(SignatureError::Malformed)
        );
        let other = AudioSigner::new(b"another secret another secret 12".to_vec());
        assert_eq!(
            other.verify("gen_1", &sig, 1_000),
            Err(SignatureError::Mismatch)
        );
    }
}

/// Seals and opens webhook endpoint secrets (AES-256-GCM under a key derived from the signing
/// secret, the endpoint id as associated data): the endpoint rules seal, the delivery worker
/// opens.
#[derive(Clone)]
pub struct Sealer(std::sync::Arc<LessSafeKey>);

impl Sealer {
    pub fn new(signer: &AudioSigner) -> Self {
        let key = signer.derive_key("webhook endpoint secrets");
        Self(std::sync::Arc::new(LessSafeKey::new(
            UnboundKey::new(&AES_256_GCM, &key).expect("a 256-bit key"),
        )))
    }

    pub fn seal(&self, endpoint_id: &str, secret: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rng().fill_bytes(&mut nonce);
        let mut data = secret.to_vec();
        self.0
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(endpoint_id.as_bytes()),
                &mut data,
            )
            .expect("sealing a short secret");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        out
    }

    pub fn open(&self, endpoint_id: &str, sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < NONCE_LEN {
            return None;
        }
        let (nonce, data) = sealed.split_at(NONCE_LEN);
        let mut data = data.to_vec();
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let plain = self
            .0
            .open_in_place(nonce, Aad::from(endpoint_id.as_bytes()), &mut data)
            .ok()?;
        Some(plain.to_vec())
    }
}
