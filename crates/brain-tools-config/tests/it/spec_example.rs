//! The binding printed in the spec parses, validates, and serializes back to the same JSON
//! (same values, same field order).

use brain_tools_config::{HostConfig, McpServer, Target};

const SPEC_EXAMPLE: &str = r#"[
  {
    "name": "search",
    "description": "Search the knowledge base.",
    "input_schema": { "type": "object", "properties": { "query": { "type": "string" } }, "required": ["query"] },
    "url": "https://YOUR_SERVER/mcp",
    "mcp_tool": "search",
    "token_env": "MCP_API_KEY",
    "tenants": ["local"],
    "timeout_seconds": 300,
    "max_output_bytes": 1048576
  }
]"#;

#[test]
fn spec_example_round_trips() {
    let bindings: serde_json::Value = serde_json::from_str(SPEC_EXAMPLE).unwrap();
    let document = serde_json::json!({ "tools": bindings });
    let loaded =
        HostConfig::from_json_value_with_env(&document, |name| name == "MCP_API_KEY").unwrap();
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);

    let binding = &loaded.config.tools[0];
    let Target::Mcp(mcp) = &binding.target else {
        panic!("an MCP binding")
    };
    assert_eq!(mcp.mcp_tool, "search");
    assert_eq!(
        mcp.server,
        McpServer::http("https://YOUR_SERVER/mcp", Some("MCP_API_KEY".into()))
    );

    let back = serde_json::to_string(&loaded.config.tools).unwrap();
    assert_eq!(back, serde_json::to_string(&bindings).unwrap());
}
