//! The gateway in front of the testkit, called by our own MCP client and by raw HTTP.

mod calls;
mod credentials;
mod faults;
mod limits;
mod load;
#[cfg(feature = "otel")]
mod otel;
mod replicas;
mod support;
mod tenants;
