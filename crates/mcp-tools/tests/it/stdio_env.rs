//! Discovery of a stdio server with an environment and a folder: `--env`, `--pass-env`,
//! `--cwd`, and relative paths, against the project's own peers.

use serde_json::{Value, json};

use crate::support::{everything_paths, mcp_tools, mcp_tools_in};

/// A secret long enough to be one (the client hides values of 8 characters or more in
/// what a server sends).
const SECRET: &str = "sk-brain-secret-0123456789";

/// `mcp-tools call` of `tool` in the host config `host`, events as JSON lines.
fn call(host: &std::path::Path, tool: &str, arguments: &str) -> Vec<String> {
    let host = host.to_str().unwrap();
    [
        "call", "--config", host, "--tenant", "local", "--tool", tool, "--args", arguments,
        "--format", "json",
    ]
    .map(str::to_owned)
    .to_vec()
}

fn bindings(path: &std::path::Path) -> Value {
    let config: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    config["tools"].clone()
}

/// server-everything (npm) started with a value and two host variables passed through:
/// the bindings hold the value and the references, never the secret; a call reaches the
/// server with them, and what the server echoes back hides the secret.
#[tokio::test]
async fn a_server_gets_values_and_passed_variables_and_bindings_keep_references() {
    let (node, everything) = everything_paths();
    let dir = tempfile::tempdir().unwrap();
    let host = dir.path().join("host.json");
    let command = format!("'{}' '{}' stdio", node.display(), everything.display());
    let env = [("BRAIN_SHORT", "abc"), ("BRAIN_SECRET", SECRET)];
    let run = mcp_tools(
        &[
            "-command",
            &command,
            "-env",
            "GREETING=hi=you",
            "-pass-env",
            "BRAIN_SHORT",
            "--pass-env",
            "BRAIN_SECRET",
            "-tenant",
            "local",
            "-tools",
            "get-env",
            "--merge",
            host.to_str().unwrap(),
        ],
        &env,
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let text = std::fs::read_to_string(&host).unwrap();
    assert!(!text.contains(SECRET), "{text}");
    assert!(!run.stdout.contains(SECRET) && !run.stderr.contains(SECRET));
    assert_eq!(
        bindings(&host)[0]["command"]["env"],
        json!({
            "GREETING": "hi=you",
            "BRAIN_SHORT": {"from_env": "BRAIN_SHORT"},
            "BRAIN_SECRET": {"from_env": "BRAIN_SECRET"}
        })
    );

    let call = call(&host, "get-env", "{}");
    let call: Vec<&str> = call.iter().map(String::as_str).collect();
    let run = mcp_tools(&call, &env).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains(SECRET), "{}", run.stdout);
    let seen = run.stdout.replace(' ', "");
    for expected in [
        r#"\"GREETING\":\"hi=you\""#,
        r#"\"BRAIN_SHORT\":\"abc\""#,
        r#"\"BRAIN_SECRET\":\"<redacted>\""#,
    ] {
        assert!(seen.contains(expected), "{expected} in {}", run.stdout);
    }
    // The host's other variables stay with the host.
    assert!(!seen.contains("MCP_API_KEY"));

    // Unset on the host: the server starts without it.
    let run = mcp_tools(&call, &[("BRAIN_SHORT", "abc")]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains("BRAIN_SECRET"), "{}", run.stdout);
}

#[tokio::test]
async fn pass_env_needs_a_set_variable_and_a_stdio_server() {
    let run = mcp_tools(
        &[
            "--command",
            "server",
            "--pass-env",
            "BRAIN_UNSET_VARIABLE",
            "--tenant",
            "local",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert_eq!(
        run.stderr,
        "mcp-tools: BRAIN_UNSET_VARIABLE is not set: export it for the server, or leave out --pass-env BRAIN_UNSET_VARIABLE\n"
    );
    for args in [
        &[
            "--url",
            "https://h/mcp",
            "--env",
            "A=b",
            "--tenant",
            "local",
        ][..],
        &["--command", "server", "--env", "A", "--tenant", "local"],
        &[
            "--command",
            "server",
            "--pass-env",
            "sk-123",
            "--tenant",
            "local",
        ],
        &[
            "--command",
            "server",
            "--env",
            "A=1",
            "--env",
            "A=2",
            "--tenant",
            "local",
        ],
    ] {
        let run = mcp_tools(args, &[]).await;
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(!run.stderr.contains("sk-123"), "{}", run.stderr);
    }
}

/// `-command "./bin/server names.txt"` discovered in a project folder: the program is
/// made absolute and the folder recorded, so the binding runs from anywhere.
#[tokio::test]
async fn relative_paths_are_resolved_and_the_folder_recorded() {
    brain_mcp_testkit::build_binaries();
    let project = tempfile::tempdir().unwrap();
    let project_path = project.path().canonicalize().unwrap();
    std::fs::create_dir(project_path.join("bin")).unwrap();
    std::os::unix::fs::symlink(
        brain_mcp_testkit::stdio_binary_path(),
        project_path.join("bin/server"),
    )
    .unwrap();
    let host = project_path.join("host.json");
    let run = mcp_tools_in(
        &project_path,
        &[
            "-command",
            "./bin/server --env-file names.txt",
            "-tenant",
            "local",
            "-tools",
            "echo",
            "--merge",
            "host.json",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let shown = project_path.display().to_string();
    insta::assert_snapshot!(run.stderr.replace(&shown, "/PROJECT"));
    let command = &bindings(&host)[0]["command"];
    assert_eq!(command["program"], json!(format!("{shown}/bin/server")));
    assert_eq!(command["cwd"], json!(shown));

    // From another folder, the server starts in the project (it writes names.txt there).
    std::fs::remove_file(project_path.join("names.txt")).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let echo = call(&host, "echo", r#"{"message": "hi"}"#);
    let echo: Vec<&str> = echo.iter().map(String::as_str).collect();
    let run = mcp_tools_in(elsewhere.path(), &echo, &[]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(project_path.join("names.txt").exists());
    assert!(!elsewhere.path().join("names.txt").exists());

    // --cwd names the folder: recorded absolute, whatever the command.
    std::fs::create_dir(project_path.join("data")).unwrap();
    let run = mcp_tools_in(
        &project_path,
        &[
            "-command",
            &brain_mcp_testkit::stdio_binary_path().display().to_string(),
            "--cwd",
            "data",
            "-tenant",
            "local",
            "-tools",
            "echo",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let printed: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(printed[0]["command"]["cwd"], json!(format!("{shown}/data")));
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

/// A server that needs a key this shell exports, listed without `-pass-env`: the server's
/// own error, then which variable the shell has and the flag that passes it (never its
/// value). With the flag, it lists.
#[tokio::test]
async fn a_secret_exported_but_not_passed_is_named_with_the_flag_that_passes_it() {
    let server = brain_mcp_testkit::stdio_binary_path().display().to_string();
    let command = format!(
        "sh -c 'test -n \"$BRAIN_TEST_API_KEY\" || {{ echo \"Error: BRAIN_TEST_API_KEY environment variable is required\" >&2; exit 1; }}; exec \"$0\"' '{server}'"
    );
    let env = [("BRAIN_TEST_API_KEY", SECRET)];
    let base = ["-command", &command, "-tenant", "local", "-tools", "echo"];
    let run = mcp_tools(&base, &env).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!run.stderr.contains(SECRET), "{}", run.stderr);
    insta::assert_snapshot!(run.stderr.replace(&server, "SERVER"));

    let passed = [&base[..], &["-pass-env", "BRAIN_TEST_API_KEY"]].concat();
    let run = mcp_tools(&passed, &env).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bindings: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        bindings[0]["command"]["env"],
        json!({"BRAIN_TEST_API_KEY": {"from_env": "BRAIN_TEST_API_KEY"}})
    );
}
