//! HTTP faults served on `/fault/<name>/mcp`: every request on such a path gets the fault.

use std::convert::Infallible;
use std::fmt;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A broken HTTP behaviour, served for every request (POST, GET, DELETE; `initialize` included)
/// on [`TestServer::fault_url`](crate::TestServer::fault_url).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HttpFault {
    /// Never answer: the request is held open until the server shuts down (then 503).
    Hang,
    /// 401 with `WWW-Authenticate: Bearer` and the JSON body `{"error":"unauthorized"}`.
    Status401,
    /// 401 without body or challenge.
    Status401Plain,
    /// 403 with a plain-text body.
    Status403,
    /// 404 `Not Found: Session not found`, as rmcp answers for an expired or unknown session.
    Status404,
    /// 405 with `Allow: POST, GET, DELETE`.
    Status405,
    /// 406 with a plain-text body.
    Status406,
    /// 500 `text/html` page saying Internal Server Error.
    Status500Html,
    /// 502 `text/html` page saying Bad Gateway, as a proxy answers.
    Status502Html,
    /// 200 `text/plain` `hello`.
    WrongContentType,
    /// 200 `application/json` `{not json`.
    MalformedJson,
    /// 200 `application/json` with a JSON-RPC error for the request's id: `-32603` `boom`.
    JsonRpcError,
    /// 200 `application/json` with a valid result for a different id.
    WrongId,
    /// 200 `text/event-stream` that writes one byte per second (SSE comment lines), forever.
    DripOneBytePerSecond,
    /// The request is read, then the connection is closed without any response.
    ResetBeforeResponse,
}

impl HttpFault {
    /// Every fault, in declaration order.
    pub const ALL: [HttpFault; 15] = [
        HttpFault::Hang,
        HttpFault::Status401,
        HttpFault::Status401Plain,
        HttpFault::Status403,
        HttpFault::Status404,
        HttpFault::Status405,
        HttpFault::Status406,
        HttpFault::Status500Html,
        HttpFault::Status502Html,
        HttpFault::WrongContentType,
        HttpFault::MalformedJson,
        HttpFault::JsonRpcError,
        HttpFault::WrongId,
        HttpFault::DripOneBytePerSecond,
        HttpFault::ResetBeforeResponse,
    ];

    /// The fault's path segment: `fault_url` is `http://HOST/fault/<segment>/mcp`.
    pub fn path_segment(self) -> &'static str {
        match self {
            HttpFault::Hang => "hang",
            HttpFault::Status401 => "401",
            HttpFault::Status401Plain => "401-plain",
            HttpFault::Status403 => "403",
            HttpFault::Status404 => "404",
            HttpFault::Status405 => "405",
            HttpFault::Status406 => "406",
            HttpFault::Status500Html => "500-html",
            HttpFault::Status502Html => "502-html",
            HttpFault::WrongContentType => "wrong-content-type",
            HttpFault::MalformedJson => "malformed-json",
            HttpFault::JsonRpcError => "jsonrpc-error",
            HttpFault::WrongId => "wrong-id",
            HttpFault::DripOneBytePerSecond => "drip",
            HttpFault::ResetBeforeResponse => "reset",
        }
    }

    /// The fault whose [`path_segment`](Self::path_segment) is `segment`.
    pub fn from_path_segment(segment: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|fault| fault.path_segment() == segment)
    }
}

impl fmt::Display for HttpFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.path_segment())
    }
}

fn plain(status: StatusCode, body: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}

fn html(status: StatusCode, title: &str) -> Response {
    let page = format!(
        "<html><head><title>{code} {title}</title></head><body><center><h1>{code} {title}</h1></center><hr><center>nginx</center></body></html>\n",
        code = status.as_u16()
    );
    (status, [(header::CONTENT_TYPE, "text/html")], page).into_response()
}

fn json_body(value: &Value) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

/// An id that is certainly not `id`.
fn other_id(id: Option<&Value>) -> Value {
    match id {
        Some(Value::Number(n)) => match n.as_i64() {
            Some(n) => json!(n.wrapping_add(1000)),
            None => json!("wrong-id"),
        },
        Some(Value::String(s)) => json!(format!("{s}-wrong")),
        _ => json!(999_999),
    }
}

/// A well-formed result for `method`.
fn plausible_result(method: Option<&str>) -> Value {
    match method {
        Some("initialize") => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "brain-mcp-testkit", "version": env!("CARGO_PKG_VERSION")}
        }),
        Some("tools/list") => json!({"tools": []}),
        Some("tools/call") => {
            json!({"content": [{"type": "text", "text": "wrong id"}], "isError": false})
        }
        _ => json!({}),
    }
}

const DRIP: &[u8] = b": drip\n";

/// Serves `fault` for one request whose JSON body (if any) is `message`.
/// `kill` closes this request's connection; `shutdown` fires when the server stops.
pub(crate) async fn respond(
    fault: HttpFault,
    message: Option<&Value>,
    kill: Option<&CancellationToken>,
    shutdown: &CancellationToken,
) -> Response {
    let id = message.and_then(|m| m.get("id"));
    let method = message
        .and_then(|m| m.get("method"))
        .and_then(Value::as_str);
    match fault {
        HttpFault::Hang => {
            shutdown.cancelled().await;
            plain(StatusCode::SERVICE_UNAVAILABLE, "shutting down")
        }
        HttpFault::Status401 => (
            StatusCode::UNAUTHORIZED,
            [
                (header::WWW_AUTHENTICATE, "Bearer"),
                (header::CONTENT_TYPE, "application/json"),
            ],
            r#"{"error":"unauthorized"}"#,
        )
            .into_response(),
        HttpFault::Status401Plain => StatusCode::UNAUTHORIZED.into_response(),
        HttpFault::Status403 => plain(StatusCode::FORBIDDEN, "Forbidden"),
        HttpFault::Status404 => plain(StatusCode::NOT_FOUND, "Not Found: Session not found"),
        HttpFault::Status405 => {
            let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed");
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST, GET, DELETE"));
            response
        }
        HttpFault::Status406 => plain(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: Client must accept both application/json and text/event-stream",
        ),
        HttpFault::Status500Html => {
            html(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
        }
        HttpFault::Status502Html => html(StatusCode::BAD_GATEWAY, "Bad Gateway"),
        HttpFault::WrongContentType => plain(StatusCode::OK, "hello"),
        HttpFault::MalformedJson => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            "{not json",
        )
            .into_response(),
        HttpFault::JsonRpcError => json_body(&json!({
            "jsonrpc": "2.0",
            "id": id.cloned().unwrap_or(Value::Null),
            "error": {"code": -32603, "message": "boom"}
        })),
        HttpFault::WrongId => json_body(&json!({
            "jsonrpc": "2.0",
            "id": other_id(id),
            "result": plausible_result(method)
        })),
        HttpFault::DripOneBytePerSecond => {
            let shutdown = shutdown.clone();
            let bytes = futures::stream::unfold(0usize, move |i| {
                let shutdown = shutdown.clone();
                async move {
                    if i > 0 {
                        tokio::select! {
                            () = tokio::time::sleep(Duration::from_secs(1)) => {}
                            () = shutdown.cancelled() => return None,
                        }
                    }
                    let at = i % DRIP.len();
                    let byte = Bytes::from_static(&DRIP[at..=at]);
                    Some((Ok::<_, Infallible>(byte), i + 1))
                }
            });
            (
                StatusCode::OK,
                [
                    (header::CONTENT_TYPE, "text/event-stream"),
                    (header::CACHE_CONTROL, "no-cache"),
                ],
                Body::from_stream(bytes),
            )
                .into_response()
        }
        HttpFault::ResetBeforeResponse => {
            if let Some(kill) = kill {
                kill.cancel();
            }
            // The connection task drops this future with the connection.
            std::future::pending().await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_round_trip_and_are_distinct() {
        for fault in HttpFault::ALL {
            assert_eq!(
                HttpFault::from_path_segment(fault.path_segment()),
                Some(fault)
            );
        }
        let mut segments: Vec<_> = HttpFault::ALL.iter().map(|f| f.path_segment()).collect();
        segments.sort_unstable();
        segments.dedup();
        assert_eq!(segments.len(), HttpFault::ALL.len());
        assert_eq!(HttpFault::from_path_segment("418"), None);
    }

    #[test]
    fn wrong_ids_differ() {
        assert_eq!(other_id(Some(&json!(1))), json!(1001));
        assert_eq!(other_id(Some(&json!("a"))), json!("a-wrong"));
        assert_eq!(other_id(None), json!(999_999));
    }
}
