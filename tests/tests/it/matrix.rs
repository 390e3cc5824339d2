//! The fault matrix: every row a fault, a transport and an era, driven through `ToolHost`,
//! with the error kind and delivery it must give, within its deadline, the session closed,
//! no `tools/call` sent twice, and nothing left behind.

use std::{
    collections::BTreeMap,
    io::Write,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use brain_mcp_testkit::{Era, HttpFault, ServerOptions, TestServer};
use brain_tools::{CallScope, ClientOptions, CredentialStore, EraPreference, McpClient, ToolHost};
use brain_tools_config::HostConfig;
use brain_tools_events::{Delivery, ErrorKind, ResultEvent, ToolEvent};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use wiremock::ResponseTemplate;

mod grants;

use crate::{
    leaks::{alive, assert_fds_settle, children, settle, settled_fds},
    scripted::{Body, CallAnswer, Scripted, answering, closing_listener, progress, sse},
};

/// A failing call may take this long past its deadline to say so.
const GRACE: Duration = Duration::from_millis(1500);
/// The deadline of rows that wait for a server that never answers.
const SHORT: u64 = 2;
/// The token every HTTP binding sends; it must never show up anywhere.
pub(crate) const TOKEN: &str = "sk-brain-secret-7f3a9c21";
/// The client secret of the OAuth rows; it must never show up anywhere either.
pub(crate) const CLIENT_SECRET: &str = "cs-brain-secret-4e1d0b77";

/// One row of the matrix.
struct Row {
    fault: &'static str,
    transport: &'static str,
    era: &'static str,
    binding: Value,
    arguments: Value,
    /// The caller cancels once the first progress shows the server has the call.
    cancel_on_progress: bool,
    expect: Option<(ErrorKind, Delivery)>,
    /// Also accepted: this kind with delivery `unknown` (a race the row cannot fix).
    or_kind: Option<ErrorKind>,
    /// Text the result's JSON line must contain.
    contains: Option<&'static str>,
    /// Requests the 2026-07-28 testkit must see for the call's task: `tasks/get` (at
    /// least, at most), `tasks/cancel` (checked when it runs in this process).
    task_requests: Option<(u64, u64, u64)>,
    /// `tool.progress` events the call must emit.
    progress_events: Option<usize>,
    /// A delegated grant in a store another holder writes too (its own client and store).
    grant: Option<grants::Case>,
}

impl Row {
    fn cancel_on_progress(mut self) -> Self {
        self.cancel_on_progress = true;
        self
    }

    fn contains(mut self, text: &'static str) -> Self {
        self.contains = Some(text);
        self
    }

    fn either_ok_or(mut self, kind: ErrorKind) -> Self {
        self.or_kind = Some(kind);
        self
    }

    /// The call's task takes exactly `polls` `tasks/get` and `cancels` `tasks/cancel`.
    fn task_requests(mut self, polls: u64, cancels: u64) -> Self {
        self.task_requests = Some((polls, polls, cancels));
        self
    }

    /// A task that runs until a clock stops it: at least one poll, and no more than its
    /// time allows at the interval the server asked for (no busy polling).
    fn polls_at_most(mut self, polls: u64, cancels: u64) -> Self {
        self.task_requests = Some((1, polls, cancels));
        self
    }

    fn progress_events(mut self, events: usize) -> Self {
        self.progress_events = Some(events);
        self
    }
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
        cancel_on_progress: false,
        expect,
        or_kind: None,
        contains: None,
        task_requests: None,
        progress_events: None,
        grant: None,
    }
}

/// A row of a grant shared with another holder (see `grants.rs`).
fn grant_row(
    fault: &'static str,
    case: grants::Case,
    fx: &Fixtures,
    expect: Option<(ErrorKind, Delivery)>,
) -> Row {
    let mut row = row(
        fault,
        "http",
        "2026-07-28",
        case.binding(&fx.grants[&case]),
        json!({}),
        expect,
    );
    row.grant = Some(case);
    row
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
    /// How many rows ran (each checked as it ran).
    pub(crate) rows: usize,
}

/// Everything the rows point at besides the testkit servers: addresses that refuse or
/// reset, scripted servers (by name), a redirect, files the stdio rows write.
struct Fixtures {
    refused_url: String,
    _refused: brain_mcp_testkit::RefusedPort,
    reset_url: String,
    reset_task: tokio::task::JoinHandle<()>,
    scripted: BTreeMap<&'static str, Scripted>,
    elsewhere: Scripted,
    redirecting: wiremock::MockServer,
    /// Refuses every POST, each path its own way (see `Fixtures::start`).
    refusing: wiremock::MockServer,
    /// OAuth resource and authorization servers, by what their authorization server
    /// does wrong.
    oauth: BTreeMap<&'static str, brain_mcp_testkit::oauth::Servers>,
    /// OAuth resource and authorization servers of the shared-grant rows, by case.
    grants: BTreeMap<grants::Case, brain_mcp_testkit::oauth::Servers>,
    /// A 2025-11-25 server that never answers `server/discover` (the era probe).
    holding: TestServer,
    pidfile: PathBuf,
    setsid_pidfile: PathBuf,
    setsid_dying_pidfile: PathBuf,
    env_file: PathBuf,
    inherited_env_file: PathBuf,
}

/// A JSON-RPC result for a request id.
fn result(id: &Value, result: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// The scripted servers, by name: each answers `tools/call` its own way.
fn scripted_answers() -> Vec<(&'static str, bool, CallAnswer)> {
    let tiny_blocks = |n: usize| {
        // `n` tiny text blocks: within a large byte budget, many times its bytes in memory.
        let block = r#"{"type":"text","text":""}"#;
        let mut blocks = String::with_capacity(n * (block.len() + 1));
        for i in 0..n {
            if i > 0 {
                blocks.push(',');
            }
            blocks.push_str(block);
        }
        blocks
    };
    let flood = tiny_blocks(600_000);
    let echo = |text: String| json!({"content": [{"type": "text", "text": text}]});
    let modern = true;
    let legacy = false;
    vec![
        ("expired", legacy, Arc::new(|_| ResponseTemplate::new(404))),
        (
            "rpc_error",
            legacy,
            Arc::new(|request| {
                let id = &request["id"];
                ResponseTemplate::new(200).set_body_json(json!({
                    "jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": "boom"}
                }))
            }),
        ),
        (
            "wrong_id",
            legacy,
            Arc::new(|_| result(&json!(424242), json!({"content": []}))),
        ),
        (
            "short_stream",
            legacy,
            Arc::new(|_| sse(&[progress("c", 1)])),
        ),
        (
            "limited",
            legacy,
            Arc::new(|_| ResponseTemplate::new(429).insert_header("retry-after", "5")),
        ),
        // An SSE stream whose event id cannot be sent back (control characters), with a
        // retry, that ends before the result: the resume cannot be built, after the call
        // went out.
        ("bad_event_id", legacy, Arc::new(|_| bad_event_id())),
        ("bad_event_id_2026", modern, Arc::new(|_| bad_event_id())),
        // Servers that echo the bearer token back, everywhere they can.
        (
            "echo_text",
            legacy,
            Arc::new(move |request| result(&request["id"], echo(format!("your key is {TOKEN}")))),
        ),
        (
            "echo_stream",
            legacy,
            Arc::new(move |request| {
                let id = &request["id"];
                sse(&[
                    json!({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": request["params"]["_meta"]["progressToken"], "progress": 1,
                                      "message": format!("using {TOKEN}")}}),
                    json!({"jsonrpc": "2.0", "method": "notifications/message",
                           "params": {"level": "info", "data": {"token": TOKEN}}}),
                    json!({"jsonrpc": "2.0", "id": id, "result": echo(format!("{TOKEN}!"))}),
                ])
            }),
        ),
        (
            "echo_error",
            legacy,
            Arc::new(|request| {
                let id = &request["id"];
                ResponseTemplate::new(200).set_body_json(json!({
                    "jsonrpc": "2.0", "id": id,
                    "error": {"code": -32000, "message": format!("bad token {TOKEN}")}
                }))
            }),
        ),
        (
            "echo_escaped_2026",
            modern,
            Arc::new(|request| {
                let id = &request["id"];
                // The token spelt with JSON escapes, in a progress message and the result.
                let escaped: String = TOKEN
                    .chars()
                    .map(|c| format!("\\u{:04x}", c as u32))
                    .collect();
                ResponseTemplate::new(200)
                    .set_event_stream(format!(
                        "data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{\"level\":\"info\",\"data\":\"{escaped}\"}}}}\n\n\
                         data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"{escaped}\"}}]}}}}\n\n"
                    ))
            }),
        ),
        // Answers that are not answers.
        (
            "notification",
            legacy,
            Arc::new(|_| {
                ResponseTemplate::new(200).set_body_json(json!({
                    "jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "working"}
                }))
            }),
        ),
        ("accepted", legacy, Arc::new(|_| ResponseTemplate::new(202))),
        // JSON-RPC errors that prove the tool did not run: over legacy HTTP in a 200, and
        // as 2026-07-28 sends them, with an HTTP status.
        (
            "method_not_found",
            legacy,
            Arc::new(|request| {
                ResponseTemplate::new(200).set_body_json(json!({
                    "jsonrpc": "2.0", "id": request["id"],
                    "error": {"code": -32601, "message": "Method not found"}
                }))
            }),
        ),
        (
            "missing_capability_2026",
            modern,
            Arc::new(|request| {
                ResponseTemplate::new(400).set_body_json(json!({
                    "jsonrpc": "2.0", "id": request["id"],
                    "error": {"code": -32021, "message": "Missing required client capability",
                              "data": {"requiredCapabilities": {"elicitation": {}}}}
                }))
            }),
        ),
        // A number past every clock where a server may put one.
        (
            "retry_after_forever",
            legacy,
            Arc::new(|_| {
                ResponseTemplate::new(429).insert_header("retry-after", "18446744073709551616")
            }),
        ),
        (
            "sse_retry_forever",
            legacy,
            Arc::new(|request| {
                let id = &request["id"];
                ResponseTemplate::new(200).set_event_stream(format!(
                    "id: 1\nretry: 99999999999999999999999999\ndata: \n\n\
                     data: {{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"ok\"}}]}}}}\n\n"
                ))
            }),
        ),
        (
            "notification_2026",
            modern,
            Arc::new(|_| {
                ResponseTemplate::new(200).set_body_json(json!({
                    "jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "working"}
                }))
            }),
        ),
        // Results that are not tool results.
        (
            "result_string",
            legacy,
            Arc::new(|request| result(&request["id"], json!("x"))),
        ),
        (
            "result_array",
            legacy,
            Arc::new(|request| result(&request["id"], json!([]))),
        ),
        (
            "result_number",
            modern,
            Arc::new(|request| result(&request["id"], json!(5))),
        ),
        (
            "result_empty",
            legacy,
            Arc::new(|request| result(&request["id"], json!({}))),
        ),
        (
            "result_is_error_yes",
            legacy,
            Arc::new(|request| result(&request["id"], json!({"content": [], "isError": "yes"}))),
        ),
        (
            "result_task",
            legacy,
            Arc::new(|request| {
                let id = &request["id"];
                result(
                    id,
                    json!({"resultType": "task", "task": {"taskId": "t1", "status": "working",
                           "createdAt": "2026-12-01T00:00:00Z", "ttl": 60000}}),
                )
            }),
        ),
        // Content that must not reach the model as it is.
        (
            "image_not_base64",
            legacy,
            Arc::new(|request| {
                let id = &request["id"];
                result(
                    id,
                    json!({"content": [{"type": "image", "data": "<script>", "mimeType": "image/png"}]}),
                )
            }),
        ),
        (
            "image_not_an_image",
            legacy,
            Arc::new(|request| {
                let id = &request["id"];
                result(
                    id,
                    json!({"content": [{"type": "image", "data": "PGh0bWw+", "mimeType": "text/html"}]}),
                )
            }),
        ),
        (
            "tiny_blocks",
            legacy,
            Arc::new(move |request| {
                let id = &request["id"];
                ResponseTemplate::new(200).set_json_text(format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{flood}]}}}}"#
                ))
            }),
        ),
    ]
}

fn bad_event_id() -> ResponseTemplate {
    ResponseTemplate::new(200)
        .set_event_stream("id: ev\u{1}\u{7f}\u{1b}[31m\nretry: 10\ndata: \n\n")
}

impl Fixtures {
    async fn start() -> Self {
        let refused = brain_mcp_testkit::RefusedPort::new().unwrap();
        let (reset_url, reset_task) = closing_listener().await;
        let mut scripted = BTreeMap::new();
        for (name, modern, answer) in scripted_answers() {
            let server = if modern {
                Scripted::start_modern(answer).await
            } else {
                Scripted::start(answer).await
            };
            scripted.insert(name, server);
        }
        let elsewhere = Scripted::start(Arc::new(|_| ResponseTemplate::new(200))).await;
        let redirecting = answering(wiremock::MockServer::start().await).await;
        wiremock::Mock::given(wiremock::matchers::any())
            .respond_with(
                ResponseTemplate::new(307).insert_header("location", elsewhere.url().as_str()),
            )
            .mount(&redirecting)
            .await;
        let refusing = answering(wiremock::MockServer::start().await).await;
        for (at, answer) in [
            // The server's reason, holding the token the request carried.
            (
                "/reason/mcp",
                ResponseTemplate::new(403).set_body_string(format!(
                    "Access is only allowed at localhost:8080, not with {TOKEN}"
                )),
            ),
            // No session exists yet: the URL is wrong, not a session.
            ("/gone/mcp", ResponseTemplate::new(404)),
            // The old HTTP+SSE transport: a GET-only event stream.
            (
                "/sse",
                ResponseTemplate::new(405).insert_header("allow", "GET"),
            ),
        ] {
            wiremock::Mock::given(wiremock::matchers::method("POST"))
                .and(wiremock::matchers::path(at))
                .respond_with(answer)
                .mount(&refusing)
                .await;
        }
        let mut oauth = BTreeMap::new();
        for (name, patch) in [
            // Plain http off this machine: the client secret would cross a network.
            (
                "plain_http",
                json!({"token_endpoint": "http://as.example.invalid/token"}),
            ),
            ("mac", json!({})),
            ("no_token", json!({})),
            (
                "issuer",
                json!({"issuer": "https://other-issuer.example.com"}),
            ),
        ] {
            let servers = brain_mcp_testkit::oauth::Servers::start().await;
            let state = &servers.auth.state;
            brain_mcp_testkit::oauth::lock(&state.metadata_patch)
                .extend(patch.as_object().cloned().unwrap_or_default());
            match name {
                "mac" => *brain_mcp_testkit::oauth::lock(&state.token_type) = "mac".into(),
                "no_token" => {
                    *brain_mcp_testkit::oauth::lock(&state.token_answer) =
                        Some((200, r#"{"token_type":"Bearer","expires_in":3600}"#.into()));
                }
                _ => {}
            }
            oauth.insert(name, servers);
        }
        let mut grants = BTreeMap::new();
        for case in grants::Case::ALL {
            grants.insert(case, brain_mcp_testkit::oauth::Servers::start().await);
        }
        let file = |what: &str| {
            std::env::temp_dir().join(format!("brain-matrix-{}-{what}", std::process::id()))
        };
        let holding = TestServer::start(ServerOptions {
            era: Era::Legacy,
            hold_discover: true,
            ..ServerOptions::default()
        })
        .await
        .unwrap();
        Self {
            holding,
            refused_url: refused.url(),
            _refused: refused,
            reset_url,
            reset_task,
            scripted,
            elsewhere,
            redirecting,
            refusing,
            oauth,
            grants,
            pidfile: file("grandchild.pid"),
            setsid_pidfile: file("setsid.pid"),
            setsid_dying_pidfile: file("setsid-dying.pid"),
            env_file: file("env"),
            inherited_env_file: file("inherited-env"),
        }
    }

    fn url(&self, name: &str) -> String {
        self.scripted[name].url()
    }

    fn refusing(&self, at: &str) -> String {
        format!("{}{at}", self.refusing.uri())
    }

    /// A binding of the OAuth resource server `name` with a client credentials grant.
    fn oauth(&self, name: &str) -> Value {
        json!({
            "url": self.oauth[name].url(), "mcp_tool": "echo", "timeout_seconds": 10,
            "auth": {"type": "client_credentials", "client_id": "matrix-client",
                     "client_secret_env": "MATRIX_CLIENT_SECRET"}
        })
    }

    /// `tools/call` requests each scripted server received so far.
    fn scripted_calls(&self) -> Vec<usize> {
        self.scripted
            .values()
            .map(|server| server.calls.load(std::sync::atomic::Ordering::SeqCst))
            .collect()
    }
}

/// Every row of the matrix.
fn rows(fx: &Fixtures, servers: &Servers) -> Vec<Row> {
    let legacy = servers.legacy_url.as_str();
    let modern = servers.modern_url.as_str();
    let fault = |fault| servers.fault(fault);
    let path = |path: &PathBuf| path.to_str().unwrap().to_owned();
    let schema = json!({"type": "object", "required": ["city", "temperature"],
                        "properties": {"city": {"type": "string"}, "temperature": {"type": "number"}}});
    let e = |kind, delivery| Some((kind, delivery));
    use Delivery::{Delivered, NotSent, Unknown};
    use ErrorKind::*;
    vec![
        row(
            "connection refused",
            "http",
            "-",
            http(&fx.refused_url, "echo"),
            json!({}),
            e(Connect, NotSent),
        ),
        row(
            "reset before the request is written",
            "http",
            "-",
            http(&fx.reset_url, "echo"),
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
            http(&fault(HttpFault::Status401), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "401 without a body",
            "http",
            "legacy",
            http(&fault(HttpFault::Status401Plain), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "403",
            "http",
            "legacy",
            http(&fault(HttpFault::Status403), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "404 session expired mid-call",
            "http",
            "legacy",
            http(&fx.url("expired"), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "405",
            "http",
            "legacy",
            http(&fault(HttpFault::Status405), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "406",
            "http",
            "legacy",
            http(&fault(HttpFault::Status406), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "429 on the call",
            "http",
            "legacy",
            http(&fx.url("limited"), "echo"),
            json!({}),
            e(HttpStatus, Unknown),
        ),
        row(
            "500 with an HTML body",
            "http",
            "legacy",
            http(&fault(HttpFault::Status500Html), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "502 with an HTML body",
            "http",
            "legacy",
            http(&fault(HttpFault::Status502Html), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        ),
        row(
            "200 with the wrong content type",
            "http",
            "legacy",
            http(&fault(HttpFault::WrongContentType), "echo"),
            json!({}),
            e(Protocol, NotSent),
        ),
        row(
            "a body that is not JSON",
            "http",
            "legacy",
            http(&fault(HttpFault::MalformedJson), "echo"),
            json!({}),
            e(Protocol, NotSent),
        ),
        row(
            "a JSON-RPC error to the handshake",
            "http",
            "legacy",
            http(&fault(HttpFault::JsonRpcError), "echo"),
            json!({}),
            e(Protocol, NotSent),
        ),
        row(
            "a JSON-RPC error to the call",
            "http",
            "legacy",
            http(&fx.url("rpc_error"), "echo"),
            json!({}),
            e(Protocol, Delivered),
        ),
        row(
            "a response with the wrong id",
            "http",
            "legacy",
            http(&fx.url("wrong_id"), "echo"),
            json!({}),
            e(Protocol, Unknown),
        ),
        row(
            "an SSE stream that ends before the result",
            "http",
            "legacy",
            http(&fx.url("short_stream"), "echo"),
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
            "an SSE event id with control characters, then the stream ends",
            "http",
            "legacy",
            http(&fx.url("bad_event_id"), "echo"),
            json!({}),
            e(Protocol, Unknown),
        ),
        row(
            "an SSE event id with control characters, then the stream ends",
            "http",
            "2026-07-28",
            http(&fx.url("bad_event_id_2026"), "echo"),
            json!({}),
            e(Protocol, Unknown),
        ),
        row(
            "a token that holds a newline",
            "http",
            "legacy",
            with(
                http(legacy, "echo"),
                "token_env",
                json!("MATRIX_NEWLINE_TOKEN"),
            ),
            json!({}),
            e(MissingToken, NotSent),
        ),
        row(
            "a result that echoes the token",
            "http",
            "legacy",
            http(&fx.url("echo_text"), "echo"),
            json!({}),
            None,
        )
        .contains("your key is <redacted>"),
        row(
            "progress, a log and a result that echo the token",
            "http",
            "legacy",
            http(&fx.url("echo_stream"), "echo"),
            json!({}),
            None,
        )
        .contains("<redacted>!"),
        row(
            "a JSON-RPC error that echoes the token",
            "http",
            "legacy",
            http(&fx.url("echo_error"), "echo"),
            json!({}),
            e(Protocol, Delivered),
        )
        .contains("bad token <redacted>"),
        row(
            "a log and a result that spell the token in JSON escapes",
            "http",
            "2026-07-28",
            http(&fx.url("echo_escaped_2026"), "echo"),
            json!({}),
            None,
        )
        .contains("<redacted>"),
        row(
            "a notification instead of the answer",
            "http",
            "legacy",
            http(&fx.url("notification"), "echo"),
            json!({}),
            e(Protocol, Unknown),
        ),
        row(
            "202 and no answer to the call",
            "http",
            "legacy",
            http(&fx.url("accepted"), "echo"),
            json!({}),
            e(Protocol, Unknown),
        ),
        row(
            "a notification instead of the answer",
            "http",
            "2026-07-28",
            http(&fx.url("notification_2026"), "echo"),
            json!({}),
            e(Protocol, Unknown),
        ),
        row(
            "a result that is a string",
            "http",
            "legacy",
            http(&fx.url("result_string"), "echo"),
            json!({}),
            e(Protocol, Delivered),
        ),
        row(
            "a result that is an array",
            "http",
            "legacy",
            http(&fx.url("result_array"), "echo"),
            json!({}),
            e(Protocol, Delivered),
        ),
        row(
            "a result that is a number",
            "http",
            "2026-07-28",
            http(&fx.url("result_number"), "echo"),
            json!({}),
            e(Protocol, Delivered),
        ),
        row(
            "an empty result",
            "http",
            "legacy",
            http(&fx.url("result_empty"), "echo"),
            json!({}),
            e(Protocol, Delivered),
        ),
        row(
            "isError that is not a boolean",
            "http",
            "legacy",
            http(&fx.url("result_is_error_yes"), "echo"),
            json!({}),
            e(Protocol, Delivered),
        ),
        row(
            "a task instead of a result",
            "http",
            "legacy",
            http(&fx.url("result_task"), "echo"),
            json!({}),
            e(Protocol, Delivered),
        )
        .contains("a task, which the call did not ask for"),
        row(
            "an image whose data is not base64",
            "http",
            "legacy",
            http(&fx.url("image_not_base64"), "echo"),
            json!({}),
            None,
        )
        .contains("its data is not base64"),
        row(
            "an image whose MIME type is not an image",
            "http",
            "legacy",
            http(&fx.url("image_not_an_image"), "echo"),
            json!({}),
            None,
        )
        .contains("not an image type"),
        row(
            "600,000 tiny blocks within the byte budget",
            "http",
            "legacy",
            with(
                http(&fx.url("tiny_blocks"), "echo"),
                "max_output_bytes",
                json!(20_000_000),
            ),
            json!({}),
            e(OutputTooLarge, Delivered),
        )
        .contains("content blocks"),
        row(
            "a server that drips one byte a second",
            "http",
            "legacy",
            with(
                http(&fault(HttpFault::DripOneBytePerSecond), "echo"),
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
                http(&fault(HttpFault::Hang), "echo"),
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
            http(&format!("{}/mcp", fx.redirecting.uri()), "echo"),
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
            with(http(legacy, "bad_structured"), "output_schema", schema),
            json!({}),
            e(OutputSchema, Delivered),
        ),
        row(
            "the caller cancels mid-call",
            "http",
            "legacy",
            http(legacy, "progress"),
            json!({"steps": 100_000, "delay_ms": 50}),
            e(Cancelled, Unknown),
        )
        .cancel_on_progress(),
        row(
            "100,000 progress notifications and a 2 s timeout",
            "http",
            "legacy",
            with(http(legacy, "progress"), "timeout_seconds", json!(SHORT)),
            json!({"steps": 100_000, "delay_ms": 0}),
            None,
        )
        .either_ok_or(Timeout),
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
        row(
            "the caller cancels mid-call",
            "http",
            "2026-07-28",
            http(modern, "progress"),
            json!({"steps": 100_000, "delay_ms": 50}),
            e(Cancelled, Unknown),
        )
        .cancel_on_progress(),
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
            e(ServerExited, Unknown),
        )
        .contains("the server's process ended before it answered (exit status: 1)"),
        row(
            "answers the call with a parse error without an id",
            "stdio",
            "legacy",
            stdio(&[], "unreadable"),
            json!({}),
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
            stdio(&["--spawn-grandchild", &path(&fx.pidfile)], "echo"),
            json!({"message": "x"}),
            None,
        ),
        row(
            "a setsid grandchild holds stdout and stderr",
            "stdio",
            "legacy",
            // A short deadline: a call held by the grandchild's pipes (it sleeps for
            // 1,000 s) would end past it, so the row would fail.
            with(
                stdio(
                    &["--spawn-setsid-grandchild", &path(&fx.setsid_pidfile)],
                    "echo",
                ),
                "timeout_seconds",
                json!(SHORT),
            ),
            json!({"message": "x"}),
            None,
        ),
        row(
            "exits mid-call while a setsid grandchild holds stdout and stderr",
            "stdio",
            "legacy",
            // The call ends when the server died, not when the pipes close (they never
            // do while the grandchild sleeps): as server_exited, not as a timeout.
            stdio(
                &[
                    "--spawn-setsid-grandchild",
                    &path(&fx.setsid_dying_pidfile),
                    "--exit-mid-call",
                ],
                "echo",
            ),
            json!({"message": "x"}),
            e(ServerExited, Unknown),
        ),
        row(
            "sees only a minimal environment and its binding's env",
            "stdio",
            "legacy",
            {
                let mut binding = stdio(&["--env-file", &path(&fx.env_file)], "echo");
                binding["command"]["env"] = json!({"MATRIX_BINDING_VAR": "1"});
                binding
            },
            json!({"message": "x"}),
            None,
        ),
        row(
            "inherits the host's environment when the binding opts in",
            "stdio",
            "legacy",
            {
                let mut binding = stdio(&["--env-file", &path(&fx.inherited_env_file)], "echo");
                binding["command"]["inherit_env"] = json!(true);
                binding
            },
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
        // The secret in the URL is in no Debug output of the client (which remembers the
        // servers it called), no log line and no event (`the_token_appears_nowhere`).
        row(
            "a URL whose query holds a secret",
            "http",
            "legacy",
            http(&format!("{legacy}?key={TOKEN}"), "echo"),
            json!({"message": "x"}),
            None,
        ),
        // JSON-RPC errors that prove the tool did not run (the server received the call
        // and refused it before processing it).
        row(
            "a JSON-RPC -32601 to the call",
            "http",
            "legacy",
            http(&fx.url("method_not_found"), "echo"),
            json!({}),
            e(Protocol, NotSent),
        )
        .contains("refused the call before running it with JSON-RPC error -32601"),
        row(
            "a JSON-RPC -32602 to the call (an unknown tool)",
            "http",
            "2026-07-28",
            http(modern, "rpc_error"),
            json!({"code": -32602, "message": "unknown tool: nope"}),
            e(Protocol, NotSent),
        )
        .contains("-32602 (invalid params): unknown tool: nope"),
        row(
            "HTTP 400 carrying a JSON-RPC -32021 (missing capability)",
            "http",
            "2026-07-28",
            http(&fx.url("missing_capability_2026"), "echo"),
            json!({}),
            e(Protocol, NotSent),
        )
        .contains("-32021 (missing required client capability)"),
        // What a refusing status says.
        row(
            "403 with a reason that echoes the token",
            "http",
            "-",
            http(&fx.refusing("/reason/mcp"), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        )
        .contains("saying \\\"Access is only allowed at localhost:8080, not with <redacted>"),
        row(
            "404 before any session exists",
            "http",
            "-",
            http(&fx.refusing("/gone/mcp"), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        )
        .contains("(not found: check that the URL is the server's MCP endpoint)"),
        row(
            "a GET-only /sse endpoint of the old HTTP+SSE transport",
            "http",
            "-",
            http(&fx.refusing("/sse"), "echo"),
            json!({}),
            e(HttpStatus, NotSent),
        )
        .contains("old HTTP+SSE transport"),
        // Numbers past every clock.
        row(
            "429 whose Retry-After is past every clock",
            "http",
            "legacy",
            http(&fx.url("retry_after_forever"), "echo"),
            json!({}),
            e(HttpStatus, Unknown),
        ),
        row(
            "an SSE retry past every clock, then the result",
            "http",
            "legacy",
            http(&fx.url("sse_retry_forever"), "echo"),
            json!({}),
            None,
        ),
        row(
            "exits before the handshake, saying why a few lines up",
            "stdio",
            "legacy",
            stdio(
                &[
                    "--stderr-line",
                    "error: cannot open /srv/notes.sqlite (--db-path): permission denied",
                    "--stderr-line",
                    "exiting",
                    "--exit-before-handshake",
                ],
                "echo",
            ),
            json!({}),
            e(Connect, NotSent),
        )
        .contains("cannot open /srv/notes.sqlite (--db-path): permission denied | exiting"),
        // Authorization servers that lie (client credentials).
        row(
            "a token endpoint at plain http off this machine",
            "http",
            "2026-07-28",
            fx.oauth("plain_http"),
            json!({}),
            e(AuthorizationFailed, NotSent),
        )
        .contains("plain http"),
        row(
            "a token of type mac",
            "http",
            "2026-07-28",
            fx.oauth("mac"),
            json!({}),
            e(AuthorizationFailed, NotSent),
        )
        .contains("another type than Bearer"),
        row(
            "a token answer without an access token",
            "http",
            "2026-07-28",
            fx.oauth("no_token"),
            json!({}),
            e(AuthorizationFailed, NotSent),
        )
        .contains("no usable token"),
        row(
            "authorization server metadata that names another issuer",
            "http",
            "2026-07-28",
            fx.oauth("issuer"),
            json!({}),
            e(AuthorizationFailed, NotSent),
        )
        .contains("RFC 8414"),
        // Tools that run as tasks (2026-07-28 tasks extension): one tools/call, then
        // polls; every end after the handle is delivered.
        row(
            "a tool that runs as a task, done at the third poll",
            "http",
            "2026-07-28",
            http(modern, "task"),
            json!({"polls": 3}),
            None,
        )
        .task_requests(3, 0),
        row(
            "a tool that may run as a task, and does",
            "http",
            "2026-07-28",
            http(modern, "maybe_task"),
            json!({}),
            None,
        )
        .task_requests(1, 0),
        row(
            "a task that completes with isError",
            "http",
            "2026-07-28",
            http(modern, "task"),
            json!({"outcome": "tool_error", "polls": 2}),
            e(ToolError, Delivered),
        )
        .task_requests(2, 0)
        .contains("the task's tool failed on purpose"),
        row(
            "a task that fails with a JSON-RPC error",
            "http",
            "2026-07-28",
            http(modern, "task"),
            json!({"outcome": "fail"}),
            e(Protocol, Delivered),
        )
        .task_requests(1, 0)
        .contains("failed with JSON-RPC error -32603: the task failed on purpose"),
        row(
            "a task the server cancels",
            "http",
            "2026-07-28",
            http(modern, "task"),
            json!({"outcome": "cancelled"}),
            e(Protocol, Delivered),
        )
        .task_requests(1, 0),
        row(
            "a task that never finishes",
            "http",
            "2026-07-28",
            with(http(modern, "task"), "timeout_seconds", json!(SHORT)),
            json!({"outcome": "never", "poll_ms": 250}),
            e(Timeout, Delivered),
        )
        .polls_at_most(8, 1),
        row(
            "a task that asks for input this host does not give",
            "http",
            "2026-07-28",
            http(modern, "task"),
            json!({"outcome": "input", "polls": 2}),
            e(Protocol, Delivered),
        )
        .task_requests(2, 1)
        .contains("asked for input this host does not give"),
        row(
            "a task whose result is over the byte budget",
            "http",
            "2026-07-28",
            with(http(modern, "task"), "max_output_bytes", json!(100_000)),
            json!({"bytes": 2_000_000}),
            e(OutputTooLarge, Delivered),
        )
        // Reading stopped, so the client cannot know the task ended: it cancels it.
        .task_requests(1, 1)
        .contains("more than its max_output_bytes (100000 bytes)"),
        row(
            "a task that outlives its ttlMs",
            "http",
            "2026-07-28",
            http(modern, "task"),
            // The server says nothing past it: polled through the grace (2 s) after it.
            json!({"outcome": "never", "ttl_ms": 500, "poll_ms": 200, "at_ttl": "nothing"}),
            e(Timeout, Delivered),
        )
        .polls_at_most(13, 1)
        .contains("outlived its time to live (500 ms)"),
        row(
            "task polls that fail on the wire (503, a dropped connection)",
            "http",
            "2026-07-28",
            http(modern, "task"),
            json!({"flaky": 2, "polls": 1}),
            None,
        )
        .task_requests(3, 0),
        row(
            "the caller cancels a task",
            "http",
            "2026-07-28",
            http(modern, "task"),
            json!({"outcome": "never", "status": true}),
            e(Cancelled, Delivered),
        )
        .cancel_on_progress()
        .task_requests(0, 1),
        row(
            "a task reports progress: before its handle, then status messages",
            "http",
            "2026-07-28",
            http(modern, "task"),
            json!({"progress": 2, "status": true, "polls": 2}),
            None,
        )
        .task_requests(2, 0)
        .progress_events(5),
        row(
            "a tool that runs only as a task, on a binding with tasks off",
            "http",
            "2026-07-28",
            with(http(modern, "task"), "tasks", json!(false)),
            json!({}),
            e(Protocol, NotSent),
        )
        .task_requests(0, 0)
        .contains("this binding turns tasks off"),
        row(
            "a tool that requires tasks, in a 2025-11-25 session",
            "http",
            "legacy",
            http(legacy, "task"),
            json!({}),
            e(Protocol, NotSent),
        )
        .contains("requires tasks, which this host supports in the 2026-07-28 era"),
        row(
            "a task over stdio",
            "stdio",
            "2026-07-28",
            stdio(&["--era", "modern"], "task"),
            json!({"polls": 2, "bytes": 5_000}),
            None,
        ),
        // A tenant's grant shared with other holders (processes, hosts): see grants.rs.
        grant_row(
            "a shared grant's token expired; its refresh token rotates (reuse detected)",
            grants::Case::Rotates,
            fx,
            None,
        ),
        grant_row(
            "a shared grant's lease is held by another holder, who refreshes it",
            grants::Case::LeaseHeld,
            fx,
            None,
        ),
        grant_row(
            "a shared grant's refresh is refused: another holder rotated it meanwhile",
            grants::Case::RefusedButReplaced,
            fx,
            None,
        ),
        grant_row(
            "a shared grant's refresh is refused and nobody replaced it",
            grants::Case::RefusedForGood,
            fx,
            e(AuthorizationRequired, NotSent),
        ),
        grant_row(
            "the credential store (PostgreSQL) is down when a token needs renewing",
            grants::Case::StoreDown,
            fx,
            e(CredentialStore, NotSent),
        ),
        grant_row(
            "the stored grant's file is corrupt",
            grants::Case::CorruptFile,
            fx,
            e(CredentialStore, NotSent),
        )
        .contains(
            "is not a grant record; it did not run, and calling it again the same way fails \
             the same way: run `mcp-tools logout --config <host-config.json> --tool ",
        ),
        grant_row(
            "the credential store (PostgreSQL) hangs when a token needs renewing",
            grants::Case::StoreHangs,
            fx,
            e(CredentialStore, NotSent),
        )
        .contains("did not answer within the call's timeout"),
        grant_row(
            "the stored grant's row has a column altered by hand",
            grants::Case::RowAltered,
            fx,
            e(CredentialStore, NotSent),
        )
        .contains("column scopes"),
        grant_row(
            "the call's timeout passes while its refresh is at the authorization server",
            grants::Case::RefreshOutlivesTheCall,
            fx,
            e(Timeout, NotSent),
        ),
        row(
            "a 2025-11-25 server that never answers the era probe (server/discover)",
            "http",
            "legacy",
            http(&fx.holding.url(), "echo"),
            json!({"message": "hi"}),
            None,
        ),
        row(
            "a binding that pins 2026-07-28, on a server that speaks 2025-11-25 only",
            "http",
            "legacy",
            with(http(legacy, "echo"), "era", json!("2026-07-28")),
            json!({"message": "hi"}),
            e(Protocol, NotSent),
        )
        .contains("pins; remove the field"),
        // Answers about a task that break the protocol: the call ends `protocol` and gives
        // its own task, last seen running, up with `tasks/cancel`.
        row(
            "a tasks/get answer about another task (completed, with a result)",
            "http",
            "2026-07-28",
            http(modern, "task"),
            json!({"answer": "other_task"}),
            e(Protocol, Delivered),
        )
        .task_requests(1, 1)
        .contains("an answer to tasks/get about another task"),
        row(
            "a tasks/get answer: completed without a result",
            "http",
            "2026-07-28",
            http(modern, "task"),
            json!({"answer": "no_result"}),
            e(Protocol, Delivered),
        )
        .task_requests(1, 1),
        row(
            "a tasks/get answer with a status no revision defines",
            "http",
            "2026-07-28",
            http(modern, "task"),
            json!({"answer": "unknown_status"}),
            e(Protocol, Delivered),
        )
        .task_requests(1, 1),
        row(
            "a JSON-RPC error to tasks/get while the task runs",
            "http",
            "2026-07-28",
            http(modern, "task"),
            json!({"answer": "rpc_error"}),
            e(Protocol, Delivered),
        )
        .task_requests(1, 1)
        .contains("JSON-RPC error -32602"),
        row(
            "dies of SIGSEGV mid-call",
            "stdio",
            "legacy",
            stdio(&["--crash-mid-call", "segv"], "echo"),
            json!({"message": "x"}),
            e(ServerExited, Unknown),
        )
        .contains("killed by signal 11 (SIGSEGV): it crashed"),
        row(
            "exits 139 mid-call (as a shell reports a crash)",
            "stdio",
            "legacy",
            stdio(&["--crash-mid-call", "139"], "echo"),
            json!({"message": "x"}),
            e(ServerExited, Unknown),
        )
        .contains("exit status: 139, as a shell reports a command killed by signal 11 (SIGSEGV)"),
        row(
            "a task the server fails at its ttlMs",
            "http",
            "2026-07-28",
            http(modern, "task"),
            json!({"outcome": "never", "ttl_ms": 500, "poll_ms": 200, "at_ttl": "fail"}),
            e(Protocol, Delivered),
        )
        // The server's verdict ends the call: nothing to cancel.
        .polls_at_most(4, 0)
        .contains("failed once its time to live (500 ms) had passed, with JSON-RPC error -32603"),
        row(
            "a task the server deletes at its ttlMs (-32602 to the next poll)",
            "http",
            "2026-07-28",
            http(modern, "task"),
            json!({"outcome": "never", "ttl_ms": 500, "poll_ms": 200, "at_ttl": "forget"}),
            e(Protocol, Delivered),
        )
        .polls_at_most(4, 0)
        .contains("once its time to live (500 ms) had passed, answered a request about the task with JSON-RPC error -32602"),
    ]
}

/// What one row did, for the table and the checks after the run.
struct Outcome {
    events: Vec<ToolEvent>,
    line: String,
    debug: String,
}

/// Runs one row through the host and checks it: kind and delivery, its deadline, at most
/// one `tools/call` (and none for `not_sent`, unless a status refused it), exactly one
/// result, last, and what its content must contain.
async fn run_row(
    i: usize,
    row: &Row,
    client: &McpClient,
    servers: &Servers,
    fx: &Fixtures,
) -> Outcome {
    // A shared-grant row: its store (another holder writes it too) and a client of its own.
    let grant = match row.grant {
        Some(case) => Some((case, case.prepare(&fx.grants[&case]).await)),
        None => None,
    };
    let own_client = grant.as_ref().map(|(_, prepared)| {
        let store: Arc<dyn CredentialStore> = prepared.store.clone();
        McpClient::new(
            ClientOptions::default()
                .era(EraPreference::Auto)
                .credential_store(store),
        )
        .expect("the client builds")
    });
    let host = host_for(i, row, own_client.as_ref().unwrap_or(client));
    let tool = format!("row{i:02}");
    let before = calls_seen(servers);
    let tasks_before = task_requests_seen(servers);
    let scripted_before = fx.scripted_calls();
    let cancel = CancellationToken::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let (events, cancel, on_progress) =
            (events.clone(), cancel.clone(), row.cancel_on_progress);
        move |event: ToolEvent| {
            if on_progress && matches!(event, ToolEvent::Progress(_)) {
                cancel.cancel();
            }
            events.lock().unwrap().push(event);
        }
    };
    let started = Instant::now();
    let scope = CallScope::new("local", "matrix", format!("call-{i}"));
    let result = host
        .call(scope.clone(), &tool, row.arguments.clone())
        .cancel(cancel.clone())
        .sink(Arc::new(sink))
        .await;
    let elapsed = started.elapsed();
    let seen = outcome(&result);
    let expected = row.expect.map_or("ok".to_owned(), |(kind, delivery)| {
        format!("{}/{}", kind.as_str(), delivery.as_str())
    });
    let also = row.or_kind.map(|kind| format!("{}/unknown", kind.as_str()));
    assert!(
        seen == expected || Some(&seen) == also.as_ref(),
        "row {i} ({}, {}): {seen} instead of {expected}: {:?}",
        row.fault,
        row.transport,
        result.error
    );
    let deadline = Duration::from_secs(row.binding["timeout_seconds"].as_u64().unwrap_or(300));
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
    let mut reached = (after.0 - before.0) + (after.1 - before.1);
    for (b, a) in scripted_before.iter().zip(fx.scripted_calls()) {
        assert!(a - b <= 1, "row {i} ({}): tools/call sent twice", row.fault);
        reached += (a - b) as u64;
    }
    // `not_sent` is a promise that the tool did not run: the server saw no call, or
    // refused it before running it, with a status or a JSON-RPC error that says so.
    if let Some(error) = &result.error
        && error.delivery == Delivery::NotSent
    {
        assert!(
            reached == 0
                || error.kind == ErrorKind::HttpStatus
                || error.message.contains("refused the call before running it"),
            "row {i} ({}): not_sent, but the server received the tools/call",
            row.fault
        );
    }
    let events = std::mem::take(&mut *events.lock().unwrap());
    assert_eq!(
        events.last(),
        Some(&ToolEvent::Result(result.clone())),
        "row {i}: one result, last"
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, ToolEvent::Result(_)))
            .count(),
        1,
        "row {i}: exactly one result"
    );
    if let Some(needle) = row.contains {
        let line = ToolEvent::Result(result.clone()).to_json_line();
        assert!(line.contains(needle), "row {i} ({}): {line}", row.fault);
    }
    if let Some(expected) = row.progress_events {
        let progress = events
            .iter()
            .filter(|e| matches!(e, ToolEvent::Progress(_)))
            .count();
        assert_eq!(progress, expected, "row {i} ({}): progress", row.fault);
    }
    // Requests per task call, counted on the wire: the polls the task needed and no more
    // (no busy polling), and `tasks/cancel` when the call gave the task up (sent after the
    // result, in the background).
    if let (Some((least, most, cancels)), Some(server)) = (row.task_requests, &servers.modern) {
        let seen = server
            .wait_for(
                |c| c.method("tasks/cancel") >= tasks_before.1 + cancels && c.tasks_running == 0,
                Duration::from_secs(5),
            )
            .await;
        let seen = (seen.method("tasks/get"), seen.method("tasks/cancel"));
        let polled = seen.0 - tasks_before.0;
        // The caller's cancel lands wherever the polls are.
        if !row.cancel_on_progress {
            assert!(
                (least..=most).contains(&polled),
                "row {i} ({}): {polled} tasks/get, not {least}..={most}",
                row.fault
            );
        }
        assert_eq!(
            seen.1 - tasks_before.1,
            cancels,
            "row {i} ({}): tasks/cancel ({polled} tasks/get): {:?}",
            row.fault,
            result.error
        );
    }
    if let (Some((case, prepared)), Some(own_client)) = (grant, own_client) {
        own_client.shutdown(Duration::from_secs(10)).await;
        case.check(prepared, &fx.grants[&case]).await;
    }
    let (kind, delivery) = seen.split_once('/').unwrap_or(("ok", ""));
    Outcome {
        events,
        line: format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            i + 1,
            row.fault,
            row.transport,
            row.era,
            kind,
            if delivery.is_empty() { "-" } else { delivery },
            elapsed.as_millis(),
            result
                .error
                .as_ref()
                .map_or(String::new(), |error| error.message.replace('|', "/")),
        ),
        debug: format!("{result:?} {host:?}"),
    }
}

/// The tokens and secrets the matrix's hosts read.
fn tokens(name: &str) -> Option<String> {
    match name {
        "MATRIX_TOKEN" => Some(TOKEN.to_owned()),
        "MATRIX_NEWLINE_TOKEN" => Some(format!("{TOKEN}\nX-Injected: 1")),
        "MATRIX_CLIENT_SECRET" => Some(CLIENT_SECRET.to_owned()),
        _ => None,
    }
}

/// A host whose one tool (`rowNN`) is row `i`'s binding, calling through `client`.
fn host_for(i: usize, row: &Row, client: &McpClient) -> ToolHost {
    let mut binding = row.binding.clone();
    binding["name"] = json!(format!("row{i:02}"));
    binding["input_schema"] = json!({"type": "object"});
    binding["tenants"] = json!(["local"]);
    let loaded =
        HostConfig::from_json_value_with_env(&json!({"tools": [binding]}), |_| true).unwrap();
    ToolHost::builder(loaded.config)
        .client(client.clone())
        .token_source(tokens)
        .build()
        .unwrap()
}

/// Runs every row (or only the row numbered `only`, from 1), asserting each; returns the
/// events and the table. The rows share one client, so that warm contexts serve the rows
/// that call a server another row called before (but the shared-grant rows, each with a
/// client and a store of its own).
pub(crate) async fn run(servers: &Servers, only: Option<usize>) -> Ran {
    let fx = Fixtures::start().await;
    let rows = rows(&fx, servers);
    let selected: Vec<usize> = match only {
        Some(number) => {
            assert!(
                (1..=rows.len()).contains(&number),
                "the matrix has {} rows",
                rows.len()
            );
            vec![number - 1]
        }
        None => (0..rows.len()).collect(),
    };
    if selected.iter().any(|&i| rows[i].transport == "stdio") {
        build_testkit();
    }
    // Every server is up: from here on, what the process holds is the client's.
    let fds_before = settled_fds().await;
    let children_before = children();
    let client = McpClient::new(ClientOptions::default().era(EraPreference::Auto))
        .expect("the client builds");

    let mut table = String::from(
        "| # | fault | transport | era | kind | delivery | ms | message |\n|---|---|---|---|---|---|---|---|\n",
    );
    let mut events = Vec::new();
    let mut debug = vec![format!("{client:?}")];
    for &i in &selected {
        let outcome = run_row(i, &rows[i], &client, servers, &fx).await;
        table.push_str(&outcome.line);
        events.extend(outcome.events);
        debug.push(outcome.debug);
    }
    // The client after every row: what it remembers of servers (their URLs among them).
    debug.push(format!("{client:?}"));
    if only.is_none() {
        let warm_served = client.stats().warm_served;
        table.push_str(&format!(
            "\nwarm contexts (on, the default) served {warm_served} of the {} calls\n",
            rows.len()
        ));
        assert!(warm_served > 0, "the rows ran with warm contexts in use");
    }
    let ran: Vec<&Row> = selected.iter().map(|&i| &rows[i]).collect();
    check_cleanup(&client, servers, &fx, &ran).await;
    drop(client);
    fx.reset_task.abort();
    drop(fx);
    assert_eq!(
        settle(children, children_before, Duration::from_secs(5)).await,
        children_before,
        "no child process left"
    );
    assert_fds_settle(&fds_before, Duration::from_secs(5)).await;
    let _ = std::io::stderr().flush();
    Ran {
        events,
        table,
        debug,
        rows: selected.len(),
    }
}

/// After the rows: every session closed, every process gone (but the one that left its
/// process group, which is documented as not reaped), every task ended; and what the rows
/// that ran left for checking afterwards.
async fn check_cleanup(client: &McpClient, servers: &Servers, fx: &Fixtures, ran: &[&Row]) {
    let ran_with = |path: &PathBuf| {
        let path = path.to_str().unwrap();
        ran.iter().any(|row| row.binding.to_string().contains(path))
    };
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
    if let Some(server) = &servers.modern {
        let seen = server
            .wait_for(|c| c.tasks_running == 0, Duration::from_secs(10))
            .await;
        assert_eq!(seen.tasks_running, 0, "every task on the server ended");
    }
    let expired = fx.url("expired");
    if ran.iter().any(|row| row.binding["url"] == expired.as_str()) {
        assert!(
            fx.scripted["expired"].deletes().await >= 1,
            "the expired session was still deleted"
        );
    }
    assert!(
        fx.elsewhere
            .server
            .received_requests()
            .await
            .unwrap_or_default()
            .is_empty(),
        "nothing followed the redirect to another origin"
    );
    let pid = |file: &PathBuf| -> i32 {
        let pid = std::fs::read_to_string(file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let _ = std::fs::remove_file(file);
        pid
    };
    if ran_with(&fx.pidfile) {
        let grandchild = pid(&fx.pidfile);
        assert_eq!(
            settle(|| usize::from(alive(grandchild)), 0, Duration::from_secs(5)).await,
            0,
            "the grandchild was killed"
        );
    }
    // It left the process group: not ours to reap, as docs/reliability.md says. It did not
    // hold the call (the row's deadline) or the client's tasks (the stats above).
    for file in [&fx.setsid_pidfile, &fx.setsid_dying_pidfile] {
        if !ran_with(file) {
            continue;
        }
        let escaped = pid(file);
        let _ = std::process::Command::new("kill")
            .arg(escaped.to_string())
            .status();
    }
    // The test process runs with cargo's `CARGO_MANIFEST_DIR` (and whatever else its
    // environment holds): a stdio server sees it only when its binding opts in.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let names_in = |file: &PathBuf| -> Vec<String> {
        let environment = std::fs::read_to_string(file).unwrap();
        let _ = std::fs::remove_file(file);
        environment.lines().map(str::to_owned).collect()
    };
    if ran_with(&fx.env_file) {
        check_environment(&names_in(&fx.env_file));
    }
    if ran_with(&fx.inherited_env_file) {
        let inherited = names_in(&fx.inherited_env_file);
        assert!(
            inherited.iter().any(|name| name == "CARGO_MANIFEST_DIR"),
            "inherit_env passes the host's environment: {inherited:?}"
        );
    }
}

/// The environment a stdio server saw (its variables' names): the minimal one and the
/// binding's `env`, nothing of the host's.
fn check_environment(names: &[String]) {
    assert!(names.iter().any(|name| name == "PATH"), "{names:?}");
    assert!(
        names.iter().any(|name| name == "MATRIX_BINDING_VAR"),
        "the binding's env arrived: {names:?}"
    );
    let host_only: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| {
            !["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"].contains(&name.as_str())
        })
        .collect();
    let leaked: Vec<&String> = names
        .iter()
        .filter(|name| host_only.contains(name))
        .collect();
    assert!(
        leaked.is_empty(),
        "the host's environment stayed out, but the server saw {leaked:?}"
    );
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

fn task_requests_seen(servers: &Servers) -> (u64, u64) {
    servers.modern.as_ref().map_or((0, 0), |server| {
        let seen = server.counters();
        (seen.method("tasks/get"), seen.method("tasks/cancel"))
    })
}

fn outcome(result: &ResultEvent) -> String {
    match &result.error {
        Some(error) => format!("{}/{}", error.kind.as_str(), error.delivery.as_str()),
        None if result.is_error => "is_error without an error object".to_owned(),
        None => "ok".to_owned(),
    }
}

/// One row of the matrix (numbered from 1, as in docs/reliability.md) on servers of its
/// own; prints its line of the table.
async fn one_row(number: usize) {
    let _serial = crate::leaks::serial().await;
    let servers = Servers::in_process().await;
    let ran = run(&servers, Some(number)).await;
    eprintln!("{}", ran.table);
    assert_eq!(ran.rows, 1);
    assert_eq!(
        ran.events
            .iter()
            .filter(|event| matches!(event, ToolEvent::Result(_)))
            .count(),
        1,
        "one result"
    );
}

/// A test per row (`matrix::row::n042`), so that a failure names its row, a row can be
/// run alone, and the rows run apart from each other (each process its own servers).
macro_rules! row_tests {
    ($($name:ident = $number:literal),* $(,)?) => {
        mod row {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::one_row($number).await;
                }
            )*
            /// How many rows have a test.
            pub(super) const COUNT: usize = [$($number),*].len();
        }
    };
}

row_tests! {
    r001 = 1,
    r002 = 2,
    r003 = 3,
    r004 = 4,
    r005 = 5,
    r006 = 6,
    r007 = 7,
    r008 = 8,
    r009 = 9,
    r010 = 10,
    r011 = 11,
    r012 = 12,
    r013 = 13,
    r014 = 14,
    r015 = 15,
    r016 = 16,
    r017 = 17,
    r018 = 18,
    r019 = 19,
    r020 = 20,
    r021 = 21,
    r022 = 22,
    r023 = 23,
    r024 = 24,
    r025 = 25,
    r026 = 26,
    r027 = 27,
    r028 = 28,
    r029 = 29,
    r030 = 30,
    r031 = 31,
    r032 = 32,
    r033 = 33,
    r034 = 34,
    r035 = 35,
    r036 = 36,
    r037 = 37,
    r038 = 38,
    r039 = 39,
    r040 = 40,
    r041 = 41,
    r042 = 42,
    r043 = 43,
    r044 = 44,
    r045 = 45,
    r046 = 46,
    r047 = 47,
    r048 = 48,
    r049 = 49,
    r050 = 50,
    r051 = 51,
    r052 = 52,
    r053 = 53,
    r054 = 54,
    r055 = 55,
    r056 = 56,
    r057 = 57,
    r058 = 58,
    r059 = 59,
    r060 = 60,
    r061 = 61,
    r062 = 62,
    r063 = 63,
    r064 = 64,
    r065 = 65,
    r066 = 66,
    r067 = 67,
    r068 = 68,
    r069 = 69,
    r070 = 70,
    r071 = 71,
    r072 = 72,
    r073 = 73,
    r074 = 74,
    r075 = 75,
    r076 = 76,
    r077 = 77,
    r078 = 78,
    r079 = 79,
    r080 = 80,
    r081 = 81,
    r082 = 82,
    r083 = 83,
    r084 = 84,
    r085 = 85,
    r086 = 86,
    r087 = 87,
    r088 = 88,
    r089 = 89,
    r090 = 90,
    r091 = 91,
    r092 = 92,
    r093 = 93,
    r094 = 94,
    r095 = 95,
    r096 = 96,
    r097 = 97,
    r098 = 98,
    r099 = 99,
    r100 = 100,
    r101 = 101,
    r102 = 102,
    r103 = 103,
    r104 = 104,
    r105 = 105,
    r106 = 106,
    r107 = 107,
    r108 = 108,
    r109 = 109,
    r110 = 110,
    r111 = 111,
    r112 = 112,
    r113 = 113,
    r114 = 114,
    r115 = 115,
    r116 = 116,
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
        run(&servers, None).await
    };
    eprintln!("{}", ran.table);
    let lines = ran
        .table
        .lines()
        .filter(|line| line.starts_with("| "))
        .count();
    assert_eq!(lines, ran.rows + 1, "a line per row, and the header");
    assert_eq!(
        ran.rows,
        row::COUNT,
        "add a line to row_tests! for every new row"
    );
    let logs = String::from_utf8_lossy(&capture.0.lock().unwrap()).into_owned();
    assert!(
        logs.contains("tool_call") && logs.contains("brain.tenant=\"local\""),
        "the capture works"
    );
    assert!(logs.contains(" TRACE "), "trace level was captured");
    // The shared-grant rows' tokens all end so (see grants.rs).
    let secret = |text: &str| {
        [TOKEN, CLIENT_SECRET, grants::TOKEN_TAIL]
            .iter()
            .any(|s| text.contains(s))
    };
    if let Some(line) = logs.lines().find(|line| secret(line)) {
        panic!("a log line holds the token: {line}");
    }
    for event in &ran.events {
        assert!(!secret(&event.to_json_line()), "an event holds the token");
        assert!(
            !secret(&format!("{event:?}")),
            "an event's Debug holds the token"
        );
    }
    for debug in &ran.debug {
        assert!(!secret(debug), "Debug output holds the token: {debug}");
    }
}
