//! `list_voices`, `list_captures`, `get_generation`: the reads of `GET /v1/voices`,
//! `GET /v1/captures` and `GET /v1/generations/{id}`, with the same bounds and the same shapes.

use rmcp::model::{CallToolResult, ContentBlock, Resource};
use serde_json::json;

use super::{json_result, success};
use crate::domain::{GenerationId, Page, PageBound};
use crate::http::error::ServiceError;
use crate::http::json::JsonObject;
use crate::http::models::{CaptureList, Generation, VoiceList};

use crate::mcp::McpState;
use crate::service::{Principal, reads};

pub async fn list_voices(
    state: &McpState,
    principal: &Principal,
    args: &JsonObject,
) -> Result<CallToolResult, ServiceError> {
    args.only(&[])?;
    let rows = reads::voices(state, principal, None).await?;
    let list = VoiceList {
        total: rows.len() as i64,
        data: rows.into_iter().map(Into::into).collect(),
    };
    Ok(json_result(json!(list)))
}

pub async fn list_captures(
    state: &McpState,
    principal: &Principal,
    args: &JsonObject,
) -> Result<CallToolResult, ServiceError> {
    args.only(&["limit", "offset"])?;
    let limit = page_bound(args, Page::LIMIT)?;
    let offset = page_bound(args, Page::OFFSET)?;
    let page = reads::captures(state, principal, None, limit, offset).await?;
    let list = CaptureList {
        data: page.rows.into_iter().map(Into::into).collect(),
        total: page.total,
        limit,
        offset,
    };
    Ok(json_result(json!(list)))
}

pub async fn get_generation(
    state: &McpState,
    principal: &Principal,
    args: &JsonObject,
) -> Result<CallToolResult, ServiceError> {
    args.only(&["generation_id"])?;
    let id = args.required_str("generation_id")?;
    let id = GenerationId::parse(id, "generation_id")
        .map_err(|message| ServiceError::invalid("generation_id", message))?;
    let id = id.as_str();
    let row = reads::generation(state, principal, None, id).await?;
    let generation = Generation::present(state, row);
    let structured = json!(generation);
    let mut content = vec![ContentBlock::text(structured.to_string())];
    content.extend(audio_link(&generation));
    Ok(success(content, structured))
}

/// A `resource_link` to a completed generation's audio.
pub fn audio_link(generation: &Generation) -> Option<ContentBlock> {
    let url = generation.audio_url.as_ref()?;
    let format: crate::audio::AudioFormat = generation.format.parse().ok()?;
    let resource = Resource::new(url, format!("{}.{}", generation.id, format.extension()))
        .with_title("Generated speech (link valid about 15 minutes)")
        .with_mime_type(format.content_type());
    Some(ContentBlock::resource_link(resource))
}

/// One page bound of the arguments: absent → its default; not an integer or out of range → an
/// error naming it ([`Page`] holds the rule, shared with REST's query string).
fn page_bound(args: &JsonObject, bound: PageBound) -> Result<i64, ServiceError> {
    args.optional(bound.name)
        .map(|value| value.as_i64().ok_or_else(|| bound.refusal()))
        .transpose()
        .and_then(|n| bound.check(n))
        .map_err(|message| ServiceError::invalid(bound.name, message))
}
