//! Listing tools is bounded by the bytes read, not by what a server sends: a server that
//! lists endless pages of large tools costs a discovery its byte budget, and a call whose
//! binding needs the listing (`x-mcp-header`) reads at most the budget for calls' listings,
//! then goes on.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use brain_tools::{
    CallScope, ClientOptions, DiscoveryRequest, Endpoint, ErrorKind, McpClient, ToolHost,
};
use brain_tools_config::HostConfig;
use serde_json::{Value, json};
use wiremock::{
    Mock, Request, Respond, ResponseTemplate,
    matchers::{body_partial_json, method},
};

use crate::scripted::Scripted;

/// One page: 8 tools of 512 KiB each (4 MiB).
const PAGE_BYTES: usize = 8 * 512 * 1024;

/// Answers every `tools/list` with a full page and a cursor to the next one.
struct EndlessPages {
    lists: Arc<AtomicUsize>,
    tools: Value,
}

impl Respond for EndlessPages {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let page = self.lists.fetch_add(1, Ordering::SeqCst) + 1;
        ResponseTemplate::new(200).set_body_json(json!({
            "jsonrpc": "2.0", "id": body["id"],
            "result": {"tools": self.tools, "nextCursor": format!("page-{page}")}
        }))
    }
}

/// A 2026-07-28 server whose `tools/call` echoes, and whose listing never ends; the count
/// of `tools/list` requests it answered.
async fn endless_server() -> (Scripted, Arc<AtomicUsize>) {
    let scripted = Scripted::start_modern(Arc::new(|body: &Value| {
        ResponseTemplate::new(200).set_body_json(json!({
            "jsonrpc": "2.0", "id": body["id"],
            "result": {"content": [{"type": "text", "text": "ran"}], "isError": false}
        }))
    }))
    .await;
    let tools: Vec<Value> = (0..8)
        .map(|i| {
            json!({
                "name": format!("tool{i}"),
                "description": "x".repeat(512 * 1024),
                "inputSchema": {"type": "object"}
            })
        })
        .collect();
    let lists = Arc::new(AtomicUsize::new(0));
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"method": "tools/list"})))
        .respond_with(EndlessPages {
            lists: Arc::clone(&lists),
            tools: json!(tools),
        })
        .with_priority(1)
        .mount(&scripted.server)
        .await;
    (scripted, lists)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discovery_of_endless_pages_stops_at_its_byte_budget() {
    let (server, lists) = endless_server().await;
    let client = McpClient::new(ClientOptions::default()).expect("the client builds");
    let budget = 3 * PAGE_BYTES;
    let request =
        DiscoveryRequest::new(Endpoint::http(server.url(), None), Duration::from_secs(20))
            .max_bytes(budget);
    let error = client
        .discover(request)
        .await
        .expect_err("endless pages cannot be listed within a budget");
    assert_eq!(error.kind(), ErrorKind::OutputTooLarge, "{error}");
    let read = lists.load(Ordering::SeqCst);
    assert!(
        read <= budget / PAGE_BYTES + 1,
        "{read} pages of {PAGE_BYTES} bytes read against a budget of {budget}"
    );
    client.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_needs_the_listing_reads_at_most_its_budget_and_goes_on() {
    let (server, lists) = endless_server().await;
    let config = HostConfig::from_json_value_with_env(
        &json!({"tools": [{
            "name": "echo", "url": server.url(), "mcp_tool": "echo", "tenants": ["local"],
            "timeout_seconds": 30,
            "input_schema": {
                "type": "object",
                "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}
            }
        }]}),
        |_| true,
    )
    .unwrap()
    .config;
    let client = McpClient::new(ClientOptions::default()).expect("the client builds");
    let host = ToolHost::builder(config)
        .client(client.clone())
        .build()
        .unwrap();
    let result = host
        .call(
            CallScope::new("local", "s", "c1"),
            "echo",
            json!({"region": "eu"}),
        )
        .await;
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(server.calls.load(Ordering::SeqCst), 1);
    let read = lists.load(Ordering::SeqCst);
    let budget = brain_tools::DEFAULT_DISCOVERY_BYTES;
    assert!(
        (1..=budget / PAGE_BYTES + 1).contains(&read),
        "{read} pages of {PAGE_BYTES} bytes read against a budget of {budget}"
    );
    client.shutdown(Duration::from_secs(5)).await;
}

/// A handshake answer bounded too: an `initialize` result of a million values (a few MB,
/// within every byte bound) is refused before rmcp reads it, and the call never goes out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handshake_answer_of_a_million_values_is_refused() {
    let server = Scripted::start(Arc::new(|body: &Value| {
        ResponseTemplate::new(200).set_body_json(json!({
            "jsonrpc": "2.0", "id": body["id"],
            "result": {"content": [{"type": "text", "text": "ran"}]}
        }))
    }))
    .await;
    let zeros = vec![0u8; 1_000_000];
    Mock::given(method("POST"))
        .and(body_partial_json(json!({"method": "initialize"})))
        .respond_with(move |request: &Request| {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            ResponseTemplate::new(200)
                .insert_header("mcp-session-id", "huge")
                .set_body_json(json!({
                    "jsonrpc": "2.0", "id": body["id"],
                    "result": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}, "experimental": {"x": zeros}},
                        "serverInfo": {"name": "huge", "version": "1"}
                    }
                }))
        })
        .with_priority(1)
        .mount(&server.server)
        .await;
    let client = McpClient::new(ClientOptions::default().era(brain_tools::EraPreference::Legacy))
        .expect("the client builds");
    let request = brain_mcp_transport::CallRequest::new(
        Endpoint::http(server.url(), None),
        "echo",
        "c1",
        Duration::from_secs(20),
    );
    let error = client
        .call(request)
        .await
        .expect_err("the handshake is refused");
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::OutputTooLarge, brain_tools::Delivery::NotSent),
        "{error}"
    );
    assert_eq!(
        server.calls.load(Ordering::SeqCst),
        0,
        "the call never went out"
    );
    client.shutdown(Duration::from_secs(5)).await;
}
