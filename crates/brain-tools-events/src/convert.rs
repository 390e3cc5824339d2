//! MCP `CallToolResult` JSON -> Brain content blocks.
//!
//! | MCP | Brain |
//! |---|---|
//! | `structuredContent` | `json` block, first; what the model would read twice is read once, media included (see [`ResultContent`]) |
//! | `text` | `text` |
//! | `image` (an `image/...` MIME type, data in base64) | `image` |
//! | `resource` with `text` | `text` |
//! | `resource` with an image `blob` (base64) | `image` |
//! | `image` or image blob whose MIME type is not an image, or whose data is not base64 | a short `text` block saying so |
//! | `resource` with another `blob`, `resource_link`, `audio`, unknown types, malformed blocks | a short `text` block, in place, saying what was left out and why |

use serde_json::Value;

use crate::event::ContentBlock;

/// Longest URI, name or type quoted in a "left out" note.
const MAX_QUOTED: usize = 200;

/// What the model reads of a result that has `structuredContent` and `content` blocks
/// (since MCP 2025-06-18 a server that returns structured content should also return it
/// as text, for clients that do not read structured content, so most say it twice).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ResultContent {
    /// Each piece once (the default): the `json` block, then every content block except
    /// the text blocks whose information the structured content already holds (the same
    /// JSON in any formatting, the JSON of one of its values, or one of its strings). When
    /// the structured content only wraps one value (`{"result": "..."}`) that a text block
    /// says, the text stays and the `json` block goes (the shorter of the two). Media the
    /// structured content repeats (the base64 of an image, audio or a resource's blob
    /// that a content block carries) is read in its block: in the `json` block a short
    /// note stands in its place. Nothing the structured content does not hold is dropped.
    #[default]
    Once,
    /// The `json` block and every content block, as the server sent them.
    Both,
    /// The `json` block and the content blocks that are not text (images, notes): what
    /// the MCP specification says a client that reads structured content needs.
    Structured,
    /// The content blocks only, as clients that do not read structured content see them;
    /// the `json` block only when there is no content block at all.
    Content,
}

/// A converted MCP result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpResult {
    /// The blocks the model reads.
    pub content: Vec<ContentBlock>,
    /// The server's `isError`.
    pub is_error: bool,
    /// The server's `structuredContent`, for output validation.
    pub structured: Option<Value>,
}

impl McpResult {
    /// Converts a `CallToolResult` (as JSON), each piece read once
    /// ([`ResultContent::Once`]). Never fails: anything that is not what the spec says
    /// becomes a note in the content.
    pub fn from_value(result: &Value) -> Self {
        Self::convert(result, ResultContent::Once)
    }

    /// Converts a `CallToolResult` (as JSON), choosing what the model reads of a result
    /// with both structured content and content blocks. Never fails.
    pub fn convert(result: &Value, form: ResultContent) -> Self {
        let is_error = result
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let structured = result
            .get("structuredContent")
            .filter(|value| !value.is_null())
            .cloned();
        let blocks: &[Value] = match result.get("content") {
            Some(Value::Array(blocks)) => blocks,
            _ => &[],
        };
        let not_a_list = !matches!(
            result.get("content"),
            None | Some(Value::Null | Value::Array(_))
        );
        let keep = keep(structured.as_ref(), blocks, form);
        let mut content = Vec::new();
        if keep.json
            && let Some(value) = &structured
        {
            let mut value = value.clone();
            if form == ResultContent::Once {
                read_media_once(&mut value, blocks);
            }
            content.push(ContentBlock::json(value));
        }
        for (block, kept) in blocks.iter().zip(&keep.blocks) {
            if *kept {
                content.push(convert_block(block));
            }
        }
        if not_a_list {
            content.push(ContentBlock::text(
                "[the server's content was not a list and was left out]",
            ));
        }
        Self {
            content,
            is_error,
            structured,
        }
    }
}

/// Server text quoted in a note: at most `MAX_QUOTED` characters, control characters
/// (terminal escapes, line breaks) as spaces.
fn quoted(text: &str) -> String {
    let mut quoted: String = text
        .chars()
        .take(MAX_QUOTED)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().count() > MAX_QUOTED {
        quoted.push('…');
    }
    quoted
}

/// Approximate decoded size of base64 data.
fn decoded_size(data: &str) -> usize {
    data.len() / 4 * 3
}

fn str_field<'a>(value: &'a Value, field: &str) -> Option<&'a str> {
    value.get(field).and_then(Value::as_str)
}

/// An image block, if it is one: an `image/<subtype>` MIME type and base64 data;
/// otherwise a note that says what was left out.
fn image(mime_type: &str, data: &str, what: &str) -> ContentBlock {
    if !is_image_type(mime_type) {
        return ContentBlock::text(format!(
            "[{what} with MIME type {} was left out: that is not an image type]",
            quoted(mime_type)
        ));
    }
    if !is_base64(data) {
        return ContentBlock::text(format!(
            "[{what} ({}) was left out: its data is not base64]",
            quoted(mime_type)
        ));
    }
    ContentBlock::image(mime_type, data)
}

/// `image/<subtype>`, the subtype a token of RFC 6838's characters.
fn is_image_type(mime_type: &str) -> bool {
    mime_type.strip_prefix("image/").is_some_and(|subtype| {
        !subtype.is_empty()
            && subtype
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&byte))
    })
}

/// Standard base64 (RFC 4648, section 4): the standard alphabet, padding only at the
/// end, a length a decoder accepts. Line breaks (MIME style) are allowed.
fn is_base64(data: &str) -> bool {
    let mut symbols = 0usize;
    let mut padding = 0usize;
    for byte in data.bytes() {
        match byte {
            b'\r' | b'\n' => {}
            b'=' => padding += 1,
            _ if padding > 0 => return false,
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'+' | b'/' => symbols += 1,
            _ => return false,
        }
    }
    symbols > 0
        && padding <= 2
        && (symbols + padding) % 4 != 1
        && (padding == 0 || (symbols + padding).is_multiple_of(4))
}

/// Which pieces of a result the model reads: the `json` block, and each content block.
#[derive(Debug, PartialEq)]
struct Keep {
    json: bool,
    blocks: Vec<bool>,
}

/// What `form` keeps of a result with `structured` content and these content `blocks`.
fn keep(structured: Option<&Value>, blocks: &[Value], form: ResultContent) -> Keep {
    let all = || vec![true; blocks.len()];
    fn text(block: &Value) -> Option<&str> {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => str_field(block, "text"),
            _ => None,
        }
    }
    let Some(structured) = structured else {
        return Keep {
            json: false,
            blocks: all(),
        };
    };
    match form {
        ResultContent::Both => Keep {
            json: true,
            blocks: all(),
        },
        ResultContent::Structured => Keep {
            json: true,
            blocks: blocks.iter().map(|block| text(block).is_none()).collect(),
        },
        ResultContent::Content => Keep {
            json: blocks.is_empty(),
            blocks: all(),
        },
        _ => {
            // A wrapper of one value that a text block says: the text is the shorter.
            if let Value::Object(map) = structured
                && map.len() == 1
                && let Some(value) = map.values().next()
                && !value.is_object()
                && !value.is_array()
                && blocks.iter().filter_map(text).any(|text| says(text, value))
            {
                return Keep {
                    json: false,
                    blocks: all(),
                };
            }
            Keep {
                json: true,
                blocks: blocks
                    .iter()
                    .map(|block| text(block).is_none_or(|text| !held(text, structured)))
                    .collect(),
            }
        }
    }
}

/// A media block's bytes as the model would otherwise read them twice: its base64, and
/// what to say in its place (`image/png data, about 30255 bytes: the same as the image
/// that follows`).
fn media(block: &Value) -> Option<(&str, String)> {
    let (data, mime_type, what) = match str_field(block, "type")? {
        "image" => (
            str_field(block, "data")?,
            str_field(block, "mimeType"),
            "image",
        ),
        "audio" => (
            str_field(block, "data")?,
            str_field(block, "mimeType"),
            "audio",
        ),
        "resource" => {
            let resource = block.get("resource")?;
            (
                str_field(resource, "blob")?,
                str_field(resource, "mimeType"),
                "resource",
            )
        }
        _ => return None,
    };
    (!data.is_empty()).then(|| {
        (
            data,
            format!(
                "[{} data, about {} bytes: the same as the {what} that follows]",
                quoted(mime_type.unwrap_or("binary")),
                decoded_size(data)
            ),
        )
    })
}

/// Media read once: in the structured content the model reads, every string that is the
/// base64 of a media block (an image, audio, a resource's blob) gives way to a short note
/// that says so. The block itself is read as it always is (an image as an image, the
/// rest as its note), so nothing is lost and nothing is read twice; `McpResult::structured`
/// keeps the server's value whole for validation and for the host.
fn read_media_once(value: &mut Value, blocks: &[Value]) {
    let media: Vec<(&str, String)> = blocks.iter().filter_map(media).collect();
    if media.is_empty() {
        return;
    }
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(text) => {
                if let Some((_, note)) = media.iter().find(|(data, _)| data == text) {
                    *text = note.clone();
                }
            }
            Value::Object(map) => stack.extend(map.values_mut()),
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
}

/// Whether a text block says exactly `value`: it is that string, or that JSON.
fn says(text: &str, value: &Value) -> bool {
    match value {
        Value::String(string) => string == text,
        value => serde_json::from_str::<Value>(text).is_ok_and(|parsed| parsed == *value),
    }
}

/// Whether the structured content holds everything a text block says: the text is the
/// JSON of it or of one of its values (in any formatting), or one of its strings.
fn held(text: &str, structured: &Value) -> bool {
    let parsed = serde_json::from_str::<Value>(text).ok();
    let mut stack = vec![structured];
    while let Some(value) = stack.pop() {
        if value.as_str() == Some(text) || parsed.as_ref() == Some(value) {
            return true;
        }
        match value {
            Value::Object(map) => stack.extend(map.values()),
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

fn convert_block(block: &Value) -> ContentBlock {
    let malformed =
        |what: &str| ContentBlock::text(format!("[a malformed {what} content block was left out]"));
    let Some(kind) = str_field(block, "type") else {
        return malformed("untyped");
    };
    match kind {
        "text" => match str_field(block, "text") {
            Some(text) => ContentBlock::text(text),
            None => malformed("text"),
        },
        "image" => match (str_field(block, "data"), str_field(block, "mimeType")) {
            (Some(data), Some(mime_type)) => image(mime_type, data, "an image"),
            _ => malformed("image"),
        },
        "audio" => {
            let mime_type = str_field(block, "mimeType").unwrap_or("unknown type");
            let size = str_field(block, "data").map_or(0, decoded_size);
            ContentBlock::text(format!(
                "[audio ({}, about {size} bytes) was left out: this host passes only text, images and JSON to the model]",
                quoted(mime_type)
            ))
        }
        "resource_link" => {
            let uri = str_field(block, "uri").unwrap_or("no uri");
            let name = str_field(block, "name").unwrap_or("unnamed");
            ContentBlock::text(format!(
                "[a link to resource {} ({}) was left out: this host does not fetch linked resources]",
                quoted(name),
                quoted(uri)
            ))
        }
        "resource" => {
            let Some(resource) = block.get("resource").filter(|r| r.is_object()) else {
                return malformed("resource");
            };
            let uri = str_field(resource, "uri").unwrap_or("no uri");
            let mime_type = str_field(resource, "mimeType");
            if let Some(text) = str_field(resource, "text") {
                return ContentBlock::text(text);
            }
            match (str_field(resource, "blob"), mime_type) {
                (Some(blob), Some(mime)) if mime.starts_with("image/") => {
                    image(mime, blob, "an image resource")
                }
                (Some(blob), mime) => ContentBlock::text(format!(
                    "[binary resource {} ({}, about {} bytes) was left out: this host passes only text, images and JSON to the model]",
                    quoted(uri),
                    quoted(mime.unwrap_or("unknown type")),
                    decoded_size(blob)
                )),
                (None, _) => malformed("resource"),
            }
        }
        other => ContentBlock::text(format!(
            "[content of type {} was left out: this host does not know it]",
            quoted(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn blocks(result: Value) -> Vec<ContentBlock> {
        McpResult::from_value(&result).content
    }

    #[test]
    fn text_and_image_pass_through() {
        assert_eq!(
            blocks(json!({"content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "iVBORw==", "mimeType": "image/png"}
            ]})),
            vec![
                ContentBlock::text("hi"),
                ContentBlock::image("image/png", "iVBORw==")
            ]
        );
    }

    #[test]
    fn structured_content_comes_first_and_its_text_copy_is_dropped() {
        assert_eq!(
            blocks(json!({
                "content": [
                    {"type": "text", "text": "{\"b\": 2, \"a\": 1}"},
                    {"type": "text", "text": "a note"}
                ],
                "structuredContent": {"a": 1, "b": 2}
            })),
            vec![
                ContentBlock::json(json!({"a": 1, "b": 2})),
                ContentBlock::text("a note")
            ]
        );
    }

    /// What each form keeps of results with structured content, as the kinds of the
    /// blocks the model reads (`json`, `text:<the text>`, `image`).
    #[test]
    fn each_form_keeps_what_it_says() {
        let image = json!({"type": "image", "data": "iVBORw==", "mimeType": "image/png"});
        let text = |t: &str| json!({"type": "text", "text": t});
        // (result, once, both, structured, content)
        let cases: [(Value, &str, &str, &str, &str); 7] = [
            // A file's text, wrapped (filesystem read_text_file): the text, once.
            (
                json!({"structuredContent": {"content": "a\nb"}, "content": [text("a\nb")]}),
                "text:a\nb",
                "json text:a\nb",
                "json",
                "text:a\nb",
            ),
            // A number wrapped as a string (calculator), and as a number (FastMCP float).
            (
                json!({"structuredContent": {"result": 14.0}, "content": [text("14.0")]}),
                "text:14.0",
                "json text:14.0",
                "json",
                "text:14.0",
            ),
            // Pretty JSON of one value (memory create_entities): the json block.
            (
                json!({"structuredContent": {"entities": [{"name": "Ada"}]},
                       "content": [text("[\n  {\n    \"name\": \"Ada\"\n  }\n]")]}),
                "json",
                "json text:[\n  {\n    \"name\": \"Ada\"\n  }\n]",
                "json",
                "text:[\n  {\n    \"name\": \"Ada\"\n  }\n]",
            ),
            // One of its strings (memory delete_entities): the json block, which says more.
            (
                json!({"structuredContent": {"success": true, "message": "deleted"},
                       "content": [text("deleted")]}),
                "json",
                "json text:deleted",
                "json",
                "text:deleted",
            ),
            // Text the structured content does not hold stays; so does an image.
            (
                json!({"structuredContent": {"hits": 3},
                       "content": [text("3 hits; the index is stale"), image.clone()]}),
                "json text:3 hits; the index is stale image",
                "json text:3 hits; the index is stale image",
                "json image",
                "text:3 hits; the index is stale image",
            ),
            // Structured content alone.
            (
                json!({"structuredContent": {"hits": 3}, "content": []}),
                "json",
                "json",
                "json",
                "json",
            ),
            // No structured content: every block, whatever the form.
            (
                json!({"content": [text("{\"hits\": 3}")]}),
                "text:{\"hits\": 3}",
                "text:{\"hits\": 3}",
                "text:{\"hits\": 3}",
                "text:{\"hits\": 3}",
            ),
        ];
        let kinds = |result: &Value, form| {
            McpResult::convert(result, form)
                .content
                .iter()
                .map(|block| match block {
                    ContentBlock::Json { .. } => "json".to_owned(),
                    ContentBlock::Text { text } => format!("text:{text}"),
                    ContentBlock::Image { .. } => "image".to_owned(),
                })
                .collect::<Vec<_>>()
                .join(" ")
        };
        for (result, once, both, structured, content) in cases {
            assert_eq!(kinds(&result, ResultContent::Once), once, "once: {result}");
            assert_eq!(kinds(&result, ResultContent::Both), both, "both: {result}");
            assert_eq!(
                kinds(&result, ResultContent::Structured),
                structured,
                "structured: {result}"
            );
            assert_eq!(
                kinds(&result, ResultContent::Content),
                content,
                "content: {result}"
            );
            // The structured content is kept for output validation whatever the model reads.
            assert_eq!(
                McpResult::convert(&result, ResultContent::Content).structured,
                result.get("structuredContent").cloned()
            );
        }
    }

    /// Media the structured content repeats is read once, in its block; the other forms
    /// keep it as the server sent it, and the structured content is kept whole.
    #[test]
    fn media_the_structured_content_repeats_is_read_once() {
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
        let wav = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";
        let result = json!({
            "content": [
                {"type": "image", "data": png, "mimeType": "image/png"},
                {"type": "audio", "data": wav, "mimeType": "audio/wav"}
            ],
            "structuredContent": {"content": [
                {"type": "image", "data": png, "mimeType": "image/png"},
                {"type": "audio", "data": wav, "mimeType": "audio/wav"}
            ], "name": "chart.png"}
        });
        let once = McpResult::convert(&result, ResultContent::Once);
        assert_eq!(
            once.content[0],
            ContentBlock::json(json!({"content": [
                {"type": "image", "data": "[image/png data, about 72 bytes: the same as the image that follows]", "mimeType": "image/png"},
                {"type": "audio", "data": "[audio/wav data, about 45 bytes: the same as the audio that follows]", "mimeType": "audio/wav"}
            ], "name": "chart.png"}))
        );
        assert_eq!(once.content[1], ContentBlock::image("image/png", png));
        assert!(
            matches!(&once.content[2], ContentBlock::Text { text } if text.starts_with("[audio (audio/wav"))
        );
        assert_eq!(once.structured, result.get("structuredContent").cloned());
        for form in [ResultContent::Both, ResultContent::Structured] {
            let kept = McpResult::convert(&result, form);
            assert_eq!(
                kept.content[0],
                ContentBlock::json(result["structuredContent"].clone()),
                "{form:?}"
            );
        }
    }

    #[test]
    fn embedded_resources_resource_links_audio_and_unknowns() {
        let converted = blocks(json!({"content": [
            {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "A"}},
            {"type": "resource", "resource": {"uri": "file:///b.png", "mimeType": "image/png", "blob": "iVBORw=="}},
            {"type": "resource", "resource": {"uri": "file:///c.bin", "mimeType": "application/octet-stream", "blob": "AAAA"}},
            {"type": "resource_link", "uri": "file:///d.txt", "name": "d"},
            {"type": "audio", "data": "AAAAAAAA", "mimeType": "audio/wav"},
            {"type": "video", "url": "x"},
            {"type": "image"},
            "not an object"
        ]}));
        insta::assert_debug_snapshot!(converted);
    }

    #[test]
    fn images_are_checked_before_they_reach_the_model() {
        let cases = [
            (
                json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}),
                true,
            ),
            (
                json!({"type": "image", "data": "iVBORw0KGgo", "mimeType": "image/png"}),
                true,
            ),
            (
                json!({"type": "image", "data": "iVBO\nRw0K", "mimeType": "image/png"}),
                true,
            ),
            (
                json!({"type": "image", "data": "not base64!", "mimeType": "image/png"}),
                false,
            ),
            (
                json!({"type": "image", "data": "iVBOR=w0K", "mimeType": "image/png"}),
                false,
            ),
            (
                json!({"type": "image", "data": "iVBOR", "mimeType": "image/png"}),
                false,
            ),
            (
                json!({"type": "image", "data": "", "mimeType": "image/png"}),
                false,
            ),
            (
                json!({"type": "image", "data": "iVBORw0K", "mimeType": "text/html"}),
                false,
            ),
            (
                json!({"type": "image", "data": "iVBORw0K", "mimeType": "image/"}),
                false,
            ),
            (
                json!({"type": "image", "data": "iVBORw0K", "mimeType": "image/png\u{1b}[31m"}),
                false,
            ),
            (
                json!({"type": "resource", "resource": {"uri": "f", "mimeType": "image/png", "blob": "%%%"}}),
                false,
            ),
            (
                json!({"type": "resource", "resource": {"uri": "f", "mimeType": "image/png", "blob": "iVBORw0K"}}),
                true,
            ),
        ];
        for (block, is_image) in cases {
            let converted = blocks(json!({"content": [block.clone()]}));
            assert_eq!(
                matches!(converted[..], [ContentBlock::Image { .. }]),
                is_image,
                "{block}: {converted:?}"
            );
            if !is_image {
                let [ContentBlock::Text { text }] = &converted[..] else {
                    panic!("{block}: {converted:?}")
                };
                assert!(text.starts_with('[') && text.contains("left out"), "{text}");
                assert!(!text.contains('\u{1b}'), "no control characters: {text:?}");
            }
        }
    }

    #[test]
    fn errors_keep_the_server_content() {
        let converted = McpResult::from_value(&json!({
            "content": [{"type": "text", "text": "rate limited"}],
            "isError": true
        }));
        assert!(converted.is_error);
        assert_eq!(converted.content, vec![ContentBlock::text("rate limited")]);
    }

    #[test]
    fn odd_results_do_not_fail() {
        assert!(blocks(json!({})).is_empty());
        assert_eq!(blocks(json!({"content": "x"})).len(), 1);
        assert!(blocks(json!({"content": null, "structuredContent": null})).is_empty());
    }
}
