//! Tools that run as tasks (2026-07-28 tasks extension): one `tools/call`, then polls
//! until the task ends, all within the call's deadline, counted on the wire.

use std::time::Duration;

use brain_mcp_testkit::{Counters, Era, TestServer};
use brain_mcp_transport::{
    ClientOptions, Delivery, Endpoint, EraPreference, ErrorKind, McpClient, ServerRequestPolicy,
    StdioEndpoint,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::{GRACE, Ran, client, client_with, cold_client, request, run, started};

async fn task_call(client: &McpClient, endpoint: &Endpoint, tool: &str, args: Value) -> Ran {
    run(
        client,
        request(endpoint, tool, args, "c1", Duration::from_secs(10)),
    )
    .await
}

/// How a call failed: its kind and delivery.
fn failure(ran: &Ran) -> (ErrorKind, Delivery) {
    let error = ran.error();
    (error.kind(), error.delivery())
}

/// The counters once the server saw no task still running.
async fn settled(server: &TestServer) -> Counters {
    server
        .wait_for(|c| c.tasks_running == 0, Duration::from_secs(5))
        .await
}

#[tokio::test]
async fn a_task_ends_in_its_result_after_one_call_and_its_polls() {
    let (server, endpoint) = started(Era::Modern).await;
    let client = client(EraPreference::Modern);
    for polls in [1u64, 3, 5] {
        let before = server.counters();
        let ran = task_call(&client, &endpoint, "task", json!({"polls": polls})).await;
        assert_eq!(ran.text(), "done");
        let seen = server.counters();
        assert_eq!(seen.method("tools/call") - before.method("tools/call"), 1);
        assert_eq!(
            seen.method("tasks/get") - before.method("tasks/get"),
            polls,
            "one poll per pollIntervalMs, no more"
        );
        assert_eq!(seen.method("tasks/cancel"), 0);
    }
    // Every poll names its task in Mcp-Name, and declares the extension.
    let seen = settled(&server).await;
    assert_eq!(seen.task_requests.len(), 9);
    for poll in &seen.task_requests {
        assert_eq!(poll["method"], "tasks/get");
        assert_eq!(poll.get("mcp-name"), poll.get("task_id"), "{poll:?}");
    }
    let meta = &seen.call_meta[0]["io.modelcontextprotocol/clientCapabilities"];
    assert_eq!(
        meta["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    // Polls declare the extension too (a server refuses them otherwise), and carry none of
    // this client's private markers.
    for poll in &seen.task_requests {
        let meta: Value = serde_json::from_str(&poll["meta"]).unwrap();
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
            json!({})
        );
        assert!(!poll["meta"].contains("brain.dev/"), "{}", poll["meta"]);
    }
    assert!(
        seen.call_meta
            .iter()
            .all(|meta| !meta.to_string().contains("brain.dev/internal"))
    );
}

#[tokio::test]
async fn polls_that_fail_on_the_wire_are_polled_again_the_call_is_not() {
    let (server, endpoint) = started(Era::Modern).await;
    let client = client(EraPreference::Modern);
    // Four polls fail (503, dropped, 503, dropped), then two are answered.
    let ran = task_call(&client, &endpoint, "task", json!({"polls": 2, "flaky": 4})).await;
    assert_eq!(ran.text(), "done");
    let seen = settled(&server).await;
    assert_eq!(seen.method("tools/call"), 1);
    assert_eq!(seen.method("tasks/get"), 6);
    assert_eq!(seen.method("tasks/cancel"), 0);
}

#[tokio::test]
async fn every_end_of_a_task_is_delivered() {
    let (server, endpoint) = started(Era::Modern).await;
    let client = client(EraPreference::Modern);
    let ran = task_call(&client, &endpoint, "task", json!({"outcome": "tool_error"})).await;
    assert_eq!(ran.result()["isError"], true);
    assert_eq!(ran.text(), "the task's tool failed on purpose");
    // (outcome, kind, a phrase of the message)
    let cases = [
        (
            "fail",
            ErrorKind::Protocol,
            "failed with JSON-RPC error -32603: the task failed on purpose",
        ),
        ("cancelled", ErrorKind::Protocol, "and cancelled the task"),
        (
            "input",
            ErrorKind::Protocol,
            "asked for input this host does not give",
        ),
    ];
    for (outcome, kind, phrase) in cases {
        let ran = task_call(&client, &endpoint, "task", json!({"outcome": outcome})).await;
        let error = ran.error();
        assert_eq!(
            (error.kind(), error.delivery()),
            (kind, Delivery::Delivered)
        );
        assert!(error.detail().contains(phrase), "{outcome}: {error}");
    }
    // The task that asked for input this host refuses was given up: `tasks/cancel`.
    let seen = settled(&server).await;
    assert_eq!(seen.method("tasks/cancel"), 1);
    assert_eq!(seen.method("tasks/update"), 0);
}

#[tokio::test]
async fn input_a_task_asks_for_is_answered_as_elicitation_is() {
    let (server, endpoint) = started(Era::Modern).await;
    let client = client_with(
        ClientOptions::default()
            .era(EraPreference::Modern)
            .server_requests(ServerRequestPolicy::AcceptElicitationDefaults),
    );
    let ran = task_call(
        &client,
        &endpoint,
        "task",
        json!({"outcome": "input", "polls": 2}),
    )
    .await;
    assert_eq!(ran.text(), "answered: accept");
    let seen = settled(&server).await;
    assert_eq!(seen.method("tools/call"), 1);
    assert_eq!(seen.method("tasks/update"), 1);
    // Two polls to the question, one after the answer.
    assert_eq!(seen.method("tasks/get"), 3);
    let update = &seen.task_requests[2];
    assert_eq!(update["method"], "tasks/update");
    assert_eq!(update.get("mcp-name"), update.get("task_id"));
}

#[tokio::test]
async fn the_deadline_and_the_caller_give_the_task_up_with_tasks_cancel() {
    let (server, endpoint) = started(Era::Modern).await;
    let client = client(EraPreference::Modern);
    // Long enough for the task to be created on a loaded machine (`Delivered` says it
    // was); the task never ends.
    let timeout = Duration::from_secs(3);
    let ran = run(
        &client,
        request(
            &endpoint,
            "task",
            json!({"outcome": "never"}),
            "c1",
            timeout,
        ),
    )
    .await;
    assert_eq!(failure(&ran), (ErrorKind::Timeout, Delivery::Delivered));
    assert!(ran.elapsed < timeout + GRACE);
    let seen = settled(&server).await;
    assert_eq!(seen.method("tasks/cancel"), 1);
    assert_eq!(
        seen.method("notifications/cancelled"),
        0,
        "never for a task"
    );
    let cancel = seen.task_requests.last().unwrap();
    assert_eq!(cancel["method"], "tasks/cancel");
    assert_eq!(cancel.get("mcp-name"), cancel.get("task_id"));

    // Cancelled by the caller once the first poll was answered.
    let cancel = CancellationToken::new();
    let polled = server.wait_for(
        |c| c.method("tasks/get") > seen.method("tasks/get"),
        Duration::from_secs(5),
    );
    let call = run(
        &client,
        request(
            &endpoint,
            "task",
            json!({"outcome": "never"}),
            "c2",
            Duration::from_secs(10),
        )
        .cancel(cancel.clone()),
    );
    let (ran, _) = tokio::join!(call, async {
        polled.await;
        cancel.cancel();
    });
    assert_eq!(failure(&ran), (ErrorKind::Cancelled, Delivery::Delivered));
    let seen = settled(&server).await;
    assert_eq!(seen.method("tasks/cancel"), 2);
    assert_eq!(seen.method("tools/call"), 2);
}

/// A task the server says nothing more about past its `ttlMs` is given up once the grace
/// after it is over (2 s, or a poll interval when longer), and cancelled.
#[tokio::test]
async fn answers_about_a_task_that_break_the_protocol_end_the_call_and_give_the_task_up() {
    let (server, endpoint) = started(Era::Modern).await;
    let client = client(EraPreference::Modern);
    // (the second poll's answer, a phrase of the message)
    let cases = [
        // Completed, with a result: another task's, never this call's.
        ("other_task", "an answer to tasks/get about another task"),
        ("no_result", "an answer to tasks/get that is not a task"),
        (
            "unknown_status",
            "an answer to tasks/get that is not a task",
        ),
        (
            "rpc_error",
            "answered a request about the task with JSON-RPC error -32602",
        ),
    ];
    for (n, (answer, phrase)) in cases.into_iter().enumerate() {
        let ran = task_call(
            &client,
            &endpoint,
            "task",
            json!({"answer": answer, "polls": 2}),
        )
        .await;
        let error = ran.error();
        assert_eq!(
            failure(&ran),
            (ErrorKind::Protocol, Delivery::Delivered),
            "{answer}: {error}"
        );
        assert!(error.detail().contains(phrase), "{answer}: {error}");
        assert!(!error.detail().contains("another task's result"), "{error}");
        // The task was last seen running: it is given up, the call's own task and no other.
        let seen = settled(&server).await;
        let polled: Vec<_> = seen
            .task_requests
            .iter()
            .filter(|r| r["method"] == "tasks/get")
            .collect();
        let cancels: Vec<_> = seen
            .task_requests
            .iter()
            .filter(|r| r["method"] == "tasks/cancel")
            .collect();
        assert_eq!(cancels.len(), n + 1, "{answer}: {:?}", seen.task_requests);
        let own = polled.last().unwrap().get("task_id");
        assert!(own.is_some());
        assert_eq!(cancels[n].get("task_id"), own, "{answer}");
        assert_eq!(cancels[n].get("mcp-name"), own, "{answer}");
        assert_eq!(seen.method("tasks/get"), 2 * (n as u64 + 1), "{answer}");
        assert_eq!(seen.method("tools/call"), n as u64 + 1);
        assert_eq!(
            seen.method("notifications/cancelled"),
            0,
            "never for a task"
        );
    }
}

#[tokio::test]
async fn a_call_refused_on_its_own_sends_no_cancel_notice() {
    let (server, endpoint) = started(Era::Legacy).await;
    let client = cold_client(EraPreference::Legacy);
    // The server answers the call with a JSON-RPC error: nothing is left running. A
    // notice would go before the session's DELETE.
    let ran = task_call(&client, &endpoint, "task", json!({})).await;
    assert_eq!(failure(&ran), (ErrorKind::Protocol, Delivery::NotSent));
    let seen = server
        .wait_for(|c| c.sessions_closed == 1, Duration::from_secs(5))
        .await;
    assert_eq!(seen.sessions_closed, 1);
    assert_eq!(seen.method("notifications/cancelled"), 0);
    assert_eq!(seen.method("tasks/cancel"), 0);
}

#[tokio::test]
async fn a_task_past_its_time_to_live_is_given_up() {
    let (server, endpoint) = started(Era::Modern).await;
    let client = client(EraPreference::Modern);
    let ran = task_call(
        &client,
        &endpoint,
        "task",
        json!({"outcome": "never", "ttl_ms": 300, "poll_ms": 100, "at_ttl": "nothing"}),
    )
    .await;
    let error = ran.error();
    assert_eq!(failure(&ran), (ErrorKind::Timeout, Delivery::Delivered));
    assert!(error.detail().contains("time to live (300 ms)"), "{error}");
    assert!(error.retryable());
    let seen = settled(&server).await;
    assert_eq!(seen.method("tasks/cancel"), 1);
    // Polled through the grace, at the interval it asked for: no busy polling.
    let polls = seen.method("tasks/get");
    assert!(
        (1..=24).contains(&polls),
        "{polls} polls in 2.3 s at 100 ms"
    );
}

/// A task the server ends at its `ttlMs` ends the call with the server's verdict, not
/// with the client's own timeout: failed (rmcp's task manager), or deleted (-32602).
#[tokio::test]
async fn the_servers_verdict_on_a_task_past_its_time_to_live_ends_the_call() {
    let (server, endpoint) = started(Era::Modern).await;
    let client = client(EraPreference::Modern);
    // (at_ttl, a phrase of the detail, the JSON-RPC code)
    let cases = [
        (
            "fail",
            "which failed once its time to live (300 ms) had passed, with JSON-RPC error -32603: \
             task expired",
            -32603,
        ),
        (
            "forget",
            "once its time to live (300 ms) had passed, answered a request about the task with \
             JSON-RPC error -32602: unknown task",
            -32602,
        ),
    ];
    for (at_ttl, phrase, code) in cases {
        let before = server.counters();
        let ran = task_call(
            &client,
            &endpoint,
            "task",
            json!({"outcome": "never", "ttl_ms": 300, "poll_ms": 50, "at_ttl": at_ttl}),
        )
        .await;
        let error = ran.error();
        assert_eq!(
            failure(&ran),
            (ErrorKind::Protocol, Delivery::Delivered),
            "{at_ttl}: {error}"
        );
        assert!(error.detail().contains(phrase), "{at_ttl}: {error}");
        assert!(error.retryable(), "{at_ttl}");
        assert_eq!(ran.report.rpc_error_code(), Some(code), "{at_ttl}");
        let seen = settled(&server).await;
        // The server ended the task: nothing to cancel.
        assert_eq!(
            seen.method("tasks/cancel"),
            before.method("tasks/cancel"),
            "{at_ttl}"
        );
    }
}

#[tokio::test]
async fn the_byte_budget_covers_the_final_result() {
    let (_server, endpoint) = started(Era::Modern).await;
    let client = client(EraPreference::Modern);
    let within_10_000 = |bytes: u64, polls: u64| {
        let request = request(
            &endpoint,
            "task",
            json!({"bytes": bytes, "polls": polls}),
            "c1",
            Duration::from_secs(10),
        );
        run(&client, request.max_output_bytes(10_000))
    };
    let ran = within_10_000(50_000, 2).await;
    assert_eq!(
        failure(&ran),
        (ErrorKind::OutputTooLarge, Delivery::Delivered)
    );
    // Within the budget, each poll is counted on its own (not all polls together).
    let ran = within_10_000(5_000, 20).await;
    assert_eq!(ran.text().len(), 5_000);
}

#[tokio::test]
async fn progress_before_the_handle_and_status_messages_reach_the_caller() {
    let (_server, endpoint) = started(Era::Modern).await;
    let client = client(EraPreference::Modern);
    let ran = task_call(
        &client,
        &endpoint,
        "task",
        json!({"progress": 2, "status": true, "polls": 3}),
    )
    .await;
    assert_eq!(ran.text(), "done");
    let seen: Vec<(f64, Option<f64>, Option<&str>)> = ran
        .progress
        .iter()
        .map(|p| (p.progress, p.total, p.message.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            (1.0, Some(2.0), Some("preparing 1")),
            (2.0, Some(2.0), Some("preparing 2")),
            (2.0, Some(2.0), Some("started")),
            (2.0, Some(2.0), Some("poll 1 of 3")),
            (2.0, Some(2.0), Some("poll 2 of 3")),
            (2.0, Some(2.0), Some("poll 3 of 3")),
        ]
    );
}

#[tokio::test]
async fn a_binding_can_turn_tasks_off() {
    let (server, endpoint) = started(Era::Modern).await;
    let client = client(EraPreference::Modern);
    let off = |tool: &str| {
        request(&endpoint, tool, json!({}), "c1", Duration::from_secs(10)).tasks(false)
    };
    // A tool that may run as a task answers at once.
    let ran = run(&client, off("maybe_task")).await;
    assert_eq!(ran.text(), "done");
    // A tool that runs only as a task is refused before it runs, and the message says why.
    let ran = run(&client, off("task")).await;
    let error = ran.error();
    assert_eq!(failure(&ran), (ErrorKind::Protocol, Delivery::NotSent));
    assert!(
        error.detail().contains("-32021")
            && error.detail().contains("this binding turns tasks off"),
        "{error}"
    );
    let seen = server.counters();
    assert_eq!(seen.method("tasks/get"), 0);
    let declared = |meta: &Value| {
        meta["io.modelcontextprotocol/clientCapabilities"]
            .get("extensions")
            .and_then(|e| e.get("io.modelcontextprotocol/tasks"))
            .is_some()
    };
    assert!(seen.call_meta.iter().all(|meta| !declared(meta)));
    // With tasks on (the default), the same tool runs as a task.
    let ran = task_call(&client, &endpoint, "maybe_task", json!({})).await;
    assert_eq!(ran.text(), "done");
    assert_eq!(server.counters().method("tasks/get"), 1);
}

#[tokio::test]
async fn a_legacy_session_runs_no_task_and_says_why_a_tool_needs_one() {
    let (server, endpoint) = started(Era::Legacy).await;
    let client = client(EraPreference::Legacy);
    let ran = task_call(&client, &endpoint, "maybe_task", json!({})).await;
    assert_eq!(ran.text(), "done");
    let ran = task_call(&client, &endpoint, "task", json!({})).await;
    let error = ran.error();
    assert_eq!(failure(&ran), (ErrorKind::Protocol, Delivery::NotSent));
    assert!(
        error
            .detail()
            .contains("requires tasks, which this host supports in the 2026-07-28 era"),
        "{error}"
    );
    let seen = server.counters();
    assert_eq!(seen.method("tasks/get"), 0);
    // The initialize lifecycle declares no tasks extension.
    assert!(seen.call_meta.iter().all(|meta| {
        meta.get("io.modelcontextprotocol/clientCapabilities")
            .is_none()
    }));
}

#[tokio::test]
async fn a_stdio_server_in_the_2026_era_runs_tasks_too() {
    let endpoint = Endpoint::Stdio(StdioEndpoint::new(
        crate::support::stdio_server(),
        ["--era", "modern"],
    ));
    let client = client(EraPreference::Modern);
    let ran = task_call(
        &client,
        &endpoint,
        "task",
        json!({"polls": 2, "status": true}),
    )
    .await;
    assert_eq!(ran.text(), "done");
    let messages: Vec<_> = ran
        .progress
        .iter()
        .filter_map(|p| p.message.as_deref())
        .collect();
    assert_eq!(messages, ["started", "poll 1 of 2", "poll 2 of 2"]);
    let ran = task_call(&client, &endpoint, "task", json!({"bytes": 70_000})).await;
    assert_eq!(ran.text().len(), 70_000);
}
