//! What a non-success HTTP answer says beyond its status, read from its (bounded) body
//! and headers: pure, tested here.
//!
//! - The server's reason, for the error message: a JSON-RPC error's `message`, an OAuth
//!   or API error's `error_description`, `message`, `detail` or `error`, or the first
//!   line of a plain-text body (an HTML page says nothing a person can use in one line).
//!   The caller hides secrets in it and bounds it before it goes anywhere.
//! - Whether the URL serves the old HTTP+SSE transport (2024-11-05): its endpoint is a
//!   GET-only event stream, conventionally at `/sse`, that answers a POST with 404 or 405.

/// The longest reason kept (characters), before it is quoted in a message.
pub(crate) const MAX_REASON_CHARS: usize = 500;

/// The server's reason for refusing with `status`, from a body of `media` type (`None`:
/// not given); none when it only repeats the status (`Forbidden`, `unauthorized`).
pub(crate) fn reason(status: u16, media: Option<&str>, body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?.trim();
    if text.is_empty() {
        return None;
    }
    let found = match media {
        Some(media) if media == "application/json" || media.ends_with("+json") => {
            json_reason(text)?
        }
        // Plain text, unless it is markup (an HTML page served as text/plain).
        Some("text/plain") if !text.starts_with('<') => first_line(text)?,
        // Without a type, JSON if it is JSON, else plain text as above.
        None => {
            json_reason(text).or_else(|| (!text.starts_with('<')).then(|| first_line(text))?)?
        }
        Some(_) => return None,
    };
    let kept: String = found.chars().take(MAX_REASON_CHARS).collect();
    let said = kept.trim().trim_end_matches('.').replace(['_', '-'], " ");
    let repeats = http::StatusCode::from_u16(status)
        .ok()
        .and_then(|status| status.canonical_reason())
        .is_some_and(|phrase| said.eq_ignore_ascii_case(phrase));
    (!said.is_empty() && !repeats).then_some(kept)
}

/// The reason in a JSON body, looked for where the common shapes put it.
fn json_reason(text: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    let string = |pointer: &str| {
        value
            .pointer(pointer)
            .and_then(serde_json::Value::as_str)
            .filter(|text| !text.trim().is_empty())
            .map(str::to_owned)
    };
    [
        "/error/message",
        "/error_description",
        "/message",
        "/detail",
        "/error",
    ]
    .into_iter()
    .find_map(string)
}

fn first_line(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .map(str::to_owned)
}

/// Whether a refused POST without a session went to an endpoint of the old HTTP+SSE
/// transport: a 404 or 405 from a URL whose path ends in `/sse`, or a 405 whose `Allow`
/// header lists GET but not POST.
pub(crate) fn old_sse_transport(url: &str, status: u16, allow: Option<&str>) -> bool {
    if !matches!(status, 404 | 405) {
        return false;
    }
    let path = reqwest::Url::parse(url)
        .map(|url| url.path().trim_end_matches('/').to_ascii_lowercase())
        .unwrap_or_default();
    let get_only = allow.is_some_and(|allow| {
        let methods: Vec<String> = allow
            .split(',')
            .map(|method| method.trim().to_ascii_uppercase())
            .collect();
        methods.iter().any(|m| m == "GET") && !methods.iter().any(|m| m == "POST")
    });
    path.ends_with("/sse") || (status == 405 && get_only)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_found_where_servers_put_them() {
        let json = Some("application/json");
        let cases: [(Option<&str>, &str, Option<&str>); 15] = [
            (
                json,
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Invalid bearer token"}}"#,
                Some("Invalid bearer token"),
            ),
            (
                json,
                r#"{"error":"invalid_token","error_description":"The token expired"}"#,
                Some("The token expired"),
            ),
            (json, r#"{"error":"unauthorized"}"#, Some("unauthorized")),
            (
                json,
                r#"{"message":"Access denied"}"#,
                Some("Access denied"),
            ),
            (
                json,
                r#"{"detail":"Not authenticated"}"#,
                Some("Not authenticated"),
            ),
            (json, r#"{"error":{"code":5}}"#, None),
            (json, r#"["x"]"#, None),
            (
                Some("text/plain"),
                "\n  Access is only allowed at localhost:8080\nmore",
                Some("Access is only allowed at localhost:8080"),
            ),
            (Some("text/html"), "<html><title>403</title></html>", None),
            (Some("text/plain"), "<html><title>403</title></html>", None),
            (None, "Forbidden: no", Some("Forbidden: no")),
            (None, "<!DOCTYPE html><p>no</p>", None),
            (None, r#"{"message":"typed"}"#, Some("typed")),
            (Some("text/plain"), "   \n  ", None),
            (Some("text/plain"), "\u{ff}\u{fe}", Some("\u{ff}\u{fe}")),
        ];
        for (media, body, expected) in cases {
            assert_eq!(
                reason(403, media, body.as_bytes()).as_deref(),
                expected,
                "{media:?} {body}"
            );
        }
        assert_eq!(
            reason(403, Some("text/plain"), &[0xff, 0xfe]),
            None,
            "not UTF-8"
        );
        let long = "x".repeat(10 * MAX_REASON_CHARS);
        assert_eq!(
            reason(403, Some("text/plain"), long.as_bytes()).map(|r| r.chars().count()),
            Some(MAX_REASON_CHARS)
        );
        // A reason that only repeats the status says nothing more.
        for (status, said) in [
            (401, r#"{"error":"unauthorized"}"#),
            (403, "Forbidden"),
            (404, "Not Found."),
            (405, "method_not_allowed"),
        ] {
            let media = if said.starts_with('{') {
                Some("application/json")
            } else {
                Some("text/plain")
            };
            assert_eq!(reason(status, media, said.as_bytes()), None, "{said}");
        }
        assert_eq!(
            reason(404, Some("text/plain"), b"Not Found: Session not found").as_deref(),
            Some("Not Found: Session not found")
        );
    }

    #[test]
    fn the_old_sse_transport_is_recognised() {
        let cases = [
            ("http://127.0.0.1:9/sse", 404, None, true),
            ("http://127.0.0.1:9/SSE/", 405, None, true),
            ("http://127.0.0.1:9/mcp", 405, Some("GET, HEAD"), true),
            (
                "http://127.0.0.1:9/mcp",
                405,
                Some("GET, POST, DELETE"),
                false,
            ),
            ("http://127.0.0.1:9/mcp", 404, None, false),
            ("http://127.0.0.1:9/mcp", 404, Some("GET"), false),
            ("http://127.0.0.1:9/sse", 500, None, false),
            ("http://127.0.0.1:9/messages/sse-like", 404, None, false),
        ];
        for (url, status, allow, old) in cases {
            assert_eq!(
                old_sse_transport(url, status, allow),
                old,
                "{url} {status} {allow:?}"
            );
        }
    }
}
