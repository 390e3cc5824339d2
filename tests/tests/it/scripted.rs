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

/// What the scripted server answers to `tools/call`, given the request id.
pub(crate) type CallAnswer = Arc<dyn Fn(&Value) -> ResponseTemplate + Send + Sync>;

struct Legacy {
    call: CallAnswer,
    calls: Arc<AtomicUsize>,
}

impl Respond for Legacy {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let id = body.get("id").cloned().unwrap_or(Value::Null);
        match body.get("method").and_then(Value::as_str) {
            Some("initialize") => ResponseTemplate::new(200)
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
                (self.call)(&id)
            }
            Some(_) if id.is_null() => ResponseTemplate::new(202),
            _ => ResponseTemplate::new(200).set_body_json(json!({
                "jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found"}
            })),
        }
    }
}

/// A legacy MCP server whose `tools/call` answer is scripted.
pub(crate) struct Scripted {
    pub(crate) server: MockServer,
    pub(crate) calls: Arc<AtomicUsize>,
}

impl Scripted {
    pub(crate) async fn start(call: CallAnswer) -> Self {
        let server = MockServer::start().await;
        let calls = Arc::new(AtomicUsize::new(0));
        Mock::given(method("POST"))
            .and(path("/mcp"))
            .respond_with(Legacy {
                call,
                calls: Arc::clone(&calls),
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

pub(crate) fn sse(events: &[Value]) -> ResponseTemplate {
    let body: String = events
        .iter()
        .map(|event| format!("data: {event}\n\n"))
        .collect();
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
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
