//! The process-wide client: options, the pooled HTTP client, the server cache, and the
//! tasks that close sessions after their calls return.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, Once, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use rmcp::model::Implementation;
use tokio::{runtime::Handle, time::Instant};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::{
    endpoint::{HttpEndpoint, StdioEndpoint},
    error::CallError,
    handler::Handler,
    modern::{ModernClient, ModernSlot},
    run::{CallOutcome, CallRequest, Era},
    secret::Secret,
};

/// Which protocol era to speak to HTTP servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum EraPreference {
    /// 2026-07-28 when the server supports it (learned once per server with
    /// `server/discover`, then cached), else a legacy session per call.
    #[default]
    Auto,
    /// Always a legacy session per call (`initialize` ... `DELETE`).
    Legacy,
    /// Always 2026-07-28; a server without it is an error.
    Modern,
}

/// How server-to-client requests (elicitation, sampling, roots) are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ServerRequestPolicy {
    /// Answer every server request with an error; the call goes on.
    #[default]
    Reject,
    /// Accept form elicitations with the defaults of the requested schema (and declare
    /// the elicitation capability); reject the rest.
    AcceptElicitationDefaults,
}

/// Options of an [`McpClient`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// Which era to speak to HTTP servers.
    pub era: EraPreference,
    /// How long what a server supports is remembered (and a 2026-07-28 client kept).
    /// A client whose connection died is replaced at once, whatever its age. The
    /// `ttlMs` of a `server/discover` answer is not used: servers send 0 ("do not cache
    /// this answer"), which would cost a probe per call for what rarely changes.
    pub discovery_ttl: Duration,
    /// How many servers are remembered; the least recently used is forgotten first.
    pub discovery_capacity: usize,
    /// The `clientInfo` sent to servers.
    pub client_name: String,
    /// The `clientInfo` version sent to servers.
    pub client_version: String,
    /// How server-to-client requests are answered.
    pub server_requests: ServerRequestPolicy,
    /// Open the standalone GET stream of legacy sessions (off: a one-call session has no
    /// use for it; the conformance client turns it on).
    pub standalone_stream: bool,
    /// Bound on closing a session after its call (cancel notice and `DELETE`).
    pub close_timeout: Duration,
    /// How long a stdio server gets to exit after its stdin closes before its process
    /// group is killed.
    pub stdio_grace: Duration,
    /// Bound on SSE reconnection attempts for a broken response stream.
    pub sse_reconnects: usize,
    /// Bound on a response that is not a call's (discovery, handshake) and on one SSE event.
    pub max_response_bytes: usize,
    /// `TCP_NODELAY` on pooled connections.
    pub tcp_nodelay: bool,
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
            tcp_nodelay: true,
        }
    }
}

impl ClientOptions {
    /// Sets the era preference.
    pub fn era(mut self, era: EraPreference) -> Self {
        self.era = era;
        self
    }

    /// Sets the server request policy.
    pub fn server_requests(mut self, policy: ServerRequestPolicy) -> Self {
        self.server_requests = policy;
        self
    }

    /// Opens the standalone GET stream of legacy sessions.
    pub fn standalone_stream(mut self, open: bool) -> Self {
        self.standalone_stream = open;
        self
    }
}

/// Live resources of a client, for leak accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ClientStats {
    /// Calls running now.
    pub calls_in_flight: usize,
    /// Background tasks (session closes, stdio reaping) not finished yet.
    pub background_tasks: usize,
    /// stdio child processes alive.
    pub child_processes: usize,
    /// Long-lived 2026-07-28 clients held.
    pub modern_clients: usize,
    /// Servers remembered.
    pub known_servers: usize,
}

/// What is known about one server (one URL and token).
#[derive(Debug, Clone)]
pub(crate) enum Known {
    Legacy,
    Modern(Arc<ModernSlot>),
}

#[derive(Debug)]
struct CacheEntry {
    known: Known,
    expires: Instant,
    used: Instant,
}

/// The key of a server: its URL and the token the calls use (a new token gets a new
/// 2026-07-28 client, so a rotated key takes effect at once).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ServerKey {
    url: String,
    bearer: Option<Secret>,
}

impl ServerKey {
    pub(crate) fn of(endpoint: &HttpEndpoint) -> Self {
        Self {
            url: endpoint.url.clone(),
            bearer: endpoint.bearer.clone(),
        }
    }
}

/// The process-wide MCP client. Cheap to clone; clones share everything.
#[derive(Debug, Clone)]
pub struct McpClient {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) options: ClientOptions,
    pub(crate) http: reqwest::Client,
    pub(crate) handler: Handler,
    servers: Mutex<HashMap<ServerKey, CacheEntry>>,
    stdio_eras: Mutex<HashMap<StdioEndpoint, (Era, Instant)>>,
    pub(crate) tasks: TaskTracker,
    pub(crate) shutdown: CancellationToken,
    pub(crate) calls_in_flight: AtomicUsize,
    pub(crate) children: Arc<AtomicUsize>,
}

impl Inner {
    /// An HTTP backend for one transport of this client: its own registry of calls and a
    /// lifetime under the client's.
    pub(crate) fn backend(
        &self,
        registry: &Arc<crate::calls::Registry>,
        lifetime: &CancellationToken,
        standalone_stream: bool,
    ) -> crate::http::HttpBackend {
        crate::http::HttpBackend::new(
            self.http.clone(),
            Arc::clone(registry),
            lifetime.clone(),
            crate::http::BackendConfig {
                standalone_stream,
                max_response_bytes: self.options.max_response_bytes,
                max_resumes: self.options.sse_reconnects,
                initialize_grace: self.options.close_timeout,
            },
        )
    }
}

/// Runs a close in the background, on the client's tracker (which shutdown waits for).
/// Outside a runtime (a call dropped as its runtime ends) there is nothing left to run it.
pub(crate) fn spawn_background(
    tasks: &TaskTracker,
    task: impl Future<Output = ()> + Send + 'static,
) {
    if let Ok(runtime) = Handle::try_current() {
        tasks.spawn_on(task, &runtime);
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Counts a call in flight for as long as it lives.
pub(crate) struct InFlight<'a>(&'a AtomicUsize);

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

fn install_crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Only when the process has none: a host may have chosen its own.
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

impl McpClient {
    /// A client with its own connection pool. Must be called inside a Tokio runtime
    /// only for calls, not for construction.
    pub fn new(options: ClientOptions) -> Self {
        install_crypto_provider();
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .tcp_nodelay(options.tcp_nodelay)
            .pool_idle_timeout(Duration::from_secs(60))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        let handler = Handler::new(
            Implementation::new(options.client_name.clone(), options.client_version.clone()),
            options.server_requests,
        );
        Self {
            inner: Arc::new(Inner {
                options,
                http,
                handler,
                servers: Mutex::new(HashMap::new()),
                stdio_eras: Mutex::new(HashMap::new()),
                tasks: TaskTracker::new(),
                shutdown: CancellationToken::new(),
                calls_in_flight: AtomicUsize::new(0),
                children: Arc::new(AtomicUsize::new(0)),
            }),
        }
    }

    /// The options this client was built with.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// Runs one `tools/call`: opens an MCP context, sends the call once, streams its
    /// progress, and returns its result; the context is closed afterwards (in the
    /// background, so the result is not held back).
    pub async fn call(&self, request: CallRequest) -> Result<CallOutcome, CallError> {
        let _in_flight = InFlight::new(&self.inner.calls_in_flight);
        crate::opened::call(self, &request).await
    }

    /// The long-lived 2026-07-28 client for a server, or `None` if the server is legacy.
    pub(crate) async fn modern_client(
        &self,
        endpoint: &HttpEndpoint,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<Option<Arc<ModernClient>>, CallError> {
        let key = ServerKey::of(endpoint);
        let slot = match self.lookup(&key) {
            Some(Known::Legacy) => return Ok(None),
            Some(Known::Modern(slot)) => slot,
            None => self.remember(key.clone(), Known::Modern(Arc::default())),
        };
        match ModernSlot::get(&slot, self, endpoint, deadline, cancel).await {
            Ok(client) => Ok(Some(client)),
            Err(crate::modern::OpenError::Legacy) => {
                self.remember(key, Known::Legacy);
                Ok(None)
            }
            Err(crate::modern::OpenError::Failed(error)) => {
                self.forget(&key, &slot);
                Err(error)
            }
        }
    }

    /// A fresh 2026-07-28 client for one use (discovery), or `None` if the server is
    /// legacy. What the server supports is remembered as for calls.
    pub(crate) async fn fresh_modern_client(
        &self,
        endpoint: &HttpEndpoint,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> Result<Option<Arc<ModernClient>>, CallError> {
        let key = ServerKey::of(endpoint);
        if let Some(Known::Legacy) = self.lookup(&key) {
            return Ok(None);
        }
        match ModernClient::open(self, endpoint, deadline, cancel).await {
            Ok(client) => Ok(Some(client)),
            Err(crate::modern::OpenError::Legacy) => {
                self.remember(key, Known::Legacy);
                Ok(None)
            }
            Err(crate::modern::OpenError::Failed(error)) => Err(error),
        }
    }

    /// The era a stdio command was last seen to speak.
    pub(crate) fn stdio_era(&self, endpoint: &StdioEndpoint) -> Option<Era> {
        let mut eras = self
            .inner
            .stdio_eras
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match eras.get(endpoint) {
            Some((era, expires)) if *expires > Instant::now() => Some(*era),
            Some(_) => {
                eras.remove(endpoint);
                None
            }
            None => None,
        }
    }

    /// Remembers the era of a stdio command.
    pub(crate) fn remember_stdio_era(&self, endpoint: &StdioEndpoint, era: Era) {
        let mut eras = self
            .inner
            .stdio_eras
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if eras.len() >= self.inner.options.discovery_capacity.max(1)
            && !eras.contains_key(endpoint)
        {
            eras.clear();
        }
        eras.insert(
            endpoint.clone(),
            (era, Instant::now() + self.inner.options.discovery_ttl),
        );
    }

    fn servers(&self) -> std::sync::MutexGuard<'_, HashMap<ServerKey, CacheEntry>> {
        self.inner
            .servers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn lookup(&self, key: &ServerKey) -> Option<Known> {
        let now = Instant::now();
        let mut servers = self.servers();
        let entry = servers.get_mut(key)?;
        let stale = match &entry.known {
            Known::Modern(slot) => slot.is_closed(),
            Known::Legacy => false,
        };
        if entry.expires <= now || stale {
            servers.remove(key);
            return None;
        }
        entry.used = now;
        Some(entry.known.clone())
    }

    /// Remembers what a server supports; returns the slot when it is a modern one.
    fn remember(&self, key: ServerKey, known: Known) -> Arc<ModernSlot> {
        let now = Instant::now();
        let ttl = self.inner.options.discovery_ttl;
        let mut servers = self.servers();
        if servers.len() >= self.inner.options.discovery_capacity.max(1)
            && !servers.contains_key(&key)
        {
            let oldest = servers
                .iter()
                .min_by_key(|(_, entry)| entry.used)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                servers.remove(&oldest);
            }
        }
        let slot = match &known {
            Known::Modern(slot) => Arc::clone(slot),
            Known::Legacy => Arc::default(),
        };
        servers.insert(
            key,
            CacheEntry {
                known,
                expires: now + ttl,
                used: now,
            },
        );
        slot
    }

    fn forget(&self, key: &ServerKey, slot: &Arc<ModernSlot>) {
        let mut servers = self.servers();
        if let Some(CacheEntry {
            known: Known::Modern(current),
            ..
        }) = servers.get(key)
            && Arc::ptr_eq(current, slot)
        {
            servers.remove(key);
        }
    }

    /// Live resources, for leak accounting.
    pub fn stats(&self) -> ClientStats {
        let servers = self.servers();
        ClientStats {
            calls_in_flight: self.inner.calls_in_flight.load(Ordering::Relaxed),
            background_tasks: self.inner.tasks.len(),
            child_processes: self.inner.children.load(Ordering::Relaxed),
            modern_clients: servers
                .values()
                .filter(|entry| matches!(&entry.known, Known::Modern(slot) if slot.is_open()))
                .count(),
            known_servers: servers.len(),
        }
    }

    /// Waits (at most `grace`) for background closes to finish, then closes every
    /// long-lived client. Calls made afterwards still work.
    pub async fn shutdown(&self, grace: Duration) {
        let _ = tokio::time::timeout(grace, async {
            self.inner.tasks.close();
            self.inner.tasks.wait().await;
            self.inner.tasks.reopen();
        })
        .await;
        self.inner.tasks.reopen();
        let slots: Vec<_> = self
            .servers()
            .drain()
            .filter_map(|(_, entry)| match entry.known {
                Known::Modern(slot) => Some(slot),
                Known::Legacy => None,
            })
            .collect();
        for slot in slots {
            slot.close(grace).await;
        }
    }

    /// Forgets what is known about every server (the next call discovers again).
    pub fn forget_servers(&self) {
        self.servers().clear();
    }
}
