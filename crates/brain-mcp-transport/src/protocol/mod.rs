//! Driving the protocol over an open MCP context: a call (with its `input_required`
//! rounds, and the task it may become), the answers to server requests, and paged tool
//! listing. Nothing here opens or
//! closes a context, and nothing here moves bytes.

pub(crate) mod drive;
pub(crate) mod handler;
pub(crate) mod list;
pub(crate) mod outcome;
pub(crate) mod task;
