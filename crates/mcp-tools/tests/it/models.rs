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
