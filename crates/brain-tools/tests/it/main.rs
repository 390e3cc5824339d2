//! ToolHost end to end against the testkit: both eras and stdio.

mod auth;
mod calls;
mod concurrency;
mod errors;
mod host_api;
#[cfg(feature = "otel")]
mod otel;
mod support;
