//! The `gateway` object of a host config: how the config's tools are served as one MCP
//! server to MCP clients (`mcp-tools serve`, the `brain-mcp-gateway` crate). Plain data,
//! validated by the loader like the rest of the config.

/// How the gateway knows its callers, what it serves them, and its bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GatewayConfig {
    /// The URL MCP clients reach the gateway's endpoint at (`https://gw.example.com/mcp`):
    /// the audience its access tokens must name (RFC 8707) and the resource of its
    /// protected resource metadata (RFC 9728). Required with `issuers`.
    pub resource: Option<String>,
    /// Where to listen (`127.0.0.1:8443`); a command-line flag may override it.
    pub listen: Option<String>,
    /// The authorization servers whose JWT access tokens are accepted.
    pub issuers: Vec<GatewayIssuer>,
    /// The claim of an access token that names the caller's tenant (default `tenant`).
    pub tenant_claim: String,
    /// Scopes every access token must carry.
    pub scopes: Vec<String>,
    /// A file of API keys (as hashes) mapped to tenants, for small deployments.
    pub api_keys: Option<String>,
    /// Browser origins allowed to call (`https://app.example.com`); requests with an
    /// `Origin` that is not listed are refused (a loopback origin is allowed on a
    /// loopback listener).
    pub allowed_origins: Vec<String>,
    /// `Host` header values accepted besides the resource's host and loopback (DNS
    /// rebinding protection).
    pub allowed_hosts: Vec<String>,
    /// Serve HTTPS with these certificate files.
    pub tls: Option<GatewayTls>,
    /// Bounds against load and abuse.
    pub limits: GatewayLimits,
}

/// An authorization server whose access tokens the gateway accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GatewayIssuer {
    /// Its issuer identifier: the `iss` of its tokens; its metadata (RFC 8414, else
    /// OpenID discovery) names its keys.
    pub issuer: String,
    /// Where its signing keys are (a JWKS URL), instead of what its metadata says.
    pub jwks_uri: Option<String>,
}

/// Certificate files for HTTPS.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GatewayTls {
    /// The certificate chain (PEM).
    pub cert: String,
    /// The private key (PEM).
    pub key: String,
}

/// The gateway's bounds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GatewayLimits {
    /// Calls one tenant may have running at once; past it a call is refused with
    /// "overloaded, retry after" (default 64).
    pub calls_in_flight_per_tenant: u64,
    /// Requests one tenant may make per minute; past it, HTTP 429 with `Retry-After`
    /// (default 6000).
    pub requests_per_minute_per_tenant: u64,
    /// The largest request body read (default 4 MiB).
    pub max_body_bytes: u64,
    /// How long a client may take to send a request's headers (default 10).
    pub header_timeout_seconds: u64,
    /// How long an idle connection is kept (default 120).
    pub idle_timeout_seconds: u64,
    /// Connections served at once; more wait to be accepted (default 1024).
    pub max_connections: u64,
    /// On SIGTERM, how long calls in flight may run before they are cancelled
    /// (default 30).
    pub drain_seconds: u64,
    /// On SIGTERM, how long the gateway goes on serving as before once `/readyz` answers
    /// 503, so that a load balancer's health check takes it out of rotation before it
    /// stops taking calls (default 0: a gateway alone; for a fleet, the balancer's check
    /// interval times the failures it waits for).
    pub drain_notice_seconds: u64,
}

impl Default for GatewayLimits {
    fn default() -> Self {
        Self {
            calls_in_flight_per_tenant: 64,
            requests_per_minute_per_tenant: 6000,
            max_body_bytes: 4 << 20,
            header_timeout_seconds: 10,
            idle_timeout_seconds: 120,
            max_connections: 1024,
            drain_seconds: 30,
            drain_notice_seconds: 0,
        }
    }
}

impl GatewayConfig {
    /// A gateway that knows its callers by the API keys in `api_keys` (a file), with
    /// default bounds.
    pub fn with_api_keys(api_keys: impl Into<String>) -> Self {
        Self {
            resource: None,
            listen: None,
            issuers: Vec::new(),
            tenant_claim: "tenant".to_owned(),
            scopes: Vec::new(),
            api_keys: Some(api_keys.into()),
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            tls: None,
            limits: GatewayLimits::default(),
        }
    }
}
