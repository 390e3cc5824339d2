//! The command line refuses bad input with exit 2 and one line, before connecting; inputs
//! are bounded.

use std::time::Duration;

use brain_mcp_testkit::Era;

use crate::support::{mcp_tools, server};

/// Each case: exit 2, nothing on stdout, one line on stderr that says what is wrong,
/// and the server never sees a connection.
#[tokio::test]
async fn bad_command_lines_are_usage_errors_of_one_line() {
    let server = server(Era::Legacy).await;
    let url = server.url();
    let no_scheme = url.trim_start_matches("http://").to_owned();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "-url",
                &url,
                "-tenant",
                "local",
                "-discovery-timeout",
                "18446744073709551615",
            ],
            "18446744073709551615 is not in 1..=3600",
        ),
        (
            vec!["-url", &url, "-tenant", "local", "-tools", ""],
            "a name in the list is empty",
        ),
        (
            vec!["-url", &url, "-tenant", "local", "-tools", "echo,echo"],
            "-tools names \"echo\" twice",
        ),
        (
            vec!["-url", &url, "-tenant", "local", "-tools", "echo, echo "],
            "-tools names \"echo\" twice",
        ),
        (
            vec!["-url", &no_scheme, "-tenant", "local"],
            "give an absolute http:// or https:// URL",
        ),
        (
            vec!["-url", &url, "-tenant", "local", "-token-env", ""],
            "the variable name is empty",
        ),
        (
            vec!["-url", "http://[::1/mcp", "-tenant", "local"],
            "not a usable URL",
        ),
        (
            vec!["-url", "http://127.0.0.1:99999/mcp", "-tenant", "local"],
            "not a usable URL",
        ),
        (
            vec!["-url", "http://user:pw@127.0.0.1/mcp", "-tenant", "local"],
            "holds a user name or password",
        ),
        // A refused URL is shown without its password or query.
        (
            vec![
                "-url",
                "http://user:hunter2@127.0.0.1/mcp?key=s3cret-key",
                "-tenant",
                "local",
            ],
            "invalid value 'http://<redacted>@127.0.0.1/mcp?<redacted>' for '--url <URL>': the URL holds a user name or password",
        ),
        (
            vec![
                "login",
                "--url",
                "http://127.0.0.1:99999/mcp?key=s3cret-key",
                "--auth",
                "{}",
                "--tenant",
                "t",
            ],
            "invalid value 'http://127.0.0.1:99999/mcp?<redacted>' for '--url <URL>': not a usable URL",
        ),
        (
            vec![
                "call", "--config", "x.json", "--tenant", " ", "--tool", "x", "--args", "{}",
            ],
            "must not be empty",
        ),
        (
            vec!["-url", &url, "-tenant", "local", "--bogus"],
            "unexpected argument '--bogus'",
        ),
        (
            vec!["-url", &url],
            "the following required arguments were not provided: --tenant <TENANT>",
        ),
        (
            vec!["-url", &url, "-tenant", "local", "--replace"],
            "--merge <FILE>",
        ),
        (
            vec!["-url", &url, "-tenant", "local", "--models", "llama"],
            "invalid value 'llama'",
        ),
        (
            vec!["check", "--config", "x.json", "--discovery-timeout", "0"],
            "0 is not in 1..=3600",
        ),
        (
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
            "--args is not JSON",
        ),
        (
            vec![
                "call", "--config", "x.json", "--tenant", "t", "--tool", "x", "--format", "yaml",
            ],
            "invalid value 'yaml'",
        ),
    ];
    for (args, expected) in cases {
        let run = mcp_tools(&args, &[]).await;
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty(), "{args:?}");
        assert_eq!(run.stderr.lines().count(), 1, "{args:?}: {}", run.stderr);
        assert!(
            run.stderr.starts_with("mcp-tools: "),
            "{args:?}: {}",
            run.stderr
        );
        assert!(run.stderr.contains(expected), "{args:?}: {}", run.stderr);
        for secret in ["hunter2", "s3cret-key"] {
            assert!(!run.stderr.contains(secret), "{args:?}: {}", run.stderr);
        }
    }
    assert_eq!(server.counters().connections_accepted, 0);
}

/// `-tools "echo, structured"` binds echo and structured.
#[tokio::test]
async fn spaces_around_tool_names_are_dropped() {
    let server = server(Era::Legacy).await;
    let run = mcp_tools(
        &[
            "-url",
            &server.url(),
            "-tenant",
            "local",
            "-tools",
            " echo, structured ",
        ],
        &[],
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
    assert_eq!(names, ["echo", "structured"]);
}

/// An endless file is read up to the bound and refused, at once.
#[tokio::test]
async fn a_config_past_64_mib_is_refused_without_reading_it_all() {
    for command in ["check", "call"] {
        let mut args = vec![command, "--config", "/dev/zero"];
        if command == "call" {
            args.extend(["--tenant", "t", "--tool", "x"]);
        }
        let run = mcp_tools(&args, &[]).await;
        assert_eq!(run.code, 1, "{command}");
        assert_eq!(
            run.stderr,
            "mcp-tools: /dev/zero is larger than 64 MiB, the most a host config may be\n"
        );
        assert!(run.elapsed < Duration::from_secs(10), "{:?}", run.elapsed);
    }
}

/// A reader that closed stdout before anything was written (`mcp-tools ... | head -c 0`):
/// each command says so on stderr and exits 1; nothing panics.
#[tokio::test]
async fn a_closed_stdout_is_exit_1_with_one_line_not_a_panic() {
    let server = server(Era::Legacy).await;
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let path = crate::support::config(&dir, crate::support::discovered(&url, "echo").await);
    let cases: [&[&str]; 3] = [
        &["-url", &url, "-tenant", "local", "-tools", "echo"],
        &["check", "--config", &path],
        &["completions", "bash"],
    ];
    for args in cases {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-tools"))
            .args(args)
            .env_remove("RUST_LOG")
            .stdin(std::process::Stdio::null())
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
            .wait_with_output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            stderr.ends_with("mcp-tools: cannot write to stdout: Broken pipe (os error 32)\n"),
            "{args:?}: {stderr}"
        );
    }
}
