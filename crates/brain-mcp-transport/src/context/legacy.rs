//! The initialize era (up to 2025-11-25): a fresh session per call.
//!
//! `initialize` -> `notifications/initialized` -> `tools/call` -> `DELETE`, with no
//! standalone GET stream. The result goes back to the caller as soon as it arrives; the
//! session is closed afterwards by a background task the client owns (cancel notice first
//! when the call was abandoned, then `DELETE`). When the handshake fails after the server
//! issued a session, rmcp cannot delete it, so we do.

use std::{sync::Arc, time::Duration};

use rmcp::{
    Peer, RoleClient,
    model::{ProtocolVersion, RequestId},
    service::{ClientInitializeError, RunningService, serve_client},
    transport::{StreamableHttpClientTransport, streamable_http_client::StreamableHttpClient},
};
use tokio::time::Instant;
use tokio_util::{sync::CancellationToken, task::TaskTracker};
use tracing::Instrument;

use super::{Shared, background_span, detached, spawn_background};
use crate::{
    api::JsonObject,
    call_state::Registry,
    endpoint::{Endpoint, HttpEndpoint},
    error::{
        CallError, Delivery, ErrorKind,
        classify::{Cause, Failure, Wire, classify},
    },
    protocol::{drive::cancel_request, handler::Handler},
    wire::http::{HttpBackend, SessionTracker, transport_config},
};

/// A handful of POSTs at once is all one call needs (the call, a cancel, a reply).
const MAX_CONCURRENT_REQUESTS: usize = 4;
/// How long a session waits for its standalone stream, when it opens one.
const STANDALONE_WAIT: Duration = Duration::from_secs(2);

/// A call's own session, open. However the call ends (finished, failed, or its future
/// dropped), the session is closed.
pub(crate) struct Session {
    peer: Peer<RoleClient>,
    registry: Arc<Registry>,
    tracker: Arc<SessionTracker>,
    closing: Closing,
}

impl Session {
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    /// Whether the session can still carry a call (its rmcp worker still runs).
    pub(crate) fn is_open(&self) -> bool {
        !self.peer.is_transport_closed()
    }

    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// What the transport recorded about requests that were not the call.
    pub(crate) fn failure(&self) -> Option<Failure> {
        self.tracker.failure()
    }

    /// The session id the server issued, if any.
    pub(crate) fn session_id(&self) -> Option<String> {
        self.tracker.session_id()
    }

    /// Resolves once the bytes outside calls passed their budget.
    pub(crate) async fn over_budget(&self) {
        self.tracker.over_budget().await;
    }

    /// Closes the session in the background: the cancel notice for an abandoned request
    /// first, then `DELETE`.
    pub(crate) fn finish(mut self, abandoned: Option<(RequestId, &'static str)>) {
        self.closing.start(abandoned);
    }
}

/// Opens a session: `initialize` and `notifications/initialized`, within the deadline.
/// `trace`: the trace context of the call the session is opened for (empty for a warm
/// one), put in the `_meta` of every request of the session, `initialize` included.
pub(crate) async fn open(
    shared: &Shared,
    endpoint: &HttpEndpoint,
    deadline: Instant,
    cancel: &CancellationToken,
    non_call_budget: usize,
    trace: &JsonObject,
) -> Result<Session, CallError> {
    let registry = Arc::new(Registry::for_call(trace.clone()));
    let lifetime = shared.shutdown.child_token();
    let described = Endpoint::Http(endpoint.clone());
    let backend = shared.backend(
        &registry,
        &lifetime,
        shared.standalone_stream,
        described.redactor(),
        non_call_budget,
        endpoint.dpop.clone(),
    );
    let tracker = Arc::clone(backend.session());
    // From here on, a failed or dropped open still closes what the server opened.
    let mut closing = Closing {
        closer: Some(Closer {
            session: Arc::clone(&tracker),
            backend: backend.clone(),
            lifetime,
            endpoint: endpoint.clone(),
            bound: shared.close_timeout,
        }),
        running: None,
        tasks: shared.tasks.clone(),
    };
    let config = transport_config(endpoint, shared.sse_reconnects)
        .max_concurrent_requests(MAX_CONCURRENT_REQUESTS);
    let transport = StreamableHttpClientTransport::with_client(backend, config);
    let opened = tokio::select! {
        opened = detached(serve_client(shared.handler.clone(), transport)) => opened.map_err(Some),
        () = tokio::time::sleep_until(deadline) => Err(None),
        () = cancel.cancelled() => Err(None),
    };
    match opened {
        Ok(running) => {
            let peer = running.peer().clone();
            closing.running = Some(running);
            if let Some(error) = unsupported_version(&peer) {
                // Dropping `closing` closes the session.
                return Err(error);
            }
            if shared.standalone_stream {
                // Server requests outside a call arrive on the standalone stream: let it
                // open before the call goes out.
                let _ = tokio::time::timeout_at(
                    deadline.min(Instant::now() + STANDALONE_WAIT),
                    tracker.standalone_settled(),
                )
                .await;
            }
            Ok(Session {
                peer,
                registry,
                tracker,
                closing,
            })
        }
        Err(error) => {
            closing.start(None);
            Err(match error {
                Some(error) => open_error(&error, &tracker, &described),
                None if cancel.is_cancelled() => {
                    CallError::new(ErrorKind::Cancelled, Delivery::NotSent, "was cancelled")
                }
                None => CallError::new(ErrorKind::Timeout, Delivery::NotSent, "timed out"),
            })
        }
    }
}

/// The version a server answered `initialize` with, when it is not one this client
/// speaks in a session: the spec's client should then disconnect, rather than carry on
/// in a revision it does not know (and send the server's string back as a header).
fn unsupported_version(peer: &Peer<RoleClient>) -> Option<CallError> {
    let version = peer.peer_info()?.protocol_version.clone();
    if version.has_initialize() && ProtocolVersion::KNOWN_VERSIONS.contains(&version) {
        return None;
    }
    let shown: String = version.as_str().chars().take(40).collect();
    Some(CallError::new(
        ErrorKind::Protocol,
        Delivery::NotSent,
        format!(
            "the server answered initialize with protocol version {shown:?}, which is not one a session speaks ({})",
            ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .filter(|known| known.has_initialize())
                .map(ProtocolVersion::as_str)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    ))
}

/// A session's close, started once: explicitly, or when dropped.
struct Closing {
    closer: Option<Closer>,
    running: Option<RunningService<RoleClient, Handler>>,
    tasks: TaskTracker,
}

impl Closing {
    fn start(&mut self, abandoned: Option<(RequestId, &'static str)>) {
        let Some(closer) = self.closer.take() else {
            return;
        };
        spawn_background(
            &self.tasks,
            closer
                .close(self.running.take(), abandoned)
                .instrument(background_span()),
        );
    }
}

impl Drop for Closing {
    fn drop(&mut self) {
        self.start(None);
    }
}

/// Closes a call's session after the call.
struct Closer {
    backend: HttpBackend,
    session: Arc<SessionTracker>,
    lifetime: CancellationToken,
    endpoint: HttpEndpoint,
    bound: Duration,
}

impl Closer {
    async fn close(
        self,
        running: Option<RunningService<RoleClient, Handler>>,
        abandoned: Option<(RequestId, &'static str)>,
    ) {
        if let Some(mut running) = running {
            let bound = self.bound;
            let _ = tokio::time::timeout(bound, async {
                if let Some((id, reason)) = abandoned {
                    cancel_request(running.peer(), id, reason, bound).await;
                }
                // Ends the worker, which sends the DELETE.
                let _ = running.close_with_timeout(bound).await;
            })
            .await;
        }
        // Ends any request still in flight (a hung handshake, a stream); an initialize
        // still gets its grace, and then its session, if any, is known.
        self.lifetime.cancel();
        let _ = tokio::time::timeout(self.bound, self.session.initialize_settled()).await;
        // The session rmcp could not delete (the handshake failed after it was issued).
        if let Some((session_id, headers)) = self.session.undeleted() {
            let auth = self
                .endpoint
                .bearer
                .as_ref()
                .map(|bearer| bearer.expose().to_owned());
            let _ = tokio::time::timeout(
                self.bound,
                self.backend.delete_session(
                    Arc::from(self.endpoint.url.as_str()),
                    session_id,
                    auth,
                    headers,
                ),
            )
            .await;
        }
    }
}

/// Classifies a failed handshake. The call was never sent.
pub(crate) fn open_error(
    error: &ClientInitializeError,
    session: &SessionTracker,
    endpoint: &Endpoint,
) -> CallError {
    if let Some(failure) = session.failure() {
        return classify(Wire::NotWritten, &Cause::Transport(&failure), endpoint);
    }
    // A handshake cut short may go through on the next try; a refused or garbled one not.
    let (detail, may_pass) = match error {
        ClientInitializeError::JsonRpcError(data) => (
            format!(
                "the server refused initialize with JSON-RPC error {}: {}",
                data.code.0,
                endpoint.quote(&data.message, 200)
            ),
            false,
        ),
        ClientInitializeError::ConnectionClosed(_) => (
            "the connection closed during the handshake".to_owned(),
            true,
        ),
        ClientInitializeError::TransportError { .. } => (
            format!(
                "could not complete the handshake with {}",
                endpoint.describe()
            ),
            true,
        ),
        _ => ("the server's handshake was not valid MCP".to_owned(), false),
    };
    CallError::new(ErrorKind::Protocol, Delivery::NotSent, detail).retryable_if(may_pass)
}
