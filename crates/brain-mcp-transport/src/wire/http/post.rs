//! The POST of one message, and what its answer is to rmcp.

use std::{
    borrow::Cow,
    collections::HashMap,
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use futures::StreamExt;
use http::{HeaderName, HeaderValue, StatusCode, header};
use rmcp::{
    model::{
        ClientJsonRpcMessage, ClientRequest, ErrorData, JsonRpcMessage, RequestId,
        ServerJsonRpcMessage,
    },
    transport::streamable_http_client::{StreamableHttpError, StreamableHttpPostResponse},
};

use super::{
    EVENT_STREAM, HttpBackend, HttpError, JSON, Resend, Result, SESSION_HEADER, refusal,
    session::SetOnDrop,
    sse_filter::{Reply, UNEXPECTED_CONTENT_TYPE, WRONG_ID, media_type, reply_to},
    stream::CallStream,
};
use crate::{
    call_state::{CallState, Kind},
    error::{Challenge, classify::Failure},
    wire::ingress::{self, Expect},
};

/// How much of an error body is read to find a JSON-RPC error or a reason in it.
const ERROR_BODY_LIMIT: usize = 64 * 1024;
/// How long an error body may take to arrive: a server that sends a status and then
/// stalls must not hold the refusal until the deadline.
const ERROR_BODY_WAIT: Duration = Duration::from_secs(2);
/// Why an answer to a request is not one.
const NO_ANSWER: &str = "no answer to a request (HTTP 202 or 204, no body)";
const NOT_AN_ANSWER: &str = "a notification instead of an answer";
const MALFORMED_JSON: &str = "a malformed JSON body";

impl HttpBackend {
    /// POSTs one message and hands rmcp its answer: nothing (a notification or a
    /// response), a JSON reply, or an SSE stream.
    pub(super) async fn post(
        &self,
        uri: Arc<str>,
        mut message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
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
        let expect = match (&call, &message) {
            (Some(call), _) => ingress::expect_of(call),
            (None, JsonRpcMessage::Request(request))
                if matches!(request.request, ClientRequest::ListToolsRequest(_)) =>
            {
                Expect::List
            }
            _ => Expect::Other,
        };
        let request_id = match &message {
            JsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let body = serde_json::to_vec(&message)?;
        if session_id.is_some() {
            self.session.used_headers(&custom_headers);
        }
        let request = self
            .client()
            .post(uri.as_ref())
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header(header::CONTENT_TYPE, JSON)
            .body(body);
        let request = self.authorize(request, auth_header, custom_headers, session_id.as_deref());
        // An initialize the caller gave up on may still create a session: let it finish
        // (briefly) so the session can be deleted.
        let grace = if initialize {
            self.config.initialize_grace
        } else {
            Duration::ZERO
        };
        // A `tools/call` runs a tool: sent again only when it provably never left. An
        // `initialize` goes again after any failure before its answer: a server that
        // closes connections after answering would otherwise fail calls whose own
        // request never went out; the cost is a session the server may have opened for a
        // lost answer, which it keeps until it expires it.
        // A `tasks/get` runs nothing: it goes again like any other request.
        let resend = if call.as_ref().is_some_and(|call| call.kind() == Kind::Call) {
            Resend::IfUnsent
        } else {
            Resend::Once
        };
        let response = self
            .send_with_grace(request, call.as_deref(), resend, grace)
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
        // rmcp logs the session id: one that spells a secret is refused, never kept.
        if issued_session
            .as_deref()
            .is_some_and(|id| matches!(self.config.redactor.text(id), Cow::Owned(_)))
        {
            return Err(self.not_mcp(call.as_deref(), "a session id that holds a secret"));
        }
        if let (Some(issued), true) = (&issued_session, initialize) {
            self.session.issued(issued);
        }
        let awaits_response = request_id.is_some();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            if awaits_response {
                // rmcp would wait for an answer that cannot come.
                return Err(self.not_mcp(call.as_deref(), NO_ANSWER));
            }
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if !status.is_success() {
            return self
                .unsuccessful(
                    response,
                    &message,
                    &uri,
                    session_id.is_some(),
                    call.as_deref(),
                )
                .await;
        }
        let media = media_type(
            response
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|value| value.to_str().ok()),
        );
        match media.as_deref() {
            Some(EVENT_STREAM) => Ok(StreamableHttpPostResponse::Sse(
                self.events(
                    response,
                    claimed.map(|(key, call)| CallStream {
                        key,
                        call,
                        expected: request_id,
                    }),
                    expect,
                ),
                issued_session,
            )),
            Some(JSON) => {
                let limit = call
                    .as_ref()
                    .map_or(self.config.max_response_bytes, |call| call.budget());
                let body = self.read_body(response, limit, call.as_deref()).await?;
                let Some(expected) = &request_id else {
                    return Ok(StreamableHttpPostResponse::Accepted);
                };
                let Ok(text) = std::str::from_utf8(&body) else {
                    return Err(self.not_mcp(call.as_deref(), MALFORMED_JSON));
                };
                let text = self.admit(text, expect, call.as_deref())?;
                let Ok(reply) = serde_json::from_str::<ServerJsonRpcMessage>(&text) else {
                    return Err(self.not_mcp(call.as_deref(), MALFORMED_JSON));
                };
                match reply_to(&reply, expected) {
                    Reply::Answer => Ok(StreamableHttpPostResponse::Json(reply, issued_session)),
                    Reply::WrongId => Err(self.not_mcp(call.as_deref(), WRONG_ID)),
                    Reply::NotAResponse => Err(self.not_mcp(call.as_deref(), NOT_AN_ANSWER)),
                }
            }
            _ if !awaits_response => Ok(StreamableHttpPostResponse::Accepted),
            _ => Err(self.not_mcp(call.as_deref(), UNEXPECTED_CONTENT_TYPE)),
        }
    }

    /// A non-success answer.
    ///
    /// - A JSON-RPC error for this request in the body, with a status other than 401 or
    ///   403, is the server's answer: the 2026-07-28 revision sends some errors with an
    ///   HTTP status (-32601 as 404; -32020, -32021, -32022 as 400). rmcp gets it as the
    ///   answer, so the call's error says what the server answered (and whether that
    ///   proves the tool did not run).
    /// - A `server/discover` rejected with a 4xx (other than 401/403) before any session
    ///   is how an older server says it does not know the 2026-07-28 lifecycle: rmcp gets
    ///   a correlated JSON-RPC error so it can fall back (or retry at another version,
    ///   for `-32022`).
    /// - Everything else is an HTTP status error, with what the body said (secrets
    ///   hidden, bounded) and whether the URL looks like the old HTTP+SSE transport's.
    async fn unsuccessful(
        &self,
        response: reqwest::Response,
        message: &ClientJsonRpcMessage,
        uri: &str,
        session_attached: bool,
        call: Option<&CallState>,
    ) -> Result<StreamableHttpPostResponse> {
        let status = response.status();
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|value: &HeaderValue| value.to_str().ok())
                .map(str::to_owned)
        };
        // A refusal for want of authorization: the challenge goes with the failure, so
        // the authorization layer can obtain a token and send the request once more.
        let challenge = Challenge::of(status.as_u16(), header(header::WWW_AUTHENTICATE).as_deref());
        let media = media_type(header(header::CONTENT_TYPE).as_deref());
        let allow = header(header::ALLOW);
        let body = self.read_error_body(response).await;
        let request = match message {
            JsonRpcMessage::Request(request) => Some(request),
            _ => None,
        };
        let authorizing = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN);
        if let Some(request) = request.filter(|_| !authorizing)
            && let Some(answer) = self.error_answer(&body, &request.id)
        {
            return Ok(StreamableHttpPostResponse::Json(answer, None));
        }
        let hidden = |reason: String| Arc::from(self.config.redactor.text(&reason).as_ref());
        let no_session = !session_attached;
        self.failed(
            call,
            Failure::Status {
                status: status.as_u16(),
                session: session_attached,
                challenge,
                reason: refusal::reason(status.as_u16(), media.as_deref(), &body).map(hidden),
                old_sse: no_session
                    && refusal::old_sse_transport(uri, status.as_u16(), allow.as_deref()),
            },
        );
        let discover_fallback =
            is_discover(message) && no_session && status.is_client_error() && !authorizing;
        match request.filter(|_| discover_fallback) {
            Some(request) => Ok(StreamableHttpPostResponse::Json(
                ServerJsonRpcMessage::error(
                    ErrorData::invalid_request(
                        format!("server/discover rejected with HTTP {}", status.as_u16()),
                        None,
                    ),
                    Some(request.id.clone()),
                ),
                None,
            )),
            None => Err(StreamableHttpError::Client(HttpError::Status(
                status.as_u16(),
            ))),
        }
    }

    /// The JSON-RPC error for request `id` in an error body, its secrets hidden, if the
    /// body is one.
    fn error_answer(&self, body: &[u8], id: &RequestId) -> Option<ServerJsonRpcMessage> {
        let text = std::str::from_utf8(body).ok()?;
        // Through the ingress like every answer: secrets hidden, its shape bounded.
        let (text, _) = ingress::inspect(&self.config.redactor, text, Expect::Other, 0).ok()?;
        let answer = serde_json::from_str::<ServerJsonRpcMessage>(&text).ok()?;
        match &answer {
            JsonRpcMessage::Error(error) if error.id.as_ref() == Some(id) => Some(answer),
            _ => None,
        }
    }

    /// The start of an error answer's body: at most [`ERROR_BODY_LIMIT`] bytes, within
    /// [`ERROR_BODY_WAIT`] and the transport's lifetime; what came by then (a body that
    /// breaks off is read as far as it came).
    async fn read_error_body(&self, response: reqwest::Response) -> Vec<u8> {
        let mut body = Vec::new();
        let mut stream = response.bytes_stream();
        let read = async {
            while let Some(Ok(chunk)) = stream.next().await {
                let room = ERROR_BODY_LIMIT - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if body.len() == ERROR_BODY_LIMIT {
                    break;
                }
            }
        };
        tokio::select! {
            () = read => {}
            () = tokio::time::sleep(ERROR_BODY_WAIT) => {}
            () = self.lifetime.cancelled() => {}
        }
        body
    }

    /// An answer that is not MCP: recorded (for the call, or the transport), and an error
    /// that ends the request in rmcp at once.
    pub(super) fn not_mcp(
        &self,
        call: Option<&CallState>,
        what: &'static str,
    ) -> StreamableHttpError<HttpError> {
        self.failed(call, Failure::Protocol(what));
        StreamableHttpError::UnexpectedServerResponse(Cow::Borrowed(what))
    }
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
