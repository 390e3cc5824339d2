//! Why a call failed, and whether the server may have run it.

use std::fmt;

/// What went wrong, in the terms a host acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The server could not be reached: connection refused or reset before the request
    /// was written, DNS, TLS, or a stdio command that could not start or died before its
    /// handshake.
    Connect,
    /// The server answered with an HTTP status that is not success.
    HttpStatus,
    /// The server's answer was not the MCP it should be: a JSON-RPC error, malformed
    /// JSON, a wrong content type, a stream that ended before the result, a wrong id.
    Protocol,
    /// The call's deadline passed.
    Timeout,
    /// The caller cancelled the call.
    Cancelled,
    /// The response went over the call's byte budget.
    OutputTooLarge,
}

impl ErrorKind {
    /// The snake_case name used in events (`connect`, `http_status`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::HttpStatus => "http_status",
            ErrorKind::Protocol => "protocol",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::OutputTooLarge => "output_too_large",
        }
    }
}

/// Whether a failed call may have reached the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Delivery {
    /// The `tools/call` request was never written: the server did not run the tool.
    NotSent,
    /// The request was (or may have been) written: the server may have run the tool.
    Unknown,
    /// The server answered the request: it ran (or refused) the tool.
    Delivered,
}

impl Delivery {
    /// The snake_case name used in events (`not_sent`, `unknown`, `delivered`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Delivery::NotSent => "not_sent",
            Delivery::Unknown => "unknown",
            Delivery::Delivered => "delivered",
        }
    }
}

/// A call that did not produce a result.
///
/// The detail is built by this crate from fixed phrases, HTTP status codes and the
/// server's JSON-RPC error message (truncated); it never holds the bearer token, the
/// arguments, a URL path or query, or a response body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    kind: ErrorKind,
    delivery: Delivery,
    status: Option<u16>,
    detail: String,
}

impl CallError {
    pub(crate) fn new(kind: ErrorKind, delivery: Delivery, detail: impl Into<String>) -> Self {
        Self {
            kind,
            delivery,
            status: None,
            detail: detail.into(),
        }
    }

    pub(crate) fn http_status(status: u16, delivery: Delivery) -> Self {
        Self {
            kind: ErrorKind::HttpStatus,
            delivery,
            status: Some(status),
            detail: format!("the server answered HTTP {status}{}", status_hint(status)),
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Whether the server may have run the tool.
    pub fn delivery(&self) -> Delivery {
        self.delivery
    }

    /// The HTTP status, for [`ErrorKind::HttpStatus`].
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// A clause describing the failure, e.g. `the server answered HTTP 401 (unauthorized)`.
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// Adds what explains the failure (for example a stdio server's exit status).
    pub(crate) fn with_detail_suffix(mut self, suffix: &str) -> Self {
        self.detail.push_str(suffix);
        self
    }
}

fn status_hint(status: u16) -> &'static str {
    match status {
        401 => " (unauthorized: check the token)",
        403 => " (forbidden)",
        404 => " (not found, or the session expired)",
        405 => " (method not allowed)",
        406 => " (not acceptable)",
        429 => " (too many requests)",
        500..=599 => " (server error)",
        _ => "",
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for CallError {}

/// Shortens server-provided text for a message: one line, at most `max` characters.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let mut line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(max)
        .collect();
    if text.chars().count() > max {
        line.push('…');
    }
    line
}
