//! `mcp-tools`: turn tools on an MCP server into Brain tool bindings; run and check them.
//! See `docs/cli.md`.

mod call;
mod check;
mod cli;
mod diff;
mod discover;

use std::{io::IsTerminal, process::ExitCode};

use clap::Parser;

fn main() -> ExitCode {
    run(std::env::args())
}

/// How a run ends: success, a failure (exit 1) or a usage error (exit 2).
#[derive(Debug)]
pub(crate) enum Exit {
    /// Exit 1 with this one line on stderr.
    Failed(String),
    /// Exit 1; what went wrong was already printed.
    Reported,
    /// Exit 2 with this line on stderr.
    Usage(String),
}

pub(crate) type Outcome = Result<(), Exit>;

fn run(args: impl IntoIterator<Item = String>) -> ExitCode {
    let cli = match cli::Cli::try_parse_from(cli::normalize(args)) {
        Ok(cli) => cli,
        Err(error) => {
            // --help and --version are not errors.
            let code = if error.use_stderr() { 2 } else { 0 };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    init_logs(cli.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("mcp-tools: cannot start: {error}");
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(async {
        match cli.command {
            Some(cli::Command::Call(args)) => call::run(args).await,
            Some(cli::Command::Check(args)) => check::run(args).await,
            None => discover::run(cli.discover).await,
        }
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Exit::Failed(message)) => {
            eprintln!("mcp-tools: {message}");
            ExitCode::from(1)
        }
        Err(Exit::Reported) => ExitCode::from(1),
        Err(Exit::Usage(message)) => {
            eprintln!("mcp-tools: {message}\nTry 'mcp-tools --help' for more information.");
            ExitCode::from(2)
        }
    }
}

/// Logs go to stderr; `-v` for more; color only on a terminal. `RUST_LOG` overrides.
fn init_logs(verbose: u8) {
    // rmcp's own error logs repeat what the one-line error says: quiet unless asked.
    let level = match verbose {
        0 => "warn,rmcp=off",
        1 => "info,rmcp=warn",
        2 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let color = std::io::stderr().is_terminal() && std::io::stdout().is_terminal();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(color)
        .with_target(false)
        .try_init();
}
