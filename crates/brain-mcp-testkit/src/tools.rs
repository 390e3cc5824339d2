//! The scripted tools and the rmcp [`ServerHandler`] that serves them, the same over HTTP and stdio.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    ElicitRequest, ElicitRequestParams, GetTaskParams, GetTaskResult, Implementation, InputRequest,
    InputRequests, InputRequiredResult, JsonObject, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProtocolVersion, Resource, ResourceContents, ServerCapabilities,
    ServerConfig, ServerRequest, Tool, UpdateTaskParams,
};
use rmcp::service::{PeerRequestOptions, RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::counters::Stats;
use crate::options::Era;
use crate::tasks::{Script, Tasks};

/// The scripted tools every test server lists (besides the generated `gen_NNNN` ones).
const TOOL_NAMES: &[&str] = &[
    "echo",
    "progress",
    "image",
    "structured",
    "bad_structured",
    "error",
    "sleep",
    "big",
    "resource_mix",
    "ask",
    "progress_after_result",
    "drop_mid_stream",
    "hang",
];

/// The names of the scripted tools, in the order `tools/list` gives them (generated tools come after).
pub fn tool_names() -> &'static [&'static str] {
    TOOL_NAMES
}

/// A valid 1x1 PNG.
pub(crate) const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
/// A valid WAV file: 8 samples of silence, 8 kHz, 8 bit, mono.
const WAV_BASE64: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";
/// Text of the `error` tool.
const ERROR_TEXT: &str = "the tool failed on purpose";
/// Upper bound for `big.bytes`, so that a typo cannot exhaust memory.
const MAX_BIG_BYTES: u64 = 256 << 20;

/// State shared by everything one server runs: counters, the tool list, options.
#[derive(Debug)]
pub(crate) struct Kit {
    pub(crate) stats: Arc<Stats>,
    pub(crate) era: Era,
    pub(crate) tools: Vec<Tool>,
    pub(crate) page_size: Option<usize>,
    /// Cancelled when the server stops: every waiting handler ends.
    pub(crate) shutdown: CancellationToken,
    /// The bearer check of a protected server (HTTP only).
    pub(crate) bearers: Option<crate::bearer::Bearers>,
    /// The tasks of the task tools.
    pub(crate) tasks: Tasks,
    /// Legacy era: `server/discover` is held open, never answered.
    pub(crate) hold_discover: bool,
}

impl Kit {
    pub(crate) fn new(
        era: Era,
        extra_tools: usize,
        page_size: Option<usize>,
        stats: Stats,
    ) -> Self {
        Self {
            stats: Arc::new(stats),
            era,
            tools: catalog(extra_tools),
            page_size: page_size.filter(|&n| n > 0),
            shutdown: CancellationToken::new(),
            bearers: None,
            tasks: Tasks::default(),
            hold_discover: false,
        }
    }

    /// Lists the official conformance suite's tools too (after the scripted ones, before
    /// the generated ones) and answers their calls.
    pub(crate) fn with_conformance_tools(mut self, on: bool) -> Self {
        if on {
            let generated = self.tools.split_off(TOOL_NAMES.len());
            self.tools.extend(crate::conformance::catalog());
            self.tools.extend(generated);
        }
        self
    }

    /// Stops everything the server runs: waiting handlers and tasks end.
    pub(crate) fn stop(&self) {
        self.shutdown.cancel();
        self.tasks.shutdown();
    }
}

/// Signals between the HTTP middleware and a `drop_mid_stream` handler, carried in the request's extensions.
#[derive(Clone, Debug, Default)]
pub(crate) struct DropSignal {
    /// The handler has sent all its progress notifications.
    pub(crate) sent: Arc<Notify>,
    /// The middleware has dropped the connection: the handler may end.
    pub(crate) dropped: Arc<Notify>,
}

fn schema(value: Value) -> Arc<JsonObject> {
    match value {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("tool schemas are JSON objects"),
    }
}

fn weather_schema() -> Arc<JsonObject> {
    schema(json!({
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "temperature": {"type": "number"},
            "conditions": {"type": "string"}
        },
        "required": ["city", "temperature", "conditions"]
    }))
}

fn integer(description: &str) -> Value {
    json!({"type": "integer", "minimum": 0, "description": description})
}

fn no_arguments() -> Arc<JsonObject> {
    schema(json!({"type": "object", "properties": {}}))
}

/// Every tool a server lists: the scripted ones, then `extra` generated ones.
fn catalog(extra: usize) -> Vec<Tool> {
    let mut tools = vec![
        Tool::new(
            "echo",
            "Returns the message as text.",
            schema(json!({
                "type": "object",
                "properties": {"message": {"type": "string", "description": "Text to return."}},
                "required": ["message"]
            })),
        ),
        Tool::new(
            "progress",
            "Sends `steps` progress notifications `delay_ms` apart, then returns \"done\".",
            schema(json!({
                "type": "object",
                "properties": {
                    "steps": integer("Number of progress notifications (default 3)."),
                    "delay_ms": integer("Pause between notifications in milliseconds (default 10).")
                }
            })),
        ),
        Tool::new("image", "Returns a 1x1 PNG image.", no_arguments()),
        Tool::new(
            "structured",
            "Returns the weather as structured content and as its JSON text.",
            schema(json!({
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City (default Berlin)."}}
            })),
        )
        .with_raw_output_schema(weather_schema()),
        Tool::new(
            "bad_structured",
            "Declares the weather output schema but returns structured content that violates it.",
            no_arguments(),
        )
        .with_raw_output_schema(weather_schema()),
        Tool::new("error", "Fails: isError true.", no_arguments()),
        Tool::new(
            "sleep",
            "Sleeps `ms` milliseconds (ends early when cancelled), then returns \"slept\".",
            schema(json!({
                "type": "object",
                "properties": {"ms": integer("How long to sleep.")},
                "required": ["ms"]
            })),
        ),
        Tool::new(
            "big",
            "Returns one text block of exactly `bytes` ASCII bytes.",
            schema(json!({
                "type": "object",
                "properties": {"bytes": integer("Size of the text block.")},
                "required": ["bytes"]
            })),
        ),
        Tool::new(
            "resource_mix",
            "Returns an embedded text resource, an embedded PNG blob, a resource link and audio.",
            no_arguments(),
        ),
        Tool::new(
            "ask",
            "Asks the client for input mid-call (elicitation), ignores the answer, returns \"asked\".",
            no_arguments(),
        ),
        Tool::new(
            "progress_after_result",
            "Returns \"done\"; the transport then sends one more progress notification after the result.",
            no_arguments(),
        ),
        Tool::new(
            "drop_mid_stream",
            "Sends `after_progress` progress notifications, then the connection drops (stdio: the process exits).",
            schema(json!({
                "type": "object",
                "properties": {"after_progress": integer("Progress notifications before the drop.")},
                "required": ["after_progress"]
            })),
        ),
        Tool::new("hang", "Never returns, until cancelled.", no_arguments()),
    ];
    debug_assert_eq!(tools.len(), TOOL_NAMES.len());
    tools.extend((0..extra).map(generated_tool));
    tools
}

fn generated_tool(i: usize) -> Tool {
    let name = format!("gen_{i:04}");
    let field = format!("field_{i:04}");
    let kind = ["string", "integer", "boolean"][i % 3];
    Tool::new(
        name.clone(),
        format!("Generated tool {i} for discovery tests: echoes its arguments as JSON."),
        schema(json!({
            "type": "object",
            "properties": {
                field.clone(): {"type": kind, "description": format!("Argument of {name}.")},
                "limit": {"type": "integer", "minimum": 1, "description": "At most this many results (optional)."}
            },
            "required": [field]
        })),
    )
}

fn text(s: impl Into<String>) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResult::success(vec![ContentBlock::text(s)]).into())
}

fn cancelled() -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResult::error(vec![ContentBlock::text("cancelled")]).into())
}

/// `bytes` ASCII letters, cycling through the alphabet so that truncation shows.
pub(crate) fn ascii_text(bytes: usize) -> String {
    (b'a'..=b'z').cycle().take(bytes).map(char::from).collect()
}

/// Counts a running handler in `calls_in_flight` until dropped.
struct InFlight<'a>(&'a Stats);

impl<'a> InFlight<'a> {
    fn new(stats: &'a Stats) -> Self {
        stats.update(|c| c.calls_in_flight += 1);
        Self(stats)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0
            .update(|c| c.calls_in_flight = c.calls_in_flight.saturating_sub(1));
    }
}

/// The rmcp handler. rmcp builds one per session (legacy) or per request (stateless); all share the [`Kit`].
#[derive(Clone, Debug)]
pub(crate) struct Testkit {
    kit: Arc<Kit>,
}

impl Testkit {
    pub(crate) fn new(kit: Arc<Kit>) -> Self {
        Self { kit }
    }

    /// Runs `work` until it ends, the request is cancelled (counted), or the server stops.
    async fn cancellable<T>(
        &self,
        cx: &RequestContext<RoleServer>,
        work: impl Future<Output = T>,
    ) -> Option<T> {
        tokio::select! {
            biased;
            () = cx.ct.cancelled() => {
                self.kit.stats.update(|c| c.handler_cancellations += 1);
                None
            }
            () = self.kit.shutdown.cancelled() => None,
            out = work => Some(out),
        }
    }

    async fn progress(
        &self,
        cx: &RequestContext<RoleServer>,
        steps: u64,
        delay: Duration,
    ) -> Result<CallToolResponse, ErrorData> {
        let token = cx.meta.get_progress_token();
        let work = async {
            for i in 1..=steps {
                if i > 1 {
                    tokio::time::sleep(delay).await;
                }
                if let Some(token) = &token {
                    let param = ProgressNotificationParam::new(token.clone(), i as f64)
                        .with_total(steps as f64)
                        .with_message(format!("step {i}"));
                    let _ = cx.peer.notify_progress(param).await;
                }
            }
        };
        match self.cancellable(cx, work).await {
            Some(()) => text("done"),
            None => cancelled(),
        }
    }

    async fn drop_mid_stream(
        &self,
        cx: &RequestContext<RoleServer>,
        after: u64,
    ) -> Result<CallToolResponse, ErrorData> {
        let token = cx.meta.get_progress_token();
        let signal = cx
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<DropSignal>())
            .cloned()
            .unwrap_or_default();
        let work = async {
            for i in 1..=after {
                if let Some(token) = &token {
                    let param = ProgressNotificationParam::new(token.clone(), i as f64)
                        .with_message(format!("step {i}"));
                    let _ = cx.peer.notify_progress(param).await;
                }
            }
            signal.sent.notify_one();
            // HTTP: the middleware drops the connection and then lets us go. stdio: the process exits.
            signal.dropped.notified().await;
        };
        let _ = self.cancellable(cx, work).await;
        Ok(CallToolResult::error(vec![ContentBlock::text(
            "the stream should have been dropped",
        )])
        .into())
    }

    async fn ask(
        &self,
        request: &CallToolRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let modern = cx
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        if modern {
            // 2026-07-28 forbids server-to-client requests: ask through an input_required result
            // (SEP-2322) and finish when the client retries with its answer, whatever it is.
            if request.input_responses.is_some() || request.request_state.is_some() {
                return text("asked");
            }
            let mut requests = InputRequests::new();
            requests.insert(
                "confirm".to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(elicit_params())),
            );
            return Ok(InputRequiredResult::new(Some(requests), Some("ask-1".into())).into());
        }
        let work = async {
            let sent = cx
                .peer
                .send_request_with_option(
                    ServerRequest::ElicitRequest(ElicitRequest::new(elicit_params())),
                    PeerRequestOptions::with_timeout(Duration::from_secs(10)),
                )
                .await;
            if let Ok(handle) = sent {
                // The answer (or error) does not matter.
                let _ = handle.await_response().await;
            }
        };
        match self.cancellable(cx, work).await {
            Some(()) => text("asked"),
            None => cancelled(),
        }
    }
}

pub(crate) fn elicit_params() -> ElicitRequestParams {
    let requested_schema = serde_json::from_value(json!({
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"]
    }))
    .unwrap_or_else(|_| unreachable!("a valid elicitation schema"));
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: "Proceed?".to_owned(),
        requested_schema,
    }
}

fn u64_arg(args: &JsonObject, key: &str, default: Option<u64>) -> Result<u64, ErrorData> {
    match args.get(key) {
        Some(v) => v.as_u64().ok_or_else(|| {
            ErrorData::invalid_params(format!("{key} must be a non-negative integer"), None)
        }),
        None => {
            default.ok_or_else(|| ErrorData::invalid_params(format!("{key} is required"), None))
        }
    }
}

impl Testkit {
    /// `task` and `maybe_task`: a task when the client declares the extension on the call
    /// (2026-07-28); else `task` is refused as the era refuses it, and `maybe_task` answers
    /// at once.
    async fn task(
        &self,
        always: bool,
        args: &JsonObject,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let script = Script::parse(args)?;
        let modern = cx
            .protocol_version()
            .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        let declared = modern
            && cx
                .client_capabilities()
                .is_some_and(|capabilities| capabilities.supports_tasks());
        match (declared, always, modern) {
            (true, _, _) => {
                self.kit
                    .tasks
                    .start(script, Arc::clone(&self.kit.stats), cx)
                    .await
            }
            (false, false, _) => text("done"),
            // A 2025-11-25 server refuses a tool whose execution.taskSupport is "required"
            // when the call is not task-augmented.
            (false, true, false) => Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "Tool task requires task-augmented execution (taskSupport: required)",
                None,
            )),
            (false, true, true) => Err(ErrorData::missing_required_client_capability(
                rmcp::model::ClientCapabilities::builder()
                    .enable_tasks()
                    .build(),
            )),
        }
    }
}

impl ServerHandler for Testkit {
    fn get_info(&self) -> ServerConfig {
        // protocol_version stays at rmcp's default: negotiation caps it to supported_protocol_versions.
        // The tasks extension is defined for 2026-07-28 only.
        let capabilities = ServerCapabilities::builder().enable_tools();
        let capabilities = match self.kit.era {
            Era::Legacy => capabilities.build(),
            _ => capabilities.enable_tasks().build(),
        };
        ServerConfig::new(capabilities).with_server_info(Implementation::new(
            "brain-mcp-testkit",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.kit.tasks.get(&request.task_id).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.kit
            .tasks
            .update(&request.task_id, request.input_responses)
            .await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.kit.tasks.cancel(&request.task_id).await
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        self.kit.era.supported_versions()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = &self.kit.tools;
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|&n| n <= tools.len())
                .ok_or_else(|| ErrorData::invalid_params("invalid cursor", None))?,
        };
        let end = match self.kit.page_size {
            Some(size) => start.saturating_add(size).min(tools.len()),
            None => tools.len(),
        };
        let mut page = ListToolsResult::with_all_items(tools[start..end].to_vec());
        if end < tools.len() {
            page.next_cursor = Some(end.to_string());
        }
        Ok(page)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let _in_flight = InFlight::new(&self.kit.stats);
        let empty = JsonObject::new();
        let args = request.arguments.as_ref().unwrap_or(&empty);
        match request.name.as_ref() {
            "echo" => match args.get("message").and_then(Value::as_str) {
                Some(message) => text(message),
                None => Err(ErrorData::invalid_params("message must be a string", None)),
            },
            "progress" => {
                let steps = u64_arg(args, "steps", Some(3))?.min(100_000);
                let delay = Duration::from_millis(u64_arg(args, "delay_ms", Some(10))?);
                self.progress(&cx, steps, delay).await
            }
            "image" => Ok(CallToolResult::success(vec![ContentBlock::image(
                PNG_BASE64,
                "image/png",
            )])
            .into()),
            "structured" => {
                let city = args.get("city").and_then(Value::as_str).unwrap_or("Berlin");
                let weather = json!({"city": city, "temperature": 21.5, "conditions": "sunny"});
                // Content is exactly the serialized structured content.
                Ok(CallToolResult::structured(weather).into())
            }
            "bad_structured" => {
                Ok(CallToolResult::structured(json!({"temperature": "hot"})).into())
            }
            "error" => Ok(CallToolResult::error(vec![ContentBlock::text(ERROR_TEXT)]).into()),
            "sleep" => {
                let ms = u64_arg(args, "ms", None)?;
                match self
                    .cancellable(&cx, tokio::time::sleep(Duration::from_millis(ms)))
                    .await
                {
                    Some(()) => text("slept"),
                    None => cancelled(),
                }
            }
            "big" => {
                let bytes = u64_arg(args, "bytes", None)?;
                if bytes > MAX_BIG_BYTES {
                    return Err(ErrorData::invalid_params(
                        format!("bytes must be at most {MAX_BIG_BYTES}"),
                        None,
                    ));
                }
                text(ascii_text(bytes as usize))
            }
            "resource_mix" => Ok(CallToolResult::success(resource_mix()).into()),
            "ask" => self.ask(&request, &cx).await,
            "progress_after_result" => text("done"),
            "drop_mid_stream" => {
                let after = u64_arg(args, "after_progress", None)?.min(100_000);
                self.drop_mid_stream(&cx, after).await
            }
            "hang" => {
                let _ = self.cancellable(&cx, std::future::pending::<()>()).await;
                cancelled()
            }
            // Not listed (so listings stay as they were): tools that run as tasks, see
            // `tasks.rs`.
            "task" => self.task(true, args, &cx).await,
            "maybe_task" => self.task(false, args, &cx).await,
            name if crate::conformance::NAMES.contains(&name)
                && self.kit.tools.iter().any(|t| t.name == name) =>
            {
                crate::conformance::call(name, args, &cx)
                    .await
                    .unwrap_or_else(|| Err(ErrorData::internal_error("not a suite tool", None)))
            }
            name if name.starts_with("gen_") && self.kit.tools.iter().any(|t| t.name == name) => {
                text(Value::Object(args.clone()).to_string())
            }
            // Not listed: answers the call with the JSON-RPC error `code` (and `message`).
            "rpc_error" => {
                let code = args
                    .get("code")
                    .and_then(Value::as_i64)
                    .and_then(|code| i32::try_from(code).ok())
                    .unwrap_or(-32603);
                let message = args
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("scripted error")
                    .to_owned();
                Err(ErrorData::new(rmcp::model::ErrorCode(code), message, None))
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown tool: {other}"),
                None,
            )),
        }
    }
}

fn resource_mix() -> Vec<ContentBlock> {
    vec![
        ContentBlock::resource(ResourceContents::text(
            "an embedded text resource",
            "testkit://notes.txt",
        )),
        ContentBlock::resource(
            ResourceContents::blob(PNG_BASE64, "testkit://pixel.png").with_mime_type("image/png"),
        ),
        ContentBlock::resource_link(
            Resource::new("testkit://archive.bin", "archive.bin")
                .with_mime_type("application/octet-stream"),
        ),
        ContentBlock::audio(WAV_BASE64, "audio/wav"),
    ]
}

/// The progress notification that `progress_after_result` sends after its result.
pub(crate) fn late_progress(token: &Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": 1, "total": 1, "message": "after result"}
    })
}

/// The progress token of a raw `tools/call` message, if any.
pub(crate) fn raw_progress_token(message: &Value) -> Option<&Value> {
    message.pointer("/params/_meta/progressToken")
}

/// The tool name and `after_progress` of a raw `tools/call` message.
pub(crate) fn raw_call(message: &Value) -> Option<(&str, &Value)> {
    if message.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let params = message.get("params")?;
    Some((params.get("name")?.as_str()?, params))
}

/// `after_progress` of a raw `drop_mid_stream` call.
pub(crate) fn raw_after_progress(params: &Value) -> u64 {
    params
        .pointer("/arguments/after_progress")
        .and_then(Value::as_u64)
        .unwrap_or(0)
        .min(100_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_matches_the_names_and_every_schema_is_an_object() {
        let tools = catalog(3);
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(&names[..TOOL_NAMES.len()], TOOL_NAMES);
        assert_eq!(
            &names[TOOL_NAMES.len()..],
            ["gen_0000", "gen_0001", "gen_0002"]
        );
        for tool in &tools {
            assert_eq!(
                tool.input_schema.get("type"),
                Some(&json!("object")),
                "{}",
                tool.name
            );
        }
        let generated = TOOL_NAMES.len();
        assert_ne!(
            tools[generated].input_schema,
            tools[generated + 1].input_schema
        );
    }

    #[test]
    fn the_suites_tools_come_after_the_scripted_ones_and_before_the_generated_ones() {
        let kit = Kit::new(Era::Both, 2, None, Stats::default()).with_conformance_tools(true);
        let names: Vec<&str> = kit.tools.iter().map(|t| t.name.as_ref()).collect();
        let (scripted, rest) = names.split_at(TOOL_NAMES.len());
        let (suite, generated) = rest.split_at(crate::conformance::NAMES.len());
        assert_eq!(scripted, TOOL_NAMES);
        assert_eq!(suite, crate::conformance::NAMES);
        assert_eq!(generated, ["gen_0000", "gen_0001"]);
        let without = Kit::new(Era::Both, 0, None, Stats::default()).with_conformance_tools(false);
        assert_eq!(without.tools.len(), TOOL_NAMES.len());
    }

    #[test]
    fn big_text_has_the_exact_length() {
        assert_eq!(ascii_text(0), "");
        assert_eq!(ascii_text(28), "abcdefghijklmnopqrstuvwxyzab");
        assert!(ascii_text(100_000).is_ascii());
    }
}
