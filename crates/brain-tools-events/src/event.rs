//! Event types and their JSON shape.

use std::fmt;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

/// Who called what: carried by every event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CallHeader {
    /// The tenant of the session.
    pub tenant_id: String,
    /// The session.
    pub session_id: String,
    /// The call (also the MCP progress token).
    pub call_id: String,
    /// The tool's name as the model sees it.
    pub tool: String,
}

impl CallHeader {
    /// A header.
    pub fn new(
        tenant_id: impl Into<String>,
        session_id: impl Into<String>,
        call_id: impl Into<String>,
        tool: impl Into<String>,
    ) -> Self {
        Self {
            tenant_id: tenant_id.into(),
            session_id: session_id.into(),
            call_id: call_id.into(),
            tool: tool.into(),
        }
    }
}

/// An event of a tool call, tagged by `type` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum ToolEvent {
    /// `tool.progress`: live-only; show it, never persist it.
    #[serde(rename = "tool.progress")]
    Progress(ProgressEvent),
    /// `tool.result`: exactly one per call, always the last event.
    #[serde(rename = "tool.result")]
    Result(ResultEvent),
}

impl ToolEvent {
    /// A `tool.progress` event.
    pub fn progress(
        header: CallHeader,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> Self {
        ToolEvent::Progress(ProgressEvent {
            header,
            progress,
            total,
            message,
        })
    }

    /// A `tool.result` with content and no error object.
    pub fn result(header: CallHeader, is_error: bool, content: Vec<ContentBlock>) -> Self {
        ToolEvent::Result(ResultEvent::new(header, is_error, content))
    }

    /// A failed `tool.result` (see [`ResultEvent::failure`]).
    pub fn failure(header: CallHeader, error: ToolError) -> Self {
        ToolEvent::Result(ResultEvent::failure(header, error))
    }

    /// The header of the call.
    pub fn header(&self) -> &CallHeader {
        match self {
            ToolEvent::Progress(event) => &event.header,
            ToolEvent::Result(event) => &event.header,
        }
    }

    /// True for events a host must not persist (`tool.progress`).
    pub fn is_live_only(&self) -> bool {
        matches!(self, ToolEvent::Progress(_))
    }

    /// The event as one line of JSON (no trailing newline).
    pub fn to_json_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }

    /// Parses one line of JSON.
    ///
    /// # Errors
    /// The [`serde_json::Error`] of a line that is not JSON or not a `tool.progress` or
    /// `tool.result` event.
    pub fn from_json_line(line: &str) -> serde_json::Result<Self> {
        serde_json::from_str(line)
    }
}

/// A `tool.progress` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProgressEvent {
    /// Who called what.
    #[serde(flatten)]
    pub header: CallHeader,
    /// Progress so far (whole numbers are written without a fraction).
    #[serde(serialize_with = "number")]
    pub progress: f64,
    /// The total, when known.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "optional_number"
    )]
    pub total: Option<f64>,
    /// What the server says it is doing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A `tool.result` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResultEvent {
    /// Who called what.
    #[serde(flatten)]
    pub header: CallHeader,
    /// True when the tool failed (its own error, or any failure of the call path).
    pub is_error: bool,
    /// What the model reads.
    pub content: Vec<ContentBlock>,
    /// Why the call failed, for the host: absent on success; kind `tool_error` when the
    /// tool itself reported the error (its content is kept above).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
    /// The MCP `CallToolResult` as the server sent it, kept when the call asked for it
    /// (`ToolCall::mcp_result` of `brain-tools`: a gateway hands it on to its own MCP
    /// client as it came), in which case `content` is left empty. Not part of the
    /// event's JSON.
    #[serde(skip)]
    pub mcp_result: Option<Value>,
}

impl ResultEvent {
    /// A result with content and no error object.
    pub fn new(header: CallHeader, is_error: bool, content: Vec<ContentBlock>) -> Self {
        Self {
            header,
            is_error,
            content,
            error: None,
            mcp_result: None,
        }
    }

    /// A failed result: `is_error` is true, the content is the message as one text block
    /// (what the model reads), and `error` is for the host.
    pub fn failure(header: CallHeader, error: ToolError) -> Self {
        Self {
            header,
            is_error: true,
            content: vec![ContentBlock::text(error.message.clone())],
            error: Some(error),
            mcp_result: None,
        }
    }

    /// The same result with an error object (for a tool's own error, whose content stays).
    pub fn with_error(mut self, error: ToolError) -> Self {
        self.error = Some(error);
        self
    }
}

/// A Brain content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// Its MIME type, e.g. `image/png`.
        mime_type: String,
        /// Its bytes, base64.
        data: String,
    },
    /// Structured content.
    Json {
        /// The value.
        value: Value,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// An image block.
    pub fn image(mime_type: impl Into<String>, data: impl Into<String>) -> Self {
        ContentBlock::Image {
            mime_type: mime_type.into(),
            data: data.into(),
        }
    }

    /// A json block.
    pub fn json(value: Value) -> Self {
        ContentBlock::Json { value }
    }
}

/// Why a call failed, for the host.
///
/// Two questions a host asks before it tries again, answered apart: whether the tool may
/// have run ([`may_have_run`](Self::may_have_run), from `delivery`: trying again may
/// repeat what it did), and whether another try may succeed at all
/// ([`retryable`](Self::retryable): a wrong tool name never will, a server that was down
/// may).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "ToolErrorFields")]
#[non_exhaustive]
pub struct ToolError {
    /// What went wrong.
    pub kind: ErrorKind,
    /// Whether the server may have run the tool.
    pub delivery: Delivery,
    /// Whether the same call, made again unchanged, may succeed: false when it is known
    /// to fail the same way (see [`ErrorKind::retryable_by_default`] and
    /// docs/errors.md). A line without it (written before the field existed) reads as
    /// its kind's default.
    pub retryable: bool,
    /// One sentence that names the tool; never a token or the arguments.
    pub message: String,
}

/// A `ToolError` as JSON has it, `retryable` perhaps missing.
#[derive(Deserialize)]
struct ToolErrorFields {
    kind: ErrorKind,
    delivery: Delivery,
    retryable: Option<bool>,
    message: String,
}

impl From<ToolErrorFields> for ToolError {
    fn from(fields: ToolErrorFields) -> Self {
        Self {
            kind: fields.kind,
            delivery: fields.delivery,
            retryable: fields
                .retryable
                .unwrap_or_else(|| fields.kind.retryable_by_default()),
            message: fields.message,
        }
    }
}

/// `kind (delivery): message`.
impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.kind, self.delivery, self.message)
    }
}

impl std::error::Error for ToolError {}

impl ToolError {
    /// An error, retryable as its kind usually is ([`ErrorKind::retryable_by_default`]);
    /// [`with_retryable`](Self::with_retryable) says otherwise when the one reporting it
    /// knows better.
    pub fn new(kind: ErrorKind, delivery: Delivery, message: impl Into<String>) -> Self {
        Self {
            kind,
            delivery,
            retryable: kind.retryable_by_default(),
            message: message.into(),
        }
    }

    /// The same error, saying whether another try may succeed.
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// Whether the server may have run the tool (delivery `unknown` or `delivered`):
    /// trying again may repeat what it did. False only for `not_sent`.
    pub fn may_have_run(&self) -> bool {
        self.delivery.may_have_run()
    }

    /// Whether the same call, made again unchanged, may succeed (the `retryable` field).
    pub fn retryable(&self) -> bool {
        self.retryable
    }
}

/// The kinds of failure, each with its own handling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// No such tool for this tenant (or the tenant may not use it). Not sent.
    UnknownTool,
    /// The arguments do not satisfy the input schema. Not sent.
    InvalidArguments,
    /// The binding's `token_env` variable is not set. Not sent.
    MissingToken,
    /// The server could not be reached.
    Connect,
    /// The server answered with an HTTP error status.
    HttpStatus,
    /// The server's answer was not valid MCP.
    Protocol,
    /// The call's deadline passed.
    Timeout,
    /// The caller cancelled the call.
    Cancelled,
    /// The response exceeded `max_output_bytes`.
    OutputTooLarge,
    /// The tool reported an error (`isError`); its content is kept. Delivered.
    ToolError,
    /// The structured output does not satisfy `output_schema`. Delivered.
    OutputSchema,
    /// The host's executor for HTTP tools failed or is missing.
    Executor,
    /// No usable OAuth grant for the tenant: none was made, the refresh token was
    /// rejected, or the server needs more scope than the tenant granted. Someone must
    /// authorize again (`mcp-tools login`). Not sent.
    AuthorizationRequired,
    /// Obtaining an access token failed: the authorization server's metadata was
    /// invalid, its issuer was not the pinned one, the resource did not match, or the
    /// token endpoint refused. Not sent.
    AuthorizationFailed,
    /// The credential store that holds the tenant's grant could not be reached or read
    /// (a database down, a record that cannot be read: the message names it). Not sent;
    /// calls whose token is still in memory go on meanwhile.
    CredentialStore,
    /// A stdio server's process ended while it had the call (it crashed, was killed, or
    /// exited without answering): the message gives its exit status. `unknown` once the
    /// call was written.
    ServerExited,
}

impl ErrorKind {
    /// The snake_case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorKind::UnknownTool => "unknown_tool",
            ErrorKind::InvalidArguments => "invalid_arguments",
            ErrorKind::MissingToken => "missing_token",
            ErrorKind::Connect => "connect",
            ErrorKind::HttpStatus => "http_status",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::OutputTooLarge => "output_too_large",
            ErrorKind::ToolError => "tool_error",
            ErrorKind::OutputSchema => "output_schema",
            ErrorKind::Executor => "executor",
            ErrorKind::AuthorizationRequired => "authorization_required",
            ErrorKind::AuthorizationFailed => "authorization_failed",
            ErrorKind::CredentialStore => "credential_store",
            ErrorKind::ServerExited => "server_exited",
        }
    }

    /// Whether another try of a call that failed so usually may succeed, when the one who
    /// reports the failure knows no better (the transport and `ToolHost` do, per cause:
    /// a refused connection may succeed later, a stdio command that cannot start will
    /// not; a 503 may pass, a 403 will not; a broken stream may, an answer that is not
    /// MCP will not). False for what stays as it is until someone changes something: an
    /// unknown tool, invalid arguments, a missing token, a refusing status, an answer that
    /// is not MCP, an output over budget or off its schema, a tool's own error (its
    /// content says more), no executor, an authorization someone must give or fix. True
    /// for what may pass: a server unreachable, a deadline, a cancel, a store that is
    /// down, a process that died.
    pub fn retryable_by_default(self) -> bool {
        match self {
            ErrorKind::UnknownTool
            | ErrorKind::InvalidArguments
            | ErrorKind::MissingToken
            | ErrorKind::HttpStatus
            | ErrorKind::Protocol
            | ErrorKind::OutputTooLarge
            | ErrorKind::ToolError
            | ErrorKind::OutputSchema
            | ErrorKind::Executor
            | ErrorKind::AuthorizationRequired
            | ErrorKind::AuthorizationFailed => false,
            ErrorKind::Connect
            | ErrorKind::Timeout
            | ErrorKind::Cancelled
            | ErrorKind::CredentialStore
            | ErrorKind::ServerExited => true,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether the server may have run the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Delivery {
    /// The request never left: the tool did not run. Safe to try again.
    NotSent,
    /// The request may have reached the server: the tool may have run. Check before
    /// trying again.
    Unknown,
    /// The server answered: the tool ran (or refused).
    Delivered,
}

/// The snake_case name (`not_sent`, `unknown`, `delivered`).
impl fmt::Display for Delivery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Delivery {
    /// The snake_case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Delivery::NotSent => "not_sent",
            Delivery::Unknown => "unknown",
            Delivery::Delivered => "delivered",
        }
    }

    /// Whether the server may have run the tool: false only for `not_sent`, so a host's
    /// retry logic needs no guessed arm for a value added later.
    pub fn may_have_run(self) -> bool {
        match self {
            Delivery::NotSent => false,
            Delivery::Unknown | Delivery::Delivered => true,
        }
    }
}

fn number<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    // Integral progress reads as 2, not 2.0; 2^53 is the last exactly integral f64.
    if value.fract() == 0.0 && value.abs() < 9_007_199_254_740_992.0 {
        serializer.serialize_i64(*value as i64)
    } else {
        serializer.serialize_f64(*value)
    }
}

fn optional_number<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(value) => number(value, serializer),
        None => serializer.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_and_deliveries_print_as_a_person_reads_them() {
        let error = ToolError::new(ErrorKind::Timeout, Delivery::Unknown, "search timed out");
        assert_eq!(error.to_string(), "timeout (unknown): search timed out");
        let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(error);
        assert!(boxed.source().is_none());
        assert_eq!(Delivery::NotSent.to_string(), "not_sent");
    }

    /// The two questions a host asks before it tries again, on the error and in its JSON.
    #[test]
    fn an_error_says_whether_the_tool_may_have_run_and_whether_a_retry_may_succeed() {
        let unknown = ToolError::new(ErrorKind::UnknownTool, Delivery::NotSent, "no");
        assert!(!unknown.may_have_run() && !unknown.retryable());
        let timeout = ToolError::new(ErrorKind::Timeout, Delivery::Unknown, "slow");
        assert!(timeout.may_have_run() && timeout.retryable());
        let refused =
            ToolError::new(ErrorKind::Connect, Delivery::NotSent, "x").with_retryable(false);
        assert!(!refused.may_have_run() && !refused.retryable());
        assert_eq!(
            serde_json::to_string(&refused).unwrap(),
            r#"{"kind":"connect","delivery":"not_sent","retryable":false,"message":"x"}"#
        );
        // A line written before the field existed reads as its kind's default.
        let old: ToolError =
            serde_json::from_str(r#"{"kind":"timeout","delivery":"unknown","message":"m"}"#)
                .unwrap();
        assert!(old.retryable);
        let round: ToolError =
            serde_json::from_str(&serde_json::to_string(&refused).unwrap()).unwrap();
        assert_eq!(round, refused);
    }
}
