//! A host config's tools, served as one MCP server to any MCP client (the SDK clients,
//! the Inspector, agent frameworks, desktop clients), so that clients which cannot link
//! `brain-tools` get its promises: the tenant allowlist, input validation, timeouts and
//! output limits, a fresh MCP context upstream per call, at most once, errors that say
//! whether the tool may have run and whether a retry may help, per-tenant OAuth grants
//! shared by a fleet.
//!
//! What it is for: a host mounts [`Gateway::router`] (an axum `Router`) or runs
//! [`Gateway::serve`]; `mcp-tools serve` is a thin command over it. What it is not for:
//! calling tools from Rust (use `brain-tools`), or being a general MCP proxy (it serves
//! the config's bindings, tools only: no resources, prompts or sampling).
//!
//! - **Who calls** comes from the caller's credentials, never from the request: a JWT
//!   access token from a configured authorization server (signature, `iss`, `aud` equal
//!   to the gateway's resource, `exp`/`nbf`, scopes; the tenant from a configured claim),
//!   or an API key from a file of hashes ([`new_api_key`]). The protected resource
//!   metadata (RFC 9728) is served at its well-known path. The caller's token is never
//!   sent upstream.
//! - **What a tenant sees**: `tools/list` is its bindings as configured; a tool it may not
//!   use answers exactly like one that does not exist.
//! - **A call is a call**: `tools/call` runs through `ToolHost` (the same five steps), with
//!   the caller's progress token, cancelled by the caller's `notifications/cancelled` or
//!   its connection closing; the result is the upstream MCP result as the server sent it;
//!   an error result says what happened under `_meta["brain.dev/error"]`
//!   ([`ERROR_META_KEY`]). The gateway never sends a call twice.
//! - **Bounded**: per-tenant calls in flight and request rate, a body limit, header and
//!   idle timeouts, `Origin` and `Host` checked, a drain on shutdown.
//!
//! Both protocol eras are served on one endpoint, by rmcp's Streamable HTTP server: a
//! `2025-11-25` client gets a session (used only by the tenant that opened it, its id
//! sealed so that any replica holding the same key ring serves it), a `2026-07-28`
//! client is served statelessly. Over stdio ([`serve_stdio`]) one tenant is
//! served, for a desktop client.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use brain_mcp_gateway::Gateway;
//! use brain_tools::{HostConfig, ToolHost};
//!
//! let loaded = HostConfig::from_json_bytes(&std::fs::read("host.json")?)?;
//! let host = ToolHost::new(&loaded.config)?;
//! let gateway = Gateway::new(host, &loaded.config)?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8443").await?;
//! gateway.serve(listener, async { let _ = tokio::signal::ctrl_c().await; }).await?;
//! # Ok(()) }
//! ```
//!
//! See [docs/gateway.md](https://github.com/brain-dev/brain-mcp-tools/blob/main/docs/gateway.md).

mod error;
mod handler;
mod http;
mod identity;
mod jwt;
mod keys;
mod limits;
mod results;
mod serve;
mod serving;
mod sessions;
mod telemetry;

use std::{
    future::Future,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

/// The router a host mounts, and the crate it comes from (its version is part of this
/// crate's API).
pub use axum;
pub use axum::Router;
use brain_tools::{CredentialStore, HostConfig, KeyRing, ToolHost};
use brain_tools_config::{GatewayConfig, Target};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use crate::{
    error::GatewayError,
    handler::ERROR_META_KEY,
    identity::Caller,
    keys::{KEY_PREFIX, new_api_key},
};
use crate::{
    handler::{Handler, Shared},
    http::HttpState,
    identity::Identity,
    jwt::Issuers,
    keys::ApiKeys,
    limits::Limits,
    sessions::{SealedSessions, SealedStore, Sessions},
};

/// How long closing what calls left open may take once the gateway stopped.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

/// A host config's tools served as one MCP server. Cheap to clone; clones share
/// everything.
#[derive(Debug, Clone)]
pub struct Gateway {
    state: Arc<HttpState>,
    config: Arc<GatewayConfig>,
    /// Fired when the drain runs out of time: connections still open are cut.
    closed: CancellationToken,
}

impl Gateway {
    /// The gateway of a host config's `gateway` object, calling through `host`, its
    /// sessions sealed with a key of its own ([`GatewayBuilder::session_keys`] for a
    /// fleet).
    ///
    /// # Errors
    /// The config has no `gateway` object, its API key file cannot be read, or the HTTP
    /// client that fetches issuers' keys cannot be built.
    pub fn new(host: ToolHost, config: &HostConfig) -> Result<Self, GatewayError> {
        Self::builder(host, config).build()
    }

    /// A gateway with more than the config says.
    pub fn builder(host: ToolHost, config: &HostConfig) -> GatewayBuilder<'_> {
        GatewayBuilder {
            host,
            config,
            session_keys: None,
        }
    }

    /// Reports this credential store's state in `/readyz` (it never makes the gateway
    /// unready: bindings that need no grant are served while it is down). Only the first
    /// store given is kept.
    pub fn report_store(&self, store: Arc<dyn CredentialStore>) {
        let _ = self.state.store.set(store);
    }

    /// The router to mount: `/mcp` (the MCP endpoint, both eras), the protected
    /// resource metadata at its well-known path, `/healthz` and `/readyz`.
    pub fn router(&self) -> Router {
        let shared = Arc::clone(&self.state.shared);
        let limits = &self.config.limits;
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        hosts.extend(self.config.allowed_hosts.iter().cloned());
        if let Some(host) = self
            .config
            .resource
            .as_deref()
            .and_then(|resource| url::Url::parse(resource).ok())
            .and_then(|url| url.host_str().map(str::to_owned))
        {
            hosts.push(
                host.trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned(),
            );
        }
        // A page served from this machine may call a gateway it reached on a loopback
        // host (the guard refuses a loopback origin on any other host).
        let mut origins = self.config.allowed_origins.clone();
        origins.extend(
            http::LOOPBACK_ORIGINS
                .iter()
                .map(|origin| (*origin).to_owned()),
        );
        let mut config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(hosts)
            .with_allowed_origins(origins)
            .enforce_origin_validation()
            .with_max_request_body_bytes(
                usize::try_from(limits.max_body_bytes).unwrap_or(usize::MAX),
            )
            .with_cancellation_token(self.closed.child_token());
        // A session id another replica sealed is restored from what it holds.
        config.session_store = Some(Arc::new(SealedStore(Arc::clone(&self.state.sessions))));
        let service = StreamableHttpService::new(
            move || {
                Ok(Handler {
                    shared: Arc::clone(&shared),
                    tenant: None,
                })
            },
            Arc::new(SealedSessions::new(Arc::clone(&self.state.sessions))),
            config,
        );
        http::router(Arc::clone(&self.state), service)
    }

    /// Serves the router on `listener` (with TLS when the config's `tls` names
    /// certificate files) until `shutdown` resolves; then drains: `/readyz` answers 503,
    /// calls are still taken for the config's `drain_notice_seconds` (a load balancer's
    /// check sees the 503 first), then new calls are refused (`overloaded`, retryable),
    /// calls in flight run to their end within `drain_seconds`, the rest are cancelled
    /// (each still gets its one result), connections close, and the host's client is shut
    /// down (a grant's refresh in flight is saved).
    ///
    /// # Errors
    /// The TLS certificate or key cannot be read.
    pub async fn serve(
        &self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), GatewayError> {
        let tls = match &self.config.tls {
            Some(tls) => Some(serve::tls_acceptor(&tls.cert, &tls.key)?),
            None => None,
        };
        let limits = &self.config.limits;
        let bounds = serve::Bounds {
            max_connections: usize::try_from(limits.max_connections).unwrap_or(usize::MAX),
            header_timeout: Duration::from_secs(limits.header_timeout_seconds),
            idle_timeout: Duration::from_secs(limits.idle_timeout_seconds),
            max_header_bytes: 64 * 1024,
        };
        let stop = CancellationToken::new();
        let accepting = tokio::spawn(serve::accept_loop(
            listener,
            tls,
            self.router(),
            bounds,
            stop.clone(),
            self.closed.clone(),
        ));
        shutdown.await;
        // `/readyz` answers 503 at once; the gateway serves as before for the notice, so
        // that a load balancer takes it out of rotation before it stops taking calls.
        self.state.ready.store(false, Ordering::Release);
        let notice = Duration::from_secs(limits.drain_notice_seconds);
        if !notice.is_zero() {
            tokio::time::sleep(notice).await;
        }
        // New calls are refused (`overloaded`, retryable) while those in flight end.
        self.drain(Duration::from_secs(limits.drain_seconds)).await;
        // Connections end with their last response; what a client keeps open (a
        // session's event stream) is cut.
        stop.cancel();
        let _ = tokio::time::timeout(CLOSE_GRACE, accepting).await;
        self.closed.cancel();
        let unsaved = self.state.shared.host.shutdown(CLOSE_GRACE).await;
        for key in unsaved.unsaved_grants {
            tracing::error!(
                "the refreshed grant of tenant {} could not be saved; it may need a new login",
                key.tenant
            );
        }
        Ok(())
    }

    /// Stops taking calls and waits (at most `deadline`) for those in flight, then
    /// cancels the rest.
    async fn drain(&self, deadline: Duration) {
        let shared = &self.state.shared;
        self.state.ready.store(false, Ordering::Release);
        shared.draining.store(true, Ordering::Release);
        let finished = async {
            loop {
                let idle = shared.idle.notified();
                if shared.calls_in_flight.load(Ordering::Acquire) == 0 {
                    return;
                }
                idle.await;
            }
        };
        if tokio::time::timeout(deadline, finished).await.is_err() {
            tracing::warn!(
                calls = shared.calls_in_flight.load(Ordering::Acquire),
                "the drain ran out of time: cancelling the calls still running"
            );
            shared.abort.cancel();
        }
    }

    /// Whether the gateway takes calls: true until a drain starts (`/readyz` says the
    /// same).
    pub fn is_ready(&self) -> bool {
        self.state.ready.load(Ordering::Acquire)
    }

    /// Calls running now.
    pub fn calls_in_flight(&self) -> usize {
        self.state.shared.calls_in_flight.load(Ordering::Acquire)
    }
}

/// A gateway with more than its config says: [`Gateway::builder`].
#[derive(Debug)]
#[must_use]
pub struct GatewayBuilder<'a> {
    host: ToolHost,
    config: &'a HostConfig,
    session_keys: Option<KeyRing>,
}

impl GatewayBuilder<'_> {
    /// The key ring that seals legacy-era session ids (AES-256-GCM under its first key;
    /// every key opens what it sealed, so keys rotate as the credential store's do). Give
    /// every replica of a fleet the same ring, and a caller's next request may reach any
    /// of them. Without it, a key of this process's own: its sessions open on it alone,
    /// and not after a restart.
    pub fn session_keys(mut self, keys: KeyRing) -> Self {
        self.session_keys = Some(keys);
        self
    }

    /// The gateway.
    ///
    /// # Errors
    /// The config has no `gateway` object, its API key file cannot be read, the HTTP
    /// client that fetches issuers' keys cannot be built, or no session key could be made.
    pub fn build(self) -> Result<Gateway, GatewayError> {
        let Self {
            host,
            config,
            session_keys,
        } = self;
        let settings = config.gateway.clone().ok_or_else(|| {
            GatewayError::setup(
                "the host config has no \"gateway\" object: add one (docs/gateway.md) that says how callers are known (issuers or api_keys)".to_owned(),
            )
        })?;
        let keys = match &settings.api_keys {
            Some(path) => ApiKeys::read(std::path::Path::new(path))?,
            None => ApiKeys::default(),
        };
        let issuers = if settings.issuers.is_empty() {
            None
        } else {
            Some(Issuers::new(
                http_client()?,
                settings.resource.clone().unwrap_or_default(),
                settings.tenant_claim.clone(),
                settings.scopes.clone(),
                &settings.issuers,
            ))
        };
        let metadata_url = settings
            .resource
            .as_deref()
            .filter(|_| issuers.is_some())
            .and_then(identity::metadata_url)
            .map(|(url, _)| url);
        let identity = Identity {
            issuers,
            keys,
            resource: settings.resource.clone(),
            metadata_url,
        };
        let session_keys = match session_keys {
            Some(keys) => keys,
            None => KeyRing::random("local").map_err(|error| {
                GatewayError::setup(format!("no session key could be made: {error}"))
            })?,
        };
        let shared = Arc::new(shared(host, config, &settings));
        let max_body = usize::try_from(settings.limits.max_body_bytes).unwrap_or(usize::MAX);
        Ok(Gateway {
            state: Arc::new(HttpState::new(
                shared,
                identity,
                Sessions::new(session_keys),
                max_body,
            )),
            config: Arc::new(settings),
            closed: CancellationToken::new(),
        })
    }
}

/// What the handlers of one gateway share.
fn shared(host: ToolHost, config: &HostConfig, settings: &GatewayConfig) -> Shared {
    Shared {
        host,
        tools: config
            .tools
            .iter()
            .filter(|binding| matches!(binding.target, Target::Mcp(_) | Target::Http(_)))
            .cloned()
            .collect(),
        limits: Limits::new(settings.limits.clone()),
        abort: CancellationToken::new(),
        draining: AtomicBool::new(false),
        calls_in_flight: AtomicUsize::new(0),
        idle: tokio::sync::Notify::new(),
    }
}

/// Serves the config's tools for one tenant over stdin and stdout, for a desktop client
/// that starts the gateway as its server, until stdin closes; then the host's client is
/// shut down (a grant's refresh in flight is saved).
///
/// # Errors
/// The MCP session could not start (stdin closed or broke before the handshake).
pub async fn serve_stdio(
    host: ToolHost,
    config: &HostConfig,
    tenant: &str,
) -> Result<(), GatewayError> {
    use rmcp::ServiceExt as _;
    let settings = config
        .gateway
        .clone()
        .unwrap_or_else(|| GatewayConfig::with_api_keys(String::new()));
    let shared = Arc::new(shared(host.clone(), config, &settings));
    let handler = Handler {
        shared,
        tenant: Some(tenant.to_owned()),
    };
    let running = handler
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|error| GatewayError::setup(format!("the MCP session did not start: {error}")))?;
    let _ = running.waiting().await;
    let _ = host.shutdown(CLOSE_GRACE).await;
    Ok(())
}

/// The client that fetches issuers' metadata and keys: rustls on `ring` with the
/// platform's verifier, no redirects.
fn http_client() -> Result<reqwest::Client, GatewayError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(Arc::clone(&provider))
        .map_err(|error| GatewayError::setup(format!("TLS cannot be set up: {error}")))?;
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| GatewayError::setup(format!("TLS cannot be set up: {error}")))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| GatewayError::setup(format!("the HTTP client cannot be built: {error}")))
}
