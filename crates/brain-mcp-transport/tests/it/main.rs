//! The transport against the testkit: both eras over HTTP, stdio, discovery, and faults.

mod auto;
mod discovery;
// The shared-grant tests use PostgreSQL too: the workspace builds the transport with
// `postgres` (the CLI turns it on), so they run in every full test run.
#[cfg(feature = "postgres")]
mod fleet;
mod layers;
mod legacy;
mod modern;
mod oauth;
mod oauth_dpop;
mod oauth_hostile;
// `private_key_jwt` needs the `oauth-jwt` feature; the workspace's test run has it (the
// conformance crate turns it on), as it has `postgres` for `fleet`.
#[cfg(feature = "oauth-jwt")]
mod oauth_jwt;
#[cfg(feature = "oauth-jwt")]
mod oauth_secrets;
mod oauth_servers;
mod refusals;
mod statuses;
mod stdio;
mod support;
mod tasks;
mod tls;
mod warm;
