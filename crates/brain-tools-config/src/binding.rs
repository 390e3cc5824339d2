//! The typed config model, after validation.

use crate::auth::McpAuth;

/// A JSON object, with keys in document order.
pub type JsonObject = serde_json::Map<String, serde_json::Value>;

/// `timeout_seconds` when a binding does not set it.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 300;
/// The largest accepted `timeout_seconds` (one day).
pub const MAX_TIMEOUT_SECONDS: u64 = 86_400;
/// `max_output_bytes` when a binding does not set it (1 MiB).
pub const DEFAULT_MAX_OUTPUT_BYTES: u64 = 1_048_576;
/// The largest accepted `max_output_bytes` (64 MiB).
pub const MAX_MAX_OUTPUT_BYTES: u64 = 67_108_864;

/// The part of a host config this crate owns: its tool bindings, in document order, and
/// the gateway that serves them to MCP clients, if the config has one.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct HostConfig {
    /// Every binding of the `tools` array, validated, with defaults filled in.
    pub tools: Vec<ToolBinding>,
    /// The `gateway` object, validated, with defaults filled in.
    pub gateway: Option<crate::gateway::GatewayConfig>,
}

/// One tool binding: the name a model sees, its schemas, who may call it, its limits,
/// and where it lives.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ToolBinding {
    /// The name the model sees; `^[A-Za-z0-9_-]{1,64}$`, unique in the config.
    pub name: String,
    /// What the model reads about the tool; empty when not set.
    pub description: String,
    /// The JSON Schema of the arguments, verbatim (its `type` is `object`).
    pub input_schema: JsonObject,
    /// The JSON Schema that structured output must satisfy, verbatim, if any.
    pub output_schema: Option<JsonObject>,
    /// The tenants whose sessions may use the tool (non-empty, unique).
    pub tenants: Vec<String>,
    /// Bound on the whole call, from opening the session to the result.
    pub timeout_seconds: u64,
    /// Bound on the bytes of the call's response as received.
    pub max_output_bytes: u64,
    /// What the model reads of a result with both structured content and content blocks
    /// (MCP bindings; [`ResultContent::Once`] unless set).
    pub result_content: ResultContent,
    /// Where the tool lives.
    pub target: Target,
}

/// What the model reads of an MCP result that has `structuredContent` and `content`
/// blocks (`result_content`).
/// [docs/events.md](https://github.com/brain-dev/brain-mcp-tools/blob/main/docs/events.md#results-the-model-reads-once) says what each keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ResultContent {
    /// `"once"`, the default: each piece once (the structured content, and the content
    /// blocks that say something it does not hold).
    #[default]
    Once,
    /// `"both"`: the structured content and every content block, as the server sent them.
    Both,
    /// `"structured"`: the structured content and the content blocks that are not text.
    Structured,
    /// `"content"`: the content blocks only (the structured content when there are none).
    Content,
}

impl ResultContent {
    /// As written in a config: `once`, `both`, `structured`, `content`.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultContent::Once => "once",
            ResultContent::Both => "both",
            ResultContent::Structured => "structured",
            ResultContent::Content => "content",
        }
    }
}

/// The protocol era an MCP binding pins (`era`), as discovery found it: calls speak it
/// without probing the server, and a server that no longer speaks it fails the call with
/// an error naming the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum McpEra {
    /// `"2025-11-25"`: the initialize lifecycle (protocol versions up to 2025-11-25).
    Legacy,
    /// `"2026-07-28"`: the stateless lifecycle.
    Modern,
}

impl McpEra {
    /// As written in a config: `2025-11-25`, `2026-07-28`.
    pub fn as_str(self) -> &'static str {
        match self {
            McpEra::Legacy => "2025-11-25",
            McpEra::Modern => "2026-07-28",
        }
    }
}

impl ToolBinding {
    /// A binding with the given essentials and every optional field at its default.
    pub fn new(
        name: impl Into<String>,
        input_schema: JsonObject,
        tenants: Vec<String>,
        target: Target,
    ) -> Self {
        Self {
            name: name.into(),
            description: String::new(),
            input_schema,
            output_schema: None,
            tenants,
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            result_content: ResultContent::Once,
            target,
        }
    }

    /// The MCP side of the binding, if it is an MCP binding.
    pub fn mcp(&self) -> Option<&McpTarget> {
        match &self.target {
            Target::Mcp(mcp) => Some(mcp),
            Target::Http(_) => None,
        }
    }
}

/// Where a tool lives: on an MCP server, or behind the host's own HTTP/SSE tool executor.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[expect(
    clippy::large_enum_variant,
    reason = "one per binding, built once at load; a Box would only show in the public type"
)]
pub enum Target {
    /// A binding with `mcp_tool`: a tool on an MCP server.
    Mcp(McpTarget),
    /// A binding without `mcp_tool`: an HTTP tool (its server may answer with SSE).
    Http(HttpTarget),
}

/// An MCP binding's server and tool.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct McpTarget {
    /// The server that serves the tool.
    pub server: McpServer,
    /// The tool's name on the server.
    pub mcp_tool: String,
    /// Whether the server may run a call as a task (`tasks`, the 2026-07-28 tasks
    /// extension), which the call then waits for within its timeout; true unless set.
    pub tasks: bool,
    /// The protocol era the binding pins (`era`); `None`: the client finds it out.
    pub era: Option<McpEra>,
}

impl McpTarget {
    /// An MCP target (tasks allowed, no era pinned).
    pub fn new(server: McpServer, mcp_tool: impl Into<String>) -> Self {
        Self {
            server,
            mcp_tool: mcp_tool.into(),
            tasks: true,
            era: None,
        }
    }
}

/// How to reach an MCP server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum McpServer {
    /// A Streamable HTTP endpoint (`url`), with either a static bearer token read from
    /// `token_env` or an `auth` object (never both). Build one with [`McpServer::http`].
    #[non_exhaustive]
    Http {
        /// The server's MCP endpoint, an absolute `http` or `https` URL without user info.
        url: String,
        /// The environment variable that holds the API key, read at call time.
        token_env: Option<String>,
        /// How the client obtains access tokens for this server, if it uses OAuth.
        auth: Option<McpAuth>,
    },
    /// An installed command that speaks MCP on stdin/stdout (`command`).
    Stdio(StdioCommand),
}

impl McpServer {
    /// A Streamable HTTP server at `url`, with the bearer token read from `token_env` (if
    /// any) and no `auth`.
    pub fn http(url: impl Into<String>, token_env: Option<String>) -> Self {
        McpServer::Http {
            url: url.into(),
            token_env,
            auth: None,
        }
    }
}

/// An installed MCP server started per call.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct StdioCommand {
    /// The program to run (a path, or a name looked up in `PATH`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for the child, in document order, on top of the few it gets from
    /// the host (`HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM`, `USER`), or on top of the
    /// host's whole environment with [`inherit_env`](Self::inherit_env): a value written
    /// in the config, or a host variable passed through by name.
    pub env: Vec<(String, EnvValue)>,
    /// The working directory, if not the host's.
    pub cwd: Option<String>,
    /// Whether the child gets the host's whole environment instead of only `HOME`,
    /// `LOGNAME`, `PATH`, `SHELL`, `TERM` and `USER` (false unless set).
    pub inherit_env: bool,
}

impl StdioCommand {
    /// A command with arguments, no extra environment, and the host's working directory.
    pub fn new(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            cwd: None,
            inherit_env: false,
        }
    }
}

/// The value of a variable a stdio server is started with (`command.env`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum EnvValue {
    /// A value written in the config: `"LOG_LEVEL": "warn"`.
    Value(String),
    /// The value of the host's variable of this name, read each time the server is
    /// started, so the config holds only the name (a secret stays in the host's
    /// environment): `"API_KEY": {"from_env": "MY_API_KEY"}`. When the host's variable is
    /// unset, the server starts without the variable.
    FromHost(String),
}

/// An HTTP (or SSE) tool binding; the host supplies the executor.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HttpTarget {
    /// The tool's endpoint, an absolute `http` or `https` URL.
    pub url: String,
    /// The environment variable that holds the API key, read at call time.
    pub token_env: Option<String>,
    /// Whether the host shows the tool the session (HTTP and SSE tools only).
    pub inspect_session: Option<bool>,
}
