//! Settings: the pooled HTTP client, rmcp's transport settings, and ours per transport.

use std::{sync::Arc, time::Duration};

use rmcp::transport::{
    common::client_side_sse::ExponentialBackoff,
    streamable_http_client::StreamableHttpClientTransportConfig,
};

pub(crate) use crate::wire::network::{Network, ProxySetting, SetupError};
use crate::{dpop::Dpop, endpoint::HttpEndpoint, secret::Redactor};

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
    /// The token is DPoP-bound to this key: every request carries a fresh proof.
    pub(crate) dpop: Option<Dpop>,
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
pub(crate) fn pooled_client(network: &Network) -> Result<reqwest::Client, SetupError> {
    client(network, true)
}

/// The same client without a pool: every request on a connection of its own.
pub(crate) fn fresh_client(network: &Network) -> Result<reqwest::Client, SetupError> {
    client(network, false)
}

/// TLS for every client of ours: rustls on the `ring` provider with the platform's
/// verifier, configured here rather than process-wide.
#[cfg(feature = "postgres")]
pub(crate) fn tls_config() -> Result<rustls::ClientConfig, rustls::Error> {
    tls_config_for(&Network::default()).map_err(|(_, error)| {
        error
            .downcast::<rustls::Error>()
            .map_or_else(|other| rustls::Error::General(other.to_string()), |e| *e)
    })
}

/// The client of OpenTelemetry exporters: TLS and redirects as ours, every request (its
/// body read included) within `timeout`.
#[cfg(feature = "otel")]
pub(crate) fn export_client(timeout: Duration) -> Result<reqwest::Client, SetupError> {
    let tls = tls_config_for(&Network::default())?;
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .tcp_nodelay(true)
        .timeout(timeout)
        .build()
        .map_err(|error| ("the export client could not be built", error.into()))
}

/// TLS with a network's extra roots and client certificate.
fn tls_config_for(network: &Network) -> Result<rustls::ClientConfig, SetupError> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = Vec::new();
    for pem in &network.roots {
        for certificate in CertificateDer::pem_slice_iter(pem) {
            roots.push(
                certificate.map_err(|error| ("a root certificate is not PEM", error.into()))?,
            );
        }
    }
    let verifier =
        rustls_platform_verifier::Verifier::new_with_extra_roots(roots, Arc::clone(&provider))
            .map_err(|error| ("TLS could not be set up", error.into()))?;
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| ("TLS could not be set up", error.into()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    match &network.identity {
        None => Ok(builder.with_no_client_auth()),
        Some((chain, key)) => {
            let chain = CertificateDer::pem_slice_iter(chain)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|error| ("the client certificate is not PEM", error.into()))?;
            let key = PrivateKeyDer::from_pem_slice(key.expose().as_bytes()).map_err(|_| {
                // The key's parse error is not kept: it may quote the key.
                let what = "the client certificate's key is not a PEM private key";
                (what, what.into())
            })?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|error| ("the client certificate cannot be used", error.into()))
        }
    }
}

fn client(network: &Network, pooled: bool) -> Result<reqwest::Client, SetupError> {
    let mut tls = tls_config_for(network)?;
    // HTTP/2 where a server over TLS accepts it (reqwest reads the ALPN outcome): the
    // calls in flight to one server share a connection. Never over plain HTTP (no h2c).
    tls.alpn_protocols = if network.http1_only {
        vec![b"http/1.1".to_vec()]
    } else {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    };
    let mut builder = reqwest::Client::builder();
    match &network.proxy {
        ProxySetting::Environment => {}
        ProxySetting::Off => builder = builder.no_proxy(),
        ProxySetting::Url(url) => {
            // reqwest's error quotes the URL, which may hold credentials: not kept.
            let proxy = reqwest::Proxy::all(url.expose()).map_err(|_| {
                let what = "the proxy URL cannot be used";
                (what, what.into())
            })?;
            builder = builder.proxy(proxy);
        }
    }
    builder
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        // reqwest sends a request again by itself when an HTTP/2 server refuses its stream
        // or closes the connection gracefully before it: the server's word that it did not
        // run it. A request goes again only by our rules (`attempt`): at most once, and a
        // `tools/call` only when provably unsent.
        .retry(reqwest::retry::never())
        .tcp_nodelay(network.tcp_nodelay)
        .pool_idle_timeout(Duration::from_secs(60))
        .pool_max_idle_per_host(if pooled { usize::MAX } else { 0 })
        .build()
        .map_err(|error| ("the HTTP client could not be built", error.into()))
}
