//! Without the `stdio` feature: a stdio process cannot exist, so its type is uninhabited
//! and starting one fails with the error that names the feature. A call to a stdio
//! server is refused before it gets here (`crate::features`).

use std::sync::Arc;

use rmcp::{Peer, RoleClient};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{
    api::{Era, JsonObject},
    call_state::Registry,
    context::Shared,
    endpoint::{Endpoint, StdioEndpoint},
    error::{CallError, ErrorKind, classify::Failure},
    protocol::drive::Abandoned,
};

pub(crate) enum Session {}

impl Session {
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        match *self {}
    }

    pub(crate) fn registry(&self) -> &Arc<Registry> {
        match *self {}
    }

    pub(crate) fn era(&self) -> Era {
        match *self {}
    }

    pub(crate) fn has_exited(&self) -> bool {
        match *self {}
    }

    pub(crate) fn set_line_limit(&self, _limit: usize) {
        match *self {}
    }

    pub(crate) fn failure(&self) -> Option<Failure> {
        match *self {}
    }

    pub(crate) async fn explain(&self, _endpoint: &Endpoint) -> String {
        match *self {}
    }

    pub(crate) fn finish(self, _shared: &Shared, _abandoned: Option<Abandoned>) {
        match self {}
    }
}

/// Why a process could not be opened.
#[allow(dead_code)]
pub(crate) enum Opening {
    ModernOnly,
    Failed(CallError),
}

#[allow(clippy::too_many_arguments)]
pub(crate) async fn open(
    _shared: &Shared,
    _endpoint: &StdioEndpoint,
    _deadline: Instant,
    _cancel: &CancellationToken,
    _era: Era,
    _line_limit: usize,
    _non_call_budget: usize,
    _trace: &JsonObject,
) -> Result<Session, Opening> {
    Err(Opening::Failed(modern_only()))
}

/// The error of any stdio server in this build.
pub(crate) fn modern_only() -> CallError {
    crate::features::missing(ErrorKind::Connect, "a stdio server", "stdio")
}
