//! From a server's tool list to a `ToolHost`, the way a user of `mcp-tools` does it:
//! discover, turn every tool into a binding, load the host config, build the host.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Context as _;
use brain_mcp_transport::{DiscoveredTool, Discovery, DiscoveryRequest, Endpoint, McpClient};
use brain_tools::{Authorization, CallScope, ToolHost};
use brain_tools_config::{
    EnvValue, HostConfig, McpServer, McpTarget, StdioCommand, Target, ToolBinding,
};
use brain_tools_events::{ResultEvent, ToolEvent};
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

/// The tenant every conformance binding is for.
pub(crate) const TENANT: &str = "conformance";

/// Discovery gets this long, as in `mcp-tools`.
pub(crate) const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the tools live.
#[derive(Debug, Clone)]
pub(crate) enum Server {
    /// A Streamable HTTP endpoint.
    Http(String),
    /// A Streamable HTTP endpoint that wants OAuth: its bindings carry `auth`.
    Protected {
        url: String,
        auth: crate::official_auth::HostAuth,
    },
    /// A stdio command, started per call.
    Stdio {
        program: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
}

impl Server {
    /// The server as a binding describes it.
    fn config(&self) -> McpServer {
        match self {
            Server::Http(url) => McpServer::http(url.clone(), None),
            Server::Protected { url, auth } => {
                let mut server = McpServer::http(url.clone(), None);
                if let McpServer::Http { auth: slot, .. } = &mut server {
                    *slot = Some(auth.auth.clone());
                }
                server
            }
            Server::Stdio { program, args, env } => {
                let mut command = StdioCommand::new(program, args);
                command.env = env
                    .iter()
                    .map(|(key, value)| (key.clone(), EnvValue::Value(value.clone())))
                    .collect();
                McpServer::Stdio(command)
            }
        }
    }

    pub(crate) fn endpoint(&self) -> Endpoint {
        brain_tools::endpoint_of(&self.config(), None)
    }

    /// The tenant's authorization for a protected server, its secrets read now (as
    /// `ToolHost` reads them at call time).
    pub(crate) fn authorization(&self) -> anyhow::Result<Option<Authorization>> {
        let Server::Protected { auth, .. } = self else {
            return Ok(None);
        };
        let grant = brain_tools::grant_of(&auth.auth, |variable| auth.read(variable))
            .map_err(|error| anyhow::anyhow!("the binding's auth: {error}"))?;
        Ok(Some(Authorization::new(TENANT, grant)))
    }
}

/// A host built from a server's tools.
#[derive(Debug)]
pub(crate) struct Bound {
    pub(crate) host: ToolHost,
    /// The server's tool name -> the binding's name.
    pub(crate) names: HashMap<String, String>,
    /// Tools whose binding did not load, with why.
    pub(crate) dropped: Vec<(String, String)>,
}

impl Bound {
    /// The binding name of a server tool.
    pub(crate) fn name_of(&self, mcp_tool: &str) -> anyhow::Result<&str> {
        self.names
            .get(mcp_tool)
            .map(String::as_str)
            .with_context(|| format!("the server does not list a usable tool {mcp_tool:?}"))
    }

    /// Runs one call through the host, collecting its events.
    pub(crate) async fn call(&self, call_id: &str, mcp_tool: &str, arguments: Value) -> Called {
        let name = self
            .names
            .get(mcp_tool)
            .cloned()
            .unwrap_or_else(|| mcp_tool.to_owned());
        self.call_binding(call_id, &name, arguments, CancellationToken::new())
            .await
    }

    /// Runs one call of a binding (by its own name), with a cancellation token.
    pub(crate) async fn call_binding(
        &self,
        call_id: &str,
        binding: &str,
        arguments: Value,
        cancel: CancellationToken,
    ) -> Called {
        let sink = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let scope = CallScope::new(TENANT, "conformance-session", call_id);
        let result = self
            .host
            .call(scope.clone(), binding, arguments)
            .cancel(cancel)
            .sink(sink.clone())
            .await;
        let events = std::mem::take(
            &mut *sink
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        Called { result, events }
    }
}

/// One call's events: the progress and the result, in the order the sink got them.
#[derive(Debug)]
pub(crate) struct Called {
    pub(crate) result: ResultEvent,
    pub(crate) events: Vec<ToolEvent>,
}

impl Called {
    /// Why the call failed, or `None` when it returned a result without `is_error`.
    pub(crate) fn failure(&self) -> Option<String> {
        if !self.result.is_error {
            return None;
        }
        Some(match &self.result.error {
            Some(error) => format!("{}: {}", error.kind.as_str(), error.message),
            None => "is_error without an error object".to_owned(),
        })
    }

    /// Fails unless the call returned a result without `is_error`.
    pub(crate) fn ok(&self) -> anyhow::Result<&ResultEvent> {
        match self.failure() {
            None => Ok(&self.result),
            Some(why) => anyhow::bail!("{} failed: {why}", self.result.header.tool),
        }
    }
}

/// Lists the server's tools within the discovery deadline.
pub(crate) async fn discover(client: &McpClient, server: &Server) -> anyhow::Result<Discovery> {
    let mut request = DiscoveryRequest::new(server.endpoint(), DISCOVERY_TIMEOUT);
    if let Some(authorization) = server.authorization()? {
        request = request.authorization(authorization);
    }
    client.discover(request).await.map_err(|error| {
        anyhow::anyhow!(
            "discovery failed ({}, {}): {error}",
            error.kind().as_str(),
            error.delivery().as_str()
        )
    })
}

/// Options for [`bind`].
#[derive(Debug, Default)]
pub(crate) struct BindOptions {
    /// `timeout_seconds` for every binding (default 20 s: under the suite's 30 s).
    pub(crate) timeout_seconds: Option<u64>,
    /// Per server tool: `timeout_seconds` and `max_output_bytes` overrides.
    pub(crate) limits: Vec<(String, Option<u64>, Option<u64>)>,
    /// Extra bindings (binding name, server tool name, input schema): tools the server
    /// may not have, to see what it answers.
    pub(crate) extra: Vec<(String, String, Value)>,
}

/// Turns every listed tool into a binding (as `mcp-tools` prints them) and builds a host
/// on the shared client. A tool whose binding does not load (for example a schema with
/// a `$ref` to a URL) is dropped and reported, never fetched.
pub(crate) fn bind(
    client: &McpClient,
    server: &Server,
    tools: &[DiscoveredTool],
    options: &BindOptions,
) -> anyhow::Result<Bound> {
    let config = server.config();
    let tenants = [TENANT.to_owned()];
    let chosen: Vec<&DiscoveredTool> = tools.iter().collect();
    let mut bindings = brain_tools::bind_discovered(&chosen, &config, &tenants).bindings;
    for (name, mcp_tool, schema) in &options.extra {
        let schema = schema.as_object().cloned().unwrap_or_default();
        let target = Target::Mcp(McpTarget::new(config.clone(), mcp_tool.clone()));
        bindings.push(ToolBinding::new(
            name.clone(),
            schema,
            tenants.to_vec(),
            target,
        ));
    }
    let mut names = HashMap::new();
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for mut binding in bindings {
        let mcp_tool = binding
            .mcp()
            .map(|mcp| mcp.mcp_tool.clone())
            .unwrap_or_default();
        binding.timeout_seconds = options.timeout_seconds.unwrap_or(20);
        if let Some((_, seconds, bytes)) =
            options.limits.iter().find(|(tool, _, _)| *tool == mcp_tool)
        {
            binding.timeout_seconds = seconds.unwrap_or(binding.timeout_seconds);
            binding.max_output_bytes = bytes.unwrap_or(binding.max_output_bytes);
        }
        let binding = serde_json::to_value(&binding)?;
        match HostConfig::from_json_value_with_env(&json!({ "tools": [binding] }), |_| true) {
            Ok(_) => {
                names
                    .entry(mcp_tool)
                    .or_insert_with(|| binding["name"].as_str().unwrap_or_default().to_owned());
                kept.push(binding);
            }
            Err(errors) => dropped.push((mcp_tool, errors.to_string())),
        }
    }
    let loaded = HostConfig::from_json_value_with_env(&json!({ "tools": kept }), |_| true)
        .map_err(|errors| anyhow::anyhow!("the bindings do not load together: {errors}"))?;
    let mut builder = ToolHost::builder(loaded.config).client(client.clone());
    if let Server::Protected { auth, .. } = server {
        // The secrets the `auth` objects name, as a host's environment would hold them.
        let auth = auth.clone();
        builder = builder.token_source(move |variable| auth.read(variable));
    }
    let host = builder.build().context("building the tool host")?;
    Ok(Bound {
        host,
        names,
        dropped,
    })
}

/// Arguments that satisfy a tool's `required` list with placeholder values by type.
pub(crate) fn placeholder_arguments(schema: &Map<String, Value>) -> Value {
    let mut arguments = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let property = properties.and_then(|p| p.get(name));
        let kind = property
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("string");
        let value = match property
            .and_then(|p| p.get("enum"))
            .and_then(Value::as_array)
            .and_then(|values| values.first())
        {
            Some(first) => first.clone(),
            None => match kind {
                "integer" | "number" => json!(1),
                "boolean" => json!(true),
                "object" => json!({}),
                "array" => json!([]),
                "null" => Value::Null,
                _ => json!("conformance"),
            },
        };
        arguments.insert(name.to_owned(), value);
    }
    Value::Object(arguments)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_follow_types_and_enums() {
        let schema = json!({
            "type": "object",
            "properties": {
                "s": {"type": "string"}, "n": {"type": "number"}, "b": {"type": "boolean"},
                "e": {"type": "string", "enum": ["x", "y"]}, "o": {"type": "string"}
            },
            "required": ["s", "n", "b", "e"]
        });
        let arguments = placeholder_arguments(schema.as_object().unwrap());
        assert_eq!(
            arguments,
            json!({"s": "conformance", "n": 1, "b": true, "e": "x"})
        );
    }
}
