//! The REST door: `/v1` (with OpenAI's dialect at `/v1/audio/speech`, `/v1/audio/transcriptions`
//! and `/v1/audio/translations`), the signed audio
//! download, health, and the OpenAPI document they make. Handlers parse, call one operation of
//! the core, and render; the rules are the core's (`crate::service`).

pub mod audio;
mod docs;
pub mod generations;
pub mod health;
pub mod openai_speech;
pub mod openai_transcriptions;
pub mod pronunciations;
pub mod reads;
pub mod speech;
pub mod transcriptions;
pub mod voices;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::header;
use axum::middleware::from_fn_with_state;
use axum::routing::get;
use utoipa::OpenApi;
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, AuthorizationCode, Flow, HttpAuthScheme, HttpBuilder, OAuth2, Scopes,
    SecurityScheme,
};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::{Feature, Scope};
use crate::http;
use crate::http::auth::Requirement;
use crate::service::Core;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "voiced",
        description = "Speech generation in your voice profiles, transcription into stored captures, \
                       and reads of voices, generations and captures. Errors are RFC 9457 problem \
                       documents (OpenAI's error envelope on POST /v1/audio/speech, /v1/audio/transcriptions \
                       and /v1/audio/translations).",
        version = "1.0.0",
        license(name = "MIT")
    ),
    modifiers(&SecuritySchemes),
    // Named in a query parameter only, which utoipa does not collect on its own.
    components(schemas(crate::http::models::GenerationStatusFilter)),
    tags(
        (name = "voices", description = "Voice profiles"),
        (name = "speech", description = "Speech generation"),
        (name = "captures", description = "Transcriptions stored as captures"),
        (name = "health", description = "Liveness and readiness"),
    )
)]
struct ApiDoc;

struct SecuritySchemes;

impl utoipa::Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("x-api-key"))),
        );
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An API key (vk_…) or an OAuth 2.1 access token (vat_…, see the oauth2 \
                         scheme and docs/oauth.md). Responses to tokens carry no RateLimit headers.",
                    ))
                    .build(),
            ),
        );
        // How third-party software gets an access token (sent as `bearer`). URLs are relative
        // to the server; discovery: /.well-known/oauth-authorization-server.
        components.add_security_scheme(
            "oauth2",
            SecurityScheme::OAuth2(OAuth2::with_description(
                [Flow::AuthorizationCode(
                    AuthorizationCode::with_refresh_url(
                        "/oauth/authorize",
                        "/oauth/token",
                        Scopes::from_iter(Scope::ALL.map(|s| {
                            (
                                s.as_str(),
                                match s {
                                    Scope::VoiceRead => {
                                        "Read voice profiles, captures, past generations"
                                    }
                                    Scope::VoiceGenerate => {
                                        "Generate speech, transcribe audio, add preset voices"
                                    }
                                },
                            )
                        })),
                        "/oauth/token",
                    ),
                )],
                "Authorization code with PKCE (S256), public clients registered at /oauth/register \
                 or identified by a client ID metadata document URL.",
            )),
        );
    }
}

/// The `/v1` routes, grouped by what they require of the key. Each group carries its
/// plan/scope/feature check; authentication and rate limiting wrap them all in [`router`].
fn v1_routes() -> OpenApiRouter<Core> {
    let reads = OpenApiRouter::new()
        .routes(routes!(reads::list_voices))
        .routes(routes!(voices::list_presets))
        .routes(routes!(reads::list_captures))
        .routes(routes!(reads::get_capture))
        .routes(routes!(reads::get_captions))
        .routes(routes!(generations::get_generation))
        .routes(routes!(generations::list_generations))
        .routes(routes!(generations::get_generation_captions))
        .routes(routes!(pronunciations::list_pronunciations))
        .layer(from_fn_with_state(
            Requirement::read(),
            http::auth::authorize,
        ));
    let speech = OpenApiRouter::new()
        .routes(routes!(speech::create_speech))
        .routes(routes!(openai_speech::create_openai_speech))
        .layer(from_fn_with_state(
            Requirement::generate(Feature::Speech),
            http::auth::authorize,
        ));
    // Adding a preset voice needs `voice:generate` (spec: "add built-in preset voices") and no
    // plan feature: it generates nothing. Cancelling a generation, and adding or deleting a
    // pronunciation rule, or deleting a capture or a generation's audio, are the same kind of
    // write.
    let voices = OpenApiRouter::new()
        .routes(routes!(voices::create_voice))
        .routes(routes!(generations::cancel_generation))
        .routes(routes!(pronunciations::create_pronunciation))
        .routes(routes!(reads::delete_capture))
        .routes(routes!(generations::delete_generation_audio))
        .routes(routes!(pronunciations::delete_pronunciation))
        .layer(from_fn_with_state(
            Requirement::scope(Scope::VoiceGenerate),
            http::auth::authorize,
        ));
    let transcription = OpenApiRouter::new()
        .routes(routes!(transcriptions::create_transcription))
        .routes(routes!(openai_transcriptions::create_openai_transcription))
        .routes(routes!(openai_transcriptions::create_openai_translation))
        .layer(DefaultBodyLimit::max(transcriptions::BODY_LIMIT))
        .layer(from_fn_with_state(
            Requirement::generate(Feature::Transcription),
            http::auth::authorize,
        ));
    OpenApiRouter::new()
        .merge(reads)
        .merge(speech)
        .merge(voices)
        .merge(transcription)
}

/// All documented routes around `v1` (health, and the signed audio download, which takes no
/// key), with the OpenAPI document they make.
fn documented(v1: OpenApiRouter<Core>) -> (Router<Core>, utoipa::openapi::OpenApi) {
    let (router, mut openapi) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(v1)
        .routes(routes!(audio::download_audio))
        .routes(routes!(health::healthz))
        .routes(routes!(health::readyz))
        .split_for_parts();
    openapi.info.version = env!("CARGO_PKG_VERSION").to_owned();
    (router, openapi)
}

/// The REST door's routes with their authentication, rate limit and read confirmation, and
/// `/openapi.json`; with the OpenAPI document they make.
///
/// Per route, outermost first: authenticate → (confirm refusals) rate limit → confirm reads →
/// plan, scope, feature → handler.
pub fn router(core: Core) -> (Router, utoipa::openapi::OpenApi) {
    // Layers wrap what is above them: authenticate runs first, then the rate limit, then the
    // check that a read made with a principal from memory was confirmed by its statement.
    let auth = core.clone();
    let v1 = v1_routes()
        .layer(from_fn_with_state(
            auth.clone(),
            http::principal_check::confirm_reads,
        ))
        .layer(from_fn_with_state(
            core.limits.clone(),
            http::rate_limit::rate_limit,
        ))
        .layer(from_fn_with_state(
            auth.clone(),
            http::principal_check::confirm_refusals,
        ))
        .layer(from_fn_with_state(auth, http::auth::authenticate));
    let (api, document) = documented(v1);
    let spec_json = Arc::new(document.to_pretty_json().expect("OpenAPI serialises"));
    let router = api
        .route(
            "/openapi.json",
            get(move || {
                let spec = spec_json.clone();
                async move {
                    (
                        [(header::CONTENT_TYPE, "application/json")],
                        (*spec).clone(),
                    )
                }
            }),
        )
        .with_state(core);
    (router, document)
}

/// The OpenAPI document alone (for `voiced openapi` and the committed copy); layers do not
/// change it, so it needs no live state.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    documented(v1_routes()).1
}
