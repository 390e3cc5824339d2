//! One run: parse the command line, install the logs, run the command it names, and map
//! the outcome to the exit status. Each command is a module of `commands/` that never
//! uses another; what they share is `runtime/`.

use std::{ffi::OsString, future::Future, process::ExitCode, time::Duration};

use clap::Parser;

use crate::{
    cli::{self, Command},
    commands::{call, check, completions, discover, login, logout, manpage},
    runtime::{
        exit::{Exit, Outcome},
        logs, output,
        telemetry::{FLUSH_BOUND, Telemetry},
    },
};

/// How long the tokio runtime may take to stop once the command is done.
const RUNTIME_GRACE: Duration = Duration::from_millis(250);

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
            completions::run(&args)
        }
        Some(Command::Manpage(args)) => {
            logs::init(verbose, None);
            manpage::run(&args)
        }
        Some(Command::Call(args)) => on_tokio(verbose, call::run(args)),
        Some(Command::Check(args)) => on_tokio(verbose, check::run(args)),
        Some(Command::Login(args)) => on_tokio(verbose, login::run(args)),
        Some(Command::Logout(args)) => on_tokio(verbose, logout::run(args)),
        None => on_tokio(verbose, discover::run(cli.discover)),
    };
    exit(outcome)
}

/// Runs a command on a multi-threaded tokio runtime, then stops the runtime within a
/// short grace (the command has already reported, and closed what it opened within its
/// own grace). The logs are installed first, and OpenTelemetry beside them when the
/// environment asks for it (feature `otel`): what is left of it is exported after the
/// command, within [`FLUSH_BOUND`], from this thread while the runtime still runs.
fn on_tokio(verbose: u8, command: impl Future<Output = Outcome>) -> Outcome {
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

/// The exit status of an outcome; a run that could not write all of stdout fails.
fn exit(outcome: Outcome) -> ExitCode {
    let outcome = match (outcome, output::stdout_failure()) {
        (Ok(()), Some(error)) => Err(Exit::Failed(format!("cannot write to stdout: {error}"))),
        (outcome, _) => outcome,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(exit) => exit.report(),
    }
}
