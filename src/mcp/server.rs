//! The MCP server handler: the server's identity, its tool catalogue, and tool calls.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use super::tools;
use crate::mcp::McpState;
use crate::service::Principal;

const INSTRUCTIONS: &str = "voiced speaks text in the account's voice profiles and transcribes audio. \
Call list_voices first to see the voices; speak with one of them (by name or id) returns a signed \
audio link (valid about 15 minutes). When speak answers with status \"generating\", call \
get_generation with its generation_id until the status is \"completed\". transcribe stores a \
capture, listed by list_captures.";

/// One per request (the transport is stateless); cloning the state is cheap.
#[derive(Clone)]
pub struct VoicedMcp {
    state: McpState,
}

impl VoicedMcp {
    pub fn new(state: McpState) -> Self {
        Self { state }
    }
}

impl ServerHandler for VoicedMcp {
    fn get_info(&self) -> ServerConfig {
        let mut implementation = Implementation::new("voiced", env!("CARGO_PKG_VERSION"));
        implementation.title = Some("voiced: speech and transcription".into());
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(implementation)
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools::catalogue().to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::catalogue().iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // The gate put the principal in the HTTP request's extensions; rmcp hands the request's
        // parts to the handler.
        let principal = context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Arc<Principal>>())
            .cloned()
            .ok_or_else(|| McpError::internal_error("request without a principal", None))?;
        tools::call(&self.state, &principal, request, &context)
            .await
            .map(CallToolResponse::from)
    }
}
