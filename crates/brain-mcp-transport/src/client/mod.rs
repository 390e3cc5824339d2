//! The process-wide client: options, the shared state its contexts use, the cache of what
//! servers speak, and the entry points (`call`, `discover`, `stats`, `shutdown`). It
//! decides which context a call gets; the contexts do the rest.

mod cache;
#[cfg(all(feature = "otel", feature = "http"))]
mod export;
mod grants;
mod pool;

#[cfg(all(feature = "otel", feature = "http"))]
pub use self::export::ExportHttpClient;

use std::{
    sync::{
        Arc, Weak,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use rmcp::model::Implementation;
use tokio::{sync::Notify, time::Instant};
use tokio_util::{sync::CancellationToken, task::TaskTracker};
use tracing::Instrument;

use self::{
    cache::{Cache, Known, ModernSlot, ServerKey},
    pool::{Pool, PoolKey, Refill, Take, Warm, WarmSettings},
};
use crate::{
    api::{
        CallOutcome, CallRequest, DEFAULT_DISCOVERY_BYTES, Discovery, DiscoveryRequest, Era,
        EraPreference, JsonObject, ServerRequestPolicy,
    },
    context::{
        self, Opened, Purpose, Shared, legacy,
        modern::{self, ModernClient, OpenError},
        stdio::{self, Opening},
    },
    endpoint::{Endpoint, HttpEndpoint, StdioEndpoint},
    error::{CallError, Delivery, ErrorKind},
    protocol::{handler::Handler, list::list_tools},
    secret::Secret,
    telemetry::{self, Metrics, Source},
    wire::http::Clients,
};

/// Room over a call's budget for the JSON-RPC envelope of a stdio answer.
const LINE_HEADROOM: usize = 64 * 1024;
/// How long opening a warm context may take (in the background): a stdio server behind
/// `npx` or `uvx` can take many seconds to start.
const WARM_OPEN_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest duration a [`ClientOptions`] setter keeps (a year): a longer one (say
/// `Duration::MAX`, meaning "never") would overflow the clock when added to now.
const LONGEST_BOUND: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// Options of an [`McpClient`]: `ClientOptions::default()`, then the setters. A duration
/// longer than a year is taken as a year (`Duration::MAX` means "as long as can be").
///
/// A call's own deadline is not here: it is the call's (`CallRequest::new`'s timeout, or
/// `ToolCall::timeout` in `brain-tools`, within the binding's `timeout_seconds`).
///
/// # Examples
///
/// A client for a host behind a corporate proxy, whose servers use a private CA and ask
/// for a client certificate (mutual TLS). Certificates and keys are PEM; a host reads
/// them from its files or its secret manager. The options are checked when the client is
/// built, so a key that is not one fails there, before any call.
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use brain_mcp_transport::{
///     ClientOptions, EraPreference, McpClient, MemoryCredentialStore, Secret,
/// };
///
/// # fn pki() -> (String, String, String) {
/// #     use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
/// #     let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
/// #     ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
/// #     let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
/// #     let key = KeyPair::generate().unwrap();
/// #     let leaf = CertificateParams::new(vec!["brain-host".to_owned()]).unwrap();
/// #     let leaf = leaf.signed_by(&key, &ca).unwrap();
/// #     (ca.pem(), leaf.pem(), key.serialize_pem())
/// # }
/// # fn main() -> Result<(), brain_mcp_transport::ClientBuildError> {
/// # let (ca_pem, client_pem, client_key) = pki();
/// // ca_pem = std::fs::read("private-ca.pem")?, and so on.
/// let options = ClientOptions::default()
///     // Who this client is to servers, and which protocol era it speaks.
///     .client_info("acme-agent-host", "4.2.0")
///     .era(EraPreference::Auto)
///     // Every request (MCP and OAuth) through the proxy; by default the environment's
///     // HTTPS_PROXY, HTTP_PROXY, ALL_PROXY and NO_PROXY apply, and `.no_proxy()` ignores them.
///     .proxy("http://proxy.internal.example:3128")
///     // A private CA trusted beside the platform's roots, and a client certificate.
///     .root_certificates_pem(ca_pem)
///     .client_certificate_pem(client_pem.clone(), Secret::new(client_key))
///     // Bounds on what is not a call's: closing a context, a response that is not a
///     // call's result, how long what a server supports is remembered.
///     .close_timeout(Duration::from_secs(2))
///     .max_response_bytes(4 * 1024 * 1024)
///     .discovery_ttl(Duration::from_secs(600))
///     // Contexts opened ahead of calls (legacy sessions, stdio processes).
///     .warm_per_server(4)
///     .warm_idle(Duration::from_secs(60))
///     // Where tenants' delegated OAuth grants are kept (this is the default).
///     .credential_store(Arc::new(MemoryCredentialStore::new()));
/// let client = McpClient::new(options)?;
/// # drop(client);
///
/// // A key that is not one: the client is not built, and the error says what failed.
/// let broken = ClientOptions::default()
///     .client_certificate_pem(client_pem, Secret::new("not a key"));
/// let error = McpClient::new(broken).unwrap_err();
/// assert_eq!(
///     error.to_string(),
///     "the MCP client could not be built: the client certificate's key is not a PEM private key"
/// );
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct ClientOptions {
    era: EraPreference,
    discovery_ttl: Duration,
    discovery_capacity: usize,
    client_name: String,
    client_version: String,
    server_requests: ServerRequestPolicy,
    standalone_stream: bool,
    close_timeout: Duration,
    stdio_grace: Duration,
    sse_reconnects: usize,
    max_response_bytes: usize,
    network: crate::wire::network::Network,
    warm: WarmSettings,
    /// OAuth: the credential store, the authorizer, the identity-token provider.
    auth: crate::auth::AuthOptions,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            era: EraPreference::Auto,
            discovery_ttl: Duration::from_secs(300),
            discovery_capacity: 1024,
            client_name: "brain-mcp-tools".to_owned(),
            client_version: env!("CARGO_PKG_VERSION").to_owned(),
            server_requests: ServerRequestPolicy::Reject,
            standalone_stream: false,
            close_timeout: Duration::from_secs(5),
            stdio_grace: Duration::from_secs(2),
            sse_reconnects: 3,
            max_response_bytes: 16 * 1024 * 1024,
            network: crate::wire::network::Network {
                tcp_nodelay: true,
                ..Default::default()
            },
            warm: WarmSettings {
                enabled: true,
                per_server: 2,
                total: 64,
                idle: Duration::from_secs(30),
            },
            auth: crate::auth::AuthOptions::default(),
        }
    }
}

impl ClientOptions {
    /// Which era to speak to HTTP servers (default: automatic).
    pub fn era(mut self, era: EraPreference) -> Self {
        self.era = era;
        self
    }

    /// How long what a server supports is remembered, and a 2026-07-28 client kept
    /// (default 5 min). A client whose connection died is replaced at once, whatever its
    /// age. The `ttlMs` of a `server/discover` answer is not used: servers send 0 ("do
    /// not cache this answer"), which would cost a probe per call for what rarely changes.
    pub fn discovery_ttl(mut self, ttl: Duration) -> Self {
        self.discovery_ttl = ttl.min(LONGEST_BOUND);
        self
    }

    /// How many servers are remembered (default 1024); the least recently used is
    /// forgotten first.
    pub fn discovery_capacity(mut self, servers: usize) -> Self {
        self.discovery_capacity = servers;
        self
    }

    /// The `clientInfo` sent to servers (default `brain-mcp-tools` and this version).
    pub fn client_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.client_name = name.into();
        self.client_version = version.into();
        self
    }

    /// How server-to-client requests are answered (default: refused).
    pub fn server_requests(mut self, policy: ServerRequestPolicy) -> Self {
        self.server_requests = policy;
        self
    }

    /// Opens the standalone GET stream of legacy sessions (default off: a one-call
    /// session has no use for it; the conformance client turns it on).
    pub fn standalone_stream(mut self, open: bool) -> Self {
        self.standalone_stream = open;
        self
    }

    /// Bound on closing a context after its call: the cancel notice and `DELETE`
    /// (default 5 s).
    pub fn close_timeout(mut self, bound: Duration) -> Self {
        self.close_timeout = bound.min(LONGEST_BOUND);
        self
    }

    /// How long a stdio server gets to exit after its stdin closes before its process
    /// group is killed (default 2 s).
    pub fn stdio_grace(mut self, grace: Duration) -> Self {
        self.stdio_grace = grace.min(LONGEST_BOUND);
        self
    }

    /// Bound on resuming a response stream the server closed (default 3).
    pub fn sse_reconnects(mut self, times: usize) -> Self {
        self.sse_reconnects = times;
        self
    }

    /// Bound on a response that is not a call's (a handshake, one discovery page) and on
    /// one SSE event (default 16 MiB).
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// `TCP_NODELAY` on pooled connections (default on).
    pub fn tcp_nodelay(mut self, on: bool) -> Self {
        self.network.tcp_nodelay = on;
        self
    }

    /// Sends every HTTP request (MCP and OAuth) through this proxy (`http://` or
    /// `https://`, CONNECT for https servers; user info in the URL authenticates to the
    /// proxy and is kept secret). By default the environment's proxy is used
    /// (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, with `NO_PROXY`), as reqwest reads it.
    pub fn proxy(mut self, url: impl Into<String>) -> Self {
        self.network.proxy = crate::wire::network::ProxySetting::Url(Secret::new(url.into()));
        self
    }

    /// Uses no proxy, whatever the environment says.
    pub fn no_proxy(mut self) -> Self {
        self.network.proxy = crate::wire::network::ProxySetting::Off;
        self
    }

    /// Trusts the root certificates in `pem` (one or more PEM certificates) beside the
    /// platform's: a private CA for servers or authorization servers. May be called more
    /// than once.
    pub fn root_certificates_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.network.roots.push(pem.into());
        self
    }

    /// Offers HTTP/2 to servers over TLS (default on): a server that accepts it by ALPN
    /// carries every request in flight to it on one connection (as many at once as it
    /// allows, `SETTINGS_MAX_CONCURRENT_STREAMS`; the rest wait for a stream) instead of a
    /// connection each. Plain `http://` servers always get HTTP/1.1. Off, every request in
    /// flight has a connection of its own, as over HTTP/1.1.
    pub fn http2(mut self, on: bool) -> Self {
        self.network.http1_only = !on;
        self
    }

    /// Presents this client certificate (a PEM chain, leaf first) with its private key
    /// (PEM: PKCS#8, PKCS#1 or SEC1) to servers that ask for one (mutual TLS).
    pub fn client_certificate_pem(mut self, chain: impl Into<Vec<u8>>, key: Secret) -> Self {
        self.network.identity = Some((chain.into(), key));
        self
    }

    /// Warm contexts (default on): legacy sessions and stdio processes opened before a
    /// call needs one, each serving exactly one call (see
    /// [docs/ARCHITECTURE.md](https://github.com/brain-dev/brain-mcp-tools/blob/main/docs/ARCHITECTURE.md#cratesbrain-mcp-transport)). Off: every
    /// call opens its own, cold.
    pub fn warm_contexts(mut self, on: bool) -> Self {
        self.warm.enabled = on;
        self
    }

    /// Warm contexts kept for one server, at most (default 2).
    pub fn warm_per_server(mut self, contexts: usize) -> Self {
        self.warm.per_server = contexts;
        self
    }

    /// Warm contexts kept in all, at most (default 64).
    pub fn warm_total(mut self, contexts: usize) -> Self {
        self.warm.total = contexts;
        self
    }

    /// How long a warm context waits for a call before it is closed (default 30 s);
    /// a server whose calls come further apart than this keeps nothing warm.
    pub fn warm_idle(mut self, idle: Duration) -> Self {
        self.warm.idle = idle.min(LONGEST_BOUND);
        self
    }
}

/// Live resources of a client, for leak accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ClientStats {
    /// Calls running now.
    pub calls_in_flight: usize,
    /// Background tasks (session closes, stdio reapers and drains, warm contexts being
    /// opened, the warm pool's sweeper while the pool remembers a server, and refreshes
    /// of delegated grants) not finished yet. `shutdown` ends them all.
    pub background_tasks: usize,
    /// stdio child processes not reaped yet.
    pub child_processes: usize,
    /// Long-lived 2026-07-28 clients held.
    pub modern_clients: usize,
    /// Servers remembered.
    pub known_servers: usize,
    /// Warm contexts waiting for a call.
    pub warm_contexts: usize,
    /// Calls served by a warm context so far.
    pub warm_served: usize,
    /// Of those, calls that found none ready and waited for one being opened (rather than
    /// starting their own beside it).
    pub warm_waited: usize,
    /// Contexts opened for a call that waited until the one being opened was late against
    /// the usual time to open one (whichever was ready first served the call).
    pub warm_hedged: usize,
    /// Requests sent a second time on a fresh connection because the first attempt
    /// failed before it could reach the server (a `tools/call` only when it provably
    /// never left).
    pub resends: usize,
}

/// What [`McpClient::shutdown`] could not finish.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Shutdown {
    /// Grants whose refreshed tokens could not be saved in the credential store: the
    /// authorization server may have rotated the refresh token while the store keeps the
    /// spent one, so the tenant may have to authorize again (`mcp-tools login`). This
    /// process still holds the new tokens in memory.
    pub unsaved_grants: Vec<crate::GrantKey>,
}

/// A client that could not be built: what failed (TLS, the HTTP client), with the
/// library's error as its source.
#[derive(Debug, thiserror::Error)]
#[error("the MCP client could not be built: {what}")]
pub struct ClientBuildError {
    what: &'static str,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl From<crate::wire::http::SetupError> for ClientBuildError {
    fn from((what, source): crate::wire::http::SetupError) -> Self {
        Self { what, source }
    }
}

/// The process-wide MCP client. Cheap to clone; clones share everything.
#[derive(Debug, Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    options: ClientOptions,
    shared: Shared,
    cache: Cache,
    pool: Pool,
    /// Whether the task that closes idle warm contexts runs.
    sweeping: AtomicBool,
    /// Wakes the sweeper (shutdown).
    sweep_now: Arc<Notify>,
    warm_served: AtomicUsize,
    warm_waited: AtomicUsize,
    warm_hedged: AtomicUsize,
    calls_in_flight: AtomicUsize,
    /// Tenants' OAuth grants and their tokens.
    auth: crate::auth::Auth,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
    }
}

/// Counts a call in flight for as long as it lives.
struct InFlight<'a>(&'a AtomicUsize);

impl<'a> InFlight<'a> {
    fn new(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, Ordering::Relaxed);
        Self(counter)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl McpClient {
    /// A client with its own connection pool. Needs no runtime to be built (calls do).
    /// It changes no process-wide state: TLS uses rustls with the `ring` provider,
    /// configured for this client only.
    ///
    /// # Errors
    /// A [`ClientBuildError`] when the HTTP client cannot be set up from the options: a
    /// [`proxy`](ClientOptions::proxy) URL that is not one, a malformed PEM block in
    /// [`root_certificates_pem`](ClientOptions::root_certificates_pem), a
    /// [`client_certificate_pem`](ClientOptions::client_certificate_pem) whose chain or
    /// key does not parse or do not match, or TLS that cannot be configured. Its source
    /// is the library's error (but for the proxy URL and the key, whose library errors
    /// may quote secrets and are not kept).
    pub fn new(options: ClientOptions) -> Result<Self, ClientBuildError> {
        let http = Clients::new(&options.network)?;
        let handler = Handler::new(
            Implementation::new(options.client_name.clone(), options.client_version.clone()),
            options.server_requests,
        );
        let shared = Shared {
            http,
            modern_handler: handler.with_tasks(),
            handler,
            tasks: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            children: Arc::new(AtomicUsize::new(0)),
            standalone_stream: options.standalone_stream,
            close_timeout: options.close_timeout,
            stdio_grace: options.stdio_grace,
            sse_reconnects: options.sse_reconnects,
            max_response_bytes: options.max_response_bytes,
            metrics: Metrics::new(),
        };
        Ok(Self {
            inner: Arc::new(Inner {
                cache: Cache::new(options.discovery_ttl, options.discovery_capacity),
                pool: Pool::new(options.warm, shared.shutdown.clone()),
                sweeping: AtomicBool::new(false),
                sweep_now: Arc::new(Notify::new()),
                warm_served: AtomicUsize::new(0),
                warm_waited: AtomicUsize::new(0),
                warm_hedged: AtomicUsize::new(0),
                auth: crate::auth::Auth::new(
                    &options.auth,
                    &shared.http,
                    &options.client_name,
                    shared.metrics.clone(),
                ),
                options,
                shared,
                calls_in_flight: AtomicUsize::new(0),
            }),
        })
    }

    /// The options this client was built with.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// Runs one `tools/call`: opens an MCP context, sends the call once, streams its
    /// progress, and returns its result; the context is closed afterwards (in the
    /// background, so the result is not held back).
    ///
    /// With the `otel` feature, the trace context of the current `tracing` span goes to
    /// the server in the `_meta` of the call's requests (`traceparent`, `tracestate`,
    /// `baggage`: SEP-414), and the steps that take time are spans of their own (`open`,
    /// `authorize`, `request`).
    ///
    /// # Errors
    /// A [`CallError`] when the call produced no result; its [`kind`](CallError::kind)
    /// says why and its [`delivery`](CallError::delivery) whether the tool may have run:
    /// the server could not be reached (`connect`), answered an HTTP error status
    /// (`http_status`), a JSON-RPC error or something that is not MCP (`protocol`); the
    /// deadline passed (`timeout`) or the cancel token fired (`cancelled`); the response
    /// exceeded `max_output_bytes` (`output_too_large`); for a call with an
    /// [`Authorization`](crate::Authorization), no token could be obtained
    /// (`authorization_required`, `authorization_failed`, `credential_store`). A tool
    /// that reports its own error (`isError`) is not an `Err`: it is a result.
    pub async fn call(&self, mut request: CallRequest) -> Result<CallOutcome, CallError> {
        crate::features::check(&request.endpoint, request.authorization.as_ref())?;
        if request.authorization.is_some() {
            return grants::call(self, request).await;
        }
        request.trace = telemetry::trace_meta();
        let _in_flight = InFlight::new(&self.inner.calls_in_flight);
        let key = self.pool_key(&request)?;
        let mut noted = false;
        let outcome = self
            .call_on_a_context(&request, key.as_ref(), &mut noted)
            .await;
        if let Err(error) = &outcome {
            request.report.set_http_status(error.status());
        }
        // Otherwise one more warm context once this call is over, when this call reached
        // its server (a server that is down or refuses us gets no contexts opened).
        let reached = outcome
            .as_ref()
            .map_or_else(|error| error.delivery() != Delivery::NotSent, |_| true);
        if let Some(key) = key.filter(|_| reached && !noted) {
            self.note_and_refill(&key, &request.endpoint);
        }
        outcome
    }

    /// Notes a call to the server, and opens one more warm context in the background
    /// when its calls come often enough.
    fn note_and_refill(&self, key: &PoolKey, endpoint: &Endpoint) {
        if let Some(refill) = self.inner.pool.note_call(key) {
            self.refill(key.clone(), refill, endpoint.clone());
        }
        // The note itself is an entry (its key holds the credential): the sweeper forgets
        // it once the server is no longer called, warm context or not.
        if self.inner.pool.is_active() {
            self.sweep_in_background();
        }
    }

    /// The call on a warm context when one is ready, else on a fresh one. When an HTTP
    /// call takes a warm session, the next one starts opening at once (`noted`): its
    /// round trips overlap this call's, so a caller calling back to back over a network
    /// finds it ready. A stdio server's next process starts after the result instead:
    /// starting one is CPU, which would compete with this call.
    async fn call_on_a_context(
        &self,
        request: &CallRequest,
        key: Option<&PoolKey>,
        noted: &mut bool,
    ) -> Result<CallOutcome, CallError> {
        let shared = &self.inner.shared;
        // A call already cancelled or past its deadline ends before anything is sent: it
        // takes no warm context (and starts no refill).
        let live = !request.cancel.is_cancelled() && Instant::now() < request.deadline;
        let warm = match key.filter(|_| live) {
            Some(key) => self.take_warm(key, request).await,
            None => None,
        };
        if let Some(warm) = warm {
            if let Some(key @ PoolKey::Http(_)) = key {
                self.note_and_refill(key, &request.endpoint);
                *noted = true;
            }
            request.report.set_warm(Some(true));
            shared.metrics.context(Source::Warm, &request.endpoint);
            let outcome = context::call(shared, warm, request)
                .instrument(tracing::info_span!("request"))
                .await;
            match outcome {
                // A warm context the server no longer knows (an expired session, a
                // process that died): the call was provably not run, so it moves to a
                // fresh context, if its one resend is still there.
                Err(error)
                    if error.delivery() == Delivery::NotSent
                        && retry_cold(&error, &request.endpoint)
                        && request.resend.take() => {}
                outcome => return outcome,
            }
        }
        let purpose = Purpose::Call {
            budget: request.max_output_bytes,
        };
        // Boxed: opening is over before the call waits for its answer, so its state (larger
        // than the rest of the call's) is freed then instead of held while in flight.
        let opened = Box::pin(self.open(
            &request.endpoint,
            request.deadline,
            &request.cancel,
            purpose,
            &request.trace,
            self.era_choice(request.era),
        ))
        .await?;
        let source = match opened {
            Opened::Shared(_) => Source::Shared,
            _ => Source::Cold,
        };
        request
            .report
            .set_warm((source == Source::Cold).then_some(false));
        shared.metrics.context(source, &request.endpoint);
        context::call(shared, opened, request)
            .instrument(tracing::info_span!("request"))
            .await
    }

    /// Which pool serves the call, if any: stdio commands, and HTTP servers known to
    /// speak the legacy era (only those have sessions to keep warm).
    fn pool_key(&self, request: &CallRequest) -> Result<Option<PoolKey>, CallError> {
        let inner = &self.inner;
        if !inner.pool.enabled() {
            return Ok(None);
        }
        Ok(match &request.endpoint {
            Endpoint::Stdio(stdio) => Some(PoolKey::Stdio(stdio.clone())),
            Endpoint::Http(http) => {
                http.check()?;
                let key = ServerKey::of(http);
                let legacy = match self.era_choice(request.era).preference {
                    EraPreference::Legacy => true,
                    EraPreference::Modern => false,
                    _ => matches!(inner.cache.lookup(&key), Some(Known::Legacy)),
                };
                legacy.then_some(PoolKey::Http(key))
            }
        })
    }

    /// A warm context for the call: one ready, or the first ready of one being opened and
    /// one the call asks for when that one is late (see [`pool`]). `None`: the call opens
    /// its own, cold (also when it is cancelled or its deadline passes while it waits, so
    /// that it ends the way a cold call does).
    async fn take_warm(&self, key: &PoolKey, request: &CallRequest) -> Option<Opened> {
        let inner = &self.inner;
        let mut stale = Vec::new();
        let taken = inner.pool.take(key, &mut stale);
        for context in stale {
            self.close_warm(context);
        }
        let warm = match taken {
            Take::Ready(warm) => warm,
            Take::Cold => return None,
            Take::Wait {
                mut handoff,
                hedge_at,
            } => {
                let waited = {
                    let wait = async {
                        tokio::select! {
                            handed = &mut handoff => return handed.ok(),
                            () = tokio::time::sleep_until(hedge_at) => {}
                        }
                        if let Some(refill) = inner.pool.hedge(key) {
                            inner.warm_hedged.fetch_add(1, Ordering::Relaxed);
                            self.refill(key.clone(), refill, request.endpoint.clone());
                        }
                        (&mut handoff).await.ok()
                    };
                    tokio::select! {
                        handed = wait => handed,
                        () = request.cancel.cancelled() => None,
                        () = tokio::time::sleep_until(request.deadline) => None,
                    }
                };
                match waited {
                    Some(warm) => {
                        inner.warm_waited.fetch_add(1, Ordering::Relaxed);
                        warm
                    }
                    None => {
                        // A context handed over just as the call stopped waiting is closed.
                        handoff.close();
                        if let Ok(late) = handoff.try_recv() {
                            self.close_warm(late);
                        }
                        return None;
                    }
                }
            }
        };
        inner.warm_served.fetch_add(1, Ordering::Relaxed);
        Some(match warm {
            Warm::Legacy(session) => Opened::Legacy(session),
            Warm::Stdio(session) => {
                session.set_line_limit(request.max_output_bytes.saturating_add(LINE_HEADROOM));
                Opened::Stdio(session)
            }
        })
    }

    /// Opens one warm context for the pool, in the background (bounded by
    /// [`WARM_OPEN_TIMEOUT`], and ended by the client's shutdown).
    fn refill(&self, key: PoolKey, refill: Refill, endpoint: Endpoint) {
        let client = self.clone();
        self.inner.shared.spawn_background(async move {
            let inner = &client.inner;
            let shared = &inner.shared;
            let deadline = Instant::now() + shared.close_timeout.max(WARM_OPEN_TIMEOUT);
            let cancel = refill.cancel.clone();
            let budget = DEFAULT_DISCOVERY_BYTES;
            let opened = match &endpoint {
                // A warm context belongs to no call yet: it carries no trace context.
                Endpoint::Stdio(stdio) => client
                    .open_stdio(
                        stdio,
                        deadline,
                        &cancel,
                        shared.max_response_bytes,
                        budget,
                        &JsonObject::new(),
                        client.era_choice(None),
                    )
                    .await
                    .map(Warm::Stdio),
                Endpoint::Http(http) => {
                    legacy::open(shared, http, deadline, &cancel, budget, &JsonObject::new())
                        .await
                        .map(Warm::Legacy)
                }
            };
            match opened {
                Ok(warm) => match inner.pool.put(&key, &refill, warm) {
                    Some(unwanted) => client.close_warm(unwanted),
                    None => client.sweep_in_background(),
                },
                Err(_) => inner.pool.opened(&key, &refill),
            }
        });
    }

    fn close_warm(&self, warm: Warm) {
        match warm {
            Warm::Legacy(session) => session.finish(None),
            Warm::Stdio(session) => session.finish(&self.inner.shared, None),
        }
    }

    /// Closes warm contexts idle past the bound, while any are kept; the task holds no
    /// strong reference to the client, so a dropped client ends it.
    fn sweep_in_background(&self) {
        if self.inner.sweeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let shutdown = self.inner.shared.shutdown.clone();
        let wake = Arc::clone(&self.inner.sweep_now);
        self.inner.shared.spawn_background(async move {
            loop {
                let next = match weak.upgrade() {
                    Some(inner) => inner.pool.next_sweep(),
                    None => return,
                };
                // Between sweeps the task holds only a weak reference: a dropped client
                // ends it (and its shutdown token closes what was warm).
                tokio::select! {
                    () = tokio::time::sleep_until(next) => {}
                    () = wake.notified() => {}
                    () = shutdown.cancelled() => return,
                }
                let Some(inner) = weak.upgrade() else { return };
                let client = McpClient { inner };
                for stale in client.inner.pool.sweep() {
                    client.close_warm(stale);
                }
                if !client.inner.pool.is_active() {
                    client.inner.sweeping.store(false, Ordering::Release);
                    // A context added meanwhile restarts the sweeper.
                    if !client.inner.pool.is_active()
                        || client.inner.sweeping.swap(true, Ordering::AcqRel)
                    {
                        return;
                    }
                }
            }
        });
    }

    /// Lists every tool of a server.
    ///
    /// # Errors
    /// A [`CallError`]: `protocol` on more than `max_pages` pages or a page that is not a
    /// `tools/list` result, `timeout` on the deadline, and as [`McpClient::call`] fails on
    /// connection, HTTP, authorization and protocol failures.
    pub async fn discover(&self, request: DiscoveryRequest) -> Result<Discovery, CallError> {
        crate::features::check(&request.endpoint, request.authorization.as_ref())?;
        if request.authorization.is_some() {
            return grants::discover(self, request, None).await;
        }
        let opened = self
            .open(
                &request.endpoint,
                request.deadline,
                &request.cancel,
                Purpose::Discovery {
                    budget: request.max_bytes,
                },
                &telemetry::trace_meta(),
                self.era_choice(None),
            )
            .await?;
        let era = opened.era();
        // The extension is defined for 2026-07-28 only (a legacy server's word is ignored).
        let tasks = era == Era::Modern
            && opened
                .peer()
                .peer_info()
                .is_some_and(|info| info.capabilities.supports_tasks());
        let listed = list_tools(
            opened.peer(),
            &request,
            || opened.failure(),
            opened.over_budget(),
        )
        .await;
        opened.finish(&self.inner.shared, None);
        listed.map(|(tools, pages)| Discovery {
            tools,
            pages,
            era,
            tasks,
        })
    }

    /// The era an operation speaks: the client's, when its options force one; else the
    /// one the operation's binding pins (no probe); else found out (automatic).
    fn era_choice(&self, pinned: Option<Era>) -> EraChoice {
        let forced = self.inner.options.era != EraPreference::Auto;
        match pinned.filter(|_| !forced) {
            Some(Era::Legacy) => EraChoice {
                preference: EraPreference::Legacy,
                pinned: true,
            },
            Some(Era::Modern) => EraChoice {
                preference: EraPreference::Modern,
                pinned: true,
            },
            None => EraChoice {
                preference: self.inner.options.era,
                pinned: false,
            },
        }
    }

    /// Opens an MCP context on the endpoint, in the era `era` and the server allow.
    /// `trace`: the trace context of the operation, for the requests of a context opened
    /// for it alone (a session, a process; a shared client is not).
    async fn open(
        &self,
        endpoint: &Endpoint,
        deadline: Instant,
        cancel: &CancellationToken,
        purpose: Purpose,
        trace: &JsonObject,
        era: EraChoice,
    ) -> Result<Opened, CallError> {
        let shared = &self.inner.shared;
        let http = match endpoint {
            Endpoint::Stdio(stdio) => {
                // A stdio message is one line: bound it by the call's budget (and some room
                // for the envelope), so an oversized answer ends as output_too_large.
                let line_limit = match purpose {
                    Purpose::Call { budget } => budget.saturating_add(LINE_HEADROOM),
                    Purpose::Discovery { .. } => shared.max_response_bytes,
                };
                return self
                    .open_stdio(
                        stdio,
                        deadline,
                        cancel,
                        line_limit,
                        purpose.non_call_budget(),
                        trace,
                        era,
                    )
                    .instrument(tracing::info_span!("open", brain.context = "process"))
                    .await
                    .map(Opened::Stdio);
            }
            Endpoint::Http(http) => http,
        };
        http.check()?;
        let probe = era.preference == EraPreference::Auto;
        if era.preference != EraPreference::Legacy {
            let modern = match purpose {
                Purpose::Call { .. } => self
                    .modern_client(http, deadline, cancel, probe)
                    .await
                    .map_err(|error| era.explain(error, Era::Modern))?
                    .map(Opened::Shared),
                Purpose::Discovery { budget } => self
                    .fresh_modern_client(http, deadline, cancel, budget, probe)
                    .instrument(tracing::info_span!(
                        "open",
                        brain.context = "2026-07-28 client"
                    ))
                    .await
                    .map_err(|error| era.explain(error, Era::Modern))?
                    .map(Opened::Owned),
            };
            match modern {
                Some(opened) => return Ok(opened),
                None if era.pinned => return Err(no_longer_speaks(Era::Modern)),
                None if era.preference == EraPreference::Modern => {
                    return Err(modern::not_modern());
                }
                None => {}
            }
        }
        legacy::open(
            shared,
            http,
            deadline,
            cancel,
            purpose.non_call_budget(),
            trace,
        )
        .instrument(tracing::info_span!("open", brain.context = "session"))
        .await
        .map(Opened::Legacy)
        .map_err(|error| era.explain(error, Era::Legacy))
    }

    /// A stdio server, started in the era `era` says; in the automatic era, a server
    /// that only speaks 2026-07-28 is started again in that era. What each command
    /// speaks is remembered (the warm pool starts the next process in it).
    #[allow(clippy::too_many_arguments)]
    async fn open_stdio(
        &self,
        endpoint: &StdioEndpoint,
        deadline: Instant,
        cancel: &CancellationToken,
        line_limit: usize,
        non_call_budget: usize,
        trace: &JsonObject,
        choice: EraChoice,
    ) -> Result<stdio::Session, CallError> {
        let shared = &self.inner.shared;
        let cache = &self.inner.cache;
        let auto = choice.preference == EraPreference::Auto;
        let era = match choice.preference {
            EraPreference::Modern => Era::Modern,
            EraPreference::Legacy => Era::Legacy,
            EraPreference::Auto => cache.stdio_era(endpoint).unwrap_or(Era::Legacy),
        };
        let open = |era| {
            stdio::open(
                shared,
                endpoint,
                deadline,
                cancel,
                era,
                line_limit,
                non_call_budget,
                trace,
            )
        };
        let opened = match open(era).await {
            Err(Opening::ModernOnly) if auto => open(Era::Modern).await,
            other => other,
        };
        let session = opened.map_err(|opening| match opening {
            Opening::Failed(error) => choice.explain(error, era),
            Opening::ModernOnly if choice.pinned => no_longer_speaks(Era::Legacy),
            Opening::ModernOnly => stdio::modern_only(),
        })?;
        if auto || choice.pinned {
            cache.remember_stdio_era(endpoint, session.era());
        }
        Ok(session)
    }

    /// The long-lived 2026-07-28 client for a server, or `None` if the server is legacy.
    /// `probe`: the era is being found out (automatic), so an unanswered `server/discover`
    /// is given up on early ([`modern::probe_deadline`]).
    async fn modern_client(
        &self,
        endpoint: &HttpEndpoint,
        deadline: Instant,
        cancel: &CancellationToken,
        probe: bool,
    ) -> Result<Option<Arc<ModernClient>>, CallError> {
        let cache = &self.inner.cache;
        let key = ServerKey::of(endpoint);
        let slot = match cache.lookup(&key) {
            Some(Known::Legacy) => return Ok(None),
            Some(Known::Modern(slot)) => slot,
            None => cache.remember(key.clone(), Known::Modern(Arc::default())),
        };
        let probe_until = probe.then(|| modern::probe_deadline(deadline));
        let opened = ModernSlot::get(
            &slot,
            &self.inner.shared,
            endpoint,
            deadline,
            cancel,
            probe_until,
        );
        match opened.await {
            Ok(client) => Ok(Some(client)),
            Err(OpenError::Legacy) => {
                cache.remember(key, Known::Legacy);
                Ok(None)
            }
            Err(OpenError::Failed(error)) => {
                cache.forget(&key, &slot);
                Err(error)
            }
        }
    }

    /// A fresh 2026-07-28 client for one use (discovery), or `None` if the server is
    /// legacy. What the server supports is remembered as for calls.
    async fn fresh_modern_client(
        &self,
        endpoint: &HttpEndpoint,
        deadline: Instant,
        cancel: &CancellationToken,
        non_call_budget: usize,
        probe: bool,
    ) -> Result<Option<Arc<ModernClient>>, CallError> {
        let cache = &self.inner.cache;
        let key = ServerKey::of(endpoint);
        if let Some(Known::Legacy) = cache.lookup(&key) {
            return Ok(None);
        }
        match ModernClient::open(
            &self.inner.shared,
            endpoint,
            deadline,
            cancel,
            non_call_budget,
            probe.then(|| modern::probe_deadline(deadline)),
        )
        .await
        {
            Ok(client) => Ok(Some(client)),
            Err(OpenError::Legacy) => {
                cache.remember(key, Known::Legacy);
                Ok(None)
            }
            Err(OpenError::Failed(error)) => Err(error),
        }
    }

    /// Live resources, for leak accounting.
    pub fn stats(&self) -> ClientStats {
        let (known_servers, modern_clients) = self.inner.cache.counts();
        let shared = &self.inner.shared;
        ClientStats {
            calls_in_flight: self.inner.calls_in_flight.load(Ordering::Relaxed),
            background_tasks: shared.tasks.len() + self.inner.auth.refreshes().len(),
            child_processes: shared.children.load(Ordering::Relaxed),
            modern_clients,
            known_servers,
            warm_contexts: self.inner.pool.idle_count(),
            warm_served: self.inner.warm_served.load(Ordering::Relaxed),
            warm_waited: self.inner.warm_waited.load(Ordering::Relaxed),
            warm_hedged: self.inner.warm_hedged.load(Ordering::Relaxed),
            resends: shared.http.resends.load(Ordering::Relaxed),
        }
    }

    /// Ends what the client runs in the background: waits (at most `grace`) for
    /// background closes to finish, then closes every long-lived client; meanwhile it
    /// waits for the refreshes of delegated grants in flight to end, however long
    /// `grace` is (each within its grant's lease, [`DEFAULT_LEASE_TTL`] unless the store
    /// says otherwise), since a refresh ended early can lose the refresh token the
    /// authorization server rotated. Calls made afterwards still work.
    ///
    /// Returns the grants whose refreshed tokens could not be saved (the store failing
    /// until the lease ran out) since the client was built or last shut down: their
    /// tenants may have to authorize again. Call it before the process ends.
    ///
    /// [`DEFAULT_LEASE_TTL`]: crate::DEFAULT_LEASE_TTL
    pub async fn shutdown(&self, grace: Duration) -> Shutdown {
        for warm in self.inner.pool.close() {
            self.close_warm(warm);
        }
        self.inner.sweep_now.notify_one();
        let tasks = &self.inner.shared.tasks;
        let background = async {
            let _ = tokio::time::timeout(grace, async {
                tasks.close();
                tasks.wait().await;
            })
            .await;
            tasks.reopen();
        };
        let refreshes = self.inner.auth.refreshes();
        tokio::join!(background, refreshes.wait());
        self.inner.pool.reopen();
        for slot in self.inner.cache.clear() {
            slot.close(grace).await;
        }
        Shutdown {
            unsaved_grants: refreshes.take_unsaved(),
        }
    }

    /// The grants whose refresh is in flight now (a refresh runs to its end even when the
    /// call that started it ended; [`McpClient::shutdown`] waits for it). A host about to
    /// exit can say whose grant it is saving.
    pub fn refreshes_in_flight(&self) -> Vec<crate::GrantKey> {
        self.inner.auth.refreshes().running()
    }

    /// Forgets what is known about every server (the next call discovers again).
    pub fn forget_servers(&self) {
        self.inner.cache.clear();
    }
}

/// The era an operation speaks (see [`McpClient::era_choice`]).
#[derive(Debug, Clone, Copy)]
struct EraChoice {
    preference: EraPreference,
    /// Pinned by the operation's binding (its `era` field): no probe, and a server that
    /// no longer speaks it is an error naming the field, never a silent probe.
    pinned: bool,
}

impl EraChoice {
    /// A context that could not be opened in a pinned era because the server refused
    /// the handshake (it answered): the error says which field pinned the era.
    fn explain(self, error: CallError, era: Era) -> CallError {
        let refused = error.is_an_answer()
            || matches!(error.kind(), ErrorKind::Protocol | ErrorKind::HttpStatus);
        if self.pinned && refused {
            error.with_detail_suffix(&format!(
                "; the binding's \"era\" pins {}: if the server moved to another era, remove \
                 the field (or run discovery again) to let the client find it",
                era.protocol_version()
            ))
        } else {
            error
        }
    }
}

/// The error when a server does not speak the era its binding pins.
fn no_longer_speaks(era: Era) -> CallError {
    CallError::new(
        ErrorKind::Protocol,
        Delivery::NotSent,
        format!(
            "the server does not speak protocol {}, which the binding's \"era\" pins; remove \
             the field (or run discovery again) to let the client find the era",
            era.protocol_version()
        ),
    )
}

/// Whether a call that failed `not_sent` on a warm context goes again on a fresh one:
/// when the context was the trouble (the server forgot the session: 404; the process
/// died), not when the call's own limits ended it, and not for a refused credential
/// (401, 403: the authorization layer decides about those). An HTTP call that could not
/// connect is not moved: its request already had its one resend on a fresh connection
/// (`wire/http`), and the one resend is all a `not_sent` request ever gets.
fn retry_cold(error: &CallError, endpoint: &Endpoint) -> bool {
    if error.is_an_answer() {
        // The server refused the call itself (a JSON-RPC error): any context gets that.
        return false;
    }
    match (error.kind(), endpoint) {
        (ErrorKind::HttpStatus, Endpoint::Http(_)) => error.status() == Some(404),
        (
            ErrorKind::Connect | ErrorKind::Protocol | ErrorKind::ServerExited,
            Endpoint::Stdio(_),
        ) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_error_keeps_its_source() {
        let io = std::io::Error::other("no roots");
        let error = ClientBuildError::from(("TLS could not be set up", io.into()));
        assert_eq!(
            error.to_string(),
            "the MCP client could not be built: TLS could not be set up"
        );
        let source = std::error::Error::source(&error).expect("its source");
        assert_eq!(source.to_string(), "no roots");
    }
}
