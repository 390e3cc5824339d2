//! From a server's tool list to a `ToolHost`, the way a user of `mcp-tools` does it:
//! discover, turn every tool into a binding, load the host config, build the host.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::Context as _;
use brain_mcp_transport::{DiscoveredTool, Discovery, DiscoveryRequest, Endpoint, McpClient};
use brain_tools::{CallScope, ToolHost};
use brain_tools_config::HostConfig;
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
    /// A stdio command, started per call.
    Stdio {
        program: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
}

impl Server {
    pub(crate) fn endpoint(&self) -> Endpoint {
        match self {
            Server::Http(url) => Endpoint::http(url.clone(), None),
            Server::Stdio { program, args, env } => {
                let mut endpoint = brain_mcp_transport::StdioEndpoint::new(program, args);
                for (key, value) in env {
                    endpoint = endpoint.env(key, value);
                }
                Endpoint::Stdio(endpoint)
            }
        }
    }

    /// The binding fields that say where the tool is (`url`, or `command`).
    fn location(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        match self {
            Server::Http(url) => {
                fields.insert("url".into(), json!(url));
            }
            Server::Stdio { program, args, env } => {
                let env: Map<String, Value> = env
                    .iter()
                    .map(|(key, value)| (key.clone(), json!(value)))
                    .collect();
                fields.insert(
                    "command".into(),
                    json!({"program": program, "args": args, "env": env}),
                );
            }
        }
        fields
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
        let sink = std::sync::Mutex::new(Vec::new());
        let scope = CallScope::new(TENANT, "conformance-session", call_id);
        let result = self
            .host
            .call(&scope, binding, arguments, cancel, &sink)
            .await;
        let events = sink
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
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
    client
        .discover(DiscoveryRequest::new(server.endpoint(), DISCOVERY_TIMEOUT))
        .await
        .map_err(|error| {
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
    let mut names = HashMap::new();
    let mut taken = std::collections::HashSet::new();
    let mut candidates = Vec::new();
    let timeout = options.timeout_seconds.unwrap_or(20);
    let mut add = |name: String,
                   mcp_tool: &str,
                   description: Option<&str>,
                   input: Value,
                   output: Option<Value>| {
        let mut binding = Map::new();
        binding.insert("name".into(), json!(name));
        binding.insert("description".into(), json!(description.unwrap_or_default()));
        binding.insert("input_schema".into(), input);
        if let Some(output) = output {
            binding.insert("output_schema".into(), output);
        }
        binding.extend(server.location());
        binding.insert("mcp_tool".into(), json!(mcp_tool));
        binding.insert("tenants".into(), json!([TENANT]));
        let (mut seconds, mut bytes) = (timeout, None);
        if let Some((_, t, b)) = options.limits.iter().find(|(tool, _, _)| tool == mcp_tool) {
            seconds = t.unwrap_or(seconds);
            bytes = *b;
        }
        binding.insert("timeout_seconds".into(), json!(seconds));
        if let Some(bytes) = bytes {
            binding.insert("max_output_bytes".into(), json!(bytes));
        }
        candidates.push((mcp_tool.to_owned(), name, Value::Object(binding)));
    };
    for tool in tools {
        let name = unique(binding_name(&tool.name), &mut taken);
        add(
            name,
            &tool.name,
            tool.description.as_deref(),
            Value::Object(tool.input_schema.clone()),
            tool.output_schema.clone().map(Value::Object),
        );
    }
    for (name, mcp_tool, schema) in &options.extra {
        let name = unique(binding_name(name), &mut taken);
        add(name, mcp_tool, None, schema.clone(), None);
    }
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for (mcp_tool, name, binding) in candidates {
        let one = json!({ "tools": [binding.clone()] });
        match HostConfig::from_json_value_with_env(&one, |_| true) {
            Ok(_) => {
                names.entry(mcp_tool).or_insert(name);
                kept.push(binding);
            }
            Err(errors) => dropped.push((mcp_tool, errors.to_string())),
        }
    }
    let loaded = HostConfig::from_json_value_with_env(&json!({ "tools": kept }), |_| true)
        .map_err(|errors| anyhow::anyhow!("the bindings do not load together: {errors}"))?;
    let host = ToolHost::builder(loaded.config)
        .client(client.clone())
        .build()
        .context("building the tool host")?;
    Ok(Bound {
        host,
        names,
        dropped,
    })
}

/// A binding name for a server tool: `^[A-Za-z0-9_-]{1,64}$`.
fn binding_name(tool: &str) -> String {
    let name: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    if name.is_empty() {
        "tool".to_owned()
    } else {
        name
    }
}

fn unique(name: String, taken: &mut std::collections::HashSet<String>) -> String {
    let mut candidate = name.clone();
    let mut n = 2;
    while !taken.insert(candidate.clone()) {
        candidate = format!("{name}_{n}");
        n += 1;
    }
    candidate
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
    fn binding_names_are_valid_and_unique() {
        let mut taken = std::collections::HashSet::new();
        assert_eq!(unique(binding_name("a.b c"), &mut taken), "a_b_c");
        assert_eq!(unique(binding_name("a_b_c"), &mut taken), "a_b_c_2");
        assert_eq!(binding_name(""), "tool");
    }

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
