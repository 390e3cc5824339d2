//! The HTTP test server: an accept loop we own, an axum router with a counting middleware, rmcp behind it.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use futures::StreamExt;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use crate::bearer::{self, Bearers};
use crate::counters::{Counters, RECORDED_HEADERS, Stats};
use crate::fault::{self, HttpFault};
use crate::options::{Era, ServerOptions};
use crate::sessions::CountingSessions;
use crate::tools::{
    DropSignal, Kit, Testkit, late_progress, raw_after_progress, raw_call, raw_progress_token,
};

/// Largest POST body the middleware buffers (rmcp itself refuses more than 4 MiB).
const MAX_BODY: usize = 16 << 20;
/// How long open connections get to finish after shutdown begins.
const GRACE: Duration = Duration::from_secs(2);
/// Streams one HTTP/2 connection may carry at once: enough for the benchmarks' 1,000
/// calls in flight (hyper's default, 200, would hold the rest back in the client).
const MAX_STREAMS: u32 = 4096;

/// A scriptable MCP server on `127.0.0.1:<free port>` (or the port of
/// [`ServerOptions::port`]), serving the scripted tools over Streamable HTTP.
///
/// It owns everything it runs: dropping it stops the server, its connections and its sessions at once;
/// [`shutdown`](Self::shutdown) does the same gracefully (open streams get a short grace period).
#[derive(Debug)]
pub struct TestServer {
    addr: SocketAddr,
    kit: Arc<Kit>,
    sessions: Arc<CountingSessions<LocalSessionManager>>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// The CA that signed the server's certificate (PEM), when it serves HTTPS.
    ca_pem: Option<String>,
}

impl TestServer {
    /// Binds `127.0.0.1` on [`ServerOptions::port`] (0: a free port) and starts serving;
    /// the server accepts connections when this returns.
    ///
    /// # Errors
    /// The loopback port cannot be bound (a fixed port that is taken).
    pub async fn start(options: ServerOptions) -> std::io::Result<TestServer> {
        let mut kit = Kit::new(
            options.era,
            options.extra_tools,
            options.page_size,
            Stats::default(),
        )
        .with_conformance_tools(options.conformance_tools);
        kit.bearers = options.bearer.clone().map(Bearers::new);
        kit.hold_discover = options.hold_discover;
        let kit = Arc::new(kit);
        let identity = options
            .tls
            .map(crate::tls::identity)
            .transpose()
            .map_err(std::io::Error::other)?;
        let listener = TcpListener::bind(("127.0.0.1", options.port)).await?;
        let addr = listener.local_addr()?;
        let (app, sessions) = router(kit.clone(), &options);
        let (acceptor, ca_pem) = identity.map(|i| (i.acceptor, i.ca_pem)).unzip();
        let task = tokio::spawn(accept_loop(
            listener,
            acceptor,
            app,
            kit.clone(),
            options.tcp_nodelay,
        ));
        Ok(TestServer {
            addr,
            kit,
            sessions,
            task: Some(task),
            ca_pem,
        })
    }

    /// `http`, or `https` when the server serves TLS.
    fn scheme(&self) -> &'static str {
        if self.ca_pem.is_some() {
            "https"
        } else {
            "http"
        }
    }

    /// The MCP endpoint: `http://127.0.0.1:PORT/mcp` (`https` with [`ServerOptions::tls`]).
    pub fn url(&self) -> String {
        format!("{}://{}/mcp", self.scheme(), self.addr)
    }

    /// A URL on this server where every request gets `fault`, e.g. `http://127.0.0.1:PORT/fault/401/mcp`.
    pub fn fault_url(&self, fault: HttpFault) -> String {
        format!(
            "{}://{}/fault/{}/mcp",
            self.scheme(),
            self.addr,
            fault.path_segment()
        )
    }

    /// The certificate (PEM) of the CA that signed the server's, for clients to trust;
    /// `None` when the server speaks plain HTTP.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A snapshot of the counters.
    pub fn counters(&self) -> Counters {
        self.kit.stats.snapshot()
    }

    /// Waits until `pred` holds for the counters, or until `timeout`; returns the last snapshot either way.
    /// For effects that arrive after the client returns, such as a DELETE or a cancellation.
    pub async fn wait_for(&self, pred: impl Fn(&Counters) -> bool, timeout: Duration) -> Counters {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.kit.stats.changed();
            tokio::pin!(changed);
            // Register before looking, so that a change between the look and the wait is not missed.
            changed.as_mut().enable();
            let counters = self.counters();
            if pred(&counters) {
                return counters;
            }
            tokio::select! {
                () = changed => {}
                () = tokio::time::sleep_until(deadline) => return self.counters(),
            }
        }
    }

    /// Ends every legacy session now, as a server that expires idle sessions does: a
    /// request that carries one of their ids gets 404 (counted as closed).
    pub async fn expire_sessions(&self) {
        self.sessions.expire_all().await;
    }

    /// Keep (the default) or stop keeping `call_meta` and `call_headers`, which grow with every call.
    /// Long benchmark runs turn them off.
    pub fn record_call_details(&self, on: bool) {
        self.kit.stats.set_record_details(on);
    }

    /// Stops the server: no new connections, open streams and hung requests end,
    /// and connections get a short grace period before they are closed.
    pub async fn shutdown(mut self) {
        self.kit.stop();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kit.stop();
        if let Some(task) = self.task.take() {
            // The accept task owns every connection task: aborting it aborts them all.
            task.abort();
        }
    }
}

/// Per-connection control, put into every request's extensions.
#[derive(Clone, Debug)]
struct ConnCtl {
    /// Cancel to close the connection at once, without a response.
    kill: CancellationToken,
}

fn router(
    kit: Arc<Kit>,
    options: &ServerOptions,
) -> (Router, Arc<CountingSessions<LocalSessionManager>>) {
    let sessions = Arc::new(CountingSessions::new(
        LocalSessionManager::default(),
        kit.clone(),
    ));
    let handle = Arc::clone(&sessions);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(options.era != Era::Modern)
        .with_stateless_protocol_metadata_required(options.era == Era::Modern)
        .with_json_response(options.json_response)
        .with_cancellation_token(kit.shutdown.child_token());
    let handler_kit = kit.clone();
    let mcp = StreamableHttpService::new(
        move || Ok(Testkit::new(handler_kit.clone())),
        sessions,
        config,
    );
    let router = Router::new()
        .nest_service("/mcp", mcp)
        .route("/fault/{fault}/mcp", any(fault_handler))
        .route(bearer::RESOURCE_METADATA, get(bearer::resource_metadata))
        .route(
            bearer::AUTHORIZATION_METADATA,
            get(bearer::authorization_metadata),
        )
        .route("/token", post(bearer::token))
        .with_state(kit.clone())
        .layer(axum::middleware::from_fn_with_state(kit, observe));
    (router, handle)
}

async fn accept_loop(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    app: Router,
    kit: Arc<Kit>,
    nodelay: bool,
) {
    let stop = kit.shutdown.clone();
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    if nodelay {
                        let _ = stream.set_nodelay(true);
                    }
                    kit.stats.update(|c| c.connections_accepted += 1);
                    connections.spawn(accept(stream, tls.clone(), app.clone(), stop.clone()));
                }
                Err(error) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
        }
    }
    drop(listener);
    let drained = async { while connections.join_next().await.is_some() {} };
    let _ = tokio::time::timeout(GRACE + Duration::from_millis(500), drained).await;
    // Dropping the set aborts whatever is left.
}

/// Serves one connection: plain HTTP/1.1, or TLS first and then the protocol ALPN agreed on.
async fn accept(stream: TcpStream, tls: Option<TlsAcceptor>, app: Router, stop: CancellationToken) {
    let Some(acceptor) = tls else {
        return serve_connection(stream, false, app, stop).await;
    };
    let handshake = tokio::select! {
        handshake = tokio::time::timeout(Duration::from_secs(10), acceptor.accept(stream)) => handshake,
        () = stop.cancelled() => return,
    };
    let Ok(Ok(stream)) = handshake else { return };
    let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
    serve_connection(stream, h2, app, stop).await;
}

async fn serve_connection<I>(io: I, h2: bool, app: Router, stop: CancellationToken)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let ctl = ConnCtl {
        kill: CancellationToken::new(),
    };
    let service = TowerToHyperService::new(app.layer(axum::Extension(ctl.clone())));
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new());
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(MAX_STREAMS);
    let builder = if h2 {
        builder.http2_only()
    } else {
        builder.http1_only()
    };
    let connection = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        () = ctl.kill.cancelled() => return,
        () = stop.cancelled() => {}
    }
    connection.as_mut().graceful_shutdown();
    tokio::select! {
        _ = connection => {}
        () = ctl.kill.cancelled() => {}
        () = tokio::time::sleep(GRACE) => {}
    }
}

fn recorded_headers(headers: &axum::http::HeaderMap) -> BTreeMap<String, String> {
    RECORDED_HEADERS
        .iter()
        .filter_map(|&name| {
            let value = headers.get(name)?;
            Some((
                name.to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            ))
        })
        .collect()
}

/// The parsed POST body, handed from the middleware to the fault handler.
#[derive(Clone, Debug)]
struct Parsed(Option<Arc<Value>>);

/// Counts every request, then applies what the scripted tools need from HTTP.
async fn observe(State(kit): State<Arc<Kit>>, request: Request, next: Next) -> Response {
    if request.version() == axum::http::Version::HTTP_2 {
        kit.stats.update(|c| c.http2_requests += 1);
    }
    if let Some(bearers) = &kit.bearers
        && request.uri().path() == "/mcp"
        && !bearers.accepts(request.headers())
    {
        kit.stats.update(|c| c.unauthorized += 1);
        return bearer::challenge(request.headers());
    }
    match *request.method() {
        Method::POST => {}
        Method::GET => {
            let resume = request.headers().contains_key("last-event-id");
            kit.stats.update(|c| {
                if resume {
                    c.resume_gets += 1;
                } else {
                    c.standalone_gets += 1;
                }
            });
            return next.run(request).await;
        }
        Method::DELETE => {
            kit.stats.update(|c| c.deletes += 1);
            return next.run(request).await;
        }
        _ => return next.run(request).await,
    }
    let (mut parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY).await else {
        kit.stats.record_message(None, true, BTreeMap::new);
        return (StatusCode::PAYLOAD_TOO_LARGE, "request body too large").into_response();
    };
    let message: Option<Value> = serde_json::from_slice(&bytes).ok();
    kit.stats
        .record_message(message.as_ref(), true, || recorded_headers(&parts.headers));

    if parts.uri.path().starts_with("/fault/") {
        parts.extensions.insert(Parsed(message.map(Arc::new)));
        return next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
    }
    let Some(message) = message else {
        return next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
    };

    let method = message.get("method").and_then(Value::as_str);
    if kit.era == Era::Legacy && method == Some("server/discover") {
        if kit.hold_discover {
            // Some servers never answer a method they do not know.
            kit.shutdown.cancelled().await;
            return (StatusCode::SERVICE_UNAVAILABLE, "shutting down").into_response();
        }
        // A server from before 2026 has never heard of server/discover.
        if let Some(id) = message.get("id") {
            return method_not_found(id);
        }
    }
    // A flaky task's polls fail on the wire: 503, or the connection dropped unanswered.
    if method == Some("tasks/get")
        && let Some(id) = message.pointer("/params/taskId").and_then(Value::as_str)
        && let Some(nth) = kit.tasks.flake(id)
    {
        let kill = parts.extensions.get::<ConnCtl>().map(|c| c.kill.clone());
        match kill.filter(|_| nth % 2 == 0) {
            Some(kill) => {
                kill.cancel();
                return std::future::pending().await;
            }
            None => return (StatusCode::SERVICE_UNAVAILABLE, "busy, poll again").into_response(),
        }
    }
    // A task scripted to lie is answered here, as rmcp's types cannot say the lies.
    if method == Some("tasks/get")
        && let Some(id) = message.pointer("/params/taskId").and_then(Value::as_str)
        && let Some(lie) = kit.tasks.lie(id)
    {
        let answer = lie.answer(message.get("id").unwrap_or(&Value::Null), id);
        return (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            answer.to_string(),
        )
            .into_response();
    }
    match raw_call(&message) {
        Some(("progress_after_result", _)) => {
            let token = raw_progress_token(&message).cloned();
            let response = next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await;
            match token {
                Some(token) => append_late_progress(response, &token).await,
                None => response,
            }
        }
        Some(("drop_mid_stream", params)) => {
            let after = raw_after_progress(params);
            let signal = DropSignal::default();
            parts.extensions.insert(signal.clone());
            let kill = parts.extensions.get::<ConnCtl>().map(|c| c.kill.clone());
            let response = next.run(Request::from_parts(parts, Body::from(bytes)));
            let response = if after == 0 {
                // The result never comes, and with JSON responses nor do headers: drop when the handler is there.
                tokio::select! {
                    response = response => response,
                    () = signal.sent.notified() => {
                        if let Some(kill) = kill {
                            signal.dropped.notify_one();
                            kill.cancel();
                            return std::future::pending().await;
                        }
                        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
                    }
                }
            } else {
                response.await
            };
            if response.status() != StatusCode::OK {
                return response;
            }
            drop_after_progress(response, after, signal)
        }
        _ => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
    }
}

fn method_not_found(id: &Value) -> Response {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {"code": -32601, "message": "Method not found"}
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn content_type_is(response: &Response, essence: &str) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with(essence))
}

/// Appends an SSE event with a late progress notification after the response. A JSON response
/// becomes an SSE stream of two events (the client accepts both).
async fn append_late_progress(response: Response, token: &Value) -> Response {
    if response.status() != StatusCode::OK {
        return response;
    }
    let tail = Bytes::from(format!("data: {}\n\n", late_progress(token)));
    if content_type_is(&response, "text/event-stream") {
        let (parts, body) = response.into_parts();
        let stream = body
            .into_data_stream()
            .chain(futures::stream::once(async move { Ok(tail) }));
        return Response::from_parts(parts, Body::from_stream(stream));
    }
    if content_type_is(&response, "application/json") {
        let (mut parts, body) = response.into_parts();
        let Ok(json) = axum::body::to_bytes(body, usize::MAX).await else {
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        };
        let mut sse = Vec::with_capacity(json.len() + tail.len() + 8);
        sse.extend_from_slice(b"data: ");
        sse.extend_from_slice(json.trim_ascii());
        sse.extend_from_slice(b"\n\n");
        sse.extend_from_slice(&tail);
        parts.headers.remove(header::CONTENT_LENGTH);
        parts.headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        return Response::from_parts(parts, Body::from(sse));
    }
    response
}

const PROGRESS_NEEDLE: &[u8] = b"notifications/progress";

/// Counts `PROGRESS_NEEDLE` in a stream of chunks, also across chunk boundaries.
#[derive(Debug, Default)]
struct NeedleCounter {
    carry: Vec<u8>,
}

impl NeedleCounter {
    fn count(&mut self, chunk: &[u8]) -> u64 {
        self.carry.extend_from_slice(chunk);
        let found = self
            .carry
            .windows(PROGRESS_NEEDLE.len())
            .filter(|w| *w == PROGRESS_NEEDLE)
            .count() as u64;
        let keep = PROGRESS_NEEDLE.len() - 1;
        if found > 0 {
            // Occurrences cannot overlap a kept tail shorter than the needle.
            self.carry.clear();
        } else if self.carry.len() > keep {
            self.carry.drain(..self.carry.len() - keep);
        }
        found
    }
}

/// Passes the response through until `after` progress notifications went by, lets hyper flush them,
/// then fails the body: hyper aborts the connection before the result.
fn drop_after_progress(response: Response, after: u64, signal: DropSignal) -> Response {
    struct State {
        body: axum::body::BodyDataStream,
        seen: u64,
        counter: NeedleCounter,
        done: bool,
    }
    let (parts, body) = response.into_parts();
    let state = State {
        body: body.into_data_stream(),
        seen: 0,
        counter: NeedleCounter::default(),
        done: false,
    };
    let stream = futures::stream::unfold(state, move |mut st| {
        let signal = signal.clone();
        async move {
            if st.done {
                return None;
            }
            if st.seen >= after {
                // Pending first, so that hyper writes out what it has, then the error.
                tokio::time::sleep(Duration::from_millis(20)).await;
                st.done = true;
                signal.dropped.notify_one();
                let error = std::io::Error::other("brain-mcp-testkit: stream dropped on purpose");
                return Some((Err(error), st));
            }
            match st.body.next().await {
                None => None,
                Some(Err(error)) => {
                    st.done = true;
                    Some((Err(std::io::Error::other(error)), st))
                }
                Some(Ok(chunk)) => {
                    st.seen += st.counter.count(&chunk);
                    Some((Ok(chunk), st))
                }
            }
        }
    });
    Response::from_parts(parts, Body::from_stream(stream))
}

async fn fault_handler(
    State(kit): State<Arc<Kit>>,
    Path(segment): Path<String>,
    request: Request,
) -> Response {
    let Some(fault) = HttpFault::from_path_segment(&segment) else {
        return (StatusCode::NOT_FOUND, format!("unknown fault {segment:?}")).into_response();
    };
    let message = request
        .extensions()
        .get::<Parsed>()
        .and_then(|p| p.0.clone());
    let kill = request
        .extensions()
        .get::<ConnCtl>()
        .map(|c| c.kill.clone());
    fault::respond(fault, message.as_deref(), kill.as_ref(), &kit.shutdown).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needle_counter_sees_split_needles() {
        let mut counter = NeedleCounter::default();
        assert_eq!(counter.count(b"data: {\"method\":\"notifications/pro"), 0);
        assert_eq!(counter.count(b"gress\"}\n\n"), 1);
        assert_eq!(
            counter.count(b"data: notifications/progress\n\ndata: notifications/progress\n\n"),
            2
        );
        assert_eq!(counter.count(b"data: {\"result\":{}}\n\n"), 0);
    }
}
