//! The MCP client of a run.

use std::time::Duration;

/// How long background closes (a session's DELETE, a stdio child's exit) may run after a
/// command has reported its outcome. The outcome is never held back by them.
pub(crate) const CLOSE_GRACE: Duration = Duration::from_secs(1);
