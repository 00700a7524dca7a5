//! Rendering a synchronous generation's audio over HTTP, for every door that speaks
//! synchronously (`POST /v1/audio/speech`, the console playground's streamed speech). The
//! waiting, streaming, cancelling and charging are the core's (`service::delivery`); this only
//! writes its headers and body (docs/api.md, "Streaming").

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::http::error::ApiError;
use crate::service::Core;
use crate::service::delivery::{self, Delivery};

/// Answers with the generation's audio as the core delivers it: a chunked body while it is
/// rendered in this process (an error item closes the connection before the chunked body's end,
/// so that the client sees an incomplete transfer), else the stored file with its length.
///
/// `model`: what `X-Service-Engine` echoes (the OpenAI dialect's `model`), if anything.
pub async fn deliver(
    state: &Core,
    id: &str,
    model: Option<&str>,
    replayed: bool,
) -> Result<Response, ApiError> {
    let mut response = render(delivery::deliver(state, id, replayed).await?);
    let headers = response.headers_mut();
    headers.insert(
        "x-service-generation-id",
        HeaderValue::from_str(id).map_err(ApiError::internal)?,
    );
    if let Some(model) = model {
        headers.insert(
            "x-service-engine",
            HeaderValue::from_str(model).map_err(ApiError::internal)?,
        );
    }
    if replayed {
        headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    Ok(response)
}

/// A delivery as a 200: its type, its length when known (a stored file), its bytes; an error
/// item of the body closes the connection before the body's end.
pub fn render(delivery: Delivery) -> Response {
    let Delivery {
        content_type,
        len,
        body,
    } = delivery;
    let mut response = (StatusCode::OK, Body::from_stream(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        // Our own audio types; anything else would be a bug, sent as bytes.
        HeaderValue::from_str(&content_type)
            .unwrap_or(HeaderValue::from_static("application/octet-stream")),
    );
    if let Some(len) = len {
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    }
    response
}
