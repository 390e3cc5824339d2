//! Interop: discovery and the standard calls against a real third-party MCP server.

use std::process::ExitCode;
use std::time::Duration;

use brain_mcp_transport::{ClientOptions, Era, McpClient};
use serde_json::json;

use crate::bindings::{self, BindOptions, Server};
use crate::checks::{MISSING_TOOL, Profile, Report, standard, task};

/// A whole interop run ends within this.
const RUN_DEADLINE: Duration = Duration::from_secs(90);

/// What each known peer serves, and what to call for each check.
fn profile(peer: &str) -> Option<(Profile, &'static [&'static str])> {
    match peer {
        // @modelcontextprotocol/server-everything (TypeScript SDK).
        "server-everything" => Some((
            Profile {
                echo: ("echo", json!({"message": "hi"}), "Echo: hi"),
                progress: (
                    "trigger-long-running-operation",
                    json!({"duration": 0.3, "steps": 3}),
                    3,
                ),
                image: ("get-tiny-image", json!({})),
                structured: ("get-structured-content", json!({"location": "Chicago"})),
                // Its only isError paths are an unknown tool and invalid arguments.
                error: None,
                // Its tasks are the 2025-11-25 form (execution.taskSupport), which this
                // client does not run. Its SDK (TypeScript, McpServer) turns the -32601 for
                // a "required" tool into an isError result ("requires task augmentation"),
                // so the refusal check (a JSON-RPC refusal, not_sent) does not apply.
                task: None,
            },
            &[
                "echo",
                "trigger-long-running-operation",
                "get-tiny-image",
                "get-structured-content",
            ],
        )),
        // tests/peers/py_server.py (python SDK `mcp`).
        "python-sdk" => Some((
            Profile {
                echo: ("echo", json!({"message": "hi"}), "Echo: hi"),
                progress: ("progress", json!({"steps": 3, "delay_ms": 20}), 3),
                image: ("image", json!({})),
                structured: ("structured", json!({"city": "Paris"})),
                error: Some(("error", json!({}))),
                task: Some((
                    "slow_echo",
                    json!({"text": "as a task"}),
                    "as a task",
                    &["poll 1 of 2", "poll 2 of 2"],
                )),
            },
            &[
                "echo",
                "progress",
                "image",
                "structured",
                "error",
                "slow_echo",
            ],
        )),
        // The testkit (see `ours`).
        "testkit" => Some((
            testkit_profile(),
            &["echo", "progress", "image", "structured", "error"],
        )),
        _ => None,
    }
}

pub(crate) fn testkit_profile() -> Profile {
    Profile {
        echo: ("echo", json!({"message": "hi"}), "hi"),
        progress: ("progress", json!({"steps": 3, "delay_ms": 10}), 3),
        image: ("image", json!({})),
        structured: ("structured", json!({"city": "Paris"})),
        error: Some(("error", json!({}))),
        task: None,
    }
}

pub(crate) fn revision(era: Era) -> &'static str {
    match era {
        Era::Legacy => "2025-11-25",
        _ => "2026-07-28",
    }
}

pub(crate) async fn main(all: &[String]) -> ExitCode {
    // Everything after --stdio is the server's command line.
    let stdio_at = all.iter().position(|arg| arg == "--stdio");
    let args = &all[..stdio_at.unwrap_or(all.len())];
    let Some(peer) = crate::flag_value(args, "--peer") else {
        eprintln!("interop: --peer NAME is required");
        return ExitCode::from(2);
    };
    let Some((profile, expected)) = profile(peer) else {
        eprintln!("interop: unknown peer {peer:?} (server-everything, python-sdk, testkit)");
        return ExitCode::from(2);
    };
    let server = match (crate::flag_value(args, "--url"), stdio_at) {
        (Some(url), None) => Server::Http(url.to_owned()),
        (None, Some(i)) if i + 1 < all.len() => Server::Stdio {
            program: all[i + 1].clone(),
            args: all[i + 2..].to_vec(),
            env: Vec::new(),
        },
        _ => {
            eprintln!("interop: give either --url URL or --stdio PROGRAM [ARGS...] (last)");
            return ExitCode::from(2);
        }
    };
    let era = match crate::parse_era(crate::flag_value(args, "--era")) {
        Ok(era) => era,
        Err(error) => {
            eprintln!("interop: {error}");
            return ExitCode::from(2);
        }
    };
    let expect_era = crate::flag_value(args, "--expect-revision").map(str::to_owned);
    let client = McpClient::new(ClientOptions::default().era(era)).expect("the client builds");
    let mut report = Report::default();
    let run = run(
        &client,
        &server,
        &profile,
        expected,
        expect_era.as_deref(),
        &mut report,
    );
    if tokio::time::timeout(RUN_DEADLINE, run).await.is_err() {
        report.record(
            "deadline",
            Err(anyhow::anyhow!(
                "the run did not finish within {} s",
                RUN_DEADLINE.as_secs()
            )),
        );
    }
    client.shutdown(Duration::from_secs(2)).await;
    println!("{}", report.to_json());
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn run(
    client: &McpClient,
    server: &Server,
    profile: &Profile,
    expected: &[&str],
    expect_revision: Option<&str>,
    report: &mut Report,
) {
    let discovery = match bindings::discover(client, server).await {
        Ok(discovery) => discovery,
        Err(error) => {
            report.record("discovery", Err(error));
            return;
        }
    };
    let revision = revision(discovery.era);
    report.revision = Some(revision.to_owned());
    let names: Vec<&str> = discovery
        .tools
        .iter()
        .map(|tool| tool.name.as_str())
        .collect();
    let missing: Vec<&&str> = expected
        .iter()
        .filter(|name| !names.contains(name))
        .collect();
    report.record(
        "discovery",
        if missing.is_empty() {
            Ok(format!("{} tools at {revision}", names.len()))
        } else {
            Err(anyhow::anyhow!("missing {missing:?} among {names:?}"))
        },
    );
    if let Some(expected) = expect_revision {
        report.record(
            "revision",
            if expected == revision {
                Ok(revision.to_owned())
            } else {
                Err(anyhow::anyhow!("spoke {revision}, expected {expected}"))
            },
        );
    }
    let options = BindOptions {
        extra: vec![(
            MISSING_TOOL.to_owned(),
            MISSING_TOOL.to_owned(),
            json!({"type": "object"}),
        )],
        ..BindOptions::default()
    };
    let bound = match bindings::bind(client, server, &discovery.tools, &options) {
        Ok(bound) => bound,
        Err(error) => {
            report.record("bindings", Err(error));
            return;
        }
    };
    report.record(
        "bindings",
        Ok(format!(
            "{} bound, {} dropped{}",
            bound.names.len(),
            bound.dropped.len(),
            bound
                .dropped
                .iter()
                .map(|(tool, why)| format!("; {tool}: {why}"))
                .collect::<String>()
        )),
    );
    standard(report, &bound, profile).await;
    task(report, &bound, profile, revision).await;
    if profile.task.is_some() {
        report.record(
            "tasks-discovered",
            match (revision, discovery.tasks) {
                ("2026-07-28", true) | ("2025-11-25", false) => {
                    Ok(format!("tasks extension declared: {}", discovery.tasks))
                }
                (_, declared) => Err(anyhow::anyhow!(
                    "at {revision} the discovery says tasks: {declared}"
                )),
            },
        );
    }
}
