//! OpenTelemetry (feature `otel`): the spans and metrics of calls, read back through the
//! SDK's in-memory exporters, and the trace context the servers received.

use std::time::Duration;

use brain_mcp_testkit::{Era, HttpFault};
use brain_tools::{CallScope, ClientOptions, EraPreference, McpClient, ToolHost};
use brain_tools_config::HostConfig;
use opentelemetry::{
    Key, KeyValue, Value as OtelValue,
    trace::{SpanId, SpanKind, Status, TracerProvider as _},
};
use opentelemetry_sdk::{
    metrics::{
        InMemoryMetricExporter, PeriodicReader, SdkMeterProvider,
        data::{AggregatedMetrics, Metric, MetricData},
    },
    trace::{InMemorySpanExporter, SdkTracerProvider, SpanData},
};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;
use tracing_subscriber::{
    Layer as _,
    filter::{LevelFilter, Targets},
    layer::SubscriberExt,
};

use crate::support::{
    binding, bindings, call, call_as, every_transport, failing_bindings, host, server,
};

/// Spans of this thread's calls, kept by the SDK's in-memory exporter for as long as this
/// lives (the subscriber is this thread's default: `#[tokio::test]` runs on one thread).
/// Every level of ours, and rmcp capped at `error`, as docs/observability.md says to
/// (rmcp logs whole messages at DEBUG and TRACE).
struct Traced {
    exporter: InMemorySpanExporter,
    _provider: SdkTracerProvider,
    _guard: tracing::subscriber::DefaultGuard,
}

fn traced() -> Traced {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let filter = Targets::new()
        .with_default(LevelFilter::TRACE)
        .with_target("rmcp", LevelFilter::ERROR);
    let subscriber = tracing_subscriber::registry().with(
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("tests"))
            .with_filter(filter),
    );
    Traced {
        exporter,
        _provider: provider,
        _guard: tracing::subscriber::set_default(subscriber),
    }
}

impl Traced {
    /// The finished spans, and forgets them.
    fn take(&self) -> Vec<SpanData> {
        let spans = self.exporter.get_finished_spans().unwrap();
        self.exporter.reset();
        spans
    }
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a OtelValue> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> Option<String> {
    attribute(span, key).map(OtelValue::to_string)
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    let found: Vec<_> = spans.iter().filter(|span| span.name == name).collect();
    assert_eq!(
        found.len(),
        1,
        "one span named {name:?} among {:?}",
        spans.iter().map(|span| &span.name).collect::<Vec<_>>()
    );
    found[0]
}

/// The names of a span's children, each once.
fn children(spans: &[SpanData], parent: SpanId) -> Vec<&str> {
    let mut names: Vec<_> = spans
        .iter()
        .filter(|span| span.parent_span_id == parent)
        .map(|span| span.name.as_ref())
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The `traceparent` a span's context gives (sampled).
fn traceparent(span: &SpanData) -> String {
    format!(
        "00-{}-{}-01",
        span.span_context.trace_id(),
        span.span_context.span_id()
    )
}

/// A call under a host's own span is a CLIENT span `tools/call {tool}` whose parent is
/// that span, with the conventions' attributes and ours; its steps are its children; and
/// the server received its context in `params._meta` (the `tools/call`, and the
/// `initialize` of the session opened for it), beside `brain.dev/scope`.
#[tokio::test]
async fn a_call_is_a_client_span_under_the_hosts_span_and_the_server_gets_its_context() {
    let traced = traced();
    for (label, host, server) in every_transport().await {
        let turn = tracing::info_span!("agent_turn");
        let (result, _) = call(&host, "echo", json!({"message": "hi"}))
            .instrument(turn.clone())
            .await;
        assert!(!result.is_error, "{label}: {result:?}");
        drop(turn);
        let spans = traced.take();
        let turn = named(&spans, "agent_turn");
        let client = named(&spans, "tools/call echo");
        assert_eq!(client.span_kind, SpanKind::Client, "{label}");
        assert_eq!(
            client.parent_span_id,
            turn.span_context.span_id(),
            "{label}"
        );
        assert_eq!(
            client.span_context.trace_id(),
            turn.span_context.trace_id(),
            "{label}"
        );
        assert_eq!(client.status, Status::Unset, "{label}");
        let http = server.is_some();
        let legacy = label != "modern http";
        let expected = [
            ("mcp.method.name", Some("tools/call".to_owned())),
            ("gen_ai.operation.name", Some("execute_tool".to_owned())),
            ("gen_ai.tool.name", Some("echo".to_owned())),
            (
                "network.transport",
                Some(if http { "tcp" } else { "pipe" }.to_owned()),
            ),
            ("network.protocol.name", http.then(|| "http".to_owned())),
            ("server.address", http.then(|| "127.0.0.1".to_owned())),
            (
                "server.port",
                server
                    .as_ref()
                    .map(|server| server.addr().port().to_string()),
            ),
            ("brain.tenant", Some("local".to_owned())),
            ("brain.session", Some("s1".to_owned())),
            ("brain.call", Some("c1".to_owned())),
            ("brain.tool", Some("echo".to_owned())),
            // The first call to a server opens its context; a 2026-07-28 client is shared.
            ("brain.warm", legacy.then(|| "false".to_owned())),
            ("error.type", None),
            ("brain.error.kind", None),
        ];
        for (key, value) in expected {
            assert_eq!(text(client, key), value, "{label}: {key}");
        }
        let version = text(client, "mcp.protocol.version").expect("a protocol version");
        assert_eq!(version == "2026-07-28", !legacy, "{label}: {version}");
        assert_eq!(
            text(client, "mcp.session.id").is_some(),
            label == "legacy http",
            "{label}: a session id only where there is a session"
        );
        assert!(
            text(client, "jsonrpc.request.id").is_some(),
            "{label}: the request id"
        );
        assert_eq!(
            children(&spans, client.span_context.span_id()),
            ["open", "request"],
            "{label}: the steps"
        );
        let Some(server) = server else { continue };
        let seen = server.counters();
        let meta = &seen.call_meta[0];
        assert_eq!(meta["traceparent"], json!(traceparent(client)), "{label}");
        assert_eq!(meta["brain.dev/scope"]["call_id"], json!("c1"), "{label}");
        if legacy {
            assert_eq!(
                seen.initialize_meta[0]["traceparent"],
                json!(traceparent(client)),
                "{label}: the session opened for the call carries its context"
            );
        }
    }
}

/// Waits (bounded) until the pool holds a warm session: it opens in the background once
/// calls come close together.
async fn until_warm(host: &ToolHost) {
    let warm = async {
        while host.client().stats().warm_contexts == 0 {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), warm)
        .await
        .expect("a warm session opens");
}

/// A context opened before the call (warm) says so, and its handshake carried no trace
/// context: it belonged to no call yet.
#[tokio::test]
async fn a_warm_session_says_so_and_its_handshake_carried_no_context() {
    let traced = traced();
    let server = server(Era::Legacy).await;
    let host = host(
        &bindings(&json!({"url": server.url()}), &[]),
        EraPreference::Legacy,
    );
    // Calls close together make the pool open the next session in the background.
    call(&host, "echo", json!({"message": "one"})).await;
    call(&host, "echo", json!({"message": "two"})).await;
    until_warm(&host).await;
    traced.take();
    let (result, _) = call(&host, "echo", json!({"message": "three"})).await;
    assert!(!result.is_error);
    let spans = traced.take();
    let client = named(&spans, "tools/call echo");
    assert_eq!(text(client, "brain.warm").as_deref(), Some("true"));
    assert_eq!(children(&spans, client.span_context.span_id()), ["request"]);
    let seen = server.counters();
    let last = seen.call_meta.last().unwrap();
    assert_eq!(last["traceparent"], json!(traceparent(client)));
    assert!(
        seen.initialize_meta
            .iter()
            .filter(|meta| meta.get("traceparent").is_none())
            .count()
            >= 1,
        "warm sessions were opened without a trace context: {:?}",
        seen.initialize_meta
    );
}

/// Every error kind the testkit can cause sets `error.type` (the JSON-RPC code when the
/// server answered one, `tool_error`, else our kind), our kind and delivery, and an ERROR
/// status whose description is the kind (never the message, which may quote a server).
#[tokio::test]
async fn each_error_kind_sets_the_error_type_and_an_error_status() {
    let traced = traced();
    let server = server(Era::Legacy).await;
    let refused = brain_mcp_testkit::RefusedPort::new().unwrap();
    let host = host(
        &failing_bindings(&server, &refused.url()),
        EraPreference::Legacy,
    );
    // (tool, arguments, span name, error.type, kind, delivery)
    let cases = [
        ("nope", json!({}), "tools/call", "unknown_tool", "not_sent"),
        (
            "admin_only",
            json!({}),
            "tools/call echo",
            "unknown_tool",
            "not_sent",
        ),
        (
            "echo",
            json!({"message": 5}),
            "tools/call echo",
            "invalid_arguments",
            "not_sent",
        ),
        (
            "needs_token",
            json!({}),
            "tools/call echo",
            "missing_token",
            "not_sent",
        ),
        (
            "unreachable",
            json!({}),
            "tools/call echo",
            "connect",
            "not_sent",
        ),
        (
            "unauthorized",
            json!({}),
            "tools/call echo",
            "http_status",
            "not_sent",
        ),
        (
            "garbled",
            json!({}),
            "tools/call echo",
            "protocol",
            "not_sent",
        ),
        (
            "missing",
            json!({}),
            "tools/call no_such_tool",
            "protocol",
            // -32602: the server refused the call before running it.
            "not_sent",
        ),
        (
            "drop_mid_stream",
            json!({"after_progress": 1}),
            "tools/call drop_mid_stream",
            "protocol",
            "unknown",
        ),
        (
            "slow",
            json!({"ms": 10_000}),
            "tools/call sleep",
            "timeout",
            "unknown",
        ),
        (
            "small",
            json!({"bytes": 2_000_000}),
            "tools/call big",
            "output_too_large",
            "unknown",
        ),
        (
            "error",
            json!({}),
            "tools/call error",
            "tool_error",
            "delivered",
        ),
        (
            "miscast",
            json!({}),
            "tools/call bad_structured",
            "output_schema",
            "delivered",
        ),
        (
            "http_tool",
            json!({}),
            "execute_tool http_tool",
            "executor",
            "not_sent",
        ),
    ];
    for (tool, arguments, name, kind, delivery) in cases {
        let (result, _) = call(&host, tool, arguments).await;
        let error = result.error.as_ref().expect("an error");
        assert_eq!(
            (error.kind.as_str(), error.delivery.as_str()),
            (kind, delivery),
            "{tool}: {}",
            error.message
        );
        let spans = traced.take();
        let span = spans
            .iter()
            .find(|span| span.name == name)
            .unwrap_or_else(|| panic!("{tool}: no span {name}"));
        let expected_kind = if tool == "http_tool" {
            SpanKind::Internal
        } else {
            SpanKind::Client
        };
        assert_eq!(span.span_kind, expected_kind, "{tool}");
        assert_eq!(
            span.status,
            Status::error(kind.to_owned()),
            "{tool}: the status says the kind only"
        );
        assert_eq!(
            text(span, "brain.error.kind").as_deref(),
            Some(kind),
            "{tool}"
        );
        assert_eq!(
            text(span, "brain.delivery").as_deref(),
            Some(delivery),
            "{tool}"
        );
        let error_type = text(span, "error.type").expect("error.type");
        match tool {
            // The server refused the call with a JSON-RPC error: its code.
            "missing" => {
                assert!(
                    error_type.parse::<i64>().is_ok_and(|code| code < 0),
                    "{error_type}"
                );
                assert_eq!(text(span, "rpc.response.status_code"), Some(error_type));
            }
            "unauthorized" => {
                assert_eq!(error_type, kind);
                assert_eq!(
                    attribute(span, "http.response.status_code"),
                    Some(&OtelValue::I64(401))
                );
            }
            _ => assert_eq!(error_type, kind, "{tool}"),
        }
    }
    // Cancelled before it started.
    let cancel = CancellationToken::new();
    cancel.cancel();
    let scope = CallScope::new("local", "s1", "c2");
    let (result, _) = call_as(&host, &scope, "echo", json!({"message": "x"}), cancel).await;
    assert_eq!(result.error.unwrap().kind.as_str(), "cancelled");
    let spans = traced.take();
    let span = named(&spans, "tools/call echo");
    assert_eq!(text(span, "error.type").as_deref(), Some("cancelled"));
    assert_eq!(span.status, Status::error("cancelled"));
    host.client().shutdown(Duration::from_secs(5)).await;
}

/// Every string a span carries: name, attributes, status, events and their attributes.
fn everything_said(span: &SpanData) -> String {
    let mut said = vec![span.name.to_string(), format!("{:?}", span.status)];
    for KeyValue { key, value, .. } in &span.attributes {
        said.push(format!("{key}={value}"));
    }
    for event in &span.events.events {
        said.push(event.name.to_string());
        for KeyValue { key, value, .. } in &event.attributes {
            said.push(format!("{key}={value}"));
        }
    }
    said.join("\n")
}

/// A call's arguments, its result and its token are in no span, attribute or event,
/// although the server sends the token and the arguments back: the opt-in sizes are
/// numbers, and a host can leave the tenant out.
#[tokio::test]
async fn no_argument_result_or_secret_in_any_span_and_the_tenant_can_be_left_out() {
    const SENTINEL: &str = "argument-sentinel-7f3a";
    const TOKEN: &str = "tk-secret-123";
    let traced = traced();
    let legacy = server(Era::Legacy).await;
    let modern = server(Era::Modern).await;
    for (label, url) in [("legacy", legacy.url()), ("modern", modern.url())] {
        let config = bindings(
            &json!({"url": url, "token_env": "TESTKIT_TOKEN"}),
            &[(
                "unauthorized",
                binding(
                    &legacy.fault_url(HttpFault::Status401),
                    "echo",
                    json!({"token_env": "TESTKIT_TOKEN"}),
                ),
            )],
        );
        let loaded = HostConfig::from_json_value_with_env(&config, |_| true).unwrap();
        let host = ToolHost::builder(loaded.config)
            .client(McpClient::new(ClientOptions::default()).unwrap())
            .token_source(|name| (name == "TESTKIT_TOKEN").then(|| TOKEN.to_owned()))
            .record_tenant(false)
            .record_sizes(true)
            .build()
            .unwrap();
        let arguments = json!({"message": format!("{SENTINEL} {TOKEN}")});
        let (result, _) = call(&host, "echo", arguments.clone()).await;
        let shown = serde_json::to_string(&result.content).unwrap();
        assert!(
            shown.contains(SENTINEL),
            "{label}: the server echoed it: {shown}"
        );
        let steps = json!({"steps": 3, "delay_ms": 1});
        let (progress, _) = call(&host, "progress", steps).await;
        assert!(!progress.is_error, "{label}");
        let (refused, _) = call(&host, "unauthorized", arguments.clone()).await;
        assert!(refused.is_error, "{label}");
        let spans = traced.take();
        assert!(spans.len() >= 7, "{label}: {} spans", spans.len());
        for span in &spans {
            let said = everything_said(span);
            for secret in [SENTINEL, TOKEN] {
                assert!(!said.contains(secret), "{label}: {secret} in {said}");
            }
            assert!(attribute(span, "brain.tenant").is_none(), "{label}: {said}");
        }
        let echo = spans
            .iter()
            .find(|span| span.name == "tools/call echo" && span.status == Status::Unset)
            .unwrap();
        let size = serde_json::to_vec(&arguments).unwrap().len() as i64;
        assert_eq!(
            attribute(echo, "brain.arguments.bytes"),
            Some(&OtelValue::I64(size)),
            "{label}"
        );
        assert!(
            matches!(attribute(echo, "brain.response.bytes"), Some(OtelValue::I64(n)) if *n > 0),
            "{label}"
        );
    }
}

fn sums(metrics: &[&Metric], name: &str) -> Vec<(Vec<KeyValue>, u64)> {
    let metric = metrics
        .iter()
        .find(|metric| metric.name() == name)
        .unwrap_or_else(|| panic!("no metric {name}"));
    let AggregatedMetrics::U64(MetricData::Sum(sum)) = metric.data() else {
        panic!("{name} is not a u64 sum");
    };
    sum.data_points()
        .map(|point| (point.attributes().cloned().collect(), point.value()))
        .collect()
}

fn has(attributes: &[KeyValue], key: &str, value: impl Into<OtelValue>) -> bool {
    let value = value.into();
    attributes
        .iter()
        .any(|kv| kv.key == Key::from(key.to_owned()) && kv.value == value)
}

/// The metrics an operator alerts on, on the global meter provider: the conventions'
/// duration histogram (seconds, the advised buckets), calls by outcome and kind, contexts
/// warm versus cold, the bytes received. (Other tests' calls may add points: these are
/// told apart by the server's port.)
#[tokio::test]
async fn the_metrics_have_the_conventions_names_units_and_attributes() {
    let exporter = InMemoryMetricExporter::default();
    let provider = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(exporter.clone()).build())
        .build();
    opentelemetry::global::set_meter_provider(provider.clone());
    let server = server(Era::Legacy).await;
    let port = i64::from(server.addr().port());
    let host = host(
        &bindings(&json!({"url": server.url()}), &[]),
        EraPreference::Legacy,
    );
    for message in ["one", "two"] {
        let (result, _) = call(&host, "echo", json!({"message": message})).await;
        assert!(!result.is_error);
    }
    until_warm(&host).await;
    call(&host, "echo", json!({"message": "three"})).await;
    call(&host, "error", json!({})).await;
    call(&host, "not_a_tool_we_have", json!({})).await;
    provider.force_flush().unwrap();
    let exported = exporter.get_finished_metrics().unwrap();
    let metrics: Vec<&Metric> = exported
        .iter()
        .flat_map(|resource| resource.scope_metrics())
        .flat_map(|scope| scope.metrics())
        .collect();

    let duration = metrics
        .iter()
        .find(|metric| metric.name() == "mcp.client.operation.duration")
        .expect("the duration histogram");
    assert_eq!(duration.unit(), "s");
    let AggregatedMetrics::F64(MetricData::Histogram(histogram)) = duration.data() else {
        panic!("mcp.client.operation.duration is not an f64 histogram");
    };
    let ours: Vec<_> = histogram
        .data_points()
        .filter(|point| {
            has(
                &point.attributes().cloned().collect::<Vec<_>>(),
                "server.port",
                port,
            )
        })
        .collect();
    let buckets = [
        0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
    ];
    let mut counted = 0;
    for point in &ours {
        assert_eq!(point.bounds().collect::<Vec<_>>(), buckets);
        let attributes: Vec<KeyValue> = point.attributes().cloned().collect();
        for (key, value) in [
            ("mcp.method.name", "tools/call"),
            ("gen_ai.operation.name", "execute_tool"),
            ("network.transport", "tcp"),
            ("network.protocol.name", "http"),
            ("server.address", "127.0.0.1"),
        ] {
            assert!(has(&attributes, key, value), "{key} in {attributes:?}");
        }
        assert!(
            attributes
                .iter()
                .any(|kv| kv.key.as_str() == "mcp.protocol.version"),
            "{attributes:?}"
        );
        for never in ["mcp.session.id", "jsonrpc.request.id", "brain.tenant"] {
            assert!(
                attributes.iter().all(|kv| kv.key.as_str() != never),
                "{never} is not a metric attribute"
            );
        }
        let tool_error = has(&attributes, "error.type", "tool_error");
        let echo = has(&attributes, "gen_ai.tool.name", "echo");
        assert!(tool_error != echo, "{attributes:?}");
        counted += point.count();
    }
    assert_eq!(
        counted, 4,
        "three echo calls and one tool error, nothing else"
    );

    let calls = sums(&metrics, "brain.tool.calls");
    let count = |tool: &str, outcome: &str| -> u64 {
        calls
            .iter()
            .filter(|(attributes, _)| {
                has(attributes, "brain.tool", tool.to_owned())
                    && has(attributes, "brain.outcome", outcome.to_owned())
            })
            .map(|(_, n)| n)
            .sum()
    };
    assert!(count("echo", "ok") >= 3);
    assert!(calls.iter().any(|(attributes, _)| {
        has(attributes, "brain.tool", "error")
            && has(attributes, "brain.error.kind", "tool_error")
            && has(attributes, "brain.delivery", "delivered")
    }));
    assert!(
        count("_OTHER", "error") >= 1,
        "a tool the host does not have is not named"
    );

    let contexts = sums(&metrics, "brain.mcp.client.contexts");
    let by_source = |source: &str| -> u64 {
        contexts
            .iter()
            .filter(|(attributes, _)| {
                has(attributes, "server.port", port)
                    && has(attributes, "brain.context.source", source.to_owned())
            })
            .map(|(_, n)| n)
            .sum()
    };
    assert!(by_source("cold") >= 1, "{contexts:?}");
    assert!(by_source("warm") >= 1, "{contexts:?}");
    assert_eq!(by_source("cold") + by_source("warm"), 4);

    let received = metrics
        .iter()
        .find(|metric| metric.name() == "brain.mcp.client.received")
        .expect("bytes received");
    assert_eq!(received.unit(), "By");
    let received = sums(&metrics, "brain.mcp.client.received");
    assert!(
        received
            .iter()
            .any(|(attributes, n)| has(attributes, "server.port", port) && *n > 0)
    );
    host.client().shutdown(Duration::from_secs(5)).await;
}

/// A call the server runs as a task (2026-07-28) carries its trace context on every
/// request about the task (`tasks/get`, and `tasks/cancel` when the call gives the task
/// up), as on its `tools/call`: the server sees the whole task in the call's trace.
#[tokio::test]
async fn the_requests_about_a_task_carry_the_calls_context() {
    let traced = traced();
    let server = server(Era::Modern).await;
    let config = bindings(
        &json!({"url": server.url()}),
        &[("task", binding(&server.url(), "task", json!({})))],
    );
    let host = host(&config, EraPreference::Modern);
    let (result, _) = call(&host, "task", json!({"polls": 2})).await;
    assert!(!result.is_error, "{result:?}");
    // Given up by the caller once its first poll was answered: `tasks/cancel`.
    let cancel = CancellationToken::new();
    let polled = server.wait_for(|c| c.method("tasks/get") > 2, Duration::from_secs(5));
    let scope = CallScope::new("local", "s1", "c2");
    let ((given_up, _), ()) = tokio::join!(
        call_as(
            &host,
            &scope,
            "task",
            json!({"outcome": "never"}),
            cancel.clone()
        ),
        async {
            polled.await;
            cancel.cancel();
        }
    );
    let error = given_up.error.as_ref().expect("an error");
    assert_eq!(
        (error.kind.as_str(), error.delivery.as_str()),
        ("cancelled", "delivered")
    );
    let seen = server
        .wait_for(|c| c.method("tasks/cancel") == 1, Duration::from_secs(5))
        .await;
    let spans = traced.take();
    let mut calls: Vec<_> = spans
        .iter()
        .filter(|span| span.name == "tools/call task")
        .collect();
    calls.sort_by_key(|span| span.start_time);
    assert_eq!(calls.len(), 2);
    // The server's records in order: the first call's two polls, then the second's
    // poll and cancel.
    let context = |poll: &std::collections::BTreeMap<String, String>| {
        let meta: serde_json::Value = serde_json::from_str(&poll["meta"]).unwrap();
        meta["traceparent"].as_str().map(str::to_owned)
    };
    let expected: Vec<(&str, Option<String>)> = [0, 0, 1, 1]
        .into_iter()
        .zip(["tasks/get", "tasks/get", "tasks/get", "tasks/cancel"])
        .map(|(call, method)| (method, Some(traceparent(calls[call]))))
        .collect();
    let seen_requests: Vec<(&str, Option<String>)> = seen
        .task_requests
        .iter()
        .map(|request| (request["method"].as_str(), context(request)))
        .collect();
    assert_eq!(seen_requests, expected);
    assert_eq!(
        seen.call_meta[0]["traceparent"],
        json!(traceparent(calls[0]))
    );
}

/// Every path that ends a call on a JSON-RPC error exports its code as `error.type` (and
/// `rpc.response.status_code`), as the MCP conventions say, in both eras and over stdio:
/// the server's refusal of the call, a task that failed, a poll of a task the server
/// deleted, an answer without a request id.
#[tokio::test]
async fn every_json_rpc_error_that_ends_a_call_is_its_error_type() {
    let traced = traced();
    let legacy = server(Era::Legacy).await;
    let modern = server(Era::Modern).await;
    let stdio = |era: &str, tool: &str| {
        json!({
            "command": {"program": crate::support::stdio_server(), "args": ["--era", era]},
            "mcp_tool": tool, "input_schema": {"type": "object"}, "tenants": ["local"],
            "timeout_seconds": 10
        })
    };
    let as_tool = |mut binding: serde_json::Value, name: &str| {
        binding["name"] = json!(name);
        binding
    };
    let config = json!({"tools": [
        as_tool(binding(&legacy.url(), "no_such_tool", json!({})), "legacy_missing"),
        as_tool(binding(&modern.url(), "no_such_tool", json!({})), "modern_missing"),
        as_tool(stdio("legacy", "no_such_tool"), "stdio_legacy_missing"),
        as_tool(stdio("modern", "no_such_tool"), "stdio_modern_missing"),
        as_tool(stdio("legacy", "unreadable"), "stdio_unreadable"),
        as_tool(binding(&modern.url(), "task", json!({})), "task_failing"),
        as_tool(binding(&modern.url(), "task", json!({})), "task_forgotten"),
    ]});
    for era in [EraPreference::Auto, EraPreference::Legacy] {
        let host = host(&config, era);
        let cases = [
            (
                "legacy_missing",
                json!({}),
                "tools/call no_such_tool",
                -32602,
            ),
            (
                "stdio_legacy_missing",
                json!({}),
                "tools/call no_such_tool",
                -32602,
            ),
            (
                "stdio_unreadable",
                json!({}),
                "tools/call unreadable",
                -32700,
            ),
        ];
        let modern_cases = [
            (
                "modern_missing",
                json!({}),
                "tools/call no_such_tool",
                -32602,
            ),
            (
                "stdio_modern_missing",
                json!({}),
                "tools/call no_such_tool",
                -32602,
            ),
            (
                "task_failing",
                json!({"outcome": "fail"}),
                "tools/call task",
                -32603,
            ),
            (
                "task_forgotten",
                json!({"outcome": "never", "ttl_ms": 200, "poll_ms": 50, "at_ttl": "forget"}),
                "tools/call task",
                -32602,
            ),
        ];
        let all: Vec<_> = match era {
            EraPreference::Auto => cases.into_iter().chain(modern_cases).collect(),
            _ => cases.into_iter().collect(),
        };
        for (tool, arguments, name, code) in all {
            let (result, _) = call(&host, tool, arguments).await;
            let error = result.error.as_ref().expect("an error");
            let spans = traced.take();
            let span = named(&spans, name);
            assert_eq!(
                text(span, "error.type"),
                Some(code.to_string()),
                "{era:?} {tool}: {} {}",
                error.kind,
                error.message
            );
            assert_eq!(
                text(span, "rpc.response.status_code"),
                Some(code.to_string()),
                "{era:?} {tool}"
            );
        }
        host.client().shutdown(Duration::from_secs(5)).await;
    }
}
