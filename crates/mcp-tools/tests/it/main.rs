//! The real `mcp-tools` binary against the testkit.

mod call_check;
mod discover;
mod help;
mod support;
