//! The tools the official conformance suite's server scenarios call
//! (`@modelcontextprotocol/conformance`, `tools-*`, `json-schema-2020-12`, the
//! diagnostic tools of `server-stateless`), with the names, descriptions and outputs of
//! the suite's own fixture server (`examples/servers/typescript/everything-server.ts`),
//! and a tool with an argument marked `x-mcp-header` (`http-custom-header-server-validation`).
//! Listed only with `ServerOptions::conformance_tools` (`--conformance-tools`): a gateway
//! in front of the testkit serves them to the suite.
//!
//! Left out on purpose: the tools that need the server to ask its client (sampling,
//! elicitation, `input_required` rounds), to need a client capability
//! (`test_missing_capability`) or to log (`test_tool_with_logging`), which a tools-only
//! gateway cannot pass on.

use std::sync::Arc;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, JsonObject, ProgressNotificationParam,
    ResourceContents, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

/// The suite's 1x1 PNG.
const IMAGE: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// The suite's WAV (a header and one silent sample).
const AUDIO: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";
/// Pause between the progress notifications of `test_tool_with_progress`.
const PROGRESS_PAUSE: Duration = Duration::from_millis(50);

/// The tools' names, in the order they are listed.
pub(crate) const NAMES: &[&str] = &[
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_progress",
    "test_error_handling",
    "json_schema_2020_12_tool",
    "test_streaming_elicitation",
    "test_logging_tool",
    "test_custom_header",
];

/// The input schema of `json_schema_2020_12_tool`, verbatim from the suite
/// (`JSON_SCHEMA_2020_12_FIXTURE`): the scenario checks that every keyword survives
/// `tools/list`.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

fn object(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("tool schemas are JSON objects"),
    }
}

/// The suite's tools as `tools/list` shows them: name, description, input schema.
pub(crate) fn catalog() -> Vec<Tool> {
    let none = || object(json!({"type": "object", "properties": {}}));
    let tool = |name: &'static str, description: &'static str| Tool::new(name, description, none());
    vec![
        tool("test_simple_text", "Tests simple text content response"),
        tool("test_image_content", "Tests image content response"),
        tool("test_audio_content", "Tests audio content response"),
        tool(
            "test_embedded_resource",
            "Tests embedded resource content response",
        ),
        tool(
            "test_multiple_content_types",
            "Tests response with multiple content types (text, image, resource)",
        ),
        tool(
            "test_tool_with_progress",
            "Tests tool that reports progress notifications",
        ),
        tool("test_error_handling", "Tests error response handling"),
        Tool::new(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
            object(json_schema_2020_12()),
        ),
        tool(
            "test_streaming_elicitation",
            "Diagnostic tool validating response progress streams",
        ),
        tool("test_logging_tool", "Diagnostic logging validator tool"),
        // The suite's fixture has none: `http-custom-header-server-validation` needs a
        // tool with a string argument marked `x-mcp-header`, whatever its name.
        Tool::new(
            "test_custom_header",
            "Returns its region, which the caller also sends in the Mcp-Param-Region header (SEP-2243)",
            object(json!({
                "type": "object",
                "properties": {
                    "region": {"type": "string", "description": "Any text.", "x-mcp-header": "Region"}
                },
                "required": ["region"]
            })),
        ),
    ]
}

fn ok(content: Vec<ContentBlock>) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResult::success(content).into())
}

fn text(text: &str) -> Result<CallToolResponse, ErrorData> {
    ok(vec![ContentBlock::text(text)])
}

/// Answers a call of one of the suite's tools; `None` for any other name.
pub(crate) async fn call(
    name: &str,
    arguments: &JsonObject,
    cx: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, ErrorData>> {
    Some(match name {
        "test_simple_text" => text("This is a simple text response for testing."),
        "test_image_content" => ok(vec![ContentBlock::image(IMAGE, "image/png")]),
        "test_audio_content" => ok(vec![ContentBlock::audio(AUDIO, "audio/wav")]),
        "test_embedded_resource" => ok(vec![ContentBlock::resource(
            ResourceContents::text(
                "This is an embedded resource content.",
                "test://embedded-resource",
            )
            .with_mime_type("text/plain"),
        )]),
        "test_multiple_content_types" => ok(vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(IMAGE, "image/png"),
            ContentBlock::resource(
                ResourceContents::text(
                    json!({"test": "data", "value": 123}).to_string(),
                    "test://mixed-content-resource",
                )
                .with_mime_type("application/json"),
            ),
        ]),
        "test_tool_with_progress" => progress(cx).await,
        "test_error_handling" => Ok(CallToolResult::error(vec![ContentBlock::text(
            "This tool intentionally returns an error for testing",
        )])
        .into()),
        "json_schema_2020_12_tool" => text(&format!(
            "JSON Schema 2020-12 tool called with: {}",
            Value::Object(arguments.clone())
        )),
        // Nothing but a result on the response stream: no request to the client.
        "test_streaming_elicitation" => text("Streaming complete"),
        // No log message: the caller set no log level.
        "test_logging_tool" => text("Logging evaluated"),
        "test_custom_header" => match arguments.get("region").and_then(Value::as_str) {
            Some(region) => text(region),
            None => Err(ErrorData::invalid_params("region must be a string", None)),
        },
        _ => return None,
    })
}

/// Three progress notifications (0, 50, 100 of 100) under the caller's token, 50 ms
/// apart, then the token as text.
async fn progress(cx: &RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
    let token = cx.meta.get_progress_token();
    for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            tokio::time::sleep(PROGRESS_PAUSE).await;
        }
        if let Some(token) = &token {
            let param = ProgressNotificationParam::new(token.clone(), step)
                .with_total(100.0)
                .with_message(format!("Completed step {step} of 100"));
            let _ = cx.peer.notify_progress(param).await;
        }
    }
    let said = token.map_or_else(
        || "0".to_owned(),
        |token| match token.0 {
            rmcp::model::NumberOrString::String(s) => s.to_string(),
            rmcp::model::NumberOrString::Number(n) => n.to_string(),
        },
    );
    text(&said)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalog_lists_every_name_with_a_description_and_an_object_schema() {
        let tools = catalog();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, NAMES);
        for tool in &tools {
            assert!(
                tool.description.as_deref().is_some_and(|d| !d.is_empty()),
                "{}",
                tool.name
            );
            assert_eq!(tool.input_schema.get("type"), Some(&json!("object")));
        }
    }
}
