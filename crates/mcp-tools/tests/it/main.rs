//! The real `mcp-tools` binary against the testkit.

mod call_check;
mod deadlines;
mod discover;
mod fleet;
mod help;
mod human;
mod merge;
mod models;
mod oauth;
mod support;
mod usage;
