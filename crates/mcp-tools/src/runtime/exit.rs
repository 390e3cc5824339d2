//! How a command ends: its [`Outcome`], and the exit status each [`Exit`] means: 0
//! success, 1 a failure, 2 a usage error (what `--help` documents), 130 a command a
//! signal ended.

use std::process::ExitCode;

use crate::runtime::output::escape::escape;

/// How a run ends: success, a failure (exit 1) or a usage error (exit 2).
#[derive(Debug)]
pub(crate) enum Exit {
    /// Exit 1 with this one line on stderr.
    Failed(String),
    /// Exit 1; what went wrong was already printed.
    Reported,
    /// Exit 2 with this line on stderr.
    Usage(String),
    /// Exit 130: a signal (Ctrl-C, SIGTERM, SIGHUP) ended the command.
    Interrupted,
}

/// What a command gives back.
pub(crate) type Outcome = Result<(), Exit>;

impl Exit {
    /// Says on stderr what went wrong, if it was not said yet, and gives the exit status.
    /// A message may quote a server (a tool name, an error's text): escaped as every
    /// string shown to a person is.
    pub(crate) fn report(self) -> ExitCode {
        match self {
            Exit::Failed(message) => {
                eprintln!("mcp-tools: {}", escape(&message, true));
                ExitCode::from(1)
            }
            Exit::Reported => ExitCode::from(1),
            Exit::Interrupted => {
                eprintln!("mcp-tools: interrupted");
                ExitCode::from(130)
            }
            Exit::Usage(message) => {
                eprintln!(
                    "mcp-tools: {} (see mcp-tools --help)",
                    escape(&message, true)
                );
                ExitCode::from(2)
            }
        }
    }
}
