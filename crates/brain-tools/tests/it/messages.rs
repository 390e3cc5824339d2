//! What the model and the person read when a call fails (issue 40): each message as the
//! model reads it, with the kind and delivery the host acts on.

use std::time::Duration;

use brain_mcp_testkit::{Era, RefusedPort};
use brain_tools::{CallScope, EraPreference};
use brain_tools_events::ResultEvent;
use serde_json::{Value, json};

use crate::support::{binding, host, server, stdio_server};

/// `kind/delivery/retryable: message`, as a snapshot line.
fn line(label: &str, result: &ResultEvent) -> String {
    let error = result.error.as_ref().expect("an error object");
    assert_eq!(
        result.content,
        vec![brain_tools_events::ContentBlock::text(
            error.message.clone()
        )],
        "{label}: the model reads the message"
    );
    // A task's id is the server's own: not part of what is checked.
    let message = match error.message.split_once("unknown task: ") {
        Some((before, after)) => format!(
            "{before}unknown task: TASK{}",
            after.get(36..).unwrap_or_default()
        ),
        None => error.message.clone(),
    };
    format!(
        "{label}: {}/{}/retryable={}: {message}",
        error.kind, error.delivery, error.retryable
    )
}

fn stdio(args: &[&str], tool: &str) -> Value {
    json!({
        "command": {"program": stdio_server(), "args": args},
        "mcp_tool": tool,
        "input_schema": {"type": "object"},
        "tenants": ["local"],
        "timeout_seconds": 10
    })
}

fn named(mut binding: Value, name: &str) -> Value {
    binding["name"] = json!(name);
    binding
}

/// Each failure the issue names, as the model reads it.
#[tokio::test]
async fn what_the_model_reads_of_each_failure() {
    let legacy = server(Era::Legacy).await;
    let modern = server(Era::Modern).await;
    let refused = RefusedPort::new().unwrap();
    let url = legacy.url();
    let task = |at_ttl: &str| {
        binding(
            &modern.url(),
            "task",
            json!({"timeout_seconds": 10, "name": format!("batch_{at_ttl}")}),
        )
    };
    let config = json!({"tools": [
        named(
            binding(
                &url,
                "echo",
                json!({"input_schema": {"type": "object", "properties": {"message": {"type": "string"}}}}),
            ),
            "search",
        ),
        named(binding(&url, "echo", json!({})), "research"),
        named(binding(&url, "echo", json!({})), "docs_search"),
        named(binding(&url, "echo", json!({})), "fetch"),
        // Another tenant's tool, one letter from the typo below: never named to `local`.
        named(binding(&url, "echo", json!({"tenants": ["ops"]})), "sarch"),
        named(binding(&url, "echo", json!({"tenants": ["ops"]})), "admin_reset"),
        named(binding(&url, "no_such_tool", json!({})), "renamed"),
        named(binding(&refused.url(), "echo", json!({})), "unreachable"),
        named(binding(&url, "sleep", json!({"timeout_seconds": 1})), "slow"),
        named(binding(&url, "sleep", json!({})), "nap"),
        named(binding(&url, "big", json!({"max_output_bytes": 100_000})), "small"),
        named(
            stdio(
                &["--stderr-line", "Fatal Python error: Segmentation fault", "--crash-mid-call", "139"],
                "echo",
            ),
            "crash_139",
        ),
        named(stdio(&["--crash-mid-call", "segv"], "echo"), "crash_segv"),
        named(stdio(&["--exit-mid-call"], "echo"), "exits"),
        named(
            stdio(
                &[
                    "--stderr-line",
                    "python3: can't open file '/srv/notes/server.py': [Errno 2] No such file or directory",
                    "--exit-before-handshake",
                ],
                "echo",
            ),
            "notes",
        ),
        task("fail"),
        task("forget"),
        task("nothing"),
    ]});
    let host = host(&config, EraPreference::Auto);
    let call = |tool: &'static str, arguments: Value| {
        host.call(CallScope::new("local", "s1", "c1"), tool, arguments)
    };
    let ttl =
        |at_ttl: &str| json!({"outcome": "never", "ttl_ms": 300, "poll_ms": 50, "at_ttl": at_ttl});
    let mut lines = vec![
        line("a wrong tool name", &call("serch", json!({})).await),
        line(
            "another tenant's tool",
            &call("admin_reset", json!({})).await,
        ),
        line("a name like none", &call("zzz", json!({})).await),
        line(
            "invalid arguments",
            &host
                .call(
                    CallScope::new("local", "s1", "c1"),
                    "search",
                    json!({"message": 5}),
                )
                .await,
        ),
        line(
            "a tool the server does not have",
            &call("renamed", json!({})).await,
        ),
        line("connection refused", &call("unreachable", json!({})).await),
        line(
            "the binding's timeout",
            &call("slow", json!({"ms": 10_000})).await,
        ),
        line(
            "the call's own deadline",
            &call("nap", json!({"ms": 10_000}))
                .timeout(Duration::from_millis(500))
                .await,
        ),
        line(
            "output over budget",
            &call("small", json!({"bytes": 2_000_000})).await,
        ),
        line(
            "a stdio server that crashes mid-call (exit 139)",
            &call("crash_139", json!({"message": "x"})).await,
        ),
        line(
            "a stdio server killed by SIGSEGV mid-call",
            &call("crash_segv", json!({"message": "x"})).await,
        ),
        line(
            "a stdio server that exits mid-call",
            &call("exits", json!({"message": "x"})).await,
        ),
        line(
            "a stdio command that cannot open its script",
            &call("notes", json!({})).await,
        ),
    ];
    for at_ttl in ["fail", "forget", "nothing"] {
        let tool = format!("batch_{at_ttl}");
        let result = host
            .call(CallScope::new("local", "s1", "c1"), &tool, ttl(at_ttl))
            .await;
        lines.push(line(
            &format!("a task past its ttlMs (at_ttl {at_ttl})"),
            &result,
        ));
    }
    host.client().shutdown(Duration::from_secs(5)).await;
    let text = lines
        .join("\n")
        .replace(&stdio_server(), "TESTKIT")
        .replace(&legacy.addr().port().to_string(), "PORT")
        .replace(
            refused
                .url()
                .rsplit_once(':')
                .unwrap()
                .1
                .trim_end_matches("/mcp"),
            "CLOSED",
        );
    insta::assert_snapshot!(text);
}
