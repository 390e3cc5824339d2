//! The stdio test server: the same tools over stdin/stdout, with process-level faults.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ServiceExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::service::RoleServer;
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines, Stdin};

use crate::counters::Stats;
use crate::options::Era;
use crate::tools::{Kit, Testkit, late_progress, raw_after_progress, raw_call, raw_progress_token};

/// Exit status of the stdio server when a fault makes it exit mid-call.
pub const EXIT_MID_CALL_STATUS: i32 = 1;

/// How the stdio server crashes mid-call (`--crash-mid-call`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Crash {
    /// Killed by SIGSEGV, as a server with a memory fault is (`segv`): the process raises
    /// the signal on itself (Rust's handler for stack overflows steps aside on the first,
    /// the default action ends the process on the next), so its parent sees a death by
    /// signal 11.
    Segfault,
    /// Exits with this status (`--crash-mid-call 139`: how a shell, or a launcher such as
    /// `npx`, reports a server it started that died of SIGSEGV).
    Exit(i32),
}

impl Crash {
    /// Crashes the process now.
    pub fn now(self) -> ! {
        match self {
            Crash::Segfault => {
                // No core file left behind wherever the tests run.
                #[cfg(unix)]
                let _ =
                    nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0);
                #[cfg(unix)]
                loop {
                    let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGSEGV);
                }
                #[cfg(not(unix))]
                std::process::abort()
            }
            Crash::Exit(status) => std::process::exit(status),
        }
    }
}

impl std::str::FromStr for Crash {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "segv" => Ok(Crash::Segfault),
            status => status.parse().map(Crash::Exit).map_err(|_| {
                format!("--crash-mid-call takes segv or an exit status, not {status:?}")
            }),
        }
    }
}

/// How [`serve_stdio`] behaves. The `brain-mcp-testkit-stdio` binary maps its flags onto this.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct StdioOptions {
    /// The protocol lifecycle(s) served (`--era`).
    pub era: Era,
    /// Write lines that are not JSON to stdout before serving and before every message (`--garbage-stdout`).
    pub garbage_stdout: bool,
    /// Write about 10 MiB to stderr while handling the first message, before answering it (`--flood-stderr`).
    /// A client that does not drain stderr then waits forever.
    pub flood_stderr: bool,
    /// Keep running after stdin closes, until killed (`--ignore-stdin-close`).
    pub ignore_stdin_close: bool,
    /// Exit (status [`EXIT_MID_CALL_STATUS`]) when the first `tools/call` arrives (`--exit-mid-call`).
    pub exit_mid_call: bool,
    /// Crash when the first `tools/call` arrives (`--crash-mid-call segv|STATUS`).
    pub crash_mid_call: Option<Crash>,
    /// Rewrite this file with the counters as JSON after every change, once a `tools/call`
    /// has arrived (env `TESTKIT_COUNTERS`): a process that only did the handshake writes
    /// nothing, so a client's unused warm process does not hide the last call's counters.
    pub counters_file: Option<PathBuf>,
    /// `tools/list` page size (`--page-size`); `None` lists everything at once.
    pub page_size: Option<usize>,
    /// Extra generated tools (`--extra-tools`).
    pub extra_tools: usize,
    /// In the legacy era, never answer `server/discover` (`--hold-discover`).
    pub hold_discover: bool,
    /// Also serve the official conformance suite's tools (`--conformance-tools`; see
    /// [`ServerOptions::conformance_tools`](crate::ServerOptions::conformance_tools)).
    pub conformance_tools: bool,
}

impl StdioOptions {
    /// Options with every fault off and no counters file.
    pub fn new(era: Era) -> Self {
        Self {
            era,
            ..Self::default()
        }
    }
}

/// Serves the scripted tools on this process's stdin/stdout until stdin closes.
///
/// `drop_mid_stream` makes the process exit (status [`EXIT_MID_CALL_STATUS`]) after its progress
/// notifications; `progress_after_result` writes one more progress line after its response line.
///
/// # Errors
/// Reading stdin or writing stdout failed.
pub async fn serve_stdio(options: StdioOptions) -> std::io::Result<()> {
    let kit = Arc::new(
        Kit::new(
            options.era,
            options.extra_tools,
            options.page_size,
            Stats::with_file(options.counters_file.clone()),
        )
        .with_conformance_tools(options.conformance_tools),
    );
    // Write the (empty) counters file at once, so that a test can read it before the first message.
    kit.stats.update(|_| {});
    let out = Arc::new(Output {
        stdout: tokio::sync::Mutex::new(tokio::io::stdout()),
        garbage: options.garbage_stdout,
        late: Mutex::new(HashMap::new()),
        drops: Mutex::new(HashMap::new()),
    });
    if options.garbage_stdout {
        out.write_raw(b"brain-mcp-testkit: starting up (this line is not JSON)\n")
            .await?;
    }
    let transport = StdioTransport {
        lines: BufReader::new(tokio::io::stdin()).lines(),
        out,
        kit: kit.clone(),
        options: options.clone(),
        seen_message: false,
    };
    match Testkit::new(kit.clone()).serve(transport).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(error) => tracing::info!(%error, "no MCP lifecycle started"),
    }
    if options.ignore_stdin_close {
        std::future::pending::<()>().await;
    }
    kit.stop();
    Ok(())
}

/// stdout, shared by every send; plus what the transport must do after some messages.
#[derive(Debug)]
struct Output {
    stdout: tokio::sync::Mutex<tokio::io::Stdout>,
    garbage: bool,
    /// `progress_after_result` calls: request id (JSON text) -> progress token.
    late: Mutex<HashMap<String, Value>>,
    /// `drop_mid_stream` calls: progress token (JSON text) -> notifications left before exiting.
    drops: Mutex<HashMap<String, u64>>,
}

impl Output {
    async fn write_raw(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut stdout = self.stdout.lock().await;
        stdout.write_all(bytes).await?;
        stdout.flush().await
    }

    async fn write_value(&self, value: &Value) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(value).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut stdout = self.stdout.lock().await;
        if self.garbage {
            stdout
                .write_all(b"brain-mcp-testkit: log line, not JSON\n")
                .await?;
        }
        stdout.write_all(&line).await?;
        stdout.flush().await
    }

    async fn send(&self, value: Value) -> std::io::Result<()> {
        self.write_value(&value).await?;
        let answered = if value.get("result").is_some() || value.get("error").is_some() {
            value.get("id").map(Value::to_string)
        } else {
            None
        };
        if let Some(id) = answered {
            let token = lock(&self.late).remove(&id);
            if let Some(token) = token {
                self.write_value(&late_progress(&token)).await?;
            }
        }
        if value.get("method").and_then(Value::as_str) == Some("notifications/progress")
            && let Some(token) = value.pointer("/params/progressToken")
        {
            let exit = {
                let mut drops = lock(&self.drops);
                match drops.get_mut(&token.to_string()) {
                    Some(left) => {
                        *left = left.saturating_sub(1);
                        *left == 0
                    }
                    None => false,
                }
            };
            if exit {
                std::process::exit(EXIT_MID_CALL_STATUS);
            }
        }
        Ok(())
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Newline-delimited JSON-RPC on stdin/stdout that counts every message and plays the stdio faults.
#[derive(Debug)]
struct StdioTransport {
    lines: Lines<BufReader<Stdin>>,
    out: Arc<Output>,
    kit: Arc<Kit>,
    options: StdioOptions,
    seen_message: bool,
}

fn error_response(id: &Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error})
}

impl StdioTransport {
    async fn flood_stderr(&self) {
        let chunk = {
            let mut line = vec![b'e'; 1023];
            line.push(b'\n');
            line.repeat(64)
        };
        let mut stderr = tokio::io::stderr();
        for _ in 0..(10 << 20) / chunk.len() {
            if stderr.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = stderr.flush().await;
    }

    /// Handles what the transport itself answers or plays; `None` passes the message on to rmcp.
    async fn intercept(&mut self, message: &Value) -> std::io::Result<Option<()>> {
        let id = message.get("id");
        let method = message.get("method").and_then(Value::as_str);
        match (self.kit.era, method, id) {
            (Era::Legacy, Some("server/discover"), Some(_)) if self.options.hold_discover => {
                // Some servers never answer a method they do not know.
                return Ok(Some(()));
            }
            (Era::Legacy, Some("server/discover"), Some(id)) => {
                // A server from before 2026 has never heard of server/discover.
                let answer = error_response(id, -32601, "Method not found", None);
                self.out.write_value(&answer).await?;
                return Ok(Some(()));
            }
            (Era::Modern, Some("initialize"), Some(id)) => {
                // rmcp would answer this too, then end the server; keep serving instead.
                let requested = message
                    .pointer("/params/protocolVersion")
                    .cloned()
                    .unwrap_or(Value::Null);
                let data = json!({"requested": requested, "supported": ["2026-07-28"]});
                let answer = error_response(id, -32022, "Unsupported protocol version", Some(data));
                self.out.write_value(&answer).await?;
                return Ok(Some(()));
            }
            _ => {}
        }
        let Some((tool, params)) = raw_call(message) else {
            return Ok(None);
        };
        if self.options.exit_mid_call {
            std::process::exit(EXIT_MID_CALL_STATUS);
        }
        if let Some(crash) = self.options.crash_mid_call {
            crash.now();
        }
        let token = raw_progress_token(message);
        match tool {
            // Answered as a server answers a request it could not read: a parse error
            // without a request id (stdio only: over HTTP the POST is the answer's channel).
            "unreadable" => {
                let answer = json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32700, "message": "Parse error"}});
                self.out.write_value(&answer).await?;
                return Ok(Some(()));
            }
            "progress_after_result" => {
                if let (Some(id), Some(token)) = (id, token) {
                    lock(&self.out.late).insert(id.to_string(), token.clone());
                }
            }
            "drop_mid_stream" => {
                let after = raw_after_progress(params);
                match token {
                    Some(token) if after > 0 => {
                        lock(&self.out.drops).insert(token.to_string(), after);
                    }
                    _ => std::process::exit(EXIT_MID_CALL_STATUS),
                }
            }
            _ => {}
        }
        Ok(None)
    }
}

impl Transport<RoleServer> for StdioTransport {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        async move {
            let value = serde_json::to_value(&item).map_err(std::io::Error::other)?;
            out.send(value).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let line = self.lines.next_line().await.ok()??;
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let Ok(message) = serde_json::from_str::<Value>(line) else {
                tracing::warn!("stdin line is not JSON; skipped");
                continue;
            };
            self.kit
                .stats
                .record_message(Some(&message), false, BTreeMap::new);
            if !self.seen_message {
                self.seen_message = true;
                if self.options.flood_stderr {
                    self.flood_stderr().await;
                }
            }
            match self.intercept(&message).await {
                Ok(Some(())) => continue,
                Ok(None) => {}
                Err(_) => return None,
            }
            let id = message.get("id").cloned();
            match serde_json::from_value::<ClientJsonRpcMessage>(message) {
                Ok(parsed) => return Some(parsed),
                Err(error) => {
                    if let Some(id) = id {
                        let answer = error_response(&id, -32600, &error.to_string(), None);
                        if self.out.write_value(&answer).await.is_err() {
                            return None;
                        }
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// Where `cargo build -p brain-mcp-testkit` puts binary `name`, found from the running executable.
fn binary_path(name: &str, env_override: &str) -> PathBuf {
    if let Some(path) = std::env::var_os(env_override) {
        return PathBuf::from(path);
    }
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    let Ok(exe) = std::env::current_exe() else {
        return PathBuf::from(file);
    };
    // target/<profile>/deps/<test>-<hash>, target/<profile>/<bin>, target/<profile>/examples/<x>, ...
    for dir in exe.ancestors().skip(1).take(3) {
        let candidate = dir.join(&file);
        if candidate.is_file() {
            return candidate;
        }
    }
    let dir = match exe.parent() {
        Some(parent) if parent.ends_with("deps") || parent.ends_with("examples") => {
            parent.parent().unwrap_or(parent)
        }
        Some(parent) => parent,
        None => return PathBuf::from(file),
    };
    dir.join(file)
}

/// Builds the testkit's binaries (once per process), for tests in other crates that spawn
/// them: runs `cargo build -p brain-mcp-testkit --bins` with the cargo that runs the
/// tests (a no-op when they are up to date). When both `BRAIN_MCP_TESTKIT_STDIO` and
/// `BRAIN_MCP_TESTKIT_HTTP` are set, whoever set them built them, and nothing is built
/// (`cargo xtask test` points them at the binaries its own build of the tests made:
/// `cargo build -p` resolves features for the testkit alone, so it would build them, and
/// much of the graph, a second time).
///
/// # Panics
/// When cargo cannot be run or the build fails.
pub fn build_binaries() {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        if std::env::var_os("BRAIN_MCP_TESTKIT_STDIO").is_some()
            && std::env::var_os("BRAIN_MCP_TESTKIT_HTTP").is_some()
        {
            return;
        }
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = std::process::Command::new(cargo);
        command.args(["build", "--quiet", "-p", "brain-mcp-testkit", "--bins"]);
        if current_profile_is_release() {
            command.arg("--release");
        }
        let status = command.status().expect("cargo runs");
        assert!(status.success(), "building the testkit binaries failed");
    });
}

/// Whether the running executable was built in the release profile.
fn current_profile_is_release() -> bool {
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.ancestors()
                .find(|dir| {
                    dir.parent()
                        .is_some_and(|parent| parent.ends_with("target"))
                })
                .map(|dir| dir.ends_with("release"))
        })
        .unwrap_or(false)
}

/// The path of the `brain-mcp-testkit-stdio` binary, next to the running test executable
/// (`target/<profile>/`), or the value of `BRAIN_MCP_TESTKIT_STDIO` when set.
///
/// Cargo builds a package's binaries only for that package's own tests. Tests in other
/// crates build it first with [`build_binaries`] (or `cargo build -p brain-mcp-testkit
/// --bins`, same profile); `cargo xtask test` builds every test and binary at once
/// (`cargo test --workspace --no-run`) and points `BRAIN_MCP_TESTKIT_STDIO` and
/// `BRAIN_MCP_TESTKIT_HTTP` at them. If it is missing, the returned path does not exist;
/// spawning it fails with "not found".
pub fn stdio_binary_path() -> PathBuf {
    binary_path("brain-mcp-testkit-stdio", "BRAIN_MCP_TESTKIT_STDIO")
}

/// The path of the `brain-mcp-testkit-http` binary, found like [`stdio_binary_path`]
/// (override: `BRAIN_MCP_TESTKIT_HTTP`).
pub fn http_binary_path() -> PathBuf {
    binary_path("brain-mcp-testkit-http", "BRAIN_MCP_TESTKIT_HTTP")
}
