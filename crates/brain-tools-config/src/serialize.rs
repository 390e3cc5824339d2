//! Bindings back to the spec's JSON shape, fields in the spec's order:
//! name, description, input_schema, output_schema, url (or command), mcp_tool, token_env,
//! tenants, timeout_seconds, max_output_bytes, inspect_session.

use serde::{Serialize, Serializer, ser::SerializeMap};

use crate::binding::{HostConfig, McpServer, StdioCommand, Target, ToolBinding};

impl Serialize for ToolBinding {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("description", &self.description)?;
        map.serialize_entry("input_schema", &self.input_schema)?;
        if let Some(output_schema) = &self.output_schema {
            map.serialize_entry("output_schema", output_schema)?;
        }
        let (token_env, inspect_session) = match &self.target {
            Target::Mcp(mcp) => {
                let token_env = match &mcp.server {
                    McpServer::Http { url, token_env } => {
                        map.serialize_entry("url", url)?;
                        token_env
                    }
                    McpServer::Stdio(command) => {
                        map.serialize_entry("command", command)?;
                        &None
                    }
                };
                map.serialize_entry("mcp_tool", &mcp.mcp_tool)?;
                (token_env, None)
            }
            Target::Http(http) => {
                map.serialize_entry("url", &http.url)?;
                (&http.token_env, http.inspect_session)
            }
        };
        if let Some(token_env) = token_env {
            map.serialize_entry("token_env", token_env)?;
        }
        map.serialize_entry("tenants", &self.tenants)?;
        map.serialize_entry("timeout_seconds", &self.timeout_seconds)?;
        map.serialize_entry("max_output_bytes", &self.max_output_bytes)?;
        if let Some(inspect_session) = inspect_session {
            map.serialize_entry("inspect_session", &inspect_session)?;
        }
        map.end()
    }
}

impl Serialize for StdioCommand {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("program", &self.program)?;
        map.serialize_entry("args", &self.args)?;
        if !self.env.is_empty() {
            let env: serde_json::Map<String, serde_json::Value> = self
                .env
                .iter()
                .map(|(key, value)| (key.clone(), value.clone().into()))
                .collect();
            map.serialize_entry("env", &env)?;
        }
        if let Some(cwd) = &self.cwd {
            map.serialize_entry("cwd", cwd)?;
        }
        map.end()
    }
}

impl Serialize for HostConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1))?;
        map.serialize_entry("tools", &self.tools)?;
        map.end()
    }
}
