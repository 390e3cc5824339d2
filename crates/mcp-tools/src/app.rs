//! One run: parse the command line, install the logs, run the command, map the outcome to
//! the exit status.

use std::{
    ffi::OsString,
    fmt,
    future::Future,
    io::{self, Write},
    process::ExitCode,
    sync::OnceLock,
    time::Duration,
};

use clap::Parser;

use crate::{
    call, check,
    cli::{self, Command},
    conventions, discover, login, logs,
    telemetry::{FLUSH_BOUND, Telemetry},
};

/// How long background closes (a session's DELETE, a stdio child's exit) may run after a
/// command has reported its outcome. The outcome is never held back by them.
pub(crate) const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// How long the runtime may take to stop once the command is done.
const RUNTIME_GRACE: Duration = Duration::from_millis(250);

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

/// What a command gives back.
pub(crate) type Outcome = Result<(), Exit>;

/// The first failure to write to stdout (a reader that closed the pipe early), if any.
static STDOUT_FAILED: OnceLock<String> = OnceLock::new();

/// Writes to stdout without panicking (`print!` panics on a closed pipe). After a failure
/// nothing more is written, and a run that would have succeeded exits 1 with the reason.
pub(crate) fn write_stdout(args: fmt::Arguments<'_>) {
    if STDOUT_FAILED.get().is_some() {
        return;
    }
    let mut stdout = io::stdout().lock();
    if let Err(error) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        let _ = STDOUT_FAILED.set(error.to_string());
    }
}

/// `print!` through [`write_stdout`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::app::write_stdout(format_args!($($arg)*)) };
}

/// `println!` through [`write_stdout`].
macro_rules! outln {
    ($($arg:tt)*) => { $crate::app::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

pub(crate) use {out, outln};

/// Parses `args`, runs the command, and says how the process exits.
pub(crate) fn run(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match cli::Cli::try_parse_from(cli::normalize(args)) {
        Ok(cli) => cli,
        // --help and --version are not errors.
        Err(error) if !error.use_stderr() => {
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        Err(error) => return exit(Err(Exit::Usage(cli::one_line(&error)))),
    };
    let verbose = cli.verbose;
    let outcome = match cli.command {
        Some(Command::Completions(args)) => {
            logs::init(verbose, None);
            conventions::completions(&args)
        }
        Some(Command::Manpage(args)) => {
            logs::init(verbose, None);
            conventions::manpage(&args)
        }
        Some(Command::Call(args)) => on_runtime(verbose, call::run(args)),
        Some(Command::Check(args)) => on_runtime(verbose, check::run(args)),
        Some(Command::Login(args)) => on_runtime(verbose, login::login(args)),
        Some(Command::Logout(args)) => on_runtime(verbose, login::logout(args)),
        None => on_runtime(verbose, discover::run(cli.discover)),
    };
    exit(outcome)
}

/// Runs a command on a multi-threaded runtime, then stops the runtime within a short
/// grace (the command has already reported, and closed what it opened within its own
/// grace). The logs are installed first, and OpenTelemetry beside them when the
/// environment asks for it (feature `otel`): what is left of it is exported after the
/// command, within [`FLUSH_BOUND`], from this thread while the runtime still runs.
fn on_runtime(verbose: u8, command: impl Future<Output = Outcome>) -> Outcome {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| Exit::Failed(format!("cannot start: {error}")))?;
    let telemetry = {
        let _runtime = runtime.enter();
        Telemetry::from_env()
    };
    logs::init(verbose, telemetry.layer());
    for warning in telemetry.warnings() {
        tracing::warn!("{warning}");
    }
    let outcome = runtime.block_on(command);
    telemetry.shutdown(FLUSH_BOUND);
    runtime.shutdown_timeout(RUNTIME_GRACE);
    outcome
}

fn exit(outcome: Outcome) -> ExitCode {
    let outcome = match (outcome, STDOUT_FAILED.get()) {
        (Ok(()), Some(error)) => Err(Exit::Failed(format!("cannot write to stdout: {error}"))),
        (outcome, _) => outcome,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Exit::Failed(message)) => {
            eprintln!("mcp-tools: {message}");
            ExitCode::from(1)
        }
        Err(Exit::Reported) => ExitCode::from(1),
        Err(Exit::Usage(message)) => {
            eprintln!("mcp-tools: {message} (see mcp-tools --help)");
            ExitCode::from(2)
        }
    }
}
