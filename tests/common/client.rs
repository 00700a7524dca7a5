//! The typed client: `TestApp` methods for the calls most suites make (speech, OpenAI speech,
//! generations and their audio, transcription, voices, the agent interface), so that each is
//! written once and a change to one of them is made in one place.

use std::time::Duration;

use reqwest::Response;
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{ClientInitializeError, ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use super::{TestApp, json};

/// The official Rust SDK's MCP client.
pub type McpClient = RunningService<RoleClient, ()>;

/// How long a test waits for one generation to finish on the real models.
const GENERATION_DEADLINE: Duration = Duration::from_secs(300);

impl TestApp {
    /// `POST /v1/speech` with `body`: status and JSON answer.
    pub async fn speak(&self, secret: &str, body: Value) -> (u16, Value) {
        self.post_json("/v1/speech", secret, &body).await
    }

    /// `POST /v1/audio/speech` (OpenAI's dialect) with `body`: the response, audio or an
    /// error envelope.
    pub async fn openai_speech(&self, secret: &str, body: &Value) -> Response {
        self.post("/v1/audio/speech")
            .bearer_auth(secret)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// `POST path` with a JSON `body` and `secret` as the bearer: status and JSON answer.
    pub async fn post_json(&self, path: &str, secret: &str, body: &Value) -> (u16, Value) {
        json(
            self.post(path)
                .bearer_auth(secret)
                .json(body)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// `GET /v1/generations/{id}`: status and JSON answer.
    pub async fn generation(&self, secret: &str, id: &str) -> (u16, Value) {
        json(
            self.get(&format!("/v1/generations/{id}"))
                .bearer_auth(secret)
                .send()
                .await
                .unwrap(),
        )
        .await
    }

    /// Waits (on the server's completion notification, not a timer) until generation `id` has
    /// finished, completed or failed, and returns its API object.
    pub async fn finished(&self, secret: &str, id: &str) -> Value {
        tokio::time::timeout(
            GENERATION_DEADLINE,
            self.completions.wait(id, Duration::from_secs(5)),
        )
        .await
        .expect("generation finishes")
        .unwrap();
        let (status, body) = self.generation(secret, id).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Downloads through `audio_url` (its path and query, against the test server).
    pub async fn download(&self, audio_url: &str) -> Response {
        let path = &audio_url[audio_url.find("/v1/audio/").unwrap()..];
        self.get(path).send().await.unwrap()
    }

    /// Speaks `body` through `POST /v1/speech`, waits for it to complete and downloads it: the
    /// generation's API object and its audio.
    pub async fn completed_audio(&self, secret: &str, body: Value) -> (Value, Vec<u8>) {
        let (status, accepted) = self.speak(secret, body).await;
        assert_eq!(status, 202, "{accepted}");
        let generation = self
            .finished(secret, accepted["id"].as_str().unwrap())
            .await;
        assert_eq!(generation["status"], "completed", "{generation}");
        let response = self
            .download(generation["audio_url"].as_str().unwrap())
            .await;
        assert_eq!(response.status(), 200);
        let bytes = response.bytes().await.unwrap().to_vec();
        (generation, bytes)
    }

    /// The audio of `body` spoken through `POST /v1/speech` (see [`TestApp::completed_audio`]).
    pub async fn speech_audio(&self, secret: &str, body: Value) -> Vec<u8> {
        self.completed_audio(secret, body).await.1
    }

    /// `POST /v1/transcriptions` of `audio` (base64): status and JSON answer.
    pub async fn transcribe(&self, secret: &str, audio: &str) -> (u16, Value) {
        self.post_json("/v1/transcriptions", secret, &json!({ "audio": audio }))
            .await
    }

    /// `POST /v1/voices` with `body`, under `idempotency_key` when given: status and JSON answer.
    pub async fn create_voice(
        &self,
        secret: &str,
        idempotency_key: Option<&str>,
        body: Value,
    ) -> (u16, Value) {
        let mut request = self.post("/v1/voices").bearer_auth(secret).json(&body);
        if let Some(key) = idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        json(request.send().await.unwrap()).await
    }

    /// `method path` with a JSON `body` and `secret` as the bearer, sent to the app's router
    /// in-process (`tower::ServiceExt::oneshot`: no socket, no HTTP parsing), for validation
    /// matrices whose answers come from the router's own layers and handlers: status and JSON.
    pub async fn oneshot(
        &self,
        method: &str,
        path: &str,
        secret: &str,
        body: &Value,
    ) -> (u16, Value) {
        use tower::ServiceExt as _;
        let request = axum::http::Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Bearer {secret}"))
            .header("content-type", "application/json")
            .body(axum::body::Body::from(serde_json::to_vec(body).unwrap()))
            .unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let body = serde_json::from_slice(&bytes).unwrap_or_else(|err| {
            panic!("a JSON body ({err}): {}", String::from_utf8_lossy(&bytes))
        });
        (status, body)
    }

    /// How many generations the database holds, every account's.
    pub async fn generation_count(&self) -> usize {
        super::fixtures::generation_count(self).await
    }

    /// A raw JSON-RPC POST to `/mcp` (2025-11-25 headers, no session), with extra headers.
    pub async fn mcp_rpc(&self, headers: &[(&str, &str)], body: Value) -> Response {
        let mut request = self
            .post("/mcp")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.unwrap()
    }

    /// The SDK's client on `/mcp` with `secret` as its bearer credential.
    pub async fn mcp_connect(
        &self,
        secret: &str,
        lifecycle: ClientLifecycleMode,
    ) -> Result<McpClient, ClientInitializeError> {
        let transport = StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", self.base))
                .auth_header(secret),
        );
        ().serve_with_lifecycle(transport, lifecycle).await
    }

    /// A client on the 2025-11-25 handshake (`initialize`).
    pub async fn mcp_client(&self, secret: &str) -> McpClient {
        self.mcp_connect(secret, ClientLifecycleMode::Initialize)
            .await
            .expect("initialize")
    }
}

/// Calls `tool` with `arguments` (an object) through the SDK's client; the call itself must
/// succeed (a tool error is a result).
pub async fn mcp_call(client: &McpClient, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e}"))
}

/// A JSON-RPC `tools/call` message for `tool` with `arguments`.
pub fn mcp_tools_call(tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}
