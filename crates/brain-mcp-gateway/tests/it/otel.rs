//! OpenTelemetry (feature `otel`): a call's SERVER span continues the trace context its
//! caller sent, and the upstream call's CLIENT span is its child.

use opentelemetry::trace::{SpanKind, TraceId, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

use brain_mcp_testkit::Era;

use crate::support::{http, initialize, post, start};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";

#[tokio::test]
async fn a_calls_server_span_continues_the_callers_trace_and_parents_the_upstream_call() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("tests")));
    let _guard = tracing::subscriber::set_default(subscriber);

    let running = start(Era::Both, json!({})).await;
    let key = running.key("acme");
    let opened = post(&running.url, Some(&key), &initialize()).await;
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    drop(opened);
    let send = |body: serde_json::Value| {
        http()
            .post(&running.url)
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", &session)
            .header("traceparent", format!("00-{TRACE}-{PARENT}-01"))
            .body(body.to_string())
            .send()
    };
    let _ = send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await
        .unwrap();
    let answered = send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                              "params": {"name": "echo", "arguments": {"message": "traced"}}}))
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    assert!(answered.contains("traced"), "{answered}");
    // The trace context went on upstream, in the call's _meta (SEP-414).
    let upstream = running
        .upstream
        .counters()
        .call_meta
        .last()
        .cloned()
        .unwrap();
    let traceparent = upstream["traceparent"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    running.stop().await;
    assert!(
        traceparent.starts_with(&format!("00-{TRACE}-")),
        "{upstream}"
    );

    let spans = exporter.get_finished_spans().unwrap();
    let server = spans
        .iter()
        .find(|s| s.span_kind == SpanKind::Server && s.name == "tools/call echo")
        .unwrap_or_else(|| {
            panic!(
                "no server span: {:#?}",
                spans.iter().map(|s| &s.name).collect::<Vec<_>>()
            )
        });
    assert_eq!(
        server.span_context.trace_id(),
        TraceId::from_hex(TRACE).unwrap(),
        "the caller's trace"
    );
    assert_eq!(server.parent_span_id.to_string(), PARENT);
    let client = spans
        .iter()
        .find(|s| s.span_kind == SpanKind::Client && s.name == "tools/call echo")
        .expect("the upstream call's span");
    assert_eq!(client.parent_span_id, server.span_context.span_id());
    assert_eq!(
        client.span_context.trace_id(),
        server.span_context.trace_id()
    );
}
