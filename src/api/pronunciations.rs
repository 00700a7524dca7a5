//! `GET /v1/pronunciations`, `POST /v1/pronunciations` and `DELETE /v1/pronunciations/{id}`: the
//! account's pronunciation rules. The rules about them are the core's
//! (`service::pronunciations`); every generation of the account applies them.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::{Extension, Json};
use serde::Deserialize;
use utoipa::ToSchema;

use super::docs;
use crate::domain::GenerationId;
use crate::http::auth::Principal;
use crate::http::error::ApiError;
use crate::http::idempotency;
use crate::http::json::{Field, JsonObject};
use crate::http::models::{Problem, Pronunciation, PronunciationList};
use crate::service::Core;
use crate::service::idempotency::{KeyUse, Keyed};
use crate::service::principal_cache::CredentialCheck;
use crate::service::pronunciations::{self as service, NewRule};
use crate::service::reads;

/// Request body of `POST /v1/pronunciations`: `text` and exactly one of `alias` and `phonemes`.
/// Any other member is refused (400 naming it).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreatePronunciationRequest {
    /// The word or phrase, 1 to 100 characters, matched as whole words.
    #[serde(default)]
    #[schema(value_type = String, required = true, min_length = 1, max_length = 100, example = "Kokoro")]
    text: Field<String>,
    /// Other words to read instead (1 to 200 characters), normalised like the rest of the text.
    #[serde(default)]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 200, example = "koh koh roh")]
    alias: Field<String>,
    /// IPA (1 to 200 characters) given to the phonemiser instead (kokoro and luxtts voices;
    /// the other engines say the text as written).
    #[serde(default)]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 200, example = "ˈkoʊkəɹoʊ")]
    phonemes: Field<String>,
    /// Only voices of this language (ISO 639-1, optionally with a region; `en` covers `en-gb`).
    /// Omitted: every language.
    #[serde(default)]
    #[schema(value_type = Option<String>, example = "en")]
    language: Field<String>,
    /// Match the text's case exactly. Default false.
    #[serde(default)]
    #[schema(value_type = Option<bool>, example = false)]
    case_sensitive: Field<bool>,
}

/// Lists the account's pronunciation rules, newest first.
#[utoipa::path(get, path = "/v1/pronunciations", tag = "speech",
    security(("api_key" = []), ("bearer" = [])),
    responses(
        (status = 200, description = "The account's pronunciation rules", body = PronunciationList),
        docs::Read,
    ))]
pub async fn list_pronunciations(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    Extension(check): Extension<Arc<CredentialCheck>>,
) -> Result<Json<PronunciationList>, ApiError> {
    reads::confirm_credential(&state, &check).await?;
    let rows = service::list(&state, &principal).await?;
    Ok(Json(PronunciationList {
        total: rows.len() as i64,
        data: rows.into_iter().map(Into::into).collect(),
    }))
}

/// Adds a pronunciation rule: every later generation of the account reads each whole-word
/// occurrence of `text` as the rule says.
#[utoipa::path(post, path = "/v1/pronunciations", tag = "speech",
    security(("api_key" = []), ("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, max_length = 255,
        description = "Same key and body within 48 h returns the first answer without adding again")),
    request_body(content = CreatePronunciationRequest, content_type = "application/json"),
    responses(
        (status = 201, description = "The rule", body = Pronunciation),
        (status = 400, description = "`invalid_request` (`param` names the member: a text or alias out of bounds, both or neither of alias and phonemes, phonemes with symbols the voices do not know, a bad language), or the account already has 500 rules", body = Problem, content_type = "application/problem+json"),
        docs::Write, docs::IdempotentJson,
    ))]
pub async fn create_pronunciation(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    headers: HeaderMap,
    body: JsonObject,
) -> Result<Response, ApiError> {
    let key = idempotency::key_from(&headers)?;
    let value = body.value();
    let body: CreatePronunciationRequest = body.decode()?;
    let text = body.text.required("text")?;
    let alias = optional_string(body.alias, "alias")?;
    let phonemes = optional_string(body.phonemes, "phonemes")?;
    let language = body.language.optional_str("language")?;
    let case_sensitive = body
        .case_sensitive
        .optional(|| ApiError::invalid("case_sensitive", "case_sensitive must be true or false"))?
        .unwrap_or(false);
    let rule = NewRule {
        text: &text,
        alias: alias.as_deref(),
        phonemes: phonemes.as_deref(),
        language: &language,
        case_sensitive,
    };
    let keyed = Keyed::json(KeyUse::AddPronunciation, key, &value);
    let (row, replayed) = service::create(&state, &principal, rule, keyed).await?;
    Ok(idempotency::json_answer(
        StatusCode::CREATED,
        &[],
        &Pronunciation::from(row),
        replayed,
    ))
}

fn optional_string(field: Field<String>, name: &str) -> Result<Option<String>, ApiError> {
    field.optional(|| ApiError::invalid(name, format!("{name} must be a string")))
}

/// Deletes a pronunciation rule; generations already asked for keep it.
#[utoipa::path(delete, path = "/v1/pronunciations/{pronunciationId}", tag = "speech",
    security(("api_key" = []), ("bearer" = [])),
    params(("pronunciationId" = String, Path, min_length = 1, max_length = 200, description = "The rule's id (`pron_…`)")),
    responses(
        (status = 204, description = "Deleted"),
        docs::Write, docs::BadId, docs::NoSuchRule,
    ))]
pub async fn delete_pronunciation(
    State(state): State<Core>,
    Extension(principal): Extension<Arc<Principal>>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    GenerationId::parse(&id, "pronunciationId")
        .map_err(|message| ApiError::invalid("pronunciationId", message))?;
    service::delete(&state, &principal, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
