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
    transport::{
        StreamableHttpClientTransport, common::client_side_sse::ExponentialBackoff,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{
    calls::Registry,
    client::McpClient,
    endpoint::{Endpoint, HttpEndpoint},
    error::{CallError, Delivery, ErrorKind},
    handler::Handler,
    http::SessionTracker,
    run::from_failure,
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

/// Where the shared client of one server lives; created on first use, replaced when closed.
#[derive(Debug, Default)]
pub(crate) struct ModernSlot {
    current: Mutex<Option<Arc<ModernClient>>>,
    opening: tokio::sync::Mutex<()>,
}

impl ModernSlot {
    fn current(&self) -> Option<Arc<ModernClient>> {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .filter(|client| !client.is_closed())
    }

    /// Whether the slot holds a client that died (so the server should be rediscovered).
    pub(crate) fn is_closed(&self) -> bool {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|client| client.is_closed())
    }

    /// Whether the slot holds a live client.
    pub(crate) fn is_open(&self) -> bool {
        self.current().is_some()
    }

    /// The slot's client, opening it (once, however many calls ask at the same time).
    pub(crate) async fn get(
        slot: &Arc<Self>,
        client: &McpClient,
        endpoint: &HttpEndpoint,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<Arc<ModernClient>, OpenError> {
        if let Some(current) = slot.current() {
            return Ok(current);
        }
        let _opening = tokio::select! {
            guard = slot.opening.lock() => guard,
            () = tokio::time::sleep_until(deadline) => {
                return Err(OpenError::Failed(CallError::new(ErrorKind::Timeout, Delivery::NotSent, "timed out")));
            }
            () = cancel.cancelled() => {
                return Err(OpenError::Failed(CallError::new(ErrorKind::Cancelled, Delivery::NotSent, "was cancelled")));
            }
        };
        if let Some(current) = slot.current() {
            return Ok(current);
        }
        let opened = ModernClient::open(client, endpoint, deadline, cancel).await?;
        *slot.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&opened));
        Ok(opened)
    }

    /// Closes the slot's client, waiting at most `grace`.
    pub(crate) async fn close(&self, grace: Duration) {
        let current = self
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(client) = current {
            client.close(grace).await;
        }
    }
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
    /// Opens a client with `server/discover`, within the deadline.
    pub(crate) async fn open(
        client: &McpClient,
        endpoint: &HttpEndpoint,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<Arc<Self>, OpenError> {
        let endpoint_for_errors = &Endpoint::Http(endpoint.clone());
        let inner = &client.inner;
        let registry = Arc::new(Registry::default());
        let lifetime = inner.shutdown.child_token();
        let backend = inner.backend(&registry, &lifetime, false);
        let session = Arc::clone(backend.session());
        let config = transport_config(endpoint, inner.options.sse_reconnects)
            .max_concurrent_requests(MAX_CONCURRENT_REQUESTS);
        let transport = StreamableHttpClientTransport::with_client(backend, config);
        let serving = serve_client_with_lifecycle(
            inner.handler.clone(),
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        );
        // Until the client is open, a failed or dropped open ends its requests.
        let opening = lifetime.drop_guard();
        let opened = tokio::select! {
            opened = serving => opened,
            () = tokio::time::sleep_until(deadline) => {
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
    pub(crate) fn failure(&self) -> Option<crate::calls::Failure> {
        self.session.failure()
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

/// The transport settings shared by both eras: our bearer, no session re-initialisation
/// (a retried POST would break at-most-once), and bounded SSE resumption.
pub(crate) fn transport_config(
    endpoint: &HttpEndpoint,
    sse_reconnects: usize,
) -> StreamableHttpClientTransportConfig {
    let mut config = StreamableHttpClientTransportConfig::with_uri(endpoint.url.as_str())
        .reinit_on_expired_session(false);
    let mut backoff = ExponentialBackoff::default();
    backoff.max_times = Some(sse_reconnects);
    backoff.base_duration = Duration::from_millis(500);
    backoff.max_delay = Some(Duration::from_secs(5));
    config.retry_config = Arc::new(backoff);
    if let Some(bearer) = &endpoint.bearer {
        config = config.auth_header(bearer.expose());
    }
    config
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
            Some(failure) => from_failure(&failure, Delivery::NotSent, endpoint),
            None => CallError::new(
                ErrorKind::Protocol,
                Delivery::NotSent,
                "the server did not complete server/discover",
            ),
        }),
    }
}
