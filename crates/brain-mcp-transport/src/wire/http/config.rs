//! Settings: the pooled HTTP client, rmcp's transport settings, and ours per transport.

use std::{sync::Arc, time::Duration};

use rmcp::transport::{
    common::client_side_sse::ExponentialBackoff,
    streamable_http_client::StreamableHttpClientTransportConfig,
};

use crate::{endpoint::HttpEndpoint, secret::Redactor};

/// Per-transport settings of the backend.
#[derive(Debug, Clone)]
pub(crate) struct BackendConfig {
    /// Open the standalone GET stream when rmcp asks for it.
    pub(crate) standalone_stream: bool,
    /// Bound on one SSE event, and on a response that is not a call's.
    pub(crate) max_response_bytes: usize,
    /// How many times one call's response stream may be resumed.
    pub(crate) max_resumes: usize,
    /// How long an `initialize` still has after the transport's lifetime ended.
    pub(crate) initialize_grace: Duration,
    /// Hides the server's secrets in what it sends.
    pub(crate) redactor: Redactor,
    /// Bound on every byte received that is not a call's, together (the handshake, a
    /// discovery's pages, the tool listing of a shared client).
    pub(crate) non_call_budget: usize,
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

/// The pooled client: no redirects (a bearer never follows one to another origin),
/// `TCP_NODELAY` as asked, and TLS with rustls on the `ring` provider, chosen here rather
/// than through the process-wide default (a host's own choice of provider is left
/// alone). A client that cannot be built this way is an error, never a weaker client.
pub(crate) fn pooled_client(tcp_nodelay: bool) -> Result<reqwest::Client, String> {
    client(tcp_nodelay, true)
}

/// The same client without a pool: every request on a connection of its own.
pub(crate) fn fresh_client(tcp_nodelay: bool) -> Result<reqwest::Client, String> {
    client(tcp_nodelay, false)
}

/// TLS for every client of ours: rustls on the `ring` provider with the platform's
/// verifier, configured here rather than process-wide.
pub(crate) fn tls_config() -> Result<rustls::ClientConfig, rustls::Error> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_platform_verifier())?
        .with_no_client_auth())
}

/// The client of OpenTelemetry exporters: TLS and redirects as ours, every request (its
/// body read included) within `timeout`.
#[cfg(feature = "otel")]
pub(crate) fn export_client(timeout: Duration) -> Result<reqwest::Client, String> {
    let tls = tls_config().map_err(|error| format!("TLS could not be set up: {error}"))?;
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .tcp_nodelay(true)
        .timeout(timeout)
        .build()
        .map_err(|error| format!("the export client could not be built: {error}"))
}

fn client(tcp_nodelay: bool, pooled: bool) -> Result<reqwest::Client, String> {
    let tls = tls_config().map_err(|error| format!("TLS could not be set up: {error}"))?;
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .tcp_nodelay(tcp_nodelay)
        .pool_idle_timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(if pooled { usize::MAX } else { 0 })
        .build()
        .map_err(|error| format!("the HTTP client could not be built: {error}"))
}
