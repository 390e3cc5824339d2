//! ToolHost end to end against the testkit: both eras and stdio.

mod auth;
mod calls;
mod concurrency;
mod errors;
mod host_api;
mod messages;
#[cfg(feature = "otel")]
mod otel;
mod support;
