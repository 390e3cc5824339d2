//! `--models`: the providers' rules on the testkit's tools and on server-everything's.

use brain_mcp_testkit::Era;

use crate::support::{config, discovered, mcp_tools, redact, server, server_everything};

/// The report for every tool the testkit lists, from `check --models`.
#[tokio::test]
async fn check_models_reports_the_testkit_tools() {
    let server = server(Era::Both).await;
    let dir = tempfile::tempdir().unwrap();
    let names = brain_mcp_testkit::tool_names().join(",");
    let path = config(&dir, discovered(&server.url(), &names).await);
    let run = mcp_tools(
        &[
            "check",
            "--config",
            &path,
            "--models",
            "openai,anthropic,gemini",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "warnings only: {}", run.stderr);
    insta::assert_snapshot!(run.stdout.replace(&path, "host.json"));

    let strict = mcp_tools(
        &["check", "--config", &path, "--models", "openai", "--strict"],
        &[],
    )
    .await;
    assert_eq!(strict.code, 1);
    assert!(
        strict
            .stderr
            .ends_with("findings for the providers' rules (--strict)\n"),
        "{}",
        strict.stderr
    );
}

/// `check --format json`: stdout holds the whole report (every finding and verdict), for
/// scripts; the human report of the same config counts the same findings.
#[tokio::test]
async fn check_models_json_is_the_whole_report() {
    let server = server(Era::Both).await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(&dir, discovered(&server.url(), "echo,progress").await);
    let args = ["check", "--config", &path, "--models", "openai,anthropic"];
    let run = mcp_tools(&[&args[..], &["--format", "json"]].concat(), &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.ends_with("2 tool bindings OK\n"),
        "{}",
        run.stderr
    );
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let findings = report["findings"].as_array().unwrap();
    let human = mcp_tools(&args, &[]).await;
    assert!(
        human.stdout.contains(&format!(
            "{} findings for the providers' rules",
            findings.len()
        )),
        "{}",
        human.stdout
    );
    assert_eq!(report["verdicts"].as_array().unwrap().len(), 4);
    let first = &findings[0];
    for field in [
        "rule", "provider", "effect", "evidence", "place", "path", "message", "source",
    ] {
        assert!(first.get(field).is_some(), "{field} in {first}");
    }

    let usage = mcp_tools(&["check", "--config", &path, "--format", "json"], &[]).await;
    assert_eq!(usage.code, 2, "--format needs --models: {}", usage.stderr);
}

/// On discovery the report goes to stderr; with --strict nothing is printed.
#[tokio::test]
async fn discovery_models_warns_and_strict_refuses() {
    let server = server(Era::Both).await;
    let url = server.url();
    let run = mcp_tools(
        &[
            "-url",
            &url,
            "-tenant",
            "local",
            "-tools",
            "echo,image",
            "--models",
            "gemini",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bindings: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(bindings.as_array().unwrap().len(), 2);
    insta::assert_snapshot!(redact(&run.stderr, &server));

    let run = mcp_tools(
        &[
            "-url", &url, "-tenant", "local", "-tools", "echo", "--models", "openai", "--strict",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 1);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.ends_with("(--strict): nothing is printed\n"),
        "{}",
        run.stderr
    );
}

/// The report on a real third-party server's tools.
#[tokio::test]
async fn models_report_on_server_everything() {
    let everything = server_everything().await;
    let run = mcp_tools(
        &[
            "-url",
            &everything.url,
            "-tenant",
            "local",
            "--models",
            "openai,anthropic,gemini",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(
        run.stderr
            .replace(&everything.url, "http://127.0.0.1:PORT/mcp")
    );
}
