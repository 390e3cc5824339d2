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
/// holding a key for acme (made by `mcp-tools serve --new-key`); the config's path and
/// acme's key.
async fn config(dir: &tempfile::TempDir, upstream: &str) -> (String, String) {
    let made = mcp_tools(&["serve", "--new-key", "--tenant", "acme"], &[]).await;
    assert_eq!(made.code, 0, "{}", made.stderr);
    let mut lines = made.stdout.lines();
    let (key, line) = (
        lines.next().unwrap().to_owned(),
        lines.next().unwrap().to_owned(),
    );
    assert!(
        key.starts_with("mgw_") && line.starts_with("acme sha256:"),
        "{}",
        made.stdout
    );
    let keys = dir.path().join("keys");
    std::fs::write(&keys, format!("# gateway keys\n{line}\n")).unwrap();
    let binding = |name: &str, tenants: Value| {
        json!({"name": name, "description": "echoes", "input_schema": {"type": "object"},
               "url": upstream, "mcp_tool": "echo", "tenants": tenants})
    };
    let host = json!({
        "tools": [binding("search", json!(["acme"])), binding("secret", json!(["globex"]))],
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
    assert_eq!(names, ["search"]);
    assert!(!found.stdout.contains(&key), "the key is never printed");

    // And a call through it, from a host config of those bindings.
    let caller = dir.path().join("caller.json");
    std::fs::write(&caller, json!({"tools": bindings}).to_string()).unwrap();
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

    // SIGTERM: the gateway drains and exits 0.
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
