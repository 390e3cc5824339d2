//! Conformance for the Brain MCP tool layer: the client the official MCP conformance
//! suite drives, our own scenario suite against the testkit, and the interop checks
//! against third-party MCP servers.
//!
//! Everything runs through one binary, `brain-conformance`, which `cargo xtask
//! conformance` drives (see `xtask/src/conformance.rs`):
//!
//! - `brain-conformance <URL>`: the official suite's client contract. The scenario is in
//!   `MCP_CONFORMANCE_SCENARIO`, the protocol revision in
//!   `MCP_CONFORMANCE_PROTOCOL_VERSION`, extra input in `MCP_CONFORMANCE_CONTEXT`; the
//!   server URL is the last argument. Exit 0 when the scenario's flow completed.
//! - `brain-conformance interop --peer NAME (--url URL | --stdio PROGRAM [ARGS...])
//!   [--era auto|legacy|modern]`: discovery and calls (echo, progress, image, structured,
//!   error) against a real MCP server, through `ToolHost`; one JSON line of checks.
//! - `brain-conformance ours --server-era legacy|modern|both --transport http|stdio
//!   [--era auto|legacy|modern]`: the same checks plus timeout, cancel, byte budget,
//!   output schema, session cleanup and wire headers, against the testkit; one JSON line.
//!
//! What this crate is not: a library for hosts. It is `publish = false` and exists to
//! prove, with the spec's own referee and real peers, that the workspace speaks MCP.
//!
//! Every mode is bounded by a deadline and never waits for a server longer than that.

pub mod bench;
mod bindings;
mod checks;
mod interop;
mod official;
mod official_auth;
mod ours;

use std::process::ExitCode;

const USAGE: &str = "usage:
  brain-conformance <URL>                      (official suite client; MCP_CONFORMANCE_* env)
  brain-conformance interop --peer NAME (--url URL | --stdio PROGRAM [ARGS...]) [--era auto|legacy|modern]
  brain-conformance ours --server-era legacy|modern|both --transport http|stdio [--era auto|legacy|modern]";

/// Runs the binary with its command-line arguments (without the program name).
pub fn main_with_args(args: Vec<String>) -> ExitCode {
    init_tracing();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("brain-conformance: cannot start the runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let code = match args.first().map(String::as_str) {
        Some("interop") => runtime.block_on(interop::main(&args[1..])),
        Some("ours") => runtime.block_on(ours::main(&args[1..])),
        Some("-h" | "--help") | None => {
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
        Some(_) => runtime.block_on(official::main(&args)),
    };
    // Background closes were already given their grace; do not wait for stragglers.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    code
}

/// Logs to stderr when `RUST_LOG` is set (the suite keeps the client's stderr).
fn init_tracing() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }
}

/// The value after a flag.
pub(crate) fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|arg| arg == flag)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// Parses an era flag value.
pub(crate) fn parse_era(value: Option<&str>) -> anyhow::Result<brain_tools::EraPreference> {
    use brain_tools::EraPreference;
    match value {
        None | Some("auto") => Ok(EraPreference::Auto),
        Some("legacy") => Ok(EraPreference::Legacy),
        Some("modern") => Ok(EraPreference::Modern),
        Some(other) => anyhow::bail!("unknown era {other:?}: expected auto, legacy or modern"),
    }
}
