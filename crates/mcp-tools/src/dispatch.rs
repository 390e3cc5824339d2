//! One run: parse the command line, install the logs, run the command it names, and map
//! the outcome to the exit status. Each command is a module of `commands/` that never
//! uses another; what they share is `runtime/`.

use std::{ffi::OsString, future::Future, process::ExitCode, time::Duration};

use clap::Parser;

use crate::{
    cli::{self, Command},
    commands::{call, check, completions, discover, login, logout, manpage},
    runtime::{
        client,
        exit::{Exit, Outcome},
        logs, output,
        signals::Signals,
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
        // A call stops on a signal by itself (its result is still printed); the other
        // commands end there.
        Some(Command::Call(args)) => on_tokio(verbose, Signaled::Handled, |signals| {
            call::run(args, signals)
        }),
        Some(Command::Check(args)) => on_tokio(verbose, Signaled::Ends, |_| check::run(args)),
        Some(Command::Login(args)) => on_tokio(verbose, Signaled::Ends, |_| login::run(args)),
        Some(Command::Logout(args)) => on_tokio(verbose, Signaled::Ends, |_| logout::run(args)),
        // The gateway drains on the first signal by itself.
        #[cfg(feature = "gateway")]
        Some(Command::Serve(args)) => on_tokio(verbose, Signaled::Handled, |signals| {
            crate::commands::serve::run(args, signals)
        }),
        None => on_tokio(verbose, Signaled::Ends, |_| discover::run(cli.discover)),
    };
    exit(outcome)
}

/// What the first signal (Ctrl-C, SIGTERM, SIGHUP) does to a command.
enum Signaled {
    /// The command watches the signals itself (a call cancels, then prints its result).
    Handled,
    /// The command ends at once (exit 130).
    Ends,
}

/// Runs a command on a multi-threaded tokio runtime, then ends the clients it built
/// ([`client::settle`]: background closes within a short grace, a grant's refresh in
/// flight to its end), then stops the runtime within a short grace. Signals are watched
/// for the whole run, so that none kills the process before a refreshed grant is saved.
/// The logs are installed first, and OpenTelemetry beside them when the environment
/// asks for it (feature `otel`): what is left of it is exported after the command,
/// within [`FLUSH_BOUND`], from this thread while the runtime still runs.
fn on_tokio<F: Future<Output = Outcome>>(
    verbose: u8,
    signaled: Signaled,
    command: impl FnOnce(Signals) -> F,
) -> Outcome {
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
    let outcome = runtime.block_on(async {
        let signals = Signals::watch();
        let outcome = match signaled {
            Signaled::Handled => command(signals.clone()).await,
            Signaled::Ends => tokio::select! {
                outcome = command(signals.clone()) => outcome,
                () = signals.at_least(1) => Err(Exit::Interrupted),
            },
        };
        client::settle(&signals).await;
        outcome
    });
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
