//! `mcp-tools call` and `mcp-tools check`.

use brain_mcp_testkit::Era;
use serde_json::{Value, json};

use crate::support::{config, discovered, mcp_tools, redact, server};

#[tokio::test]
async fn call_prints_events_as_json_lines_and_exits_by_the_result() {
    let server = server(Era::Both).await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(&dir, discovered(&server.url(), "progress,error").await);
    let run = mcp_tools(
        &[
            "call",
            "--config",
            &path,
            "--tenant",
            "local",
            "--tool",
            "progress",
            "--args",
            r#"{"steps": 2, "delay_ms": 1}"#,
            "--session",
            "s1",
            "--call",
            "c1",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(run.stdout);
    let run = mcp_tools(
        &[
            "call", "--config", &path, "--tenant", "local", "--tool", "error", "--call", "c2",
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 1);
    let last: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["error"]["kind"], "tool_error");
}

/// What a server sends back holds characters a terminal obeys (ESC, the one-byte CSI
/// U+009B, DEL, a bidi override, a zero-width space, a tag character): the JSON lines hold
/// each as a JSON escape, and parse back to exactly what the server sent.
#[tokio::test]
async fn json_lines_hold_no_character_a_terminal_obeys_and_lose_nothing() {
    let server = server(Era::Modern).await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(&dir, discovered(&server.url(), "echo").await);
    let message = "x\u{1b}[2J\u{9b}31m\u{7f}\u{202e}txt.exe\u{200b}\u{e0041}y é 😀";
    let args = json!({ "message": message }).to_string();
    let run = mcp_tools(
        &[
            "call", "--config", &path, "--tenant", "local", "--tool", "echo", "--args", &args,
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let raw: Vec<char> = run
        .stdout
        .chars()
        .filter(|&c| brain_tools_config::text::is_hidden(c) && c != '\n')
        .collect();
    assert!(raw.is_empty(), "{raw:?} raw in {}", run.stdout);
    assert!(
        run.stdout
            .contains(r"x\u001b[2J\u009b31m\u007f\u202etxt.exe\u200b\udb40\udc41y é 😀"),
        "{}",
        run.stdout
    );
    let result: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(result["content"][0]["text"], message);
}

/// Three bindings name an API key that is not exported: a call warns once, about the
/// binding it calls; a check says it once for the three.
#[tokio::test]
async fn an_unset_variable_is_one_warning() {
    let dir = tempfile::tempdir().unwrap();
    let binding = |name: &str| {
        json!({"name": name, "input_schema": {"type": "object"}, "url": "https://x.example/mcp",
               "mcp_tool": name, "tenants": ["local"], "token_env": "BRAIN_TEST_UNSET_KEY"})
    };
    let path = config(&dir, json!([binding("a"), binding("b"), binding("c")]));
    let call = mcp_tools(
        &[
            "call", "--config", &path, "--tenant", "local", "--tool", "b",
        ],
        &[],
    )
    .await;
    assert_eq!(call.code, 1, "missing_token: {}", call.stderr);
    let warnings: Vec<&str> = call
        .stderr
        .lines()
        .filter(|line| line.starts_with("warning:"))
        .collect();
    assert_eq!(
        warnings,
        [
            "warning: tools[1] (b).token_env: names BRAIN_TEST_UNSET_KEY, which is not set now; calls fail with missing_token until it is"
        ],
        "{}",
        call.stderr
    );
    let check = mcp_tools(&["check", "--config", &path], &[]).await;
    assert_eq!(check.code, 0, "{}", check.stderr);
    assert_eq!(
        check.stderr,
        "warning: tools[0] (a).token_env, tools[1] (b).token_env, tools[2] (c).token_env: names BRAIN_TEST_UNSET_KEY, which is not set now; calls fail with missing_token until it is\n"
    );
}

/// A stdio binding whose command names relative paths and that has no cwd loads, but
/// works only from the right folder: check warns; with a cwd, it does not.
#[tokio::test]
async fn check_warns_of_relative_paths_without_a_cwd() {
    let dir = tempfile::tempdir().unwrap();
    let stdio = |name: &str, command: Value| {
        json!({"name": name, "input_schema": {"type": "object"}, "mcp_tool": "echo",
               "tenants": ["local"], "command": command})
    };
    let path = config(
        &dir,
        json!([
            stdio(
                "relative",
                json!({"program": "./bin/server", "args": ["--db", "../data/x.db"]})
            ),
            stdio(
                "with_cwd",
                json!({"program": "./bin/server", "cwd": "/srv/tools"})
            ),
            stdio(
                "in_path",
                json!({"program": "npx", "args": ["-y", "@scope/server"]})
            )
        ]),
    );
    let run = crate::support::mcp_tools_in(dir.path(), &["check", "--config", &path], &[]).await;
    assert_eq!(run.code, 0, "a warning: {}", run.stderr);
    let here = dir.path().canonicalize().unwrap();
    insta::assert_snapshot!(
        run.stderr
            .replace(&here.display().to_string(), "/HERE")
            .replace(&dir.path().display().to_string(), "/HERE")
    );
}

#[tokio::test]
async fn check_reports_every_problem_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = config(
        &dir,
        json!([
            {"name": "a b", "input_schema": {"type": "object"}, "url": "https://x/mcp", "mcp_tool": "a", "tenants": []},
            {"name": "ok", "input_schema": {"type": "object"}, "url": "https://x/mcp", "mcp_tool": "ok", "tenants": ["t"], "inspect_session": true}
        ]),
    );
    let run = mcp_tools(&["check", "--config", &path], &[]).await;
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(run.stderr.replace(&path, "host.json"));
}

#[tokio::test]
async fn check_live_prints_what_changed_on_the_server() {
    let server = server(Era::Legacy).await;
    let dir = tempfile::tempdir().unwrap();
    let mut tools = discovered(&server.url(), "echo,structured,image").await;
    let path = config(&dir, tools.clone());
    let run = mcp_tools(&["check", "--config", &path, "--live"], &[]).await;
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);

    tools[0]["input_schema"]["properties"]["message"]["type"] = json!("integer");
    tools[1]["output_schema"] = json!({"type": "object"});
    tools[2]["mcp_tool"] = json!("picture");
    let path = config(&dir, tools);
    let run = mcp_tools(&["check", "--config", &path, "--live"], &[]).await;
    assert_eq!(run.code, 1);
    insta::assert_snapshot!(format!("{}{}", redact(&run.stdout, &server), run.stderr));
}

/// A tenant is any string a config holds (an ESC, a space): `check --live` shows it
/// escaped, and the login command it prints quotes it for a shell, without the raw ESC;
/// the server's URL is shown without its query.
#[tokio::test]
async fn check_live_escapes_a_tenant_and_quotes_it_in_the_login_command() {
    let dir = tempfile::tempdir().unwrap();
    let grants = tempfile::tempdir().unwrap();
    let tenant = "acme corp\u{1b}[2J";
    let path = config(
        &dir,
        json!([{
            "name": "files",
            "input_schema": {"type": "object"},
            "url": "https://mcp.example.com/mcp?key=s3cret-in-query",
            "mcp_tool": "files",
            "tenants": [tenant],
            "auth": {"type": "oauth"}
        }]),
    );
    let store = grants.path().to_str().unwrap();
    let run = mcp_tools(
        &["check", "--config", &path, "--live", "--store", store],
        &[],
    )
    .await;
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let shown = format!("{}{}", run.stdout, run.stderr);
    assert!(!shown.contains('\u{1b}'), "{shown:?}");
    assert!(!shown.contains("s3cret-in-query"), "{shown}");
    assert!(
        run.stdout.contains(&format!(
            "files: tenant acme corp\\u{{1b}}[2J has no grant for https://mcp.example.com/mcp?<redacted>; run `mcp-tools login --config {path} --tool files --tenant $'acme corp\\x1b[2J' --store {store}`"
        )),
        "{}",
        run.stdout
    );
}

/// A 2026-07-28 server that declares the tasks extension: each binding says what a task
/// means for it (its timeout bounds the task; tasks turned off make a task-only tool fail).
#[tokio::test]
async fn check_live_says_what_tasks_mean_for_each_binding() {
    let server = server(Era::Modern).await;
    let dir = tempfile::tempdir().unwrap();
    let mut tools = discovered(&server.url(), "echo").await;
    let mut off = tools[0].clone();
    off["name"] = json!("echo_now");
    off["tasks"] = json!(false);
    tools[0]["timeout_seconds"] = json!(120);
    tools.as_array_mut().unwrap().push(off);
    let path = config(&dir, tools);
    let run = mcp_tools(&["check", "--config", &path, "--live"], &[]).await;
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(
            "echo (echo): schemas match\n  note: the server may run it as a task; a call waits for the task within timeout_seconds (120 s)\n"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "echo_now (echo): schemas match\n  note: the server may run calls as tasks, and this binding turns them off (\"tasks\": false): a tool that only runs as a task fails\n"
        ),
        "{}",
        run.stdout
    );
}

/// At `-vvv` (trace), the log lines on stderr hold neither the token nor the call's
/// arguments, in both eras, also when the server sends the token back: the echo tool is
/// given the token as its message, so it is in the arguments and in the server's answer.
#[tokio::test]
async fn trace_logs_hold_no_token_and_no_arguments() {
    const TOKEN: &str = "sk-cli-trace-5d1e9a77";
    const SENTINEL: &str = "argument-sentinel-0c4f";
    for era in [Era::Legacy, Era::Modern] {
        let server = server(era).await;
        let dir = tempfile::tempdir().unwrap();
        let mut tools = discovered(&server.url(), "echo").await;
        tools[0]["token_env"] = json!("MCP_API_KEY");
        let path = config(&dir, tools);
        let args = json!({"message": format!("{SENTINEL} {TOKEN}")}).to_string();
        let run = mcp_tools(
            &[
                "-vvv", "call", "--config", &path, "--tenant", "local", "--tool", "echo", "--args",
                &args,
            ],
            &[("MCP_API_KEY", TOKEN)],
        )
        .await;
        assert_eq!(run.code, 0, "{era:?}: {}", run.stderr);
        assert!(
            run.stderr.contains("TRACE"),
            "{era:?}: trace lines were printed"
        );
        for secret in [TOKEN, SENTINEL] {
            assert!(
                !run.stderr.contains(secret),
                "{era:?}: a log line holds {secret}: {}",
                run.stderr
            );
        }
        // The server's answer reached the result with the token hidden.
        assert!(run.stdout.contains(SENTINEL), "{era:?}: {}", run.stdout);
        assert!(!run.stdout.contains(TOKEN), "{era:?}: {}", run.stdout);
    }
}

/// `timeout`, systemd and container runtimes stop a process with SIGTERM: the call is
/// cancelled as with Ctrl-C, its result printed, and its stdio server's process group
/// killed (a server that ignores stdin closing would otherwise outlive the CLI).
#[cfg(unix)]
#[tokio::test]
async fn sigterm_cancels_the_call_and_ends_its_server() {
    use tokio::io::AsyncBufReadExt as _;

    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let path = crate::support::config(
        &dir,
        serde_json::json!([{
            "name": "slow", "mcp_tool": "progress", "tenants": ["local"],
            "input_schema": {"type": "object"}, "timeout_seconds": 60,
            "command": {
                "program": brain_mcp_testkit::stdio_binary_path(),
                "args": ["--ignore-stdin-close", "--pid-log", pids.to_str().unwrap()]
            }
        }]),
    );
    let mut spawned = crate::support::spawn(
        &[
            "call",
            "--config",
            &path,
            "--tenant",
            "local",
            "--tool",
            "slow",
            "--args",
            r#"{"steps": 100000, "delay_ms": 50}"#,
            "--format",
            "json",
        ],
        &[],
    );
    let stdout = spawned.child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    // The call is running once its first progress is out.
    let first = lines.next_line().await.unwrap().unwrap();
    assert!(first.contains("tool.progress"), "{first}");
    let cli = spawned.child.id().unwrap();
    let status = std::process::Command::new("kill")
        .args(["-TERM", &cli.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut last = first;
    while let Some(line) = lines.next_line().await.unwrap() {
        last = line;
    }
    let code = spawned.child.wait().await.unwrap().code();
    assert_eq!(code, Some(1), "a cancelled call is a failed call");
    assert!(
        last.contains("\"tool.result\"") && last.contains("\"kind\":\"cancelled\""),
        "{last}"
    );
    let server: i32 = std::fs::read_to_string(&pids)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let gone = std::fs::read_to_string(format!("/proc/{server}/stat"))
        .map_or(true, |stat| stat.contains(") Z "));
    assert!(gone, "the stdio server {server} outlived the CLI");
}
