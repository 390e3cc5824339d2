//! One module per command, each with its `run`. A command uses `cli` and the runtime
//! below it (`runtime/`), never another command: what two commands need goes below them.

pub(crate) mod call;
pub(crate) mod check;
pub(crate) mod completions;
pub(crate) mod discover;
pub(crate) mod login;
pub(crate) mod logout;
pub(crate) mod manpage;
#[cfg(feature = "gateway")]
pub(crate) mod serve;
