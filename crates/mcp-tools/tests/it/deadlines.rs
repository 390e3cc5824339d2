//! Deadlines hold at exit and against a slow reader: the outcome is reported at the
//! deadline, and closing afterwards gets a short bounded grace. Bounds, not benchmarks.

use std::time::Duration;

use brain_mcp_testkit::{Era, HttpFault};
use serde_json::json;
use tokio::io::AsyncReadExt;

use crate::support::{config, discovered, server, spawn, timed_lines};

/// What the process may take after the deadline: the close grace (1 s) and slack for a
/// loaded machine.
const GRACE: Duration = Duration::from_secs(3);

/// A server that never answers `initialize`: the error is printed at the deadline, and
/// the process exits within the close grace after it.
#[tokio::test]
async fn discovery_reports_at_the_deadline_and_exits_soon_after() {
    let server = server(Era::Legacy).await;
    let url = server.fault_url(HttpFault::Hang);
    let mut run = spawn(
        &["-url", &url, "-tenant", "local", "-discovery-timeout", "3"],
        &[],
    );
    let stderr = tokio::spawn(timed_lines(run.child.stderr.take().unwrap(), run.started));
    let status = tokio::time::timeout(Duration::from_secs(60), run.child.wait())
        .await
        .expect("mcp-tools exits")
        .unwrap();
    let exited = run.started.elapsed();
    let lines = stderr.await.unwrap();
    assert_eq!(status.code(), Some(1));
    let [(at, line)] = lines.as_slice() else {
        panic!("one line: {lines:?}");
    };
    assert_eq!(line, "mcp-tools: discovery took longer than 3 s");
    let deadline = Duration::from_secs(3);
    assert!(
        *at >= deadline && *at < deadline + GRACE,
        "reported at {at:?}"
    );
    assert!(exited < deadline + GRACE, "exited at {exited:?}");
}

/// The same for a call: the timeout result is printed at the binding's deadline.
#[tokio::test]
async fn a_call_reports_at_its_deadline_and_exits_soon_after() {
    let server = server(Era::Both).await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(
        &dir,
        json!([{
            "name": "stuck",
            "input_schema": {"type": "object", "properties": {}},
            "url": server.fault_url(HttpFault::Hang),
            "mcp_tool": "echo",
            "tenants": ["local"],
            "timeout_seconds": 3
        }]),
    );
    let mut run = spawn(
        &[
            "call", "--config", &path, "--tenant", "local", "--tool", "stuck",
        ],
        &[],
    );
    let stdout = tokio::spawn(timed_lines(run.child.stdout.take().unwrap(), run.started));
    let status = tokio::time::timeout(Duration::from_secs(60), run.child.wait())
        .await
        .expect("mcp-tools exits")
        .unwrap();
    let exited = run.started.elapsed();
    let lines = stdout.await.unwrap();
    assert_eq!(status.code(), Some(1));
    let [(at, line)] = lines.as_slice() else {
        panic!("one line: {lines:?}");
    };
    let event: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(event["error"]["kind"], "timeout", "{line}");
    let deadline = Duration::from_secs(3);
    assert!(
        *at >= deadline && *at < deadline + GRACE,
        "reported at {at:?}"
    );
    assert!(exited < deadline + GRACE, "exited at {exited:?}");
}

/// A server floods progress while the reader takes stdout at about 500 KB/s: the result
/// still comes at the deadline, not after the backlog (issue 11, item 3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_progress_and_a_slow_reader_do_not_delay_the_result() {
    let server = server(Era::Both).await;
    let dir = tempfile::tempdir().unwrap();
    let mut tools = discovered(&server.url(), "progress").await;
    tools[0]["timeout_seconds"] = json!(3);
    let path = config(&dir, tools);
    let mut run = spawn(
        &[
            "call",
            "--config",
            &path,
            "--tenant",
            "local",
            "--tool",
            "progress",
            "--args",
            r#"{"steps": 100000, "delay_ms": 0}"#,
            "--format",
            "json",
        ],
        &[],
    );
    let stderr = tokio::spawn(timed_lines(run.child.stderr.take().unwrap(), run.started));
    let mut stdout = run.child.stdout.take().unwrap();
    let mut taken = Vec::new();
    let mut chunk = vec![0; 4096];
    let needle = b"\"type\":\"tool.result\"";
    let result_at = loop {
        let n = tokio::time::timeout(Duration::from_secs(60), stdout.read(&mut chunk))
            .await
            .expect("stdout moves")
            .unwrap();
        assert!(n > 0, "stdout ended before the result");
        let from = taken.len().saturating_sub(needle.len());
        taken.extend_from_slice(&chunk[..n]);
        if taken[from..].windows(needle.len()).any(|w| w == needle) {
            break run.started.elapsed();
        }
        // 4 KiB every 8 ms: about 500 KB/s.
        tokio::time::sleep(Duration::from_millis(8)).await;
    };
    stdout.read_to_end(&mut taken).await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(60), run.child.wait())
        .await
        .expect("mcp-tools exits")
        .unwrap();
    let exited = run.started.elapsed();
    let stderr = stderr.await.unwrap();
    let text = String::from_utf8(taken).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "tool.result");
    // Either the server finished its 100,000 steps in time, or the deadline passed.
    match status.code() {
        Some(0) => assert_eq!(last["is_error"], false),
        _ => assert_eq!(last["error"]["kind"], "timeout", "{last} {stderr:?}"),
    }
    let deadline = Duration::from_secs(3);
    assert!(
        result_at < deadline + GRACE,
        "the result came at {result_at:?}"
    );
    assert!(exited < deadline + GRACE, "exited at {exited:?}");
    let progress = text.lines().count() - 1;
    eprintln!("{progress} progress lines read; result at {result_at:?}; exit at {exited:?}");
}
