//! `--models`: the providers' rules on the testkit's tools and on server-everything's.

use brain_mcp_testkit::Era;

use crate::support::{Run, config, discovered, mcp_tools, redact, server, server_everything};

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

/// Discovery of every tool of the server at `url`, with the report for every provider.
async fn discover_with_every_model(url: &str) -> Run {
    mcp_tools(
        &[
            "-url",
            url,
            "-tenant",
            "local",
            "--models",
            "openai,anthropic,gemini",
        ],
        &[],
    )
    .await
}

/// The report on a real third-party server's tools.
#[tokio::test]
async fn models_report_on_server_everything() {
    let everything = server_everything().await;
    let run = discover_with_every_model(&everything.url).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(
        run.stderr
            .replace(&everything.url, "http://127.0.0.1:PORT/mcp")
    );
}

/// `--models` on a server of 132 tools, 119 of them generated alike (each with an optional
/// `limit`): what they share is one finding naming them, every line fits the 100 columns
/// of a report that is not read at a terminal (a URL alone on its line excepted), each
/// rejected binding says why on a line of its own, and the report is at most 2 lines per
/// binding plus 30.
#[tokio::test]
async fn models_on_a_132_tool_server_groups_findings_and_fits_the_width() {
    let scripted = brain_mcp_testkit::tool_names().len();
    let server = brain_mcp_testkit::TestServer::start(brain_mcp_testkit::ServerOptions {
        extra_tools: 132 - scripted,
        ..brain_mcp_testkit::ServerOptions::default()
    })
    .await
    .unwrap();
    let run = discover_with_every_model(&server.url()).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bindings: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(bindings.as_array().unwrap().len(), 132);
    let report: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| !line.starts_with("mcp-tools: note:"))
        .collect();
    assert!(
        report.len() <= 2 * 132 + 30,
        "{} lines:\n{}",
        report.len(),
        run.stderr
    );
    for line in &report {
        assert!(
            line.chars().count() <= 100 || !line.trim().contains(' '),
            "wider than 100 columns: {line}"
        );
    }
    // The generated tools' findings, once, naming them.
    let last = format!("tools[131] (gen_{:04})", 131 - scripted);
    let heading = format!("tools[{scripted}] (gen_0000) ... {last} (119 bindings):");
    assert_eq!(
        report.iter().filter(|line| **line == heading).count(),
        1,
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr
            .matches("[openai.strict-all-required] at input_schema.properties.limit")
            .count(),
        1,
        "{}",
        run.stderr
    );
    // Each rejected binding: its verdict row, then why.
    let rows: Vec<usize> = (0..report.len())
        .filter(|&i| report[i].starts_with("  tools[") && report[i].contains("rejected"))
        .collect();
    assert!(!rows.is_empty(), "{}", run.stderr);
    for i in rows {
        assert!(
            report[i + 1].starts_with("    rejected by openai in strict mode: "),
            "{}\n{}",
            report[i],
            report[i + 1]
        );
    }
}
