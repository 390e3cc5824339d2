//! A scriptable MCP server for tests: the other end of `brain-mcp-transport` and `brain-tools`.
//!
//! [`TestServer`] serves a fixed set of scripted tools ([`tool_names`]) over Streamable HTTP on
//! `127.0.0.1:<free port>`, in one protocol [`Era`] or both, and counts what it sees ([`Counters`]):
//! sessions opened and closed, requests by method, `tools/call` `_meta` and headers, cancellations, connections.
//! [`TestServer::fault_url`] gives a URL where every request gets one [`HttpFault`] (401, HTML 500, hang, ...);
//! faults that happen during a call are tools (`drop_mid_stream`, `progress_after_result`, `hang`, ...).
//! The `brain-mcp-testkit-stdio` binary serves the same tools over stdio, with process-level faults
//! (see [`stdio_binary_path`]); `brain-mcp-testkit-http` runs a [`TestServer`] for demos and benchmarks.
//!
//! It is built on rmcp's own server, so that what it answers is what an rmcp server answers; the
//! middleware in front of rmcp only counts, injects faults and emulates pre-2026 servers.
//!
//! Not for production: no authentication (a bearer token is recorded, never checked), no limits worth the
//! name, and every `tools/call` is kept in memory for the counters (see [`TestServer::record_call_details`]).
//!
//! ```no_run
//! use std::time::Duration;
//! use brain_mcp_testkit::{Era, HttpFault, ServerOptions, TestServer};
//!
//! # async fn demo() -> std::io::Result<()> {
//! let server = TestServer::start(ServerOptions { era: Era::Legacy, ..ServerOptions::default() }).await?;
//! let endpoint = server.url(); // point the client under test here
//! let unauthorized = server.fault_url(HttpFault::Status401); // or here, for the 401 path
//! # let _ = (endpoint, unauthorized);
//! // ... run one call through the client ...
//! let seen = server.wait_for(|c| c.sessions_closed == 1, Duration::from_secs(5)).await;
//! assert_eq!(seen.method("tools/call"), 1);
//! assert_eq!(seen.open_sessions(), 0);
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod bearer;
mod conformance;
mod counters;
mod fault;
mod front;
mod http;
#[cfg(feature = "oauth")]
pub mod oauth;
mod options;
#[cfg(feature = "postgres")]
mod postgres;
mod refused;
mod sessions;
mod stdio;
mod tasks;
mod tls;
mod tools;

pub use counters::{Counters, read_counters_file};
pub use fault::HttpFault;
pub use front::Front;
pub use http::TestServer;
pub use options::{BearerOptions, Era, ServerOptions};
#[cfg(feature = "postgres")]
pub use postgres::{Postgres, postgres_bindir};
pub use refused::RefusedPort;
pub use stdio::{
    Crash, EXIT_MID_CALL_STATUS, StdioOptions, build_binaries, http_binary_path, serve_stdio,
    stdio_binary_path,
};
pub use tls::Tls;
pub use tools::tool_names;
