//! Discovery: list a server's tools and print them as bindings.

use std::time::Duration;

use brain_mcp_transport::{
    ClientOptions, DiscoveredTool, DiscoveryRequest, Endpoint, EraPreference, ErrorKind, McpClient,
    Secret,
};
use brain_tools_config::{HostConfig, McpServer, StdioCommand, ToolBinding};

use crate::{
    Exit, Outcome,
    cli::{DiscoverArgs, EraArg},
};

/// How long closing sessions may take before the process exits.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

pub(crate) fn era(era: EraArg) -> EraPreference {
    match era {
        EraArg::Auto => EraPreference::Auto,
        EraArg::Legacy => EraPreference::Legacy,
        EraArg::Modern => EraPreference::Modern,
    }
}

/// The bearer from the variable `-token-env` names; an unset variable is an error
/// before anything connects.
pub(crate) fn token(token_env: Option<&str>) -> Result<Option<Secret>, Exit> {
    let Some(name) = token_env else {
        return Ok(None);
    };
    match std::env::var(name) {
        Ok(token) if !token.is_empty() => Ok(Some(Secret::new(token))),
        _ => Err(Exit::Failed(format!(
            "{name} is not set: export the server's API key in it (it is named by -token-env)"
        ))),
    }
}

/// A stdio command line, split on whitespace.
pub(crate) fn stdio_command(command: &str) -> Result<StdioCommand, Exit> {
    let mut words = command.split_whitespace();
    let program = words
        .next()
        .ok_or_else(|| Exit::Usage("--command needs a program".into()))?;
    Ok(StdioCommand::new(program, words))
}

pub(crate) fn endpoint(server: &McpServer, bearer: Option<Secret>) -> Endpoint {
    brain_tools::endpoint_of(server, bearer)
}

/// What a failed discovery prints.
pub(crate) fn discovery_failure(error: &brain_mcp_transport::CallError, timeout: u64) -> String {
    match error.kind() {
        ErrorKind::Timeout => format!("discovery took longer than {timeout} s"),
        _ => format!("discovery failed: {}", error.detail()),
    }
}

pub(crate) async fn run(args: DiscoverArgs) -> Outcome {
    let tenants = tenants(&args.tenant)?;
    let server = match (&args.url, &args.command) {
        (Some(url), None) => McpServer::Http {
            url: url.clone(),
            token_env: args.token_env.clone(),
        },
        (None, Some(command)) => McpServer::Stdio(stdio_command(command)?),
        _ => return Err(Exit::Usage("give --url or --command".into())),
    };
    let bearer = token(args.token_env.as_deref())?;
    let endpoint = endpoint(&server, bearer);
    let described = endpoint.describe();

    let client = McpClient::new(ClientOptions::default().era(era(args.era)));
    let found = client
        .discover(DiscoveryRequest::new(
            endpoint,
            Duration::from_secs(args.discovery_timeout),
        ))
        .await;
    client.shutdown(CLOSE_GRACE).await;
    let found =
        found.map_err(|error| Exit::Failed(discovery_failure(&error, args.discovery_timeout)))?;

    let chosen = choose(&found.tools, &args.tools, &described)?;
    let bound = brain_tools::bind_discovered(&chosen, &server, &tenants);
    for (tool, binding) in &bound.renamed {
        eprintln!(
            "mcp-tools: note: tool {tool:?} is bound as {binding:?} (binding names are ^[A-Za-z0-9_-]{{1,64}}$ and unique)"
        );
    }
    let bindings = bound.bindings;
    review(&bindings);
    let json = serde_json::to_string_pretty(&bindings)
        .map_err(|error| Exit::Failed(format!("cannot print the bindings: {error}")))?;
    println!("{json}");
    Ok(())
}

fn tenants(given: &[String]) -> Result<Vec<String>, Exit> {
    let mut tenants = Vec::new();
    for tenant in given {
        let tenant = tenant.trim();
        if tenant.is_empty() {
            return Err(Exit::Usage("a tenant name is empty".into()));
        }
        if !tenants.iter().any(|t| t == tenant) {
            tenants.push(tenant.to_owned());
        }
    }
    Ok(tenants)
}

/// The named tools (in the order named), or every tool.
fn choose<'a>(
    tools: &'a [DiscoveredTool],
    names: &[String],
    described: &str,
) -> Result<Vec<&'a DiscoveredTool>, Exit> {
    if names.is_empty() {
        return Ok(tools.iter().collect());
    }
    let missing: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|name| !tools.iter().any(|tool| tool.name == *name))
        .collect();
    if !missing.is_empty() {
        let mut available: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        let more = available.len().saturating_sub(30);
        available.truncate(30);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        let what = if missing.len() == 1 {
            "no tool named"
        } else {
            "no tools named"
        };
        return Err(Exit::Failed(format!(
            "{described} has {what} {}; it has: {}{more}",
            missing.join(", "),
            if available.is_empty() {
                "no tools".to_owned()
            } else {
                available.join(", ")
            }
        )));
    }
    Ok(names
        .iter()
        .filter_map(|name| tools.iter().find(|tool| tool.name == *name))
        .collect())
}

/// Loads the bindings as the host would and says (on stderr) what needs editing first.
fn review(bindings: &[ToolBinding]) {
    let document = serde_json::json!({ "tools": bindings });
    if let Err(errors) = HostConfig::from_json_value_with_env(&document, |_| true) {
        eprintln!("mcp-tools: note: review these bindings before use:");
        for error in errors.errors() {
            eprintln!("  {error}");
        }
    }
}
