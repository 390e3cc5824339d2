//! What waiting for a call's result ends in, whether the call was answered at once
//! (`drive.rs`) or through a task (`task.rs`): a tool result, checked by `check_result`,
//! or a `Stop` saying why none came. Both drive and task use it; it uses neither.

use rmcp::{model::ErrorData, service::ServiceError};
use serde_json::Value;

use crate::error::classify::Failure;

/// Why waiting for a result stopped before one came.
#[derive(Debug)]
pub(crate) enum Stop {
    /// The deadline passed.
    Timeout,
    /// The caller cancelled.
    Cancelled,
    /// The response went over budget.
    Overflow,
    /// rmcp gave up (transport error, JSON-RPC error, ...).
    Failed(ServiceError),
    /// The server asked for input this client does not give.
    InputRefused(ErrorData),
    /// The server answered with something that is not a tool result: what it was.
    NotAResult(&'static str),
    /// The call's task failed with this JSON-RPC error; with its time to live (ms) when
    /// that had passed.
    TaskFailed(ErrorData, Option<u64>),
    /// The server cancelled the call's task.
    TaskCancelled,
    /// The task's time to live ended before it did.
    TaskExpired { ttl_ms: u64 },
    /// The server answered a `tasks/get` (or `tasks/update`) of the call's task with a
    /// JSON-RPC error (an unknown or expired task, say); with the task's time to live
    /// (ms) when that had passed.
    PollRefused(ErrorData, Option<u64>),
    /// A `tasks/get` failed in a way another poll would not mend (a refusing status, an
    /// answer that is not MCP).
    PollFailed(Failure),
}

/// What the answer to a call's `tools/call` is instead of a tool result.
pub(super) const NOT_AN_OBJECT: &str = "a result that is not an object";
pub(super) const TASK: &str = "a task, which the call did not ask for (it did not declare the tasks \
                    extension)";

/// Whether an answer to `tools/call` is a tool result: an object, complete (not a task,
/// not of an unknown type), with `isError` a boolean, `content` a list, and something
/// to read (`content`, `structuredContent` or `isError`). `Err` says what it is instead.
pub(crate) fn check_result(result: &Value) -> Result<(), &'static str> {
    let Some(result) = result.as_object() else {
        return Err(NOT_AN_OBJECT);
    };
    match result.get("resultType").map(|kind| kind.as_str()) {
        None | Some(Some("complete")) => {}
        Some(Some("task")) => return Err(TASK),
        Some(_) => return Err("a result of a type this client does not know"),
    }
    if result.get("isError").is_some_and(|flag| !flag.is_boolean()) {
        return Err("an isError that is neither true nor false");
    }
    if result
        .get("content")
        .is_some_and(|content| !content.is_array())
    {
        return Err("content that is not a list");
    }
    if !["content", "structuredContent", "isError"]
        .iter()
        .any(|key| result.contains_key(*key))
    {
        return Err("a result with no content");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_tool_results_pass() {
        let cases = [
            (json!({"content": []}), Ok(())),
            (
                json!({"content": [{"type": "text", "text": "x"}], "isError": true}),
                Ok(()),
            ),
            (json!({"structuredContent": {"a": 1}}), Ok(())),
            (json!({"isError": false}), Ok(())),
            (json!({"content": [], "resultType": "complete"}), Ok(())),
            (json!("x"), Err(NOT_AN_OBJECT)),
            (json!([]), Err(NOT_AN_OBJECT)),
            (json!(5), Err(NOT_AN_OBJECT)),
            (json!(null), Err(NOT_AN_OBJECT)),
            (json!({}), Err("a result with no content")),
            (json!({"_meta": {}}), Err("a result with no content")),
            (
                json!({"content": [], "isError": "yes"}),
                Err("an isError that is neither true nor false"),
            ),
            (
                json!({"content": "text"}),
                Err("content that is not a list"),
            ),
            (
                json!({"resultType": "task", "task": {"taskId": "t"}}),
                Err(TASK),
            ),
            (
                json!({"resultType": "later", "content": []}),
                Err("a result of a type this client does not know"),
            ),
        ];
        for (result, expected) in cases {
            assert_eq!(check_result(&result), expected, "{result}");
        }
    }
}
