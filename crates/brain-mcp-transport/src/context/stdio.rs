//! stdio servers: a fresh process per call, in its own process group.
//!
//! The handshake runs in the era asked for; a server that refuses `initialize` because it
//! only speaks 2026-07-28 says so ([`Opening::ModernOnly`]), and the client starts it
//! again in that era. When the call ends, the cancel notice for an abandoned request goes
//! out, the child's stdin is closed, it gets a short grace to exit, and then its whole
//! process group is killed (see `wire::stdio::process` for what is and is not reaped). A
//! dropped call kills the group at once.

use std::{io, sync::Arc};

use rmcp::{
    Peer, RoleClient,
    model::{ErrorCode, ProtocolVersion},
    service::{
        ClientInitializeError, ClientLifecycleMode, RunningService, serve_client_with_lifecycle,
    },
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{Shared, background_span, detached};
use crate::{
    api::{Era, JsonObject},
    call_state::Registry,
    endpoint::{Endpoint, StdioEndpoint},
    error::{CallError, Delivery, ErrorKind, classify::Failure},
    protocol::{
        drive::{Abandoned, abandon},
        handler::Handler,
    },
    wire::stdio::{FailureSlot, LineLimit, Process, StdioTransport},
};

/// A call's own server process, after its handshake.
pub(crate) struct Session {
    running: RunningService<RoleClient, Handler>,
    process: Process,
    registry: Arc<Registry>,
    era: Era,
    failure: FailureSlot,
    line_limit: LineLimit,
}

impl Session {
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        self.running.peer()
    }

    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    pub(crate) fn era(&self) -> Era {
        self.era
    }

    /// Whether the server has exited (a warm process that died is not used).
    pub(crate) fn has_exited(&self) -> bool {
        self.process.has_exited()
    }

    /// Sets the bound on one line (a call's budget, when it takes a warm process).
    pub(crate) fn set_line_limit(&self, limit: usize) {
        self.line_limit
            .store(limit, std::sync::atomic::Ordering::Relaxed);
    }

    /// What the transport recorded about messages that were not the call's.
    pub(crate) fn failure(&self) -> Option<Failure> {
        self.failure
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// `" (exit status 3; stderr: ...)"` when the process has stopped.
    pub(crate) async fn explain(&self, endpoint: &Endpoint) -> String {
        self.process.stopped_detail(endpoint).await
    }

    /// Ends the process in the background: the cancel notice for an abandoned request,
    /// the service closed (stdin with it), a grace period, then the process group killed
    /// and the child reaped.
    pub(crate) fn finish(self, shared: &Shared, abandoned: Option<Abandoned>) {
        let grace = shared.stdio_grace;
        let Self {
            mut running,
            process,
            ..
        } = self;
        shared.spawn_background(
            async move {
                if let Some(abandoned) = abandoned {
                    abandon(running.peer(), abandoned, grace).await;
                }
                // Cancels the service: the transport drops stdin, the server sees EOF.
                let _ = tokio::time::timeout(grace, running.close()).await;
                process.close(grace).await;
            }
            .instrument(background_span()),
        );
    }
}

/// Why a process could not be opened in the era asked for.
pub(crate) enum Opening {
    /// It refused `initialize` because it only speaks 2026-07-28.
    ModernOnly,
    Failed(CallError),
}

/// Starts the server and runs its handshake in `era`, within the deadline. A line longer
/// than `line_limit` fails the stream. `trace`: the trace context of the call the process
/// is started for (empty for a warm one), put in the `_meta` of every request it is sent.
#[expect(
    clippy::too_many_arguments,
    reason = "what a process is opened with; each is used once, here"
)]
pub(crate) async fn open(
    shared: &Shared,
    endpoint: &StdioEndpoint,
    deadline: Instant,
    cancel: &CancellationToken,
    era: Era,
    line_limit: usize,
    non_call_budget: usize,
    trace: &JsonObject,
) -> Result<Session, Opening> {
    let described = Endpoint::Stdio(endpoint.clone());
    let mut process = Process::spawn(endpoint, &shared.children, &shared.tasks)
        .map_err(|error| Opening::Failed(spawn_error(&error, &described)))?;
    let registry = Arc::new(Registry::for_call(trace.clone()));
    let failure = FailureSlot::default();
    let limit = LineLimit::new(line_limit.into());
    let (stdout, stdin) = process.pipes();
    let transport = StdioTransport::new(
        stdout,
        stdin,
        Arc::clone(&limit),
        non_call_budget,
        Arc::clone(&registry),
        process.exited(),
        described.redactor(),
        Arc::clone(&failure),
    );
    let lifecycle = match era {
        Era::Legacy => ClientLifecycleMode::Initialize,
        Era::Modern => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    };
    let opened = tokio::select! {
        opened = detached(serve_client_with_lifecycle(shared.handler(era).clone(), transport, lifecycle)) => opened.map_err(Some),
        () = tokio::time::sleep_until(deadline) => Err(None),
        () = cancel.cancelled() => Err(None),
    };
    match opened {
        Ok(running) => Ok(Session {
            running,
            process,
            registry,
            era,
            failure,
            line_limit: limit,
        }),
        Err(error) => {
            let modern_only = era == Era::Legacy
                && matches!(
                    &error,
                    Some(ClientInitializeError::JsonRpcError(data))
                        if data.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
                );
            // What the process said (and its exit status) explains a failed handshake; a
            // deadline or a cancel is reported at once.
            let detail = match &error {
                Some(_) => process.stopped_detail(&described).await,
                None => String::new(),
            };
            shared.spawn_background(
                process
                    .close(shared.stdio_grace)
                    .instrument(background_span()),
            );
            if modern_only {
                return Err(Opening::ModernOnly);
            }
            Err(Opening::Failed(match error {
                None if cancel.is_cancelled() => {
                    CallError::new(ErrorKind::Cancelled, Delivery::NotSent, "was cancelled")
                }
                None => CallError::new(ErrorKind::Timeout, Delivery::NotSent, "timed out"),
                Some(error) => handshake_error(&error, &described, detail),
            }))
        }
    }
}

/// The error when a server only speaks 2026-07-28 and the client is set to legacy.
pub(crate) fn modern_only() -> CallError {
    CallError::new(
        ErrorKind::Connect,
        Delivery::NotSent,
        "the server refused the initialize handshake (it only speaks 2026-07-28)",
    )
    .retryable_if(false)
}

fn spawn_error(error: &io::Error, endpoint: &Endpoint) -> CallError {
    let why = match error.kind() {
        io::ErrorKind::NotFound => "not found",
        io::ErrorKind::PermissionDenied => "permission denied",
        _ => "it could not be started",
    };
    // A command that is not there, or may not run, is the same on the next call.
    CallError::new(
        ErrorKind::Connect,
        Delivery::NotSent,
        format!("could not start {} ({why})", endpoint.describe()),
    )
    .retryable_if(false)
}

fn handshake_error(
    error: &ClientInitializeError,
    endpoint: &Endpoint,
    detail: String,
) -> CallError {
    let (what, refused) = match error {
        ClientInitializeError::JsonRpcError(data) => (
            format!(
                "{} refused the handshake with JSON-RPC error {}: {}",
                endpoint.describe(),
                data.code.0,
                endpoint.quote(&data.message, 200)
            ),
            true,
        ),
        _ => (
            format!("{} ended before its handshake", endpoint.describe()),
            false,
        ),
    };
    // A server that cannot get through its handshake (a script it cannot open, a module
    // it lacks, a flag it refuses: its stderr says) does the same on the next start.
    let error = CallError::new(
        ErrorKind::Connect,
        Delivery::NotSent,
        format!("{what}{detail}"),
    )
    .retryable_if(false);
    // The server answered: a process started again would answer the same.
    if refused { error.answered() } else { error }
}
