//! Moving bytes: our Streamable HTTP backend for rmcp (`http`), and stdio processes with
//! their line transport (`stdio`). What is learned here about a call's request (written
//! or not, the status, a broken stream) is recorded in its [`crate::call_state`] for
//! classification; nothing here drives the protocol.

#[cfg(feature = "http")]
pub(crate) mod http;
#[cfg(not(feature = "http"))]
#[path = "http_off.rs"]
pub(crate) mod http;
pub(crate) mod ingress;
pub(crate) mod network;
#[cfg(feature = "stdio")]
pub(crate) mod stdio;
