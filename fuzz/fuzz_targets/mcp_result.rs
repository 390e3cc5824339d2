//! Any JSON as an MCP `CallToolResult`: conversion never panics, and the events it makes
//! round-trip through JSON lines.
#![no_main]

use brain_tools_events::{CallHeader, McpResult, ToolEvent};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let converted = McpResult::from_value(&value);
    let event = ToolEvent::result(CallHeader::new("t", "s", "c", "tool"), converted.is_error, converted.content);
    let line = event.to_json_line();
    assert!(!line.contains('\n'));
    let back = ToolEvent::from_json_line(&line).expect("an event line parses");
    assert_eq!(back.to_json_line(), line);
});
