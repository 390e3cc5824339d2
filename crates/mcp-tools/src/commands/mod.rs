//! One module per command.

pub(crate) mod call;
pub(crate) mod check;
pub(crate) mod completions;
pub(crate) mod discover;
pub(crate) mod login;
