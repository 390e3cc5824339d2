//! The public types of a call and a discovery: what goes in, what comes out.

use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{endpoint::Endpoint, grant::Authorization, progress::ProgressSender};

/// A JSON object, keys in document order.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// Which protocol era to speak to HTTP servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum EraPreference {
    /// 2026-07-28 when the server supports it (learned once per server with
    /// `server/discover`, then cached), else a legacy session per call.
    #[default]
    Auto,
    /// Always a legacy session per call (`initialize` ... `DELETE`).
    Legacy,
    /// Always 2026-07-28; a server without it is an error.
    Modern,
}

/// How server-to-client requests (elicitation, sampling, roots) are answered: during a
/// call, in a 2026-07-28 `input_required` round, and when a call's task asks for input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ServerRequestPolicy {
    /// Answer every server request with an error; the call goes on.
    #[default]
    Reject,
    /// Accept form elicitations with the defaults of the requested schema (and declare
    /// the elicitation capability); reject the rest.
    AcceptElicitationDefaults,
}

/// The protocol era that served a call (or that a binding pins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Era {
    /// The initialize lifecycle (protocol up to 2025-11-25): a session per call.
    Legacy,
    /// The 2026-07-28 stateless lifecycle: one self-contained request per call.
    Modern,
}

impl Era {
    /// The era's newest protocol version: `2025-11-25` or `2026-07-28`, as a binding's
    /// `era` field names it.
    pub fn protocol_version(self) -> &'static str {
        match self {
            Era::Legacy => "2025-11-25",
            Era::Modern => "2026-07-28",
        }
    }
}

/// One `tools/call`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CallRequest {
    /// The server.
    pub endpoint: Endpoint,
    /// The tool's name on the server.
    pub tool: String,
    /// The arguments.
    pub arguments: JsonObject,
    /// Entries added to `params._meta` (for example `brain.dev/scope`).
    pub meta: JsonObject,
    /// The `progressToken` on the wire (the call ID).
    pub progress_token: String,
    /// When the whole call (open, call, stream, return) must be over.
    pub deadline: Instant,
    /// Bound on the bytes of the call's response as received.
    pub max_output_bytes: usize,
    /// Cancels the call.
    pub cancel: CancellationToken,
    /// Where progress notifications go, in wire order, all before the call returns.
    pub progress: Option<ProgressSender>,
    /// The tool's input schema marks arguments to mirror in `Mcp-Param-*` headers
    /// (`x-mcp-header`, 2026-07-28): the server's tool list is read once per shared
    /// client so that rmcp knows the annotations.
    pub param_headers: bool,
    /// The tenant and OAuth grant whose token the call carries (HTTP servers only);
    /// `None`: the endpoint's bearer, if any.
    pub authorization: Option<Authorization>,
    /// Declares the tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28) on the
    /// call, so that the server may answer it with a task, which the call then follows
    /// to its end within its deadline (default true). Off: the server must answer at once,
    /// and a tool that only runs as a task is refused (`-32021`).
    pub tasks: bool,
    /// What the transport saw of the call (for telemetry), filled in as the call runs.
    pub report: CallReport,
    /// The era the call's binding pins (its `era` field, as discovery found it): the
    /// call speaks it without probing, and a server that no longer speaks it fails the
    /// call (`protocol`, `not_sent`, naming the field). A client whose options force an
    /// era (`ClientOptions::era`) speaks that one instead.
    /// `None`: the client's preference.
    pub era: Option<Era>,
    /// The one resend the call's `tools/call` may get, shared by every attempt of the
    /// call (clones of the request share it).
    pub(crate) resend: ResendBudget,
    /// The trace context of the calling span, as `_meta` entries (SEP-414), taken when
    /// the call starts; empty without the `otel` feature.
    pub(crate) trace: JsonObject,
}

/// What the transport saw of one call on the wire, for telemetry: which context served
/// it, the protocol version and session, the JSON-RPC request id, the JSON-RPC error
/// code of a refusal, the bytes of its response. Filled in while the call runs; clones
/// share it, so the caller keeps one and reads it afterwards, whatever the outcome. It
/// holds nothing the call sent or received (no arguments, result or token).
#[derive(Debug, Clone, Default)]
pub struct CallReport(std::sync::Arc<std::sync::Mutex<Report>>);

#[derive(Debug, Clone, Default)]
struct Report {
    warm: Option<bool>,
    protocol_version: Option<String>,
    session_id: Option<String>,
    request_id: Option<String>,
    rpc_code: Option<i32>,
    http_status: Option<u16>,
    received: usize,
}

impl CallReport {
    /// An empty report.
    pub fn new() -> Self {
        Self::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut Report) -> T) -> T {
        f(&mut self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    /// Whether a warm context (opened before the call) served it; `None` when no
    /// context was taken, or the context is a shared 2026-07-28 client.
    pub fn warm(&self) -> Option<bool> {
        self.with(|report| report.warm)
    }

    /// The protocol version the call was made in (`2025-11-25`, `2026-07-28`, ...).
    pub fn protocol_version(&self) -> Option<String> {
        self.with(|report| report.protocol_version.clone())
    }

    /// The `Mcp-Session-Id` of the call's session (legacy HTTP servers that issue one).
    pub fn session_id(&self) -> Option<String> {
        self.with(|report| report.session_id.clone())
    }

    /// The JSON-RPC id of the call's `tools/call` request, once it was sent.
    pub fn request_id(&self) -> Option<String> {
        self.with(|report| report.request_id.clone())
    }

    /// The JSON-RPC error code the server answered the call with, if it did.
    pub fn rpc_error_code(&self) -> Option<i32> {
        self.with(|report| report.rpc_code)
    }

    /// The HTTP status that failed the call, if one did.
    pub fn http_status(&self) -> Option<u16> {
        self.with(|report| report.http_status)
    }

    /// The bytes of the call's response, as received.
    pub fn received_bytes(&self) -> usize {
        self.with(|report| report.received)
    }

    pub(crate) fn set_warm(&self, warm: Option<bool>) {
        self.with(|report| report.warm = warm);
    }

    pub(crate) fn set_protocol(&self, version: Option<String>, session_id: Option<String>) {
        self.with(|report| {
            report.protocol_version = version;
            report.session_id = session_id;
        });
    }

    pub(crate) fn set_request_id(&self, id: String) {
        self.with(|report| report.request_id = Some(id));
    }

    pub(crate) fn set_rpc_code(&self, code: i32) {
        self.with(|report| report.rpc_code = Some(code));
    }

    pub(crate) fn set_http_status(&self, status: Option<u16>) {
        self.with(|report| report.http_status = status);
    }

    pub(crate) fn add_received(&self, bytes: usize) {
        self.with(|report| report.received = report.received.saturating_add(bytes));
    }
}

/// The one resend a call's `tools/call` may ever get, whichever layer uses it: on a fresh
/// connection (it provably never left), on a fresh context (the warm one's session was
/// gone), or with a new token (the server refused it for want of authorization). Each is
/// a request the server did not run; together they are still one.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResendBudget(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl ResendBudget {
    /// Takes the resend: true when it was still there (and is now used).
    pub(crate) fn take(&self) -> bool {
        !self.0.swap(true, std::sync::atomic::Ordering::AcqRel)
    }
}

impl CallRequest {
    /// A call with no arguments, no extra `_meta`, a 1 MiB budget and no progress channel.
    pub fn new(
        endpoint: Endpoint,
        tool: impl Into<String>,
        progress_token: impl Into<String>,
        timeout: Duration,
    ) -> Self {
        Self {
            endpoint,
            tool: tool.into(),
            arguments: JsonObject::new(),
            meta: JsonObject::new(),
            progress_token: progress_token.into(),
            deadline: Instant::now() + timeout,
            max_output_bytes: 1_048_576,
            cancel: CancellationToken::new(),
            progress: None,
            param_headers: false,
            authorization: None,
            tasks: true,
            report: CallReport::default(),
            era: None,
            resend: ResendBudget::default(),
            trace: JsonObject::new(),
        }
    }

    /// Pins the protocol era of the call (see [`Self::era`]).
    pub fn era(mut self, era: Era) -> Self {
        self.era = Some(era);
        self
    }

    /// Lets the server run the call as a task (2026-07-28), or not (see [`Self::tasks`]).
    pub fn tasks(mut self, on: bool) -> Self {
        self.tasks = on;
        self
    }

    /// Where the transport reports what it saw of the call (keep a clone to read it).
    pub fn report(mut self, report: CallReport) -> Self {
        self.report = report;
        self
    }

    /// Authorizes the call with a tenant's OAuth grant: the token is obtained (or taken
    /// from the cache) when the call runs, and the call carries it as its bearer.
    pub fn authorization(mut self, authorization: Authorization) -> Self {
        self.authorization = Some(authorization);
        self
    }

    /// Sets the arguments.
    pub fn arguments(mut self, arguments: JsonObject) -> Self {
        self.arguments = arguments;
        self
    }

    /// Sets the extra `_meta` entries.
    pub fn meta(mut self, meta: JsonObject) -> Self {
        self.meta = meta;
        self
    }

    /// Sets the deadline.
    pub fn deadline(mut self, deadline: Instant) -> Self {
        self.deadline = deadline;
        self
    }

    /// Sets the byte budget.
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// Sets the cancellation token.
    pub fn cancel(mut self, cancel: CancellationToken) -> Self {
        self.cancel = cancel;
        self
    }

    /// Says whether the tool's schema has `x-mcp-header` annotations.
    pub fn param_headers(mut self, annotated: bool) -> Self {
        self.param_headers = annotated;
        self
    }

    /// Sets the progress channel.
    pub fn progress(mut self, progress: ProgressSender) -> Self {
        self.progress = Some(progress);
        self
    }
}

/// A call's result.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CallOutcome {
    /// The `CallToolResult` as the server sent it (`content`, `structuredContent`,
    /// `isError`, ...).
    pub result: Value,
    /// The era that served it.
    pub era: Era,
}

/// What to list, and within which bounds.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DiscoveryRequest {
    /// The server.
    pub endpoint: Endpoint,
    /// When discovery must be over (open, every page, close excluded).
    pub deadline: Instant,
    /// At most this many `tools/list` pages are read.
    pub max_pages: usize,
    /// Bound on the bytes of every `tools/list` answer together, as received
    /// ([`DEFAULT_DISCOVERY_BYTES`] by default).
    pub max_bytes: usize,
    /// Cancels discovery.
    pub cancel: CancellationToken,
    /// The tenant and OAuth grant whose token the listing carries (HTTP servers only).
    pub authorization: Option<Authorization>,
}

/// At most this many content blocks in one tool result: a result of many tiny blocks
/// costs memory out of proportion to its bytes. Past it, the call fails
/// (`output_too_large`, delivered).
pub const MAX_CONTENT_BLOCKS: usize = 1024;

/// At most this many tools in one discovery, every page together.
pub const MAX_LISTED_TOOLS: usize = 10_000;

/// The default bound on the bytes a discovery reads (32 MiB: some thousands of tools with
/// large schemas).
pub const DEFAULT_DISCOVERY_BYTES: usize = 32 * 1024 * 1024;

impl DiscoveryRequest {
    /// Discovery within `timeout`, at most 100 pages and [`DEFAULT_DISCOVERY_BYTES`].
    pub fn new(endpoint: Endpoint, timeout: Duration) -> Self {
        Self {
            endpoint,
            deadline: Instant::now() + timeout,
            max_pages: 100,
            max_bytes: DEFAULT_DISCOVERY_BYTES,
            cancel: CancellationToken::new(),
            authorization: None,
        }
    }

    /// Authorizes the listing with a tenant's OAuth grant.
    pub fn authorization(mut self, authorization: Authorization) -> Self {
        self.authorization = Some(authorization);
        self
    }

    /// Sets the page cap.
    pub fn max_pages(mut self, pages: usize) -> Self {
        self.max_pages = pages;
        self
    }

    /// Sets the byte budget of the whole listing.
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }
}

/// One tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DiscoveredTool {
    /// Its name on the server.
    pub name: String,
    /// Its description, if any.
    pub description: Option<String>,
    /// Its input schema, verbatim (`$ref`, `$defs` and every keyword untouched).
    pub input_schema: JsonObject,
    /// Its output schema, verbatim, if it declares one.
    pub output_schema: Option<JsonObject>,
    /// Its `execution.taskSupport` (`forbidden`, `optional`, `required`), when the
    /// server says: the 2025-11-25 form of tasks (SEP-1686), which this client does not
    /// run. A tool that requires them can only be called in the 2026-07-28 era.
    pub task_support: Option<String>,
}

/// A server's tools.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Discovery {
    /// Every tool of every page, in the server's order.
    pub tools: Vec<DiscoveredTool>,
    /// How many pages were read.
    pub pages: usize,
    /// The era that served the listing.
    pub era: Era,
    /// The server declares the tasks extension (`io.modelcontextprotocol/tasks`,
    /// 2026-07-28): it may answer any call with a task, which a call follows within its
    /// deadline.
    pub tasks: bool,
}
