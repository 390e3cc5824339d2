//! Moving bytes: our Streamable HTTP backend for rmcp (`http`), and stdio processes with
//! their line transport (`stdio`). What is learned here about a call's request (written
//! or not, the status, a broken stream) is recorded in its [`crate::call_state`] for
//! classification; nothing here drives the protocol.

pub(crate) mod http;
pub(crate) mod ingress;
pub(crate) mod stdio;
