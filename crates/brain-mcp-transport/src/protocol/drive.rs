//! One call over an open MCP context: the loop that sends it (and any `input_required`
//! rounds) and waits for the result while watching the deadline, the caller's
//! cancellation and the budget; the cancel notice; the error for a stopped call.

use std::time::Duration;

use std::sync::Arc;

use rmcp::{
    Peer, RoleClient,
    model::{
        CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
        InputResponses, RequestId, RequestMetaObject, ServerResult, TASKS_EXTENSION_ID,
    },
    service::{PeerRequestOptions, ServiceError},
};
use serde_json::Value;
use tokio::time::Instant;

use crate::{
    api::{CallRequest, Era, JsonObject},
    call_state::{CALL_MARKER, CallState, Registry},
    endpoint::Endpoint,
    error::{
        CallError,
        classify::{Cause, Failure, Wire, classify},
    },
    protocol::{
        handler::Handler,
        outcome::{NOT_AN_OBJECT, Stop, TASK, check_result},
        task,
    },
};

/// Where a 2026-07-28 request's `_meta` carries the client's capabilities.
const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// At most this many `input_required` rounds (2026-07-28) before the call fails.
const MAX_INPUT_ROUNDS: usize = 8;

const OTHER_METHOD: &str = "the result of another method";

/// Sends the call (and any `input_required` follow-ups) and waits for its result; a call
/// the server answers with a task follows the task to its end (`protocol/task.rs`).
pub(crate) async fn drive_call(
    peer: &Peer<RoleClient>,
    handler: &Handler,
    registry: &Arc<Registry>,
    call_key: u64,
    state: &CallState,
    request: &CallRequest,
) -> Result<Value, Stop> {
    let mut params = CallToolRequestParams::new(request.tool.clone());
    params.arguments = Some(request.arguments.clone());
    let mut meta = RequestMetaObject::new();
    meta.0.0.extend(request.meta.clone());
    // SEP-414: the caller's trace context beside its own entries (which win).
    crate::telemetry::add_trace(&mut meta.0.0, &request.trace);
    meta.0
        .0
        .insert(CALL_MARKER.to_owned(), Value::from(call_key));
    // The context declares the tasks extension on every request (2026-07-28); a binding
    // that turns tasks off sends its call with the same capabilities, less the extension.
    let tasks = handler.declares_tasks() && request.tasks;
    if handler.declares_tasks() && !request.tasks {
        meta.0.0.insert(
            CLIENT_CAPABILITIES.to_owned(),
            handler.capabilities_without_tasks(),
        );
    }
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
        // A task's time to live counts from here (the server's, from a moment later).
        let sending = Instant::now();
        // Boxed: sending is over before the call waits for its answer, so rmcp's state of
        // the send (3 KB, most of this future) is freed then instead of held in flight.
        let sent = Box::pin(peer.send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params.clone())),
            PeerRequestOptions::no_options().with_meta(meta.clone()),
        ))
        .await;
        let mut handle = match sent {
            Ok(handle) => handle,
            Err(error) => return Err(Stop::Failed(error)),
        };
        // Until it is answered, the request may be running on the server.
        state.set_request(Some(handle.id.clone()));
        request.report.set_request_id(handle.id.to_string());
        state.count_round();
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
        let value = match result {
            ServerResult::CallToolResult(result) => {
                serde_json::to_value(result).map_err(|_| Stop::NotAResult(NOT_AN_OBJECT))?
            }
            ServerResult::CustomResult(custom) => custom.0,
            ServerResult::EmptyResult(_) => Value::Object(JsonObject::new()),
            // The server took the call as a task: from here on only polls go out. Boxed:
            // its state is most of this future's, which every call in flight would hold.
            ServerResult::CreateTaskResult(created) if tasks => {
                return Box::pin(task::follow(
                    peer,
                    handler,
                    registry,
                    state,
                    request,
                    (created, sending),
                ))
                .await;
            }
            ServerResult::CreateTaskResult(_)
            | ServerResult::GetTaskResult(_)
            | ServerResult::TaskAckResult(_) => return Err(Stop::NotAResult(TASK)),
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
                continue;
            }
            _ => return Err(Stop::NotAResult(OTHER_METHOD)),
        };
        check_result(&value).map_err(Stop::NotAResult)?;
        return Ok(value);
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

/// What a call gave up on the server when it stopped early: its request, still running
/// (with the reason for `notifications/cancelled`), or its task (`tasks/cancel`, with
/// the call's trace context).
#[derive(Debug)]
pub(crate) enum Abandoned {
    Request(RequestId, &'static str),
    Task(Arc<str>, JsonObject),
}

impl Abandoned {
    /// The request, for contexts that never run tasks (legacy sessions).
    pub(crate) fn request(self) -> Option<(RequestId, &'static str)> {
        match self {
            Abandoned::Request(id, reason) => Some((id, reason)),
            Abandoned::Task(..) => None,
        }
    }
}

/// Tells the server what the call abandoned, within `bound`.
pub(crate) async fn abandon(peer: &Peer<RoleClient>, abandoned: Abandoned, bound: Duration) {
    match abandoned {
        Abandoned::Request(id, reason) => cancel_request(peer, id, reason, bound).await,
        Abandoned::Task(id, trace) => task::cancel_task(peer, &id, &trace, bound).await,
    }
}

/// Why a call gave up what was running on the server: the reason sent with
/// `notifications/cancelled` for its request, or, once the call became a task (`task`),
/// that it gives the task up (`tasks/cancel`). `None` when the stop needs no notice.
///
/// Without a task: a request that failed on its own (a transport error, a JSON-RPC error,
/// an answer that is not a result) has nothing left running to cancel. With a task, only
/// the task's own end (failed, cancelled by the server) needs none: any other stop leaves
/// the task as last seen, running, also when the server's answer about it broke the
/// protocol (a completed task without a result, a status this client does not know, an
/// answer about another task, a `tasks/get` refused or failed for good).
pub(crate) fn cancel_reason(stop: &Stop, task: bool) -> Option<&'static str> {
    match stop {
        Stop::Timeout => Some("timeout"),
        Stop::Cancelled => Some("cancelled by the caller"),
        Stop::Overflow => Some("output exceeded the byte budget"),
        // A task waiting for input this host does not give would wait for ever.
        Stop::InputRefused(_) => Some("the task asked for input this host does not give"),
        Stop::TaskExpired { .. } => Some("the task outlived its time to live"),
        Stop::TaskFailed(..) | Stop::TaskCancelled => None,
        // A poll refused once the task's time to live passed is the server's verdict on
        // the task: nothing left running to cancel.
        Stop::PollRefused(_, Some(_)) => None,
        Stop::Failed(_)
        | Stop::NotAResult(_)
        | Stop::PollRefused(_, None)
        | Stop::PollFailed(_) => {
            task.then_some("the server's answers about the task broke the protocol")
        }
    }
}

/// What a refusal of the call says about tasks, added to its message: a server that
/// runs the tool only as a task refuses a call that did not declare the extension with
/// -32021 naming it (in the 2026-07-28 era the binding turned tasks off; a 2025-11-25
/// session cannot declare it); a 2025-11-25 server refuses a tool whose
/// `execution.taskSupport` is `required` with -32601 (this client runs no task in that
/// era). `tasks`: whether the call declared the extension.
pub(crate) fn tasks_hint(
    stop: &Stop,
    era: Era,
    tasks: bool,
    first_round: bool,
) -> Option<&'static str> {
    let Stop::Failed(ServiceError::McpError(error)) = stop else {
        return None;
    };
    if !first_round {
        return None;
    }
    let needs_tasks = || {
        error
            .data
            .as_ref()
            .and_then(|data| data.pointer("/requiredCapabilities/extensions"))
            .and_then(Value::as_object)
            .is_some_and(|extensions| extensions.contains_key(TASKS_EXTENSION_ID))
    };
    match (era, error.code.0) {
        // Declared, and still refused for want of it: the server's word stands alone.
        (Era::Modern, -32021) if !tasks && needs_tasks() => Some(
            "; the tool runs only as a task, and this binding turns tasks off (\"tasks\": \
             false)",
        ),
        (Era::Legacy, -32021) if needs_tasks() => Some(
            "; the tool runs only as a task, which this host supports in the 2026-07-28 era \
             (this server was reached in the 2025-11-25 era)",
        ),
        (Era::Legacy, -32601) => Some(
            "; a 2025-11-25 server refuses so a tool that requires tasks (execution.taskSupport \
             \"required\"): such a tool requires tasks, which this host supports in the \
             2026-07-28 era",
        ),
        _ => None,
    }
}

/// The error for a stopped call: how far the call's request got, and why it stopped.
pub(crate) fn stopped(
    stop: &Stop,
    state: &CallState,
    other_failure: Option<Failure>,
    endpoint: &Endpoint,
) -> CallError {
    // Abandoning makes `not_sent` final: a request still queued in rmcp is not written.
    // Once the server answered with a task, the tool exists on the server.
    let wire = if state.abandon() {
        Wire::NotWritten
    } else if state.task().is_some() {
        Wire::Task
    } else {
        Wire::MayHaveReached
    };
    // Only the call's own request, in its first round, may have been refused before it
    // ran; any other failure (another request of the context, a later round of an
    // `input_required` exchange whose first round reached the server) only names the kind.
    let own = state.failure();
    let first_round = state.rounds() <= 1;
    let cause = match stop {
        _ if state.is_overflowed() => Cause::OverBudget {
            budget: state.budget(),
        },
        Stop::Overflow => Cause::OverBudget {
            budget: state.budget(),
        },
        Stop::Timeout => Cause::Timeout,
        Stop::Cancelled => Cause::Cancelled,
        Stop::InputRefused(error) => Cause::InputRefused {
            message: &error.message,
        },
        Stop::NotAResult(what) => Cause::NotAResult(what),
        Stop::TaskFailed(error, after_ttl) => Cause::TaskFailed {
            code: error.code.0,
            message: &error.message,
            after_ttl: *after_ttl,
        },
        Stop::TaskCancelled => Cause::TaskCancelled,
        Stop::TaskExpired { ttl_ms } => Cause::TaskExpired { ttl_ms: *ttl_ms },
        Stop::PollRefused(error, after_ttl) => Cause::PollRefused {
            code: error.code.0,
            message: &error.message,
            after_ttl: *after_ttl,
        },
        Stop::PollFailed(failure) => Cause::Elsewhere(failure),
        Stop::Failed(ServiceError::McpError(error)) => Cause::JsonRpc {
            code: error.code.0,
            message: &error.message,
            first_round,
        },
        Stop::Failed(_) => match (&own, &other_failure) {
            (Some(failure), _) if first_round => Cause::Transport(failure),
            (Some(failure), _) | (None, Some(failure)) => Cause::Elsewhere(failure),
            (None, None) => Cause::Closed,
        },
    };
    let error = classify(wire, &cause, endpoint);
    // A status on the call's own `tools/call` (not its handshake, not a listing): when it
    // is a refusal for want of authorization, sending it again is the call's one resend.
    if wire == Wire::MayHaveReached && matches!(cause, Cause::Transport(_)) {
        error.refusing_the_call()
    } else {
        error
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ErrorCode, ErrorData};
    use serde_json::json;

    use super::*;

    #[test]
    fn a_refusal_for_want_of_tasks_says_so() {
        let refused = |code: i32, data: Option<Value>| {
            Stop::Failed(ServiceError::McpError(ErrorData::new(
                ErrorCode(code),
                "refused",
                data,
            )))
        };
        let wants_tasks =
            || Some(json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION_ID: {}}}}));
        let wants_other =
            || Some(json!({"requiredCapabilities": {"extensions": {"x.dev/other": {}}}}));
        // (stop, era, tasks declared, first round, a phrase of the hint)
        let cases = [
            (
                refused(-32021, wants_tasks()),
                Era::Modern,
                false,
                true,
                Some("this binding turns tasks off"),
            ),
            (
                refused(-32021, wants_tasks()),
                Era::Modern,
                true,
                true,
                None,
            ),
            (
                refused(-32021, wants_other()),
                Era::Modern,
                false,
                true,
                None,
            ),
            (refused(-32021, None), Era::Modern, false, true, None),
            (
                refused(-32021, wants_tasks()),
                Era::Legacy,
                false,
                true,
                Some("which this host supports in the 2026-07-28 era (this server"),
            ),
            (
                refused(-32601, None),
                Era::Legacy,
                false,
                true,
                Some("execution.taskSupport \"required\""),
            ),
            (refused(-32601, None), Era::Modern, true, true, None),
            (refused(-32601, None), Era::Legacy, false, false, None),
            (
                refused(-32021, wants_tasks()),
                Era::Modern,
                false,
                false,
                None,
            ),
            (
                refused(-32602, wants_tasks()),
                Era::Legacy,
                false,
                true,
                None,
            ),
            (Stop::Timeout, Era::Legacy, false, true, None),
        ];
        for (stop, era, tasks, first_round, phrase) in cases {
            let hint = tasks_hint(&stop, era, tasks, first_round);
            match phrase {
                Some(phrase) => assert!(
                    hint.is_some_and(|hint| hint.contains(phrase)),
                    "{stop:?} {era:?} {tasks}: {hint:?}"
                ),
                None => assert_eq!(hint, None, "{stop:?} {era:?} {tasks}"),
            }
        }
    }

    #[test]
    fn a_task_is_given_up_unless_it_ended_a_request_only_when_still_running() {
        let error = || ErrorData::new(ErrorCode(-32602), "unknown task", None);
        let is = |reason: Option<&str>| reason.is_some();
        // (stop, cancelled without a task, with one)
        let cases = [
            (Stop::Timeout, true, true),
            (Stop::Cancelled, true, true),
            (Stop::Overflow, true, true),
            (Stop::InputRefused(error()), true, true),
            (Stop::TaskExpired { ttl_ms: 5 }, true, true),
            // A request that failed on its own has nothing left running; a task the
            // server's broken answers leave running is given up.
            (Stop::Failed(ServiceError::TransportClosed), false, true),
            (Stop::Failed(ServiceError::McpError(error())), false, true),
            (
                Stop::NotAResult("an answer about another task"),
                false,
                true,
            ),
            (Stop::PollRefused(error(), None), false, true),
            (Stop::PollFailed(Failure::Broken), false, true),
            // The task ended on the server (a poll refused past its ttlMs: deleted).
            (Stop::TaskFailed(error(), None), false, false),
            (Stop::TaskFailed(error(), Some(500)), false, false),
            (Stop::PollRefused(error(), Some(500)), false, false),
            (Stop::TaskCancelled, false, false),
        ];
        for (stop, without, with) in cases {
            assert_eq!(
                (
                    is(cancel_reason(&stop, false)),
                    is(cancel_reason(&stop, true))
                ),
                (without, with),
                "{stop:?}"
            );
        }
    }
}
