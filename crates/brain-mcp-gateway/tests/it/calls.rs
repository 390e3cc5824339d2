//! A call through the gateway is a call: progress under the caller's own token, cancelled
//! by the caller (its notice or its connection closing), the upstream result as the
//! server sent it, and errors that say what happened and whether a retry is safe.

use std::time::Duration;

use brain_mcp_testkit::Era;
use brain_tools::{
    CallRequest, CancellationToken, EraPreference, PROGRESS_QUEUE, progress_channel,
};
use serde_json::{Value, json};

use crate::support::{call, client, endpoint, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_caller_live_under_its_own_token_in_both_eras() {
    for era in [EraPreference::Legacy, EraPreference::Modern] {
        let running = start(Era::Both, json!({})).await;
        let client = client(era);
        let (tx, mut rx) = progress_channel(PROGRESS_QUEUE);
        let request = CallRequest::new(
            endpoint(&running, &running.key("acme")),
            "progress",
            "the-callers-token",
            Duration::from_secs(10),
        )
        .arguments(
            json!({"steps": 4, "delay_ms": 5})
                .as_object()
                .cloned()
                .unwrap(),
        )
        .progress(tx);
        let done = client.call(request).await.unwrap();
        assert_eq!(done.result["content"][0]["text"], "done", "{era:?}");
        let mut seen = Vec::new();
        while let Some(update) = rx.try_recv() {
            seen.push(update.progress);
        }
        assert_eq!(
            seen,
            [1.0, 2.0, 3.0, 4.0],
            "{era:?}: every step, in order, before the result"
        );
        // Upstream, the call carried the gateway's own token and scope, not the caller's.
        let meta = running
            .upstream
            .counters()
            .call_meta
            .last()
            .cloned()
            .unwrap();
        assert_ne!(meta["progressToken"], "the-callers-token");
        assert_eq!(meta["brain.dev/scope"]["tenant_id"], "acme");
        running.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_cancels_or_drops_its_call_cancels_it_upstream() {
    // (the caller's era, how it gives up)
    for (era, drop_it) in [
        (EraPreference::Legacy, false),
        (EraPreference::Legacy, true),
        (EraPreference::Modern, false),
        (EraPreference::Modern, true),
    ] {
        let running = start(Era::Both, json!({})).await;
        let client = client(era);
        let cancel = CancellationToken::new();
        let request = CallRequest::new(
            endpoint(&running, &running.key("acme")),
            "hang",
            "c1",
            Duration::from_secs(30),
        )
        .cancel(cancel.clone());
        let calling = tokio::spawn({
            let client = client.clone();
            async move { client.call(request).await }
        });
        running
            .upstream
            .wait_for(|c| c.calls_in_flight == 1, Duration::from_secs(10))
            .await;
        if drop_it {
            // The caller drops its call.
            calling.abort();
        } else {
            cancel.cancel();
            let ended = calling.await.unwrap().unwrap_err();
            assert_eq!(ended.kind(), brain_tools::ErrorKind::Cancelled);
        }
        let seen = running
            .upstream
            .wait_for(|c| c.handler_cancellations == 1, Duration::from_secs(10))
            .await;
        assert_eq!(
            seen.handler_cancellations, 1,
            "{era:?} drop={drop_it}: the upstream call was cancelled"
        );
        assert_eq!(seen.method("tools/call"), 1, "sent once, never again");
        running.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_session_callers_closed_connection_cancels_its_call_upstream() {
    // rmcp keeps a session's request running when its response stream is dropped (for a
    // resume); the gateway cancels the call: nobody is left to take its result.
    let running = start(Era::Both, json!({})).await;
    let key = running.key("acme");
    let opened =
        crate::support::post(&running.url, Some(&key), &crate::support::initialize()).await;
    assert!(opened.status().is_success());
    let session = opened
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .expect("a session");
    drop(opened);
    let http = crate::support::http();
    let send = |body: Value| {
        http.post(&running.url)
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", &session)
            .body(body.to_string())
            .send()
    };
    let _ = send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await
        .unwrap();
    let calling = send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                             "params": {"name": "hang", "arguments": {}}}))
    .await
    .unwrap();
    running
        .upstream
        .wait_for(|c| c.calls_in_flight == 1, Duration::from_secs(10))
        .await;
    drop(calling);
    let seen = running
        .upstream
        .wait_for(|c| c.handler_cancellations == 1, Duration::from_secs(10))
        .await;
    assert_eq!(
        seen.handler_cancellations, 1,
        "the upstream call was cancelled"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_caller_gets_the_upstream_result_as_the_server_sent_it() {
    let running = start(Era::Both, json!({})).await;
    let client = client(EraPreference::Auto);
    let acme = endpoint(&running, &running.key("acme"));
    for tool in ["structured", "image", "resource_mix", "error"] {
        let through = call(&client, acme.clone(), tool, json!({})).await.unwrap();
        let direct = call(
            &client,
            brain_tools::Endpoint::http(running.upstream.url(), None),
            tool,
            json!({}),
        )
        .await
        .unwrap();
        let mut through = through.result;
        // A tool's own error gains the error object, beside what the server said.
        if let Some(meta) = through.get_mut("_meta").and_then(Value::as_object_mut) {
            let error = meta.remove(brain_mcp_gateway::ERROR_META_KEY);
            if tool == "error" {
                let error = error.expect("the error object");
                assert_eq!(error["kind"], "tool_error");
                assert_eq!(error["delivery"], "delivered");
                assert_eq!(error["retryable"], false);
            }
            if meta.is_empty() {
                through.as_object_mut().unwrap().remove("_meta");
            }
        }
        assert_eq!(through, direct.result, "{tool}: passed on as it came");
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_call_says_what_happened_and_whether_a_retry_is_safe() {
    let running = start(Era::Both, json!({})).await;
    let client = client(EraPreference::Auto);
    let acme = endpoint(&running, &running.key("acme"));
    // Invalid arguments (echo needs a message): an error result the model can act on.
    let invalid = call(&client, acme.clone(), "echo", json!({"message": 5}))
        .await
        .unwrap();
    assert_eq!(invalid.result["isError"], true);
    let error = &invalid.result["_meta"][brain_mcp_gateway::ERROR_META_KEY];
    assert_eq!(error["kind"], "invalid_arguments");
    assert_eq!(error["delivery"], "not_sent");
    assert_eq!(error["retryable"], false);
    let text = invalid.result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("it did not run")
            && text.contains("call it again only with arguments that fix this"),
        "{text}"
    );
    assert_eq!(running.upstream.counters().method("tools/call"), 0);
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_caller_gets_a_complete_result_from_a_2025_server() {
    // A 2025-11-25 server's result has no `resultType`; the 2026-07-28 revision requires
    // one on every result.
    let running = start(Era::Legacy, json!({})).await;
    let (status, answer) = crate::support::post_modern(
        &running.url,
        &running.key("acme"),
        "tools/call",
        json!({"name": "echo", "arguments": {"message": "hi"}}),
        &[],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["result"]["content"][0]["text"], "hi");
    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
    assert_eq!(
        running.upstream.counters().sessions_opened,
        1,
        "the upstream spoke 2025-11-25"
    );
    running.stop().await;
}
