//! The real `mcp-tools` binary against the testkit.

mod call_check;
mod completions;
#[cfg(feature = "otel")]
mod credentials;
mod deadlines;
mod discover;
mod fleet;
#[cfg(all(feature = "gateway", feature = "postgres"))]
mod gateway_fleet;
mod help;
mod human;
mod layers;
mod merge;
mod models;
mod oauth;
#[cfg(feature = "otel")]
mod otel;
mod refresh_exit;
mod result_content;
mod serve;
mod stdio_env;
mod support;
mod terminal;
mod usage;
