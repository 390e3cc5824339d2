//! A gateway in front of the testkit, and clients that call it: our own `McpClient` (both
//! eras) and plain HTTP for what clients should never see succeed.

use std::time::Duration;

use brain_mcp_gateway::Gateway;
use brain_mcp_testkit::{Era, ServerOptions, TestServer};
use brain_tools::{
    CallOutcome, CallRequest, ClientOptions, Discovery, DiscoveryRequest, Endpoint, EraPreference,
    HostConfig, McpClient, Secret, ToolHost,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// A running gateway and what it stands in front of.
pub(crate) struct Running {
    pub(crate) upstream: TestServer,
    pub(crate) url: String,
    pub(crate) keys: Vec<(String, String)>,
    pub(crate) gateway: Gateway,
    stop: CancellationToken,
    task: Option<tokio::task::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl Running {
    /// The API key of a tenant.
    pub(crate) fn key(&self, tenant: &str) -> String {
        self.keys
            .iter()
            .find(|(t, _)| t == tenant)
            .map(|(_, key)| key.clone())
            .expect("a key for the tenant")
    }

    /// Stops serving (a drain, as on SIGTERM) and waits until the gateway has stopped.
    pub(crate) async fn stop(mut self) {
        self.stop.cancel();
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(60), task)
                .await
                .expect("the gateway stops")
                .unwrap();
        }
    }

    pub(crate) fn stop_token(&self) -> CancellationToken {
        self.stop.clone()
    }
}

/// The bindings every test serves, on the testkit at `upstream`: acme may use echo,
/// progress, hang, error, structured, image, resource_mix and `headed` (echo, its message
/// also in an `Mcp-Param-Message` header, SEP-2243); globex only `shout` (the testkit's
/// echo under another name).
pub(crate) fn bindings(upstream: &str) -> Value {
    // Long enough that a test waiting 10 s for a cancel never sees a timeout instead.
    let mcp = |name: &str, tool: &str, tenants: Value, schema: Value| {
        json!({
            "name": name, "description": format!("{tool} on the testkit"),
            "input_schema": schema, "url": upstream, "mcp_tool": tool,
            "tenants": tenants, "timeout_seconds": 60
        })
    };
    let echo = json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]});
    let any = json!({"type": "object"});
    json!([
        mcp("echo", "echo", json!(["acme"]), echo.clone()),
        mcp("progress", "progress", json!(["acme"]), any.clone()),
        mcp("hang", "hang", json!(["acme"]), any.clone()),
        mcp("error", "error", json!(["acme"]), any.clone()),
        mcp("structured", "structured", json!(["acme"]), any.clone()),
        mcp("image", "image", json!(["acme"]), any.clone()),
        mcp("resource_mix", "resource_mix", json!(["acme"]), any.clone()),
        mcp(
            "headed",
            "echo",
            json!(["acme"]),
            json!({"type": "object", "properties": {"message": {"type": "string", "x-mcp-header": "Message"}}, "required": ["message"]}),
        ),
        mcp("shout", "echo", json!(["globex"]), echo),
    ])
}

/// Starts the testkit (`era`) and a gateway in front of it with API keys for acme and
/// globex; `gateway` is merged into the config's gateway object.
pub(crate) async fn start(era: Era, gateway: Value) -> Running {
    start_with(era, gateway, |_| Vec::new()).await
}

/// [`start`], with more bindings (made from the testkit's URL) beside the usual ones.
pub(crate) async fn start_with(
    era: Era,
    gateway: Value,
    more: impl FnOnce(&TestServer) -> Vec<Value>,
) -> Running {
    let upstream = TestServer::start(ServerOptions {
        era,
        ..ServerOptions::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut keys = Vec::new();
    let mut lines = String::new();
    for tenant in ["acme", "globex"] {
        let (key, line) = brain_mcp_gateway::new_api_key(tenant).unwrap();
        keys.push((tenant.to_owned(), key));
        lines.push_str(&line);
        lines.push('\n');
    }
    let key_file = dir.path().join("keys");
    std::fs::write(&key_file, lines).unwrap();
    let mut settings = json!({"api_keys": key_file.to_string_lossy()});
    if let (Value::Object(settings), Value::Object(more)) = (&mut settings, gateway) {
        settings.extend(more);
    }
    let mut tools = bindings(&upstream.url());
    if let Value::Array(tools) = &mut tools {
        tools.extend(more(&upstream));
    }
    let config = json!({"tools": tools, "gateway": settings});
    let loaded =
        HostConfig::from_json_bytes(config.to_string().as_bytes()).expect("the config loads");
    let host = ToolHost::new(&loaded.config).unwrap();
    let gateway = Gateway::new(host, &loaded.config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let serving = gateway.clone();
    let until = stop.clone();
    let task = tokio::spawn(async move {
        serving
            .serve(listener, async move { until.cancelled().await })
            .await
            .unwrap();
    });
    Running {
        upstream,
        url,
        keys,
        gateway,
        stop,
        task: Some(task),
        _dir: dir,
    }
}

/// Our MCP client, speaking `era` to the gateway.
pub(crate) fn client(era: EraPreference) -> McpClient {
    McpClient::new(ClientOptions::default().era(era).warm_contexts(false)).unwrap()
}

pub(crate) fn endpoint(running: &Running, key: &str) -> Endpoint {
    Endpoint::http(running.url.clone(), Some(Secret::new(key)))
}

/// Lists the tools a key's tenant sees.
pub(crate) async fn list(client: &McpClient, endpoint: Endpoint) -> Discovery {
    client
        .discover(DiscoveryRequest::new(endpoint, Duration::from_secs(10)))
        .await
        .expect("the listing works")
}

/// One call through the gateway.
pub(crate) async fn call(
    client: &McpClient,
    endpoint: Endpoint,
    tool: &str,
    arguments: Value,
) -> Result<CallOutcome, brain_tools::CallError> {
    client
        .call(
            CallRequest::new(endpoint, tool, "caller-1", Duration::from_secs(10))
                .arguments(arguments.as_object().cloned().unwrap_or_default()),
        )
        .await
}

/// A plain HTTP client for the tests (rustls on `ring`, no roots: loopback http only).
pub(crate) fn http() -> reqwest::Client {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .build()
        .unwrap()
}

/// A GET of a URL.
pub(crate) async fn get(url: &str) -> reqwest::Response {
    http().get(url).send().await.unwrap()
}

/// A raw POST to the gateway's endpoint.
pub(crate) async fn post(url: &str, bearer: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .body(body.to_string());
    if let Some(bearer) = bearer {
        request = request.bearer_auth(bearer);
    }
    request.send().await.unwrap()
}

/// The JSON-RPC initialize request.
pub(crate) fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

/// A raw 2026-07-28 request to the gateway (stateless: the `_meta` and the headers of the
/// revision, `Mcp-Name` from `params.name`), with `extra` headers; the HTTP status and
/// the JSON-RPC answer (the JSON body, or the answer in an SSE stream).
pub(crate) async fn post_modern(
    url: &str,
    bearer: &str,
    method: &str,
    mut params: Value,
    extra: &[(&str, &str)],
) -> (u16, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let mut request = http()
        .post(url)
        .bearer_auth(bearer)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .body(body.to_string());
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        request = request.header("mcp-name", name);
    }
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    let answer = request.send().await.unwrap();
    let status = answer.status().as_u16();
    let text = answer.text().await.unwrap();
    let message = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .chain(std::iter::once(text.trim()))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(|message| message.get("id").is_some())
        .unwrap_or_default();
    (status, message)
}
