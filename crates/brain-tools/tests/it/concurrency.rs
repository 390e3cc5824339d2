//! Many calls at once through one host.

use std::time::Duration;

use brain_mcp_testkit::Era;
use brain_tools::{CallScope, EraPreference};
use brain_tools_events::{ContentBlock, ToolEvent};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::support::{bindings, call_as, host, server};

async fn thousand(era: Era, preference: EraPreference) {
    let server = server(era).await;
    server.record_call_details(false);
    // What this checks is that every call ends with its own result and only its own
    // progress, and that nothing is left open: not how fast a machine runs a thousand
    // calls. Their deadline is the config's largest, so a loaded machine is only slower.
    let host = host(
        &bindings(
            &json!({"url": server.url(), "timeout_seconds": 86_400}),
            &[],
        ),
        preference,
    );
    let started = std::time::Instant::now();
    let mut calls = Vec::new();
    for i in 0..1000u32 {
        let host = host.clone();
        calls.push(tokio::spawn(async move {
            let scope = CallScope::new("local", format!("s{}", i % 7), format!("call-{i}"));
            let tool = if i % 2 == 0 { "echo" } else { "progress" };
            let arguments = if i % 2 == 0 {
                json!({"message": format!("m{i}")})
            } else {
                json!({"steps": 1 + i % 3, "delay_ms": 1})
            };
            let (result, events) =
                call_as(&host, &scope, tool, arguments, CancellationToken::new()).await;
            (i, result, events)
        }));
    }
    for handle in calls {
        let (i, result, events) = handle.await.unwrap();
        assert!(!result.is_error, "call {i}: {result:?}");
        assert_eq!(result.header.call_id, format!("call-{i}"));
        if i % 2 == 0 {
            assert_eq!(result.content, vec![ContentBlock::text(format!("m{i}"))]);
        } else {
            let progress = events
                .iter()
                .filter(|e| matches!(e, ToolEvent::Progress(_)))
                .count();
            assert_eq!(
                progress as u32,
                1 + i % 3,
                "call {i} saw exactly its own progress"
            );
            for event in &events {
                assert_eq!(
                    event.header().call_id,
                    format!("call-{i}"),
                    "no progress crossed calls"
                );
            }
        }
    }
    let elapsed = started.elapsed();
    eprintln!("{era:?}: 1000 concurrent calls in {elapsed:?}");
    host.client().shutdown(Duration::from_secs(300)).await;
    let stats = host.client().stats();
    assert_eq!((stats.calls_in_flight, stats.background_tasks), (0, 0));
    let seen = server
        .wait_for(|c| c.open_sessions() == 0, Duration::from_secs(300))
        .await;
    assert_eq!(seen.open_sessions(), 0, "all sessions closed");
    assert_eq!(seen.method("tools/call"), 1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_legacy_calls() {
    thousand(Era::Legacy, EraPreference::Legacy).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_modern_calls() {
    thousand(Era::Modern, EraPreference::Auto).await;
}
