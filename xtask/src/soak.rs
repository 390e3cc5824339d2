//! `cargo xtask soak [--calls N]`: the soak test in release, 10,000 calls by default.
//!
//! Runs `tests/tests/it/soak.rs` with `BRAIN_SOAK_CALLS`: calls through one `ToolHost`,
//! 64 at a time, about 5% hitting a fault, 4% running as tasks (2026-07-28) and some
//! cancelled mid-call (a task among them), against testkit servers running as child
//! processes. It fails on any unexpected result, any leak
//! (calls, tasks, child processes, sessions, file descriptors) and on memory growth past
//! 10% after the warm-up, and prints its figures.
//!
//! Then the gateway fleet (`crates/mcp-tools/tests/it/gateway_fleet.rs`) for a minute each
//! (`BRAIN_FLEET_SECONDS`, 15 s in CI): three `mcp-tools serve` replicas on one PostgreSQL
//! behind a round-robin front, SDK callers in both eras, 2-second upstream tokens, a
//! replica killed, a rolling restart. The peers must be installed (`cargo xtask test
//! --step peers`).

use anyhow::Context as _;

use crate::util;

/// The subcommand.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let calls = match args {
        [] => 10_000,
        [flag, n] if flag == "--calls" => n.parse().context("--calls takes a number")?,
        _ => anyhow::bail!("usage: cargo xtask soak [--calls N]"),
    };
    let calls: u64 = calls;
    util::run(util::cargo().args([
        "build",
        "--quiet",
        "--release",
        "-p",
        "brain-mcp-testkit",
        "--bins",
    ]))?;
    util::run(
        util::cargo()
            .args([
                "test",
                "--release",
                "-p",
                "brain-conformance",
                "--test",
                "it",
                "soak",
            ])
            .args(["--", "--exact", "soak::soak", "--nocapture"])
            .env("BRAIN_SOAK_CALLS", calls.to_string()),
    )?;
    util::run(
        util::cargo()
            .args([
                "test",
                "-p",
                "brain-mcp-tools",
                "--test",
                "it",
                "gateway_fleet",
            ])
            .args(["--", "--nocapture", "--test-threads", "1"])
            .env("BRAIN_FLEET_SECONDS", "60"),
    )
}
