//! The tools: their catalogue (names, schemas, annotations, required scopes), the dispatch of a
//! call, and how results and errors are written.
//!
//! Every tool checks the plan, scope and feature itself (the gate already answered a missing
//! scope with 403; this is the same check again, for any call the gate could not read) and then
//! calls the same service and store functions as its REST counterpart. Errors a caller can act
//! on come back as tool errors (`isError`) whose text is a JSON object with the same `code`
//! tokens as the REST problem documents; only a call the protocol cannot route (an unknown tool)
//! is a JSON-RPC error.

mod cancel;
mod reads;
mod schemas;
mod speak;
mod transcribe;

use std::sync::{Arc, LazyLock};

use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, Tool, ToolAnnotations};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Map, Value, json};

use crate::domain::IdempotencyKey;
use crate::http::error::HttpStatus;
use crate::http::error::{ServiceError, SettingsPage};
use crate::http::json::{Field, JsonObject};
use crate::mcp::McpState;
use crate::service::Principal;
use crate::service::operations::Operation;
use crate::service::principal::Requirement;

/// The core operation each tool performs: the gate refuses before the arguments are read by
/// its requirement (`service::operations`), and the operation checks it again.
pub fn operation(tool: &str) -> Option<Operation> {
    match tool {
        "list_voices" => Some(Operation::ListVoices),
        "list_captures" => Some(Operation::ListCaptures),
        "get_generation" => Some(Operation::GetGeneration),
        "speak" => Some(Operation::CreateSpeech),
        "transcribe" => Some(Operation::Transcribe),
        "cancel_generation" => Some(Operation::CancelGeneration),
        _ => None,
    }
}

/// What a tool needs of the credential and the plan (the gate and the tools both ask).
pub fn requirement(tool: &str) -> Option<Requirement> {
    operation(tool).map(Operation::requirement)
}

/// The tools as `tools/list` shows them.
pub fn catalogue() -> &'static [Tool] {
    static TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
        let reading = |title: &str| {
            ToolAnnotations::with_title(title)
                .read_only(true)
                .open_world(false)
        };
        vec![
            tool(
                "list_voices",
                "List the account's voice profiles (name, id, language, engine). Use a name or id with speak.",
                schemas::input::<reads::NoArguments>(),
                schemas::voice_list(),
                reading("List voices"),
            ),
            tool(
                "list_captures",
                "List the account's transcriptions (captures), newest first, one page at a time.",
                schemas::input::<reads::ListCapturesArguments>(),
                schemas::capture_list(),
                reading("List captures"),
            ),
            tool(
                "get_generation",
                "Read a speech generation: its status and, once completed, a fresh signed audio_url (valid about 15 minutes).",
                schemas::input::<reads::GenerationArguments>(),
                schemas::generation(),
                reading("Get generation"),
            ),
            tool(
                "speak",
                "Generate speech from text in one of the account's voices. Waits up to wait_seconds (default 20) for the audio and returns a signed audio link; if it is not ready by then, returns the generation_id to poll with get_generation. Uses the account's monthly audio allowance.",
                schemas::input::<speak::SpeakArguments>(),
                schemas::speak_output(),
                ToolAnnotations::with_title("Speak")
                    .read_only(false)
                    .destructive(false)
                    .idempotent(false)
                    .open_world(false),
            ),
            tool(
                "cancel_generation",
                "Cancel a speech generation: a queued one never runs, a running one stops; it ends failed with error \"cancelled: by request\" and nothing is charged. A generation that already completed or failed cannot be cancelled (generation_finished).",
                schemas::input::<reads::GenerationArguments>(),
                schemas::generation(),
                ToolAnnotations::with_title("Cancel generation")
                    .read_only(false)
                    .destructive(true)
                    .idempotent(true)
                    .open_world(false),
            ),
            tool(
                "transcribe",
                "Transcribe an audio clip (wav, mp3, flac, ogg or webm; up to 25 MiB and 15 minutes) given as base64 (audio_base64) or an https URL (audio_url). Stores the transcript as a capture.",
                schemas::input::<transcribe::TranscribeArguments>(),
                schemas::transcribe_output(),
                ToolAnnotations::with_title("Transcribe")
                    .read_only(false)
                    .destructive(false)
                    .idempotent(false)
                    .open_world(true),
            ),
        ]
    });
    &TOOLS
}

fn tool(
    name: &'static str,
    description: &'static str,
    input: Map<String, Value>,
    output: Map<String, Value>,
    annotations: ToolAnnotations,
) -> Tool {
    Tool::new(name, description, Arc::new(input))
        .with_raw_output_schema(Arc::new(output))
        .with_annotations(annotations)
}

/// Runs a tool call for `principal`.
pub async fn call(
    state: &McpState,
    principal: &Principal,
    request: CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Result<CallToolResult, McpError> {
    let Some(requirement) = requirement(&request.name) else {
        return Err(McpError::invalid_params(
            format!("Unknown tool {:?}.", request.name),
            None,
        ));
    };
    let args = JsonObject(request.arguments.unwrap_or_default());
    let result = match principal.authorize(requirement) {
        Err(err) => Err(err),
        Ok(()) => match &*request.name {
            "list_voices" => reads::list_voices(state, principal, &args).await,
            "list_captures" => reads::list_captures(state, principal, &args).await,
            "get_generation" => reads::get_generation(state, principal, &args).await,
            "cancel_generation" => cancel::cancel_generation(state, principal, &args).await,
            "speak" => speak::speak(state, principal, args, context).await,
            "transcribe" => {
                transcribe::transcribe(state, principal, args, reserved_place(context)).await
            }
            _ => unreachable!("every tool with a requirement is dispatched"),
        },
    };
    Ok(result.unwrap_or_else(|err| tool_error(&err, state)))
}

/// The recogniser place the gate took for this `transcribe` call, if it took one.
fn reserved_place(
    context: &RequestContext<RoleServer>,
) -> Option<crate::service::transcription::Place> {
    context
        .extensions
        .get::<axum::http::request::Parts>()?
        .extensions
        .get::<crate::mcp::auth::ReservedPlace>()?
        .take()
}

/// A successful result: `content` for people and models, `structured` for programs (it
/// conforms to the tool's output schema).
fn success(content: Vec<ContentBlock>, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::success(content);
    result.structured_content = Some(structured);
    result
}

/// A successful read: the structured value, also as JSON text (for clients that show only text).
fn json_result(structured: Value) -> CallToolResult {
    success(vec![ContentBlock::text(structured.to_string())], structured)
}

/// A tool error: a JSON object with the members of the REST problem document (`code`,
/// `detail`, `param`, `required_scope`, `settings_url`, …), `instance` aside.
fn tool_error(err: &ServiceError, state: &McpState) -> CallToolResult {
    let code = err.code.as_str();
    let mut doc = json!({
        "type": format!("{}/{code}", state.links.errors_url),
        "title": err.code.title(),
        "status": err.code.status().as_u16(),
        "detail": err.detail,
        "code": code,
    });
    if let Some(param) = &err.param {
        doc["param"] = json!(param);
    }
    if let Some(scope) = err.required_scope {
        doc["required_scope"] = json!(scope.as_str());
    }
    if let Some(page) = err.settings {
        doc["settings_url"] = json!(match page {
            SettingsPage::Billing => &state.links.billing_url,
            SettingsPage::Console => &state.links.console_url,
        });
    }
    if let Some(secs) = err.retry_after_secs {
        doc["retry_after"] = json!(secs);
    }
    let text = doc.to_string();
    crate::http::error::record_for_audit(&text);
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// An optional integer argument within `min..=max`.
fn bounded(value: Field<i64>, name: &str, min: i64, max: i64) -> Result<Option<i64>, ServiceError> {
    let refused = || {
        ServiceError::invalid(
            name,
            format!("{name} must be an integer from {min} to {max}"),
        )
    };
    value
        .optional(refused)?
        .map(|n| {
            if (min..=max).contains(&n) {
                Ok(n)
            } else {
                Err(refused())
            }
        })
        .transpose()
}

/// An optional boolean argument.
fn flag(value: Field<bool>, name: &str) -> Result<Option<bool>, ServiceError> {
    value.optional(|| ServiceError::invalid(name, format!("{name} must be true or false")))
}

/// The optional `idempotency_key` argument: 1 to 255 visible ASCII characters.
fn idempotency_key(value: Field<String>) -> Result<Option<IdempotencyKey>, ServiceError> {
    let refused = || {
        ServiceError::invalid(
            "idempotency_key",
            IdempotencyKey::refusal("idempotency_key"),
        )
    };
    value
        .optional(refused)?
        .map(|raw| IdempotencyKey::parse(&raw).ok_or_else(refused))
        .transpose()
}
