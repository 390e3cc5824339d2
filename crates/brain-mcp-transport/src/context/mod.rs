//! MCP contexts, one kind per module: a legacy session (`legacy`), a 2026-07-28 client
//! (`modern`), a stdio process (`stdio`); and the flow every call takes on one of them:
//! send once, wait, classify, close.
//!
//! Contexts take the small [`Shared`] state of the client (the pool, the handler, the
//! tracker of background tasks, settings), never the client itself: what to open, and
//! the cache of what servers speak, are the client's business.

#[cfg(not(feature = "http"))]
mod http_off;
#[cfg(feature = "http")]
pub(crate) mod legacy;
#[cfg(feature = "http")]
pub(crate) mod modern;
#[cfg(feature = "stdio")]
pub(crate) mod stdio;
#[cfg(not(feature = "stdio"))]
#[path = "stdio_off.rs"]
pub(crate) mod stdio;
#[cfg(not(feature = "http"))]
pub(crate) use http_off::{legacy, modern};

use std::{
    sync::{Arc, atomic::AtomicUsize},
    time::Duration,
};

use rmcp::{Peer, RoleClient};
use tokio::runtime::Handle;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::{
    api::{CallOutcome, CallRequest, DEFAULT_DISCOVERY_BYTES, Era, JsonObject},
    call_state::{CallState, Registry},
    error::{CallError, ErrorKind, classify::Failure},
    protocol::{
        drive::{Abandoned, abandon, cancel_reason, drive_call, stopped, tasks_hint},
        handler::Handler,
        outcome::Stop,
    },
    telemetry::Metrics,
    wire::http::Clients,
};
#[cfg(feature = "http")]
use crate::{
    dpop::Dpop,
    secret::Redactor,
    wire::http::{BackendConfig, HttpBackend},
};

/// What every context of one client shares.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The pooled HTTP client, the one for resends on a fresh connection, their count.
    pub(crate) http: Clients,
    /// Client info, capabilities and the answers to server requests (legacy sessions).
    pub(crate) handler: Handler,
    /// The same, declaring the tasks extension: 2026-07-28 contexts.
    pub(crate) modern_handler: Handler,
    /// Owns every background task (closes, reapers, drains); shutdown waits for it.
    pub(crate) tasks: TaskTracker,
    /// Cancelled when the client is dropped: ends every transport.
    pub(crate) shutdown: CancellationToken,
    /// stdio children not reaped yet.
    pub(crate) children: Arc<AtomicUsize>,
    /// Open the standalone GET stream of legacy sessions.
    pub(crate) standalone_stream: bool,
    /// Bound on closing a context after its call.
    pub(crate) close_timeout: Duration,
    /// How long a stdio server gets to exit after its stdin closes.
    pub(crate) stdio_grace: Duration,
    /// Bound on SSE reconnection attempts.
    pub(crate) sse_reconnects: usize,
    /// Bound on a response that is not a call's, and on one SSE event.
    pub(crate) max_response_bytes: usize,
    /// The client's instruments (empty without the `otel` feature).
    pub(crate) metrics: Metrics,
}

impl Shared {
    /// The handler of a context of `era`.
    pub(crate) fn handler(&self, era: Era) -> &Handler {
        match era {
            Era::Legacy => &self.handler,
            Era::Modern => &self.modern_handler,
        }
    }

    #[cfg(feature = "http")]
    /// An HTTP backend for one transport: its own registry of calls and a lifetime under
    /// the client's; `dpop`: the key its token is bound to.
    pub(crate) fn backend(
        &self,
        registry: &Arc<Registry>,
        lifetime: &CancellationToken,
        standalone_stream: bool,
        redactor: Redactor,
        non_call_budget: usize,
        dpop: Option<Dpop>,
    ) -> HttpBackend {
        HttpBackend::new(
            self.http.clone(),
            Arc::clone(registry),
            lifetime.clone(),
            BackendConfig {
                standalone_stream,
                max_response_bytes: self.max_response_bytes,
                max_resumes: self.sse_reconnects,
                initialize_grace: self.close_timeout,
                redactor,
                non_call_budget,
                dpop,
            },
        )
    }

    /// Runs a close in the background, on the tracker.
    pub(crate) fn spawn_background(&self, task: impl Future<Output = ()> + Send + 'static) {
        spawn_background(&self.tasks, task);
    }
}

/// Runs rmcp's set-up of a context (the handshake, and the loop and worker tasks it
/// spawns, which live as long as the context) in a task of its own, outside the current
/// span. rmcp makes its long-lived spans children of the current span, which would keep
/// the call's span (and the host's spans above it) open for as long as the context
/// lives: until a session's `DELETE`, or for minutes with a shared 2026-07-28 client, so
/// that a span's duration would not be the call's. Dropping the future ends the task (as
/// dropping the set-up itself would).
pub(crate) async fn detached<F>(future: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    match tokio_util::task::AbortOnDropHandle::new(tokio::spawn(future)).await {
        Ok(output) => output,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        // Cancelled: only the runtime's shutdown does that (this future aborts it only
        // when dropped), and then nothing waits for this one either.
        Err(_) => std::future::pending().await,
    }
}

/// The span of work a call leaves running in the background (closing its context): not
/// a child of the call's span, which would then stay open until that work ends, but a
/// span of its own that follows from it. At DEBUG: usually off.
pub(crate) fn background_span() -> tracing::Span {
    let span = tracing::debug_span!(parent: None, "close_context");
    span.follows_from(tracing::Span::current());
    span
}

/// Runs a close in the background, on the tracker (which shutdown waits for). Outside a
/// runtime (a call dropped as its runtime ends) there is nothing left to run it.
pub(crate) fn spawn_background(
    tasks: &TaskTracker,
    task: impl Future<Output = ()> + Send + 'static,
) {
    if let Ok(runtime) = Handle::try_current() {
        tasks.spawn_on(task, &runtime);
    }
}

/// What a context is for: a call may share a long-lived 2026-07-28 client; discovery
/// gets a fresh one, so what it reports is what the server says now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// A call, with its byte budget.
    Call { budget: usize },
    /// A discovery, with the byte budget of its whole listing.
    Discovery { budget: usize },
}

impl Purpose {
    /// The bound on every byte the context receives outside calls: a discovery's own
    /// budget, or the default discovery budget (a shared client's one listing, a
    /// session's handshake).
    pub(crate) fn non_call_budget(self) -> usize {
        match self {
            Purpose::Call { .. } => DEFAULT_DISCOVERY_BYTES,
            Purpose::Discovery { budget } => budget,
        }
    }
}

/// An open MCP context.
pub(crate) enum Opened {
    Legacy(legacy::Session),
    /// The long-lived client of a server, shared by calls.
    Shared(Arc<modern::ModernClient>),
    /// A client of its own (discovery), closed after use.
    Owned(Arc<modern::ModernClient>),
    Stdio(stdio::Session),
}

impl Opened {
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        match self {
            Opened::Legacy(session) => session.peer(),
            Opened::Shared(client) | Opened::Owned(client) => client.peer(),
            Opened::Stdio(session) => session.peer(),
        }
    }

    fn registry(&self) -> &Arc<Registry> {
        match self {
            Opened::Legacy(session) => session.registry(),
            Opened::Shared(client) | Opened::Owned(client) => client.registry(),
            Opened::Stdio(session) => session.registry(),
        }
    }

    pub(crate) fn era(&self) -> Era {
        match self {
            Opened::Legacy(_) => Era::Legacy,
            Opened::Shared(_) | Opened::Owned(_) => Era::Modern,
            Opened::Stdio(session) => session.era(),
        }
    }

    /// The protocol version the context speaks, and its session id (legacy HTTP).
    fn protocol(&self) -> (Option<String>, Option<String>) {
        let version = match self.era() {
            Era::Modern => Some(
                rmcp::model::ProtocolVersion::V_2026_07_28
                    .as_str()
                    .to_owned(),
            ),
            _ => self
                .peer()
                .peer_info()
                .map(|info| info.protocol_version.as_str().to_owned()),
        };
        let session = match self {
            Opened::Legacy(session) => session.session_id(),
            _ => None,
        };
        (version, session)
    }

    /// What the transport recorded about requests that were not a call's own.
    pub(crate) fn failure(&self) -> Option<Failure> {
        match self {
            Opened::Legacy(session) => session.failure(),
            Opened::Owned(client) => client.failure(),
            Opened::Stdio(session) => session.failure(),
            Opened::Shared(_) => None,
        }
    }

    /// Resolves once the bytes the context received outside calls passed their budget (a
    /// listing too large, say): every later answer is refused, and rmcp never answers a
    /// request whose answer was refused. A stdio transport ends itself instead, which rmcp
    /// does see.
    pub(crate) async fn over_budget(&self) {
        match self {
            Opened::Legacy(session) => session.over_budget().await,
            Opened::Owned(client) => client.over_budget().await,
            Opened::Stdio(_) | Opened::Shared(_) => std::future::pending().await,
        }
    }

    /// Closes the context (in the background where that takes round trips), after
    /// telling the server about an abandoned request or task.
    pub(crate) fn finish(self, shared: &Shared, abandoned: Option<Abandoned>) {
        let owned = matches!(self, Opened::Owned(_));
        match self {
            // A legacy session never runs a task.
            Opened::Legacy(session) => session.finish(abandoned.and_then(Abandoned::request)),
            Opened::Stdio(session) => session.finish(shared, abandoned),
            Opened::Shared(modern) | Opened::Owned(modern) => {
                let bound = shared.close_timeout;
                // In the background: the result is not held back.
                shared.spawn_background(async move {
                    // A request: no round trip, rmcp closes the request's stream, this
                    // era's cancellation. A task: `tasks/cancel`.
                    if let Some(abandoned) = abandoned {
                        abandon(modern.peer(), abandoned, bound).await;
                    }
                    if owned {
                        modern.close(bound).await;
                    }
                });
            }
        }
    }
}

/// One call on an open context: send once, stream progress, return; the context is
/// closed after (also when the future is dropped).
pub(crate) async fn call(
    shared: &Shared,
    opened: Opened,
    request: &CallRequest,
) -> Result<CallOutcome, CallError> {
    let state = Arc::new(
        CallState::new(
            &request.progress_token,
            request.progress.clone(),
            request.max_output_bytes,
        )
        .with_resend(request.resend.clone()),
    );
    let mut finishing = Finishing {
        shared,
        opened: Some(opened),
        state: Arc::clone(&state),
        trace: &request.trace,
    };
    let opened = finishing.opened.as_mut().expect("open until finished");
    let (version, session) = opened.protocol();
    request.report.set_protocol(version, session);
    let _received = Received {
        shared,
        state: Arc::clone(&state),
        request,
    };
    if let (Opened::Shared(modern), true) = (&*opened, request.param_headers) {
        // Boxed: rarely needed, and its state would otherwise sit in every call's.
        Box::pin(modern.ensure_listed(request.deadline)).await;
    }
    let registration = opened.registry().register(Arc::clone(&state));
    let era = opened.era();
    let outcome = drive_call(
        opened.peer(),
        shared.handler(era),
        opened.registry(),
        registration.key(),
        &state,
        request,
    )
    .await;
    drop(registration);
    let (result, abandoned) = match outcome {
        Ok(result) => (Ok(CallOutcome { result, era }), None),
        Err(stop) => {
            let mut error = stopped(&stop, &state, opened.failure(), &request.endpoint);
            if let Some(hint) = tasks_hint(&stop, era, request.tasks, state.rounds() <= 1) {
                error = error.with_detail_suffix(hint);
            }
            // What the process said, and how it ended, explain a stream that ended.
            if let (Opened::Stdio(session), Stop::Failed(_)) = (&*opened, &stop)
                && matches!(error.kind(), ErrorKind::Protocol | ErrorKind::ServerExited)
            {
                let detail = session.explain(&request.endpoint).await;
                error = error.with_detail_suffix(&detail);
            }
            // Every path that ends a call on a JSON-RPC error says its code (telemetry).
            if let Some(code) = error.rpc_code() {
                request.report.set_rpc_code(code);
            }
            (Err(error), cancel_reason(&stop, state.task().is_some()))
        }
    };
    finishing.finish(abandoned);
    result
}

/// Reports the bytes of a call's response however the call ends (finished, or its future
/// dropped).
struct Received<'a> {
    shared: &'a Shared,
    state: Arc<CallState>,
    request: &'a CallRequest,
}

impl Drop for Received<'_> {
    fn drop(&mut self) {
        let bytes = self.state.received();
        self.request.report.add_received(bytes);
        self.shared.metrics.received(bytes, &self.request.endpoint);
    }
}

/// Closes a call's context however the call ends: finished, or its future dropped (then
/// the request still running is abandoned).
struct Finishing<'a> {
    shared: &'a Shared,
    opened: Option<Opened>,
    state: Arc<CallState>,
    /// The call's trace context, which its `tasks/cancel` carries too.
    trace: &'a JsonObject,
}

impl Finishing<'_> {
    /// Closes the context; `reason` is why what still ran was abandoned: the call's task
    /// (`tasks/cancel`), or its request. A request never written needs no cancel notice
    /// (and now never will be written).
    fn finish(&mut self, reason: Option<&'static str>) {
        if let Some(opened) = self.opened.take() {
            let abandoned = reason
                .filter(|_| !self.state.abandon())
                .and_then(|reason| match self.state.task() {
                    Some(task) => Some(Abandoned::Task(task, self.trace.clone())),
                    None => self
                        .state
                        .request()
                        .map(|id| Abandoned::Request(id, reason)),
                });
            opened.finish(self.shared, abandoned);
        }
    }
}

impl Drop for Finishing<'_> {
    fn drop(&mut self) {
        self.finish(Some("the caller dropped the call"));
    }
}
