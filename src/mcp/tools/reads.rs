//! `list_voices`, `list_captures`, `get_generation`: the reads of `GET /v1/voices`,
//! `GET /v1/captures` and `GET /v1/generations/{id}`, with the same bounds and the same shapes.

use rmcp::model::{CallToolResult, ContentBlock, Resource};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::schemas::integer;
use super::{json_result, success};
use crate::domain::{GenerationId, MAX_ID_CHARS, Page, PageBound};
use crate::http::error::ServiceError;
use crate::http::json::{Field, JsonObject};
use crate::http::models::{CaptureList, Generation, VoiceList};

use crate::mcp::McpState;
use crate::service::{Principal, reads};

/// The arguments of `list_voices`: none (any argument is refused, naming it). Its schema still
/// names an empty `properties`, which some clients look for on every tool.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("properties" = {}))]
pub(super) struct NoArguments {}

/// The arguments of `list_captures`: a page, with the bounds of `GET /v1/captures`' query.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ListCapturesArguments {
    /// Captures per page.
    #[serde(default)]
    #[schemars(
        schema_with = "integer",
        range(min = Page::LIMIT.min, max = Page::LIMIT.max),
        extend("default" = Page::LIMIT.default)
    )]
    pub limit: Field<i64>,
    /// Captures to skip.
    #[serde(default)]
    #[schemars(
        schema_with = "integer",
        range(min = Page::OFFSET.min, max = Page::OFFSET.max),
        extend("default" = Page::OFFSET.default)
    )]
    pub offset: Field<i64>,
}

/// The arguments of `get_generation` and `cancel_generation`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GenerationArguments {
    /// The id speak returned.
    #[serde(default)]
    #[schemars(!default, with = "String", length(min = 1, max = MAX_ID_CHARS))]
    pub generation_id: Field<String>,
}

impl GenerationArguments {
    /// The generation's id: a string (`generation_id is required` / `must be a string`) that
    /// is a well-formed id.
    pub fn id(self) -> Result<GenerationId, ServiceError> {
        let id = self.generation_id.required("generation_id")?;
        GenerationId::parse(&id, "generation_id")
            .map_err(|message| ServiceError::invalid("generation_id", message))
    }
}

pub async fn list_voices(
    state: &McpState,
    principal: &Principal,
    args: &JsonObject,
) -> Result<CallToolResult, ServiceError> {
    let NoArguments {} = args.decode()?;
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
    let arguments: ListCapturesArguments = args.decode()?;
    let limit = page_bound(arguments.limit, Page::LIMIT)?;
    let offset = page_bound(arguments.offset, Page::OFFSET)?;
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
    let id = args.decode::<GenerationArguments>()?.id()?;
    let row = reads::generation(state, principal, None, id.as_str()).await?;
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

/// One page bound of the arguments: absent or null → its default; not an integer or out of
/// range → an error naming it ([`Page`] holds the rule, shared with REST's query string).
fn page_bound(value: Field<i64>, bound: PageBound) -> Result<i64, ServiceError> {
    value
        .optional(|| bound.refusal())
        .and_then(|n| bound.check(n))
        .map_err(|message| ServiceError::invalid(bound.name, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(value: serde_json::Value) -> JsonObject {
        JsonObject(value.as_object().unwrap().clone())
    }

    fn refusal(err: ServiceError) -> (String, String) {
        (err.param.unwrap(), err.detail)
    }

    #[test]
    fn a_generation_id_is_a_required_string() {
        let id = |value| args(value).decode::<GenerationArguments>().unwrap().id();
        let expected = |detail: &str| ("generation_id".to_owned(), detail.to_owned());
        assert_eq!(
            refusal(id(json!({})).unwrap_err()),
            expected("generation_id is required")
        );
        for value in [json!(null), json!(5)] {
            assert_eq!(
                refusal(id(json!({"generation_id": value})).unwrap_err()),
                expected("generation_id must be a string")
            );
        }
        let unknown = args(json!({"id": "x"}))
            .decode::<GenerationArguments>()
            .unwrap_err();
        assert_eq!(
            refusal(unknown),
            (
                "id".to_owned(),
                "Unknown field \"id\"; accepted fields: generation_id.".to_owned()
            )
        );
    }

    #[test]
    fn page_bounds_default_when_absent_or_null_and_refuse_non_integers() {
        let page = |value| {
            let arguments: ListCapturesArguments = args(value).decode().unwrap();
            page_bound(arguments.limit, Page::LIMIT)
        };
        assert_eq!(page(json!({})).unwrap(), Page::LIMIT.default);
        assert_eq!(page(json!({"limit": null})).unwrap(), Page::LIMIT.default);
        assert_eq!(page(json!({"limit": 7})).unwrap(), 7);
        for value in [
            json!(7.5),
            json!(7.0),
            json!("7"),
            json!(0),
            json!(u64::MAX),
        ] {
            assert_eq!(
                refusal(page(json!({"limit": value})).unwrap_err()),
                ("limit".to_owned(), Page::LIMIT.refusal()),
                "{value}"
            );
        }
        let none = args(json!({"limit": 1}))
            .decode::<NoArguments>()
            .unwrap_err();
        assert_eq!(none.detail, "Unknown field \"limit\"; accepted fields: .");
    }
}
