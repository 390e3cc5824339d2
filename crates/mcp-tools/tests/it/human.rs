//! `mcp-tools call --format human` against the testkit: what a person reads.

use brain_mcp_testkit::Era;

use crate::support::{config, discovered, mcp_tools, server};

async fn call(path: &str, tool: &str, args: &str, extra: &[&str]) -> crate::support::Run {
    let mut argv = vec![
        "call", "--config", path, "--tenant", "local", "--tool", tool, "--args", args, "--call",
        "c1", "--format", "human",
    ];
    argv.extend_from_slice(extra);
    mcp_tools(&argv, &[]).await
}

#[tokio::test]
async fn progress_text_structured_content_and_a_tool_error() {
    let server = server(Era::Both).await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(
        &dir,
        discovered(&server.url(), "progress,structured,error").await,
    );

    let run = call(&path, "progress", r#"{"steps": 3, "delay_ms": 1}"#, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.is_empty(),
        "no bar when stderr is not a terminal: {}",
        run.stderr
    );
    insta::assert_snapshot!("progress", run.stdout);

    let run = call(&path, "structured", r#"{"city": "Lisbon"}"#, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("structured", run.stdout);

    let run = call(&path, "error", "{}", &[]).await;
    assert_eq!(run.code, 1, "exit status unchanged: a failed call is 1");
    insta::assert_snapshot!("tool_error", run.stdout);

    let run = call(&path, "nope", "{}", &[]).await;
    assert_eq!(run.code, 1);
    insta::assert_snapshot!("unknown_tool", run.stdout);
}

/// Failures on the wire, through the real call path: what each says about retrying.
#[tokio::test]
async fn wire_failures_say_what_retrying_means() {
    let server = server(Era::Legacy).await;
    let refused = brain_mcp_testkit::RefusedPort::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let binding = |name: &str, url: String, tool: &str, timeout: u64| {
        serde_json::json!({
            "name": name, "url": url, "mcp_tool": tool, "tenants": ["local"],
            "input_schema": {"type": "object"}, "timeout_seconds": timeout
        })
    };
    let path = config(
        &dir,
        serde_json::json!([
            binding("slow", server.url(), "sleep", 3),
            binding(
                "locked",
                server.fault_url(brain_mcp_testkit::HttpFault::Status401),
                "echo",
                10
            ),
            binding("down", refused.url(), "echo", 10),
        ]),
    );
    for (tool, args, name) in [
        ("slow", r#"{"ms": 20000}"#, "timeout"),
        ("locked", "{}", "http_status"),
        ("down", "{}", "connect"),
    ] {
        let run = call(&path, tool, args, &[]).await;
        assert_eq!(run.code, 1, "{tool}: a failed call is 1");
        let shown = run
            .stdout
            .replace(&server.addr().to_string(), "127.0.0.1:PORT")
            .replace(&refused.url(), "http://127.0.0.1:REFUSED/mcp")
            .replace(
                refused
                    .url()
                    .trim_end_matches("/mcp")
                    .trim_start_matches("http://"),
                "127.0.0.1:REFUSED",
            );
        insta::assert_snapshot!(name, shown);
    }
}

/// `--timeout` gives one call a sooner deadline, and the message names it and the
/// binding's; a longer one than the binding allows is a usage error naming the limit,
/// before anything is sent.
#[tokio::test]
async fn a_calls_own_timeout_is_sooner_than_its_bindings_or_refused() {
    let server = server(Era::Legacy).await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(
        &dir,
        serde_json::json!([{
            "name": "slow", "url": server.url(), "mcp_tool": "sleep", "tenants": ["local"],
            "input_schema": {"type": "object"}, "timeout_seconds": 10
        }]),
    );
    let run = call(&path, "slow", r#"{"ms": 20000}"#, &["--timeout", "1"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stdout.contains(
            "slow timed out after 1 s, the deadline its caller gave (its binding's \
             timeout_seconds is 10 s); it may have run, so check before calling it again"
        ),
        "{}",
        run.stdout
    );
    let before = server.counters().method("tools/call");
    let run = call(&path, "slow", r#"{"ms": 20000}"#, &["--timeout", "11"]).await;
    assert_eq!(run.code, 2, "a usage error");
    assert!(run.stdout.is_empty());
    assert_eq!(
        run.stderr.trim(),
        "mcp-tools: --timeout 11 is longer than the 10 s that slow's binding allows (its \
         timeout_seconds): a call may only end sooner; raise timeout_seconds in the host \
         config to allow longer calls (see mcp-tools --help)"
    );
    assert_eq!(
        server.counters().method("tools/call"),
        before,
        "nothing sent"
    );
}

#[tokio::test]
async fn images_are_summarised_and_saved_with_save_dir() {
    let server = server(Era::Both).await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(&dir, discovered(&server.url(), "image,resource_mix").await);
    let out = dir.path().join("images");
    let run = call(&path, "image", "{}", &["--save-dir", out.to_str().unwrap()]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let saved = std::fs::read(out.join("c1-1.png")).unwrap();
    assert!(saved.starts_with(b"\x89PNG\r\n\x1a\n"), "the decoded PNG");
    insta::assert_snapshot!(
        "image_saved",
        run.stdout.replace(out.to_str().unwrap(), "OUT")
    );

    let run = call(&path, "resource_mix", "{}", &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!("resource_mix", run.stdout);
}

/// Without --format, a pipe gets JSON lines (what scripts and `cargo xtask demo` read);
/// --save-dir works there too, and says so on stderr.
#[tokio::test]
async fn in_a_pipe_the_default_stays_json_lines() {
    let server = server(Era::Both).await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(&dir, discovered(&server.url(), "image").await);
    let out = dir.path().join("images");
    let run = mcp_tools(
        &[
            "call",
            "--config",
            &path,
            "--tenant",
            "local",
            "--tool",
            "image",
            "--call",
            "c1",
            "--save-dir",
            out.to_str().unwrap(),
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let event: serde_json::Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(event["type"], "tool.result");
    assert!(out.join("c1-1.png").exists());
    assert_eq!(
        run.stderr.replace(out.to_str().unwrap(), "OUT"),
        "mcp-tools: block 1 saved to OUT/c1-1.png\n"
    );
}
