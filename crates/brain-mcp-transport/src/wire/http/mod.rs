//! Our HTTP backend for rmcp's Streamable HTTP client transport.
//!
//! rmcp's worker drives the protocol (sessions, SSE resumption, standard headers); this
//! backend only moves bytes, and adds what a per-call tool layer needs:
//! - a call's response is counted against its byte budget as it is read (memory stays
//!   bounded by the budget), and past it the stream fails and the call is told;
//! - a call's progress notifications are routed to it from its own response stream, in
//!   wire order, before the result is handed to rmcp;
//! - the call ID is put on the wire as `progressToken` (see `call_state.rs`);
//! - what happened to a call's POST (not written, HTTP status, broken stream) is recorded
//!   for error classification;
//! - the standalone GET stream is refused unless asked for (a one-call session has no
//!   use for it);
//! - the session ID is tracked, so the session can be deleted even when rmcp cannot;
//! - every request ends when the transport's lifetime token is cancelled, so a hung
//!   server cannot keep a worker task alive.
//!
//! `mod.rs` holds the backend and what every request shares (sending within the
//! transport's lifetime, headers, bounded bodies); `post.rs` the POST of a message,
//! `stream.rs` SSE streams (the call's own, resumed, standalone), `sse_filter.rs` the pure
//! reading of events, `session.rs` the session id and its `DELETE`, `config.rs` the pooled
//! client and rmcp's transport settings.

mod config;
mod post;
mod refusal;
mod session;
mod sse_filter;
mod sse_parse;
mod stream;

use std::{
    borrow::Cow,
    collections::HashMap,
    sync::{
        Arc,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use bytes::Bytes;
use futures::{StreamExt, stream::BoxStream};
use http::{HeaderName, HeaderValue, header};
use rmcp::{
    model::ClientJsonRpcMessage,
    transport::streamable_http_client::{
        SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
        StreamableHttpResponseLimits,
    },
};
use sse_stream::Sse;
use tokio_util::sync::CancellationToken;

#[cfg(feature = "otel")]
pub(crate) use config::export_client;
#[cfg(feature = "postgres")]
pub(crate) use config::tls_config;
pub(crate) use config::{BackendConfig, SetupError, transport_config};
use config::{Network, fresh_client, pooled_client};
pub(crate) use session::SessionTracker;

use crate::{
    call_state::{CallState, Registry},
    dpop::{self, Server},
    error::classify::Failure,
    wire::ingress::{self, Expect, Refused},
};

const SESSION_HEADER: &str = "mcp-session-id";
/// The `Authorization` scheme of a DPoP-bound token (RFC 9449 section 7.1), and its space.
const DPOP_SCHEME: &str = "DPoP ";
const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";

/// Errors of the HTTP backend. Their text is fixed: no URL, header or body.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpError {
    #[error("could not connect")]
    Connect,
    #[error("the connection broke")]
    Broken,
    #[error("HTTP {0}")]
    Status(u16),
    #[error("the response exceeded its byte budget")]
    TooLarge,
    #[error("the transport was closed")]
    Closed,
    #[error("the request could not be built")]
    Build,
}

type Result<T> = std::result::Result<T, StreamableHttpError<HttpError>>;

/// The backend; cheap to clone (rmcp clones it per request).
#[derive(Debug, Clone)]
pub(crate) struct HttpBackend {
    clients: Clients,
    registry: Arc<Registry>,
    session: Arc<SessionTracker>,
    lifetime: CancellationToken,
    config: BackendConfig,
}

/// The HTTP clients of one McpClient: the pool, and one that never reuses a connection
/// (for the one resend a request that failed before it could reach the server gets),
/// with the count of such resends.
#[derive(Debug, Clone)]
pub(crate) struct Clients {
    pub(crate) pooled: reqwest::Client,
    pub(crate) fresh: reqwest::Client,
    pub(crate) resends: Arc<AtomicUsize>,
}

impl Clients {
    /// The clients of one `McpClient`, on its network settings.
    pub(crate) fn new(network: &Network) -> std::result::Result<Self, SetupError> {
        Ok(Self {
            pooled: pooled_client(network)?,
            fresh: fresh_client(network)?,
            resends: Arc::default(),
        })
    }
}

/// Which requests may go once more, on a fresh connection, after failing before any
/// answer came (a pooled connection the server had closed, for one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Resend {
    /// A `tools/call`: only when it provably never left (no connection could be made, or
    /// the client handed it back unsent), so at most once still holds.
    IfUnsent,
    /// Anything else (a handshake, a listing, a resume, a `DELETE`): none runs a tool.
    Once,
}

/// How long a request may take once the transport's lifetime ended.
#[derive(Debug, Clone, Copy)]
enum Bound {
    /// It ends with the lifetime, after this grace.
    Lifetime(Duration),
    /// It is what closing sends (a `DELETE`): bounded by its caller.
    Unbound,
}

/// Whether a request that the server did not run may go again: anything that runs no
/// tool; a `tools/call` only with its call's one resend, and not given up meanwhile.
fn may_resend(call: Option<&CallState>, resend: Resend) -> bool {
    match (resend, call) {
        (Resend::Once, _) | (Resend::IfUnsent, None) => true,
        (Resend::IfUnsent, Some(call)) => {
            call.take_resend() && {
                call.mark_not_sent();
                call.mark_sending()
            }
        }
    }
}

/// Whether a failed request provably never reached the server: no connection was made,
/// or hyper handed the request back before writing it.
fn provably_unsent(error: &reqwest::Error) -> bool {
    if error.is_connect() {
        return true;
    }
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        if cause
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_canceled)
        {
            return true;
        }
        source = cause.source();
    }
    false
}

impl HttpBackend {
    pub(crate) fn new(
        clients: Clients,
        registry: Arc<Registry>,
        lifetime: CancellationToken,
        config: BackendConfig,
    ) -> Self {
        Self {
            clients,
            registry,
            session: Arc::default(),
            lifetime,
            config,
        }
    }

    /// The pooled client, to build requests with.
    fn client(&self) -> &reqwest::Client {
        &self.clients.pooled
    }

    pub(crate) fn session(&self) -> &Arc<SessionTracker> {
        &self.session
    }

    fn failed(&self, call: Option<&CallState>, failure: Failure) {
        match call {
            Some(call) => call.record(failure),
            None => self.session.record(failure),
        }
    }

    /// Sends a request, ending early when the transport's lifetime ends.
    async fn send(
        &self,
        request: reqwest::RequestBuilder,
        call: Option<&CallState>,
        resend: Resend,
    ) -> Result<reqwest::Response> {
        self.execute(request, call, resend, Bound::Lifetime(Duration::ZERO))
            .await
    }

    /// Sends a request; once the lifetime ends it still gets `grace` to finish.
    async fn send_with_grace(
        &self,
        request: reqwest::RequestBuilder,
        call: Option<&CallState>,
        resend: Resend,
        grace: Duration,
    ) -> Result<reqwest::Response> {
        self.execute(request, call, resend, Bound::Lifetime(grace))
            .await
    }

    /// Sends a request, once more on a fresh connection when `resend` allows it, and
    /// classifies a failure for the call (or the transport). A request that presents a
    /// DPoP-bound token gets a fresh proof for every attempt; refused for want of a DPoP
    /// nonce (a 401 `use_dpop_nonce`, which the server did not run), it goes once more
    /// with the nonce, a `tools/call` only with the call's one resend.
    async fn execute(
        &self,
        request: reqwest::RequestBuilder,
        call: Option<&CallState>,
        resend: Resend,
        bound: Bound,
    ) -> Result<reqwest::Response> {
        let request = request.build().map_err(|_| {
            // Claimed for sending, but nothing was written.
            if let Some(call) = call {
                call.mark_not_sent();
            }
            self.failed(call, Failure::Build);
            StreamableHttpError::Client(HttpError::Build)
        })?;
        let template = request.try_clone();
        let sending = async {
            let sent_nonce = self
                .config
                .dpop
                .as_ref()
                .and_then(|dpop| dpop.nonce(Server::Resource, request.url()));
            let response = self.attempt(request, call, resend).await?;
            let refused = self.refused_for_nonce(&response, sent_nonce.as_deref());
            let Some(again) = template.filter(|_| refused) else {
                return Ok(response);
            };
            if !may_resend(call, resend) {
                return Ok(response);
            }
            drop(response);
            self.attempt(again, call, resend).await
        };
        let result = match bound {
            Bound::Unbound => sending.await,
            Bound::Lifetime(grace) => {
                let ended = async {
                    self.lifetime.cancelled().await;
                    tokio::time::sleep(grace).await;
                };
                tokio::select! {
                    result = sending => result,
                    () = ended => {
                        return Err(StreamableHttpError::Client(HttpError::Closed));
                    }
                }
            }
        };
        result.map_err(|error| {
            if error.is_connect() {
                if let Some(call) = call {
                    call.mark_not_sent();
                }
                self.failed(call, Failure::Connect);
                StreamableHttpError::Client(HttpError::Connect)
            } else if error.is_builder() {
                self.failed(call, Failure::Build);
                StreamableHttpError::Client(HttpError::Build)
            } else {
                self.failed(call, Failure::Broken);
                StreamableHttpError::Client(HttpError::Broken)
            }
        })
    }

    /// One attempt of a request (with its proof), once more on a fresh connection when it
    /// failed before it could reach the server and `resend` allows it. A nonce the server
    /// gives is kept.
    async fn attempt(
        &self,
        mut request: reqwest::Request,
        call: Option<&CallState>,
        resend: Resend,
    ) -> std::result::Result<reqwest::Response, reqwest::Error> {
        let again = request.try_clone();
        self.prove(&mut request);
        let error = match self.clients.pooled.execute(request).await {
            Ok(response) => {
                self.learn_nonce(&response);
                return Ok(response);
            }
            Err(error) => error,
        };
        let resend = match resend {
            Resend::Once => !error.is_builder(),
            // Unsent, and not given up meanwhile: it may go again, once.
            Resend::IfUnsent => provably_unsent(&error) && may_resend(call, resend),
        };
        match again.filter(|_| resend) {
            Some(mut request) => {
                self.clients.resends.fetch_add(1, Ordering::Relaxed);
                self.prove(&mut request);
                let response = self.clients.fresh.execute(request).await?;
                self.learn_nonce(&response);
                Ok(response)
            }
            None => Err(error),
        }
    }

    /// Puts a fresh DPoP proof on a request that presents the DPoP-bound token.
    fn prove(&self, request: &mut reqwest::Request) {
        let Some(dpop) = &self.config.dpop else {
            return;
        };
        let token = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix(DPOP_SCHEME))
            .map(str::to_owned);
        let proof = token.and_then(|token| {
            dpop.proof(
                Server::Resource,
                request.method().as_str(),
                request.url(),
                Some(&token),
            )
        });
        match proof.and_then(|proof| HeaderValue::from_str(&proof).ok()) {
            Some(proof) => {
                request.headers_mut().insert(dpop::PROOF_HEADER, proof);
            }
            None => {
                request.headers_mut().remove(dpop::PROOF_HEADER);
            }
        }
    }

    /// Keeps the DPoP nonce a response carries (any response may, RFC 9449 section 9).
    fn learn_nonce(&self, response: &reqwest::Response) {
        if let (Some(dpop), Some(nonce)) = (
            &self.config.dpop,
            response
                .headers()
                .get(dpop::NONCE_HEADER)
                .and_then(|value| value.to_str().ok()),
        ) {
            dpop.learn(Server::Resource, response.url(), nonce);
        }
    }

    /// Whether the server refused a DPoP request for want of a nonce, and gave one other
    /// than `sent` (the same one again would be refused again).
    fn refused_for_nonce(&self, response: &reqwest::Response, sent: Option<&str>) -> bool {
        let headers = response.headers();
        let given = headers
            .get(dpop::NONCE_HEADER)
            .and_then(|value| value.to_str().ok());
        self.config.dpop.is_some()
            && given.is_some_and(|given| Some(given) != sent)
            && dpop::resource_wants_nonce(
                response.status().as_u16(),
                headers
                    .get(header::WWW_AUTHENTICATE)
                    .and_then(|value| value.to_str().ok()),
            )
    }

    /// The request's credentials: `Authorization: Bearer`, or `Authorization: DPoP` for a
    /// DPoP-bound token (its proof is added as each attempt is sent); the headers rmcp
    /// asks for; the session.
    fn authorize(
        &self,
        request: reqwest::RequestBuilder,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        session_id: Option<&str>,
    ) -> reqwest::RequestBuilder {
        let mut request = request;
        match (auth_header, &self.config.dpop) {
            (Some(token), Some(_)) => {
                request = request.header(header::AUTHORIZATION, format!("{DPOP_SCHEME}{token}"));
            }
            (Some(token), None) => request = request.bearer_auth(token),
            (None, _) => {}
        }
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        if let Some(session_id) = session_id {
            request = request.header(SESSION_HEADER, session_id);
        }
        request
    }

    /// A message from the server, before anything reads it (see `wire::ingress`): its
    /// secrets hidden, and refused when its shape is past our bounds (the refusal is
    /// recorded for the call, or the transport).
    fn admit<'t>(
        &self,
        json: &'t str,
        expect: Expect,
        call: Option<&CallState>,
    ) -> Result<Cow<'t, str>> {
        match ingress::inspect(&self.config.redactor, json, expect, self.session.listed()) {
            Ok((text, tools)) => {
                self.session.add_listed(tools);
                Ok(text)
            }
            Err(refused) => Err(self.refuse(refused, call)),
        }
    }

    /// Records a refused message (for the call, or the transport); the error ends it.
    fn refuse(&self, refused: Refused, call: Option<&CallState>) -> StreamableHttpError<HttpError> {
        self.failed(
            call,
            match refused {
                Refused::Blocks => Failure::TooManyBlocks,
                Refused::Tools => Failure::TooManyTools,
                Refused::Values { answer } => Failure::TooManyValues { answer },
            },
        );
        StreamableHttpError::Client(HttpError::TooLarge)
    }

    /// Reads a whole body, bounded; counts it against the call's budget when there is one.
    async fn read_body(
        &self,
        response: reqwest::Response,
        limit: usize,
        call: Option<&CallState>,
    ) -> Result<Bytes> {
        if response
            .content_length()
            .is_some_and(|len| len > limit as u64)
        {
            if let Some(call) = call {
                call.raise_overflow();
            }
            return Err(StreamableHttpError::Client(HttpError::TooLarge));
        }
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        loop {
            let chunk = tokio::select! {
                chunk = stream.next() => chunk,
                () = self.lifetime.cancelled() => {
                    return Err(StreamableHttpError::Client(HttpError::Closed));
                }
            };
            let Some(chunk) = chunk else { break };
            let chunk = chunk.map_err(|_| {
                self.failed(call, Failure::Broken);
                StreamableHttpError::Client(HttpError::Broken)
            })?;
            let within = match call {
                Some(call) => call.count(chunk.len()),
                None => {
                    body.len() + chunk.len() <= limit
                        && self.session.count(chunk.len(), self.config.non_call_budget)
                }
            };
            if !within || body.len() + chunk.len() > limit {
                if let Some(call) = call {
                    call.raise_overflow();
                }
                return Err(StreamableHttpError::Client(HttpError::TooLarge));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Bytes::from(body))
    }
}

impl StreamableHttpClient for HttpBackend {
    type Error = HttpError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse> {
        self.post(uri, message, session_id, auth_header, custom_headers)
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        // Our own bounds apply: the call's budget, or `max_response_bytes`.
        _limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse> {
        self.post(uri, message, session_id, auth_header, custom_headers)
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<()> {
        self.delete(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, std::result::Result<Sse, SseError>>> {
        self.stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read as _;

    use super::*;

    /// What a test server does with its listener.
    type Server = fn(std::net::TcpListener);

    /// Whether a request that fails against `server` counts as provably unsent; `None`: a
    /// port where nothing listens (bound, then closed before the request).
    async fn unsent_when(server: Option<Server>) -> bool {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let thread = match server {
            Some(server) => Some(std::thread::spawn(move || server(listener))),
            None => {
                drop(listener);
                None
            }
        };
        let client = super::config::pooled_client(&Default::default()).unwrap();
        let error = client
            .post(&url)
            .body("{}")
            .send()
            .await
            .expect_err("the server answers nothing");
        if let Some(thread) = thread {
            thread.join().unwrap();
        }
        provably_unsent(&error)
    }

    #[tokio::test]
    async fn only_a_request_that_never_left_is_provably_unsent() {
        // (what the server does, provably unsent)
        let cases: [(&str, Option<Server>, bool); 2] = [
            // Nothing listens: no connection, nothing written.
            ("refused", None, true),
            // The request was read, then the connection closed without an answer.
            (
                "read, then closed",
                Some(|listener| {
                    let (mut stream, _) = listener.accept().unwrap();
                    let mut request = [0u8; 1024];
                    let _ = stream.read(&mut request).unwrap();
                }),
                false,
            ),
        ];
        for (what, server, unsent) in cases {
            assert_eq!(unsent_when(server).await, unsent, "{what}");
        }
    }
}
