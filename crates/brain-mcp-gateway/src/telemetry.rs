//! The span of a call through the gateway: a SERVER span named `tools/call {tool}` in the
//! OpenTelemetry conventions for MCP, which the call's own CLIENT span (`brain-tools`)
//! runs inside. With the `otel` feature it continues the caller's trace: the W3C trace
//! context from the HTTP request's `traceparent` (and `tracestate`, `baggage`) headers,
//! else from the request's `_meta` (SEP-414). It records no argument, result or token.

use tracing::Span;

use crate::Caller;

/// The server span of a `tools/call`.
pub(crate) fn server_span(tool: &str, caller: &Caller) -> Span {
    tracing::info_span!(
        "tools/call",
        otel.name = %format!("tools/call {tool}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool,
        brain.tenant = %caller.tenant,
        error.r#type = tracing::field::Empty,
    )
}

/// Marks the span failed with the error's kind.
pub(crate) fn failed(span: &Span, kind: &str) {
    span.record("otel.status_code", "ERROR");
    span.record("error.type", kind);
}

/// Continues the caller's trace: the parent of `span` is the context in `headers`, else
/// in the request's `_meta`.
#[cfg(feature = "otel")]
pub(crate) fn continue_trace(
    span: &Span,
    headers: Option<&http::HeaderMap>,
    meta: &serde_json::Map<String, serde_json::Value>,
) {
    use opentelemetry::{
        propagation::{Extractor, TextMapCompositePropagator, TextMapPropagator},
        trace::TraceContextExt,
    };
    use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    struct Headers<'a>(&'a http::HeaderMap);
    impl Extractor for Headers<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(|value| value.to_str().ok())
        }
        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(http::HeaderName::as_str).collect()
        }
    }
    struct Meta<'a>(&'a serde_json::Map<String, serde_json::Value>);
    impl Extractor for Meta<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(serde_json::Value::as_str)
        }
        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(String::as_str).collect()
        }
    }

    let propagator = TextMapCompositePropagator::new(vec![
        Box::new(TraceContextPropagator::new()),
        Box::new(BaggagePropagator::new()),
    ]);
    let from_headers = headers.map(|headers| propagator.extract(&Headers(headers)));
    let context = match from_headers {
        Some(context) if context.span().span_context().is_valid() => context,
        _ => propagator.extract(&Meta(meta)),
    };
    if context.span().span_context().is_valid() {
        let _ = span.set_parent(context);
    }
}
