//! A host over the testkit, and a sink that keeps events.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use brain_mcp_testkit::{Era, HttpFault, ServerOptions, TestServer};
use brain_tools::{CallScope, ClientOptions, EraPreference, McpClient, ToolHost};
use brain_tools_config::HostConfig;
use brain_tools_events::{ResultEvent, ToolEvent};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The testkit tools, as bindings; `server` is `{"url": ...}` or `{"command": ...}`.
pub(crate) fn bindings(server: &Value, extra: &[(&str, Value)]) -> Value {
    let mut tools = Vec::new();
    let object = |schema: Value| schema;
    for (name, schema) in [
        (
            "echo",
            json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        ),
        (
            "progress",
            json!({"type": "object", "properties": {"steps": {"type": "integer"}, "delay_ms": {"type": "integer"}}}),
        ),
        ("image", json!({"type": "object"})),
        (
            "structured",
            json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        ),
        ("error", json!({"type": "object"})),
        (
            "sleep",
            json!({"type": "object", "properties": {"ms": {"type": "integer"}}}),
        ),
        ("hang", json!({"type": "object"})),
        (
            "big",
            json!({"type": "object", "properties": {"bytes": {"type": "integer"}}}),
        ),
        ("resource_mix", json!({"type": "object"})),
        (
            "drop_mid_stream",
            json!({"type": "object", "properties": {"after_progress": {"type": "integer"}}}),
        ),
        ("ask", json!({"type": "object"})),
    ] {
        let mut binding = json!({
            "name": name,
            "description": format!("the testkit's {name}"),
            "input_schema": object(schema),
            "mcp_tool": name,
            "tenants": ["local"],
            "timeout_seconds": 10
        });
        for (key, value) in server.as_object().unwrap() {
            binding[key] = value.clone();
        }
        tools.push(binding);
    }
    for (name, binding) in extra {
        let mut binding = binding.clone();
        binding["name"] = json!(name);
        for (key, value) in server.as_object().unwrap() {
            if binding.get(key).is_none() {
                binding[key] = value.clone();
            }
        }
        tools.push(binding);
    }
    json!({ "tools": tools })
}

/// One binding of `tool` on the server at `url`, with `extra` fields.
pub(crate) fn binding(url: &str, tool: &str, extra: Value) -> Value {
    let mut binding = json!({
        "input_schema": {"type": "object"},
        "url": url,
        "mcp_tool": tool,
        "tenants": ["local"],
        "timeout_seconds": 10
    });
    for (key, value) in extra.as_object().unwrap() {
        binding[key] = value.clone();
    }
    binding
}

/// The testkit's tools and a binding for each way a call can fail: a tool of another
/// tenant, a token that is not set, a server that refuses connections (at `refused`),
/// 401, malformed JSON, a tool the server does not have, a short timeout, a small byte
/// budget, output schemas met and not met, and an HTTP tool.
pub(crate) fn failing_bindings(server: &TestServer, refused: &str) -> Value {
    let url = server.url();
    let structured_schema = json!({
        "type": "object",
        "required": ["city", "temperature"],
        "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}}
    });
    let fault = |fault| server.fault_url(fault);
    bindings(
        &json!({"url": url}),
        &[
            (
                "admin_only",
                binding(&url, "echo", json!({"tenants": ["ops"]})),
            ),
            (
                "needs_token",
                binding(&url, "echo", json!({"token_env": "UNSET_TOKEN"})),
            ),
            ("unreachable", binding(refused, "echo", json!({}))),
            (
                "unauthorized",
                binding(&fault(HttpFault::Status401), "echo", json!({})),
            ),
            (
                "garbled",
                binding(&fault(HttpFault::MalformedJson), "echo", json!({})),
            ),
            ("missing", binding(&url, "no_such_tool", json!({}))),
            (
                "slow",
                // Long enough for the call to reach the tool on a loaded machine (its
                // `unknown` delivery says it did).
                binding(&url, "sleep", json!({"timeout_seconds": 3})),
            ),
            (
                "small",
                binding(&url, "big", json!({"max_output_bytes": 100_000})),
            ),
            (
                "checked",
                binding(
                    &url,
                    "structured",
                    json!({"output_schema": structured_schema}),
                ),
            ),
            (
                "miscast",
                binding(
                    &url,
                    "bad_structured",
                    json!({"output_schema": structured_schema}),
                ),
            ),
            (
                "http_tool",
                json!({"input_schema": {"type": "object"}, "url": "https://api.example.com/x", "tenants": ["local"]}),
            ),
        ],
    )
}

pub(crate) fn host(config: &Value, era: EraPreference) -> ToolHost {
    let loaded = HostConfig::from_json_value_with_env(config, |_| true).expect("a valid config");
    ToolHost::builder(loaded.config)
        .client(McpClient::new(ClientOptions::default().era(era)).expect("the client builds"))
        .token_source(|name| (name == "TESTKIT_TOKEN").then(|| "tk-secret-123".to_owned()))
        .build()
        .unwrap()
}

pub(crate) async fn server(era: Era) -> TestServer {
    TestServer::start(ServerOptions {
        era,
        ..ServerOptions::default()
    })
    .await
    .unwrap()
}

/// The stdio testkit binary, built once per test run.
pub(crate) fn stdio_server() -> String {
    brain_mcp_testkit::build_binaries();
    brain_mcp_testkit::stdio_binary_path()
        .to_string_lossy()
        .into_owned()
}

/// Every way to reach the testkit: (label, host, server to read counters from).
pub(crate) async fn every_transport() -> Vec<(&'static str, ToolHost, Option<TestServer>)> {
    let legacy = server(Era::Legacy).await;
    let modern = server(Era::Modern).await;
    vec![
        (
            "legacy http",
            host(
                &bindings(&json!({"url": legacy.url()}), &[]),
                EraPreference::Auto,
            ),
            Some(legacy),
        ),
        (
            "modern http",
            host(
                &bindings(&json!({"url": modern.url()}), &[]),
                EraPreference::Auto,
            ),
            Some(modern),
        ),
        (
            "stdio",
            host(
                &bindings(
                    &json!({"command": {"program": stdio_server(), "args": ["--era", "both"]}}),
                    &[],
                ),
                EraPreference::Auto,
            ),
            None,
        ),
    ]
}

/// Runs a call and returns every event the sink saw, in order.
pub(crate) async fn call(
    host: &ToolHost,
    tool: &str,
    arguments: Value,
) -> (ResultEvent, Vec<ToolEvent>) {
    call_as(
        host,
        &CallScope::new("local", "s1", "c1"),
        tool,
        arguments,
        CancellationToken::new(),
    )
    .await
}

pub(crate) async fn call_as(
    host: &ToolHost,
    scope: &CallScope,
    tool: &str,
    arguments: Value,
    cancel: CancellationToken,
) -> (ResultEvent, Vec<ToolEvent>) {
    let sink = Arc::new(Mutex::new(Vec::new()));
    let result = host
        .call(scope.clone(), tool, arguments)
        .cancel(cancel)
        .sink(sink.clone())
        .await;
    let events = std::mem::take(&mut *sink.lock().unwrap());
    (result, events)
}

pub(crate) const GRACE: Duration = Duration::from_secs(2);
