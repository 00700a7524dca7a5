//! `GET /v1/audio/{generationId}?sig=…`: the signed, key-less download.

use std::collections::HashMap;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::docs;
use crate::api::generations::check_id;
use crate::http::error::{ApiError, ErrorCode};
use crate::http::models::Problem;
use crate::service::Core;
use crate::service::audio::{self, Download};

/// Downloads a generation's audio through the signed `audio_url` (no API key).
#[utoipa::path(get, path = "/v1/audio/{generationId}", tag = "speech",
    params(
        ("generationId" = String, Path, min_length = 1, max_length = 200),
        ("sig" = String, Query, description = "Signature from `audio_url`; never built by clients"),
    ),
    responses(
        (status = 200, description = "The audio, streamed (`Accept-Ranges: bytes`)", content((Vec<u8> = "audio/mpeg"), (Vec<u8> = "audio/ogg"), (Vec<u8> = "audio/wav"))),
        (status = 206, description = "The part a `Range: bytes=…` header asked for, with `Content-Range`", content((Vec<u8> = "audio/mpeg"), (Vec<u8> = "audio/ogg"), (Vec<u8> = "audio/wav"))),
        (status = 307, description = "Only where the operator set `blob_redirect` and the audio is in S3: `Location` is a presigned URL of the object, valid at most 5 minutes and never past the link's expiry. Clients follow it with the same request (a `Range` header included; the bucket answers 200, 206 or 416)",
            headers(("Location" = String, description = "Presigned URL of the audio object"))),
        (status = 416, description = "`range_not_satisfiable`: the range starts past the end (`Content-Range: bytes */<length>`)", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`invalid_signature` (missing, tampered or expired `sig`) or `pro_plan_required`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 429, description = "`rate_limit_exceeded`: this link already has `downloads_per_link` downloads in flight (4 by default); `Retry-After` says when to try again", body = Problem, content_type = "application/problem+json",
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        docs::Unavailable, docs::BadId,
    ))]
pub async fn download_audio(
    State(state): State<Core>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    method: Method,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    check_id(&id)?;
    let sig = query.get("sig").map(String::as_str);
    let object = match audio::download(&state, &id, sig, method == Method::HEAD).await? {
        Download::Redirect(url) => {
            let mut response = StatusCode::TEMPORARY_REDIRECT.into_response();
            let h = response.headers_mut();
            h.insert(
                header::LOCATION,
                HeaderValue::from_str(&url).map_err(ApiError::internal)?,
            );
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            return Ok(response);
        }
        Download::Object(object) => object,
    };
    let len = object.len;
    let (status, start, end) = match requested_range(&headers, len) {
        Range::Whole => (StatusCode::OK, 0, len),
        Range::Part(start, end) => (StatusCode::PARTIAL_CONTENT, start, end),
        Range::Unsatisfiable => {
            let mut response = ApiError::new(
                ErrorCode::RangeNotSatisfiable,
                format!("The audio is {len} bytes long; the requested range starts past its end."),
            )
            .into_response();
            response.headers_mut().insert(
                header::CONTENT_RANGE,
                HeaderValue::from_str(&format!("bytes */{len}")).expect("ASCII"),
            );
            return Ok(response);
        }
    };
    // The link's download place is held until the body is finished or dropped.
    let content_type = HeaderValue::from_str(&object.content_type).map_err(ApiError::internal)?;
    let mut response = Response::new(Body::from_stream(object.read(start, end)));
    *response.status_mut() = status;
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, content_type);
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(end - start));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, max-age=900"),
    );
    if status == StatusCode::PARTIAL_CONTENT {
        h.insert(
            header::CONTENT_RANGE,
            HeaderValue::from_str(&format!("bytes {start}-{}/{len}", end - 1)).expect("ASCII"),
        );
    }
    Ok(response)
}

#[derive(Debug, PartialEq, Eq)]
enum Range {
    Whole,
    /// `start..end` (end exclusive).
    Part(u64, u64),
    Unsatisfiable,
}

/// One `bytes=` range (RFC 9110 §14.1.2): `a-b`, `a-` or `-n`. Anything else (several ranges,
/// other units, bad syntax) is ignored and the whole file is sent, as the RFC allows.
fn requested_range(headers: &HeaderMap, len: u64) -> Range {
    let Some(spec) = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("bytes="))
    else {
        return Range::Whole;
    };
    if spec.contains(',') {
        return Range::Whole;
    }
    let Some((first, last)) = spec.split_once('-') else {
        return Range::Whole;
    };
    let (first, last) = (first.trim(), last.trim());
    let parsed = match (first.parse::<u64>(), last.parse::<u64>()) {
        (Ok(a), Ok(b)) if a <= b => Some((a, b.saturating_add(1).min(len))),
        (Ok(a), Err(_)) if last.is_empty() => Some((a, len)),
        (Err(_), Ok(n)) if first.is_empty() && n > 0 => Some((len.saturating_sub(n), len)),
        _ => None,
    };
    match parsed {
        None => Range::Whole,
        Some((start, _)) if start >= len => Range::Unsatisfiable,
        Some((start, end)) => Range::Part(start, end),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(value: &str, len: u64) -> Range {
        let mut headers = HeaderMap::new();
        headers.insert(header::RANGE, HeaderValue::from_str(value).unwrap());
        requested_range(&headers, len)
    }

    #[test]
    fn byte_ranges() {
        assert_eq!(requested_range(&HeaderMap::new(), 10), Range::Whole);
        assert_eq!(range("bytes=2-5", 10), Range::Part(2, 6));
        assert_eq!(range("bytes=2-", 10), Range::Part(2, 10));
        assert_eq!(range("bytes=-3", 10), Range::Part(7, 10));
        assert_eq!(range("bytes=8-100", 10), Range::Part(8, 10));
        assert_eq!(range("bytes=10-", 10), Range::Unsatisfiable);
        assert_eq!(range("bytes=5-2", 10), Range::Whole);
        assert_eq!(range("bytes=0-1,4-5", 10), Range::Whole);
        assert_eq!(range("items=0-1", 10), Range::Whole);
    }
}
