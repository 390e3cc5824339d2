//! What a server sends, before rmcp (or anything else) reads it: the server's secrets
//! hidden (so a server that echoes its token back reaches no result, progress message,
//! error or log line with it), and answers whose shape would cost memory out of all
//! proportion to their bytes refused (a result of 600,000 tiny content blocks, a listing
//! of endless tiny tools). Both HTTP and stdio pass every message through here.

use std::{borrow::Cow, fmt};

use serde::{
    Deserialize, Deserializer,
    de::{IgnoredAny, MapAccess, SeqAccess, Visitor},
};

use crate::{
    api::{MAX_CONTENT_BLOCKS, MAX_LISTED_TOOLS},
    call_state::{CallState, Kind},
    secret::Redactor,
};

/// What a message is expected to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expect {
    /// A `tools/call` with this byte budget: its `result.content` and the number of JSON
    /// values in it are bounded.
    Call { budget: usize },
    /// A `tasks/get` of a call's task with the call's byte budget: the result it may
    /// carry (`result.result.content`) and the number of JSON values are bounded as a
    /// call's.
    Poll { budget: usize },
    /// A `tools/list` page: its `result.tools` is counted.
    List,
    /// Anything else.
    Other,
}

/// What the answer to a call's request is expected to be: the call's result, or one
/// `tasks/get` of its task; both bounded by the call's budget.
pub(crate) fn expect_of(call: &CallState) -> Expect {
    let budget = call.budget();
    match call.kind() {
        Kind::Call => Expect::Call { budget },
        Kind::Poll => Expect::Poll { budget },
    }
}

/// Values (numbers, strings, objects, ...) a JSON document may hold per byte of budget:
/// one per 16 bytes, so that a result's size in memory stays a small multiple of the
/// budget however it is shaped (a value costs tens of bytes once parsed).
const BYTES_PER_VALUE: usize = 16;
/// The fewest values any answer may hold, whatever its budget.
const MIN_VALUES: usize = 4096;
/// Values one listing page may hold.
const MAX_PAGE_VALUES: usize = 1 << 20;
/// Values any other message may hold (a handshake's answer, a notification outside a
/// call, a server's request): a real one holds some hundreds.
const MAX_OTHER_VALUES: usize = 1 << 16;

/// A message refused before it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// A result with more than [`MAX_CONTENT_BLOCKS`] content blocks.
    Blocks,
    /// A page that brings the listing past [`MAX_LISTED_TOOLS`] tools.
    Tools,
    /// A message with more JSON values than its bound allows (a call's budget, a listing
    /// page's, any other message's); `answer`: it was a response (`result` or `error`),
    /// not a notification or a request.
    Values { answer: bool },
}

/// Checks one message (its JSON text): secrets hidden, shape bounded (see [`shape`]).
pub(crate) fn inspect<'t>(
    redactor: &Redactor,
    json: &'t str,
    expect: Expect,
    listed: usize,
) -> Result<(Cow<'t, str>, usize), Refused> {
    let tools = shape(json, expect, listed)?;
    if matches!(expect, Expect::Poll { .. })
        && let Some(read) = poll_answer(json)
    {
        return Ok((Cow::Owned(redactor.json(&read).into_owned()), tools));
    }
    if expect == Expect::List
        && let Some(kept) = keep_task_support(json)
    {
        return Ok((Cow::Owned(redactor.json(&kept).into_owned()), tools));
    }
    Ok((redactor.json(json), tools))
}

/// An answer to `tasks/get` whose result says `"resultType": "task"`, read as the
/// `"complete"` the extension requires of it (SEP-2663: "MUST be set to complete"): two of
/// the extension's own examples (a failed task, a completed one with `isError`) show
/// `"task"` there, and rmcp would read such an answer as a new task handle, losing its
/// result. `None` (the usual case: nothing is parsed unless the text says `"task"`) when
/// there is nothing to change.
pub(crate) fn poll_answer(json: &str) -> Option<String> {
    use serde_json::Value;

    if !json.contains("\"task\"") {
        return None;
    }
    let mut message: Value = serde_json::from_str(json).ok()?;
    let kind = message.get_mut("result")?.get_mut("resultType")?;
    if kind.as_str() != Some("task") {
        return None;
    }
    *kind = Value::from("complete");
    Some(message.to_string())
}

/// Where a listed tool's `execution.taskSupport` is kept for `protocol/list.rs`: in the
/// tool's `_meta`, under this key.
pub(crate) const TASK_SUPPORT_META: &str = "brain.dev/taskSupport";

/// rmcp 3.11's `Tool` has no `execution` field, so a tool's `execution.taskSupport` would
/// be lost when rmcp reads a `tools/list` page; its `_meta` is kept. The page (one
/// JSON-RPC message) comes back with each such tool's value copied into its `_meta`
/// under [`TASK_SUPPORT_META`], or `None` when no tool declares one (the usual case:
/// nothing is parsed unless the text holds `"execution"`).
pub(crate) fn keep_task_support(json: &str) -> Option<String> {
    use serde_json::{Map, Value};

    if !json.contains("\"execution\"") {
        return None;
    }
    let mut message: Value = serde_json::from_str(json).ok()?;
    let tools = message
        .get_mut("result")?
        .get_mut("tools")?
        .as_array_mut()?;
    let mut kept = false;
    for tool in tools {
        let Some(support) = tool
            .pointer("/execution/taskSupport")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            continue;
        };
        let Some(tool) = tool.as_object_mut() else {
            continue;
        };
        let meta = tool
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(TASK_SUPPORT_META.to_owned(), Value::String(support));
            kept = true;
        }
    }
    kept.then(|| message.to_string())
}

/// Bounds the shape of an answer: a call's result holds at most [`MAX_CONTENT_BLOCKS`]
/// blocks; a listing at most [`MAX_LISTED_TOOLS`] tools, `listed` of them before this
/// page. Returns the page's own count of tools.
pub(crate) fn shape(json: &str, expect: Expect, listed: usize) -> Result<usize, Refused> {
    match expect {
        Expect::Call { budget } | Expect::Poll { budget } => {
            let values = (budget / BYTES_PER_VALUE).max(MIN_VALUES);
            let blocks = match expect {
                Expect::Poll { .. } => result_items(json, &["result", "content"]),
                _ => result_items(json, &["content"]),
            };
            if blocks > MAX_CONTENT_BLOCKS {
                return Err(Refused::Blocks);
            }
            bounded(json, values)?;
            Ok(0)
        }
        Expect::List => {
            let tools = result_items(json, &["tools"]);
            if listed.saturating_add(tools) > MAX_LISTED_TOOLS {
                return Err(Refused::Tools);
            }
            bounded(json, MAX_PAGE_VALUES)?;
            Ok(tools)
        }
        Expect::Other => bounded(json, MAX_OTHER_VALUES).map(|()| 0),
    }
}

/// At most `limit` JSON values, else refused (saying whether it was a response).
fn bounded(json: &str, limit: usize) -> Result<(), Refused> {
    if within_values(json, limit) {
        Ok(())
    } else {
        Err(Refused::Values {
            answer: is_response(json),
        })
    }
}

/// Whether a JSON-RPC message is a response (it has `result` or `error`, no `method`).
/// Its values are walked, never built.
fn is_response(json: &str) -> bool {
    #[derive(Deserialize)]
    struct Envelope {
        result: Option<IgnoredAny>,
        error: Option<IgnoredAny>,
        method: Option<IgnoredAny>,
    }
    serde_json::from_str::<Envelope>(json).is_ok_and(|envelope| {
        (envelope.result.is_some() || envelope.error.is_some()) && envelope.method.is_none()
    })
}

/// Whether a JSON document holds at most `limit` values (counted without building them;
/// the count stops at the limit). Text that is not JSON passes: it is refused elsewhere.
pub(crate) fn within_values(json: &str, limit: usize) -> bool {
    use std::cell::Cell;

    struct Values<'c> {
        seen: &'c Cell<usize>,
        limit: usize,
    }

    impl Values<'_> {
        fn bump<E: serde::de::Error>(&self) -> Result<(), E> {
            let seen = self.seen.get() + 1;
            self.seen.set(seen);
            if seen > self.limit {
                return Err(E::custom("too many values"));
            }
            Ok(())
        }
    }

    impl<'de> serde::de::DeserializeSeed<'de> for Values<'_> {
        type Value = ();
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
            deserializer.deserialize_any(self)
        }
    }

    impl<'de> Visitor<'de> for Values<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("JSON")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            self.bump()?;
            while seq
                .next_element_seed(Values {
                    seen: self.seen,
                    limit: self.limit,
                })?
                .is_some()
            {}
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            self.bump()?;
            while map.next_key::<IgnoredAny>()?.is_some() {
                map.next_value_seed(Values {
                    seen: self.seen,
                    limit: self.limit,
                })?;
            }
            Ok(())
        }
        fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<(), E> {
            self.bump()
        }
        fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<(), E> {
            self.bump()
        }
        fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<(), E> {
            self.bump()
        }
        fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<(), E> {
            self.bump()
        }
        fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<(), E> {
            self.bump()
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
            self.bump()
        }
    }

    let seen = Cell::new(0);
    let mut deserializer = serde_json::Deserializer::from_str(json);
    let counted =
        serde::de::DeserializeSeed::deserialize(Values { seen: &seen, limit }, &mut deserializer);
    counted.is_ok() || seen.get() <= limit
}

/// How many items the array at `result.<path>` of a JSON-RPC message holds (0 when there
/// is none, or the text is not such a message), counted without building them: `["tools"]`
/// for a listing, `["content"]` for a call's result, `["result", "content"]` for the
/// result a finished task carries.
pub(crate) fn result_items(json: &str, path: &'static [&'static str]) -> usize {
    struct Envelope(usize);
    struct EnvelopeVisitor(&'static [&'static str]);
    struct Count(usize);
    /// Counts the items of the array at `path` inside whatever value it reads (at the
    /// end of the path: the value itself); 0 for anything else.
    struct At(&'static [&'static str]);

    impl<'de> serde::de::DeserializeSeed<'de> for At {
        type Value = Count;
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Count, D::Error> {
            deserializer.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for At {
        type Value = Count;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("anything")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Count, A::Error> {
            let mut count = 0;
            while seq.next_element::<IgnoredAny>()?.is_some() {
                count += 1;
            }
            Ok(Count(if self.0.is_empty() { count } else { 0 }))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Count, A::Error> {
            let mut count = 0usize;
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                // A repeated key counts every time: whichever one a parser keeps, it
                // is bounded.
                match self.0.split_first() {
                    Some((first, rest)) if key == *first => {
                        count = count.saturating_add(map.next_value_seed(At(rest))?.0);
                    }
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(Count(count))
        }
        fn visit_bool<E>(self, _: bool) -> Result<Count, E> {
            Ok(Count(0))
        }
        fn visit_i64<E>(self, _: i64) -> Result<Count, E> {
            Ok(Count(0))
        }
        fn visit_u64<E>(self, _: u64) -> Result<Count, E> {
            Ok(Count(0))
        }
        fn visit_f64<E>(self, _: f64) -> Result<Count, E> {
            Ok(Count(0))
        }
        fn visit_str<E>(self, _: &str) -> Result<Count, E> {
            Ok(Count(0))
        }
        fn visit_unit<E>(self) -> Result<Count, E> {
            Ok(Count(0))
        }
    }

    impl<'de> Visitor<'de> for EnvelopeVisitor {
        type Value = Envelope;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON-RPC message")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope, A::Error> {
            let mut count = 0usize;
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                if key == "result" {
                    count = count.saturating_add(
                        map.next_value_seed(At(self.0))
                            .map(|result| result.0)
                            .unwrap_or(0),
                    );
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(Envelope(count))
        }
    }

    let mut deserializer = serde_json::Deserializer::from_str(json);
    deserializer
        .deserialize_map(EnvelopeVisitor(path))
        .map_or(0, |envelope| envelope.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_support_is_kept_where_rmcp_keeps_it() {
        use serde_json::{Value, json};
        let page = |tools: Value| {
            json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}).to_string()
        };
        let schema = json!({"type": "object"});
        // (tools on the page, what each tool's _meta holds afterwards; None: the page is
        // passed on as it came)
        let cases: Vec<(Value, Option<Vec<Value>>)> = vec![
            (json!([{"name": "a", "inputSchema": schema}]), None),
            (
                json!([{"name": "a", "inputSchema": schema, "execution": {}}]),
                None,
            ),
            (
                json!([
                    {"name": "a", "inputSchema": schema, "execution": {"taskSupport": "required"}},
                    {"name": "b", "inputSchema": schema, "execution": {"taskSupport": "optional"},
                     "_meta": {"x": 1}},
                    {"name": "c", "inputSchema": schema}
                ]),
                Some(vec![
                    json!({TASK_SUPPORT_META: "required"}),
                    json!({"x": 1, TASK_SUPPORT_META: "optional"}),
                    Value::Null,
                ]),
            ),
            // A _meta that is not an object is left alone.
            (
                json!([{"name": "a", "inputSchema": schema, "_meta": 5,
                        "execution": {"taskSupport": "required"}}]),
                None,
            ),
        ];
        for (tools, expected) in cases {
            let kept = keep_task_support(&page(tools.clone()));
            match (kept, expected) {
                (None, None) => {}
                (Some(kept), Some(metas)) => {
                    let kept: Value = serde_json::from_str(&kept).unwrap();
                    let got: Vec<Value> = kept["result"]["tools"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|tool| tool.get("_meta").cloned().unwrap_or(Value::Null))
                        .collect();
                    assert_eq!(got, metas, "{tools}");
                }
                (kept, expected) => panic!("{tools}: {kept:?}, expected {expected:?}"),
            }
        }
        // Not JSON, or not a listing: passed on.
        assert_eq!(keep_task_support("{\"execution\": "), None);
        assert_eq!(keep_task_support(r#"{"result": {"execution": 1}}"#), None);
    }

    use serde_json::json;

    #[test]
    fn a_poll_answer_tagged_task_is_read_as_complete() {
        let answer = |kind: &str| {
            json!({"jsonrpc": "2.0", "id": 3, "result": {"resultType": kind, "taskId": "t",
                "status": "failed", "error": {"code": -32603, "message": "task"}}})
            .to_string()
        };
        let read: serde_json::Value =
            serde_json::from_str(&poll_answer(&answer("task")).unwrap()).unwrap();
        assert_eq!(read["result"]["resultType"], "complete");
        assert_eq!(read["result"]["error"]["message"], "task");
        for untouched in [
            answer("complete"),
            json!({"jsonrpc": "2.0", "id": 3, "result": {"taskId": "task"}}).to_string(),
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": 1, "message": "task"}}).to_string(),
            "\"task\" not json".to_owned(),
        ] {
            assert_eq!(poll_answer(&untouched), None, "{untouched}");
        }
        // Through the ingress: only a poll's answer is read so.
        let redactor = Redactor::default();
        let poll = Expect::Poll { budget: 1 << 20 };
        let tagged = answer("task");
        let (text, _) = inspect(&redactor, &tagged, poll, 0).unwrap();
        assert!(text.contains("\"resultType\":\"complete\""), "{text}");
        let (text, _) = inspect(&redactor, &tagged, CALL, 0).unwrap();
        assert!(text.contains("\"resultType\":\"task\""), "{text}");
    }

    #[test]
    fn result_items_are_counted_without_being_built() {
        let blocks = |n: usize| {
            json!({"jsonrpc": "2.0", "id": 1, "result": {
                "structuredContent": {"content": [1, 2, 3]},
                "content": vec![json!({"type": "text", "text": "x"}); n],
            }})
            .to_string()
        };
        const CONTENT: &[&str] = &["content"];
        const TOOLS: &[&str] = &["tools"];
        // A finished task's `tasks/get` answer carries the call's result one level down.
        const TASK_CONTENT: &[&str] = &["result", "content"];
        let task = |result: serde_json::Value| {
            json!({"jsonrpc": "2.0", "id": 1, "result": {
                "resultType": "complete", "taskId": "t", "status": "completed",
                "content": [1], "result": result,
            }})
            .to_string()
        };
        let cases = [
            (blocks(0), CONTENT, 0),
            (blocks(3), CONTENT, 3),
            (blocks(3), TOOLS, 0),
            (
                json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{}, {}], "nextCursor": "c"}})
                    .to_string(),
                TOOLS,
                2,
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1, "result": {"content": "x"}}).to_string(),
                CONTENT,
                0,
            ),
            (json!({"jsonrpc": "2.0", "id": 1, "result": 5}).to_string(), CONTENT, 0),
            (json!({"jsonrpc": "2.0", "id": 1, "result": []}).to_string(), CONTENT, 0),
            ("not json".to_owned(), CONTENT, 0),
            (task(json!({"content": [{}, {}, {}, {}]})), TASK_CONTENT, 4),
            (task(json!({"content": [{}, {}, {}, {}]})), CONTENT, 1),
            (task(json!("x")), TASK_CONTENT, 0),
            (task(json!([[1, 2]])), TASK_CONTENT, 0),
            (blocks(3), TASK_CONTENT, 0),
        ];
        for (text, path, count) in cases {
            assert_eq!(result_items(&text, path), count, "{text} {path:?}");
        }
    }

    const CALL: Expect = Expect::Call { budget: 1 << 20 };

    #[test]
    fn values_are_counted_up_to_the_limit() {
        let zeros = |n: usize| format!("[{}]", vec!["0"; n].join(","));
        let cases = [
            (zeros(9), 10, true),
            (zeros(10), 10, false),
            (r#"{"a":{"b":[1,2]}}"#.to_owned(), 5, true),
            (r#"{"a":{"b":[1,2]}}"#.to_owned(), 4, false),
            ("not json".to_owned(), 1, true),
        ];
        for (json, limit, within) in cases {
            assert_eq!(within_values(&json, limit), within, "{json} {limit}");
        }
    }

    #[test]
    fn a_result_of_many_values_is_refused_by_its_budget() {
        let redactor = Redactor::default();
        let structured = |n: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[],"structuredContent":[{}]}}}}"#,
                vec!["0"; n].join(",")
            )
        };
        let budget = 160_000;
        let fits = Expect::Call { budget };
        assert!(inspect(&redactor, &structured(9_000), fits, 0).is_ok());
        assert_eq!(
            inspect(&redactor, &structured(10_001), fits, 0).err(),
            Some(Refused::Values { answer: true })
        );
        // The same values in a notification: not an answer.
        let notification = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"x":[{}]}}}}"#,
            vec!["0"; 10_001].join(",")
        );
        assert_eq!(
            inspect(&redactor, &notification, fits, 0).err(),
            Some(Refused::Values { answer: false })
        );
        // Duplicate keys count every time.
        let twice = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{}],"content":[]}}}}"#,
            vec![r#"{"type":"text","text":""}"#; 600].join(",")
        );
        assert_eq!(result_items(&twice, &["content"]), 600);
        let thrice = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[{0}],"content":[{0}]}}}}"#,
            vec![r#"{"type":"text","text":""}"#; 600].join(",")
        );
        assert_eq!(
            inspect(&redactor, &thrice, CALL, 0).err(),
            Some(Refused::Blocks)
        );
        // A finished task's result, in a `tasks/get` answer, is bounded as a call's.
        let task = |blocks: usize| {
            json!({"jsonrpc": "2.0", "id": 1, "result": {
                "resultType": "complete", "taskId": "t", "status": "completed",
                "createdAt": "", "lastUpdatedAt": "", "ttlMs": null,
                "result": {"content": vec![json!({"type": "text", "text": ""}); blocks]},
            }})
            .to_string()
        };
        let poll = Expect::Poll { budget: 1 << 20 };
        assert!(inspect(&redactor, &task(MAX_CONTENT_BLOCKS), poll, 0).is_ok());
        assert_eq!(
            inspect(&redactor, &task(MAX_CONTENT_BLOCKS + 1), poll, 0).err(),
            Some(Refused::Blocks)
        );
        assert_eq!(
            inspect(&redactor, &structured(10_001), Expect::Poll { budget }, 0).err(),
            Some(Refused::Values { answer: true })
        );
    }

    #[test]
    fn answers_past_the_bounds_are_refused() {
        let redactor = Redactor::default();
        let content = |n: usize| {
            json!({"jsonrpc": "2.0", "id": 1, "result": {
                "content": vec![json!({"type": "text", "text": ""}); n]}})
            .to_string()
        };
        assert!(inspect(&redactor, &content(MAX_CONTENT_BLOCKS), CALL, 0).is_ok());
        assert_eq!(
            inspect(&redactor, &content(MAX_CONTENT_BLOCKS + 1), CALL, 0).err(),
            Some(Refused::Blocks)
        );
        // Other messages are not bounded by their blocks, but by their values: a
        // handshake answer of millions of zeros is refused.
        assert!(
            inspect(
                &redactor,
                &content(MAX_CONTENT_BLOCKS + 1),
                Expect::Other,
                0
            )
            .is_ok()
        );
        let huge_handshake = format!(
            r#"{{"jsonrpc":"2.0","id":0,"result":{{"capabilities":{{"experimental":{{"x":[{}]}}}}}}}}"#,
            vec!["0"; MAX_OTHER_VALUES].join(",")
        );
        assert_eq!(
            inspect(&redactor, &huge_handshake, Expect::Other, 0).err(),
            Some(Refused::Values { answer: true })
        );
        let page =
            json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [{}, {}, {}]}}).to_string();
        assert_eq!(
            inspect(&redactor, &page, Expect::List, 10).map(|(_, n)| n),
            Ok(3)
        );
        assert_eq!(
            inspect(&redactor, &page, Expect::List, MAX_LISTED_TOOLS - 2).err(),
            Some(Refused::Tools)
        );
    }

    #[test]
    fn secrets_are_hidden_in_what_passes() {
        let redactor = Redactor::new(["sk-echoed-0123456789"]);
        let text = json!({"jsonrpc": "2.0", "method": "notifications/message",
            "params": {"level": "info", "data": "token sk-echoed-0123456789"}})
        .to_string();
        let (passed, _) = inspect(&redactor, &text, Expect::Other, 0).unwrap();
        assert!(!passed.contains("sk-echoed"), "{passed}");
        assert!(passed.contains("<redacted>"));
    }
}
