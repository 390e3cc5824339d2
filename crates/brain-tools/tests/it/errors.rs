//! Every error kind, with its delivery, message and what the server saw.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use brain_mcp_testkit::Era;
use brain_tools::{CallScope, HttpToolCall, HttpToolExecutor, HttpToolOutput};
use brain_tools_config::HostConfig;
use brain_tools_events::{ContentBlock, Delivery, ErrorKind, ResultEvent, ToolError};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::{GRACE, binding, bindings, call, call_as, failing_bindings, host, server};

fn error(result: &ResultEvent) -> &ToolError {
    assert!(result.is_error);
    result.error.as_ref().expect("an error object")
}

#[tokio::test]
async fn every_kind_with_its_delivery_and_a_message_that_names_the_tool() {
    let server = server(Era::Legacy).await;
    let refused = brain_mcp_testkit::RefusedPort::new().unwrap();
    let closed = refused.url();
    let host = host(
        &failing_bindings(&server, &closed),
        brain_tools::EraPreference::Legacy,
    );
    let cases: Vec<(&str, Value, ErrorKind, Delivery)> = vec![
        ("nope", json!({}), ErrorKind::UnknownTool, Delivery::NotSent),
        (
            "admin_only",
            json!({}),
            ErrorKind::UnknownTool,
            Delivery::NotSent,
        ),
        (
            "echo",
            json!({"message": 5}),
            ErrorKind::InvalidArguments,
            Delivery::NotSent,
        ),
        (
            "needs_token",
            json!({}),
            ErrorKind::MissingToken,
            Delivery::NotSent,
        ),
        (
            "unreachable",
            json!({}),
            ErrorKind::Connect,
            Delivery::NotSent,
        ),
        (
            "unauthorized",
            json!({}),
            ErrorKind::HttpStatus,
            Delivery::NotSent,
        ),
        ("garbled", json!({}), ErrorKind::Protocol, Delivery::NotSent),
        (
            "drop_mid_stream",
            json!({"after_progress": 1}),
            ErrorKind::Protocol,
            Delivery::Unknown,
        ),
        (
            "slow",
            json!({"ms": 10_000}),
            ErrorKind::Timeout,
            Delivery::Unknown,
        ),
        (
            "small",
            json!({"bytes": 2_000_000}),
            ErrorKind::OutputTooLarge,
            Delivery::Unknown,
        ),
        (
            "error",
            json!({}),
            ErrorKind::ToolError,
            Delivery::Delivered,
        ),
        (
            "miscast",
            json!({}),
            ErrorKind::OutputSchema,
            Delivery::Delivered,
        ),
        (
            "http_tool",
            json!({}),
            ErrorKind::Executor,
            Delivery::NotSent,
        ),
    ];
    let mut messages = Vec::new();
    for (tool, arguments, kind, delivery) in cases {
        let started = std::time::Instant::now();
        let (result, events) = call(&host, tool, arguments).await;
        let error = error(&result);
        assert_eq!(
            (error.kind, error.delivery),
            (kind, delivery),
            "{tool}: {}",
            error.message
        );
        assert!(
            error.message.contains(tool),
            "{tool}: the message names the tool: {}",
            error.message
        );
        assert!(started.elapsed() < Duration::from_secs(3) + GRACE || kind != ErrorKind::Timeout);
        assert_eq!(
            events.last(),
            Some(&brain_tools_events::ToolEvent::Result(result.clone()))
        );
        if kind != ErrorKind::ToolError {
            assert_eq!(
                result.content,
                vec![ContentBlock::text(error.message.clone())],
                "{tool}"
            );
        }
        messages.push(format!(
            "{kind}/{}/retryable={}: {}",
            delivery.as_str(),
            error.retryable,
            error.message
        ));
    }
    let (passed, _) = call(&host, "checked", json!({})).await;
    assert!(!passed.is_error, "{passed:?}");
    let text = messages
        .join("\n")
        .replace(&server.addr().port().to_string(), "PORT")
        .replace(
            closed.rsplit_once(':').unwrap().1.trim_end_matches("/mcp"),
            "CLOSED",
        );
    insta::assert_snapshot!(text);
    // Warm sessions wait for calls until the client shuts down.
    host.client().shutdown(Duration::from_secs(5)).await;
    let seen = server
        .wait_for(
            |c| c.open_sessions() == 0 && c.sessions_opened >= 5,
            Duration::from_secs(5),
        )
        .await;
    assert_eq!(seen.open_sessions(), 0, "every session closed");
    assert_eq!(
        seen.tool_calls.get("drop_mid_stream"),
        Some(&1),
        "never retried"
    );
}

#[tokio::test]
async fn refused_calls_never_reach_the_server() {
    let server = server(Era::Legacy).await;
    let url = server.url();
    let config = bindings(
        &json!({"url": url}),
        &[
            (
                "admin_only",
                binding(&url, "echo", json!({"tenants": ["ops"]})),
            ),
            (
                "needs_token",
                binding(&url, "echo", json!({"token_env": "UNSET_TOKEN"})),
            ),
        ],
    );
    let host = host(&config, brain_tools::EraPreference::Auto);
    let forbidden = call(&host, "admin_only", json!({})).await.0;
    let unknown = call(&host, "admin_onlx", json!({})).await.0;
    assert_eq!(
        error(&forbidden).message.replace("admin_only", "X"),
        error(&unknown).message.replace("admin_onlx", "X"),
        "a forbidden tool answers exactly like an unknown one"
    );
    let invalid = call(&host, "echo", json!({"message": ["not", "a", "string"]}))
        .await
        .0;
    let tokenless = call(&host, "needs_token", json!({})).await.0;
    for (result, kind) in [
        (&forbidden, ErrorKind::UnknownTool),
        (&unknown, ErrorKind::UnknownTool),
        (&invalid, ErrorKind::InvalidArguments),
        (&tokenless, ErrorKind::MissingToken),
    ] {
        let error = error(result);
        assert_eq!((error.kind, error.delivery), (kind, Delivery::NotSent));
    }
    let seen = server.counters();
    assert_eq!(
        (seen.http_posts, seen.connections_accepted),
        (0, 0),
        "nothing touched the network"
    );
}

#[tokio::test]
async fn cancel_mid_call_reaches_the_server_and_closes_the_session() {
    let server = server(Era::Legacy).await;
    let host = host(
        &bindings(&json!({"url": server.url()}), &[]),
        brain_tools::EraPreference::Auto,
    );
    let cancel = CancellationToken::new();
    // Cancel once the server runs the tool: mid-call, whatever the machine's speed.
    let cancel_mid_call = async {
        let seen = server
            .wait_for(|c| c.calls_in_flight == 1, Duration::from_secs(5))
            .await;
        assert_eq!(seen.calls_in_flight, 1, "the call reached the tool");
        cancel.cancel();
    };
    let scope = CallScope::new("local", "s1", "c9");
    let ((result, _), ()) = tokio::join!(
        call_as(&host, &scope, "hang", json!({}), cancel.clone()),
        cancel_mid_call,
    );
    let error = error(&result);
    assert_eq!(
        (error.kind, error.delivery),
        (ErrorKind::Cancelled, Delivery::Unknown)
    );
    let seen = server
        .wait_for(
            |c| c.cancellations == 1 && c.sessions_closed == 1,
            Duration::from_secs(5),
        )
        .await;
    assert_eq!(
        seen.cancellations, 1,
        "notifications/cancelled seen by the server"
    );
    assert_eq!(seen.open_sessions(), 0, "session closed");
    assert_eq!(seen.handler_cancellations, 1);
}

/// A host that drops a running call (a `tokio::time::timeout` around it, a `select!`
/// that took another branch) still gets the call ended the documented way: the server
/// is told, the session closed, and the sink gets the one `tool.result`.
#[tokio::test]
async fn a_dropped_call_is_cancelled_on_the_server_and_still_reports_its_result() {
    let server = server(Era::Legacy).await;
    let host = host(
        &bindings(&json!({"url": server.url()}), &[]),
        brain_tools::EraPreference::Auto,
    );
    let (events, mut received) = tokio::sync::mpsc::unbounded_channel();
    let mut running = Box::pin(
        host.call(CallScope::new("local", "s1", "c10"), "hang", json!({}))
            .sink(Arc::new(events))
            .into_future(),
    );
    // Awaited until the server runs the tool, then dropped.
    let seen = tokio::select! {
        result = &mut running => panic!("a call of hang ended: {result:?}"),
        seen = server.wait_for(|c| c.calls_in_flight == 1, Duration::from_secs(5)) => seen,
    };
    assert_eq!(seen.calls_in_flight, 1, "the call reached the tool");
    drop(running);
    let result = loop {
        match received.recv().await.expect("a tool.result") {
            brain_tools::ToolEvent::Result(result) => break result,
            brain_tools::ToolEvent::Progress(_) => {}
            other => panic!("{other:?}"),
        }
    };
    let error = error(&result);
    assert_eq!(
        (error.kind, error.delivery),
        (ErrorKind::Cancelled, Delivery::Unknown)
    );
    assert_eq!(result.header.call_id, "c10");
    let seen = server
        .wait_for(
            |c| c.cancellations == 1 && c.sessions_closed == 1,
            Duration::from_secs(5),
        )
        .await;
    assert_eq!(seen.cancellations, 1, "notifications/cancelled");
    assert_eq!(seen.open_sessions(), 0, "session closed");
    assert!(
        received.recv().await.is_none(),
        "one result, and nothing after it"
    );
}

/// A call's own deadline, sooner than its binding's timeout, ends it with `timeout` (not
/// `cancelled`), says after how long, and cancels it on the server.
#[tokio::test]
async fn a_call_deadline_sooner_than_the_binding_timeout_is_a_timeout() {
    let server = server(Era::Legacy).await;
    let host = host(
        &bindings(&json!({"url": server.url()}), &[]),
        brain_tools::EraPreference::Auto,
    );
    let scope = CallScope::new("local", "s1", "c11");
    let result = host
        .call(scope, "hang", json!({}))
        // Long enough for the call to reach the server on a loaded machine.
        .timeout(Duration::from_secs(3))
        .await;
    let error = error(&result);
    assert_eq!(error.kind, ErrorKind::Timeout, "{error:?}");
    assert_eq!(
        error.message,
        "hang timed out after 3 s, the deadline its caller gave (its binding's timeout_seconds is 10 s); it may have run, so check before calling it again; another try may succeed"
    );
    let seen = server
        .wait_for(|c| c.sessions_closed == 1, Duration::from_secs(5))
        .await;
    assert_eq!(seen.method("tools/call"), 1, "the call reached the server");
    assert_eq!(
        (seen.sessions_closed, seen.open_sessions()),
        (1, 0),
        "session closed"
    );
    // A deadline later than the binding's timeout changes nothing: the binding's holds.
    let bounded = host
        .call(
            CallScope::new("local", "s1", "c12"),
            "echo",
            json!({"message": "hi"}),
        )
        .timeout(Duration::from_secs(u64::MAX))
        .await;
    assert!(!bounded.is_error, "{:?}", bounded.error);
}

#[derive(Debug)]
struct Reverser;

#[async_trait]
impl HttpToolExecutor for Reverser {
    async fn execute(&self, call: HttpToolCall) -> Result<HttpToolOutput, ToolError> {
        assert_eq!(
            call.token.as_ref().map(|t| t.expose()),
            Some("tk-secret-123")
        );
        let _ = call
            .progress
            .send(brain_tools::Progress::new(0.5, None, None));
        let text: String = call.arguments["text"]
            .as_str()
            .unwrap_or_default()
            .chars()
            .rev()
            .collect();
        Ok(HttpToolOutput::new(
            vec![ContentBlock::text(text)],
            false,
            None,
        ))
    }
}

#[tokio::test]
async fn http_tools_go_to_the_host_executor() {
    let config = json!({"tools": [{
        "name": "reverse",
        "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "url": "https://api.example.com/reverse",
        "token_env": "TESTKIT_TOKEN",
        "tenants": ["local"]
    }]});
    let loaded = HostConfig::from_json_value_with_env(&config, |_| true).unwrap();
    let host = brain_tools::ToolHost::builder(loaded.config)
        .http_executor(Arc::new(Reverser))
        .token_source(|name| (name == "TESTKIT_TOKEN").then(|| "tk-secret-123".to_owned()))
        .build()
        .unwrap();
    let (result, events) = call(&host, "reverse", json!({"text": "abc"})).await;
    assert_eq!(result.content, vec![ContentBlock::text("cba")]);
    assert_eq!(events.len(), 2, "one progress, one result");
}

#[tokio::test]
async fn an_http_tool_with_an_empty_token_is_missing_token_and_never_executes() {
    let config = json!({"tools": [{
        "name": "reverse",
        "input_schema": {"type": "object"},
        "url": "https://api.example.com/reverse",
        "token_env": "TESTKIT_TOKEN",
        "tenants": ["local"]
    }]});
    let loaded = HostConfig::from_json_value_with_env(&config, |_| true).unwrap();
    let host = brain_tools::ToolHost::builder(loaded.config)
        // The executor would panic on this token: it must never be reached.
        .http_executor(Arc::new(Reverser))
        .token_source(|_| Some(String::new()))
        .build()
        .unwrap();
    let (result, _) = call(&host, "reverse", json!({"text": "abc"})).await;
    let error = result.error.expect("the call fails");
    assert_eq!(error.kind, ErrorKind::MissingToken);
    assert!(error.message.contains("TESTKIT_TOKEN"), "{}", error.message);
}
