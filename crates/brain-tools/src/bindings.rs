//! Bindings from discovered tools: what `mcp-tools` prints for the host config.

use std::collections::HashSet;

use brain_mcp_transport::{DiscoveredTool, Endpoint, Secret, StdioEndpoint};
use brain_tools_config::{McpServer, McpTarget, Target, ToolBinding};

/// Bindings for discovered tools, and the tools that had to be renamed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Bound {
    /// One binding per tool, in the given order, with the spec's defaults.
    pub bindings: Vec<ToolBinding>,
    /// `(tool name on the server, binding name)` for each tool whose name is not a valid,
    /// unique binding name.
    pub renamed: Vec<(String, String)>,
}

/// Binds discovered tools of one server for the given tenants. Schemas are copied
/// verbatim; a tool whose name does not match `^[A-Za-z0-9_-]{1,64}$` (or repeats one)
/// gets a cleaned, unique binding name.
pub fn bind_discovered(tools: &[&DiscoveredTool], server: &McpServer, tenants: &[String]) -> Bound {
    let mut taken = HashSet::new();
    let mut renamed = Vec::new();
    let bindings = tools
        .iter()
        .map(|tool| {
            let name = binding_name(&tool.name, &mut taken);
            if name != tool.name {
                renamed.push((tool.name.clone(), name.clone()));
            }
            let mut binding = ToolBinding::new(
                name,
                tool.input_schema.clone(),
                tenants.to_vec(),
                Target::Mcp(McpTarget::new(server.clone(), tool.name.clone())),
            );
            binding.description = tool.description.clone().unwrap_or_default();
            binding.output_schema = tool.output_schema.clone();
            binding
        })
        .collect();
    Bound { bindings, renamed }
}

/// Where an MCP binding's server is, as the transport reaches it, with the bearer
/// (already read from the binding's `token_env`) for an HTTP server.
pub fn endpoint_of(server: &McpServer, bearer: Option<Secret>) -> Endpoint {
    match server {
        McpServer::Stdio(command) => {
            let mut endpoint = StdioEndpoint::new(&command.program, &command.args);
            for (key, value) in &command.env {
                endpoint = endpoint.env(key, value);
            }
            if let Some(cwd) = &command.cwd {
                endpoint = endpoint.cwd(cwd);
            }
            Endpoint::Stdio(endpoint)
        }
        McpServer::Http { url, .. } => Endpoint::http(url.clone(), bearer),
        // A kind of server this version does not know: an endpoint no call can open.
        _ => Endpoint::http(String::new(), None),
    }
}

/// A binding name the config accepts: `^[A-Za-z0-9_-]{1,64}$`, unique among `taken`.
fn binding_name(tool: &str, taken: &mut HashSet<String>) -> String {
    let mut name: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        name.push_str("tool");
    }
    let base = name.clone();
    let mut n = 2;
    while !taken.insert(name.clone()) {
        let suffix = format!("_{n}");
        name = format!("{}{suffix}", &base[..base.len().min(64 - suffix.len())]);
        n += 1;
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cleaned_and_unique() {
        let mut taken = HashSet::new();
        assert_eq!(binding_name("search", &mut taken), "search");
        assert_eq!(binding_name("search", &mut taken), "search_2");
        assert_eq!(
            binding_name("github.search/v2", &mut taken),
            "github_search_v2"
        );
        assert_eq!(binding_name("", &mut taken), "tool");
        let long = "x".repeat(80);
        let first = binding_name(&long, &mut taken);
        let second = binding_name(&long, &mut taken);
        assert_eq!((first.len(), second.len()), (64, 64));
        assert!(second.ends_with("_2"));
    }
}
