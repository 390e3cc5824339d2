//! stdio servers on the wire: the process and the line transport over its pipes.

mod process;
mod transport;

pub(crate) use process::Process;
pub(crate) use transport::{FailureSlot, LineLimit, StdioTransport};
