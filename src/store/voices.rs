use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::keys::Checked;
use crate::domain::{EngineId, VoiceKind};

/// Serialisable: an idempotency record holds the profile as it was added (its replay answers
/// with that, whatever happened to the profile since).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct VoiceRow {
    pub id: String,
    pub name: String,
    pub description: String,
    pub language: String,
    pub voice_type: VoiceKind,
    pub engine: EngineId,
    pub preset: Option<String>,
    pub pinned_seed: Option<i64>,
    pub pinned_temperature: Option<f32>,
    pub has_personality: bool,
    pub generation_count: i64,
    pub sample_count: i32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub async fn list(pool: &PgPool, account_id: &str) -> sqlx::Result<Vec<VoiceRow>> {
    sqlx::query_as!(
        VoiceRow,
        r#"SELECT id, name, description, language, voice_type AS "voice_type: VoiceKind",
                  engine AS "engine: EngineId", preset, pinned_seed, pinned_temperature,
                  personality_prompt IS NOT NULL AS "has_personality!", generation_count,
                  sample_count, created_at, updated_at
           FROM voice_profiles WHERE account_id = $1 AND deleted_at IS NULL ORDER BY created_at, id"#,
        account_id
    )
    .fetch_all(pool)
    .await
}

/// [`list`] for an API read: in the same statement, the fingerprint of the credential that
/// asks (`credential_fingerprints`, migration 0006), so that one round trip both checks the
/// credential and reads.
pub async fn list_checked(
    connection: &mut sqlx::PgConnection,
    credential_sha256: &[u8],
    account_id: &str,
) -> sqlx::Result<Checked<Vec<VoiceRow>>> {
    let rows = sqlx::query!(
        r#"SELECT f.fingerprint AS "fingerprint!", v.id AS "id?", v.name AS "name?",
                  v.description AS "description?", v.language AS "language?",
                  v.voice_type AS "voice_type?: VoiceKind", v.engine AS "engine?: EngineId",
                  v.preset AS "preset?",
                  v.pinned_seed AS "pinned_seed?", v.pinned_temperature AS "pinned_temperature?",
                  v.personality_prompt IS NOT NULL AS "has_personality?",
                  v.generation_count AS "generation_count?", v.sample_count AS "sample_count?",
                  v.created_at AS "created_at?", v.updated_at AS "updated_at?"
           FROM credential_fingerprints f
           LEFT JOIN voice_profiles v ON v.account_id = $2 AND v.deleted_at IS NULL
           WHERE f.credential_sha256 = $1
           ORDER BY v.created_at, v.id"#,
        credential_sha256,
        account_id
    )
    .fetch_all(connection)
    .await?;
    let fingerprint = rows.first().map(|r| r.fingerprint.clone());
    // A credential with no voices gives one row whose voice columns are all NULL.
    let value = rows
        .into_iter()
        .filter_map(|r| {
            Some(VoiceRow {
                id: r.id?,
                name: r.name?,
                description: r.description?,
                language: r.language?,
                voice_type: r.voice_type?,
                engine: r.engine?,
                preset: r.preset,
                pinned_seed: r.pinned_seed,
                pinned_temperature: r.pinned_temperature,
                has_personality: r.has_personality?,
                generation_count: r.generation_count?,
                sample_count: r.sample_count?,
                created_at: r.created_at?,
                updated_at: r.updated_at?,
            })
        })
        .collect();
    Ok(Checked { fingerprint, value })
}

/// The account's voice whose id or name is `id_or_name` (ids first: they cannot collide with a
/// name of another voice because ids carry the `voice_` prefix and are unique).
pub async fn find(
    db: impl sqlx::PgExecutor<'_>,
    account_id: &str,
    id_or_name: &str,
) -> sqlx::Result<Option<VoiceRow>> {
    sqlx::query_as!(
        VoiceRow,
        r#"SELECT id, name, description, language, voice_type AS "voice_type: VoiceKind",
                  engine AS "engine: EngineId", preset, pinned_seed, pinned_temperature,
                  personality_prompt IS NOT NULL AS "has_personality!", generation_count,
                  sample_count, created_at, updated_at
           FROM voice_profiles WHERE account_id = $1 AND (id = $2 OR name = $2) AND deleted_at IS NULL
           ORDER BY (id = $2) DESC LIMIT 1"#,
        account_id,
        id_or_name
    )
    .fetch_optional(db)
    .await
}

pub struct NewVoice<'a> {
    pub id: &'a str,
    pub account_id: &'a str,
    pub name: &'a str,
    pub description: &'a str,
    pub language: &'a str,
    pub engine: &'a str,
    pub preset: &'a str,
    pub pinned_seed: Option<i64>,
    pub pinned_temperature: Option<f32>,
    pub personality_prompt: Option<&'a str>,
}

/// Inserts a preset voice. A duplicate name in the account violates `voice_profiles_account_name`.
pub async fn insert_preset(db: impl sqlx::PgExecutor<'_>, voice: NewVoice<'_>) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO voice_profiles (id, account_id, name, description, language, voice_type,
                                     engine, preset, pinned_seed, pinned_temperature,
                                     personality_prompt)
         VALUES ($1, $2, $3, $4, $5, 'preset', $6, $7, $8, $9, $10)",
        voice.id,
        voice.account_id,
        voice.name,
        voice.description,
        voice.language,
        voice.engine,
        voice.preset,
        voice.pinned_seed,
        voice.pinned_temperature,
        voice.personality_prompt
    )
    .execute(db)
    .await?;
    Ok(())
}

/// Sets the voice's pinned seed and temperature and its personality prompt (`None` clears
/// each); `false` when the account has no such voice.
pub async fn set_pins(
    pool: &PgPool,
    account_id: &str,
    id: &str,
    pinned_seed: Option<i64>,
    pinned_temperature: Option<f32>,
    personality_prompt: Option<&str>,
) -> sqlx::Result<bool> {
    let result = sqlx::query!(
        "UPDATE voice_profiles SET pinned_seed = $3, pinned_temperature = $4,
                personality_prompt = $5, updated_at = now()
         WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL",
        id,
        account_id,
        pinned_seed,
        pinned_temperature,
        personality_prompt
    )
    .execute(pool)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// The personality prompts of the account's voices that have one.
pub struct Personality {
    pub id: String,
    pub prompt: String,
}

pub async fn personalities(pool: &PgPool, account_id: &str) -> sqlx::Result<Vec<Personality>> {
    sqlx::query_as!(
        Personality,
        r#"SELECT id, personality_prompt AS "prompt!" FROM voice_profiles
           WHERE account_id = $1 AND personality_prompt IS NOT NULL"#,
        account_id
    )
    .fetch_all(pool)
    .await
}

/// A cloned voice profile: no preset; `sample_count` reference clips.
pub struct NewClonedVoice<'a> {
    pub id: &'a str,
    pub account_id: &'a str,
    pub name: &'a str,
    pub description: &'a str,
    pub language: &'a str,
    pub engine: &'a str,
    pub sample_count: i32,
}

/// Inserts a cloned voice. A duplicate name in the account violates `voice_profiles_account_name`.
pub async fn insert_cloned(
    db: impl sqlx::PgExecutor<'_>,
    voice: NewClonedVoice<'_>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO voice_profiles (id, account_id, name, description, language, voice_type,
                                     engine, sample_count)
         VALUES ($1, $2, $3, $4, $5, 'cloned', $6, $7)",
        voice.id,
        voice.account_id,
        voice.name,
        voice.description,
        voice.language,
        voice.engine,
        voice.sample_count
    )
    .execute(db)
    .await?;
    Ok(())
}

/// What decides whether an account may clone another voice.
pub struct CloningStanding {
    pub plan: String,
    pub features: Vec<String>,
    /// Cloned voice profiles the account has.
    pub cloned: i64,
    /// Cloned voice profiles the account made since the month's start, deleted ones included.
    pub cloned_this_month: i64,
}

/// The account's [`CloningStanding`] (`None`: no such account). The account row is locked
/// (`FOR NO KEY UPDATE`, which does not block the account's generations) until the caller's
/// transaction ends, and the count is read after the lock is held (its own statement, so a
/// fresh snapshot): two clones of one account count each other.
pub async fn cloning_standing(
    db: &mut sqlx::PgConnection,
    account_id: &str,
    month_start: chrono::DateTime<chrono::Utc>,
) -> sqlx::Result<Option<CloningStanding>> {
    let Some(account) = sqlx::query!(
        "SELECT plan, features FROM accounts WHERE id = $1 FOR NO KEY UPDATE",
        account_id
    )
    .fetch_optional(&mut *db)
    .await?
    else {
        return Ok(None);
    };
    let counts = sqlx::query!(
        r#"SELECT count(*) FILTER (WHERE deleted_at IS NULL) AS "cloned!",
                  count(*) FILTER (WHERE created_at >= $2) AS "this_month!"
           FROM voice_profiles
           WHERE account_id = $1 AND voice_type = 'cloned'"#,
        account_id,
        month_start
    )
    .fetch_one(&mut *db)
    .await?;
    Ok(Some(CloningStanding {
        plan: account.plan,
        features: account.features,
        cloned: counts.cloned,
        cloned_this_month: counts.this_month,
    }))
}

/// Deletes the account's voice `id` (issue 30 item 4), in the caller's transaction: the profile
/// is marked deleted (its row stays, since its generations reference it, without description
/// or personality prompt, and its name is free again), its recordings and voice print are
/// deleted. Returns the ids of its generations still waiting or running, for the caller to
/// cancel once committed; `None` when the account has no such (live) voice.
pub async fn delete(
    tx: &mut sqlx::PgConnection,
    account_id: &str,
    id: &str,
) -> sqlx::Result<Option<Vec<String>>> {
    let deleted = sqlx::query_scalar!(
        "UPDATE voice_profiles
         SET deleted_at = now(), description = '', personality_prompt = NULL, sample_count = 0,
             updated_at = now()
         WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL
         RETURNING id",
        id,
        account_id
    )
    .fetch_optional(&mut *tx)
    .await?;
    if deleted.is_none() {
        return Ok(None);
    }
    sqlx::query!("DELETE FROM voice_samples WHERE voice_id = $1", id)
        .execute(&mut *tx)
        .await?;
    sqlx::query!("DELETE FROM voice_prints WHERE voice_id = $1", id)
        .execute(&mut *tx)
        .await?;
    let pending = sqlx::query_scalar!(
        "SELECT id FROM generations WHERE voice_id = $1 AND status = 'generating'",
        id
    )
    .fetch_all(&mut *tx)
    .await?;
    Ok(Some(pending))
}
