//! Our own scenario suite: the interop checks plus what the official suite does not
//! look at (timeout, cancel, byte budget, output schema, the wire `_meta` and headers,
//! session cleanup, leaks), against the testkit over HTTP (in process) or stdio.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use brain_mcp_testkit::{Counters, Era as ServerEra, ServerOptions, TestServer};
use brain_mcp_transport::{ClientOptions, Era, McpClient};
use brain_tools_events::{Delivery, ErrorKind};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::bindings::{self, BindOptions, Server, TENANT};
use crate::checks::{Report, standard};
use crate::interop::{revision, testkit_profile};

/// A whole run ends within this.
const RUN_DEADLINE: Duration = Duration::from_secs(90);
/// How long the server may take to see what the client did (closes are in the background).
const SETTLE: Duration = Duration::from_secs(5);

enum Kit {
    Http(TestServer),
    Stdio { counters: PathBuf },
}

pub(crate) async fn main(args: &[String]) -> ExitCode {
    let parsed = (|| -> anyhow::Result<(ServerEra, bool, brain_tools::EraPreference)> {
        let server_era = crate::flag_value(args, "--server-era")
            .unwrap_or("both")
            .parse::<ServerEra>()
            .map_err(anyhow::Error::msg)?;
        let stdio = match crate::flag_value(args, "--transport").unwrap_or("http") {
            "http" => false,
            "stdio" => true,
            other => anyhow::bail!("unknown transport {other:?}: expected http or stdio"),
        };
        let era = crate::parse_era(crate::flag_value(args, "--era"))?;
        Ok((server_era, stdio, era))
    })();
    let (server_era, stdio, era) = match parsed {
        Ok(parsed) => parsed,
        Err(error) => {
            eprintln!("ours: {error}");
            return ExitCode::from(2);
        }
    };
    let (kit, server) = if stdio {
        let counters = std::env::temp_dir().join(format!(
            "brain-conformance-counters-{}.json",
            std::process::id()
        ));
        let server = Server::Stdio {
            program: brain_mcp_testkit::stdio_binary_path()
                .to_string_lossy()
                .into_owned(),
            args: vec!["--era".into(), server_era.as_str().into()],
            env: vec![(
                "TESTKIT_COUNTERS".into(),
                counters.to_string_lossy().into_owned(),
            )],
        };
        (Kit::Stdio { counters }, server)
    } else {
        let options = ServerOptions {
            era: server_era,
            ..ServerOptions::default()
        };
        match TestServer::start(options).await {
            Ok(kit) => {
                let url = kit.url();
                (Kit::Http(kit), Server::Http(url))
            }
            Err(error) => {
                eprintln!("ours: cannot start the testkit: {error}");
                return ExitCode::FAILURE;
            }
        }
    };
    let client = McpClient::new(ClientOptions::default().era(era)).expect("the client builds");
    let mut report = Report::default();
    let run = run(&client, &server, &kit, &mut report);
    if tokio::time::timeout(RUN_DEADLINE, run).await.is_err() {
        report.record(
            "deadline",
            Err(anyhow::anyhow!(
                "the run did not finish within {} s",
                RUN_DEADLINE.as_secs()
            )),
        );
    }
    client.shutdown(Duration::from_secs(3)).await;
    let stats = client.stats();
    report.record(
        "client-leaks",
        if stats.calls_in_flight == 0 && stats.background_tasks == 0 && stats.child_processes == 0 {
            Ok("no call, task or child process left after shutdown".into())
        } else {
            Err(anyhow::anyhow!("left after shutdown: {stats:?}"))
        },
    );
    match kit {
        Kit::Http(kit) => {
            cleanup_checks(&mut report, &kit).await;
            kit.shutdown().await;
        }
        Kit::Stdio { counters } => {
            let _ = std::fs::remove_file(counters);
        }
    }
    println!("{}", report.to_json());
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

async fn run(client: &McpClient, server: &Server, kit: &Kit, report: &mut Report) {
    let discovery = match bindings::discover(client, server).await {
        Ok(discovery) => discovery,
        Err(error) => {
            report.record("discovery", Err(error));
            return;
        }
    };
    let era = discovery.era;
    report.revision = Some(revision(era).to_owned());
    let names: Vec<&str> = discovery.tools.iter().map(|t| t.name.as_str()).collect();
    report.record(
        "discovery",
        if names == brain_mcp_testkit::tool_names() {
            Ok(format!("{} tools at {}", names.len(), revision(era)))
        } else {
            Err(anyhow::anyhow!("listed {names:?}"))
        },
    );
    let options = BindOptions {
        limits: vec![
            ("sleep".into(), Some(1), None),
            ("big".into(), None, Some(100_000)),
        ],
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
        if bound.dropped.is_empty() {
            Ok(format!("{} bound", bound.names.len()))
        } else {
            Err(anyhow::anyhow!("dropped {:?}", bound.dropped))
        },
    );
    standard(report, &bound, &testkit_profile()).await;
    report
        .check("output-schema", async {
            let called = bound.call("schema-1", "bad_structured", json!({})).await;
            expect_error(&called, ErrorKind::OutputSchema, Delivery::Delivered)
        })
        .await;
    report
        .check("invalid-arguments", async {
            let called = bound.call("invalid-1", "echo", json!({"message": 5})).await;
            expect_error(&called, ErrorKind::InvalidArguments, Delivery::NotSent)
        })
        .await;
    report
        .check("unknown-tool", async {
            let called = bound
                .call_binding(
                    "unknown-1",
                    "not-bound",
                    json!({}),
                    CancellationToken::new(),
                )
                .await;
            expect_error(&called, ErrorKind::UnknownTool, Delivery::NotSent)
        })
        .await;
    report
        .check("timeout", async {
            let started = Instant::now();
            let called = bound
                .call("timeout-1", "sleep", json!({"ms": 10_000}))
                .await;
            let elapsed = started.elapsed();
            let note = expect_error(&called, ErrorKind::Timeout, Delivery::Unknown)?;
            anyhow::ensure!(
                // Not a benchmark: the result must come at the deadline, not long after.
                elapsed >= Duration::from_millis(950) && elapsed < Duration::from_secs(5),
                "a 1 s timeout took {elapsed:?}"
            );
            Ok(format!("{note} after {} ms", elapsed.as_millis()))
        })
        .await;
    report
        .check("cancel", async {
            // A call that runs until cancelled, cancelled once its first progress shows
            // the server has it (no clock decides when the call went out).
            let cancel = CancellationToken::new();
            let cancelled_at = std::sync::Arc::new(std::sync::Mutex::new(None));
            let (seen, on_progress) = (cancelled_at.clone(), cancel.clone());
            let sink = move |event: brain_tools::ToolEvent| {
                if matches!(event, brain_tools::ToolEvent::Progress(_)) {
                    seen.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .get_or_insert_with(Instant::now);
                    on_progress.cancel();
                }
            };
            let name = bound.name_of("progress")?.to_owned();
            let scope = brain_tools::CallScope::new(TENANT, "conformance-session", "cancel-1");
            let arguments = json!({"steps": 100_000, "delay_ms": 50});
            let result = bound
                .host
                .call(scope.clone(), &name, arguments)
                .cancel(cancel.clone())
                .sink(std::sync::Arc::new(sink))
                .await;
            let elapsed = cancelled_at
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .context("the call ended before any progress")?
                .elapsed();
            let called = bindings::Called {
                result,
                events: Vec::new(),
            };
            let note = expect_error(&called, ErrorKind::Cancelled, Delivery::Unknown)?;
            anyhow::ensure!(
                elapsed < Duration::from_secs(3),
                "the result came {elapsed:?} after the cancel"
            );
            Ok(format!(
                "{note}, {} ms after the cancel",
                elapsed.as_millis()
            ))
        })
        .await;
    report
        .check("output-budget", async {
            let called = bound
                .call("budget-1", "big", json!({"bytes": 300_000}))
                .await;
            expect_error(&called, ErrorKind::OutputTooLarge, Delivery::Unknown)
        })
        .await;
    report
        .check("wire-meta", async {
            let called = bound
                .call("wire-1", "echo", json!({"message": "wire"}))
                .await;
            called.ok()?;
            let counters = counters(kit).await?;
            wire_meta(&counters, "wire-1")
        })
        .await;
    if let Kit::Http(_) = kit {
        report
            .check("wire-headers", async {
                let counters = counters(kit).await?;
                wire_headers(&counters, era)
            })
            .await;
    }
}

/// The server-side view after the client shut down: nothing left running or open.
async fn cleanup_checks(report: &mut Report, kit: &TestServer) {
    let seen = kit
        .wait_for(|c| c.calls_in_flight == 0 && c.open_sessions() == 0, SETTLE)
        .await;
    report.record(
        "server-cleanup",
        if seen.calls_in_flight == 0 && seen.open_sessions() == 0 {
            Ok(format!(
                "{} session(s) opened and closed, {} DELETE(s), no handler left running",
                seen.sessions_opened, seen.deletes
            ))
        } else {
            Err(anyhow::anyhow!(
                "{} handler(s) still running, {} session(s) still open",
                seen.calls_in_flight,
                seen.open_sessions()
            ))
        },
    );
    // The timeout and the cancel both reached the server as a cancellation: on the
    // legacy era as notifications/cancelled, on 2026-07-28 as the request's stream
    // closing (which cancels the handler).
    let legacy = report.revision.as_deref() == Some(revision(Era::Legacy));
    let (seen_count, what) = if legacy {
        (seen.cancellations, "notifications/cancelled")
    } else {
        (seen.handler_cancellations, "cancelled handler(s)")
    };
    report.record(
        "server-cancellation",
        if seen_count >= 2 {
            Ok(format!("{seen_count} {what} for the timeout, the cancel (and the budget)"))
        } else {
            Err(anyhow::anyhow!(
                "the server saw {seen_count} {what} for the timeout and the cancel (notifications/cancelled {}, handlers cancelled {})",
                seen.cancellations,
                seen.handler_cancellations
            ))
        },
    );
}

async fn counters(kit: &Kit) -> anyhow::Result<Counters> {
    match kit {
        Kit::Http(kit) => Ok(kit.counters()),
        Kit::Stdio { counters } => {
            // The server process of the last call writes its counters; give it a moment.
            let started = Instant::now();
            loop {
                match brain_mcp_testkit::read_counters_file(counters) {
                    Ok(read) if !read.call_meta.is_empty() => return Ok(read),
                    _ if started.elapsed() > SETTLE => {
                        anyhow::bail!("no counters in {}", counters.display())
                    }
                    _ => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            }
        }
    }
}

/// The call's `_meta` on the wire: the call ID as progress token, the scope.
fn wire_meta(counters: &Counters, call_id: &str) -> anyhow::Result<String> {
    let meta = counters
        .call_meta
        .iter()
        .find(|meta| meta.pointer("/brain.dev~1scope/call_id") == Some(&json!(call_id)))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "no tools/call with scope call_id {call_id}: {:?}",
                counters.call_meta
            )
        })?;
    anyhow::ensure!(
        meta.get("progressToken") == Some(&json!(call_id)),
        "progressToken is {:?}, expected {call_id:?}",
        meta.get("progressToken")
    );
    let scope = &meta["brain.dev/scope"];
    anyhow::ensure!(
        scope["tenant_id"] == json!(TENANT) && scope["session_id"] == json!("conformance-session"),
        "scope {scope}"
    );
    anyhow::ensure!(
        !meta
            .as_object()
            .is_some_and(|m| m.keys().any(|k| k.contains("internal"))),
        "an internal key reached the wire: {meta}"
    );
    Ok(format!("_meta {meta}"))
}

/// The headers of every `tools/call` POST.
fn wire_headers(counters: &Counters, era: Era) -> anyhow::Result<String> {
    anyhow::ensure!(
        !counters.call_headers.is_empty(),
        "no tools/call headers recorded"
    );
    for headers in &counters.call_headers {
        let get = |name: &str| headers.get(name).map(String::as_str);
        match era {
            Era::Legacy => {
                anyhow::ensure!(
                    get("mcp-session-id").is_some(),
                    "a legacy tools/call without Mcp-Session-Id: {headers:?}"
                );
                anyhow::ensure!(
                    get("mcp-protocol-version").is_some_and(|v| v < "2026"),
                    "a legacy tools/call with MCP-Protocol-Version {:?}",
                    get("mcp-protocol-version")
                );
            }
            _ => {
                anyhow::ensure!(
                    get("mcp-protocol-version") == Some("2026-07-28")
                        && get("mcp-method") == Some("tools/call")
                        && get("mcp-name").is_some()
                        && get("mcp-session-id").is_none(),
                    "a 2026-07-28 tools/call with headers {headers:?}"
                );
            }
        }
        anyhow::ensure!(
            get("authorization").is_none(),
            "an Authorization header without a token_env: {headers:?}"
        );
    }
    Ok(format!(
        "{} tools/call POST(s) with the right headers",
        counters.call_headers.len()
    ))
}

fn expect_error(
    called: &bindings::Called,
    kind: ErrorKind,
    delivery: Delivery,
) -> anyhow::Result<String> {
    let error = called.result.error.as_ref().ok_or_else(|| {
        anyhow::anyhow!(
            "the call did not fail: {}",
            crate::checks::blocks(&called.result.content)
        )
    })?;
    anyhow::ensure!(
        called.result.is_error && error.kind == kind && error.delivery == delivery,
        "expected {} ({}), got {} ({}): {}",
        kind.as_str(),
        delivery.as_str(),
        error.kind.as_str(),
        error.delivery.as_str(),
        error.message
    );
    Ok(format!(
        "{} ({}): {}",
        kind.as_str(),
        delivery.as_str(),
        error.message
    ))
}
