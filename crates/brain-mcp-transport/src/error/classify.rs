//! From what happened on the wire to the error a host acts on: one pure function.
//!
//! Two questions, answered separately:
//! - **delivery** follows only from how far the call's own `tools/call` got on the wire
//!   ([`Wire`]), and from an HTTP status that says the server refused the request before
//!   running it. Never from what failed last: a resume request that cannot be built, a
//!   reconnect that is refused or a stream that breaks after the call went out all leave
//!   the call `unknown`.
//! - **kind and detail** follow from the cause ([`Cause`]).

use std::sync::Arc;

use crate::{
    api::{MAX_CONTENT_BLOCKS, MAX_LISTED_TOOLS},
    endpoint::Endpoint,
    error::{CallError, Challenge, Delivery, ErrorKind},
};

/// What the transport learned about a request, for classification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// No connection could be made; the request was not written.
    Connect,
    /// The request could not be built from our own inputs; nothing was sent.
    Build,
    /// The server sent an SSE event id that is not a valid header value, so the stream
    /// it belongs to cannot be resumed.
    BadEventId,
    /// The server answered with this HTTP status; `session` says whether the request
    /// carried a session id; `challenge` is its authorization challenge (401, 403), when
    /// the refused request was the one itself (never a resumed stream's GET); `reason`
    /// what its body said (secrets hidden, bounded); `old_sse`: the URL looks like an
    /// endpoint of the old HTTP+SSE transport.
    Status {
        status: u16,
        session: bool,
        challenge: Option<Challenge>,
        reason: Option<Arc<str>>,
        old_sse: bool,
    },
    /// The server refused to resume a call's response stream with this HTTP status: the
    /// call itself went out before.
    ResumeRefused { status: u16 },
    /// The connection broke while the request or its response was in flight.
    Broken,
    /// The answer was not MCP (content type, JSON, id, ...): a fixed phrase.
    Protocol(&'static str),
    /// The server answered the call with more content blocks than a result may hold.
    TooManyBlocks,
    /// The server listed more tools than a discovery may hold.
    TooManyTools,
    /// A message held more JSON values than its bound allows; `answer`: it was the
    /// response (for a call: its result, so the tool ran), not a notification.
    TooManyValues { answer: bool },
    /// What the server sent outside calls (a handshake, a listing) went past this bound.
    OverBudget { budget: usize },
    /// A stdio server answered with this JSON-RPC error and no request id (-32700 or
    /// -32600: it could not read a request); a process serves one call, so it is the
    /// call's answer.
    AnswerWithoutId { code: i32 },
    /// A stdio server's process ended while the call waited for its answer (it crashed,
    /// was killed, or exited).
    Exited,
}

/// How far the call's own request got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// Provably never written (not claimed for sending, or the connection failed before
    /// a byte of it was written): the server cannot have it.
    NotWritten,
    /// Writing began: any byte of it may have reached the server.
    MayHaveReached,
    /// The server answered it with a task (2026-07-28 tasks extension): the tool exists
    /// on the server, whatever happens to the call next.
    Task,
}

/// Why the call ended without a result: the most telling fact known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cause<'a> {
    /// The deadline passed.
    Timeout,
    /// The caller cancelled.
    Cancelled,
    /// The response went over the call's budget.
    OverBudget { budget: usize },
    /// What the transport recorded for the call's own request (its first round).
    Transport(&'a Failure),
    /// What the transport recorded for another request of the context (the handshake,
    /// an answer rmcp sent, an earlier round's): it names the kind, never the delivery,
    /// so a status that refused that request cannot make the call look unsent.
    Elsewhere(&'a Failure),
    /// The server answered the request with a JSON-RPC error; `first_round`: the answer
    /// to the call's first `tools/call` (no earlier round of an `input_required` exchange
    /// reached the server).
    JsonRpc {
        code: i32,
        message: &'a str,
        first_round: bool,
    },
    /// The server asked for input this host does not give.
    InputRefused { message: &'a str },
    /// The server answered, with something that is not a tool result: what it was.
    NotAResult(&'static str),
    /// The call's task failed with this JSON-RPC error; `after_ttl`: its time to live
    /// (ms) had passed when the server said so.
    TaskFailed {
        code: i32,
        message: &'a str,
        after_ttl: Option<u64>,
    },
    /// The server cancelled the call's task.
    TaskCancelled,
    /// The task's time to live ended before the task did.
    TaskExpired { ttl_ms: u64 },
    /// The server answered a request about the call's task (`tasks/get`,
    /// `tasks/update`) with a JSON-RPC error; `after_ttl`: the task's time to live (ms)
    /// had passed (a server may delete a task then).
    PollRefused {
        code: i32,
        message: &'a str,
        after_ttl: Option<u64>,
    },
    /// The transport closed and recorded nothing.
    Closed,
}

/// The error for a call that ended without a result.
pub(crate) fn classify(wire: Wire, cause: &Cause<'_>, endpoint: &Endpoint) -> CallError {
    let delivery = delivery(wire, cause);
    let written = wire != Wire::NotWritten;
    let (kind, detail) = match cause {
        Cause::Timeout => (ErrorKind::Timeout, "timed out".to_owned()),
        Cause::Cancelled => (ErrorKind::Cancelled, "was cancelled".to_owned()),
        Cause::OverBudget { budget } => (
            ErrorKind::OutputTooLarge,
            format!("the output exceeded {budget} bytes"),
        ),
        Cause::JsonRpc {
            code,
            message,
            first_round,
        } => (
            ErrorKind::Protocol,
            match refusal(*code).filter(|_| *first_round) {
                Some(meaning) => format!(
                    "the server refused the call before running it with JSON-RPC error \
                     {code} ({meaning}): {}",
                    endpoint.quote(message, 200)
                ),
                None => format!(
                    "the server answered with JSON-RPC error {code}: {}",
                    endpoint.quote(message, 200)
                ),
            },
        ),
        Cause::InputRefused { message } => (
            ErrorKind::Protocol,
            format!(
                "the server asked for input this host does not give ({})",
                endpoint.quote(message, 120)
            ),
        ),
        Cause::NotAResult(what) => (
            ErrorKind::Protocol,
            format!("the server answered with {what}"),
        ),
        Cause::TaskFailed {
            code,
            message,
            after_ttl,
        } => (
            ErrorKind::Protocol,
            match after_ttl {
                Some(ttl_ms) => format!(
                    "the server ran it as a task, which failed once its time to live \
                     ({ttl_ms} ms) had passed, with JSON-RPC error {code}: {}",
                    endpoint.quote(message, 200)
                ),
                None => format!(
                    "the server ran it as a task, which failed with JSON-RPC error {code}: {}",
                    endpoint.quote(message, 200)
                ),
            },
        ),
        Cause::TaskCancelled => (
            ErrorKind::Protocol,
            "the server ran it as a task, and cancelled the task".to_owned(),
        ),
        Cause::TaskExpired { ttl_ms } => (
            ErrorKind::Timeout,
            format!(
                "the server ran it as a task, which outlived its time to live ({ttl_ms} ms) \
                 without finishing"
            ),
        ),
        Cause::PollRefused {
            code,
            message,
            after_ttl,
        } => (
            ErrorKind::Protocol,
            match after_ttl {
                Some(ttl_ms) => format!(
                    "the server ran it as a task and, once its time to live ({ttl_ms} ms) \
                     had passed, answered a request about the task with JSON-RPC error \
                     {code}: {}",
                    endpoint.quote(message, 200)
                ),
                None => format!(
                    "the server ran it as a task, then answered a request about the task \
                     with JSON-RPC error {code}: {}",
                    endpoint.quote(message, 200)
                ),
            },
        ),
        Cause::Closed if written => (
            ErrorKind::Protocol,
            "the connection closed before the result".to_owned(),
        ),
        Cause::Closed => (
            ErrorKind::Connect,
            format!("could not reach {}", endpoint.describe()),
        ),
        Cause::Transport(failure) | Cause::Elsewhere(failure) => match failure {
            // The call went out; reconnecting (to resume its stream) failed.
            Failure::Connect if written => (
                ErrorKind::Protocol,
                format!(
                    "the connection to {} was lost before the result",
                    endpoint.describe()
                ),
            ),
            Failure::Connect => (
                ErrorKind::Connect,
                format!("could not connect to {}", endpoint.describe()),
            ),
            Failure::Build => (
                ErrorKind::Protocol,
                format!("a request to {} could not be built", endpoint.describe()),
            ),
            Failure::BadEventId => (
                ErrorKind::Protocol,
                "the server sent an SSE event id that is not a valid header value, so its \
                 stream could not be resumed"
                    .to_owned(),
            ),
            Failure::Status {
                status,
                session,
                challenge,
                reason,
                old_sse,
            } => {
                let mut error = CallError::http_status(*status, *session, delivery)
                    .with_challenge(challenge.clone());
                if *old_sse {
                    error = error.with_detail_suffix(
                        "; the URL looks like an endpoint of the old HTTP+SSE transport (a \
                         GET-only event stream), which this client does not speak: use the \
                         server's Streamable HTTP endpoint (often /mcp)",
                    );
                }
                if let Some(reason) = reason {
                    error = error.with_detail_suffix(&format!(
                        ", saying \"{}\"",
                        endpoint.quote(reason, 200)
                    ));
                }
                return error;
            }
            Failure::ResumeRefused { status } => (
                ErrorKind::HttpStatus,
                format!("the server answered HTTP {status} when the call's stream was resumed"),
            ),
            Failure::Broken if written => (
                ErrorKind::Protocol,
                "the connection broke before the result".to_owned(),
            ),
            // A connection that breaks before the call went out is one that could not be
            // used: the server was not reached.
            Failure::Broken => (
                ErrorKind::Connect,
                format!(
                    "the connection to {} closed before the call was sent",
                    endpoint.describe()
                ),
            ),
            Failure::Protocol(what) => (
                ErrorKind::Protocol,
                format!("the server answered with {what}"),
            ),
            Failure::TooManyBlocks => (
                ErrorKind::OutputTooLarge,
                format!("the result had more than {MAX_CONTENT_BLOCKS} content blocks"),
            ),
            Failure::TooManyTools => (
                ErrorKind::Protocol,
                format!("the server listed more than {MAX_LISTED_TOOLS} tools"),
            ),
            Failure::TooManyValues { answer: true } => (
                ErrorKind::OutputTooLarge,
                "the server's answer held more JSON values than its byte budget allows".to_owned(),
            ),
            Failure::TooManyValues { answer: false } => (
                ErrorKind::OutputTooLarge,
                "the server sent a message with more JSON values than the call's byte budget \
                 allows"
                    .to_owned(),
            ),
            Failure::OverBudget { budget } => (
                ErrorKind::OutputTooLarge,
                format!("the server's answers outside calls exceeded {budget} bytes"),
            ),
            Failure::AnswerWithoutId { code } => (
                ErrorKind::Protocol,
                format!(
                    "the server answered with JSON-RPC error {code} ({}) without a request \
                     id: it could not read the call",
                    refusal(*code).unwrap_or("an error")
                ),
            ),
            // What the process said, and how it ended, are added by the stdio context.
            Failure::Exited => (
                ErrorKind::ServerExited,
                "the server's process ended before it answered".to_owned(),
            ),
        },
    };
    let mut error = CallError::new(kind, delivery, detail).retryable_if(may_pass(cause));
    if let Some(code) = rpc_code(cause) {
        error = error.with_rpc_code(code);
    }
    if matches!(cause, Cause::JsonRpc { .. }) {
        error.answered()
    } else {
        error
    }
}

/// Whether the same call, made again, may succeed after this cause: false when the same
/// request meets the same end (a refusal of the request as such, an answer that is not
/// MCP, a result past its bounds, input this host does not give), true when it may pass
/// (a deadline, a cancel, a connection that broke, a server's own error, a process that
/// died, a task the server gave up or forgot). Refusing statuses decide for themselves
/// ([`CallError::http_status`]).
fn may_pass(cause: &Cause<'_>) -> bool {
    match cause {
        Cause::Timeout
        | Cause::Cancelled
        | Cause::Closed
        | Cause::TaskCancelled
        | Cause::TaskExpired { .. } => true,
        Cause::OverBudget { .. } | Cause::InputRefused { .. } | Cause::NotAResult(_) => false,
        Cause::JsonRpc { code, .. } | Cause::TaskFailed { code, .. } => refusal(*code).is_none(),
        // A task the server no longer knows (-32602) is gone: a new call makes a new one.
        Cause::PollRefused { code, .. } => *code == -32602 || refusal(*code).is_none(),
        Cause::Transport(failure) | Cause::Elsewhere(failure) => match failure {
            Failure::Connect
            | Failure::Broken
            | Failure::ResumeRefused { .. }
            | Failure::Exited => true,
            Failure::Status {
                status, session, ..
            } => CallError::http_status(*status, *session, Delivery::Unknown).retryable(),
            Failure::Build
            | Failure::BadEventId
            | Failure::Protocol(_)
            | Failure::TooManyBlocks
            | Failure::TooManyTools
            | Failure::TooManyValues { .. }
            | Failure::OverBudget { .. }
            | Failure::AnswerWithoutId { .. } => false,
        },
    }
}

/// The JSON-RPC error code that ended the call, when the server answered one: to the
/// call, to a request about its task, as its task's end, or without a request id.
fn rpc_code(cause: &Cause<'_>) -> Option<i32> {
    match cause {
        Cause::JsonRpc { code, .. }
        | Cause::TaskFailed { code, .. }
        | Cause::PollRefused { code, .. }
        | Cause::Transport(Failure::AnswerWithoutId { code })
        | Cause::Elsewhere(Failure::AnswerWithoutId { code }) => Some(*code),
        _ => None,
    }
}

/// The JSON-RPC errors that prove the server did not run the tool, with what each
/// means: the server could not read the request (-32700, -32600), does not serve the
/// method (-32601), or refused its parameters, such as an unknown tool or invalid
/// arguments (-32602); in the 2026-07-28 revision, the request's headers do not match
/// its body (-32020), it needs a client capability that was not declared (-32021), or
/// its protocol version is not served (-32022); and a request that "cannot be processed
/// until" a URL elicitation completes (-32042, 2025-11-25). Each rejects the request as
/// a whole before processing it. Any other code (-32603, a server's own -32000 to
/// -32099) may come from a tool that ran, fully or in part.
fn refusal(code: i32) -> Option<&'static str> {
    Some(match code {
        -32700 => "parse error",
        -32600 => "invalid request",
        -32601 => "method not found",
        -32602 => "invalid params",
        -32020 => "header mismatch",
        -32021 => "missing required client capability",
        -32022 => "unsupported protocol version",
        -32042 => "URL elicitation required",
        _ => return None,
    })
}

/// Whether the server may have run the tool: `not_sent` only when the request provably
/// never left, or the server refused it before running it (401 and 403 reject the
/// credentials; 404 on a request that carried a session id says the session is gone; a
/// JSON-RPC error that rejects the request before processing it, to the call's first
/// round). Any other answer, a JSON-RPC error included, is `delivered`: the server
/// answered the call; so is every end of a call the server answered with a task.
fn delivery(wire: Wire, cause: &Cause<'_>) -> Delivery {
    match (wire, cause) {
        (Wire::NotWritten, _) => Delivery::NotSent,
        // A task handle is an answer: the server took the call, whatever happened next.
        (Wire::Task, _) => Delivery::Delivered,
        (
            Wire::MayHaveReached,
            Cause::JsonRpc {
                code,
                first_round: true,
                ..
            },
        ) if refusal(*code).is_some() => Delivery::NotSent,
        (Wire::MayHaveReached, Cause::JsonRpc { .. }) => Delivery::Delivered,
        // The whole answer came: the tool ran; it is the result that was refused.
        (
            Wire::MayHaveReached,
            Cause::Transport(Failure::TooManyBlocks | Failure::TooManyValues { answer: true })
            | Cause::NotAResult(_),
        ) => Delivery::Delivered,
        (
            Wire::MayHaveReached,
            Cause::Transport(Failure::Status {
                status: 401 | 403, ..
            }),
        ) => Delivery::NotSent,
        (
            Wire::MayHaveReached,
            Cause::Transport(Failure::Status {
                status: 404,
                session: true,
                ..
            }),
        ) => Delivery::NotSent,
        (Wire::MayHaveReached, _) => Delivery::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;

    const TOKEN: &str = "tok-classify-0123456789";

    fn endpoint() -> Endpoint {
        Endpoint::http("http://127.0.0.1:9/mcp", Some(Secret::new(TOKEN)))
    }

    /// (wire, cause) -> (kind, delivery, a phrase the detail contains).
    fn check(wire: Wire, cause: Cause<'_>, kind: ErrorKind, delivery: Delivery, phrase: &str) {
        let error = classify(wire, &cause, &endpoint());
        assert_eq!(
            (error.kind(), error.delivery()),
            (kind, delivery),
            "{wire:?} {cause:?}: {error}"
        );
        assert!(
            error.detail().contains(phrase),
            "{wire:?} {cause:?}: {:?} lacks {phrase:?}",
            error.detail()
        );
        assert!(!error.detail().contains(TOKEN), "{}", error.detail());
    }

    use Delivery::{Delivered, NotSent, Unknown};
    use ErrorKind::{Cancelled, Connect, HttpStatus, OutputTooLarge, Protocol, Timeout};
    use Wire::{MayHaveReached as Sent, NotWritten as Unsent};

    fn transport(failure: &Failure) -> Cause<'_> {
        Cause::Transport(failure)
    }

    /// A refusing status, without a challenge or a reason.
    fn status(status: u16, session: bool) -> Failure {
        Failure::Status {
            status,
            session,
            challenge: None,
            reason: None,
            old_sse: false,
        }
    }

    #[test]
    fn delivery_follows_the_wire_not_the_last_failure() {
        // The call went out; what failed afterwards cannot make it unsent.
        for failure in [
            Failure::Connect,
            Failure::Build,
            Failure::BadEventId,
            Failure::Broken,
            Failure::Protocol("a malformed JSON body"),
            Failure::Status {
                status: 500,
                session: true,
                challenge: None,
                reason: None,
                old_sse: false,
            },
            Failure::Status {
                status: 404,
                session: false,
                challenge: None,
                reason: None,
                old_sse: false,
            },
            Failure::ResumeRefused { status: 401 },
        ] {
            let error = classify(Sent, &transport(&failure), &endpoint());
            assert_eq!(error.delivery(), Unknown, "{failure:?}");
        }
        for cause in [
            Cause::Timeout,
            Cause::Cancelled,
            Cause::OverBudget { budget: 10 },
            Cause::Closed,
            Cause::InputRefused { message: "no" },
        ] {
            assert_eq!(
                classify(Sent, &cause, &endpoint()).delivery(),
                Unknown,
                "{cause:?}"
            );
            assert_eq!(
                classify(Unsent, &cause, &endpoint()).delivery(),
                NotSent,
                "{cause:?}"
            );
        }
    }

    #[test]
    fn once_a_task_handle_arrived_every_end_is_delivered() {
        use ErrorKind::Timeout as T;
        let refused = Failure::Status {
            status: 401,
            session: false,
            challenge: None,
            reason: None,
            old_sse: false,
        };
        // (cause, kind, a phrase of the detail)
        let cases = [
            (Cause::Timeout, T, "timed out"),
            (Cause::Cancelled, Cancelled, "was cancelled"),
            (Cause::OverBudget { budget: 10 }, OutputTooLarge, "10 bytes"),
            (
                Cause::TaskFailed {
                    code: -32603,
                    message: "the job broke",
                    after_ttl: None,
                },
                Protocol,
                "as a task, which failed with JSON-RPC error -32603: the job broke",
            ),
            (Cause::TaskCancelled, Protocol, "and cancelled the task"),
            (
                Cause::TaskExpired { ttl_ms: 500 },
                T,
                "outlived its time to live (500 ms)",
            ),
            (
                Cause::PollRefused {
                    code: -32602,
                    message: "unknown task",
                    after_ttl: None,
                },
                Protocol,
                "a request about the task with JSON-RPC error -32602: unknown task",
            ),
            // A poll refused for want of authorization does not make the call unsent:
            // the tool runs on the server.
            (Cause::Elsewhere(&refused), HttpStatus, "HTTP 401"),
            (Cause::Elsewhere(&Failure::Broken), Protocol, "broke"),
            (Cause::InputRefused { message: "no" }, Protocol, "input"),
            (Cause::NotAResult("a task"), Protocol, "a task"),
            (Cause::Closed, Protocol, "closed before the result"),
        ];
        for (cause, kind, phrase) in cases {
            check(Wire::Task, cause, kind, Delivered, phrase);
        }
        // Even a refusal that would prove a first round unsent: the handle came first.
        let error = classify(
            Wire::Task,
            &Cause::JsonRpc {
                code: -32602,
                message: "x",
                first_round: true,
            },
            &endpoint(),
        );
        assert_eq!(error.delivery(), Delivered);
        assert!(error.challenge().is_none());
    }

    #[test]
    fn a_status_that_refused_another_request_does_not_make_the_call_unsent() {
        for status in [401, 403, 404] {
            let refused = Failure::Status {
                status,
                session: true,
                challenge: None,
                reason: None,
                old_sse: false,
            };
            let error = classify(Sent, &Cause::Elsewhere(&refused), &endpoint());
            assert_eq!(
                (error.kind(), error.delivery()),
                (HttpStatus, Unknown),
                "{status}"
            );
            let error = classify(Unsent, &Cause::Elsewhere(&refused), &endpoint());
            assert_eq!(error.delivery(), NotSent, "{status}: the call never left");
        }
        let too_many = Failure::TooManyBlocks;
        assert_eq!(
            classify(Sent, &Cause::Elsewhere(&too_many), &endpoint()).delivery(),
            Unknown
        );
    }

    #[test]
    fn kinds_and_details() {
        let rows: Vec<(Wire, Failure, ErrorKind, Delivery, &str)> = vec![
            (
                Unsent,
                Failure::Connect,
                Connect,
                NotSent,
                "could not connect",
            ),
            (Sent, Failure::Connect, Protocol, Unknown, "was lost"),
            (Unsent, Failure::Broken, Connect, NotSent, "before the call"),
            (Sent, Failure::Broken, Protocol, Unknown, "broke before"),
            (Sent, Failure::BadEventId, Protocol, Unknown, "event id"),
            (Unsent, Failure::BadEventId, Protocol, NotSent, "event id"),
            (
                Sent,
                Failure::Build,
                Protocol,
                Unknown,
                "could not be built",
            ),
            (Sent, status(401, true), HttpStatus, NotSent, "HTTP 401"),
            (Sent, status(403, false), HttpStatus, NotSent, "HTTP 403"),
            (
                Sent,
                status(404, true),
                HttpStatus,
                NotSent,
                "session expired",
            ),
            (Sent, status(404, false), HttpStatus, Unknown, "HTTP 404"),
            (Sent, status(429, true), HttpStatus, Unknown, "HTTP 429"),
            (Sent, status(502, true), HttpStatus, Unknown, "server error"),
            (
                Sent,
                Failure::TooManyBlocks,
                OutputTooLarge,
                Delivery::Delivered,
                "more than 1024 content blocks",
            ),
            (
                Sent,
                Failure::TooManyTools,
                Protocol,
                Unknown,
                "more than 10000 tools",
            ),
            // Too many values in the result: the tool ran. In a notification: no result
            // came, so it may still be running.
            (
                Sent,
                Failure::TooManyValues { answer: true },
                OutputTooLarge,
                Delivery::Delivered,
                "answer held more JSON values",
            ),
            (
                Sent,
                Failure::TooManyValues { answer: false },
                OutputTooLarge,
                Unknown,
                "a message with more JSON values",
            ),
            (Unsent, status(500, false), HttpStatus, NotSent, "HTTP 500"),
            (
                Sent,
                Failure::Protocol("an unexpected content type"),
                Protocol,
                Unknown,
                "content type",
            ),
        ];
        for (wire, failure, kind, delivery, phrase) in rows {
            check(wire, transport(&failure), kind, delivery, phrase);
        }
        check(Sent, Cause::Timeout, Timeout, Unknown, "timed out");
        check(Unsent, Cause::Cancelled, Cancelled, NotSent, "cancelled");
        check(
            Sent,
            Cause::OverBudget { budget: 100 },
            OutputTooLarge,
            Unknown,
            "100 bytes",
        );
        check(Sent, Cause::Closed, Protocol, Unknown, "closed before");
        check(
            Sent,
            Cause::NotAResult("a task"),
            Protocol,
            Delivery::Delivered,
            "answered with a task",
        );
        check(Unsent, Cause::Closed, Connect, NotSent, "could not reach");
    }

    /// Whether another try may succeed is its own question, apart from delivery: a
    /// refusal of the request as such, or an answer that is not MCP, meets the same end
    /// again; what broke on the way, or a server's own error, may pass.
    #[test]
    fn whether_a_retry_may_succeed() {
        let rpc = |code| Cause::JsonRpc {
            code,
            message: "no",
            first_round: true,
        };
        let (connect, broken, exited, malformed, unread) = (
            Failure::Connect,
            Failure::Broken,
            Failure::Exited,
            Failure::Protocol("a malformed JSON body"),
            Failure::AnswerWithoutId { code: -32700 },
        );
        let (s401, s403, s404, s404s, s405, s429, s500, s503) = (
            status(401, false),
            status(403, false),
            status(404, false),
            status(404, true),
            status(405, false),
            status(429, false),
            status(500, false),
            status(503, true),
        );
        // (wire, cause, retryable)
        let cases: Vec<(Wire, Cause<'_>, bool)> = vec![
            (Unsent, transport(&connect), true),
            (Sent, transport(&broken), true),
            (Sent, Cause::Closed, true),
            (Sent, transport(&exited), true),
            (Sent, transport(&malformed), false),
            (Sent, transport(&unread), false),
            (Sent, transport(&s401), false),
            (Sent, transport(&s403), false),
            (Sent, transport(&s404), false),
            (Sent, transport(&s404s), true),
            (Sent, transport(&s405), false),
            (Sent, transport(&s429), true),
            (Sent, transport(&s500), true),
            (Sent, Cause::Elsewhere(&s503), true),
            (Sent, rpc(-32602), false),
            (Sent, rpc(-32601), false),
            (Sent, rpc(-32603), true),
            (Sent, rpc(-32000), true),
            (Sent, Cause::Timeout, true),
            (Sent, Cause::Cancelled, true),
            (Sent, Cause::OverBudget { budget: 1 }, false),
            (Sent, Cause::NotAResult("a string"), false),
            (Sent, Cause::InputRefused { message: "x" }, false),
            (Wire::Task, Cause::TaskExpired { ttl_ms: 1 }, true),
            (Wire::Task, Cause::TaskCancelled, true),
            (
                Wire::Task,
                Cause::TaskFailed {
                    code: -32603,
                    message: "x",
                    after_ttl: Some(5),
                },
                true,
            ),
            (
                Wire::Task,
                Cause::PollRefused {
                    code: -32602,
                    message: "unknown task",
                    after_ttl: Some(5),
                },
                true,
            ),
            (
                Wire::Task,
                Cause::PollRefused {
                    code: -32601,
                    message: "no tasks/get",
                    after_ttl: None,
                },
                false,
            ),
        ];
        for (wire, cause, retryable) in cases {
            let error = classify(wire, &cause, &endpoint());
            assert_eq!(error.retryable(), retryable, "{wire:?} {cause:?}: {error}");
            assert_eq!(error.may_have_run(), error.delivery() != NotSent);
        }
    }

    /// Every cause that is a JSON-RPC error keeps its code, for telemetry.
    #[test]
    fn json_rpc_errors_keep_their_code() {
        let unread = Failure::AnswerWithoutId { code: -32700 };
        let cases = [
            (
                Cause::JsonRpc {
                    code: -32602,
                    message: "x",
                    first_round: true,
                },
                Some(-32602),
            ),
            (
                Cause::TaskFailed {
                    code: -32603,
                    message: "x",
                    after_ttl: None,
                },
                Some(-32603),
            ),
            (
                Cause::PollRefused {
                    code: -32602,
                    message: "x",
                    after_ttl: Some(1),
                },
                Some(-32602),
            ),
            (transport(&unread), Some(-32700)),
            (Cause::Timeout, None),
            (Cause::Closed, None),
        ];
        for (cause, code) in cases {
            assert_eq!(
                classify(Sent, &cause, &endpoint()).rpc_code(),
                code,
                "{cause:?}"
            );
        }
    }

    #[test]
    fn a_process_that_ended_and_an_answer_without_an_id() {
        check(
            Sent,
            transport(&Failure::Exited),
            ErrorKind::ServerExited,
            Unknown,
            "the server's process ended before it answered",
        );
        check(
            Unsent,
            transport(&Failure::Exited),
            ErrorKind::ServerExited,
            NotSent,
            "ended",
        );
        check(
            Sent,
            transport(&Failure::AnswerWithoutId { code: -32700 }),
            Protocol,
            Unknown,
            "JSON-RPC error -32700 (parse error) without a request id",
        );
        check(
            Wire::Task,
            Cause::TaskFailed {
                code: -32603,
                message: "task expired",
                after_ttl: Some(500),
            },
            Protocol,
            Delivered,
            "failed once its time to live (500 ms) had passed, with JSON-RPC error -32603: task expired",
        );
        check(
            Wire::Task,
            Cause::PollRefused {
                code: -32602,
                message: "unknown task: t1",
                after_ttl: Some(500),
            },
            Protocol,
            Delivered,
            "once its time to live (500 ms) had passed, answered a request about the task with JSON-RPC error -32602: unknown task: t1",
        );
    }

    #[test]
    fn a_refusal_for_want_of_authorization_carries_its_challenge() {
        let challenge = |status, header: Option<&str>| Challenge::of(status, header);
        // 401 is a challenge with or without the header; 403 only with one.
        assert!(challenge(401, None).is_some());
        assert!(challenge(403, None).is_none());
        assert!(challenge(403, Some("Bearer error=\"insufficient_scope\"")).is_some());
        assert!(challenge(500, Some("Bearer")).is_none());
        // An oversized header is dropped, the challenge kept.
        let long = "x".repeat(crate::error::MAX_CHALLENGE_BYTES + 1);
        assert_eq!(challenge(401, Some(&long)).unwrap().header, None);
        let failure = Failure::Status {
            status: 401,
            session: false,
            challenge: challenge(401, Some("Bearer resource_metadata=\"x\"")),
            reason: None,
            old_sse: false,
        };
        let error = classify(Sent, &transport(&failure), &endpoint());
        assert_eq!(error.delivery(), NotSent);
        assert_eq!(error.challenge().unwrap().status, 401);
        // A resumed stream refused: the call went out before; no challenge, unknown.
        let error = classify(
            Sent,
            &transport(&Failure::ResumeRefused { status: 401 }),
            &endpoint(),
        );
        assert_eq!((error.delivery(), error.challenge()), (Unknown, None));
        // A challenge on an error that may have run is never offered.
        let error =
            CallError::http_status(401, false, Unknown).with_challenge(challenge(401, None));
        assert!(error.challenge().is_none());
    }

    /// A JSON-RPC error to the call is an answer: `delivered`, unless its code says the
    /// request was rejected before it was processed, which the first round alone can
    /// prove (a later round's first one reached the server).
    #[test]
    fn json_rpc_errors_that_prove_the_tool_did_not_run() {
        let rpc = |code, first_round| Cause::JsonRpc {
            code,
            message: "no",
            first_round,
        };
        let refusals = [
            -32700, -32600, -32601, -32602, -32020, -32021, -32022, -32042,
        ];
        for code in refusals {
            check(
                Sent,
                rpc(code, true),
                Protocol,
                NotSent,
                "refused the call before running it",
            );
            check(Sent, rpc(code, false), Protocol, Delivered, "answered with");
        }
        for code in [-32603, -32000, -32099, -32002, -1, 0, 1, i32::MIN] {
            check(Sent, rpc(code, true), Protocol, Delivered, "answered with");
        }
        check(
            Sent,
            rpc(-32602, true),
            Protocol,
            NotSent,
            "JSON-RPC error -32602 (invalid params): no",
        );
        check(Unsent, rpc(-32603, true), Protocol, NotSent, "-32603");
    }

    #[test]
    fn a_refusing_status_says_what_the_server_said_and_where_it_went_wrong() {
        let failure = |status, session, reason: Option<&str>, old_sse| Failure::Status {
            status,
            session,
            challenge: None,
            reason: reason.map(Arc::from),
            old_sse,
        };
        let said = format!("Invalid bearer token {TOKEN}\u{202e}");
        let rows = [
            (
                failure(403, false, Some(&said), false),
                "HTTP 403 (forbidden), saying \"Invalid bearer token <redacted> \"",
            ),
            (
                failure(404, false, None, false),
                "HTTP 404 (not found: check that the URL is the server's MCP endpoint)",
            ),
            (
                failure(404, true, None, false),
                "HTTP 404 (the session expired)",
            ),
            (
                failure(405, false, None, true),
                "HTTP 405 (method not allowed); the URL looks like an endpoint of the old \
                 HTTP+SSE transport",
            ),
        ];
        for (failure, phrase) in rows {
            check(Unsent, transport(&failure), HttpStatus, NotSent, phrase);
        }
    }

    #[test]
    fn server_text_is_quoted_without_secrets() {
        let message = format!("bad token {TOKEN}");
        check(
            Sent,
            Cause::JsonRpc {
                code: -32000,
                message: &message,
                first_round: true,
            },
            Protocol,
            Delivered,
            "JSON-RPC error -32000: bad token <redacted>",
        );
        check(
            Sent,
            Cause::InputRefused { message: &message },
            Protocol,
            Unknown,
            "<redacted>",
        );
    }
}
