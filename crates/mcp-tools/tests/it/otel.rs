//! OpenTelemetry end to end (feature `otel`): `mcp-tools call` exports its spans over
//! OTLP/HTTP to Arize Phoenix (PyPI), started here on loopback, against the python `mcp`
//! SDK's server, which makes its own span for the call from the trace context we put in
//! `params._meta` (SEP-414). Both installed by `cargo xtask test` into `target/peers/`.

use std::{
    path::{Path, PathBuf},
    process::Stdio,
    time::Duration,
};

use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    process::{Child, Command},
};

use crate::support::{config, mcp_tools, peers_dir, workspace_root};

/// A child process started on loopback, killed when this is dropped, with the URL it said
/// it listens on.
struct Listening {
    child: Child,
    url: String,
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

fn installed(python: &Path, what: &str) -> PathBuf {
    assert!(
        python.exists(),
        "{what} is not installed ({} is missing): run `cargo xtask test` (its peers step installs it)",
        python.display()
    );
    python.to_path_buf()
}

/// Starts `command` and waits (bounded) for its `LISTENING <url>` line on stdout; the rest
/// of its output is drained so that it never blocks on a full pipe.
async fn listening(mut command: Command, what: &str, within: Duration) -> Listening {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|error| panic!("{what} starts: {error}"));
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = tokio::time::timeout(within, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.trim().strip_prefix("LISTENING ") {
                return url.to_owned();
            }
        }
        panic!("{what} ended before it listened");
    })
    .await
    .unwrap_or_else(|_| panic!("{what} listens within {within:?}"));
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Listening { child, url }
}

/// Arize Phoenix with its database in `dir`, both of its ports on 127.0.0.1 (picked by
/// the system), nothing that reaches outside.
async fn phoenix(dir: &Path) -> Listening {
    let python = installed(
        &peers_dir().join("phoenix-venv/bin/python"),
        "Arize Phoenix",
    );
    let mut command = Command::new(python);
    command
        .arg(workspace_root().join("tests/peers/phoenix_serve.py"))
        .env("PHOENIX_HOST", "127.0.0.1")
        .env("PHOENIX_PORT", "0")
        .env("PHOENIX_GRPC_PORT", "0")
        .env("PHOENIX_WORKING_DIR", dir)
        .env("PHOENIX_TELEMETRY_ENABLED", "false")
        .env("PHOENIX_ALLOW_EXTERNAL_RESOURCES", "false")
        .env("PHOENIX_DISABLE_AGENT_ASSISTANT", "true")
        .env("PHOENIX_ENABLE_MCP_SERVER", "false");
    listening(command, "Arize Phoenix", Duration::from_secs(120)).await
}

/// The python `mcp` SDK's server (both eras), recording its spans in `spans`.
async fn python_server(spans: &Path) -> Listening {
    let python = installed(&peers_dir().join("venv/bin/python"), "the python MCP peer");
    let mut command = Command::new(python);
    command
        .arg(workspace_root().join("tests/peers/py_server.py"))
        .args(["http", "--port", "0"])
        .env("OTEL_SPANS_FILE", spans);
    listening(command, "the python MCP server", Duration::from_secs(60)).await
}

/// A GET on loopback, its body as JSON.
async fn get_json(base: &str, path: &str) -> Value {
    let address = base.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let response = String::from_utf8_lossy(&response);
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
    serde_json::from_str(body).unwrap_or_else(|error| panic!("{path}: {error}: {body}"))
}

/// Phoenix's spans of a call: it stores what it receives in the background, so this asks
/// again (bounded) until the call's client span is there.
async fn spans_of_call(phoenix: &str, call: &str) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let listed = get_json(phoenix, "/v1/projects/default/spans?limit=1000").await;
        let spans = listed["data"].as_array().cloned().unwrap_or_default();
        let client = spans
            .iter()
            .find(|span| span["attributes"]["brain.call"] == json!(call));
        if let Some(client) = client {
            let trace = client["context"]["trace_id"].clone();
            return spans
                .into_iter()
                .filter(|span| span["context"]["trace_id"] == trace)
                .collect();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "Phoenix never showed the spans of {call}: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// `mcp-tools call` with `OTEL_EXPORTER_OTLP_ENDPOINT` set exports the call's CLIENT span
/// over OTLP/HTTP to Phoenix, attributes and steps included, in both eras; and the python
/// SDK's server span for the call has our span as its parent (same trace).
#[tokio::test]
async fn phoenix_receives_the_calls_span_and_the_python_servers_span_is_its_child() {
    let dir = tempfile::tempdir().unwrap();
    let spans_file = dir.path().join("server-spans.jsonl");
    let phoenix_dir = dir.path().join("phoenix");
    let (phoenix, server) = tokio::join!(phoenix(&phoenix_dir), python_server(&spans_file));
    let discovered = mcp_tools(
        &["-url", &server.url, "-tenant", "local", "-tools", "echo"],
        &[],
    )
    .await;
    assert_eq!(discovered.code, 0, "{}", discovered.stderr);
    let path = config(&dir, serde_json::from_str(&discovered.stdout).unwrap());
    let port = server
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/mcp");
    for (era, version) in [("legacy", "2025-11-25"), ("modern", "2026-07-28")] {
        let call = format!("otel-{era}");
        let run = mcp_tools(
            &[
                "call",
                "--config",
                &path,
                "--tenant",
                "local",
                "--tool",
                "echo",
                "--era",
                era,
                "--call",
                &call,
                "--args",
                r#"{"message":"hello"}"#,
            ],
            &[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", &phoenix.url),
                ("OTEL_SERVICE_NAME", "mcp-tools-test"),
            ],
        )
        .await;
        assert_eq!(run.code, 0, "{era}: {}", run.stderr);
        assert!(run.stdout.contains("Echo: hello"), "{era}: {}", run.stdout);
        let spans = spans_of_call(&phoenix.url, &call).await;
        let client = spans
            .iter()
            .find(|span| span["name"] == json!("tools/call echo"))
            .expect("the client span");
        let attributes = &client["attributes"];
        for (key, value) in [
            ("mcp.method.name", json!("tools/call")),
            ("gen_ai.tool.name", json!("echo")),
            ("gen_ai.operation.name", json!("execute_tool")),
            ("mcp.protocol.version", json!(version)),
            ("network.transport", json!("tcp")),
            ("server.address", json!("127.0.0.1")),
            ("server.port", json!(port.parse::<u16>().unwrap())),
            ("brain.tenant", json!("local")),
            ("brain.tool", json!("echo")),
        ] {
            assert_eq!(attributes[key], value, "{era}: {key} in {attributes}");
        }
        assert_eq!(
            attributes.get("mcp.session.id").is_some(),
            era == "legacy",
            "{era}: {attributes}"
        );
        assert_eq!(
            client["parent_id"],
            Value::Null,
            "{era}: the root of its trace"
        );
        assert_eq!(client["status_code"], json!("UNSET"), "{era}");
        let span_id = client["context"]["span_id"].as_str().unwrap().to_owned();
        let trace_id = client["context"]["trace_id"].as_str().unwrap().to_owned();
        let mut steps: Vec<&str> = spans
            .iter()
            .filter(|span| span["parent_id"] == json!(span_id))
            .filter_map(|span| span["name"].as_str())
            .collect();
        steps.sort_unstable();
        assert_eq!(steps, ["open", "request"], "{era}");
        // The server's own span for the call: a SERVER span whose parent is ours.
        let recorded = std::fs::read_to_string(&spans_file).unwrap_or_default();
        let served: Vec<Value> = recorded
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .filter(|span: &Value| span["trace_id"] == json!(trace_id))
            .collect();
        let call_span = served
            .iter()
            .find(|span| span["name"] == json!("tools/call echo"))
            .unwrap_or_else(|| panic!("{era}: the server's span in our trace: {recorded}"));
        assert_eq!(call_span["kind"], json!("SERVER"), "{era}");
        assert_eq!(call_span["parent_span_id"], json!(span_id), "{era}");
        if era == "legacy" {
            // The session opened for the call: its initialize carried the context too.
            assert!(
                served.iter().any(|span| span["name"] == json!("initialize")
                    && span["parent_span_id"] == json!(span_id)),
                "{era}: {recorded}"
            );
        }
    }
}
