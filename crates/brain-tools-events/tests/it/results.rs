//! What the model reads of results recorded from real servers (`results/`), in each
//! `ResultContent`: nothing the server said is lost, and the bytes it takes.

use brain_tools_events::{ContentBlock, McpResult, ResultContent};
use serde_json::Value;

const SERVERS: &[&str] = &[
    "server-filesystem",
    "server-filesystem-media",
    "server-memory",
    "server-everything",
    "mcp-server-time",
    "mcp-python-sdk-peer",
    "mcp-server-calculator",
    "mcp-server-git",
    "mcp-server-sqlite",
    "dbhub",
];

/// `(tool, result)` of each recorded call of a server.
fn calls(server: &str) -> Vec<(String, Value)> {
    let path = format!(
        "{}/tests/it/results/{server}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let calls: Vec<Value> = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    calls
        .into_iter()
        .map(|call| {
            (
                call["tool"].as_str().unwrap().to_owned(),
                call["result"].clone(),
            )
        })
        .collect()
}

/// The bytes a model reads of the blocks: text as text, JSON as compact JSON, images as
/// their base64.
fn bytes(blocks: &[ContentBlock]) -> usize {
    blocks
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.len(),
            ContentBlock::Json { value } => value.to_string().len(),
            ContentBlock::Image { data, .. } => data.len(),
            _ => 0,
        })
        .sum()
}

/// The rule before `ResultContent`: the json block, and every text block but one that is
/// exactly the structured content's JSON.
fn before(result: &Value) -> usize {
    let both = McpResult::convert(result, ResultContent::Both).content;
    let structured = result.get("structuredContent");
    let copies: usize = both
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => serde_json::from_str::<Value>(text)
                .ok()
                .filter(|parsed| Some(parsed) == structured)
                .map(|_| text.len()),
            _ => None,
        })
        .sum();
    bytes(&both) - copies
}

/// Whether `text` is held by `value`: one of its strings, or the JSON of it or of one of
/// its values (written here again, apart from the crate's own, to check it).
fn contains(value: &Value, text: &str) -> bool {
    if value.as_str() == Some(text) {
        return true;
    }
    if serde_json::from_str::<Value>(text).is_ok_and(|parsed| parsed == *value) {
        return true;
    }
    match value {
        Value::Object(map) => map.values().any(|v| contains(v, text)),
        Value::Array(items) => items.iter().any(|v| contains(v, text)),
        _ => false,
    }
}

/// The bytes per server, before and in each form: the figures of docs/events.md.
#[test]
fn bytes_the_model_reads_per_server() {
    let forms = [
        ResultContent::Both,
        ResultContent::Structured,
        ResultContent::Content,
        ResultContent::Once,
    ];
    let mut table = String::from(
        "server                   calls  with both  before   both  structured  content   once\n",
    );
    let mut totals = [0usize; 6];
    for server in SERVERS {
        let calls = calls(server);
        let with_both = calls
            .iter()
            .filter(|(_, r)| {
                r.get("structuredContent").is_some_and(|s| !s.is_null())
                    && r["content"].as_array().is_some_and(|c| !c.is_empty())
            })
            .count();
        let mut row = [calls.len(), with_both, 0, 0, 0, 0];
        let mut sizes = [0usize; 5];
        for (_, result) in &calls {
            sizes[0] += before(result);
            for (i, form) in forms.iter().enumerate() {
                sizes[i + 1] += bytes(&McpResult::convert(result, *form).content);
            }
        }
        row[2..].copy_from_slice(&sizes[..4]);
        table.push_str(&format!(
            "{server:<24} {:>5} {:>10} {:>7} {:>6} {:>11} {:>8} {:>6}\n",
            row[0], row[1], sizes[0], sizes[1], sizes[2], sizes[3], sizes[4]
        ));
        for (total, size) in totals
            .iter_mut()
            .zip([sizes[0], sizes[1], sizes[2], sizes[3], sizes[4], 0])
        {
            *total += size;
        }
    }
    table.push_str(&format!(
        "{:<24} {:>5} {:>10} {:>7} {:>6} {:>11} {:>8} {:>6}\n",
        "all", "", "", totals[0], totals[1], totals[2], totals[3], totals[4]
    ));
    insta::assert_snapshot!(table);
    assert!(totals[4] < totals[0], "once reads less than before");
}

/// The strings of a JSON value, every one.
fn strings(value: &Value) -> Vec<&str> {
    match value {
        Value::String(text) => vec![text],
        Value::Object(map) => map.values().flat_map(strings).collect(),
        Value::Array(items) => items.iter().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

/// The base64 a media block of the server's carries: an image's or audio's data, a
/// resource's blob.
fn media_data(block: &Value) -> Option<&str> {
    block
        .get("data")
        .or_else(|| block.pointer("/resource/blob"))
        .and_then(Value::as_str)
}

/// Each piece once loses nothing: every text block the server sent is read, as text or
/// inside the json block the model reads; the json block is left out only when a text
/// block says the one value it wraps. Media is read once: every image the server sent is
/// read as an image block (audio and other blobs as the note that says what was left
/// out, as in every form), and the json block never repeats the base64 of a media block:
/// what the structured content held that no block carries is still there.
#[test]
fn once_loses_nothing_the_server_said() {
    for server in SERVERS {
        for (tool, result) in calls(server) {
            let read = McpResult::convert(&result, ResultContent::Once).content;
            let json = read.iter().find_map(|block| match block {
                ContentBlock::Json { value } => Some(value),
                _ => None,
            });
            let media: Vec<&str> = result["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(media_data)
                .collect();
            for block in result["content"].as_array().into_iter().flatten() {
                if let (Some("image"), Some(data)) =
                    (block["type"].as_str(), block["data"].as_str())
                {
                    assert!(
                        read.iter().any(
                            |read| matches!(read, ContentBlock::Image { data: d, .. } if d == data)
                        ),
                        "{server} {tool}: an image is not read"
                    );
                }
            }
            if let (Some(json), Some(structured)) = (json, result.get("structuredContent")) {
                let said = strings(structured);
                let kept = strings(json);
                assert!(
                    kept.iter().all(|text| !media.contains(text)),
                    "{server} {tool}: the json block repeats a media block's base64"
                );
                for text in said.iter().filter(|text| !media.contains(text)) {
                    assert!(
                        kept.contains(text),
                        "{server} {tool}: {text:?} of the structured content is not read"
                    );
                }
            }
            for block in result["content"].as_array().into_iter().flatten() {
                let Some(text) = block.get("text").and_then(Value::as_str) else {
                    continue;
                };
                let as_text = read.contains(&ContentBlock::text(text));
                assert!(
                    as_text || json.is_some_and(|value| contains(value, text)),
                    "{server} {tool}: {text:?} is not read"
                );
            }
            if let Some(structured) = result.get("structuredContent").filter(|s| !s.is_null())
                && json.is_none()
            {
                let wrapped = structured.as_object().and_then(|map| map.values().next());
                assert!(
                    wrapped.is_some_and(|value| read.iter().any(|block| matches!(
                        block,
                        ContentBlock::Text { text } if contains(value, text)
                    ))),
                    "{server} {tool}: the structured content is not read"
                );
            }
        }
    }
}

/// What the model reads, per tool, as a person would check it.
#[test]
fn what_the_model_reads_of_each_tool() {
    let mut shown = String::new();
    for server in SERVERS {
        for (tool, result) in calls(server) {
            if result.get("structuredContent").is_none_or(Value::is_null) {
                continue;
            }
            let read = McpResult::convert(&result, ResultContent::Once).content;
            let kinds: Vec<&str> = read
                .iter()
                .map(|block| match block {
                    ContentBlock::Text { .. } => "text",
                    ContentBlock::Json { .. } => "json",
                    ContentBlock::Image { .. } => "image",
                    _ => "other",
                })
                .collect();
            shown.push_str(&format!("{server} {tool}: {}\n", kinds.join(", ")));
        }
    }
    insta::assert_snapshot!(shown);
}
