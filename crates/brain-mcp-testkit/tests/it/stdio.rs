use std::process::Stdio;
use std::time::Duration;

use brain_mcp_testkit::{read_counters_file, stdio_binary_path};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::client::{V2025, V2026, call, modern_meta, notification, request};

struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    stdout: tokio::io::Lines<BufReader<ChildStdout>>,
}

impl StdioServer {
    fn spawn(args: &[&str], counters: Option<&std::path::Path>) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_brain-mcp-testkit-stdio"));
        command
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        if let Some(path) = counters {
            command.env("TESTKIT_COUNTERS", path);
        }
        let mut child = command.spawn().expect("the stdio server starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child,
            stdin,
            stdout,
        }
    }

    async fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
    }

    /// The next JSON line (skipping lines that are not JSON).
    async fn next(&mut self) -> Value {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(10), self.stdout.next_line())
                .await
                .expect("a line within 10 s")
                .unwrap()
                .expect("stdout open");
            if let Ok(value) = serde_json::from_str(&line) {
                return value;
            }
        }
    }
}

#[test]
fn the_binary_is_found() {
    assert!(
        stdio_binary_path().is_file(),
        "{}",
        stdio_binary_path().display()
    );
}

#[tokio::test]
async fn legacy_stdio_session_with_counters_file() {
    let dir = std::env::temp_dir().join(format!("testkit-it-stdio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let counters = dir.join("counters.json");
    let mut server = StdioServer::spawn(&["--era", "legacy", "--garbage-stdout"], Some(&counters));

    server
        .send(&request(
            0,
            "server/discover",
            json!({"_meta": modern_meta(json!({}))}),
        ))
        .await;
    assert_eq!(server.next().await["error"]["code"], -32601);

    server.send(&request(1, "initialize", json!({"protocolVersion": V2025, "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}))).await;
    assert_eq!(server.next().await["result"]["protocolVersion"], V2025);
    server
        .send(&notification("notifications/initialized", json!({})))
        .await;
    server
        .send(&call(
            2,
            "progress",
            json!({"steps": 2, "delay_ms": 1}),
            "c1",
        ))
        .await;
    let first = server.next().await;
    assert_eq!(first["params"]["progressToken"], "c1");
    assert_eq!(server.next().await["params"]["progress"], json!(2.0));
    assert_eq!(server.next().await["result"]["content"][0]["text"], "done");

    server
        .send(&call(3, "progress_after_result", json!({}), "c2"))
        .await;
    assert_eq!(server.next().await["id"], 3);
    let late = server.next().await;
    assert_eq!(
        (late["method"].as_str(), &late["params"]["progressToken"]),
        (Some("notifications/progress"), &json!("c2"))
    );

    server
        .send(&call(4, "sleep", json!({"ms": 60_000}), "c3"))
        .await;
    server
        .send(&notification(
            "notifications/cancelled",
            json!({"requestId": 4}),
        ))
        .await;
    let mut seen = None;
    for _ in 0..200 {
        let c = read_counters_file(&counters).unwrap();
        if c.handler_cancellations == 1 {
            seen = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let c = seen.expect("the cancellation reaches the handler");
    assert_eq!(c.cancellations, 1);
    assert_eq!(c.method("server/discover"), 1);
    assert_eq!(c.tool_calls.get("progress"), Some(&1));
    assert_eq!(c.call_meta[0], json!({"progressToken": "c1"}));

    drop(server.stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), server.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn modern_stdio_rejects_initialize_then_serves_2026_calls() {
    let mut server = StdioServer::spawn(&["--era", "modern"], None);
    server.send(&request(1, "initialize", json!({"protocolVersion": V2025, "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}))).await;
    assert_eq!(server.next().await["error"]["code"], -32022);
    server
        .send(&request(
            2,
            "server/discover",
            json!({"_meta": modern_meta(json!({}))}),
        ))
        .await;
    assert_eq!(
        server.next().await["result"]["supportedVersions"],
        json!([V2026])
    );
    let params = json!({"name": "echo", "arguments": {"message": "hi"}, "_meta": modern_meta(json!({"progressToken": "c1"}))});
    server.send(&request(3, "tools/call", params)).await;
    assert_eq!(server.next().await["result"]["content"][0]["text"], "hi");
}

/// How a server started with `flags` ends once it gets a call.
async fn status_after_a_call(flags: &[&str]) -> std::process::ExitStatus {
    let mut server = StdioServer::spawn(flags, None);
    server.send(&request(1, "initialize", json!({"protocolVersion": V2025, "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}))).await;
    server.next().await;
    server
        .send(&call(2, "echo", json!({"message": "hi"}), "c1"))
        .await;
    tokio::time::timeout(Duration::from_secs(10), server.child.wait())
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn stdio_process_faults() {
    let status = Command::new(env!("CARGO_BIN_EXE_brain-mcp-testkit-stdio"))
        .arg("--exit-before-handshake")
        .status()
        .await
        .unwrap();
    assert_eq!(status.code(), Some(3));

    let status = status_after_a_call(&["--exit-mid-call"]).await;
    assert_eq!(status.code(), Some(brain_mcp_testkit::EXIT_MID_CALL_STATUS));

    // A crash: by the signal itself, or by the status a shell reports for it.
    for (flag, code, signal) in [("segv", None, Some(11)), ("139", Some(139), None)] {
        let status = status_after_a_call(&["--crash-mid-call", flag]).await;
        assert_eq!(status.code(), code, "{flag}: {status}");
        #[cfg(unix)]
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            signal,
            "{flag}: {status}"
        );
        #[cfg(not(unix))]
        let _ = signal;
    }

    let mut server = StdioServer::spawn(&[], None);
    server.send(&request(1, "initialize", json!({"protocolVersion": V2025, "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}))).await;
    server.next().await;
    server
        .send(&call(
            2,
            "drop_mid_stream",
            json!({"after_progress": 2}),
            "c1",
        ))
        .await;
    assert_eq!(server.next().await["params"]["progress"], json!(1.0));
    assert_eq!(server.next().await["params"]["progress"], json!(2.0));
    let status = tokio::time::timeout(Duration::from_secs(10), server.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(brain_mcp_testkit::EXIT_MID_CALL_STATUS));
}

fn initialize_request() -> Value {
    request(
        1,
        "initialize",
        json!({"protocolVersion": V2025, "capabilities": {"elicitation": {}}, "clientInfo": {"name": "x", "version": "0"}}),
    )
}

#[tokio::test]
async fn legacy_ask_sends_an_elicitation_and_modern_ask_returns_input_required() {
    let mut server = StdioServer::spawn(&[], None);
    server.send(&initialize_request()).await;
    server.next().await;
    server
        .send(&notification("notifications/initialized", json!({})))
        .await;
    server.send(&call(2, "ask", json!({}), "c1")).await;
    let asked = server.next().await;
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    server
        .send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}}))
        .await;
    assert_eq!(server.next().await["result"]["content"][0]["text"], "asked");

    let mut modern = StdioServer::spawn(&["--era", "modern"], None);
    let params = json!({"name": "ask", "arguments": {}, "_meta": modern_meta(json!({}))});
    modern.send(&request(1, "tools/call", params)).await;
    let first = modern.next().await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].clone();
    let retry = json!({"name": "ask", "arguments": {}, "_meta": modern_meta(json!({})),
        "inputResponses": {"confirm": {"action": "decline"}}, "requestState": state});
    modern.send(&request(2, "tools/call", retry)).await;
    assert_eq!(modern.next().await["result"]["content"][0]["text"], "asked");
}

#[tokio::test]
async fn flood_grandchild_and_ignored_stdin_close() {
    let dir = std::env::temp_dir().join(format!("testkit-it-grandchild-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("grandchild.pid");
    let mut command = Command::new(env!("CARGO_BIN_EXE_brain-mcp-testkit-stdio"));
    command
        .args([
            "--flood-stderr",
            "--ignore-stdin-close",
            "--spawn-grandchild",
        ])
        .arg(&pidfile)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let drained = tokio::spawn(async move {
        let mut sink = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut stderr, &mut sink)
            .await
            .map(|_| sink.len())
    });
    let mut server = StdioServer {
        stdin: child.stdin.take().unwrap(),
        stdout: BufReader::new(child.stdout.take().unwrap()).lines(),
        child,
    };
    server.send(&initialize_request()).await;
    assert_eq!(server.next().await["result"]["protocolVersion"], V2025);

    let grandchild: u32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(std::path::Path::new(&format!("/proc/{grandchild}")).exists());

    drop(server.stdin);
    let still_running = tokio::time::timeout(Duration::from_millis(300), server.child.wait()).await;
    assert!(still_running.is_err(), "the server must outlive stdin");
    server.child.kill().await.unwrap();
    // The grandchild shares our pipes: stderr ends only when it is gone too.
    let killed = std::process::Command::new("kill")
        .arg(grandchild.to_string())
        .status()
        .unwrap();
    assert!(killed.success());
    let drained = tokio::time::timeout(Duration::from_secs(10), drained)
        .await
        .unwrap();
    assert!(drained.unwrap().unwrap() >= 10 << 20);
    std::fs::remove_dir_all(&dir).unwrap();
}
