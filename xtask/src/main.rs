//! `cargo xtask <command>`: project automation (the alias is in `.cargo/config.toml`).
//!
//! A small dispatcher over subcommands, one module each. To add one, write its module
//! with a `pub(crate) fn run(args: &[String]) -> anyhow::Result<()>` and add a line to
//! [`COMMANDS`].

mod bench;
mod conformance;
mod demo;
mod fuzz;
mod peers;
mod results;
mod soak;
mod test;
mod util;

use std::process::ExitCode;

type Command = fn(&[String]) -> anyhow::Result<()>;

/// Every subcommand: name, one-line help, entry point.
const COMMANDS: &[(&str, &str, Command)] = &[
    (
        "test",
        "fmt, clippy, dependency direction, tests, and the conformance run (what CI runs)",
        test::run,
    ),
    (
        "conformance",
        "official MCP suite (2025-11-25 and 2026-07-28), our scenarios, interop matrix",
        conformance::run,
    ),
    (
        "demo",
        "discover the testkit's tools, write a host config, run one call with progress",
        demo::run,
    ),
    (
        "bench",
        "side-by-side figures: ours, the floor, the TypeScript and Python SDKs (release)",
        bench::run,
    ),
    (
        "soak",
        "10,000 calls with faults and cancels; leaks and memory (release) [--calls N]",
        soak::run,
    ),
    (
        "fuzz",
        "run the libFuzzer targets (needs cargo-fuzz) [--seconds N] [--target NAME]",
        fuzz::run,
    ),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        usage();
        return ExitCode::from(2);
    };
    let Some((_, _, command)) = COMMANDS.iter().find(|(command, _, _)| command == name) else {
        if !matches!(name.as_str(), "-h" | "--help" | "help") {
            eprintln!("xtask: unknown command {name:?}");
        }
        usage();
        return ExitCode::from(2);
    };
    match command(&args[1..]) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask {name}: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn usage() {
    eprintln!("usage: cargo xtask <command> [args]\n\ncommands:");
    for (name, help, _) in COMMANDS {
        eprintln!("  {name:<12} {help}");
    }
}
