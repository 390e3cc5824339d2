//! What a person reads.

pub(crate) mod escape;
pub(crate) mod human;
pub(crate) mod printer;
pub(crate) mod progress;
