//! The MCP client of a run, and what the commands ask of it: the client itself, the era
//! it speaks, a server's endpoint with its bearer, a discovery request within the
//! `--discovery-*` limits, what a failed discovery prints, and how a run ends with the
//! clients it built ([`settle`]: a grant refreshed on its way to the store is saved
//! before the process exits).

use std::{
    sync::{Mutex, PoisonError},
    time::Duration,
};

use brain_tools::{
    CallError, ClientOptions, DiscoveryRequest, Endpoint, EraPreference, ErrorKind, GrantKey,
    McpClient, Secret,
};
use brain_tools_config::McpServer;

use crate::{
    cli::{DiscoveryLimits, EraArg},
    runtime::{exit::Exit, output::escape::escape, shell, signals::Signals},
};

/// How long background closes (a session's DELETE, a stdio child's exit) may run after a
/// command has reported its outcome. The outcome is never held back by them.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// What a message tells a person to run when a tenant's grant may be lost: the
/// `mcp-tools login` command for that grant.
pub(crate) type LoginHint = Box<dyn Fn(&GrantKey) -> String + Send>;

/// The clients this run built, each with its login hint: [`settle`] ends them.
static CLIENTS: Mutex<Vec<(McpClient, LoginHint)>> = Mutex::new(Vec::new());

/// The MCP client of a run; `login` says what to run for a grant whose refreshed tokens
/// may be lost. The run ends it ([`settle`]).
pub(crate) fn build(options: ClientOptions, login: LoginHint) -> Result<McpClient, Exit> {
    let client = McpClient::new(options).map_err(|error| Exit::Failed(error.to_string()))?;
    CLIENTS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push((client.clone(), login));
    Ok(client)
}

/// The login hint when all that is known of a grant is its key.
pub(crate) fn any_login() -> LoginHint {
    Box::new(|key: &GrantKey| {
        format!(
            "mcp-tools login --config HOST.json --tool TOOL --tenant {} (the binding of {})",
            shell::word(&key.tenant),
            escape(&key.resource, false)
        )
    })
}

/// Ends the clients this run built, after the command (it has reported its outcome):
/// their background closes get [`CLOSE_GRACE`], and a refresh of a delegated grant in
/// flight runs to its end (within its lease), since a process that exits before the
/// authorization server's answer reaches the store can lose the rotated refresh token.
/// While it waits, stderr says whose grant it is saving; the signal after the first
/// (Ctrl-C again) stops waiting, and stderr says what may be lost. A grant that could not
/// be saved is named, with the login that repairs it.
pub(crate) async fn settle(signals: &Signals) {
    let clients = std::mem::take(&mut *CLIENTS.lock().unwrap_or_else(PoisonError::into_inner));
    for (client, login) in clients {
        let saving = client.refreshes_in_flight();
        let stop_after = signals.count().max(1) + 1;
        if !saving.is_empty() {
            eprintln!(
                "mcp-tools: saving the refreshed grant of {} in the credential store before exiting (Ctrl-C again to stop waiting)",
                tenants(&saving)
            );
        }
        tokio::select! {
            biased;
            shutdown = client.shutdown(CLOSE_GRACE) => {
                for key in &shutdown.unsaved_grants {
                    eprintln!(
                        "mcp-tools: the refreshed grant of tenant {} could not be saved in the credential store; if its next call is refused, a new login is needed: {}",
                        escape(&key.tenant, false),
                        login(key)
                    );
                }
            }
            () = signals.at_least(stop_after), if !saving.is_empty() => {
                for key in client.refreshes_in_flight() {
                    eprintln!(
                        "mcp-tools: stopped waiting: the refresh token of tenant {} may be lost (the authorization server may have rotated it while the store keeps the spent one); if its next call is refused, log in again: {}",
                        escape(&key.tenant, false),
                        login(&key)
                    );
                }
            }
        }
    }
}

/// `tenant acme` or `tenants acme, globex`.
fn tenants(keys: &[GrantKey]) -> String {
    let mut names: Vec<String> = keys.iter().map(|key| escape(&key.tenant, false)).collect();
    names.dedup();
    match names.as_slice() {
        [one] => format!("tenant {one}"),
        many => format!("tenants {}", many.join(", ")),
    }
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
