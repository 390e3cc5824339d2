//! The fault matrix: every row a fault, a transport and an era, driven through `ToolHost`,
//! with the error kind and delivery it must give, within its deadline, the session closed,
//! no `tools/call` sent twice, and nothing left behind.

use std::{
    io::Write,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use brain_mcp_testkit::{Era, HttpFault, ServerOptions, TestServer};
use brain_tools::{CallScope, ClientOptions, EraPreference, McpClient, ToolHost};
use brain_tools_config::HostConfig;
use brain_tools_events::{Delivery, ErrorKind, ResultEvent, ToolEvent};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::ResponseTemplate;

use crate::{
    leaks::{alive, children, open_fds, settle},
    scripted::{Scripted, closing_listener, progress, sse},
};

/// A failing call may take this long past its deadline to say so.
const GRACE: Duration = Duration::from_millis(1500);
/// The deadline of rows that wait for a server that never answers.
const SHORT: u64 = 2;
/// The token every HTTP binding sends; it must never show up anywhere.
pub(crate) const TOKEN: &str = "sk-brain-secret-7f3a9c21";

/// One row of the matrix.
struct Row {
    fault: &'static str,
    transport: &'static str,
    era: &'static str,
    binding: Value,
    arguments: Value,
    cancel_after: Option<Duration>,
    expect: Option<(ErrorKind, Delivery)>,
}

fn row(
    fault: &'static str,
    transport: &'static str,
    era: &'static str,
    binding: Value,
    arguments: Value,
    expect: Option<(ErrorKind, Delivery)>,
) -> Row {
    Row {
        fault,
        transport,
        era,
        binding,
        arguments,
        cancel_after: None,
        expect,
    }
}

fn http(url: &str, tool: &str) -> Value {
    json!({"url": url, "mcp_tool": tool, "token_env": "MATRIX_TOKEN", "timeout_seconds": 10})
}

fn stdio(args: &[&str], tool: &str) -> Value {
    json!({
        "command": {"program": brain_mcp_testkit::stdio_binary_path(), "args": args},
        "mcp_tool": tool,
        "timeout_seconds": 10
    })
}

fn with(mut binding: Value, key: &str, value: Value) -> Value {
    binding[key] = value;
    binding
}

/// The servers a matrix runs against. In-process ones let a row read the testkit's
/// counters; the secrets check runs them as child processes, so that only client-side
/// code logs into the capture.
pub(crate) struct Servers {
    pub(crate) legacy_url: String,
    pub(crate) modern_url: String,
    pub(crate) legacy: Option<TestServer>,
    pub(crate) modern: Option<TestServer>,
    children: Vec<(
        std::process::Child,
        std::io::BufReader<std::process::ChildStdout>,
    )>,
}

impl Drop for Servers {
    fn drop(&mut self) {
        for (child, _) in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Servers {
    pub(crate) async fn in_process() -> Self {
        let legacy = TestServer::start(ServerOptions {
            era: Era::Legacy,
            ..ServerOptions::default()
        })
        .await
        .unwrap();
        let modern = TestServer::start(ServerOptions {
            era: Era::Modern,
            ..ServerOptions::default()
        })
        .await
        .unwrap();
        Self {
            legacy_url: legacy.url(),
            modern_url: modern.url(),
            legacy: Some(legacy),
            modern: Some(modern),
            children: Vec::new(),
        }
    }

    /// Stops servers running as child processes and returns what each counted
    /// (legacy first).
    pub(crate) fn stop(mut self) -> Vec<brain_mcp_testkit::Counters> {
        let mut counted = Vec::new();
        for (mut child, mut stdout) in std::mem::take(&mut self.children) {
            drop(child.stdin.take());
            let mut line = String::new();
            while std::io::BufRead::read_line(&mut stdout, &mut line).unwrap_or(0) > 0 {
                if let Some(json) = line.trim().strip_prefix("COUNTERS ") {
                    counted.push(serde_json::from_str(json).expect("counters parse"));
                }
                line.clear();
            }
            let _ = child.wait();
        }
        counted
    }

    pub(crate) fn out_of_process() -> Self {
        Self::out_of_process_with(&[])
    }

    /// Servers as child processes, with extra testkit flags.
    pub(crate) fn out_of_process_with(flags: &[&str]) -> Self {
        let mut children = Vec::new();
        let mut urls = Vec::new();
        for era in ["legacy", "modern"] {
            let mut child = std::process::Command::new(brain_mcp_testkit::http_binary_path())
                .args(["--era", era])
                .args(flags)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("the testkit HTTP binary runs (cargo build -p brain-mcp-testkit --bins)");
            let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
            let mut line = String::new();
            std::io::BufRead::read_line(&mut stdout, &mut line).unwrap();
            urls.push(line.trim().strip_prefix("LISTENING ").unwrap().to_owned());
            children.push((child, stdout));
        }
        Self {
            modern_url: urls.pop().unwrap(),
            legacy_url: urls.pop().unwrap(),
            legacy: None,
            modern: None,
            children,
        }
    }

    fn fault(&self, fault: HttpFault) -> String {
        let base = self.legacy_url.trim_end_matches("/mcp");
        format!("{base}/fault/{}/mcp", fault.path_segment())
    }
}

/// What one run of the matrix saw.
pub(crate) struct Ran {
    pub(crate) events: Vec<ToolEvent>,
    pub(crate) table: String,
    pub(crate) debug: Vec<String>,
}

/// Runs every row, asserting each; returns the events and the table.
pub(crate) async fn run(servers: &Servers) -> Ran {
    let (refused_url, _refused) = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        (
            format!("http://{}/mcp", listener.local_addr().unwrap()),
            listener,
        )
    };
    drop(_refused);
    let (reset_url, reset_task) = closing_listener().await;
    let expired = Scripted::start(Arc::new(|_| ResponseTemplate::new(404))).await;
    let rpc_error = Scripted::start(Arc::new(|id| {
        ResponseTemplate::new(200).set_body_json(json!({
            "jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "boom"}
        }))
    }))
    .await;
    let wrong_id = Scripted::start(Arc::new(|_| {
        ResponseTemplate::new(200).set_body_json(json!({
            "jsonrpc": "2.0", "id": 424242, "result": {"content": []}
        }))
    }))
    .await;
    let short_stream = Scripted::start(Arc::new(|_| sse(&[progress("c", 1)]))).await;
    let limited = Scripted::start(Arc::new(|_| {
        ResponseTemplate::new(429).insert_header("retry-after", "5")
    }))
    .await;
    let elsewhere = Scripted::start(Arc::new(|_| ResponseTemplate::new(200))).await;
    let redirect_to = elsewhere.url();
    let redirecting = wiremock::MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::any())
        .respond_with(ResponseTemplate::new(307).insert_header("location", redirect_to.as_str()))
        .mount(&redirecting)
        .await;
    let redirect_url = format!("{}/mcp", redirecting.uri());
    let pidfile = std::env::temp_dir().join(format!("brain-matrix-{}.pid", std::process::id()));

    let legacy = servers.legacy_url.as_str();
    let modern = servers.modern_url.as_str();
    let schema = json!({"type": "object", "required": ["city", "temperature"],
                        "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}}});
    let e = |kind, delivery| Some((kind, delivery));
    use Delivery::{Delivered, NotSent, Unknown};
    use ErrorKind::*;
    let mut rows = vec![
        row(
            "connection refused",
            "http",
            "-",
            http(&refused_url, "echo"),
            json!({}),
            e(Connect, NotSent),
        ),
        row(
            "reset before the request is written",
            "http",
            "-",
            http(&reset_url, "echo"),
            json!({}),
            e(Connect, NotSent),
        ),
        row(
            "reset after the call is written",
            "http",
            "legacy",
            http(legacy, "drop_mid_stream"),
            json!({"after_progress": 0}),
            e(Protocol, Unknown),
        ),
        row(
            "401 with a JSON body",
            "http",
            "legacy",
            http(&servers.fault(HttpFault::Status401), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "401 without a body",
            "http",
            "legacy",
            http(&servers.fault(HttpFault::Status401Plain), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "403",
            "http",
            "legacy",
            http(&servers.fault(HttpFault::Status403), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "404 session expired mid-call",
            "http",
            "legacy",
            http(&expired.url(), "echo"),
            json!({}),
            e(HttpStatus, Unknown),
        ),
        row(
            "405",
            "http",
            "legacy",
            http(&servers.fault(HttpFault::Status405), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "406",
            "http",
            "legacy",
            http(&servers.fault(HttpFault::Status406), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "429 on the call",
            "http",
            "legacy",
            http(&limited.url(), "echo"),
            json!({}),
            e(HttpStatus, Unknown),
        ),
        row(
            "500 with an HTML body",
            "http",
            "legacy",
            http(&servers.fault(HttpFault::Status500Html), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "502 with an HTML body",
            "http",
            "legacy",
            http(&servers.fault(HttpFault::Status502Html), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "200 with the wrong content type",
            "http",
            "legacy",
            http(&servers.fault(HttpFault::WrongContentType), "echo"),
            json!({}),
            e(Protocol, NotSent),
        ),
        row(
            "a body that is not JSON",
            "http",
            "legacy",
            http(&servers.fault(HttpFault::MalformedJson), "echo"),
            json!({}),
            e(Protocol, NotSent),
        ),
        row(
            "a JSON-RPC error to the handshake",
            "http",
            "legacy",
            http(&servers.fault(HttpFault::JsonRpcError), "echo"),
            json!({}),
            e(Protocol, NotSent),
        ),
        row(
            "a JSON-RPC error to the call",
            "http",
            "legacy",
            http(&rpc_error.url(), "echo"),
            json!({}),
            e(Protocol, Unknown),
        ),
        row(
            "a response with the wrong id",
            "http",
            "legacy",
            http(&wrong_id.url(), "echo"),
            json!({}),
            e(Protocol, Unknown),
        ),
        row(
            "an SSE stream that ends before the result",
            "http",
            "legacy",
            http(&short_stream.url(), "echo"),
            json!({}),
            e(Protocol, Unknown),
        ),
        row(
            "an SSE event over the byte budget",
            "http",
            "legacy",
            with(http(legacy, "big"), "max_output_bytes", json!(100_000)),
            json!({"bytes": 2_000_000}),
            e(OutputTooLarge, Unknown),
        ),
        row(
            "a server that drips one byte a second",
            "http",
            "legacy",
            with(
                http(&servers.fault(HttpFault::DripOneBytePerSecond), "echo"),
                "timeout_seconds",
                json!(SHORT),
            ),
            json!({}),
            e(Timeout, NotSent),
        ),
        row(
            "a server that never answers",
            "http",
            "legacy",
            with(
                http(&servers.fault(HttpFault::Hang), "echo"),
                "timeout_seconds",
                json!(SHORT),
            ),
            json!({}),
            e(Timeout, NotSent),
        ),
        row(
            "a call that never finishes",
            "http",
            "legacy",
            with(http(legacy, "hang"), "timeout_seconds", json!(SHORT)),
            json!({}),
            e(Timeout, Unknown),
        ),
        row(
            "a redirect to another origin",
            "http",
            "legacy",
            http(&redirect_url, "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "a server request in the middle of a call",
            "http",
            "legacy",
            http(legacy, "ask"),
            json!({}),
            None,
        ),
        row(
            "the connection drops mid-stream",
            "http",
            "legacy",
            http(legacy, "drop_mid_stream"),
            json!({"after_progress": 2}),
            e(Protocol, Unknown),
        ),
        row(
            "progress after the result",
            "http",
            "legacy",
            http(legacy, "progress_after_result"),
            json!({}),
            None,
        ),
        row(
            "the tool reports an error",
            "http",
            "legacy",
            http(legacy, "error"),
            json!({}),
            e(ToolError, Delivered),
        ),
        row(
            "structured output that breaks output_schema",
            "http",
            "legacy",
            with(
                http(legacy, "bad_structured"),
                "output_schema",
                schema.clone(),
            ),
            json!({}),
            e(OutputSchema, Delivered),
        ),
        Row {
            cancel_after: Some(Duration::from_millis(200)),
            ..row(
                "the caller cancels mid-call",
                "http",
                "legacy",
                http(legacy, "hang"),
                json!({}),
                e(Cancelled, Unknown),
            )
        },
        row(
            "a call that never finishes",
            "http",
            "2026-07-28",
            with(http(modern, "hang"), "timeout_seconds", json!(SHORT)),
            json!({}),
            e(Timeout, Unknown),
        ),
        row(
            "the connection drops mid-stream",
            "http",
            "2026-07-28",
            http(modern, "drop_mid_stream"),
            json!({"after_progress": 2}),
            e(Protocol, Unknown),
        ),
        row(
            "an SSE event over the byte budget",
            "http",
            "2026-07-28",
            with(http(modern, "big"), "max_output_bytes", json!(100_000)),
            json!({"bytes": 2_000_000}),
            e(OutputTooLarge, Unknown),
        ),
        Row {
            cancel_after: Some(Duration::from_millis(200)),
            ..row(
                "the caller cancels mid-call",
                "http",
                "2026-07-28",
                http(modern, "hang"),
                json!({}),
                e(Cancelled, Unknown),
            )
        },
        row(
            "a command that does not exist",
            "stdio",
            "-",
            json!({"command": {"program": "/nonexistent/brain-matrix-server"}, "mcp_tool": "echo"}),
            json!({}),
            e(Connect, NotSent),
        ),
        row(
            "exits before the handshake",
            "stdio",
            "legacy",
            stdio(&["--exit-before-handshake"], "echo"),
            json!({}),
            e(Connect, NotSent),
        ),
        row(
            "exits mid-call",
            "stdio",
            "legacy",
            stdio(&["--exit-mid-call"], "echo"),
            json!({"message": "x"}),
            e(Protocol, Unknown),
        ),
        row(
            "writes garbage to stdout",
            "stdio",
            "legacy",
            stdio(&["--garbage-stdout"], "echo"),
            json!({"message": "x"}),
            None,
        ),
        row(
            "floods stderr",
            "stdio",
            "legacy",
            stdio(&["--flood-stderr"], "echo"),
            json!({"message": "x"}),
            None,
        ),
        row(
            "ignores stdin close",
            "stdio",
            "legacy",
            stdio(&["--ignore-stdin-close"], "echo"),
            json!({"message": "x"}),
            None,
        ),
        row(
            "spawns a grandchild that outlives it",
            "stdio",
            "legacy",
            stdio(&["--spawn-grandchild", pidfile.to_str().unwrap()], "echo"),
            json!({"message": "x"}),
            None,
        ),
        row(
            "a call that never finishes",
            "stdio",
            "legacy",
            with(
                stdio(&["--ignore-stdin-close"], "hang"),
                "timeout_seconds",
                json!(SHORT),
            ),
            json!({}),
            e(Timeout, Unknown),
        ),
        row(
            "an output over the byte budget",
            "stdio",
            "legacy",
            with(stdio(&[], "big"), "max_output_bytes", json!(100_000)),
            json!({"bytes": 2_000_000}),
            e(OutputTooLarge, Unknown),
        ),
        row(
            "a call in the 2026-07-28 era",
            "stdio",
            "2026-07-28",
            stdio(&["--era", "modern"], "echo"),
            json!({"message": "x"}),
            None,
        ),
    ];

    let timeouts: Vec<u64> = rows
        .iter()
        .map(|row| row.binding["timeout_seconds"].as_u64().unwrap_or(300))
        .collect();
    let tools: Vec<Value> = rows
        .iter_mut()
        .enumerate()
        .map(|(i, row)| {
            let mut binding = row.binding.take();
            binding["name"] = json!(format!("row{i:02}"));
            binding["input_schema"] = json!({"type": "object"});
            binding["tenants"] = json!(["local"]);
            binding
        })
        .collect();
    let loaded = HostConfig::from_json_value_with_env(&json!({"tools": tools}), |_| true).unwrap();
    // Every server is up: from here on, what the process holds is the client's.
    let fds_before = open_fds();
    let children_before = children();
    let client = McpClient::new(ClientOptions::default().era(EraPreference::Auto));
    let host = ToolHost::builder(loaded.config)
        .client(client.clone())
        .token_source(|name| (name == "MATRIX_TOKEN").then(|| TOKEN.to_owned()))
        .build()
        .unwrap();

    let mut table = String::from(
        "| # | fault | transport | era | expected kind | delivery | seen | ms |\n|---|---|---|---|---|---|---|---|\n",
    );
    let mut events = Vec::new();
    let mut debug = vec![format!("{host:?}"), format!("{client:?}")];
    for (i, row) in rows.iter().enumerate() {
        let tool = format!("row{i:02}");
        let before = calls_seen(servers);
        let scripted_before = [&expired, &rpc_error, &wrong_id, &short_stream, &limited]
            .map(|s| s.calls.load(std::sync::atomic::Ordering::SeqCst));
        let cancel = CancellationToken::new();
        if let Some(after) = row.cancel_after {
            let cancel = cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                cancel.cancel();
            });
        }
        let sink = Mutex::new(Vec::new());
        let started = Instant::now();
        let scope = CallScope::new("local", "matrix", format!("call-{i}"));
        let result = host
            .call(&scope, &tool, row.arguments.clone(), cancel, &sink)
            .await;
        let elapsed = started.elapsed();
        let seen = outcome(&result);
        let expected = row.expect.map_or("ok".to_owned(), |(kind, delivery)| {
            format!("{}/{}", kind.as_str(), delivery.as_str())
        });
        assert_eq!(
            seen, expected,
            "row {i} ({}, {}): {:?}",
            row.fault, row.transport, result.error
        );
        let deadline = Duration::from_secs(timeouts[i]);
        assert!(
            elapsed < deadline + GRACE,
            "row {i} ({}) took {elapsed:?}",
            row.fault
        );
        let after = calls_seen(servers);
        assert!(
            after.0 - before.0 <= 1 && after.1 - before.1 <= 1,
            "row {i} ({}): tools/call sent twice",
            row.fault
        );
        let scripted_after = [&expired, &rpc_error, &wrong_id, &short_stream, &limited]
            .map(|s| s.calls.load(std::sync::atomic::Ordering::SeqCst));
        for (b, a) in scripted_before.iter().zip(scripted_after) {
            assert!(a - b <= 1, "row {i} ({}): tools/call sent twice", row.fault);
        }
        let events_of_row = sink.into_inner().unwrap();
        assert_eq!(
            events_of_row.last(),
            Some(&ToolEvent::Result(result.clone())),
            "row {i}: one result, last"
        );
        assert_eq!(
            events_of_row
                .iter()
                .filter(|e| matches!(e, ToolEvent::Result(_)))
                .count(),
            1,
            "row {i}: exactly one result"
        );
        debug.push(format!("{result:?}"));
        events.extend(events_of_row);
        let (kind, delivery) = expected.split_once('/').unwrap_or(("ok", ""));
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            i + 1,
            row.fault,
            row.transport,
            row.era,
            kind,
            if delivery.is_empty() { "-" } else { delivery },
            if seen == expected { "✓" } else { "✗" },
            elapsed.as_millis()
        ));
    }

    // Cleanup: every session closed, every process gone, every task ended, every fd closed.
    client.shutdown(Duration::from_secs(20)).await;
    let stats = client.stats();
    assert_eq!(
        (
            stats.calls_in_flight,
            stats.background_tasks,
            stats.child_processes
        ),
        (0, 0, 0),
        "{stats:?}"
    );
    if let Some(server) = &servers.legacy {
        let seen = server
            .wait_for(|c| c.open_sessions() == 0, Duration::from_secs(10))
            .await;
        assert_eq!(seen.open_sessions(), 0, "every legacy session closed");
    }
    assert!(
        expired.deletes().await >= 1,
        "the expired session was still deleted"
    );
    assert!(
        elsewhere
            .server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty(),
        "nothing followed the redirect to another origin"
    );
    let grandchild: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let _ = std::fs::remove_file(&pidfile);
    assert_eq!(
        settle(|| usize::from(alive(grandchild)), 0, Duration::from_secs(5)).await,
        0,
        "the grandchild was killed"
    );
    drop(host);
    drop(client);
    reset_task.abort();
    drop((
        expired,
        rpc_error,
        wrong_id,
        short_stream,
        limited,
        elsewhere,
        redirecting,
    ));
    assert_eq!(
        settle(children, children_before, Duration::from_secs(5)).await,
        children_before,
        "no child process left"
    );
    let fds = settle(open_fds, fds_before, Duration::from_secs(5)).await;
    assert!(
        fds <= fds_before,
        "file descriptors: {fds_before} before, {fds} after"
    );
    let _ = std::io::stderr().flush();
    Ran {
        events,
        table,
        debug,
    }
}

fn calls_seen(servers: &Servers) -> (u64, u64) {
    (
        servers
            .legacy
            .as_ref()
            .map_or(0, |s| s.counters().method("tools/call")),
        servers
            .modern
            .as_ref()
            .map_or(0, |s| s.counters().method("tools/call")),
    )
}

fn outcome(result: &ResultEvent) -> String {
    match &result.error {
        Some(error) => format!("{}/{}", error.kind.as_str(), error.delivery.as_str()),
        None if result.is_error => "is_error without an error object".to_owned(),
        None => "ok".to_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fault_matrix() {
    let _serial = crate::leaks::serial().await;
    build_testkit();
    let servers = Servers::in_process().await;
    let ran = run(&servers).await;
    eprintln!("{}", ran.table);
    assert!(ran.table.lines().count() >= 32, "at least 30 rows");
}

/// Builds the testkit binaries once per test run.
pub(crate) fn build_testkit() {
    brain_mcp_testkit::build_binaries();
}

/// A writer into a shared buffer, for capturing logs.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The matrix again, with a recognisable token on every HTTP binding and every log line at
/// trace level captured (the servers run as child processes, so only the client logs
/// here): the token is in no event, no error message, no log line and no Debug output.
#[tokio::test]
async fn the_token_appears_nowhere() {
    let _serial = crate::leaks::serial().await;
    build_testkit();
    let servers = Servers::out_of_process();
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let ran = {
        let _guard = tracing::subscriber::set_default(subscriber);
        run(&servers).await
    };
    let logs = String::from_utf8_lossy(&capture.0.lock().unwrap()).into_owned();
    assert!(
        logs.contains("tool_call") && logs.contains("tenant=local"),
        "the capture works"
    );
    assert!(logs.contains(" TRACE "), "trace level was captured");
    assert!(!logs.contains(TOKEN), "a log line holds the token");
    for event in &ran.events {
        assert!(
            !event.to_json_line().contains(TOKEN),
            "an event holds the token"
        );
        assert!(
            !format!("{event:?}").contains(TOKEN),
            "an event's Debug holds the token"
        );
    }
    for debug in &ran.debug {
        assert!(!debug.contains(TOKEN), "Debug output holds the token");
    }
}
