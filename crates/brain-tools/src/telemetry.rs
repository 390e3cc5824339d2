//! The span of a call, in the OpenTelemetry conventions for MCP (semantic conventions
//! 1.41.1, GenAI, status development), and, with the `otel` feature, the call metrics.
//!
//! The span is a plain `tracing` span: a host that bridges `tracing` to OpenTelemetry
//! (`tracing-opentelemetry`) gets a CLIENT span named `tools/call {mcp_tool}`, whose
//! fields are the conventions' attribute names (`otel.name`, `otel.kind` and
//! `otel.status_code` are read by the bridge). Our own attributes are under `brain.`.
//! Nothing a call sends or receives is ever recorded: no argument, no result, no token,
//! no message quoting the server (the status description is the error kind).

use std::{collections::HashMap, time::Duration};

use brain_mcp_transport::CallReport;
use brain_tools_config::{HostConfig, McpServer, Target};
use brain_tools_events::{ErrorKind, ResultEvent};
use tracing::{Span, field};

use crate::scope::CallScope;

/// What a span says about a binding, worked out once when the host is built.
#[derive(Debug, Clone)]
pub(crate) struct Binding {
    /// `tools/call {mcp_tool}`, or `execute_tool {name}` for an HTTP tool.
    name: String,
    /// The tool's name on the MCP server; `None` for an HTTP tool.
    mcp_tool: Option<String>,
    /// `tcp` or `pipe`.
    transport: &'static str,
    /// Host and port of an HTTP server.
    server: Option<(String, u16)>,
    /// The metric attributes that do not change from call to call.
    #[cfg(feature = "otel")]
    metric: otel::BindingAttributes,
}

/// The host's telemetry settings and, with the feature, its instruments.
#[derive(Debug)]
pub(crate) struct Telemetry {
    bindings: HashMap<String, Binding>,
    tenant: bool,
    sizes: bool,
    #[cfg(feature = "otel")]
    metrics: otel::Instruments,
}

/// What is known of a call once it is over.
pub(crate) struct Finished<'a> {
    /// Whether the call went to the MCP client (it passed the checks before it).
    #[cfg_attr(
        not(feature = "otel"),
        expect(dead_code, reason = "only the metrics read it")
    )]
    pub(crate) sent: bool,
    pub(crate) result: &'a ResultEvent,
    pub(crate) report: &'a CallReport,
    pub(crate) elapsed: Duration,
}

impl Telemetry {
    pub(crate) fn new(config: &HostConfig, tenant: bool, sizes: bool) -> Self {
        let bindings = config
            .tools
            .iter()
            .map(|binding| {
                let described = match &binding.target {
                    Target::Mcp(mcp) => {
                        let (transport, server) = match &mcp.server {
                            McpServer::Http { url, .. } => ("tcp", host_and_port(url)),
                            _ => ("pipe", None),
                        };
                        Binding {
                            name: format!("tools/call {}", mcp.mcp_tool),
                            mcp_tool: Some(mcp.mcp_tool.clone()),
                            transport,
                            server,
                            #[cfg(feature = "otel")]
                            metric: otel::BindingAttributes::default(),
                        }
                    }
                    Target::Http(http) => Binding {
                        name: format!("execute_tool {}", binding.name),
                        mcp_tool: None,
                        transport: "tcp",
                        server: host_and_port(&http.url),
                        #[cfg(feature = "otel")]
                        metric: otel::BindingAttributes::default(),
                    },
                    _ => Binding {
                        name: format!("execute_tool {}", binding.name),
                        mcp_tool: None,
                        transport: "tcp",
                        server: None,
                        #[cfg(feature = "otel")]
                        metric: otel::BindingAttributes::default(),
                    },
                };
                #[cfg(feature = "otel")]
                let described = Binding {
                    metric: otel::BindingAttributes::of(&binding.name, &described),
                    ..described
                };
                (binding.name.clone(), described)
            })
            .collect();
        Self {
            bindings,
            tenant,
            sizes,
            #[cfg(feature = "otel")]
            metrics: otel::Instruments::new(),
        }
    }

    /// Whether the sizes of arguments and responses are recorded.
    pub(crate) fn sizes(&self) -> bool {
        self.sizes
    }

    /// The call's span. Name and kind are set here: the OpenTelemetry bridge reads them
    /// once, when the span starts.
    pub(crate) fn span(&self, scope: &CallScope, tool: &str) -> Span {
        let binding = self.bindings.get(tool);
        let (name, kind) = match binding {
            Some(binding) if binding.mcp_tool.is_some() => (binding.name.as_str(), "client"),
            Some(binding) => (binding.name.as_str(), "internal"),
            // Nothing of a tool the host does not have goes in the name.
            None => ("tools/call", "client"),
        };
        let span = tracing::info_span!(
            "tool_call",
            otel.name = name,
            otel.kind = kind,
            otel.status_code = field::Empty,
            otel.status_description = field::Empty,
            mcp.method.name = field::Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = field::Empty,
            mcp.protocol.version = field::Empty,
            mcp.session.id = field::Empty,
            jsonrpc.request.id = field::Empty,
            network.transport = field::Empty,
            network.protocol.name = field::Empty,
            server.address = field::Empty,
            server.port = field::Empty,
            error.type = field::Empty,
            rpc.response.status_code = field::Empty,
            http.response.status_code = field::Empty,
            brain.tenant = field::Empty,
            brain.session = %scope.session_id,
            brain.call = %scope.call_id,
            brain.tool = %tool,
            brain.error.kind = field::Empty,
            brain.delivery = field::Empty,
            brain.warm = field::Empty,
            brain.arguments.bytes = field::Empty,
            brain.response.bytes = field::Empty,
            brain.duration_ms = field::Empty,
        );
        if self.tenant {
            span.record("brain.tenant", scope.tenant_id.as_str());
        }
        if let Some(binding) = binding {
            match &binding.mcp_tool {
                Some(mcp_tool) => {
                    span.record("mcp.method.name", "tools/call");
                    span.record("gen_ai.tool.name", mcp_tool.as_str());
                }
                None => {
                    span.record("gen_ai.tool.name", tool);
                }
            }
            span.record("network.transport", binding.transport);
            if let Some((address, port)) = &binding.server {
                if binding.mcp_tool.is_some() {
                    span.record("network.protocol.name", "http");
                }
                span.record("server.address", address.as_str());
                span.record("server.port", i64::from(*port));
            }
        }
        span
    }

    /// Records how the call ended on its span and in the metrics.
    pub(crate) fn finish(&self, span: &Span, tool: &str, finished: &Finished<'_>) {
        let report = finished.report;
        if let Some(version) = report.protocol_version() {
            span.record("mcp.protocol.version", version.as_str());
        }
        if let Some(session) = report.session_id() {
            span.record("mcp.session.id", session.as_str());
        }
        if let Some(id) = report.request_id() {
            span.record("jsonrpc.request.id", id.as_str());
        }
        if let Some(warm) = report.warm() {
            span.record("brain.warm", warm);
        }
        if let Some(code) = report.rpc_error_code() {
            span.record("rpc.response.status_code", code.to_string().as_str());
        }
        if self.sizes {
            span.record(
                "brain.response.bytes",
                i64::try_from(report.received_bytes()).unwrap_or(i64::MAX),
            );
        }
        let error_type = finished.result.error.as_ref().map(|error| {
            span.record("brain.error.kind", error.kind.as_str());
            span.record("brain.delivery", error.delivery.as_str());
            if let Some(status) = report.http_status() {
                span.record("http.response.status_code", i64::from(status));
            }
            let error_type = error_type(error.kind, report);
            span.record("error.type", error_type.as_str());
            span.record("otel.status_code", "error");
            span.record("otel.status_description", error.kind.as_str());
            error_type
        });
        // Integers as i64: the OpenTelemetry bridge makes a u64 a string.
        span.record(
            "brain.duration_ms",
            i64::try_from(finished.elapsed.as_millis()).unwrap_or(i64::MAX),
        );
        #[cfg(feature = "otel")]
        self.metrics
            .record(self.bindings.get(tool), finished, error_type.as_deref());
        #[cfg(not(feature = "otel"))]
        let _ = (tool, error_type);
    }
}

/// `error.type`: the JSON-RPC error code when the server answered with one, `tool_error`
/// for the tool's own error, else our error kind (`timeout`, `connect`, ...).
fn error_type(kind: ErrorKind, report: &CallReport) -> String {
    match report.rpc_error_code() {
        Some(code) if kind != ErrorKind::ToolError => code.to_string(),
        _ => kind.as_str().to_owned(),
    }
}

/// The host and port of a URL (never its path, query or user info).
fn host_and_port(url: &str) -> Option<(String, u16)> {
    let url = url::Url::parse(url).ok()?;
    Some((url.host_str()?.to_owned(), url.port_or_known_default()?))
}

#[cfg(feature = "otel")]
mod otel {
    use std::sync::Arc;

    use opentelemetry::{
        InstrumentationScope, KeyValue, StringValue, Value,
        metrics::{Counter, Histogram},
    };

    use super::{Binding, Finished};

    /// The buckets the conventions advise for `mcp.client.operation.duration`, in seconds.
    pub(super) const DURATION_BUCKETS: [f64; 14] = [
        0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
    ];

    /// An attribute whose string is shared, so that copying it per call copies no text.
    fn shared(key: &'static str, value: &str) -> KeyValue {
        KeyValue::new(
            key,
            Value::String(StringValue::from(Arc::<str>::from(value))),
        )
    }

    /// A binding's metric attributes, made once: `brain.tool` for the calls counter; the
    /// conventions' attributes of the duration histogram (MCP bindings only).
    #[derive(Debug, Clone, Default)]
    pub(super) struct BindingAttributes {
        tool: Option<KeyValue>,
        duration: Vec<KeyValue>,
    }

    impl BindingAttributes {
        pub(super) fn of(name: &str, binding: &Binding) -> Self {
            let mut duration = Vec::new();
            if let Some(mcp_tool) = &binding.mcp_tool {
                duration.extend([
                    KeyValue::new("mcp.method.name", "tools/call"),
                    KeyValue::new("gen_ai.operation.name", "execute_tool"),
                    shared("gen_ai.tool.name", mcp_tool),
                    KeyValue::new("network.transport", binding.transport),
                ]);
                if let Some((address, port)) = &binding.server {
                    duration.extend([
                        KeyValue::new("network.protocol.name", "http"),
                        shared("server.address", address),
                        KeyValue::new("server.port", i64::from(*port)),
                    ]);
                }
            }
            Self {
                tool: Some(shared("brain.tool", name)),
                duration,
            }
        }
    }

    #[derive(Debug)]
    pub(super) struct Instruments {
        duration: Histogram<f64>,
        calls: Counter<u64>,
    }

    impl Instruments {
        pub(super) fn new() -> Self {
            let meter = opentelemetry::global::meter_with_scope(
                InstrumentationScope::builder("brain-tools")
                    .with_version(env!("CARGO_PKG_VERSION"))
                    .with_schema_url("https://opentelemetry.io/schemas/1.41.1")
                    .build(),
            );
            Self {
                duration: meter
                    .f64_histogram("mcp.client.operation.duration")
                    .with_unit("s")
                    .with_description(
                        "The duration of the MCP request or notification as observed on the sender from the time it was sent until the response or ack is received.",
                    )
                    .with_boundaries(DURATION_BUCKETS.to_vec())
                    .build(),
                calls: meter
                    .u64_counter("brain.tool.calls")
                    .with_unit("{call}")
                    .with_description("Tool calls, by tool, outcome and error kind")
                    .build(),
            }
        }

        pub(super) fn record(
            &self,
            binding: Option<&Binding>,
            finished: &Finished<'_>,
            error_type: Option<&str>,
        ) {
            let error = finished.result.error.as_ref();
            let mut calls = Vec::with_capacity(4);
            // A tool the host does not have is not named: the model chose the name.
            calls.push(
                binding
                    .and_then(|binding| binding.metric.tool.clone())
                    .unwrap_or_else(|| KeyValue::new("brain.tool", "_OTHER")),
            );
            calls.push(KeyValue::new(
                "brain.outcome",
                if error.is_some() { "error" } else { "ok" },
            ));
            if let Some(error) = error {
                calls.push(KeyValue::new("brain.error.kind", error.kind.as_str()));
                calls.push(KeyValue::new("brain.delivery", error.delivery.as_str()));
            }
            self.calls.add(1, &calls);
            // The conventions' histogram is for MCP operations: only calls that went to
            // the MCP client (not those refused before: unknown tool, invalid arguments,
            // no token).
            let Some(binding) =
                binding.filter(|binding| finished.sent && !binding.metric.duration.is_empty())
            else {
                return;
            };
            let mut attributes = Vec::with_capacity(binding.metric.duration.len() + 3);
            attributes.extend(binding.metric.duration.iter().cloned());
            if let Some(version) = finished.report.protocol_version() {
                attributes.push(KeyValue::new("mcp.protocol.version", version));
            }
            if let Some(error_type) = error_type {
                attributes.push(KeyValue::new("error.type", error_type.to_owned()));
            }
            if let Some(code) = finished.report.rpc_error_code() {
                attributes.push(KeyValue::new("rpc.response.status_code", code.to_string()));
            }
            self.duration
                .record(finished.elapsed.as_secs_f64(), &attributes);
        }
    }
}
