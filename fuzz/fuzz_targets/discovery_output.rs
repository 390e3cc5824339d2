//! Any JSON as a `tools/list` result: what `mcp-tools` would print never panics, and every
//! binding it prints either loads as a host config or is reported, never corrupted.
#![no_main]

use brain_mcp_transport::DiscoveredTool;
use brain_tools_config::{HostConfig, McpServer};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let Ok(tools) = DiscoveredTool::from_list_result(&value) else {
        return;
    };
    let chosen: Vec<&DiscoveredTool> = tools.iter().collect();
    let server = McpServer::http("https://mcp.example.com/mcp", Some("MCP_API_KEY".into()));
    let bound = brain_tools::bind_discovered(&chosen, &server, &["local".into()]);
    assert_eq!(bound.bindings.len(), tools.len());
    let printed = serde_json::to_string_pretty(&bound.bindings).expect("bindings serialize");
    let document = format!("{{\"tools\": {printed}}}");
    if let Ok(loaded) = HostConfig::from_json_bytes_with_env(document.as_bytes(), |_| true) {
        // Names were made valid and unique; schemas are verbatim.
        for (binding, tool) in loaded.config.tools.iter().zip(&tools) {
            assert_eq!(binding.input_schema, tool.input_schema);
            assert!(binding.name.len() <= 64);
        }
    }
});
