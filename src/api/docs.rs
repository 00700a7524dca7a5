//! The refusals each operation documents, declared once here and named in the operations'
//! `responses(...)`: `Read` is "the key is checked, needs `voice:read`, is rate limited, and the
//! database may be unavailable". Each name is a set of (status, description) rows; a problem
//! document (`application/problem+json`) by default, OpenAI's error envelope
//! (`application/json`) through [`OpenAi`] on the OpenAI-compatible routes.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder, response::Response};
use utoipa::{IntoResponses, ToSchema};

use crate::http::models::{OpenAiError, Problem};

/// A set of refusals an operation documents: one row per status.
pub trait Refusals {
    fn rows() -> Vec<(u16, &'static str)>;
}

/// `R`'s refusals in OpenAI's error envelope (`application/json`, [`OpenAiError`]).
pub struct OpenAi<R>(PhantomData<R>);

impl<R: Refusals> IntoResponses for OpenAi<R> {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        responses::<R>("application/json", OpenAiError::name().as_ref())
    }
}

fn responses<R: Refusals>(content_type: &str, schema: &str) -> BTreeMap<String, RefOr<Response>> {
    R::rows()
        .into_iter()
        .map(|(status, description)| {
            let content = ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(schema)))
                .build();
            let response = ResponseBuilder::new()
                .description(description)
                .content(content_type, content)
                .build();
            (status.to_string(), RefOr::T(response))
        })
        .collect()
}

/// Declares refusal sets: `Name: status "description", …;` for rows, `Name = [A, B, …];` for a
/// union of sets declared before.
macro_rules! refusals {
    () => {};
    ($(#[$doc:meta])* $name:ident: $($status:literal $description:literal),+; $($rest:tt)*) => {
        refusals!(@set $(#[$doc])* $name, vec![$(($status, $description)),+]);
        refusals!($($rest)*);
    };
    ($(#[$doc:meta])* $name:ident = [$($part:ident),+]; $($rest:tt)*) => {
        refusals!(@set $(#[$doc])* $name, [$($part::rows()),+].concat());
        refusals!($($rest)*);
    };
    (@set $(#[$doc:meta])* $name:ident, $rows:expr) => {
        $(#[$doc])*
        pub struct $name;

        impl Refusals for $name {
            fn rows() -> Vec<(u16, &'static str)> {
                $rows
            }
        }

        impl IntoResponses for $name {
            fn responses() -> BTreeMap<String, RefOr<Response>> {
                responses::<Self>("application/problem+json", Problem::name().as_ref())
            }
        }
    };
}

refusals! {
    /// Authentication refused.
    InvalidKey: 401 "`invalid_api_key`";
    /// A read route's plan and scope check.
    ReadScope: 403 "`pro_plan_required` or `insufficient_scope` (needs `voice:read`)";
    /// A write route's plan and scope check (it generates nothing).
    WriteScope: 403 "`pro_plan_required` or `insufficient_scope` (needs `voice:generate`)";
    /// A generating route's plan, scope and feature check.
    GenerateScope: 403
        "`pro_plan_required`, `insufficient_scope` (needs `voice:generate`) or `feature_not_enabled`";
    RateLimited: 429 "`rate_limit_exceeded`";
    /// A generation's rate limit, allowance and key ceiling.
    Metered: 429 "`rate_limit_exceeded`, `quota_exhausted` or `key_ceiling_exceeded`";
    Unavailable: 503 "`service_unavailable`";
    /// A path id the database is not asked about.
    BadId: 400 "`invalid_request`: id longer than 200 characters";
    NoSuchGeneration: 404 "`not_found`: no such generation in this account";
    NoSuchCapture: 404 "`not_found`: no such capture in this account";
    NoSuchRule: 404 "`not_found`: no such rule in this account";
    KeyInUse: 409 "`idempotency_key_in_use`";
    KeyReused: 422 "`idempotency_key_reused`";
    TooLarge: 413 "`payload_too_large`";
    AudioTooLarge: 413 "`payload_too_large`: more than 25 MiB of audio";
    NotJson: 415 "`unsupported_media_type`";
    NotMultipart: 415 "`unsupported_media_type`: not multipart/form-data";
    /// The OpenAI-compatible recognition routes' admission.
    RecogniserBusy:
        429 "`rate_limit_exceeded` (see `Retry-After`)",
        503 "`service_unavailable`: the recogniser's queue is full (see `Retry-After`), or no model is installed";

    /// A read route (the `reads` group): key, `voice:read`, rate limit, database.
    Read = [InvalidKey, ReadScope, RateLimited, Unavailable];
    /// A write route that generates nothing (the `voices` group).
    Write = [InvalidKey, WriteScope, RateLimited, Unavailable];
    /// An idempotent JSON body (`Idempotency-Key`, size, media type).
    IdempotentJson = [KeyInUse, TooLarge, NotJson, KeyReused];
    /// A speech generation's admission (`POST /v1/speech`, `/v1/audio/speech`).
    Speak = [InvalidKey, GenerateScope, Metered, IdempotentJson];
    /// A transcription's admission, both dialects.
    Transcribe = [InvalidKey, GenerateScope, KeyInUse, AudioTooLarge, KeyReused];
}
