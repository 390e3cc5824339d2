//! MCP `CallToolResult` JSON -> Brain content blocks.
//!
//! | MCP | Brain |
//! |---|---|
//! | `structuredContent` | `json` block, first; a text block that is the same JSON serialized is dropped |
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
    /// Converts a `CallToolResult` (as JSON). Never fails: anything that is not what the
    /// spec says becomes a note in the content.
    pub fn from_value(result: &Value) -> Self {
        let is_error = result
            .get("isError")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let structured = result
            .get("structuredContent")
            .filter(|value| !value.is_null())
            .cloned();
        let mut content = Vec::new();
        if let Some(value) = &structured {
            content.push(ContentBlock::json(value.clone()));
        }
        match result.get("content") {
            Some(Value::Array(blocks)) => {
                for block in blocks {
                    if let Some(converted) = convert_block(block, structured.as_ref()) {
                        content.push(converted);
                    }
                }
            }
            None | Some(Value::Null) => {}
            Some(_) => content.push(ContentBlock::text(
                "[the server's content was not a list and was left out]",
            )),
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

fn convert_block(block: &Value, structured: Option<&Value>) -> Option<ContentBlock> {
    let malformed = |what: &str| {
        Some(ContentBlock::text(format!(
            "[a malformed {what} content block was left out]"
        )))
    };
    let Some(kind) = str_field(block, "type") else {
        return malformed("untyped");
    };
    match kind {
        "text" => match str_field(block, "text") {
            Some(text) => {
                // The serialized copy of structuredContent is already there as json.
                let duplicate = structured.is_some_and(|value| {
                    serde_json::from_str::<Value>(text).is_ok_and(|parsed| parsed == *value)
                });
                (!duplicate).then(|| ContentBlock::text(text))
            }
            None => malformed("text"),
        },
        "image" => match (str_field(block, "data"), str_field(block, "mimeType")) {
            (Some(data), Some(mime_type)) => Some(image(mime_type, data, "an image")),
            _ => malformed("image"),
        },
        "audio" => {
            let mime_type = str_field(block, "mimeType").unwrap_or("unknown type");
            let size = str_field(block, "data").map_or(0, decoded_size);
            Some(ContentBlock::text(format!(
                "[audio ({}, about {size} bytes) was left out: this host passes only text, images and JSON to the model]",
                quoted(mime_type)
            )))
        }
        "resource_link" => {
            let uri = str_field(block, "uri").unwrap_or("no uri");
            let name = str_field(block, "name").unwrap_or("unnamed");
            Some(ContentBlock::text(format!(
                "[a link to resource {} ({}) was left out: this host does not fetch linked resources]",
                quoted(name),
                quoted(uri)
            )))
        }
        "resource" => {
            let Some(resource) = block.get("resource").filter(|r| r.is_object()) else {
                return malformed("resource");
            };
            let uri = str_field(resource, "uri").unwrap_or("no uri");
            let mime_type = str_field(resource, "mimeType");
            if let Some(text) = str_field(resource, "text") {
                return Some(ContentBlock::text(text));
            }
            match (str_field(resource, "blob"), mime_type) {
                (Some(blob), Some(mime)) if mime.starts_with("image/") => {
                    Some(image(mime, blob, "an image resource"))
                }
                (Some(blob), mime) => Some(ContentBlock::text(format!(
                    "[binary resource {} ({}, about {} bytes) was left out: this host passes only text, images and JSON to the model]",
                    quoted(uri),
                    quoted(mime.unwrap_or("unknown type")),
                    decoded_size(blob)
                ))),
                (None, _) => malformed("resource"),
            }
        }
        other => Some(ContentBlock::text(format!(
            "[content of type {} was left out: this host does not know it]",
            quoted(other)
        ))),
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
