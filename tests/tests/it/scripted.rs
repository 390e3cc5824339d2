//! Scripted servers for faults the testkit does not make: wiremock for HTTP answers, a raw
//! listener for connection-level faults.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use serde_json::{Value, json};
use wiremock::{
    Mock, MockServer, Request, Respond, ResponseTemplate,
    matchers::{method, path},
};

/// What the scripted server answers to `tools/call`, given the request (its `id`, its
/// `params._meta.progressToken`, ...).
pub(crate) type CallAnswer = Arc<dyn Fn(&Value) -> ResponseTemplate + Send + Sync>;

struct Answers {
    call: CallAnswer,
    calls: Arc<AtomicUsize>,
    modern: bool,
}

impl Respond for Answers {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let id = body.get("id").cloned().unwrap_or(Value::Null);
        match body.get("method").and_then(Value::as_str) {
            Some("server/discover") if self.modern => ResponseTemplate::new(200).set_body_json(json!({
                "jsonrpc": "2.0", "id": id,
                "result": {
                    "resultType": "complete",
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}},
                    "ttlMs": 0,
                    "cacheScope": "public",
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}}
                }
            })),
            Some("initialize") if !self.modern => ResponseTemplate::new(200)
                .insert_header("mcp-session-id", "scripted-session")
                .set_body_json(json!({
                    "jsonrpc": "2.0", "id": id,
                    "result": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "scripted", "version": "1"}
                    }
                })),
            Some("tools/call") => {
                self.calls.fetch_add(1, Ordering::SeqCst);
                (self.call)(&body)
            }
            Some(_) if id.is_null() => ResponseTemplate::new(202),
            _ => ResponseTemplate::new(200).set_body_json(json!({
                "jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found"}
            })),
        }
    }
}

/// An MCP server whose `tools/call` answer is scripted: legacy (a session per call), or
/// 2026-07-28 (`server/discover`, no session).
pub(crate) struct Scripted {
    pub(crate) server: MockServer,
    pub(crate) calls: Arc<AtomicUsize>,
}

impl Scripted {
    /// A legacy server.
    pub(crate) async fn start(call: CallAnswer) -> Self {
        Self::start_in(call, false).await
    }

    /// A 2026-07-28 server.
    pub(crate) async fn start_modern(call: CallAnswer) -> Self {
        Self::start_in(call, true).await
    }

    async fn start_in(call: CallAnswer, modern: bool) -> Self {
        Self::start_with(MockServer::start().await, call, modern).await
    }

    async fn start_with(server: MockServer, call: CallAnswer, modern: bool) -> Self {
        let server = answering(server).await;
        let calls = Arc::new(AtomicUsize::new(0));
        Mock::given(method("POST"))
            .and(path("/mcp"))
            .respond_with(Answers {
                call,
                calls: Arc::clone(&calls),
                modern,
            })
            .mount(&server)
            .await;
        Mock::given(method("DELETE"))
            .and(path("/mcp"))
            .respond_with(ResponseTemplate::new(200))
            .mount(&server)
            .await;
        Self { server, calls }
    }

    pub(crate) fn url(&self) -> String {
        format!("{}/mcp", self.server.uri())
    }

    pub(crate) async fn deletes(&self) -> usize {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .filter(|request| request.method == wiremock::http::Method::DELETE)
            .count()
    }
}

/// A wiremock server once it has answered a request, with nothing mounted or recorded.
/// Its thread builds its runtime (and opens that runtime's descriptors) after `start`
/// returns, so a leak check whose baseline is taken before then would count those
/// descriptors as the client's.
pub(crate) async fn answering(server: MockServer) -> MockServer {
    let address = *server.address();
    let answer = tokio::task::spawn_blocking(move || -> std::io::Result<Vec<u8>> {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(address)?;
        stream.write_all(b"GET /ready HTTP/1.1\r\nhost: ready\r\nconnection: close\r\n\r\n")?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer)?;
        Ok(answer)
    })
    .await
    .expect("the probe ends");
    assert!(
        answer
            .as_ref()
            .is_ok_and(|answer| answer.starts_with(b"HTTP/1.1 ")),
        "the scripted server answers: {answer:?}"
    );
    server.reset().await;
    server
}

pub(crate) fn sse(events: &[Value]) -> ResponseTemplate {
    let body: String = events
        .iter()
        .map(|event| format!("data: {event}\n\n"))
        .collect();
    ResponseTemplate::new(200).set_event_stream(body)
}

pub(crate) fn progress(token: &str, n: u64) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/progress",
           "params": {"progressToken": token, "progress": n, "total": 3}})
}

/// A TCP listener that accepts and closes every connection at once, before reading.
pub(crate) async fn closing_listener() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            drop(stream);
        }
    });
    (url, task)
}

/// Bodies with their content type: wiremock's `set_body_string` always answers
/// `text/plain`, whatever header was inserted.
pub(crate) trait Body {
    /// An SSE body (`text/event-stream`).
    fn set_event_stream(self, body: impl Into<String>) -> Self;
    /// JSON written by hand (`application/json`).
    fn set_json_text(self, body: impl Into<String>) -> Self;
}

impl Body for ResponseTemplate {
    fn set_event_stream(self, body: impl Into<String>) -> Self {
        self.set_body_raw(body.into().into_bytes(), "text/event-stream")
    }

    fn set_json_text(self, body: impl Into<String>) -> Self {
        self.set_body_raw(body.into().into_bytes(), "application/json")
    }
}

/// A legacy MCP server that closes every connection right after its answer, without
/// saying so (no `Connection: close`): a client that reuses a pooled connection races
/// the close. Counts the `tools/call` requests it read.
pub(crate) async fn closing_after_answer() -> (String, Arc<AtomicUsize>, tokio::task::JoinHandle<()>)
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let task = tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let calls = Arc::clone(&counted);
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buffer = [0u8; 4096];
                // Headers, then as many body bytes as Content-Length says.
                let (head_end, length) = loop {
                    let Ok(read @ 1..) = stream.read(&mut buffer).await else {
                        return;
                    };
                    request.extend_from_slice(&buffer[..read]);
                    if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&request[..end]).to_ascii_lowercase();
                        let length = head
                            .lines()
                            .find_map(|line| line.strip_prefix("content-length:"))
                            .and_then(|value| value.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        break (end + 4, length);
                    }
                };
                while request.len() < head_end + length {
                    let Ok(read @ 1..) = stream.read(&mut buffer).await else {
                        return;
                    };
                    request.extend_from_slice(&buffer[..read]);
                }
                let head = String::from_utf8_lossy(&request[..head_end]).into_owned();
                let body: Value = serde_json::from_slice(&request[head_end..head_end + length])
                    .unwrap_or(Value::Null);
                let id = body.get("id").cloned().unwrap_or(Value::Null);
                let json = |value: Value, extra: &str| {
                    let text = value.to_string();
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n{text}",
                        text.len()
                    )
                };
                let answer = if head.starts_with("DELETE") {
                    "HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n".to_owned()
                } else {
                    match body.get("method").and_then(Value::as_str) {
                        Some("initialize") => json(
                            json!({"jsonrpc": "2.0", "id": id, "result": {
                                "protocolVersion": "2025-11-25",
                                "capabilities": {"tools": {}},
                                "serverInfo": {"name": "closing", "version": "1"}}}),
                            "mcp-session-id: closing-session\r\n",
                        ),
                        Some("tools/call") => {
                            calls.fetch_add(1, Ordering::SeqCst);
                            json(
                                json!({"jsonrpc": "2.0", "id": id, "result": {
                                    "content": [{"type": "text", "text": "done"}]}}),
                                "",
                            )
                        }
                        _ => "HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n".to_owned(),
                    }
                };
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.flush().await;
                // And the connection ends here, unannounced.
            });
        }
    });
    (url, calls, task)
}

/// What a [`Quiet`] server answers to `tools/call`, given the request: the status, the
/// content type and the body.
pub(crate) type QuietAnswer = Arc<dyn Fn(&Value) -> (u16, &'static str, String) + Send + Sync>;

/// A legacy MCP server on a raw listener that keeps nothing per request, for the soak:
/// wiremock keeps every request a mock matched (recording off or not), so a soak against it
/// would measure the server's growth, not the client's. It answers `initialize` (one session
/// id), notifications (202), `DELETE` (200) and `tools/call` (scripted); HTTP/1.1 with
/// keep-alive and `Content-Length` bodies only, which is all our client sends.
pub(crate) struct Quiet {
    url: String,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Quiet {
    fn drop(&mut self) {
        // Its connections are tasks of its own set: they end with it.
        self.task.abort();
    }
}

impl Quiet {
    pub(crate) async fn start(answer: QuietAnswer) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { return };
                        connections.spawn(quiet_connection(stream, Arc::clone(&answer)));
                    }
                    Some(_) = connections.join_next() => {}
                }
            }
        });
        Self { url, task }
    }

    pub(crate) fn url(&self) -> String {
        self.url.clone()
    }
}

async fn quiet_connection(mut stream: tokio::net::TcpStream, answer: QuietAnswer) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buffer = Vec::new();
    loop {
        // The head, then a body of its Content-Length.
        let head_end = loop {
            if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let mut chunk = [0u8; 8192];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
            if buffer.len() > 64 * 1024 {
                return;
            }
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(0);
        while buffer.len() < head_end + length {
            let mut chunk = [0u8; 8192];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        let body: Value =
            serde_json::from_slice(&buffer[head_end..head_end + length]).unwrap_or(Value::Null);
        buffer.drain(..head_end + length);
        let id = body.get("id").cloned().unwrap_or(Value::Null);
        let (status, content_type, text, session) = if head.starts_with("delete ") {
            (200, "text/plain", String::new(), false)
        } else {
            match body.get("method").and_then(Value::as_str) {
                Some("initialize") => (
                    200,
                    "application/json",
                    json!({"jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "quiet", "version": "1"}
                    }})
                    .to_string(),
                    true,
                ),
                Some("tools/call") => {
                    let (status, content_type, text) = answer(&body);
                    (status, content_type, text, false)
                }
                Some(_) if id.is_null() => (202, "text/plain", String::new(), false),
                _ => (
                    200,
                    "application/json",
                    json!({"jsonrpc": "2.0", "id": id,
                           "error": {"code": -32601, "message": "Method not found"}})
                    .to_string(),
                    false,
                ),
            }
        };
        let response = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n{}\r\n{text}",
            text.len(),
            if session {
                "mcp-session-id: quiet-session\r\n"
            } else {
                ""
            },
        );
        if stream.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}
