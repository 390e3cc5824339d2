//! `ToolHost`: what an agent host embeds to give model sessions tools from MCP servers.
//!
//! Built once from a loaded host config, a [`ToolHost`] lists the tools a tenant's model
//! may see ([`ToolHost::tools_for`]) and runs calls ([`ToolHost::call`], a [`ToolCall`]
//! with its own deadline, cancel token and sink), any number at once, each through the spec's five steps:
//!
//! 1. **check**: the tool exists for the tenant and the arguments satisfy its schema
//!    (nothing touches the network before this passes);
//! 2. **open**: a fresh MCP context for this call over the shared, pooled client;
//! 3. **call**: `tools/call` once, with `_meta["brain.dev/scope"]` and the call ID as the
//!    progress token;
//! 4. **stream**: every progress notification becomes a live-only `tool.progress`;
//! 5. **return**: exactly one `tool.result`, and the context is closed.
//!
//! Every failure becomes a `tool.result` with `is_error: true` and an error object whose
//! kind and delivery say what happened and whether the tool may have run.
//!
//! Each call runs in a `tool_call` span that is OpenTelemetry's MCP client span
//! (`tools/call {mcp_tool}`); with the `otel` feature its trace context goes to the
//! server in `params._meta` (SEP-414) and the call metrics are recorded. See
//! [docs/observability.md](https://github.com/brain-dev/brain-mcp-tools/blob/main/docs/observability.md).
//!
//! HTTP and SSE tools (bindings without `mcp_tool`) are handed to an
//! [`HttpToolExecutor`] the host supplies.
//!
//! A binding with an `auth` object calls its server with the calling tenant's OAuth token
//! ([`grant_of`] reads the grant's secrets from their variables at call time); a tenant
//! without a usable grant gets `authorization_required`, with the `mcp-tools login`
//! command to run. The client's [`ClientOptions`] take the credential store, the
//! [`Authorizer`] and the [`IdentityTokenProvider`]; see
//! [docs/auth.md](https://github.com/brain-dev/brain-mcp-tools/blob/main/docs/auth.md).
//!
//! # Cargo features
//!
//! The transport's, with the same names and the same default: `stdio`, `http`, `oauth`
//! (one crypto provider, ring). Not default: `oauth-jwt` (`private_key_jwt`; adds
//! aws-lc-rs), `postgres`, `otel`. A binding that needs a feature this build lacks gets a
//! `tool.result` error before anything is sent (`not_sent`; kind `connect` for a
//! transport, `authorization_failed` for a grant), its message naming the feature, and
//! [`ToolHostBuilder::build`] refuses a config with such bindings
//! ([`BuildError::Unsupported`], naming each; [`ToolHostBuilder::allow_unsupported`]
//! builds anyway). [`Features::COMPILED`] says which features this build has. See the
//! README's "Cargo features".
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! use brain_tools::{CallScope, ToolHost};
//! let config = brain_tools::HostConfig::from_json_bytes(&std::fs::read("host.json")?)?;
//! let host = ToolHost::new(&config.config)?;
//! let (events, mut rx) = tokio::sync::mpsc::unbounded_channel();
//! let scope = CallScope::new("local", "s1", "c1");
//! let result = host
//!     .call(scope, "search", serde_json::json!({"query": "rust"}))
//!     .sink(std::sync::Arc::new(events))
//!     .await;
//! println!("{}", brain_tools::ToolEvent::Result(result).to_json_line());
//! # Ok(()) }
//! ```
//!
//! Where to start, each with an example:
//! - a call with a deadline and a cancel token, awaited or run in the background with
//!   [`ToolCall::spawn`] (`tokio::spawn(host.call(..))` does not compile: a `ToolCall`
//!   becomes a future when awaited): [`ToolCall`];
//! - before the process exits, [`ToolHost::shutdown`]`(grace)`: closes what calls left
//!   open and lets a refresh of an OAuth grant in flight reach the credential store; the
//!   [`Shutdown`] it returns names grants whose tenants may have to authorize again;
//! - what the host holds now (calls in flight, background tasks, stdio processes, warm
//!   contexts), for metrics and leak checks: [`ToolHost::stats`];
//! - where a call's events go, a sink of the host's own: [`EventSink`];
//! - the client's options (proxy, extra root certificates, a client certificate, era,
//!   bounds): [`ClientOptions`];
//! - a credential store of the host's own, handed to the host:
//!   [`ToolHostBuilder::client`];
//! - HTTP tools: [`HttpToolExecutor`] (also in the [`ToolCall`] example); a whole host:
//!   [`examples/minimal_host.rs`](https://github.com/brain-dev/brain-mcp-tools/blob/main/crates/brain-tools/examples/minimal_host.rs).
//!
//! Every fallible function says in its `# Errors` section what fails and when; a call
//! never fails as a Rust error: its failures are `tool.result` events with an error
//! object ([docs/errors.md](https://github.com/brain-dev/brain-mcp-tools/blob/main/docs/errors.md)).

mod advice;
mod bindings;
mod executor;
mod host;
mod nearest;
mod scope;
mod sink;
mod telemetry;

pub use bindings::{Bound, GrantError, bind_discovered, endpoint_of, grant_of};
pub use executor::{HttpToolCall, HttpToolExecutor, HttpToolOutput};
pub use host::{
    BuildError, ModelTool, ToolCall, ToolCallFuture, ToolHost, ToolHostBuilder, Unsupported,
};
pub use scope::CallScope;
pub use sink::EventSink;

// Everything a host needs from the layers below, so that it depends on this crate and
// nothing else (the config crate included, as `brain_tools::config`). These types are part of this
// crate's API: a breaking change in one is a breaking change here.
#[cfg(all(feature = "otel", feature = "http"))]
pub use brain_mcp_transport::ExportHttpClient;
pub use brain_mcp_transport::{
    Authorization, AuthorizationCodeGrant, AuthorizationPrompt, Authorizer, CallError,
    ClientAuthentication, ClientBuildError, ClientCredentialsGrant, ClientOptions, ClientStats,
    CredentialStore, DEFAULT_DISCOVERY_BYTES, DEFAULT_REDIRECT_URI, DiscoveredTool, Discovery,
    DiscoveryRequest, Endpoint, EnterpriseGrant, Era, EraPreference, Features, FileCredentialStore,
    Grant, GrantKey, GrantStatus, HostAuthError, HttpEndpoint, IdentityTokenProvider, Lacking,
    MAX_AUTHORIZATIONS, McpClient, MemoryCredentialStore, PROGRESS_QUEUE, Progress,
    ProgressReceiver, ProgressSender, Secret, SecretMethod, ServerRequestPolicy, Shutdown,
    SigningAlgorithm, StdioEndpoint, StoreError, StoredGrant, StoredGrantSummary,
    WorkloadIdentityGrant, progress_channel,
};
pub use brain_mcp_transport::{CallOutcome, CallRequest, JsonObject};
// The credential store contract, for a host that implements its own store.
/// The attribute a host puts on its own `CredentialStore`, `EventSink`-like and other
/// async trait implementations (the traits here are `async_trait` traits).
pub use async_trait::async_trait;
pub use brain_mcp_transport::{
    DEFAULT_LEASE_TTL, Expected, GrantVersion, KeyRing, KeyRingError, Lease, LeaseHolder,
    MAX_TOKEN_LIFETIME, StoreErrorKind, Swap, VersionedGrant,
};
#[cfg(feature = "postgres")]
pub use brain_mcp_transport::{PostgresCredentialStore, PostgresStoreOptions};
/// The host config: loading, validating and writing it (the `brain-tools-config` crate).
pub use brain_tools_config as config;
pub use brain_tools_config::{ConfigErrors, HostConfig, Loaded, ToolBinding};
pub use brain_tools_events::{
    CallHeader, ContentBlock, Delivery, ErrorKind, McpResult, ProgressEvent, ResultEvent,
    ToolError, ToolEvent,
};
pub use brain_tools_policy::{Policy, PolicyError};
pub use tokio::time::Instant;
pub use tokio_util::sync::CancellationToken;

/// The README's example compiles.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
