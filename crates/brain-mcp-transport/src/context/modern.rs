//! The 2026-07-28 era: one long-lived rmcp client per (URL, token), opened with
//! `server/discover`, shared by concurrent calls. There is no session: every request
//! carries its own `_meta` and headers, so calls stay isolated, and each call is one POST.

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use rmcp::{
    Peer, RoleClient,
    model::{PaginatedRequestParams, ProtocolVersion},
    service::{
        ClientInitializeError, ClientLifecycleMode, RunningService, serve_client_with_lifecycle,
    },
    transport::StreamableHttpClientTransport,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::Shared;
use crate::{
    call_state::Registry,
    endpoint::{Endpoint, HttpEndpoint},
    error::{
        CallError, Delivery, ErrorKind,
        classify::{Cause, Failure, Wire, classify},
    },
    protocol::handler::Handler,
    wire::http::{SessionTracker, transport_config},
};

/// Pages read when listing tools for `Mcp-Param-*` headers.
const MAX_LIST_PAGES: usize = 100;

/// Concurrent requests one shared client keeps in flight (rmcp's default is 16).
const MAX_CONCURRENT_REQUESTS: usize = 4096;

/// Why a 2026-07-28 client could not be opened.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// The server does not speak 2026-07-28.
    Legacy,
    /// Anything else: the call fails with this.
    Failed(CallError),
}

pub(crate) fn not_modern() -> CallError {
    CallError::new(
        ErrorKind::Protocol,
        Delivery::NotSent,
        "the server does not support protocol 2026-07-28, and the client is set to require it",
    )
}

/// The longest the era probe (`server/discover`) may go unanswered before a server is
/// taken for one from before 2026 (some never answer a method they do not know).
pub(crate) const PROBE_BOUND: Duration = Duration::from_secs(3);

/// When the era probe of an operation that must be over by `deadline` gives up: after
/// [`PROBE_BOUND`] or a third of the time left, whichever is shorter, so that the
/// fallback to `initialize` still has most of the operation's time.
pub(crate) fn probe_deadline(deadline: Instant) -> Instant {
    let now = Instant::now();
    let left = deadline.saturating_duration_since(now);
    now + PROBE_BOUND.min(left / 3)
}

/// A long-lived 2026-07-28 client of one server.
#[derive(Debug)]
pub(crate) struct ModernClient {
    peer: Peer<RoleClient>,
    running: Mutex<Option<RunningService<RoleClient, Handler>>>,
    registry: Arc<Registry>,
    session: Arc<SessionTracker>,
    lifetime: CancellationToken,
    listed: tokio::sync::OnceCell<()>,
}

impl Drop for ModernClient {
    fn drop(&mut self) {
        self.lifetime.cancel();
    }
}

impl ModernClient {
    /// Opens a client with `server/discover`, within the deadline. `probe_until`: when
    /// the era is being probed (automatic), how long an unanswered `server/discover` is
    /// waited for before the server is taken for a legacy one ([`probe_deadline`]).
    pub(crate) async fn open(
        shared: &Shared,
        endpoint: &HttpEndpoint,
        deadline: Instant,
        cancel: &CancellationToken,
        non_call_budget: usize,
        probe_until: Option<Instant>,
    ) -> Result<Arc<Self>, OpenError> {
        let endpoint_for_errors = &Endpoint::Http(endpoint.clone());
        let registry = Arc::new(Registry::default());
        let lifetime = shared.shutdown.child_token();
        let backend = shared.backend(
            &registry,
            &lifetime,
            false,
            endpoint_for_errors.redactor(),
            non_call_budget,
            endpoint.dpop.clone(),
        );
        let session = Arc::clone(backend.session());
        let config = transport_config(endpoint, shared.sse_reconnects)
            .max_concurrent_requests(MAX_CONCURRENT_REQUESTS);
        let transport = StreamableHttpClientTransport::with_client(backend, config);
        // Shared by calls for minutes: no call's span is its parent.
        let serving = super::detached(serve_client_with_lifecycle(
            shared.modern_handler.clone(),
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ));
        // Until the client is open, a failed or dropped open ends its requests.
        let opening = lifetime.drop_guard();
        let until = probe_until.map_or(deadline, |probe| probe.min(deadline));
        let opened = tokio::select! {
            opened = serving => opened,
            () = tokio::time::sleep_until(until) => {
                // An unanswered probe: a server from before 2026 that holds a method it
                // does not know. The operation falls back to `initialize`.
                if until < deadline {
                    tracing::debug!("server/discover went unanswered; trying initialize");
                    return Err(OpenError::Legacy);
                }
                return Err(OpenError::Failed(CallError::new(ErrorKind::Timeout, Delivery::NotSent, "timed out")));
            }
            () = cancel.cancelled() => {
                return Err(OpenError::Failed(CallError::new(ErrorKind::Cancelled, Delivery::NotSent, "was cancelled")));
            }
        };
        match opened {
            Ok(running) => Ok(Arc::new(Self {
                peer: running.peer().clone(),
                running: Mutex::new(Some(running)),
                registry,
                session,
                lifetime: opening.disarm(),
                listed: tokio::sync::OnceCell::new(),
            })),
            Err(error) => Err(open_error(&error, &session, endpoint_for_errors)),
        }
    }

    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Reads the server's tool list once, so that rmcp's worker knows which arguments
    /// go into `Mcp-Param-*` headers. A failure is not fatal: the call goes on, and the
    /// server says if it needed the headers.
    pub(crate) async fn ensure_listed(&self, deadline: Instant) {
        let listing = self.listed.get_or_try_init(|| async {
            let mut cursor = None;
            for _ in 0..MAX_LIST_PAGES {
                let params = PaginatedRequestParams::default().with_cursor(cursor.take());
                let listed = self.peer.list_tools(Some(params)).await?;
                match listed.next_cursor {
                    Some(next) if !next.is_empty() => cursor = Some(next),
                    _ => break,
                }
            }
            Ok::<(), rmcp::ServiceError>(())
        });
        let _ = tokio::time::timeout_at(deadline, listing).await;
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.peer.is_transport_closed() || self.lifetime.is_cancelled()
    }

    /// What the transport recorded about requests that were not calls (for a client
    /// used once).
    pub(crate) fn failure(&self) -> Option<Failure> {
        self.session.failure()
    }

    /// Resolves once the bytes outside calls passed their budget.
    pub(crate) async fn over_budget(&self) {
        self.session.over_budget().await;
    }

    /// Closes the client, waiting at most `grace`.
    pub(crate) async fn close(&self, grace: Duration) {
        let running = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut running) = running {
            let _ = running.close_with_timeout(grace).await;
        }
        self.lifetime.cancel();
    }
}

/// Classifies a failed `server/discover`: legacy servers fall back, the rest fail the call.
fn open_error(
    error: &ClientInitializeError,
    session: &SessionTracker,
    endpoint: &Endpoint,
) -> OpenError {
    match error {
        ClientInitializeError::NoCompatibleProtocolVersion { .. }
        | ClientInitializeError::ExpectedInitResult(_)
        | ClientInitializeError::ExpectedInitResponse(_) => OpenError::Legacy,
        ClientInitializeError::JsonRpcError(data)
            if !matches!(
                data.code,
                rmcp::model::ErrorCode::HEADER_MISMATCH
                    | rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            ) =>
        {
            OpenError::Legacy
        }
        _ => OpenError::Failed(match session.failure() {
            Some(failure) => classify(Wire::NotWritten, &Cause::Transport(&failure), endpoint),
            None => CallError::new(
                ErrorKind::Protocol,
                Delivery::NotSent,
                "the server did not complete server/discover",
            ),
        }),
    }
}
