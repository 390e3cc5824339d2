//! ToolHost end to end against the testkit: both eras and stdio.

mod calls;
mod concurrency;
mod errors;
mod support;
