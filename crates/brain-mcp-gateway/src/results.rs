//! A call's `tool.result` as the MCP result the caller gets: the upstream result as the
//! server sent it (through rmcp's typed model, see below), or an error result that says,
//! to the model in its text and to a program under `_meta["brain.dev/error"]`, what
//! happened and whether a retry is safe and may help.
//!
//! rmcp's server returns typed results: a block of a type its model does not know is
//! replaced by a text block that says what was left out, and fields its model lacks are
//! not passed on (docs/gateway.md lists them).

use brain_tools::{ContentBlock as Block, Delivery, ErrorKind, ResultEvent, ToolError};
use rmcp::model::{CallToolResult, ContentBlock, ResultType};
use serde_json::Value;

use crate::handler::{ERROR_META_KEY, error_object, error_result};

/// The caller's MCP result for a call's `tool.result`.
pub(crate) fn to_mcp(result: ResultEvent) -> CallToolResult {
    match (result.mcp_result, result.error) {
        (Some(raw), error) => {
            let mut passed = pass_on(raw);
            // A 2025-11-25 server sends no `resultType`; a 2026-07-28 caller must get one
            // (rmcp leaves it out for callers of older revisions).
            passed.result_type.get_or_insert(ResultType::COMPLETE);
            if let Some(error) = error {
                // A tool's own error (`isError`): its content as it came, and the error
                // object beside it.
                let meta = passed.meta.get_or_insert_with(Default::default);
                meta.0.insert(ERROR_META_KEY.to_owned(), object(&error));
            }
            passed
        }
        (None, Some(error)) => failed(&error),
        (None, None) => converted(result.content, result.is_error),
    }
}

/// The upstream result through rmcp's model: blocks of types it does not know become a
/// note in their place.
fn pass_on(mut raw: Value) -> CallToolResult {
    if let Ok(result) = serde_json::from_value::<CallToolResult>(raw.clone()) {
        return result;
    }
    if let Some(Value::Array(blocks)) = raw.get_mut("content") {
        for block in blocks.iter_mut() {
            if serde_json::from_value::<ContentBlock>(block.clone()).is_err() {
                let kind = block.get("type").and_then(Value::as_str).map_or_else(
                    || "unknown".to_owned(),
                    |kind| brain_tools::config::text::escape(kind, false),
                );
                *block = serde_json::json!({
                    "type": "text",
                    "text": format!("[a content block of type {kind} was left out: this gateway cannot pass it on]"),
                });
            }
        }
    }
    serde_json::from_value::<CallToolResult>(raw).unwrap_or_else(|_| {
        failed(&ToolError::new(
            ErrorKind::Protocol,
            Delivery::Delivered,
            "the tool's result is not a valid MCP tool result, so it is not passed on",
        ))
    })
}

/// Brain blocks (an HTTP tool's output) as MCP content.
fn converted(content: Vec<Block>, is_error: bool) -> CallToolResult {
    let mut structured = None;
    let blocks = content
        .into_iter()
        .map(|block| match block {
            Block::Text { text } => ContentBlock::text(text),
            Block::Image { mime_type, data } => ContentBlock::image(data, mime_type),
            Block::Json { value } => {
                let text = value.to_string();
                structured = Some(value);
                ContentBlock::text(text)
            }
            other => ContentBlock::text(format!("{other:?}")),
        })
        .collect();
    let mut result = if is_error {
        CallToolResult::error(blocks)
    } else {
        CallToolResult::success(blocks)
    };
    result.structured_content = structured;
    result
}

/// A call that produced no result: its message (which ends with what it means for
/// calling again), and the error object.
fn failed(error: &ToolError) -> CallToolResult {
    error_result(error.message.clone(), object(error))
}

fn object(error: &ToolError) -> Value {
    error_object(
        error.kind.as_str(),
        error.delivery.as_str(),
        error.retryable,
        &error.message,
    )
}

/// A call refused before it ran (the gateway overloaded or shutting down): retry after
/// `after` seconds.
pub(crate) fn refused(tool: &str, why: &str, after: u64) -> CallToolResult {
    let message = format!("{tool} was not called: {why}");
    let mut object = error_object("overloaded", "not_sent", true, &message);
    object["retry_after_seconds"] = after.into();
    error_result(
        format!("{message}. The tool did not run; retry after {after} s."),
        object,
    )
}
