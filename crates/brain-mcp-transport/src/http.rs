//! Our HTTP backend for rmcp's Streamable HTTP client transport.
//!
//! rmcp's worker drives the protocol (sessions, SSE resumption, standard headers); this
//! backend only moves bytes, and adds what a per-call tool layer needs:
//! - a call's response is counted against its byte budget as it is read (memory stays
//!   bounded by the budget), and past it the stream fails and the call is told;
//! - a call's progress notifications are routed to it from its own response stream, in
//!   wire order, before the result is handed to rmcp;
//! - the call ID is put on the wire as `progressToken` (see `calls.rs`);
//! - what happened to a call's POST (not written, HTTP status, broken stream) is recorded
//!   for error classification;
//! - the standalone GET stream is refused unless asked for (a one-call session has no
//!   use for it);
//! - the session ID is tracked, so the session can be deleted even when rmcp cannot;
//! - every request ends when the transport's lifetime token is cancelled, so a hung
//!   server cannot keep a worker task alive.

use std::{
    borrow::Cow,
    collections::HashMap,
    pin::Pin,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll, ready},
    time::Duration,
};

use bytes::Bytes;
use futures::{Stream, StreamExt, stream::BoxStream};
use http::{HeaderName, HeaderValue, StatusCode, header};
use rmcp::{
    model::{
        ClientJsonRpcMessage, ClientRequest, ErrorData, JsonRpcMessage, RequestId,
        ServerJsonRpcMessage,
    },
    transport::streamable_http_client::{
        SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
        StreamableHttpResponseLimits,
    },
};
use sse_stream::{Sse, SseStream};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::calls::{CallState, Failure, Registry};

const SESSION_HEADER: &str = "mcp-session-id";
const LAST_EVENT_ID_HEADER: &str = "last-event-id";
const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";
/// How much of an error body is read to find a JSON-RPC error in it.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

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

/// What the backend knows about its session, for cleanup and classification.
#[derive(Debug, Default)]
pub(crate) struct SessionTracker {
    id: Mutex<Option<Arc<str>>>,
    headers: Mutex<HashMap<HeaderName, HeaderValue>>,
    deleted: AtomicBool,
    failure: Mutex<Option<Failure>>,
    /// Set once the standalone GET stream was answered (or refused).
    standalone: Latch,
    /// Whether an `initialize` went out, and set once it was answered (or failed): a
    /// session the server created for it can only be deleted once its id is known.
    initializing: AtomicBool,
    initialized: Latch,
}

/// A flag that can be awaited.
#[derive(Debug, Default)]
struct Latch {
    set: AtomicBool,
    notify: Notify,
}

impl Latch {
    fn set(&self) {
        self.set.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    async fn wait(&self) {
        loop {
            let notified = self.notify.notified();
            if self.set.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }
}

impl SessionTracker {
    /// The session the server issued, if it was not deleted yet.
    pub(crate) fn undeleted(&self) -> Option<(Arc<str>, HashMap<HeaderName, HeaderValue>)> {
        if self.deleted.load(Ordering::Acquire) {
            return None;
        }
        let id = self
            .id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()?;
        let headers = self
            .headers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        Some((id, headers))
    }

    /// The first failure of a request that was not a call (the handshake, discovery).
    pub(crate) fn failure(&self) -> Option<Failure> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, failure: Failure) {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(failure);
    }

    /// Resolves once the standalone GET stream was answered (or refused).
    pub(crate) async fn standalone_settled(&self) {
        self.standalone.wait().await;
    }

    /// Resolves once the `initialize` request (if one went out) was answered or failed,
    /// so that the session it created, if any, is known.
    pub(crate) async fn initialize_settled(&self) {
        if self.initializing.load(Ordering::Acquire) {
            self.initialized.wait().await;
        }
    }

    fn issued(&self, id: &str) {
        *self.id.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::from(id));
    }

    fn used_headers(&self, headers: &HashMap<HeaderName, HeaderValue>) {
        let mut kept = self.headers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(version) = headers.get("mcp-protocol-version") {
            kept.insert(
                HeaderName::from_static("mcp-protocol-version"),
                version.clone(),
            );
        }
    }
}

/// Per-transport settings of the backend.
#[derive(Debug, Clone)]
pub(crate) struct BackendConfig {
    /// Open the standalone GET stream when rmcp asks for it.
    pub(crate) standalone_stream: bool,
    /// Bound on one SSE event, and on a response that is not a call's.
    pub(crate) max_response_bytes: usize,
    /// How many times one call's response stream may be resumed.
    pub(crate) max_resumes: usize,
    /// How long an `initialize` still has after the transport's lifetime ended.
    pub(crate) initialize_grace: Duration,
}

/// The backend; cheap to clone (rmcp clones it per request).
#[derive(Debug, Clone)]
pub(crate) struct HttpBackend {
    client: reqwest::Client,
    registry: Arc<Registry>,
    session: Arc<SessionTracker>,
    lifetime: CancellationToken,
    config: BackendConfig,
}

impl HttpBackend {
    pub(crate) fn new(
        client: reqwest::Client,
        registry: Arc<Registry>,
        lifetime: CancellationToken,
        config: BackendConfig,
    ) -> Self {
        Self {
            client,
            registry,
            session: Arc::default(),
            lifetime,
            config,
        }
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
    ) -> Result<reqwest::Response> {
        self.send_with_grace(request, call, Duration::ZERO).await
    }

    /// Sends a request; once the lifetime ends it still gets `grace` to finish.
    async fn send_with_grace(
        &self,
        request: reqwest::RequestBuilder,
        call: Option<&CallState>,
        grace: Duration,
    ) -> Result<reqwest::Response> {
        let ended = async {
            self.lifetime.cancelled().await;
            tokio::time::sleep(grace).await;
        };
        let result = tokio::select! {
            result = request.send() => result,
            () = ended => {
                return Err(StreamableHttpError::Client(HttpError::Closed));
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
                self.failed(call, Failure::InvalidUrl);
                StreamableHttpError::Client(HttpError::Build)
            } else {
                self.failed(call, Failure::Broken);
                StreamableHttpError::Client(HttpError::Broken)
            }
        })
    }

    fn authorize(
        request: reqwest::RequestBuilder,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        session_id: Option<&str>,
    ) -> reqwest::RequestBuilder {
        let mut request = request;
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        if let Some(session_id) = session_id {
            request = request.header(SESSION_HEADER, session_id);
        }
        request
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
                None => body.len() + chunk.len() <= limit,
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

    /// A response's SSE events. For a call's stream: its progress is routed to it, a
    /// response to another request id fails the stream (`expected` is the call's request
    /// id; `None` on a resumed stream, where any response is the answer), nothing after the
    /// answer is counted or passed on, and event ids carry the call's key so that a resumed
    /// stream finds its call.
    fn sse(
        &self,
        response: reqwest::Response,
        call: Option<CallStream>,
    ) -> BoxStream<'static, std::result::Result<Sse, SseError>> {
        // Set once the call's answer went past: what follows (rmcp drains the stream a
        // moment) is neither counted against the budget nor routed.
        let answered = Arc::new(AtomicBool::new(false));
        let bytes = CountedBytes {
            inner: response.bytes_stream().boxed(),
            call: call.as_ref().map(|stream| Arc::clone(&stream.call)),
            answered: Arc::clone(&answered),
            event: EventSizeLimiter::new(
                call.as_ref()
                    .map_or(self.config.max_response_bytes, |stream| {
                        stream.call.budget()
                    }),
            ),
            failed: false,
        };
        let lifetime = self.lifetime.clone();
        let events = SseStream::from_bytes_stream(bytes)
            .take_until(async move { lifetime.cancelled().await });
        let Some(CallStream {
            key,
            call,
            expected,
        }) = call
        else {
            return events.boxed();
        };
        events
            .filter_map(move |event| {
                let event = match event {
                    Ok(_) if answered.load(Ordering::Acquire) => None,
                    Ok(sse) => {
                        let id = sse
                            .id
                            .as_ref()
                            .map(|id| format!("{RESUME_PREFIX}{key}:{id}"));
                        if route_progress(&call, &sse) {
                            // Delivered to the call. rmcp still sees the event's id (and
                            // retry), without data, so a resumed stream starts after it.
                            (id.is_some() || sse.retry.is_some()).then_some(Ok(Sse {
                                id,
                                data: None,
                                event: None,
                                retry: sse.retry,
                            }))
                        } else {
                            match response_to(&sse, expected.as_ref()) {
                                Response::Other => Some(Ok(Sse { id, ..sse })),
                                Response::Ours => {
                                    answered.store(true, Ordering::Release);
                                    Some(Ok(Sse { id, ..sse }))
                                }
                                Response::Wrong => {
                                    call.record(Failure::Protocol(WRONG_ID));
                                    Some(Err(SseError::InvalidLine))
                                }
                            }
                        }
                    }
                    Err(error) => {
                        call.record(Failure::Broken);
                        Some(Err(error))
                    }
                };
                std::future::ready(event)
            })
            .boxed()
    }
}

/// A call's response stream: the call, its registry key, and the request id it answers.
struct CallStream {
    key: u64,
    call: Arc<CallState>,
    expected: Option<RequestId>,
}

/// Event ids of a call's stream are given to rmcp as `brain:<key>:<server's id>`; rmcp
/// hands them back to `get_stream` to resume, which strips the prefix.
const RESUME_PREFIX: &str = "brain:";

const WRONG_ID: &str = "a response to another request id";

/// False when the message is a response (or error) for another request than `expected`.
fn answers(message: &ServerJsonRpcMessage, expected: Option<&RequestId>) -> bool {
    let Some(expected) = expected else {
        return true;
    };
    let id = match message {
        JsonRpcMessage::Response(response) => Some(&response.id),
        JsonRpcMessage::Error(error) => error.id.as_ref(),
        _ => return true,
    };
    // rmcp matches a numeric id sent back as a string too.
    id.is_some_and(|id| id.to_string() == expected.to_string())
}

/// What an SSE event of a call's stream is to that call.
enum Response {
    /// Not a response (a notification, a request, a priming event).
    Other,
    /// The answer to the call.
    Ours,
    /// A response to another request.
    Wrong,
}

/// Reads only what is needed: events that look like responses, and only their id (serde
/// skips the rest without building it).
fn response_to(sse: &Sse, expected: Option<&RequestId>) -> Response {
    let Some(data) = sse.data.as_deref() else {
        return Response::Other;
    };
    let looks_like_response =
        (data.contains("\"result\"") || data.contains("\"error\"")) && !data.contains("\"method\"");
    if !looks_like_response {
        return Response::Other;
    }
    #[derive(serde::Deserialize)]
    struct Envelope {
        id: Option<RequestId>,
    }
    let Ok(envelope) = serde_json::from_str::<Envelope>(data) else {
        return Response::Other;
    };
    match expected {
        None => Response::Ours,
        Some(expected)
            if envelope
                .id
                .is_some_and(|id| id.to_string() == expected.to_string()) =>
        {
            Response::Ours
        }
        Some(_) => Response::Wrong,
    }
}

/// Routes an SSE event to its call if it is one of the call's progress notifications.
/// Returns true when the event was consumed.
fn route_progress(call: &CallState, sse: &Sse) -> bool {
    let Some(data) = sse.data.as_deref() else {
        return false;
    };
    if !data.contains("notifications/progress") {
        return false;
    }
    serde_json::from_str::<ServerJsonRpcMessage>(data).is_ok_and(|message| call.route(&message))
}

fn content_type(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(|value| {
            value
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
}

fn is_discover(message: &ClientJsonRpcMessage) -> bool {
    matches!(
        message,
        JsonRpcMessage::Request(request)
            if matches!(request.request, ClientRequest::DiscoverRequest(_))
    )
}

fn is_initialize(message: &ClientJsonRpcMessage) -> bool {
    matches!(
        message,
        JsonRpcMessage::Request(request)
            if matches!(request.request, ClientRequest::InitializeRequest(_))
    )
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
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        mut message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        _limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse> {
        let initialize = is_initialize(&message);
        if initialize {
            self.session.initializing.store(true, Ordering::Release);
        }
        let _initialized = SetOnDrop(initialize.then_some(&self.session.initialized));
        // A call given up while its request waited in rmcp's queue stays unsent.
        let Ok(claimed) = self.registry.claim(&mut message) else {
            return Err(StreamableHttpError::Client(HttpError::Closed));
        };
        let call = claimed.as_ref().map(|(_, call)| Arc::clone(call));
        let request_id = match &message {
            JsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let body = serde_json::to_vec(&message)?;
        if session_id.is_some() {
            self.session.used_headers(&custom_headers);
        }
        let request = self
            .client
            .post(uri.as_ref())
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header(header::CONTENT_TYPE, JSON)
            .body(body);
        let request = Self::authorize(request, auth_header, custom_headers, session_id.as_deref());
        // An initialize the caller gave up on may still create a session: let it finish
        // (briefly) so the session can be deleted.
        let grace = if initialize {
            self.config.initialize_grace
        } else {
            Duration::ZERO
        };
        let response = self
            .send_with_grace(request, call.as_deref(), grace)
            .await?;
        let status = response.status();
        if let Some(call) = &call {
            call.mark_written();
        }
        let issued_session = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        if let (Some(issued), true) = (&issued_session, initialize) {
            self.session.issued(issued);
        }
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !status.is_success() {
            return self
                .unsuccessful(response, &message, session_id.is_some(), call.as_deref())
                .await;
        }
        let awaits_response = matches!(message, JsonRpcMessage::Request(_));
        match content_type(&response).as_deref() {
            Some(EVENT_STREAM) => Ok(StreamableHttpPostResponse::Sse(
                self.sse(
                    response,
                    claimed.map(|(key, call)| CallStream {
                        key,
                        call,
                        expected: request_id,
                    }),
                ),
                issued_session,
            )),
            Some(JSON) => {
                let limit = call
                    .as_ref()
                    .map_or(self.config.max_response_bytes, |call| call.budget());
                let body = self.read_body(response, limit, call.as_deref()).await?;
                if !awaits_response {
                    return Ok(StreamableHttpPostResponse::Accepted);
                }
                match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
                    Ok(reply) if !answers(&reply, request_id.as_ref()) => {
                        self.failed(call.as_deref(), Failure::Protocol(WRONG_ID));
                        Err(StreamableHttpError::UnexpectedServerResponse(
                            Cow::Borrowed(WRONG_ID),
                        ))
                    }
                    Ok(reply) => Ok(StreamableHttpPostResponse::Json(reply, issued_session)),
                    Err(_) => {
                        self.failed(call.as_deref(), Failure::Protocol("a malformed JSON body"));
                        Err(StreamableHttpError::UnexpectedServerResponse(
                            Cow::Borrowed("malformed JSON body"),
                        ))
                    }
                }
            }
            _ if !awaits_response => Ok(StreamableHttpPostResponse::Accepted),
            other => {
                self.failed(
                    call.as_deref(),
                    Failure::Protocol("an unexpected content type"),
                );
                Err(StreamableHttpError::UnexpectedContentType(
                    other.map(str::to_owned),
                ))
            }
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<()> {
        self.session.deleted.store(true, Ordering::Release);
        let request = Self::authorize(
            self.client.delete(uri.as_ref()),
            auth_header,
            custom_headers,
            Some(&session_id),
        );
        // Not bound to the lifetime token: a DELETE is what closing sends. rmcp bounds it
        // (5 s), and so do we.
        let response = request
            .send()
            .await
            .map_err(|_| StreamableHttpError::Client(HttpError::Broken))?;
        let status = response.status();
        if status.is_success() || status == StatusCode::METHOD_NOT_ALLOWED {
            Ok(())
        } else {
            Err(StreamableHttpError::Client(HttpError::Status(
                status.as_u16(),
            )))
        }
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, std::result::Result<Sse, SseError>>> {
        // A resumed call stream continues its call (its key is in the event id); a new
        // standalone stream belongs to no call and is only opened when asked for.
        let (resumed, last_event_id) = match last_event_id {
            Some(id) => match id
                .strip_prefix(RESUME_PREFIX)
                .and_then(|rest| rest.split_once(':'))
                .and_then(|(key, id)| Some((key.parse::<u64>().ok()?, id.to_owned())))
            {
                Some((key, id)) => match self.registry.get(key) {
                    Some(call) => (Some((key, call)), Some(id)),
                    // The call is over: its stream is not resumed.
                    None => return Err(StreamableHttpError::ServerDoesNotSupportSse),
                },
                None => (None, Some(id)),
            },
            None if self.config.standalone_stream => (None, None),
            None => return Err(StreamableHttpError::ServerDoesNotSupportSse),
        };
        let call = resumed.as_ref().map(|(_, call)| Arc::clone(call));
        // Tells a waiting session when its standalone stream is answered, however this ends.
        let _settle = SetOnDrop(last_event_id.is_none().then_some(&self.session.standalone));
        // Resume a stream the server closed (SEP-1699 polling), a bounded number of times;
        // not one that broke or went over budget: waiting on a server that cannot resume
        // would hold the call to its deadline, so a broken stream fails the call at once.
        if call.as_ref().is_some_and(|call| {
            call.is_overflowed()
                || call.failure().is_some()
                || call.resumed() >= self.config.max_resumes
        }) {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let mut request = Self::authorize(
            self.client
                .get(uri.as_ref())
                .header(header::ACCEPT, EVENT_STREAM),
            auth_header,
            custom_headers,
            session_id.as_deref(),
        );
        if let Some(id) = &last_event_id {
            request = request.header(LAST_EVENT_ID_HEADER, id.as_str());
        }
        if let Some(call) = &call {
            call.count_resume();
        }
        let response = self.send(request, call.as_deref()).await?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !status.is_success() {
            self.failed(call.as_deref(), Failure::Status(status.as_u16()));
            return Err(StreamableHttpError::Client(HttpError::Status(
                status.as_u16(),
            )));
        }
        if content_type(&response).as_deref() != Some(EVENT_STREAM) {
            self.failed(
                call.as_deref(),
                Failure::Protocol("an unexpected content type"),
            );
            return Err(StreamableHttpError::UnexpectedContentType(content_type(
                &response,
            )));
        }
        Ok(self.sse(
            response,
            resumed.map(|(key, call)| CallStream {
                key,
                call,
                expected: None,
            }),
        ))
    }
}

impl HttpBackend {
    /// A non-success answer. A `server/discover` rejected with a 4xx (other than 401/403)
    /// before any session is how an older server says it does not know the 2026-07-28
    /// lifecycle: hand rmcp a correlated JSON-RPC error so it can fall back (or retry at
    /// another version, for `-32022`). Everything else is an HTTP status error.
    async fn unsuccessful(
        &self,
        response: reqwest::Response,
        message: &ClientJsonRpcMessage,
        session_attached: bool,
        call: Option<&CallState>,
    ) -> Result<StreamableHttpPostResponse> {
        let status = response.status();
        self.failed(call, Failure::Status(status.as_u16()));
        let discover_fallback = is_discover(message)
            && !session_attached
            && status.is_client_error()
            && !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
        if !discover_fallback {
            return Err(StreamableHttpError::Client(HttpError::Status(
                status.as_u16(),
            )));
        }
        let JsonRpcMessage::Request(request) = message else {
            return Err(StreamableHttpError::Client(HttpError::Status(
                status.as_u16(),
            )));
        };
        let body = self
            .read_body(response, ERROR_BODY_LIMIT, None)
            .await
            .unwrap_or_default();
        let error = match serde_json::from_slice::<ServerJsonRpcMessage>(&body) {
            Ok(JsonRpcMessage::Error(error)) => error.error,
            _ => ErrorData::invalid_request(
                format!("server/discover rejected with HTTP {}", status.as_u16()),
                None,
            ),
        };
        Ok(StreamableHttpPostResponse::Json(
            ServerJsonRpcMessage::error(error, Some(request.id.clone())),
            None,
        ))
    }
}

/// Sets a latch when dropped, however the request that holds it ends.
struct SetOnDrop<'a>(Option<&'a Latch>);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(latch) = self.0 {
            latch.set();
        }
    }
}

/// Counts a response's bytes against its call's budget (or bounds one event when the
/// stream belongs to no call), and fails the stream past the bound.
struct CountedBytes {
    inner: BoxStream<'static, reqwest::Result<Bytes>>,
    call: Option<Arc<CallState>>,
    /// The call's answer went past: the rest is not the call's.
    answered: Arc<AtomicBool>,
    event: EventSizeLimiter,
    failed: bool,
}

/// A response stream that went over its bound, or broke.
#[derive(Debug, thiserror::Error)]
enum StreamError {
    #[error("the response exceeded its byte budget")]
    TooLarge,
    #[error("the connection broke")]
    Broken,
}

impl Stream for CountedBytes {
    type Item = std::result::Result<Bytes, StreamError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.failed {
            return Poll::Ready(None);
        }
        let call = self
            .call
            .as_ref()
            .filter(|_| !self.answered.load(Ordering::Acquire))
            .cloned();
        match ready!(self.inner.poll_next_unpin(cx)) {
            Some(Ok(chunk)) => {
                let within_call = call.as_ref().is_none_or(|call| call.count(chunk.len()));
                if !within_call || !self.event.observe(&chunk) {
                    self.failed = true;
                    if let Some(call) = &call {
                        call.raise_overflow();
                    }
                    return Poll::Ready(Some(Err(StreamError::TooLarge)));
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Some(Err(_)) => {
                self.failed = true;
                if let Some(call) = &call {
                    call.record(Failure::Broken);
                }
                Poll::Ready(Some(Err(StreamError::Broken)))
            }
            None => Poll::Ready(None),
        }
    }
}

/// Bounds the bytes of one SSE event (bytes since the last blank line).
#[derive(Debug)]
struct EventSizeLimiter {
    max: usize,
    current: usize,
    line_empty: bool,
    previous_cr: bool,
}

impl EventSizeLimiter {
    fn new(max: usize) -> Self {
        Self {
            max,
            current: 0,
            line_empty: true,
            previous_cr: false,
        }
    }

    fn observe(&mut self, chunk: &[u8]) -> bool {
        for &byte in chunk {
            let previous_cr = std::mem::replace(&mut self.previous_cr, byte == b'\r');
            match byte {
                b'\n' if previous_cr => {}
                b'\r' | b'\n' => {
                    if self.line_empty {
                        self.current = 0;
                    }
                    self.line_empty = true;
                }
                _ => {
                    self.line_empty = false;
                    self.current += 1;
                    if self.current > self.max {
                        return false;
                    }
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_limiter_resets_at_blank_lines() {
        let mut limiter = EventSizeLimiter::new(12);
        assert!(limiter.observe(b"data: 12345\n\n"));
        assert!(limiter.observe(b"data: 12\r\n\r\ndata: 1234"));
        assert!(!limiter.observe(b"5678"));
    }
}
