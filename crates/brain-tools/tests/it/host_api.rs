//! A host written against `brain-tools` alone, as a team would: calls run in the
//! background with `spawn`, deadlines from either clock, the host's stats, and a shutdown
//! before the process exits.

use std::time::Duration;

use brain_mcp_testkit::Era;
use brain_tools::{CallScope, EraPreference, ErrorKind, ToolEvent};
use serde_json::json;

use crate::support::{GRACE, bindings, host, server};

#[tokio::test]
async fn spawned_calls_take_either_clock_and_the_host_ends_clean() {
    let server = server(Era::Legacy).await;
    let host = host(
        &bindings(&json!({"url": server.url()}), &[]),
        EraPreference::Auto,
    );
    let scope = |call: &str| CallScope::new("local", "s1", call);

    // std's Instant and tokio's, both as deadlines; the handle resolves to the result.
    let from_std = host
        .call(scope("c1"), "echo", json!({"message": "std"}))
        .deadline(std::time::Instant::now() + Duration::from_secs(30))
        .spawn();
    let from_tokio = host
        .call(scope("c2"), "echo", json!({"message": "tokio"}))
        .deadline(brain_tools::Instant::now() + Duration::from_secs(30))
        .spawn();
    for (handle, text) in [(from_std, "std"), (from_tokio, "tokio")] {
        let result = handle.await.unwrap();
        assert!(!result.is_error, "{result:?}");
        assert_eq!(result.content[0], brain_tools::ContentBlock::text(text));
    }

    // A deadline sooner than the tool takes: `timeout`, also when spawned.
    let result = host
        .call(scope("c3"), "sleep", json!({"ms": 60_000}))
        .deadline(std::time::Instant::now() + Duration::from_millis(200))
        .spawn()
        .await
        .unwrap();
    assert_eq!(result.error.map(|e| e.kind), Some(ErrorKind::Timeout));

    // A spawned call whose handle is dropped runs to its end: its result reaches the sink.
    let (events, mut rx) = tokio::sync::mpsc::unbounded_channel();
    drop(
        host.call(scope("c4"), "progress", json!({"steps": 2, "delay_ms": 1}))
            .sink(std::sync::Arc::new(events))
            .spawn(),
    );
    let result = loop {
        match rx.recv().await.expect("the call's events") {
            ToolEvent::Result(result) => break result,
            _ => continue,
        }
    };
    assert!(!result.is_error, "{result:?}");

    // Before the process exits: nothing left running.
    let shutdown = host.shutdown(GRACE).await;
    assert!(shutdown.unsaved_grants.is_empty());
    let stats = host.stats();
    assert_eq!(stats.calls_in_flight, 0, "{stats:?}");
    assert_eq!(stats.background_tasks, 0, "{stats:?}");
    assert_eq!(stats.child_processes, 0, "{stats:?}");
}
