//! `brain-bench hostile --case blocks|values|text|pages`: what a hostile answer costs the
//! client in memory. A legacy MCP server in this process (plain threads, bodies written
//! in chunks as they are generated, so it holds almost nothing) answers with:
//!
//! - `blocks`: a result of 600,000 tiny text blocks (about 15.6 MB) within a 20 MB budget;
//! - `values`: a result whose `structuredContent` is an array of 1,200,000 zeros (about
//!   2.4 MB; within the value bound of a 20 MB budget, one value per 16 bytes);
//! - `text`: one text block of 15 MB within a 20 MB budget (the largest honest answer);
//! - `pages`: a discovery of endless pages of 5,000 tiny tools each.
//!
//! Prints the outcome, the seconds it took and the growth of the peak RSS over the
//! baseline after a warm-up call.

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{TcpListener, TcpStream},
    thread,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use brain_tools::{CallScope, DiscoveryRequest, Endpoint, McpClient};
use serde_json::{Value, json};

const BUDGET: u64 = 20_000_000;

/// Starts the server; returns its URL.
fn serve(case: &'static str) -> anyhow::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            thread::spawn(move || {
                let _ = connection(stream, case);
            });
        }
    });
    Ok(url)
}

/// Serves one keep-alive connection.
fn connection(stream: TcpStream, case: &str) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    loop {
        let mut head = String::new();
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap_or(0);
            }
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        if head.starts_with("DELETE") {
            out.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")?;
            continue;
        }
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let id = request["id"].to_string();
        match request["method"].as_str() {
            Some("initialize") => json_answer(
                &mut out,
                &json!({"jsonrpc": "2.0", "id": request["id"], "result": {
                    "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "hostile", "version": "1"}}})
                .to_string(),
                "mcp-session-id: hostile\r\n",
            )?,
            Some("tools/call") => {
                let (open, item, items, close): (&str, &str, usize, &str) = match case {
                    "blocks" => (
                        r#"{"content":["#,
                        r#"{"type":"text","text":""}"#,
                        600_000,
                        "]}",
                    ),
                    "values" => (
                        r#"{"content":[],"structuredContent":["#,
                        "0",
                        1_200_000,
                        "]}",
                    ),
                    _ => (
                        r#"{"content":[{"type":"text","text":""#,
                        "x",
                        15_000_000,
                        "\"}]}",
                    ),
                };
                let separator = if case == "text" { "" } else { "," };
                let prefix = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#);
                let size = prefix.len()
                    + open.len()
                    + items * item.len()
                    + (items - 1) * separator.len()
                    + close.len()
                    + 1;
                write!(
                    out,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {size}\r\n\r\n{prefix}{open}"
                )?;
                let chunk: String = (0..4096)
                    .map(|i| {
                        if i == 0 {
                            item.to_owned()
                        } else {
                            format!("{separator}{item}")
                        }
                    })
                    .collect();
                let mut written = 0;
                while written < items {
                    let n = (items - written).min(4096);
                    if written > 0 {
                        out.write_all(separator.as_bytes())?;
                    }
                    out.write_all(&chunk.as_bytes()[..chunk_len(item, separator, n)])?;
                    written += n;
                }
                out.write_all(close.as_bytes())?;
                out.write_all(b"}")?;
            }
            Some("tools/list") => {
                let tools: Vec<String> = (0..5000)
                    .map(|i| format!(r#"{{"name":"t{i}","inputSchema":{{"type":"object"}}}}"#))
                    .collect();
                json_answer(
                    &mut out,
                    &format!(
                        r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":[{}],"nextCursor":"more"}}}}"#,
                        tools.join(",")
                    ),
                    "",
                )?
            }
            // server/discover and the like: an older server does not know them.
            Some(_) if !request["id"].is_null() => json_answer(
                &mut out,
                &json!({"jsonrpc": "2.0", "id": request["id"],
                    "error": {"code": -32601, "message": "Method not found"}})
                .to_string(),
                "",
            )?,
            _ => out.write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")?,
        }
    }
}

/// The bytes of `n` items joined by `separator`.
fn chunk_len(item: &str, separator: &str, n: usize) -> usize {
    n * item.len() + (n - 1) * separator.len()
}

fn json_answer(out: &mut TcpStream, body: &str, extra: &str) -> std::io::Result<()> {
    write!(
        out,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Runs one case; `memory` reads (current RSS, peak RSS) in KiB.
pub(crate) async fn run(case: &str, memory: fn() -> (u64, u64)) -> anyhow::Result<Value> {
    let case: &'static str = match case {
        "blocks" => "blocks",
        "values" => "values",
        "text" => "text",
        "pages" => "pages",
        other => anyhow::bail!("--case takes blocks, values, text or pages, not {other:?}"),
    };
    let url = serve(case)?;
    let client = McpClient::new(brain_tools::ClientOptions::default().warm_contexts(false))
        .context("the client builds")?;
    let (baseline, hwm_before) = memory();
    let started = Instant::now();
    let outcome = if case == "pages" {
        match client
            .discover(DiscoveryRequest::new(
                Endpoint::http(url.as_str(), None),
                Duration::from_secs(25),
            ))
            .await
        {
            Ok(found) => format!("ok ({} tools)", found.tools.len()),
            Err(error) => format!("{} ({})", error.kind().as_str(), error.detail()),
        }
    } else {
        let config = brain_tools_config::HostConfig::from_json_value_with_env(
            &json!({"tools": [{"name": "hostile", "url": url, "mcp_tool": "x",
                "input_schema": {"type": "object"}, "tenants": ["bench"],
                "max_output_bytes": BUDGET, "timeout_seconds": 60}]}),
            |_| true,
        )?;
        let host = brain_tools::ToolHost::builder(config.config)
            .client(client.clone())
            .build()?;
        let result = host
            .call(CallScope::new("bench", "s", "c"), "hostile", json!({}))
            .await;
        match &result.error {
            Some(error) => format!("{}/{}", error.kind.as_str(), error.delivery.as_str()),
            None => format!("ok ({} blocks)", result.content.len()),
        }
    };
    let seconds = started.elapsed().as_secs_f64();
    let (_, hwm_after) = memory();
    client.shutdown(Duration::from_secs(5)).await;
    Ok(json!({
        "case": case,
        "outcome": outcome,
        "seconds": seconds,
        "budget_bytes": if case == "pages" { brain_tools::DEFAULT_DISCOVERY_BYTES as u64 } else { BUDGET },
        "baseline_rss_kib": baseline,
        "growth_kib": hwm_after.saturating_sub(hwm_before.max(baseline)),
    }))
}
