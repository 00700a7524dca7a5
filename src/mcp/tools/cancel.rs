//! `cancel_generation`: `POST /v1/generations/{id}/cancel` for agents, the same core operation
//! (`service::delivery::cancel_by_request`) and the same generation object as `get_generation`.

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::json;

use super::reads::GenerationArguments;
use super::success;
use crate::http::error::ServiceError;
use crate::http::json::JsonObject;
use crate::http::models::Generation;
use crate::mcp::McpState;
use crate::service::Principal;
use crate::service::delivery::{self, Cancelled};

pub async fn cancel_generation(
    state: &McpState,
    principal: &Principal,
    args: &JsonObject,
) -> Result<CallToolResult, ServiceError> {
    let id = args.decode::<GenerationArguments>()?.id()?;
    let (row, note) = match delivery::cancel_by_request(state, principal, id.as_str()).await? {
        Cancelled::Stopped(row) => (row, "Cancelled; nothing was charged."),
        Cancelled::Stopping(row) => (
            row,
            "Its worker was told to stop and has not yet: read it again with get_generation.",
        ),
    };
    let structured = json!(Generation::present(state, row));
    Ok(success(
        vec![
            ContentBlock::text(structured.to_string()),
            ContentBlock::text(note),
        ],
        structured,
    ))
}
