//! `mcp-tools check`: validate a host config; with `--live`, compare each MCP binding
//! with what its server lists now.

use std::{path::Path, time::Duration};

use brain_mcp_transport::{ClientOptions, DiscoveryRequest, McpClient};
use brain_tools_config::{HostConfig, Loaded, McpServer, Target, ToolBinding};
use serde_json::Value;

use crate::{
    Exit, Outcome,
    cli::CheckArgs,
    diff::diff,
    discover::{discovery_failure, endpoint, token},
};

/// Reads and validates a host config; prints every problem (and warning) on stderr.
pub(crate) fn load(path: &Path) -> Result<Loaded, Exit> {
    let bytes = std::fs::read(path)
        .map_err(|error| Exit::Failed(format!("cannot read {}: {error}", path.display())))?;
    match HostConfig::from_json_bytes(&bytes) {
        Ok(loaded) => {
            for warning in &loaded.warnings {
                eprintln!("warning: {warning}");
            }
            Ok(loaded)
        }
        Err(errors) => {
            eprintln!("{}: {errors}", path.display());
            Err(Exit::Reported)
        }
    }
}

pub(crate) async fn run(args: CheckArgs) -> Outcome {
    let loaded = load(&args.config)?;
    let tools = loaded.config.tools.len();
    if !args.live {
        println!(
            "{}: {tools} tool binding{} OK",
            args.config.display(),
            if tools == 1 { "" } else { "s" }
        );
        return Ok(());
    }
    let client = McpClient::new(ClientOptions::default());
    // One discovery per server, shared by its bindings.
    let mut servers: Vec<(&McpServer, Vec<&ToolBinding>)> = Vec::new();
    for binding in &loaded.config.tools {
        if let Target::Mcp(mcp) = &binding.target {
            match servers
                .iter_mut()
                .find(|(server, _)| *server == &mcp.server)
            {
                Some((_, bindings)) => bindings.push(binding),
                None => servers.push((&mcp.server, vec![binding])),
            }
        }
    }
    let mut differences = 0;
    for (server, bindings) in servers {
        let token_env = match server {
            McpServer::Http { token_env, .. } => token_env.as_deref(),
            _ => None,
        };
        let bearer = match token(token_env) {
            Ok(bearer) => bearer,
            Err(Exit::Failed(message)) => {
                report(&bindings, &message);
                differences += bindings.len();
                continue;
            }
            Err(other) => return Err(other),
        };
        let endpoint = endpoint(server, bearer);
        let found = client
            .discover(DiscoveryRequest::new(
                endpoint,
                Duration::from_secs(args.discovery_timeout),
            ))
            .await;
        let found = match found {
            Ok(found) => found,
            Err(error) => {
                report(
                    &bindings,
                    &discovery_failure(&error, args.discovery_timeout),
                );
                differences += bindings.len();
                continue;
            }
        };
        for binding in bindings {
            let Some(mcp) = binding.mcp() else { continue };
            let Some(tool) = found.tools.iter().find(|tool| tool.name == mcp.mcp_tool) else {
                println!(
                    "{}: the server no longer lists {:?}",
                    binding.name, mcp.mcp_tool
                );
                differences += 1;
                continue;
            };
            let mut lines = Vec::new();
            let schema = |schema: &Option<brain_tools_config::JsonObject>| {
                schema.clone().map_or(Value::Null, Value::Object)
            };
            for (field, old, new) in [
                (
                    "input_schema",
                    Value::Object(binding.input_schema.clone()),
                    Value::Object(tool.input_schema.clone()),
                ),
                (
                    "output_schema",
                    schema(&binding.output_schema),
                    schema(&tool.output_schema),
                ),
            ] {
                let changes = diff(&old, &new);
                if !changes.is_empty() {
                    lines.push(format!("  {field} changed on the server:"));
                    lines.extend(changes.into_iter().map(|line| format!("    {line}")));
                }
            }
            let description = tool.description.clone().unwrap_or_default();
            if description != binding.description {
                lines.push(format!(
                    "  note: the server's description differs: {description:?}"
                ));
            }
            let changed = lines.iter().any(|line| !line.starts_with("  note:"));
            if changed {
                differences += 1;
                println!("{} ({}):", binding.name, mcp.mcp_tool);
            } else if !lines.is_empty() {
                println!("{} ({}): schemas match", binding.name, mcp.mcp_tool);
            } else {
                println!("{} ({}): matches the server", binding.name, mcp.mcp_tool);
            }
            for line in lines {
                println!("{line}");
            }
        }
    }
    client.shutdown(Duration::from_secs(5)).await;
    if differences > 0 {
        eprintln!(
            "mcp-tools: {differences} binding{} {} from their servers",
            if differences == 1 { "" } else { "s" },
            if differences == 1 {
                "differs"
            } else {
                "differ"
            }
        );
        Err(Exit::Reported)
    } else {
        Ok(())
    }
}

fn report(bindings: &[&ToolBinding], message: &str) {
    for binding in bindings {
        println!("{}: cannot compare: {message}", binding.name);
    }
}
