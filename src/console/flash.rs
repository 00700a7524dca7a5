//! The one-time display of a new key's secret after POST/Redirect/GET.
//!
//! `POST /console/keys` creates the key and answers 303 to `/console/keys`; the secret crosses
//! the redirect in the session record, sealed with AES-256-GCM under a key derived from the
//! signing secret (bound to the account as associated data), never in clear. The next
//! `GET /console/keys` takes it out of the session (the record is saved without it) and shows it
//! once; a reload shows the list alone, and repeats nothing.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use serde::{Deserialize, Serialize};
use tower_sessions::Session;

use super::page::PageError;

const NEW_KEY: &str = "new_key";
/// The slot of a webhook endpoint's new secret (the Webhooks page), apart from the keys page's.
pub const NEW_WEBHOOK_SECRET: &str = "new_webhook_secret";

#[derive(Serialize, Deserialize)]
struct Sealed {
    name: String,
    /// base64url(nonce ‖ ciphertext ‖ tag)
    secret: String,
}

fn cipher(key: &[u8; 32]) -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(&AES_256_GCM, key).expect("a 256-bit key"))
}

fn seal(key: &[u8; 32], account_id: &str, secret: &str) -> String {
    let mut nonce = [0u8; NONCE_LEN];
    rand::rng().fill_bytes(&mut nonce);
    let mut data = secret.as_bytes().to_vec();
    cipher(key)
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(account_id.as_bytes()),
            &mut data,
        )
        .expect("sealing a short secret");
    let mut out = nonce.to_vec();
    out.extend_from_slice(&data);
    URL_SAFE_NO_PAD.encode(out)
}

fn open(key: &[u8; 32], account_id: &str, sealed: &str) -> Option<String> {
    let bytes = URL_SAFE_NO_PAD.decode(sealed).ok()?;
    if bytes.len() < NONCE_LEN {
        return None;
    }
    let (nonce, data) = bytes.split_at(NONCE_LEN);
    let mut data = data.to_vec();
    let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
    let plain = cipher(key)
        .open_in_place(nonce, Aad::from(account_id.as_bytes()), &mut data)
        .ok()?;
    String::from_utf8(plain.to_vec()).ok()
}

/// Keeps `secret` (of the key named `name`) for the next keys page of this session.
pub async fn keep_secret(
    session: &Session,
    key: &[u8; 32],
    account_id: &str,
    name: &str,
    secret: &str,
) -> Result<(), PageError> {
    keep_secret_in(session, NEW_KEY, key, account_id, name, secret).await
}

/// Same, in the session slot `slot` (another page's one-time secret).
pub async fn keep_secret_in(
    session: &Session,
    slot: &str,
    key: &[u8; 32],
    account_id: &str,
    name: &str,
    secret: &str,
) -> Result<(), PageError> {
    let sealed = Sealed {
        name: name.to_owned(),
        secret: seal(key, account_id, secret),
    };
    session
        .insert(slot, sealed)
        .await
        .map_err(PageError::internal)
}

/// The kept secret, removed from the session: `(name, secret)`, at most once.
pub async fn take_secret(
    session: &Session,
    key: &[u8; 32],
    account_id: &str,
) -> Result<Option<(String, String)>, PageError> {
    take_secret_from(session, NEW_KEY, key, account_id).await
}

/// Same, from the session slot `slot`.
pub async fn take_secret_from(
    session: &Session,
    slot: &str,
    key: &[u8; 32],
    account_id: &str,
) -> Result<Option<(String, String)>, PageError> {
    let Some(sealed) = session
        .remove::<Sealed>(slot)
        .await
        .map_err(PageError::internal)?
    else {
        return Ok(None);
    };
    Ok(open(key, account_id, &sealed.secret).map(|secret| (sealed.name, secret)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_secrets_open_only_with_their_key_and_account() {
        let key = [3u8; 32];
        let sealed = seal(&key, "acct_a", "vk_secret");
        assert!(!sealed.contains("vk_secret"));
        assert_eq!(open(&key, "acct_a", &sealed).as_deref(), Some("vk_secret"));
        assert_eq!(open(&key, "acct_b", &sealed), None);
        assert_eq!(open(&[4u8; 32], "acct_a", &sealed), None);
        assert_ne!(
            seal(&key, "acct_a", "vk_secret"),
            sealed,
            "a fresh nonce each time"
        );
        assert_eq!(open(&key, "acct_a", "garbage"), None);
    }
}
