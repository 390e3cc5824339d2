//! Helpers: run a call and collect its progress; build the stdio testkit once.

use std::time::{Duration, Instant};

use brain_mcp_transport::{
    CallError, CallOutcome, CallReport, CallRequest, ClientOptions, Endpoint, EraPreference,
    McpClient, PROGRESS_QUEUE, Progress, progress_channel,
};
use serde_json::Value;

/// A call's outcome, its progress, and how long it took.
pub(crate) struct Ran {
    pub(crate) outcome: Result<CallOutcome, CallError>,
    pub(crate) progress: Vec<Progress>,
    pub(crate) elapsed: Duration,
    /// What the transport reported of the call (for telemetry).
    pub(crate) report: CallReport,
}

impl Ran {
    pub(crate) fn result(&self) -> &Value {
        &self.outcome.as_ref().expect("the call succeeds").result
    }

    pub(crate) fn error(&self) -> &CallError {
        self.outcome.as_ref().expect_err("the call fails")
    }

    pub(crate) fn text(&self) -> &str {
        self.result()["content"][0]["text"]
            .as_str()
            .expect("a text block")
    }
}

pub(crate) fn client(era: EraPreference) -> McpClient {
    client_with(ClientOptions::default().era(era))
}

/// A client with warm contexts off: every call opens its own context, for tests that
/// count what one call sends.
pub(crate) fn cold_client(era: EraPreference) -> McpClient {
    client_with(ClientOptions::default().era(era).warm_contexts(false))
}

pub(crate) fn client_with(options: ClientOptions) -> McpClient {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    McpClient::new(options).expect("the client builds")
}

pub(crate) fn request(
    endpoint: &Endpoint,
    tool: &str,
    arguments: Value,
    call_id: &str,
    timeout: Duration,
) -> CallRequest {
    CallRequest::new(endpoint.clone(), tool, call_id, timeout)
        .arguments(arguments.as_object().cloned().unwrap_or_default())
}

/// Runs a call; the progress channel is read after the result, so everything in it was
/// delivered before the call returned.
pub(crate) async fn run(client: &McpClient, request: CallRequest) -> Ran {
    let (tx, mut rx) = progress_channel(PROGRESS_QUEUE);
    let report = CallReport::new();
    let started = Instant::now();
    let outcome = client
        .call(request.progress(tx).report(report.clone()))
        .await;
    let elapsed = started.elapsed();
    let mut progress = Vec::new();
    while let Some(update) = rx.try_recv() {
        progress.push(update);
    }
    Ran {
        outcome,
        progress,
        elapsed,
        report,
    }
}

pub(crate) async fn call(
    client: &McpClient,
    endpoint: &Endpoint,
    tool: &str,
    arguments: Value,
) -> Ran {
    run(
        client,
        request(endpoint, tool, arguments, "c1", Duration::from_secs(10)),
    )
    .await
}

/// The stdio testkit binary, built once per test run.
pub(crate) fn stdio_server() -> String {
    brain_mcp_testkit::build_binaries();
    brain_mcp_testkit::stdio_binary_path()
        .to_string_lossy()
        .into_owned()
}

/// A deadline plus the grace a failing call may take to say so.
pub(crate) const GRACE: Duration = Duration::from_secs(2);

/// A testkit HTTP server in `era`, and its endpoint (no token).
pub(crate) async fn started(
    era: brain_mcp_testkit::Era,
) -> (brain_mcp_testkit::TestServer, Endpoint) {
    let server = brain_mcp_testkit::TestServer::start(brain_mcp_testkit::ServerOptions {
        era,
        ..brain_mcp_testkit::ServerOptions::default()
    })
    .await
    .unwrap();
    let endpoint = Endpoint::http(server.url(), None);
    (server, endpoint)
}
