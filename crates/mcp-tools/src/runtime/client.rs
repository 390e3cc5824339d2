//! The MCP client of a run, and what the commands ask of it: the client itself, the era
//! it speaks, a server's endpoint with its bearer, a discovery request within the
//! `--discovery-*` limits, and what a failed discovery prints.

use std::time::Duration;

use brain_tools::{
    CallError, ClientOptions, DiscoveryRequest, Endpoint, EraPreference, ErrorKind, McpClient,
    Secret,
};
use brain_tools_config::McpServer;

use crate::{
    cli::{DiscoveryLimits, EraArg},
    runtime::exit::Exit,
};

/// How long background closes (a session's DELETE, a stdio child's exit) may run after a
/// command has reported its outcome. The outcome is never held back by them.
pub(crate) const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// The MCP client of a run.
pub(crate) fn build(options: ClientOptions) -> Result<McpClient, Exit> {
    McpClient::new(options).map_err(|error| Exit::Failed(error.to_string()))
}

pub(crate) fn era(era: EraArg) -> EraPreference {
    match era {
        EraArg::Auto => EraPreference::Auto,
        EraArg::Legacy => EraPreference::Legacy,
        EraArg::Modern => EraPreference::Modern,
    }
}

/// The bearer from the variable `token_env` names (`named_by` says where the name came
/// from: "-token-env", or a binding's field); an unset variable is an error before anything
/// connects.
pub(crate) fn token(token_env: Option<&str>, named_by: &str) -> Result<Option<Secret>, Exit> {
    let Some(name) = token_env else {
        return Ok(None);
    };
    match std::env::var(name) {
        Ok(token) if !token.is_empty() => Ok(Some(Secret::new(token))),
        _ => Err(Exit::Failed(format!(
            "{name} is not set: export the server's API key in it (it is named by {named_by})"
        ))),
    }
}

pub(crate) fn endpoint(server: &McpServer, bearer: Option<Secret>) -> Endpoint {
    brain_tools::endpoint_of(server, bearer)
}

impl DiscoveryLimits {
    /// A discovery request for `endpoint` within these limits.
    pub(crate) fn request(&self, endpoint: Endpoint) -> DiscoveryRequest {
        DiscoveryRequest::new(endpoint, Duration::from_secs(self.discovery_timeout))
            .max_bytes(usize::try_from(self.discovery_max_bytes).unwrap_or(usize::MAX))
    }
}

/// What a failed discovery prints.
pub(crate) fn discovery_failure(error: &CallError, timeout: u64) -> String {
    match error.kind() {
        ErrorKind::Timeout => format!("discovery took longer than {timeout} s"),
        _ => format!("discovery failed: {}", error.detail()),
    }
}
