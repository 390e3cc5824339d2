//! Telemetry: the trace context a call carries to its server (SEP-414), and the client's
//! own metrics. With the `otel` feature the context is the calling `tracing` span's
//! OpenTelemetry context (through `tracing-opentelemetry`) and the metrics go to the
//! global meter provider; without it, everything here is empty and does nothing, so the
//! call path has no `cfg` of its own.
//!
//! Nothing a call sends or receives (arguments, results, tokens) is ever an attribute:
//! only names, counts and outcomes.

use serde_json::{Map, Value};

use crate::endpoint::Endpoint;

/// The trace context of the current `tracing` span as `_meta` entries (`traceparent`,
/// and `tracestate` and `baggage` when there are any), in the W3C formats. Empty without
/// the feature, outside any span, or when the span has no valid OpenTelemetry context
/// (no `tracing-opentelemetry` layer installed).
pub(crate) fn trace_meta() -> Map<String, Value> {
    #[cfg(feature = "otel")]
    {
        otel::current_meta()
    }
    #[cfg(not(feature = "otel"))]
    {
        Map::new()
    }
}

/// Adds the trace context entries to a `_meta` object, leaving keys it already has.
pub(crate) fn add_trace(meta: &mut Map<String, Value>, trace: &Map<String, Value>) {
    for (key, value) in trace {
        if !meta.contains_key(key) {
            meta.insert(key.clone(), value.clone());
        }
    }
}

/// Where a call's MCP context came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// A warm context, opened before the call (a session through its handshake, a
    /// process started).
    Warm,
    /// Opened for the call.
    Cold,
    /// The long-lived 2026-07-28 client of the server, shared by calls.
    Shared,
}

impl Source {
    #[cfg(feature = "otel")]
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Source::Warm => "warm",
            Source::Cold => "cold",
            Source::Shared => "shared",
        }
    }
}

/// Which token request an authorization made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenRequest {
    /// A token obtained for a machine grant (client credentials, enterprise, workload).
    Obtain,
    /// A delegated grant's refresh.
    Refresh,
}

/// The client's instruments. Built with the client from the global meter provider as it
/// is then (a host sets its provider first); cheap to clone.
#[derive(Debug, Clone, Default)]
pub(crate) struct Metrics {
    #[cfg(feature = "otel")]
    instruments: Option<otel::Instruments>,
}

impl Metrics {
    /// The instruments on the global meter provider (with the feature).
    pub(crate) fn new() -> Self {
        Self {
            #[cfg(feature = "otel")]
            instruments: Some(otel::Instruments::new()),
        }
    }

    /// A call took a context from `source`.
    pub(crate) fn context(&self, source: Source, server: &Endpoint) {
        #[cfg(feature = "otel")]
        if let Some(instruments) = &self.instruments {
            instruments.context(source, server);
        }
        #[cfg(not(feature = "otel"))]
        let _ = (source, server);
    }

    /// A call's response bytes, as received (counted against its budget).
    pub(crate) fn received(&self, bytes: usize, server: &Endpoint) {
        #[cfg(feature = "otel")]
        if let Some(instruments) = &self.instruments {
            instruments.received(bytes, server);
        }
        #[cfg(not(feature = "otel"))]
        let _ = (bytes, server);
    }

    /// A token request to an authorization server, and whether it gave a token.
    pub(crate) fn token(&self, request: TokenRequest, ok: bool) {
        #[cfg(feature = "otel")]
        if let Some(instruments) = &self.instruments {
            instruments.token(request, ok);
        }
        #[cfg(not(feature = "otel"))]
        let _ = (request, ok);
    }
}

#[cfg(feature = "otel")]
mod otel {
    use std::{
        collections::HashMap,
        sync::{Arc, Mutex, PoisonError},
    };

    use opentelemetry::{
        KeyValue,
        metrics::{Counter, Meter},
        propagation::{Injector, TextMapPropagator},
        trace::TraceContextExt,
    };
    use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
    use serde_json::{Map, Value};
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    use super::{Source, TokenRequest};
    use crate::endpoint::Endpoint;

    /// The `params._meta` keys of SEP-414: the W3C Trace Context and Baggage headers,
    /// unprefixed.
    const TRACE_KEYS: [&str; 3] = ["traceparent", "tracestate", "baggage"];

    /// The instrumentation scope of the transport's metrics.
    pub(super) const SCOPE: &str = "brain-mcp-transport";

    struct Carrier<'a>(&'a mut Map<String, Value>);

    impl Injector for Carrier<'_> {
        fn set(&mut self, key: &str, value: String) {
            if TRACE_KEYS.contains(&key) && !value.is_empty() {
                self.0.insert(key.to_owned(), Value::String(value));
            }
        }
    }

    pub(super) fn current_meta() -> Map<String, Value> {
        let mut meta = Map::new();
        let span = tracing::Span::current();
        if span.is_none() {
            return meta;
        }
        let context = span.context();
        let has_span = context.span().span_context().is_valid();
        let mut carrier = Carrier(&mut meta);
        if has_span {
            TraceContextPropagator::new().inject_context(&context, &mut carrier);
        }
        BaggagePropagator::new().inject_context(&context, &mut carrier);
        meta
    }

    fn meter() -> Meter {
        opentelemetry::global::meter_with_scope(
            opentelemetry::InstrumentationScope::builder(SCOPE)
                .with_version(env!("CARGO_PKG_VERSION"))
                .with_schema_url(crate::telemetry::SCHEMA_URL)
                .build(),
        )
    }

    #[derive(Clone)]
    pub(super) struct Instruments {
        contexts: Counter<u64>,
        received: Counter<u64>,
        tokens: Counter<u64>,
        /// The attributes of each HTTP server, by URL (bounded: cleared when full).
        servers: Arc<Mutex<HashMap<String, Arc<[KeyValue]>>>>,
    }

    /// The server URLs are left out: a URL may carry a key in its query.
    impl std::fmt::Debug for Instruments {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let servers = self.servers.lock().map_or(0, |servers| servers.len());
            f.debug_struct("Instruments")
                .field("servers", &servers)
                .finish_non_exhaustive()
        }
    }

    /// Servers whose attributes are remembered, at most.
    const SERVERS: usize = 1024;

    impl Instruments {
        /// Where a server is: `server.address` and `server.port` and `network.transport`
        /// `tcp` for HTTP, `network.transport` `pipe` for stdio. Never the URL's path,
        /// query or user info, nor a command's arguments.
        fn server_attributes(&self, server: &Endpoint, attributes: &mut Vec<KeyValue>) {
            let Endpoint::Http(http) = server else {
                attributes.push(KeyValue::new("network.transport", "pipe"));
                return;
            };
            let mut servers = self.servers.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(known) = servers.get(&http.url) {
                attributes.extend(known.iter().cloned());
                return;
            }
            let mut described = Vec::with_capacity(3);
            if let Ok(url) = url::Url::parse(&http.url) {
                if let Some(host) = url.host_str() {
                    described.push(KeyValue::new("server.address", host.to_owned()));
                }
                if let Some(port) = url.port_or_known_default() {
                    described.push(KeyValue::new("server.port", i64::from(port)));
                }
            }
            described.push(KeyValue::new("network.transport", "tcp"));
            attributes.extend(described.iter().cloned());
            if servers.len() >= SERVERS {
                servers.clear();
            }
            servers.insert(http.url.clone(), described.into());
        }
    }

    impl Instruments {
        pub(super) fn new() -> Self {
            let meter = meter();
            Self {
                contexts: meter
                    .u64_counter("brain.mcp.client.contexts")
                    .with_unit("{context}")
                    .with_description(
                        "MCP contexts that served calls, by source: warm (opened before the call), cold (opened for it), shared (a 2026-07-28 client)",
                    )
                    .build(),
                received: meter
                    .u64_counter("brain.mcp.client.received")
                    .with_unit("By")
                    .with_description("Bytes of tool call responses, as received")
                    .build(),
                tokens: meter
                    .u64_counter("brain.mcp.client.token.requests")
                    .with_unit("{request}")
                    .with_description(
                        "Token requests to authorization servers: tokens obtained for machine grants, refreshes of delegated grants",
                    )
                    .build(),
                servers: Arc::default(),
            }
        }

        pub(super) fn context(&self, source: Source, server: &Endpoint) {
            let mut attributes = Vec::with_capacity(4);
            attributes.push(KeyValue::new("brain.context.source", source.as_str()));
            self.server_attributes(server, &mut attributes);
            self.contexts.add(1, &attributes);
        }

        pub(super) fn received(&self, bytes: usize, server: &Endpoint) {
            let mut attributes = Vec::with_capacity(3);
            self.server_attributes(server, &mut attributes);
            self.received
                .add(u64::try_from(bytes).unwrap_or(u64::MAX), &attributes);
        }

        pub(super) fn token(&self, request: TokenRequest, ok: bool) {
            let request = match request {
                TokenRequest::Obtain => "obtain",
                TokenRequest::Refresh => "refresh",
            };
            self.tokens.add(
                1,
                &[
                    KeyValue::new("brain.token.request", request),
                    KeyValue::new("brain.outcome", if ok { "ok" } else { "error" }),
                ],
            );
        }
    }
}

/// The semantic conventions these names follow (the MCP conventions are in the GenAI
/// conventions of this release; status: development).
#[cfg(feature = "otel")]
pub(crate) const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.41.1";

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn trace_entries_never_replace_what_the_caller_put_in_meta() {
        let mut meta = json!({"traceparent": "mine", "brain.dev/scope": {}})
            .as_object()
            .cloned()
            .unwrap();
        let trace = json!({"traceparent": "theirs", "tracestate": "a=1"})
            .as_object()
            .cloned()
            .unwrap();
        add_trace(&mut meta, &trace);
        assert_eq!(
            Value::Object(meta),
            json!({"traceparent": "mine", "brain.dev/scope": {}, "tracestate": "a=1"})
        );
    }

    #[test]
    fn outside_any_span_there_is_no_trace_context() {
        assert!(trace_meta().is_empty());
    }
}
