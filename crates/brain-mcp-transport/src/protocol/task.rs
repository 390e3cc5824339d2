//! A call the server answered with a task (the 2026-07-28 tasks extension, SEP-2663):
//! polling `tasks/get` until the task ends, within the call's deadline, the task's time to
//! live and the call's byte budget; answering the input a task asks for as the host's
//! server-request policy says; and `tasks/cancel` when the call gives the task up.
//!
//! rmcp sends the messages (`Peer::get_task`, `update_task`, `cancel_task`: their
//! `Mcp-Name` header is the task id, and the capabilities in their `_meta` are the
//! context's, which declare the extension); this module adds what rmcp leaves to its
//! caller: when to poll, for how long, what counts against the budget, which failures
//! are worth another poll, and what each end of a task means for the call.

use std::{collections::HashSet, sync::Arc, time::Duration};

use rmcp::{
    Peer, RoleClient,
    model::{
        CancelTaskParams, CreateTaskResult, ErrorData, GetTaskParams, InputResponses,
        RequestMetaObject, Task, TaskPayload, UpdateTaskParams,
    },
    service::ServiceError,
};
use serde_json::Value;
use tokio::time::Instant;

use crate::{
    api::{CallRequest, JsonObject},
    call_state::{CALL_MARKER, CallState, Registry},
    error::classify::Failure,
    protocol::{
        handler::Handler,
        outcome::{Stop, check_result},
    },
};

/// The shortest wait between two polls, whatever the server suggests: the extension's
/// reference client (`@modelcontextprotocol/ext-tasks`) polls no faster either, so a
/// server that suggests 0 ms gets no busy loop from us.
pub(crate) const MIN_POLL_INTERVAL: Duration = Duration::from_millis(10);
/// The wait when the server suggests none: the reference client's default, and rmcp's
/// `TaskManager` default.
pub(crate) const DEFAULT_POLL_INTERVAL: Duration = Duration::from_secs(1);
/// The longest wait between two polls, whatever the server suggests: a call that may
/// last much longer still sees a finished task within this.
pub(crate) const MAX_POLL_INTERVAL: Duration = Duration::from_secs(30);
/// At most this many `tasks/update` answers per task.
const MAX_INPUT_ROUNDS: usize = 8;
/// What an answer to `tasks/get` naming another task is, in the call's error.
const ANOTHER_TASK: &str = "an answer to tasks/get about another task than the call's";
/// How long past a task's `ttlMs` the call still polls for the server's verdict (a task
/// the server failed, or deleted, at its time to live), when one poll interval is less.
pub(crate) const TTL_GRACE: Duration = Duration::from_secs(2);

/// How long past its `ttlMs` a task is still polled for the server's verdict: the grace,
/// or one poll interval when that is longer, so that at least one poll comes after it.
pub(crate) fn ttl_grace(interval: Duration) -> Duration {
    interval.max(TTL_GRACE)
}

/// The wait before the next poll: the server's suggestion within our bounds, doubled for
/// every poll in a row that failed on the wire (still within the bounds).
pub(crate) fn poll_interval(suggested_ms: Option<u64>, failed_in_a_row: u32) -> Duration {
    let base = suggested_ms.map_or(DEFAULT_POLL_INTERVAL, Duration::from_millis);
    let backoff = 1u32
        .checked_shl(failed_in_a_row.min(16))
        .unwrap_or(u32::MAX);
    base.clamp(MIN_POLL_INTERVAL, MAX_POLL_INTERVAL)
        .saturating_mul(backoff)
        .min(MAX_POLL_INTERVAL)
}

/// Whether a poll that got no answer may go again: it failed on the wire (no connection,
/// a broken stream, a server error or overload), not because the server refused it (a
/// 4xx status, an answer that is not MCP).
pub(crate) fn worth_another_poll(failure: Option<&Failure>) -> bool {
    match failure {
        None | Some(Failure::Connect | Failure::Broken) => true,
        Some(Failure::Status { status, .. }) => matches!(status, 408 | 429 | 500..=599),
        Some(_) => false,
    }
}

/// What the call knows of its task.
struct Tracked {
    id: String,
    /// The server's suggested poll interval, as last seen.
    poll_ms: Option<u64>,
    /// When the task's time to live ends (from when the call was sent: our clock, not
    /// the server's `createdAt`, and no later than the server's own count, which starts
    /// when the call arrived), as last seen; `None`: unlimited.
    expires: Option<Instant>,
    ttl_ms: Option<u64>,
    sent: Instant,
    status_message: Option<String>,
}

impl Tracked {
    fn new(task: &Task, sent: Instant) -> Self {
        let mut tracked = Self {
            id: task.task_id.clone(),
            poll_ms: None,
            expires: None,
            ttl_ms: None,
            sent,
            status_message: None,
        };
        tracked.update(task);
        tracked
    }

    /// Takes what the server says now (both hints may change over a task's life).
    fn update(&mut self, task: &Task) {
        self.poll_ms = task.poll_interval_ms;
        self.ttl_ms = task.ttl_ms;
        self.expires = task
            .ttl_ms
            .map(|ttl| self.sent + Duration::from_millis(ttl));
    }

    /// The task's time to live (ms), once it has passed.
    fn ttl_passed(&self, now: Instant) -> Option<u64> {
        self.expires
            .filter(|expires| now >= *expires)
            .map(|_| self.ttl_ms.unwrap_or_default())
    }

    /// Stops past the task's time to live say so: the deadline that ends a call whose
    /// task outlived its `ttlMs` ends the wait for the server's verdict, not the task.
    fn past_ttl(&self, stop: Stop) -> Stop {
        match (stop, self.ttl_passed(Instant::now())) {
            (Stop::Timeout, Some(ttl_ms)) => Stop::TaskExpired { ttl_ms },
            (Stop::TaskFailed(error, None), Some(ttl_ms)) => Stop::TaskFailed(error, Some(ttl_ms)),
            (Stop::PollRefused(error, None), Some(ttl_ms)) => {
                Stop::PollRefused(error, Some(ttl_ms))
            }
            (stop, _) => stop,
        }
    }

    /// A status message that is new becomes progress.
    fn report(&mut self, task: &Task, state: &CallState) {
        if let Some(message) = &task.status_message
            && self.status_message.as_ref() != Some(message)
        {
            state.status_message(message);
            self.status_message = Some(message.clone());
        }
    }
}

/// How one wait for the next poll ended.
enum Waited {
    Poll,
    Stop(Stop),
}

/// Waits for the next poll, or for the deadline, the end of the task's time to live and
/// its grace, or the caller. Past its `ttlMs` a task is polled on, at its interval, for
/// the grace ([`ttl_grace`]): the server's verdict (a task it failed, or forgot) ends
/// the call, and only a server that says nothing by then has the call end it (as the
/// deadline does, whichever comes first).
async fn wait(request: &CallRequest, tracked: &Tracked, failed_in_a_row: u32) -> Waited {
    let interval = poll_interval(tracked.poll_ms, failed_in_a_row);
    let next = Instant::now() + interval;
    let given_up = tracked.expires.map(|expires| expires + ttl_grace(interval));
    let until = given_up
        .map_or(next, |given_up| next.min(given_up))
        .min(request.deadline);
    tokio::select! {
        biased;
        () = request.cancel.cancelled() => return Waited::Stop(Stop::Cancelled),
        () = tokio::time::sleep_until(until) => {}
    }
    let now = Instant::now();
    if now >= request.deadline || given_up.is_some_and(|given_up| now >= given_up) {
        Waited::Stop(tracked.past_ttl(Stop::Timeout))
    } else {
        Waited::Poll
    }
}

/// Runs `request` (a `tasks/update`, a `tasks/get`) until it answers, the deadline
/// passes or the caller cancels.
async fn within<T>(
    request: &CallRequest,
    future: impl Future<Output = Result<T, ServiceError>>,
) -> Result<Result<T, ServiceError>, Stop> {
    tokio::select! {
        biased;
        () = request.cancel.cancelled() => Err(Stop::Cancelled),
        answer = future => Ok(answer),
        () = tokio::time::sleep_until(request.deadline) => Err(Stop::Timeout),
    }
}

/// Follows the task the server answered the call with, until it ends: its result is the
/// call's result, as a plain result would be; anything else ends the call with an error,
/// `delivered` (the task exists on the server). No `tools/call` is sent again.
pub(crate) async fn follow(
    peer: &Peer<RoleClient>,
    handler: &Handler,
    registry: &Arc<Registry>,
    state: &CallState,
    request: &CallRequest,
    (created, sent): (CreateTaskResult, Instant),
) -> Result<Value, Stop> {
    state.set_task(&created.task.task_id);
    let mut tracked = Tracked::new(&created.task, sent);
    tracked.report(&created.task, state);
    // Whatever ends the call once the task's time to live passed says so.
    follow_polls(peer, handler, registry, state, request, &mut tracked)
        .await
        .map_err(|stop| tracked.past_ttl(stop))
}

/// Polls the task until it ends (see [`follow`]).
async fn follow_polls(
    peer: &Peer<RoleClient>,
    handler: &Handler,
    registry: &Arc<Registry>,
    state: &CallState,
    request: &CallRequest,
    tracked: &mut Tracked,
) -> Result<Value, Stop> {
    let mut answered: HashSet<String> = HashSet::new();
    let mut input_rounds = 0;
    let mut failed_in_a_row = 0u32;
    loop {
        if let Waited::Stop(stop) = wait(request, tracked, failed_in_a_row).await {
            return Err(stop);
        }
        // Each poll is a request of the call: its answer (the result, in the end) is
        // counted against the call's budget, never against the transport's.
        let poll = Arc::new(CallState::poll(state));
        let registration = registry.register(Arc::clone(&poll));
        let mut meta = traced(&request.trace);
        meta.0
            .0
            .insert(CALL_MARKER.to_owned(), Value::from(registration.key()));
        let mut params = GetTaskParams::new(tracked.id.clone());
        params.meta = Some(meta);
        let answer = tokio::select! {
            biased;
            () = poll.overflowed() => {
                state.raise_overflow();
                return Err(Stop::Overflow);
            }
            answer = within(request, peer.get_task(params)) => answer?,
        };
        drop(registration);
        if poll.is_overflowed() {
            state.raise_overflow();
            return Err(Stop::Overflow);
        }
        let detailed = match answer {
            Ok(answer) => answer.task,
            Err(ServiceError::McpError(error)) => return Err(Stop::PollRefused(error, None)),
            Err(ServiceError::UnexpectedResponse) => {
                return Err(Stop::NotAResult(
                    "an answer to tasks/get that is not a task",
                ));
            }
            Err(error @ ServiceError::TransportSend(_)) => {
                let failure = poll.failure();
                if worth_another_poll(failure.as_ref()) {
                    failed_in_a_row = failed_in_a_row.saturating_add(1);
                    continue;
                }
                return Err(match failure {
                    Some(failure) => Stop::PollFailed(failure),
                    None => Stop::Failed(error),
                });
            }
            Err(error) => return Err(Stop::Failed(error)),
        };
        failed_in_a_row = 0;
        // An answer about another task says nothing of this one: believing its result
        // would hand the call someone else's answer.
        if detailed.task.task_id != tracked.id {
            return Err(Stop::NotAResult(ANOTHER_TASK));
        }
        tracked.update(&detailed.task);
        tracked.report(&detailed.task, state);
        match detailed.payload {
            TaskPayload::Working => {}
            TaskPayload::Completed { result } => {
                let value = Value::Object(result);
                check_result(&value).map_err(Stop::NotAResult)?;
                return Ok(value);
            }
            TaskPayload::Failed { error } => return Err(Stop::TaskFailed(failed(&error), None)),
            TaskPayload::Cancelled => return Err(Stop::TaskCancelled),
            TaskPayload::InputRequired { input_requests } => {
                // Each request once: a poll lists every one still open, answered or not.
                let mut responses = InputResponses::new();
                for (key, input) in &input_requests {
                    if answered.contains(key) {
                        continue;
                    }
                    match handler.answer(input) {
                        Ok(answer) => {
                            responses.insert(key.clone(), answer);
                        }
                        Err(error) => return Err(Stop::InputRefused(error)),
                    }
                }
                if responses.is_empty() {
                    continue;
                }
                input_rounds += 1;
                if input_rounds > MAX_INPUT_ROUNDS {
                    return Err(Stop::Failed(ServiceError::InputRequiredRoundsExceeded {
                        max_rounds: MAX_INPUT_ROUNDS,
                    }));
                }
                let keys: Vec<String> = responses.keys().cloned().collect();
                let mut update = UpdateTaskParams::new(tracked.id.clone(), responses);
                update.meta = Some(traced(&request.trace));
                match within(request, peer.update_task(update)).await? {
                    Ok(()) => answered.extend(keys),
                    Err(ServiceError::McpError(error)) => {
                        return Err(Stop::PollRefused(error, None));
                    }
                    // Not acknowledged: the next poll still lists the requests, and
                    // they are answered again.
                    Err(_) => failed_in_a_row = failed_in_a_row.saturating_add(1),
                }
            }
            _ => {
                return Err(Stop::NotAResult(
                    "a task in a state this client does not know",
                ));
            }
        }
    }
}

/// The `_meta` of a request about the call's task: the call's trace context (SEP-414),
/// as its `tools/call` carried it, so that a server sees the task's requests in the
/// call's trace (empty without the `otel` feature).
fn traced(trace: &JsonObject) -> RequestMetaObject {
    let mut meta = RequestMetaObject::new();
    crate::telemetry::add_trace(&mut meta.0.0, trace);
    meta
}

/// The JSON-RPC error a failed task carries.
fn failed(error: &serde_json::Map<String, Value>) -> ErrorData {
    let code = error
        .get("code")
        .and_then(Value::as_i64)
        .and_then(|code| i32::try_from(code).ok())
        .unwrap_or(rmcp::model::ErrorCode::INTERNAL_ERROR.0);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    ErrorData::new(rmcp::model::ErrorCode(code), message, None)
}

/// Tells the server the call gave its task up (`tasks/cancel`; never
/// `notifications/cancelled`, which the extension forbids for tasks), within `bound`.
pub(crate) async fn cancel_task(
    peer: &Peer<RoleClient>,
    id: &str,
    trace: &JsonObject,
    bound: Duration,
) {
    let mut params = CancelTaskParams::new(id);
    params.meta = Some(traced(trace));
    let cancel = peer.cancel_task(params);
    let _ = tokio::time::timeout(bound, cancel).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_poll_interval_is_the_servers_within_our_bounds() {
        let ms = Duration::from_millis;
        // (suggested, polls failed in a row, wait)
        let cases = [
            (Some(200), 0, ms(200)),
            (None, 0, DEFAULT_POLL_INTERVAL),
            (Some(0), 0, MIN_POLL_INTERVAL),
            (Some(1), 0, MIN_POLL_INTERVAL),
            (Some(3_600_000), 0, MAX_POLL_INTERVAL),
            (Some(u64::MAX), 0, MAX_POLL_INTERVAL),
            (Some(200), 1, ms(400)),
            (Some(200), 3, ms(1600)),
            (Some(200), 40, MAX_POLL_INTERVAL),
            (Some(0), 2, ms(40)),
        ];
        for (suggested, failed, wait) in cases {
            assert_eq!(
                poll_interval(suggested, failed),
                wait,
                "{suggested:?} {failed}"
            );
        }
    }

    #[test]
    fn a_task_past_its_time_to_live_is_polled_for_a_grace_of_at_least_one_interval() {
        let ms = Duration::from_millis;
        assert_eq!(ttl_grace(ms(10)), TTL_GRACE);
        assert_eq!(ttl_grace(ms(1_999)), TTL_GRACE);
        assert_eq!(ttl_grace(ms(5_000)), ms(5_000));
        assert_eq!(ttl_grace(MAX_POLL_INTERVAL), MAX_POLL_INTERVAL);
    }

    #[test]
    fn only_polls_that_failed_on_the_wire_go_again() {
        let status = |status| Failure::Status {
            status,
            session: false,
            challenge: None,
            reason: None,
            old_sse: false,
        };
        let cases = [
            (None, true),
            (Some(Failure::Connect), true),
            (Some(Failure::Broken), true),
            (Some(status(502)), true),
            (Some(status(503)), true),
            (Some(status(429)), true),
            (Some(status(401)), false),
            (Some(status(404)), false),
            (Some(Failure::Protocol("a malformed JSON body")), false),
            (Some(Failure::TooManyBlocks), false),
        ];
        for (failure, again) in cases {
            assert_eq!(worth_another_poll(failure.as_ref()), again, "{failure:?}");
        }
    }
}
