//! The MCP server itself, on rmcp's server side: `tools/list` is the caller's tenant's
//! bindings as configured, `tools/call` is a [`ToolHost`] call (the same five steps),
//! whose progress reaches the caller under its own progress token and whose result is
//! the upstream MCP result as the server sent it.

use std::{
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Instant,
};

use brain_tools::{CallScope, CancellationToken, ErrorKind, ResultEvent, ToolEvent, ToolHost};
use brain_tools_config::ToolBinding;
use rmcp::{
    ErrorData, RoleServer, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
        ServerConfig, Tool,
    },
    service::RequestContext,
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tracing::Instrument;

use crate::{Caller, limits::Limits, results, serving::Serving};

/// The key of the error object in an error result's `_meta`.
pub const ERROR_META_KEY: &str = "brain.dev/error";

/// What every handler shares: the host, the bindings, the limits, the drain.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) host: ToolHost,
    pub(crate) tools: Vec<ToolBinding>,
    pub(crate) limits: Limits,
    /// Cancelled when a drain runs out of time: every call still running is cancelled.
    pub(crate) abort: CancellationToken,
    /// Set when the gateway drains: new calls are refused.
    pub(crate) draining: std::sync::atomic::AtomicBool,
    pub(crate) calls_in_flight: AtomicUsize,
    /// Notified when the last call in flight ends.
    pub(crate) idle: tokio::sync::Notify,
}

/// The MCP server of one connection (stdio) or one session or request (HTTP).
#[derive(Debug, Clone)]
pub(crate) struct Handler {
    pub(crate) shared: Arc<Shared>,
    /// The tenant of a stdio gateway, which serves one.
    pub(crate) tenant: Option<String>,
}

/// Cancelled when the caller's HTTP response is dropped before its end (the connection
/// closed): put into the request's extensions by the HTTP layer.
#[derive(Debug, Clone)]
pub(crate) struct Disconnect(pub(crate) CancellationToken);

/// The caller's MCP session id, as the HTTP layer saw it.
#[derive(Debug, Clone)]
pub(crate) struct CallerSession(pub(crate) Option<String>);

/// Counts a call in flight for as long as it lives.
struct InFlight<'a>(&'a Shared);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.0.calls_in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Handler {
    /// The caller: the tenant the HTTP layer found in the request's credentials, or the
    /// stdio gateway's own.
    fn caller(&self, cx: &RequestContext<RoleServer>) -> Option<Caller> {
        if let Some(tenant) = &self.tenant {
            return Some(Caller::local(tenant));
        }
        cx.extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .cloned()
    }

    fn part<T: Clone + Send + Sync + 'static>(cx: &RequestContext<RoleServer>) -> Option<T> {
        cx.extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<T>())
            .cloned()
    }

    /// The tenant of the request being served, outside a request context: the stdio
    /// gateway's, or the HTTP caller's ([`Serving`]).
    fn current_tenant(&self) -> Option<String> {
        self.tenant
            .clone()
            .or_else(|| Serving::with(|serving| serving.caller.tenant.clone()))
    }

    /// The tenant's bindings, in config order.
    fn bindings_for<'a>(&'a self, tenant: &'a str) -> impl Iterator<Item = &'a ToolBinding> {
        self.shared
            .tools
            .iter()
            .filter(move |binding| binding.tenants.iter().any(|t| t == tenant))
    }

    /// The session id sent upstream for a caller: opaque, stable for one caller session
    /// on every replica, never the caller's own id (which a third-party server could
    /// replay; a hash of a sealed, random id says nothing of it).
    fn upstream_session(tenant: &str, caller_session: Option<&str>) -> String {
        let Some(session) = caller_session else {
            return "gateway".to_owned();
        };
        let mut hash = Sha256::new();
        hash.update(tenant.as_bytes());
        hash.update([0]);
        hash.update(session.as_bytes());
        let digest = hash.finalize();
        let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
        format!("gw-{hex}")
    }
}

/// A binding as the MCP tool its callers see: its name, description and schemas, as
/// configured.
fn tool(binding: &ToolBinding) -> Tool {
    let tool = Tool::new_with_raw(
        binding.name.clone(),
        Some(binding.description.clone().into()),
        Arc::new(binding.input_schema.clone()),
    );
    match &binding.output_schema {
        Some(schema) => tool.with_raw_output_schema(Arc::new(schema.clone())),
        None => tool,
    }
}

fn unknown_tool(name: &str) -> ErrorData {
    ErrorData::invalid_params(format!("Unknown tool: {name}"), None)
}

fn new_call_id() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 12];
    let _ = ring::rand::SystemRandom::new().fill(&mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("gw-{hex}")
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build()).with_server_info(
            Implementation::new("brain-mcp-gateway", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = self
            .caller(&cx)
            .ok_or_else(|| ErrorData::internal_error("no caller", None))?;
        let tools = self.bindings_for(&caller.tenant).map(tool).collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    /// A tool of the caller's tenant, for rmcp to check a call's `Mcp-Param-*` headers
    /// against its input schema (SEP-2243) before the call runs; a tool the tenant may
    /// not use is no tool here either (its headers go unchecked, and the call is refused
    /// as an unknown tool).
    fn get_tool(&self, name: &str) -> Option<Tool> {
        let tenant = self.current_tenant()?;
        self.bindings_for(&tenant)
            .find(|binding| binding.name == name)
            .map(tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = self
            .caller(&cx)
            .ok_or_else(|| ErrorData::internal_error("no caller", None))?;
        let tool = request.name.to_string();
        // A tool the tenant may not use answers as a tool that does not exist.
        if !self.bindings_for(&caller.tenant).any(|b| b.name == tool) {
            return Err(unknown_tool(&tool));
        }
        let shared = &self.shared;
        if shared.draining.load(Ordering::Acquire) {
            return Ok(results::refused(
                &tool,
                "the gateway is shutting down; retry the call, another replica serves it",
                1,
            )
            .into());
        }
        let Some(_permit) = shared.limits.start_call(&caller.tenant) else {
            return Ok(results::refused(
                &tool,
                "the gateway is overloaded: this tenant has the most calls running that it may",
                1,
            )
            .into());
        };
        shared.calls_in_flight.fetch_add(1, Ordering::AcqRel);
        let _in_flight = InFlight(shared);

        // Cancelled by the caller (`notifications/cancelled`, its session or stdin
        // closing), by its connection closing, or by a drain that ran out of time.
        let cancel = cx.ct.child_token();
        let mut watchers = Vec::new();
        for token in [
            Self::part::<Disconnect>(&cx).map(|d| d.0),
            Some(shared.abort.clone()),
        ]
        .into_iter()
        .flatten()
        {
            let cancel = cancel.clone();
            watchers.push(tokio::spawn(async move {
                tokio::select! {
                    () = token.cancelled() => cancel.cancel(),
                    () = cancel.cancelled() => {}
                }
            }));
        }

        let caller_session = Self::part::<CallerSession>(&cx).and_then(|s| s.0);
        let scope = CallScope::new(
            &caller.tenant,
            Self::upstream_session(&caller.tenant, caller_session.as_deref()),
            new_call_id(),
        );
        let call_id = scope.call_id.clone();

        // Progress reaches the caller under its own token, in order, all before the
        // result.
        let (progress_tx, mut progress_rx) = tokio::sync::mpsc::unbounded_channel();
        let forward = cx.meta.get_progress_token().map(|token| {
            let peer = cx.peer.clone();
            tokio::spawn(async move {
                while let Some((progress, total, message)) = progress_rx.recv().await {
                    let mut param = ProgressNotificationParam::new(token.clone(), progress);
                    if let Some(total) = total {
                        param = param.with_total(total);
                    }
                    if let Some(message) = message {
                        param = param.with_message(message);
                    }
                    if peer.notify_progress(param).await.is_err() {
                        break;
                    }
                }
            })
        });
        let sink = move |event: ToolEvent| {
            if let ToolEvent::Progress(progress) = event {
                let _ = progress_tx.send((progress.progress, progress.total, progress.message));
            }
        };

        let span = crate::telemetry::server_span(&tool, &caller);
        #[cfg(feature = "otel")]
        {
            let headers = cx
                .extensions
                .get::<http::request::Parts>()
                .map(|parts| &parts.headers);
            crate::telemetry::continue_trace(&span, headers, &cx.meta.0);
        }
        let started = Instant::now();
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let result = shared
            .host
            .call(scope, &tool, arguments)
            .cancel(cancel.clone())
            .sink(Arc::new(sink))
            .mcp_result()
            .into_future()
            .instrument(span.clone())
            .await;
        if let Some(error) = &result.error {
            crate::telemetry::failed(&span, error.kind.as_str());
        }
        // The sink went with the call: the forwarder ends once it sent what is left.
        if let Some(forward) = forward {
            let _ = forward.await;
        }
        for watcher in watchers {
            watcher.abort();
        }
        audit(&caller, &tool, &call_id, &result, started);
        if matches!(&result.error, Some(error) if error.kind == ErrorKind::UnknownTool) {
            return Err(unknown_tool(&tool));
        }
        Ok(results::to_mcp(result).into())
    }
}

/// One line per call for the operator: who, what, how it ended; never arguments,
/// results or tokens.
fn audit(caller: &Caller, tool: &str, call_id: &str, result: &ResultEvent, started: Instant) {
    let (outcome, delivery) = match &result.error {
        Some(error) => (error.kind.as_str(), error.delivery.as_str()),
        None => ("ok", "delivered"),
    };
    tracing::info!(
        target: "brain_mcp_gateway::audit",
        tenant = %caller.tenant,
        subject = caller.subject.as_deref().unwrap_or(""),
        tool = %tool,
        call_id = %call_id,
        outcome,
        delivery,
        duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "call"
    );
}

/// An error result as MCP (used by `results`).
pub(crate) fn error_result(text: String, error: Value) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    let mut meta = rmcp::model::MetaObject::default();
    meta.0.insert(ERROR_META_KEY.to_owned(), error);
    result.meta = Some(meta);
    result
}

/// The error object under [`ERROR_META_KEY`].
pub(crate) fn error_object(kind: &str, delivery: &str, retryable: bool, message: &str) -> Value {
    json!({"kind": kind, "delivery": delivery, "retryable": retryable, "message": message})
}
