//! Running the binary.

use std::time::{Duration, Instant};

use brain_mcp_testkit::{Era, ServerOptions, TestServer};

/// What a run printed and how it ended.
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) elapsed: Duration,
}

pub(crate) async fn mcp_tools(args: &[&str], env: &[(&str, &str)]) -> Run {
    let started = Instant::now();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-tools"));
    command
        .args(args)
        .env_remove("RUST_LOG")
        .env_remove("MCP_API_KEY");
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().await.expect("mcp-tools runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        elapsed: started.elapsed(),
    }
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
