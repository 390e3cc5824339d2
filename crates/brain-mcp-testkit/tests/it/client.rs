//! A minimal HTTP/1.1 client over a plain TCP stream (one request per connection), enough for smoke tests.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Everything a test needs from one HTTP exchange.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
    /// False when the connection ended before the body did (a dropped stream).
    pub(crate) complete: bool,
}

impl Reply {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON-RPC messages of the reply: every SSE `data:` event, or the JSON body.
    pub(crate) fn messages(&self) -> Vec<Value> {
        let content_type = self.header("content-type").unwrap_or_default();
        if content_type.starts_with("text/event-stream") {
            sse_data(&self.text())
        } else if content_type.starts_with("application/json") {
            serde_json::from_slice(&self.body).into_iter().collect()
        } else {
            Vec::new()
        }
    }

    /// The one message that answers a request (has `result` or `error`).
    pub(crate) fn answer(&self) -> Value {
        self.messages()
            .into_iter()
            .find(|m| m.get("result").is_some() || m.get("error").is_some())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in {self:?} ({})", self.text()))
    }
}

fn sse_data(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut data = String::new();
    let mut flush = |data: &mut String| {
        if !data.is_empty() {
            if let Ok(value) = serde_json::from_str(data) {
                out.push(value);
            }
            data.clear();
        }
    };
    for line in text.split('\n') {
        let line = line.trim_end_matches('\r');
        if line.is_empty() {
            flush(&mut data);
        } else if let Some(rest) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
        }
    }
    flush(&mut data);
    out
}

/// Sends one request on a fresh connection (`Connection: close`) and reads the reply to the end.
pub(crate) async fn send(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> std::io::Result<Reply> {
    let rest = url.strip_prefix("http://").expect("http URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = TcpStream::connect(authority).await?;
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    let mut raw = Vec::new();
    let mut clean_eof = true;
    loop {
        match stream.read_buf(&mut raw).await {
            Ok(0) => break,
            Ok(_) => {}
            Err(_) => {
                clean_eof = false;
                break;
            }
        }
    }
    parse(&raw, clean_eof)
}

fn parse(raw: &[u8], clean_eof: bool) -> std::io::Result<Reply> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "no response head")
        })?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other("bad status line"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let rest = &raw[end + 4..];
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok());
    let (body, complete) = if chunked {
        dechunk(rest)
    } else if let Some(length) = length {
        (
            rest[..length.min(rest.len())].to_vec(),
            rest.len() >= length,
        )
    } else {
        (rest.to_vec(), clean_eof)
    };
    Ok(Reply {
        status,
        headers,
        body,
        complete,
    })
}

/// Decodes a chunked body; `complete` is whether the final zero-size chunk arrived.
fn dechunk(mut rest: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = rest.windows(2).position(|w| w == b"\r\n") else {
            return (body, false);
        };
        let size_text = String::from_utf8_lossy(&rest[..line_end]);
        let Ok(size) = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
        else {
            return (body, false);
        };
        rest = &rest[line_end + 2..];
        if size == 0 {
            return (body, true);
        }
        if rest.len() < size {
            body.extend_from_slice(rest);
            return (body, false);
        }
        body.extend_from_slice(&rest[..size]);
        rest = rest.get(size + 2..).unwrap_or_default();
    }
}

/// POSTs a JSON-RPC message with the headers every MCP POST carries, plus `extra`.
pub(crate) async fn post(url: &str, extra: &[(&str, &str)], message: &Value) -> Reply {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    headers.extend_from_slice(extra);
    tokio::time::timeout(
        Duration::from_secs(20),
        send("POST", url, &headers, Some(message)),
    )
    .await
    .expect("the server answers within 20 s")
    .expect("the exchange works")
}

pub(crate) fn request(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub(crate) fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

pub(crate) const V2025: &str = "2025-11-25";
pub(crate) const V2026: &str = "2026-07-28";

/// The `_meta` every 2026-07-28 request carries, plus `extra` entries.
pub(crate) fn modern_meta(extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": V2026,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "testkit-it", "version": "0"}
    });
    if let (Some(meta), Value::Object(extra)) = (meta.as_object_mut(), extra) {
        meta.extend(extra);
    }
    meta
}

/// A 2026-07-28 POST: `_meta` in the params, and the headers that go with it.
pub(crate) async fn post_modern(
    url: &str,
    id: u64,
    method: &str,
    mut params: Value,
    extra: &[(&str, &str)],
) -> Reply {
    let extra_meta = params
        .as_object_mut()
        .and_then(|p| p.remove("_meta"))
        .unwrap_or_else(|| json!({}));
    params["_meta"] = modern_meta(extra_meta);
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut headers = vec![("MCP-Protocol-Version", V2026), ("Mcp-Method", method)];
    if let Some(name) = &name {
        headers.push(("Mcp-Name", name));
    }
    headers.extend_from_slice(extra);
    post(url, &headers, &request(id, method, params)).await
}

/// A legacy session: `initialize` and `notifications/initialized`; returns the session id.
pub(crate) async fn open_session(url: &str) -> String {
    let init = post(
        url,
        &[],
        &request(
            1,
            "initialize",
            json!({"protocolVersion": V2025, "capabilities": {}, "clientInfo": {"name": "testkit-it", "version": "0"}}),
        ),
    )
    .await;
    assert_eq!(init.status, 200, "{}", init.text());
    assert_eq!(init.answer()["result"]["protocolVersion"], V2025);
    let session = init
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let initialized = post(
        url,
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", V2025),
        ],
        &notification("notifications/initialized", json!({})),
    )
    .await;
    assert_eq!(initialized.status, 202, "{}", initialized.text());
    session
}

/// A POST inside legacy session `session`.
pub(crate) async fn post_in_session(url: &str, session: &str, message: &Value) -> Reply {
    post(
        url,
        &[("Mcp-Session-Id", session), ("MCP-Protocol-Version", V2025)],
        message,
    )
    .await
}

pub(crate) fn call(id: u64, tool: &str, arguments: Value, token: &str) -> Value {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments, "_meta": {"progressToken": token}}),
    )
}

/// The texts of a `tools/call` result's content.
pub(crate) fn texts(answer: &Value) -> Vec<String> {
    answer["result"]["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter_map(|b| b["text"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The progress notifications among `messages`, as (token, progress, total, message).
pub(crate) fn progress(messages: &[Value]) -> Vec<(Value, f64, Option<f64>, Option<String>)> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            let p = &m["params"];
            (
                p["progressToken"].clone(),
                p["progress"].as_f64().unwrap_or(-1.0),
                p["total"].as_f64(),
                p["message"].as_str().map(str::to_owned),
            )
        })
        .collect()
}
