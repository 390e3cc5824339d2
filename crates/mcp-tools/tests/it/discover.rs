//! Discovery, with the spec's command line.

use std::time::Duration;

use brain_mcp_testkit::{Era, HttpFault};

use crate::support::{mcp_tools, redact, server, server_everything};

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
        // The era each binding pins is the one the server was listed in.
        let (found, other) = match era {
            Era::Legacy => ("\"era\": \"2025-11-25\"", "\"era\": \"2026-07-28\""),
            _ => ("\"era\": \"2026-07-28\"", "\"era\": \"2025-11-25\""),
        };
        assert!(
            run.stdout.contains(found) && !run.stdout.contains(other),
            "{era:?}: {}",
            run.stdout
        );
        let shown = redact(&run.stdout, &server).replace(found, "\"era\": \"ERA\"");
        insta::assert_snapshot!("spec_command_line", shown);
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
    let refused = brain_mcp_testkit::RefusedPort::new().unwrap();
    let closed = refused.url();
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

#[tokio::test]
async fn discovery_stops_at_its_byte_budget() {
    // 2,000 tools over 20 pages: a listing of several hundred KiB.
    let server = brain_mcp_testkit::TestServer::start(brain_mcp_testkit::ServerOptions {
        era: Era::Legacy,
        extra_tools: 2000,
        page_size: Some(100),
        ..brain_mcp_testkit::ServerOptions::default()
    })
    .await
    .unwrap();
    let url = server.url();
    let run = mcp_tools(
        &[
            "-url",
            &url,
            "-tenant",
            "local",
            "-discovery-max-bytes",
            "65536",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(run.stderr.contains("65536 bytes"), "{}", run.stderr);
    // Within the default budget, the same listing is read whole.
    let run = mcp_tools(&["-url", &url, "-tenant", "local"], &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bindings: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        bindings.as_array().unwrap().len(),
        brain_mcp_testkit::tool_names().len() + 2000
    );
    let run = mcp_tools(
        &[
            "-url",
            &url,
            "-tenant",
            "local",
            "-discovery-max-bytes",
            "1000",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[tokio::test]
async fn a_server_that_holds_the_era_probe_is_found_legacy_and_its_bindings_never_probe_again() {
    // A 2025-era server that never answers server/discover, and answers initialize.
    let server = brain_mcp_testkit::TestServer::start(brain_mcp_testkit::ServerOptions {
        era: Era::Legacy,
        hold_discover: true,
        ..brain_mcp_testkit::ServerOptions::default()
    })
    .await
    .unwrap();
    let run = mcp_tools(
        &["-url", &server.url(), "-tenant", "local", "-tools", "echo"],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.elapsed < std::time::Duration::from_secs(30),
        "the probe gave up within its bound, not at the discovery deadline"
    );
    let bindings: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(bindings[0]["era"], "2025-11-25", "{bindings}");
    assert_eq!(server.counters().method("server/discover"), 1);

    // Calls of the binding speak that era at once: no probe.
    let dir = tempfile::tempdir().unwrap();
    let path = crate::support::config(&dir, bindings);
    for call in ["c1", "c2"] {
        let run = mcp_tools(
            &[
                "call",
                "--config",
                &path,
                "--tenant",
                "local",
                "--tool",
                "echo",
                "--args",
                r#"{"message": "hi"}"#,
                "--call",
                call,
                "--format",
                "json",
            ],
            &[],
        )
        .await;
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    let seen = server.counters();
    assert_eq!(seen.method("server/discover"), 1, "no probe by the calls");
    assert_eq!(seen.method("tools/call"), 2);
}
