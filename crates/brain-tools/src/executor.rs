//! The host's executor for HTTP and SSE tools (bindings without `mcp_tool`).

use async_trait::async_trait;
use brain_mcp_transport::{ProgressSender, Secret};
use brain_tools_events::{CallHeader, ContentBlock, ToolError};
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// One call of an HTTP tool, after the check passed.
#[derive(Debug)]
#[non_exhaustive]
pub struct HttpToolCall {
    /// Who calls what.
    pub header: CallHeader,
    /// The binding's `url`.
    pub url: String,
    /// The token from the binding's `token_env`, read at call time.
    pub token: Option<Secret>,
    /// The validated arguments.
    pub arguments: Value,
    /// Whether the binding asks for session inspection.
    pub inspect_session: bool,
    /// When the call must be over (the host also enforces it).
    pub deadline: Instant,
    /// Bound on the response's bytes.
    pub max_output_bytes: u64,
    /// Cancelled when the caller cancels or the deadline passes.
    pub cancel: CancellationToken,
    /// Progress to report as `tool.progress` events (never blocks; a flood is coalesced).
    pub progress: ProgressSender,
}

/// What an HTTP tool returned.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HttpToolOutput {
    /// What the model reads.
    pub content: Vec<ContentBlock>,
    /// Whether the tool reported an error.
    pub is_error: bool,
    /// Structured output, validated against the binding's `output_schema`.
    pub structured: Option<Value>,
}

impl HttpToolOutput {
    /// An output.
    pub fn new(content: Vec<ContentBlock>, is_error: bool, structured: Option<Value>) -> Self {
        Self {
            content,
            is_error,
            structured,
        }
    }
}

/// Runs HTTP and SSE tools for a [`crate::ToolHost`]. None is built in: the host
/// supplies its own.
#[async_trait]
pub trait HttpToolExecutor: Send + Sync + std::fmt::Debug {
    /// Runs one call.
    ///
    /// # Errors
    /// A [`ToolError`] when the call failed; it becomes the call's failed `tool.result`
    /// as it is (its kind, for example `connect`, `http_status` or `executor`, and an
    /// honest `delivery`: whether the tool may have run). A tool that reports its own
    /// error is an `Ok` output with `is_error` set.
    async fn execute(&self, call: HttpToolCall) -> Result<HttpToolOutput, ToolError>;
}
