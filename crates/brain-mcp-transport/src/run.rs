//! One call over an open MCP context: the request, its limits, and the loop that waits
//! for the result while watching the deadline, the caller's cancellation and the budget.

use std::time::Duration;

use rmcp::{
    Peer, RoleClient,
    model::{
        CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
        ErrorData, InputResponses, RequestId, RequestMetaObject, ServerResult,
    },
    service::{PeerRequestOptions, ServiceError},
};
use serde_json::Value;
use tokio::{sync::mpsc, time::Instant};
use tokio_util::sync::CancellationToken;

use crate::{
    JsonObject,
    calls::{CALL_MARKER, CallState, Failure},
    endpoint::Endpoint,
    error::{CallError, Delivery, ErrorKind},
    handler::Handler,
};

/// At most this many `input_required` rounds (2026-07-28) before the call fails.
const MAX_INPUT_ROUNDS: usize = 8;

/// One progress notification of a call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// Progress so far.
    pub progress: f64,
    /// The total, when the server knows it.
    pub total: Option<f64>,
    /// What the server says it is doing.
    pub message: Option<String>,
}

impl Progress {
    /// A progress update (for hosts' own executors).
    pub fn new(progress: f64, total: Option<f64>, message: Option<String>) -> Self {
        Self {
            progress,
            total,
            message,
        }
    }
}

/// The protocol era that served a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Era {
    /// The initialize lifecycle (protocol up to 2025-11-25): a session per call.
    Legacy,
    /// The 2026-07-28 stateless lifecycle: one self-contained request per call.
    Modern,
}

/// One `tools/call`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CallRequest {
    /// The server.
    pub endpoint: Endpoint,
    /// The tool's name on the server.
    pub tool: String,
    /// The arguments.
    pub arguments: JsonObject,
    /// Entries added to `params._meta` (for example `brain.dev/scope`).
    pub meta: JsonObject,
    /// The `progressToken` on the wire (the call ID).
    pub progress_token: String,
    /// When the whole call (open, call, stream, return) must be over.
    pub deadline: Instant,
    /// Bound on the bytes of the call's response as received.
    pub max_output_bytes: usize,
    /// Cancels the call.
    pub cancel: CancellationToken,
    /// Where progress notifications go, in wire order, all before the call returns.
    pub progress: Option<mpsc::UnboundedSender<Progress>>,
    /// The tool's input schema marks arguments to mirror in `Mcp-Param-*` headers
    /// (`x-mcp-header`, 2026-07-28): the server's tool list is read once per shared
    /// client so that rmcp knows the annotations.
    pub param_headers: bool,
}

impl CallRequest {
    /// A call with no arguments, no extra `_meta`, a 1 MiB budget and no progress channel.
    pub fn new(
        endpoint: Endpoint,
        tool: impl Into<String>,
        progress_token: impl Into<String>,
        timeout: Duration,
    ) -> Self {
        Self {
            endpoint,
            tool: tool.into(),
            arguments: JsonObject::new(),
            meta: JsonObject::new(),
            progress_token: progress_token.into(),
            deadline: Instant::now() + timeout,
            max_output_bytes: 1_048_576,
            cancel: CancellationToken::new(),
            progress: None,
            param_headers: false,
        }
    }

    /// Sets the arguments.
    pub fn arguments(mut self, arguments: JsonObject) -> Self {
        self.arguments = arguments;
        self
    }

    /// Sets the extra `_meta` entries.
    pub fn meta(mut self, meta: JsonObject) -> Self {
        self.meta = meta;
        self
    }

    /// Sets the deadline.
    pub fn deadline(mut self, deadline: Instant) -> Self {
        self.deadline = deadline;
        self
    }

    /// Sets the byte budget.
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// Sets the cancellation token.
    pub fn cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Says whether the tool's schema has `x-mcp-header` annotations.
    pub fn param_headers(mut self, annotated: bool) -> Self {
        self.param_headers = annotated;
        self
    }

    /// Sets the progress channel.
    pub fn progress(mut self, progress: mpsc::UnboundedSender<Progress>) -> Self {
        self.progress = Some(progress);
        self
    }
}

/// A call's result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CallOutcome {
    /// The `CallToolResult` as the server sent it (`content`, `structuredContent`,
    /// `isError`, ...).
    pub result: Value,
    /// The era that served it.
    pub era: Era,
}

/// Why waiting for a result stopped before one came.
#[derive(Debug)]
pub(crate) enum Stop {
    /// The deadline passed.
    Timeout,
    /// The caller cancelled.
    Cancelled,
    /// The response went over budget.
    Overflow,
    /// rmcp gave up (transport error, JSON-RPC error, ...).
    Failed(ServiceError),
    /// The server asked for input this client does not give.
    InputRefused(ErrorData),
}

/// Sends the call (and any `input_required` follow-ups) and waits for its result.
pub(crate) async fn drive_call(
    peer: &Peer<RoleClient>,
    handler: &Handler,
    call_key: u64,
    state: &CallState,
    request: &CallRequest,
) -> Result<Value, Stop> {
    let mut params = CallToolRequestParams::new(request.tool.clone());
    params.arguments = Some(request.arguments.clone());
    let mut meta = RequestMetaObject::new();
    meta.0.0.extend(request.meta.clone());
    meta.0
        .0
        .insert(CALL_MARKER.to_owned(), Value::from(call_key));
    for _round in 0..MAX_INPUT_ROUNDS {
        // Opening may have taken the whole deadline: never send a call that is already over.
        let over = if request.cancel.is_cancelled() {
            Some(Stop::Cancelled)
        } else if Instant::now() >= request.deadline {
            Some(Stop::Timeout)
        } else {
            None
        };
        if let Some(stop) = over {
            return Err(stop);
        }
        let sent = peer
            .send_request_with_option(
                ClientRequest::CallToolRequest(CallToolRequest::new(params.clone())),
                PeerRequestOptions::no_options().with_meta(meta.clone()),
            )
            .await;
        let mut handle = match sent {
            Ok(handle) => handle,
            Err(error) => return Err(Stop::Failed(error)),
        };
        // Until it is answered, the request may be running on the server.
        state.set_request(Some(handle.id.clone()));
        let answer = tokio::select! {
            biased;
            () = state.overflowed() => return Err(Stop::Overflow),
            answer = &mut handle.rx => answer,
            () = tokio::time::sleep_until(request.deadline) => return Err(Stop::Timeout),
            () = request.cancel.cancelled() => return Err(Stop::Cancelled),
        };
        if matches!(answer, Ok(Ok(_) | Err(ServiceError::McpError(_)))) {
            // The server answered: nothing of this request is left running to cancel.
            state.set_request(None);
        }
        // A failed stream may report its failure just before the overflow it caused.
        if state.is_overflowed() {
            return Err(Stop::Overflow);
        }
        let result = match answer {
            Ok(Ok(result)) => result,
            Ok(Err(error)) => return Err(Stop::Failed(error)),
            Err(_) => return Err(Stop::Failed(ServiceError::TransportClosed)),
        };
        match result {
            ServerResult::CallToolResult(result) => {
                return serde_json::to_value(result)
                    .map_err(|_| Stop::Failed(ServiceError::UnexpectedResponse));
            }
            ServerResult::CustomResult(custom) => return Ok(custom.0),
            ServerResult::EmptyResult(_) => return Ok(serde_json::json!({"content": []})),
            ServerResult::InputRequiredResult(required) => {
                let mut responses = InputResponses::new();
                for (key, input) in required.input_requests.iter().flatten() {
                    match handler.answer(input) {
                        Ok(answer) => {
                            responses.insert(key.clone(), answer);
                        }
                        Err(error) => return Err(Stop::InputRefused(error)),
                    }
                }
                params.input_responses = (!responses.is_empty()).then_some(responses);
                params.request_state = required.request_state;
            }
            _ => return Err(Stop::Failed(ServiceError::UnexpectedResponse)),
        }
    }
    Err(Stop::Failed(ServiceError::InputRequiredRoundsExceeded {
        max_rounds: MAX_INPUT_ROUNDS,
    }))
}

/// Tells the server a request is abandoned: `notifications/cancelled` on legacy HTTP and
/// stdio; on 2026-07-28 HTTP rmcp closes the request's stream instead, which is that
/// revision's cancellation.
pub(crate) async fn cancel_request(
    peer: &Peer<RoleClient>,
    id: RequestId,
    reason: &str,
    bound: Duration,
) {
    let notify = peer.notify_cancelled(CancelledNotificationParam::new(
        Some(id),
        Some(reason.to_owned()),
    ));
    let _ = tokio::time::timeout(bound, notify).await;
}

/// The reason sent with `notifications/cancelled`.
/// `None` when the stop needs no notice (the request failed on its own).
pub(crate) fn cancel_reason(stop: &Stop) -> Option<&'static str> {
    match stop {
        Stop::Timeout => Some("timeout"),
        Stop::Cancelled => Some("cancelled by the caller"),
        Stop::Overflow => Some("output exceeded the byte budget"),
        Stop::Failed(_) | Stop::InputRefused(_) => None,
    }
}

/// The error for a stopped call.
pub(crate) fn classify(
    stop: &Stop,
    state: &CallState,
    other_failure: Option<Failure>,
    endpoint: &Endpoint,
) -> CallError {
    // Abandoning makes `not_sent` final: a request still queued in rmcp is not written.
    let sent = !state.abandon();
    let after_send = if sent {
        Delivery::Unknown
    } else {
        Delivery::NotSent
    };
    let overflow = || {
        CallError::new(
            ErrorKind::OutputTooLarge,
            after_send,
            format!("the output exceeded {} bytes", state.budget()),
        )
    };
    if state.is_overflowed() {
        return overflow();
    }
    match stop {
        Stop::Timeout => CallError::new(ErrorKind::Timeout, after_send, "timed out"),
        Stop::Cancelled => CallError::new(ErrorKind::Cancelled, after_send, "was cancelled"),
        Stop::Overflow => overflow(),
        Stop::InputRefused(error) => CallError::new(
            ErrorKind::Protocol,
            Delivery::Unknown,
            format!(
                "the server asked for input this host does not give ({})",
                endpoint.quote(&error.message, 120)
            ),
        ),
        Stop::Failed(ServiceError::McpError(error)) => CallError::new(
            ErrorKind::Protocol,
            Delivery::Unknown,
            format!(
                "the server returned JSON-RPC error {}: {}",
                error.code.0,
                endpoint.quote(&error.message, 200)
            ),
        ),
        Stop::Failed(_) => match state.failure().or(other_failure) {
            Some(failure) => from_failure(&failure, after_send, endpoint),
            None if sent => CallError::new(
                ErrorKind::Protocol,
                Delivery::Unknown,
                "the connection closed before the result",
            ),
            None => CallError::new(
                ErrorKind::Connect,
                Delivery::NotSent,
                format!("could not reach {}", endpoint.describe()),
            ),
        },
    }
}

/// The error for what the transport recorded.
pub(crate) fn from_failure(
    failure: &Failure,
    delivery: Delivery,
    endpoint: &Endpoint,
) -> CallError {
    match failure {
        Failure::Connect if delivery == Delivery::NotSent => CallError::new(
            ErrorKind::Connect,
            Delivery::NotSent,
            format!("could not connect to {}", endpoint.describe()),
        ),
        // The call went out; reconnecting (to resume its stream) failed.
        Failure::Connect => CallError::new(
            ErrorKind::Protocol,
            delivery,
            format!(
                "the connection to {} was lost before the result",
                endpoint.describe()
            ),
        ),
        Failure::InvalidUrl => CallError::new(
            ErrorKind::Connect,
            Delivery::NotSent,
            "the endpoint URL is not a valid http or https URL",
        ),
        Failure::Status(status) => CallError::http_status(*status, delivery),
        // Before the call went out, a connection that breaks is one that could not be
        // used: the server was not reached.
        Failure::Broken if delivery == Delivery::NotSent => CallError::new(
            ErrorKind::Connect,
            Delivery::NotSent,
            format!(
                "the connection to {} closed before the call was sent",
                endpoint.describe()
            ),
        ),
        Failure::Broken => CallError::new(
            ErrorKind::Protocol,
            delivery,
            "the connection broke before the result",
        ),
        Failure::Protocol(what) => CallError::new(
            ErrorKind::Protocol,
            delivery,
            format!("the server answered with {what}"),
        ),
    }
}
