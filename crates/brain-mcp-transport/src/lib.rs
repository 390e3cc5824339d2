//! An MCP client for tool calls, built on rmcp: one isolated MCP context per call, over
//! Streamable HTTP (both protocol eras) or a stdio command, plus tool discovery.
//!
//! [`McpClient`] is one per process. It owns the pooled HTTP client (no redirects,
//! `TCP_NODELAY`), a bounded, expiring cache of what each server supports, and the
//! background tasks that close sessions. [`McpClient::call`] runs one `tools/call`:
//!
//! - servers up to `2025-11-25` get a session per call (`initialize`,
//!   `notifications/initialized`, `tools/call`, `DELETE`), with no standalone GET stream;
//!   the `DELETE` goes out on every path, in the background, after the result is returned;
//! - `2026-07-28` servers get one self-contained POST per call, on a long-lived client per
//!   (URL, token) whose `server/discover` answer is cached; a call declares the tasks
//!   extension, and one the server answers with a task is followed (`tasks/get`) to its
//!   result within the call's deadline, or given up with `tasks/cancel`;
//! - stdio commands are spawned per call in their own process group, which is killed
//!   when the call ends.
//!
//! A call (or a discovery) may carry a tenant's OAuth grant ([`Authorization`]): it then
//! goes with that tenant's access token, obtained when the server asks for one (client
//! credentials, a delegated grant kept in a [`CredentialStore`], or enterprise-managed
//! authorization) and cached until shortly before it expires. See
//! [docs/auth.md](https://github.com/brain-dev/brain-mcp-tools/blob/main/docs/auth.md).
//!
//! The progress token on the wire is the caller's (the call ID); every progress
//! notification reaches the caller, in wire order, before the result. A call is sent at
//! most once: nothing here retries `tools/call`. A failure is a [`CallError`] whose
//! [`Delivery`] says whether the request may have reached the server.
//!
//! # Cargo features
//!
//! Default: `stdio`, `http`, `oauth`, with one crypto provider (ring). `stdio`: stdio
//! servers; `http`: Streamable HTTP servers (reqwest, rustls on ring); `oauth` (implies
//! `http`): OAuth grants and DPoP; `oauth-jwt` (implies `oauth`, not default: it adds
//! aws-lc-rs): `private_key_jwt` client authentication; `postgres` (implies `oauth`):
//! `PostgresCredentialStore`; `otel`: OpenTelemetry. A call whose endpoint or grant needs
//! a feature this build lacks fails before anything is sent (`not_sent`, kind `connect`
//! for a transport, `authorization_failed` for a grant), its message naming the feature.
//! [`Features::COMPILED`] says what this build has, and [`Features::lacks`] what a server
//! would need that it lacks. The README's "Cargo features" has the table and the
//! dependency counts.
//!
//! What this crate is not: it knows nothing of which tenant may use what, schemas or
//! events (that is `brain-tools`; here a tenant only keys its OAuth grants), and it is not
//! a general MCP client (no resources, prompts or sampling).
//!
//! ```no_run
//! # async fn example() -> Result<(), brain_mcp_transport::CallError> {
//! use std::time::Duration;
//! use brain_mcp_transport::{CallRequest, ClientOptions, Endpoint, McpClient};
//!
//! let client = McpClient::new(ClientOptions::default()).expect("the client builds");
//! let endpoint = Endpoint::http("http://127.0.0.1:8080/mcp", None);
//! let request = CallRequest::new(endpoint, "echo", "call-1", Duration::from_secs(30))
//!     .arguments(serde_json::json!({"message": "hi"}).as_object().cloned().unwrap());
//! let outcome = client.call(request).await?;
//! println!("{}", outcome.result);
//! # Ok(()) }
//! ```

// A build without one of the default features leaves out the callers of some shared
// helpers (the resend budget, the registry's lookups, the store's lease
// terms): those look dead there. Dead code is checked in the default and the full builds,
// where every caller is present. So are the sizes of the enums of contexts and sessions,
// whose left-out variants are empty stand-ins in such a build.
#![cfg_attr(
    not(all(feature = "stdio", feature = "http", feature = "oauth")),
    allow(dead_code, clippy::large_enum_variant)
)]

// Modules depend one way, lowest first (checked by the `layers` test):
// secret, dpop, endpoint, telemetry, grant, progress, api, error, features, call_state, wire, auth,
// protocol, context, client.
mod api;
mod auth;
mod call_state;
mod client;
mod context;
#[cfg(feature = "oauth")]
mod dpop;
#[cfg(not(feature = "oauth"))]
#[path = "dpop_off.rs"]
mod dpop;
mod endpoint;
mod error;
mod features;
mod grant;
mod progress;
mod protocol;
mod secret;
mod telemetry;
mod wire;

pub use api::{
    CallOutcome, CallReport, CallRequest, DEFAULT_DISCOVERY_BYTES, DiscoveredTool, Discovery,
    DiscoveryRequest, Era, EraPreference, JsonObject, MAX_CONTENT_BLOCKS, MAX_LISTED_TOOLS,
    ServerRequestPolicy,
};
pub use auth::{
    AuthorizationPrompt, Authorizer, CredentialStore, DEFAULT_LEASE_TTL, Expected,
    FileCredentialStore, GrantKey, GrantStatus, GrantVersion, HostAuthError, IdentityTokenProvider,
    KeyRing, KeyRingError, Lease, LeaseHolder, MAX_AUTHORIZATIONS, MAX_TOKEN_LIFETIME,
    MemoryCredentialStore, StoreError, StoreErrorKind, StoredGrant, StoredGrantSummary, Swap,
    VersionedGrant,
};
#[cfg(feature = "postgres")]
pub use auth::{PostgresCredentialStore, PostgresStoreOptions};
#[cfg(all(feature = "otel", feature = "http"))]
pub use client::ExportHttpClient;
pub use client::{ClientBuildError, ClientOptions, ClientStats, McpClient, Shutdown};
pub use endpoint::{Endpoint, HttpEndpoint, StdioEndpoint};
pub use error::{CallError, Delivery, ErrorKind};
pub use features::{Features, Lacking};
pub use grant::{
    Authorization, AuthorizationCodeGrant, ClientAuthentication, ClientCredentialsGrant,
    DEFAULT_REDIRECT_URI, EnterpriseGrant, Grant, SecretMethod, SigningAlgorithm,
    WorkloadIdentityGrant,
};
pub use progress::{PROGRESS_QUEUE, Progress, ProgressReceiver, ProgressSender, progress_channel};
pub use secret::Secret;
