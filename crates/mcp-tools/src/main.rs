//! `mcp-tools`: turn tools on an MCP server into Brain tool bindings; run and check them.
//! See `docs/cli.md`.

mod app;
mod auth;
mod call;
mod check;
mod cli;
mod conventions;
mod diff;
mod discover;
mod human;
mod input;
mod login;
mod logs;
mod merge;
mod models;
mod printer;
mod progress;
mod telemetry;

fn main() -> std::process::ExitCode {
    app::run(std::env::args_os())
}
