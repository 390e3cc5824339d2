//! `brain-mcp-testkit-http` as a person runs it by hand: on a port of their choosing, in
//! the background with stdin closed, stopped with SIGTERM.

use std::{process::Stdio, time::Duration};

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::client::post_modern;

const BINARY: &str = env!("CARGO_BIN_EXE_brain-mcp-testkit-http");
const WAIT: Duration = Duration::from_secs(30);

#[tokio::test]
async fn it_listens_on_the_port_asked_and_runs_on_with_stdin_closed_until_sigterm() {
    // A port that is taken: said, exit 2.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let refused = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(BINARY)
            .args(["--port", &port])
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.starts_with(&format!(
            "brain-mcp-testkit-http: cannot listen on 127.0.0.1:{port}: "
        )),
        "{stderr}"
    );
    drop(taken);

    // The port free, stdin from /dev/null as a background job gets it: it listens there,
    // answers, and stops at SIGTERM with its counters.
    let mut server = tokio::process::Command::new(BINARY)
        .args(["--port", &port, "--ignore-stdin-close", "--era", "modern"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
    let listening = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    assert_eq!(listening, format!("LISTENING {url}"));
    let listed = post_modern(&url, 1, "tools/list", json!({}), &[]).await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.answer()["result"]["tools"][0]["name"], "echo");

    let pid = server.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let counters = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(counters.starts_with("COUNTERS {"), "{counters}");
    let status = tokio::time::timeout(WAIT, server.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
}

/// Without `--ignore-stdin-close`, a closed stdin ends it: what a parent holding its stdin
/// relies on.
#[tokio::test]
async fn it_ends_when_its_stdin_closes() {
    let output = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new(BINARY)
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .expect("it ends by itself")
    .unwrap();
    assert!(output.status.success(), "{}", output.status);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("LISTENING http://127.0.0.1:"),
        "{stdout}"
    );
    assert!(lines[1].starts_with("COUNTERS {"), "{stdout}");
}
