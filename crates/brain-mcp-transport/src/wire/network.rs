//! How a client's connections reach servers: plain settings, kept in every build (the
//! `ClientOptions` setters stay; without the `http` feature nothing reads them).

use crate::secret::Secret;

/// Why a client could not be built: what failed, and the library's error.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) type SetupError = (&'static str, Box<dyn std::error::Error + Send + Sync>);

/// How a client's connections reach servers: `TCP_NODELAY`, a proxy, the roots it trusts
/// beyond the platform's, a client certificate for mutual TLS, and whether HTTP/2 is offered.
#[derive(Debug, Clone, Default)]
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) struct Network {
    /// `TCP_NODELAY` on every connection.
    pub(crate) tcp_nodelay: bool,
    /// Which proxy, if any.
    pub(crate) proxy: ProxySetting,
    /// Root certificates (PEM) trusted beside the platform's.
    pub(crate) roots: Vec<Vec<u8>>,
    /// A client certificate chain (PEM) and its private key (PEM), for mutual TLS.
    pub(crate) identity: Option<(Vec<u8>, Secret)>,
    /// Never offer HTTP/2 (by ALPN, over TLS): one connection per request in flight.
    pub(crate) http1_only: bool,
}

/// Which proxy requests go through.
#[derive(Debug, Clone, Default)]
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) enum ProxySetting {
    /// The environment's (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, `NO_PROXY`), as
    /// reqwest reads them; none when they are unset.
    #[default]
    Environment,
    /// This one, for every request (its URL may hold credentials: a secret).
    Url(Secret),
    /// None, whatever the environment says.
    Off,
}
