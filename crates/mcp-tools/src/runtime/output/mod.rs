//! What a person reads, and stdout: the writer every command prints through (it never
//! panics on a closed pipe), the one escaping rule ([`escape`]), every JSON text written
//! with that rule's characters as JSON escapes ([`json`]), a call's result as text
//! ([`human`]) and where `call` prints it without holding up the call ([`printer`]), what
//! stderr shows while a person waits ([`progress`]), and reports fitted to the terminal's
//! width ([`fit`]).

pub(crate) mod escape;
pub(crate) mod fit;
pub(crate) mod human;
pub(crate) mod json;
pub(crate) mod printer;
pub(crate) mod progress;

use std::{
    fmt,
    io::{self, Write},
    sync::OnceLock,
};

/// The first failure to write to stdout (a reader that closed the pipe early), if any.
static STDOUT_FAILED: OnceLock<String> = OnceLock::new();

/// Writes to stdout without panicking (`print!` panics on a closed pipe). After a failure
/// nothing more is written, and a run that would have succeeded exits 1 with the reason
/// ([`stdout_failure`]).
pub(crate) fn write_stdout(args: fmt::Arguments<'_>) {
    if STDOUT_FAILED.get().is_some() {
        return;
    }
    let mut stdout = io::stdout().lock();
    if let Err(error) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        let _ = STDOUT_FAILED.set(error.to_string());
    }
}

/// Why writing to stdout failed, if it did.
pub(crate) fn stdout_failure() -> Option<&'static str> {
    STDOUT_FAILED.get().map(String::as_str)
}

/// How many bindings a list names in full; a longer one is its first and last.
const BINDINGS_SHOWN: usize = 3;

/// Bindings (or places in them) named in a line: `a, b, c`, or for a longer list
/// `a ... z (12 bindings)`. Whatever prints the list for a person uses it; the JSON a
/// command prints names every one.
pub(crate) fn bindings_named(names: &[String]) -> String {
    match names {
        [first, .., last] if names.len() > BINDINGS_SHOWN => {
            format!("{first} ... {last} ({} bindings)", names.len())
        }
        _ => names.join(", "),
    }
}

/// `print!` through [`write_stdout`].
macro_rules! out {
    ($($arg:tt)*) => { $crate::runtime::output::write_stdout(format_args!($($arg)*)) };
}

/// `println!` through [`write_stdout`].
macro_rules! outln {
    ($($arg:tt)*) => { $crate::runtime::output::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

pub(crate) use {out, outln};
