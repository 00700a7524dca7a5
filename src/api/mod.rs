//! The REST door: `/v1` (with OpenAI's dialect at `/v1/audio/speech`, `/v1/audio/transcriptions`
//! and `/v1/audio/translations`), the signed audio
//! download, health, and the OpenAPI document they make. Handlers parse, call one operation of
//! the core, and render; the rules are the core's (`crate::service`).

pub mod audio;
pub mod cartesia;
mod docs;
pub mod elevenlabs;
pub mod generations;
pub mod health;
pub mod listen;
pub mod openai_speech;
pub mod openai_transcriptions;
pub mod pronunciations;
pub mod reads;
pub mod realtime;
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
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};
use utoipa_axum::routes;

use crate::domain::Scope;
use crate::http;
use crate::service::Core;
use crate::service::operations::Operation;

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
        (name = "live", description = "Live sockets (WebSockets) and the vendor dialects beside them"),
        (name = "health", description = "Liveness and readiness"),
    )
)]
struct ApiDoc;

/// The live routes' documentation (declared beside their handlers).
#[derive(OpenApi)]
#[openapi(paths(
    listen::listen_document,
    listen::prerecorded_document,
    realtime::realtime_document,
    elevenlabs::multi_stream_input_document,
    elevenlabs::stream_input_document,
    elevenlabs::convert_document,
    elevenlabs::convert_stream_document,
    cartesia::websocket_document,
))]
struct LiveDoc;

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

/// One `/v1` route and the core operation it performs: the route refuses before its body is
/// read by the operation's requirement (`service::operations`, plan, scope, feature), and the
/// operation checks it again.
fn guarded(operation: Operation, route: UtoipaMethodRouter<Core>) -> OpenApiRouter<Core> {
    OpenApiRouter::new().routes(route).layer(from_fn_with_state(
        operation.requirement(),
        http::auth::authorize,
    ))
}

/// The `/v1` routes, each with its operation; authentication and rate limiting wrap them all
/// in [`router`].
fn v1_routes() -> OpenApiRouter<Core> {
    use Operation as Op;
    let routes = [
        guarded(Op::ListVoices, routes!(reads::list_voices)),
        guarded(Op::ListPresets, routes!(voices::list_presets)),
        guarded(Op::ListCaptures, routes!(reads::list_captures)),
        guarded(Op::GetCapture, routes!(reads::get_capture)),
        guarded(Op::GetCaptions, routes!(reads::get_captions)),
        guarded(Op::GetGeneration, routes!(generations::get_generation)),
        guarded(Op::ListGenerations, routes!(generations::list_generations)),
        guarded(
            Op::GetGenerationCaptions,
            routes!(generations::get_generation_captions),
        ),
        guarded(
            Op::ListPronunciations,
            routes!(pronunciations::list_pronunciations),
        ),
        guarded(Op::CreateSpeech, routes!(speech::create_speech)),
        guarded(
            Op::CreateSpeech,
            routes!(openai_speech::create_openai_speech),
        ),
        guarded(Op::CreateVoice, routes!(voices::create_voice)),
        guarded(
            Op::CancelGeneration,
            routes!(generations::cancel_generation),
        ),
        guarded(
            Op::CreatePronunciation,
            routes!(pronunciations::create_pronunciation),
        ),
        guarded(Op::DeleteCapture, routes!(reads::delete_capture)),
        guarded(
            Op::DeleteGenerationAudio,
            routes!(generations::delete_generation_audio),
        ),
        guarded(
            Op::DeletePronunciation,
            routes!(pronunciations::delete_pronunciation),
        ),
        guarded(
            Op::Transcribe,
            routes!(transcriptions::create_transcription),
        )
        .layer(DefaultBodyLimit::max(transcriptions::BODY_LIMIT)),
        guarded(
            Op::Transcribe,
            routes!(openai_transcriptions::create_openai_transcription),
        )
        .layer(DefaultBodyLimit::max(transcriptions::BODY_LIMIT)),
        guarded(
            Op::Transcribe,
            routes!(openai_transcriptions::create_openai_translation),
        )
        .layer(DefaultBodyLimit::max(transcriptions::BODY_LIMIT)),
    ];
    routes
        .into_iter()
        .fold(OpenApiRouter::new(), OpenApiRouter::merge)
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
    // The live routes are routed by their own routers (their credentials and upgrades are
    // their own); their documentation joins here.
    openapi.merge(LiveDoc::openapi());
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
            core.limits().clone(),
            http::rate_limit::rate_limit,
        ))
        .layer(from_fn_with_state(
            auth.clone(),
            http::principal_check::confirm_refusals,
        ))
        .layer(from_fn_with_state(auth, http::auth::authenticate));
    let (api, document) = documented(v1);
    // Deepgram's live route has its own credential forms and counts as a write.
    let api = api.merge(listen::router(core.clone()));
    // OpenAI's realtime transcription: the same core session, the same admission.
    let api = api.merge(realtime::router(core.clone()));
    // ElevenLabs' speech sockets and REST twins: their own credential header, writes.
    let api = api.merge(elevenlabs::router(core.clone()));
    // Cartesia's speech socket: the same core session, voices named per context.
    let api = api.merge(cartesia::router(core.clone()));
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
