//! Turning a response body into SSE events as the HTML Standard's event-stream
//! interpretation says (<https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation>):
//! the body is UTF-8 with invalid bytes replaced, a line without a colon is a field with an
//! empty value, an unknown field and a `retry` that is not digits are ignored, a repeated
//! `event` or `id` replaces the earlier one, an `id` holding NUL is ignored, and an event
//! not ended by a blank line when the body ends is dropped. A `retry` is a server's number
//! that becomes a delay: it is bounded here, where it is read ([`MAX_RETRY_MS`]), so no
//! reader meets a larger one.
//!
//! `sse-stream`, which rmcp's own transport uses, fails the whole stream on each of those
//! (and so the call, as a broken connection, although the server answered in full). The
//! events keep its `Sse` type, which rmcp takes. An event is given on when it set any field
//! (an event with only an `id`, the 2025-11-25 priming event, included), as `sse-stream`
//! does. The bytes a line or an event may hold are bounded before this, by the event size
//! limit of the stream's byte counter.

use bytes::Bytes;
use futures::{Stream, StreamExt, stream};
use rmcp::transport::streamable_http_client::SseError;
use sse_stream::Sse;

const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";
/// The longest reconnection delay a server's `retry` may ask for, in milliseconds.
pub(super) const MAX_RETRY_MS: u64 = 5_000;

/// The parser's state between chunks of the body.
#[derive(Debug, Default)]
pub(super) struct Parser {
    /// The bytes of a line not yet ended.
    line: Vec<u8>,
    /// The event being read.
    event: Option<Sse>,
    /// Whether the body's first bytes (and a byte-order mark) are still to come.
    started: bool,
    /// The last chunk ended in CR: a LF starting the next one ends no other line.
    after_cr: bool,
}

impl Parser {
    /// Reads a chunk of the body; returns the events it completed.
    pub(super) fn feed(&mut self, mut bytes: &[u8]) -> Vec<Sse> {
        let mut events = Vec::new();
        if self.after_cr {
            self.after_cr = false;
            bytes = bytes.strip_prefix(b"\n").unwrap_or(bytes);
        }
        while let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            self.line.extend_from_slice(&bytes[..end]);
            let line = std::mem::take(&mut self.line);
            self.read_line(&line, &mut events);
            self.line = line;
            self.line.clear();
            let delimiter = bytes[end];
            bytes = &bytes[end + 1..];
            if delimiter == b'\r' {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
        }
        self.line.extend_from_slice(bytes);
        events
    }

    fn read_line(&mut self, mut line: &[u8], events: &mut Vec<Sse>) {
        if !self.started {
            self.started = true;
            line = line.strip_prefix(BYTE_ORDER_MARK).unwrap_or(line);
        }
        if line.is_empty() {
            events.extend(self.event.take());
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(0) => return, // a comment
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        let text = || String::from_utf8_lossy(value).into_owned();
        match field {
            b"data" => {
                let event = self.event.get_or_insert_default();
                match &mut event.data {
                    Some(data) => {
                        data.push('\n');
                        data.push_str(&text());
                    }
                    None => event.data = Some(text()),
                }
            }
            b"event" => self.event.get_or_insert_default().event = Some(text()),
            b"id" if !value.contains(&0) => self.event.get_or_insert_default().id = Some(text()),
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits only, so UTF-8; any number of them (a u64 holds 20) saturates
                // at the bound.
                let retry = text().parse().unwrap_or(u64::MAX).min(MAX_RETRY_MS);
                self.event.get_or_insert_default().retry = Some(retry);
            }
            _ => {}
        }
    }
}

/// The events of a body; an error of the body ends the stream with that error.
pub(super) fn events<E>(
    bytes: impl Stream<Item = Result<Bytes, E>> + Send + 'static,
) -> impl Stream<Item = Result<Sse, SseError>> + Send + 'static
where
    E: std::error::Error + Send + Sync + 'static,
{
    let mut parser = Parser::default();
    bytes.flat_map(move |chunk| {
        let items: Vec<Result<Sse, SseError>> = match chunk {
            Ok(bytes) => parser.feed(&bytes).into_iter().map(Ok).collect(),
            Err(error) => vec![Err(SseError::Body(Box::new(error)))],
        };
        stream::iter(items)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sse(event: Option<&str>, data: Option<&str>, id: Option<&str>, retry: Option<u64>) -> Sse {
        Sse {
            event: event.map(str::to_owned),
            data: data.map(str::to_owned),
            id: id.map(str::to_owned),
            retry,
        }
    }

    fn parse(chunks: &[&[u8]]) -> Vec<Sse> {
        let mut parser = Parser::default();
        chunks.iter().flat_map(|chunk| parser.feed(chunk)).collect()
    }

    #[test]
    fn events_as_the_html_standard_reads_them() {
        let d = |data: &str| sse(None, Some(data), None, None);
        type Case<'a> = (&'a str, Vec<&'a [u8]>, Vec<Sse>);
        let cases: Vec<Case<'_>> = vec![
            ("one event", vec![b"data: {}\n\n"], vec![d("{}")]),
            (
                "no space after the colon",
                vec![b"data:{}\n\n"],
                vec![d("{}")],
            ),
            (
                "only one space is removed",
                vec![b"data:  x\n\n"],
                vec![d(" x")],
            ),
            (
                "data lines joined",
                vec![b"data: a\ndata: b\n\n"],
                vec![d("a\nb")],
            ),
            ("CRLF", vec![b"data: a\r\n\r\n"], vec![d("a")]),
            ("bare CR", vec![b"data: a\r\r"], vec![d("a")]),
            (
                "CRLF split between chunks",
                vec![b"data: a\r", b"\n\r", b"\n"],
                vec![d("a")],
            ),
            (
                "a line split between chunks",
                vec![b"da", b"ta: a", b"b\n", b"\n"],
                vec![d("ab")],
            ),
            (
                "a byte-order mark first",
                vec![b"\xEF\xBB\xBFdata: a\n\n"],
                vec![d("a")],
            ),
            (
                "a comment",
                vec![b": keep-alive\ndata: a\n\n"],
                vec![d("a")],
            ),
            (
                "an unknown field is ignored",
                vec![b"foo: bar\ndata: a\n\n"],
                vec![d("a")],
            ),
            ("a line without a colon", vec![b"data\n\n"], vec![d("")]),
            (
                "an unknown line without a colon",
                vec![b"junk\ndata: a\n\n"],
                vec![d("a")],
            ),
            (
                "a repeated event and id: the last wins",
                vec![b"event: a\nevent: message\nid: 1\nid: 2\ndata: x\n\n"],
                vec![sse(Some("message"), Some("x"), Some("2"), None)],
            ),
            (
                "an id holding NUL is ignored",
                vec![b"id: a\0b\ndata: x\n\n"],
                vec![d("x")],
            ),
            (
                "retry that is not digits is ignored",
                vec![b"retry: soon\nretry: -5\nretry: 1e3\ndata: x\n\n"],
                vec![d("x")],
            ),
            (
                "retry and id",
                vec![b"id: 7\nretry: 1000\n\n"],
                vec![sse(None, None, Some("7"), Some(1000))],
            ),
            (
                "a retry is bounded, however large",
                vec![b"retry: 18446744073709551615\n\nretry: 99999999999999999999999999\n\n"],
                vec![
                    sse(None, None, None, Some(MAX_RETRY_MS)),
                    sse(None, None, None, Some(MAX_RETRY_MS)),
                ],
            ),
            (
                "invalid UTF-8 is replaced",
                vec![b"data: a\xFFb\n\n"],
                vec![d("a\u{FFFD}b")],
            ),
            (
                "an event without its blank line at the end is dropped",
                vec![b"data: a\n\ndata: b\n"],
                vec![d("a")],
            ),
            ("blank lines alone are no events", vec![b"\n\n\n"], vec![]),
        ];
        for (name, chunks, expected) in cases {
            assert_eq!(parse(&chunks), expected, "{name}");
        }
    }
}
