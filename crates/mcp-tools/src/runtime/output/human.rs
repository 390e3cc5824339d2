//! What a person reads of a call: the result as text, with the last progress and what an
//! error means for retrying. Pure (events in, text out), so it is snapshot-tested; the
//! printer does the I/O.
//!
//! Everything a server sent (text, structured content, names, MIME types) and every path
//! shown goes through [`super::escape::escape`] (`\u{1b}`), so a tool cannot move the
//! cursor, recolour or retitle the terminal of the person reading it, or reorder or hide
//! what they read.

use std::{fmt::Write as _, path::PathBuf};

use base64::Engine as _;
use brain_tools::{ContentBlock, Delivery, ErrorKind, ProgressEvent, ResultEvent};
use serde_json::Value;

use crate::runtime::output::escape::escape;

/// Colour, or none.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Paint {
    color: bool,
}

impl Paint {
    /// Plain text.
    #[cfg(test)]
    pub(crate) fn plain() -> Self {
        Self { color: false }
    }

    /// ANSI colour when `color`.
    pub(crate) fn new(color: bool) -> Self {
        Self { color }
    }

    fn wrap(self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    fn ok(self, text: &str) -> String {
        self.wrap("1;32", text)
    }

    fn bad(self, text: &str) -> String {
        self.wrap("1;31", text)
    }

    fn label(self, text: &str) -> String {
        self.wrap("1;33", text)
    }

    fn dim(self, text: &str) -> String {
        self.wrap("2", text)
    }
}

/// The progress a call reported, for the line above its result.
#[derive(Debug, Clone)]
pub(crate) struct ProgressSeen {
    /// How many `tool.progress` events arrived (shown or not).
    pub(crate) updates: u64,
    /// The last one.
    pub(crate) last: ProgressEvent,
}

/// What became of one piece of base64 when `--save-dir` is given.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Saved {
    /// Written to this file.
    To(PathBuf),
    /// Not written, and why.
    Failed(String),
}

/// A piece of base64 a result carries, which a person never reads as text: an image
/// block's data (`nth` 0), or a string in a `json` block that is base64 data (`nth` from
/// 1, in the order [`payloads`] finds them), such as the copy of a file's bytes a tool
/// repeats in its structured content.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Payload<'a> {
    /// The block it is in (from 0).
    pub(crate) block: usize,
    pub(crate) nth: usize,
    pub(crate) data: &'a str,
    pub(crate) mime_type: Option<&'a str>,
}

/// The shortest string of a `json` block taken for base64 data: shorter ones are shown
/// as they are (an id, a hash).
const MIN_EMBEDDED: usize = 128;

/// Whether a string of a `json` block is base64 data: long, standard base64 that
/// decodes, and of mixed case (hex digests, identifiers in one case, are shown).
fn is_embedded_base64(text: &str) -> bool {
    text.len() >= MIN_EMBEDDED
        && text.bytes().any(|byte| byte.is_ascii_uppercase())
        && text.bytes().any(|byte| byte.is_ascii_lowercase())
        && decode(text).is_some()
}

/// The base64 strings in a JSON value, depth first, each with the `mimeType` (or
/// `mime_type`) of the object that holds it.
fn embedded<'a>(
    value: &'a Value,
    mime_type: Option<&'a str>,
    found: &mut Vec<(&'a str, Option<&'a str>)>,
) {
    match value {
        Value::String(text) if is_embedded_base64(text) => found.push((text, mime_type)),
        Value::Array(items) => {
            for item in items {
                embedded(item, None, found);
            }
        }
        Value::Object(map) => {
            let mime_type = ["mimeType", "mime_type"]
                .iter()
                .find_map(|key| map.get(*key).and_then(Value::as_str));
            for value in map.values() {
                embedded(value, mime_type, found);
            }
        }
        _ => {}
    }
}

/// Every piece of base64 of a result, once each: the image blocks' data, then the base64
/// strings of its `json` blocks that are not an image block's data again.
pub(crate) fn payloads(result: &ResultEvent) -> Vec<Payload<'_>> {
    let mut payloads = Vec::new();
    for (block, content) in result.content.iter().enumerate() {
        if let ContentBlock::Image { mime_type, data } = content {
            payloads.push(Payload {
                block,
                nth: 0,
                data,
                mime_type: Some(mime_type),
            });
        }
    }
    for (block, content) in result.content.iter().enumerate() {
        let ContentBlock::Json { value } = content else {
            continue;
        };
        let mut found = Vec::new();
        embedded(value, None, &mut found);
        for (nth, (data, mime_type)) in found.into_iter().enumerate() {
            if !payloads
                .iter()
                .any(|payload: &Payload<'_>| payload.data == data)
            {
                payloads.push(Payload {
                    block,
                    nth: nth + 1,
                    data,
                    mime_type,
                });
            }
        }
    }
    payloads
}

/// The one-line text of a progress event: `3/5 indexing`, `3 indexing` without a total.
pub(crate) fn progress_text(event: &ProgressEvent) -> String {
    let mut text = number(event.progress);
    if let Some(total) = event.total {
        let _ = write!(text, "/{}", number(total));
    }
    if let Some(message) = event.message.as_deref().filter(|m| !m.is_empty()) {
        text.push(' ');
        text.push_str(&escape(message, false));
    }
    text
}

/// The result for a person, who never reads base64: each image, and each piece of
/// base64 in structured content, is said as what it is, how large, and where it was saved.
/// `saved[i]` says what became of the `i`th of the result's [`payloads`] when
/// `--save-dir` was given.
pub(crate) fn render(
    progress: Option<&ProgressSeen>,
    result: &ResultEvent,
    saved: &[Option<Saved>],
    paint: Paint,
) -> String {
    let payloads = payloads(result);
    let media = Media {
        payloads: &payloads,
        saved,
    };
    let mut out = String::new();
    let header = format!(
        "tool {}, call {}",
        escape(&result.header.tool, false),
        escape(&result.header.call_id, false)
    );
    if result.is_error {
        let _ = writeln!(out, "{} {}", paint.bad("error:"), header);
    } else {
        let _ = writeln!(out, "{} {}", paint.ok("ok:"), header);
    }
    if let Some(seen) = progress {
        let updates = if seen.updates == 1 {
            "1 progress update".to_owned()
        } else {
            format!("{} progress updates", seen.updates)
        };
        let line = format!("{updates}; last: {}", progress_text(&seen.last));
        let _ = writeln!(out, "{}", paint.dim(&line));
    }
    for (index, block) in result.content.iter().enumerate() {
        out.push('\n');
        out.push_str(&block_text(index, block, &media, paint));
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    if result.content.is_empty() {
        let _ = writeln!(out, "\n{}", paint.dim("(no content)"));
    }
    if let Some(error) = &result.error {
        out.push('\n');
        let _ = writeln!(
            out,
            "{} {} ({})",
            paint.label("kind:"),
            error.kind,
            kind_meaning(error.kind)
        );
        let _ = writeln!(
            out,
            "{} {} ({})",
            paint.label("delivery:"),
            error.delivery.as_str(),
            delivery_meaning(error.delivery)
        );
        let _ = writeln!(
            out,
            "{} {} ({})",
            paint.label("retryable:"),
            error.retryable,
            match (error.kind, error.retryable) {
                (ErrorKind::ToolError, _) => {
                    "the tool's own error: what it said tells whether another try can succeed"
                }
                (_, true) => "another try may succeed",
                (_, false) => "the same call fails the same way until something changes",
            }
        );
    }
    out
}

/// The result's pieces of base64 and what became of each.
struct Media<'a> {
    payloads: &'a [Payload<'a>],
    saved: &'a [Option<Saved>],
}

impl Media<'_> {
    /// The payload whose data this is, and what became of it.
    fn of(&self, data: &str) -> Option<(&Payload<'_>, Option<&Saved>)> {
        let index = self
            .payloads
            .iter()
            .position(|payload| payload.data == data)?;
        Some((
            &self.payloads[index],
            self.saved.get(index).and_then(Option::as_ref),
        ))
    }

    /// A JSON value with each piece of base64 said as what it is instead.
    fn hidden(&self, value: &Value) -> Value {
        match value {
            Value::String(text) if is_embedded_base64(text) => Value::String(match self.of(text) {
                Some((payload, _)) if payload.nth == 0 => {
                    format!("[base64: the image of block {}]", payload.block + 1)
                }
                Some((payload, saved)) => format!(
                    "[base64: {}{}]",
                    what(payload.mime_type, payload.data),
                    where_saved(saved)
                ),
                None => format!("[base64: {}]", what(None, text)),
            }),
            Value::Array(items) => {
                Value::Array(items.iter().map(|item| self.hidden(item)).collect())
            }
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(key, value)| (key.clone(), self.hidden(value)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// `image/png, 29.5 KiB`: what a piece of base64 is, as far as is known.
fn what(mime_type: Option<&str>, data: &str) -> String {
    let size = match decode(data) {
        Some(bytes) => size(bytes.len()),
        None => "data that is not base64".to_owned(),
    };
    match mime_type {
        Some(mime_type) => format!("{}, {size}", escape(mime_type, false)),
        None => size,
    }
}

/// ` saved to PATH`, ` not saved: why`, or how to save it.
fn where_saved(saved: Option<&Saved>) -> String {
    match saved {
        Some(Saved::To(path)) => {
            format!(" saved to {}", escape(&path.display().to_string(), false))
        }
        Some(Saved::Failed(why)) => format!(" not saved: {}", escape(why, false)),
        None => ", not printed (--save-dir saves it)".to_owned(),
    }
}

fn block_text(index: usize, block: &ContentBlock, media: &Media<'_>, paint: Paint) -> String {
    match block {
        ContentBlock::Text { text } => escape(text, true),
        // serde_json escapes C0 controls in strings, not C1 or bidirectional ones.
        ContentBlock::Json { value } => {
            let shown = media.hidden(value);
            escape(
                &serde_json::to_string_pretty(&shown).unwrap_or_else(|_| shown.to_string()),
                true,
            )
        }
        ContentBlock::Image { mime_type, data } => {
            let saved = media
                .of(data)
                .filter(|(payload, _)| payload.block == index)
                .and_then(|(_, saved)| saved);
            let mut line = paint.label(&format!("[image: {}]", what(Some(mime_type), data)));
            if let Some(saved) = saved {
                line.push_str(&where_saved(Some(saved)));
            }
            line
        }
        _ => paint.dim("[a content block this version of mcp-tools cannot show]"),
    }
}

/// What an error kind means, in a few words.
fn kind_meaning(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::UnknownTool => "no such tool for this tenant",
        ErrorKind::InvalidArguments => "the arguments do not satisfy the tool's input_schema",
        ErrorKind::MissingToken => "the binding's token_env variable is not set",
        ErrorKind::Connect => "the server could not be reached, or its command could not start",
        ErrorKind::HttpStatus => "the server answered with an HTTP error status",
        ErrorKind::Protocol => {
            "the server answered with a JSON-RPC error or with something that is not a tool result, or the exchange broke off"
        }
        ErrorKind::ServerExited => {
            "the server's process ended during the call: it crashed, was killed or exited"
        }
        ErrorKind::Timeout => {
            "a time limit passed: the call's deadline (timeout_seconds), or its task's time to live"
        }
        ErrorKind::Cancelled => "the call was cancelled",
        ErrorKind::OutputTooLarge => "the response exceeded max_output_bytes",
        ErrorKind::ToolError => "the tool reported an error; its text is above",
        ErrorKind::OutputSchema => "the structured output does not satisfy output_schema",
        ErrorKind::Executor => "the host's executor for HTTP tools failed or is missing",
        ErrorKind::AuthorizationRequired => {
            "the tenant has no usable grant for this server; someone must authorize, as the message says"
        }
        ErrorKind::AuthorizationFailed => "no access token could be obtained for this server",
        ErrorKind::CredentialStore => {
            "the credential store could not be reached or read; calls with a token in memory go on"
        }
        _ => "see docs/errors.md",
    }
}

/// What a delivery value means for trying again.
fn delivery_meaning(delivery: Delivery) -> &'static str {
    match delivery {
        Delivery::NotSent => {
            "the tool did not run (the request never reached the server, or the server refused it before running it): a retry cannot repeat anything"
        }
        Delivery::Unknown => {
            "the request may have reached the server, so the tool may have run: check before retrying"
        }
        Delivery::Delivered => "the server answered: the tool ran, and running it again repeats it",
        _ => "see docs/errors.md",
    }
}

/// The bytes of an image block, when its data is base64.
pub(crate) fn decode(data: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(data).ok()
}

/// The file a piece of base64 is saved as: `CALL-N.EXT` for the image of block N (from
/// 1), `CALL-N-K.EXT` for the Kth piece of base64 in the structured content of block N;
/// the call ID reduced to characters safe in a file name.
pub(crate) fn media_file_name(call_id: &str, payload: &Payload<'_>) -> String {
    let name = image_file_name(
        call_id,
        payload.block,
        payload.mime_type.unwrap_or_default(),
    );
    match payload.nth {
        0 => name,
        nth => match name.rsplit_once('.') {
            Some((stem, extension)) => format!("{stem}-{nth}.{extension}"),
            None => format!("{name}-{nth}"),
        },
    }
}

/// The file an image is saved as: `CALL-N.EXT`, with N the block's number (from 1) and
/// the call ID reduced to characters safe in a file name.
fn image_file_name(call_id: &str, index: usize, mime_type: &str) -> String {
    let mut stem: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    if stem.is_empty() {
        stem.push_str("call");
    }
    format!("{stem}-{}.{}", index + 1, extension(mime_type))
}

/// A file extension for a MIME type; `bin` for one this table does not know.
fn extension(mime_type: &str) -> &'static str {
    let essence = mime_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match essence.as_str() {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" | "image/pjpeg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "image/bmp" | "image/x-ms-bmp" => "bmp",
        "image/tiff" => "tiff",
        "image/avif" => "avif",
        "image/heic" => "heic",
        "image/x-icon" | "image/vnd.microsoft.icon" => "ico",
        "audio/wav" | "audio/x-wav" | "audio/wave" => "wav",
        "audio/mpeg" | "audio/mp3" => "mp3",
        "audio/ogg" => "ogg",
        "audio/flac" => "flac",
        "application/pdf" => "pdf",
        _ => "bin",
    }
}

fn size(bytes: usize) -> String {
    const KIB: f64 = 1024.0;
    match bytes {
        1 => "1 byte".to_owned(),
        0..1024 => format!("{bytes} bytes"),
        _ if (bytes as f64) < KIB * KIB => format!("{:.1} KiB", bytes as f64 / KIB),
        _ => format!("{:.1} MiB", bytes as f64 / (KIB * KIB)),
    }
}

/// A progress number: `3`, not `3.0`; `0.25` as is.
fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        let text = format!("{value:.2}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

#[cfg(test)]
mod tests {
    use brain_tools::{CallHeader, ToolError, ToolEvent};
    use serde_json::json;

    use super::*;

    /// A 1x1 PNG, as the testkit's `image` tool returns.
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

    fn header(tool: &str) -> CallHeader {
        CallHeader::new("local", "s1", "c1", tool)
    }

    /// The human text of a whole call, as `call --format human` prints it.
    fn transcript(events: &[ToolEvent], saved: &[Option<Saved>]) -> String {
        let mut seen: Option<ProgressSeen> = None;
        for event in events {
            match event {
                ToolEvent::Progress(progress) => {
                    let updates = seen.as_ref().map_or(0, |s| s.updates) + 1;
                    seen = Some(ProgressSeen {
                        updates,
                        last: progress.clone(),
                    });
                }
                ToolEvent::Result(result) => {
                    return render(seen.as_ref(), result, saved, Paint::plain());
                }
                _ => {}
            }
        }
        panic!("no result")
    }

    #[test]
    fn a_call_with_progress() {
        let events: Vec<ToolEvent> = (1..=3)
            .map(|i| {
                ToolEvent::progress(
                    header("progress"),
                    i as f64,
                    Some(3.0),
                    Some(format!("step {i}")),
                )
            })
            .chain([ToolEvent::result(
                header("progress"),
                false,
                vec![ContentBlock::text("done")],
            )])
            .collect();
        insta::assert_snapshot!(transcript(&events, &[]));
    }

    #[test]
    fn an_image_saved_and_an_image_not_saved() {
        let result = ToolEvent::result(
            header("image"),
            false,
            vec![
                ContentBlock::text("two pictures"),
                ContentBlock::image("image/png", PNG),
                ContentBlock::image("image/png", "not base64!"),
            ],
        );
        let saved = [
            Some(Saved::To(PathBuf::from("out/c1-2.png"))),
            Some(Saved::Failed("the data is not base64".into())),
        ];
        insta::assert_snapshot!(transcript(&[result], &saved));
    }

    #[test]
    fn structured_content_and_its_text() {
        let result = ToolEvent::result(
            header("structured"),
            false,
            vec![
                ContentBlock::json(
                    json!({"city": "Berlin", "temperature": 21.5, "conditions": "sunny"}),
                ),
                ContentBlock::text("an embedded resource, as text"),
            ],
        );
        insta::assert_snapshot!(transcript(&[result], &[]));
    }

    /// Every kind, with the delivery it usually has, reads as what it means for a retry.
    #[test]
    fn each_error_kind() {
        let cases = [
            (
                ErrorKind::UnknownTool,
                Delivery::NotSent,
                "no tool named search for this tenant",
            ),
            (
                ErrorKind::InvalidArguments,
                Delivery::NotSent,
                "search: /query: 5 is not of type \"string\"",
            ),
            (
                ErrorKind::MissingToken,
                Delivery::NotSent,
                "search: MCP_API_KEY is not set",
            ),
            (
                ErrorKind::Connect,
                Delivery::NotSent,
                "search: could not connect to http://127.0.0.1:9",
            ),
            (
                ErrorKind::ServerExited,
                Delivery::Unknown,
                "search failed: the server's process ended before it answered (killed by signal 11 (SIGSEGV): it crashed)",
            ),
            (
                ErrorKind::HttpStatus,
                Delivery::NotSent,
                "search: the server answered HTTP 401",
            ),
            (
                ErrorKind::Protocol,
                Delivery::Unknown,
                "search: the server's answer is not JSON-RPC",
            ),
            (
                ErrorKind::Timeout,
                Delivery::Unknown,
                "search timed out after 3 s",
            ),
            (
                ErrorKind::Cancelled,
                Delivery::Unknown,
                "search was cancelled",
            ),
            (
                ErrorKind::OutputTooLarge,
                Delivery::Unknown,
                "search answered more than 1048576 bytes",
            ),
            (
                ErrorKind::OutputSchema,
                Delivery::Delivered,
                "search: structured output does not satisfy output_schema",
            ),
            (
                ErrorKind::Executor,
                Delivery::NotSent,
                "search: no executor for HTTP tools",
            ),
            (
                ErrorKind::AuthorizationRequired,
                Delivery::NotSent,
                "search was not called because it needs the tenant to authorize; run `mcp-tools login --config host.json --tool search --tenant local`",
            ),
            (
                ErrorKind::AuthorizationFailed,
                Delivery::NotSent,
                "search was not called because no access token could be obtained: the token endpoint refused the request (invalid_client)",
            ),
        ];
        let mut all = String::new();
        for (kind, delivery, message) in cases {
            let result =
                ToolEvent::failure(header("search"), ToolError::new(kind, delivery, message));
            all.push_str(&transcript(&[result], &[]));
            all.push_str("----\n");
        }
        // A command that cannot start: it did not run, and trying again will not help.
        let result = ToolEvent::failure(
            header("notes"),
            ToolError::new(
                ErrorKind::Connect,
                Delivery::NotSent,
                "notes failed: command notes-server ended before its handshake (exit status: 2; stderr: python3: can't open file '/srv/server.py')",
            )
            .with_retryable(false),
        );
        all.push_str(&transcript(&[result], &[]));
        all.push_str("----\n");
        // A tool's own error keeps its content.
        let result = ToolEvent::Result(
            ResultEvent::new(
                header("error"),
                true,
                vec![ContentBlock::text("the tool failed on purpose")],
            )
            .with_error(ToolError::new(
                ErrorKind::ToolError,
                Delivery::Delivered,
                "error reported an error",
            )),
        );
        all.push_str(&transcript(&[result], &[]));
        insta::assert_snapshot!(all);
    }

    #[test]
    fn colour_only_when_asked() {
        let result = ResultEvent::new(header("echo"), false, vec![ContentBlock::text("hi")]);
        assert!(!render(None, &result, &[], Paint::plain()).contains('\x1b'));
        assert!(render(None, &result, &[], Paint::new(true)).contains("\x1b[1;32mok:\x1b[0m"));
    }

    #[test]
    fn server_text_cannot_drive_the_terminal() {
        let result = ResultEvent::new(
            header("echo\x1b]0;title\x07"),
            false,
            vec![ContentBlock::text(
                "red \x1b[31mtext\x1b[0m\r\nline two\ttab\rback",
            )],
        );
        let text = render(None, &result, &[], Paint::plain());
        assert!(
            !text.contains('\x1b') && !text.contains('\r') && !text.contains('\x07'),
            "{text:?}"
        );
        assert!(
            text.contains("red \\u{1b}[31mtext\\u{1b}[0m\nline two\ttab\\u{d}back"),
            "{text}"
        );
        let ToolEvent::Progress(progress) =
            ToolEvent::progress(header("p"), 0.5, None, Some("a\nb\x1b".into()))
        else {
            unreachable!()
        };
        assert_eq!(progress_text(&progress), "0.5 a\\u{a}b\\u{1b}");
    }

    /// Structured content is JSON text for a person: serde_json leaves C1 and bidi
    /// characters raw in strings, so it is escaped like text (keys and values).
    #[test]
    fn structured_content_cannot_drive_the_terminal() {
        use crate::runtime::output::escape::hostile::{TEXT, assert_escaped};
        let result = ResultEvent::new(
            header("structured"),
            false,
            vec![
                ContentBlock::json(json!({TEXT: TEXT, "list": [TEXT]})),
                ContentBlock::image(TEXT, PNG),
            ],
        );
        let saved = [Some(Saved::Failed(TEXT.to_owned()))];
        let text = render(None, &result, &saved, Paint::plain());
        assert_escaped(&text);
        assert!(
            text.contains("\n  \"list\": ["),
            "still pretty JSON: {text}"
        );
    }

    /// A person never reads base64: the copy of an image in structured content is named
    /// as that image, other base64 there as what it is and where it went.
    #[test]
    fn base64_in_structured_content_is_said_not_printed() {
        use base64::Engine as _;
        let png = base64::engine::general_purpose::STANDARD.encode([0x89u8; 300]);
        let wav =
            base64::engine::general_purpose::STANDARD.encode([0x52u8, 0x49, 0x46].repeat(700));
        let id = "a".repeat(200);
        let result = ToolEvent::result(
            header("read_media_file"),
            false,
            vec![
                ContentBlock::json(json!({
                    "content": [
                        {"type": "image", "data": png, "mimeType": "image/png"},
                        {"type": "audio", "data": wav, "mimeType": "audio/wav"}
                    ],
                    "id": id
                })),
                ContentBlock::image("image/png", png.clone()),
                ContentBlock::text(
                    "[audio (audio/wav, about 2100 bytes) was left out: this host passes only text, images and JSON to the model]",
                ),
            ],
        );
        let ToolEvent::Result(event) = &result else {
            unreachable!()
        };
        let found = payloads(event);
        assert_eq!(
            found
                .iter()
                .map(|p| (p.block, p.nth, p.mime_type))
                .collect::<Vec<_>>(),
            [(1, 0, Some("image/png")), (0, 2, Some("audio/wav"))],
            "the image once, then the audio its JSON alone holds"
        );
        assert_eq!(media_file_name("c1", &found[1]), "c1-1-2.wav");
        let unsaved = transcript(std::slice::from_ref(&result), &[]);
        let saved = [
            Some(Saved::To(PathBuf::from("out/c1-2.png"))),
            Some(Saved::To(PathBuf::from("out/c1-1-2.wav"))),
        ];
        let saved = transcript(&[result], &saved);
        for text in [&unsaved, &saved] {
            assert!(
                !text.contains(&png[..64]) && !text.contains(&wav[..64]),
                "{text}"
            );
            assert!(
                text.contains(&id),
                "a string that is not base64 is shown: {text}"
            );
        }
        insta::assert_snapshot!(format!("{unsaved}----\n{saved}"));
    }

    #[test]
    fn file_names_for_saved_images() {
        assert_eq!(image_file_name("c1", 0, "image/png"), "c1-1.png");
        assert_eq!(
            image_file_name("../../etc/x", 2, "image/jpeg"),
            "______etc_x-3.jpg"
        );
        assert_eq!(
            image_file_name("", 0, "IMAGE/SVG+XML; charset=utf-8"),
            "call-1.svg"
        );
        assert_eq!(
            image_file_name("c", 0, "application/octet-stream"),
            "c-1.bin"
        );
    }

    #[test]
    fn sizes_and_numbers() {
        assert_eq!(size(1), "1 byte");
        assert_eq!(size(67), "67 bytes");
        assert_eq!(size(2048), "2.0 KiB");
        assert_eq!(size(3 * 1024 * 1024 + 1), "3.0 MiB");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(1.0 / 3.0), "0.33");
    }
}
