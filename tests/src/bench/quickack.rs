//! The `TCP_QUICKACK` prototype: an rmcp HTTP client on hyper-util's pooled client whose
//! connector wraps each `TcpStream` and re-arms `TCP_QUICKACK` after every read and
//! write, so that the client acknowledges a response's first segment at once instead of
//! holding the ACK for the delayed-ACK timer (about 40 ms on Linux) — which is what a
//! server that leaves Nagle's algorithm on waits for before it sends the rest of its
//! response on a reused connection.
//!
//! Why a client of its own: `reqwest` (which our transport and rmcp's default client use)
//! has no hook that sees the socket. Its `connector_layer` must return its own sealed
//! `Conn` type, so a layer can neither wrap the stream nor reach its file descriptor.
//! hyper-util's legacy client, which `reqwest` runs on, takes any connector.
//!
//! Linux only: elsewhere the wrapper only passes the calls through. `TCP_QUICKACK` is not
//! sticky (the kernel goes back to delayed ACKs once the exchange looks interactive, which
//! a request/response connection does after every request), hence the re-arming; each
//! re-arm is one `setsockopt`, about a microsecond.

use std::{
    borrow::Cow,
    collections::HashMap,
    future::Future,
    io,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use bytes::Bytes;
use futures::{StreamExt as _, stream::BoxStream};
use http::{HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Full};
use hyper_util::{
    client::legacy::{
        Client,
        connect::{Connected, Connection, HttpConnector},
    },
    rt::{TokioExecutor, TokioIo},
};
use rmcp::{
    model::{ClientJsonRpcMessage, ServerJsonRpcMessage},
    transport::streamable_http_client::{
        StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    },
};
use sse_stream::{Sse, SseStream};
use tokio::net::TcpStream;

/// A TCP stream that re-arms `TCP_QUICKACK` after every read and every write.
#[derive(Debug)]
pub(crate) struct QuickAckStream {
    io: TokioIo<TcpStream>,
    quickack: bool,
}

impl QuickAckStream {
    fn arm(&self) {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if self.quickack {
            // Best effort: a failure leaves the connection with delayed ACKs, as before.
            let _ = socket2::SockRef::from(self.io.inner()).set_tcp_quickack(true);
        }
    }
}

impl hyper::rt::Read for QuickAckStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if polled.is_ready() {
            self.arm();
        }
        polled
    }
}

impl hyper::rt::Write for QuickAckStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        if polled.is_ready() {
            self.arm();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if polled.is_ready() {
            self.arm();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl Connection for QuickAckStream {
    fn connected(&self) -> Connected {
        self.io.connected()
    }
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// hyper-util's TCP connector (`TCP_NODELAY` on, as our pooled client), its streams
/// wrapped in [`QuickAckStream`].
#[derive(Debug, Clone)]
pub(crate) struct QuickAckConnector {
    http: HttpConnector,
    quickack: bool,
}

impl QuickAckConnector {
    pub(crate) fn new(quickack: bool) -> Self {
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        http.set_connect_timeout(Some(Duration::from_secs(10)));
        Self { http, quickack }
    }
}

impl tower_service::Service<Uri> for QuickAckConnector {
    type Response = QuickAckStream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<QuickAckStream, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.http.call(uri);
        let quickack = self.quickack;
        Box::pin(async move {
            let stream = QuickAckStream {
                io: connecting.await?,
                quickack,
            };
            stream.arm();
            Ok(stream)
        })
    }
}

/// The error of [`HyperHttpClient`].
#[derive(Debug)]
pub(crate) struct HyperError(String);

impl std::fmt::Display for HyperError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HyperError {}

fn client_error(error: impl std::fmt::Display) -> StreamableHttpError<HyperError> {
    StreamableHttpError::Client(HyperError(error.to_string()))
}

/// rmcp's HTTP client trait on hyper-util's pooled client (plain HTTP only: enough for
/// the benchmark's loopback servers). A minimal port of rmcp's own clients: no response
/// limits, no auth challenges.
#[derive(Debug, Clone)]
pub(crate) struct HyperHttpClient {
    client: Client<QuickAckConnector, Full<Bytes>>,
    /// Whether the standalone GET stream is opened when rmcp asks for it (as rmcp's
    /// reqwest client does); off, the server is told to have none (as our transport does
    /// by default).
    standalone: bool,
}

impl HyperHttpClient {
    pub(crate) fn new(quickack: bool, standalone: bool) -> Self {
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .build(QuickAckConnector::new(quickack));
        Self { client, standalone }
    }
}

const SESSION_ID: &str = "mcp-session-id";
const LAST_EVENT_ID: &str = "last-event-id";

fn media_type_is(value: &HeaderValue, wanted: &str) -> bool {
    value
        .to_str()
        .ok()
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case(wanted))
}

fn request(
    method: Method,
    uri: &str,
    session_id: Option<&str>,
    auth: Option<String>,
    custom_headers: HashMap<HeaderName, HeaderValue>,
) -> http::request::Builder {
    let mut builder = Request::builder().method(method).uri(uri);
    if let Some(session) = session_id {
        builder = builder.header(SESSION_ID, session);
    }
    if let Some(auth) = auth {
        builder = builder.header(http::header::AUTHORIZATION, format!("Bearer {auth}"));
    }
    for (name, value) in custom_headers {
        builder = builder.header(name, value);
    }
    builder
}

impl StreamableHttpClient for HyperHttpClient {
    type Error = HyperError;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<HyperError>> {
        let body = serde_json::to_vec(&message)?;
        let attached = session_id.is_some();
        let request = request(
            Method::POST,
            &uri,
            session_id.as_deref(),
            auth,
            custom_headers,
        )
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "text/event-stream, application/json")
        .body(Full::new(Bytes::from(body)))
        .map_err(client_error)?;
        let response = self.client.request(request).await.map_err(client_error)?;
        let status = response.status();
        if matches!(status, StatusCode::ACCEPTED | StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        if status == StatusCode::NOT_FOUND && attached {
            return Err(StreamableHttpError::SessionExpired);
        }
        let session = response
            .headers()
            .get(SESSION_ID)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let content_type = response.headers().get(http::header::CONTENT_TYPE).cloned();
        if !status.is_success() {
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(client_error)?
                .to_bytes();
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("HTTP {status}: {}", String::from_utf8_lossy(&body)),
            )));
        }
        match content_type {
            Some(ct) if media_type_is(&ct, "text/event-stream") => {
                let stream: BoxStream<'static, Result<Sse, sse_stream::Error>> =
                    SseStream::from_bytes_stream(response.into_body().into_data_stream()).boxed();
                Ok(StreamableHttpPostResponse::Sse(stream, session))
            }
            Some(ct) if media_type_is(&ct, "application/json") => {
                let body = response
                    .into_body()
                    .collect()
                    .await
                    .map_err(client_error)?
                    .to_bytes();
                let message: ServerJsonRpcMessage = serde_json::from_slice(&body)?;
                Ok(StreamableHttpPostResponse::Json(message, session))
            }
            _ if !matches!(message, ClientJsonRpcMessage::Request(_)) => {
                Ok(StreamableHttpPostResponse::Accepted)
            }
            other => Err(StreamableHttpError::UnexpectedContentType(
                other.map(|ct| String::from_utf8_lossy(ct.as_bytes()).into_owned()),
            )),
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<HyperError>> {
        let request = request(
            Method::DELETE,
            &uri,
            Some(&session_id),
            auth,
            custom_headers,
        )
        .body(Full::new(Bytes::new()))
        .map_err(client_error)?;
        let response = self.client.request(request).await.map_err(client_error)?;
        let status = response.status();
        if status.is_success() || status == StatusCode::METHOD_NOT_ALLOWED {
            Ok(())
        } else {
            Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("delete_session returned {status}"),
            )))
        }
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, sse_stream::Error>>, StreamableHttpError<HyperError>>
    {
        if !self.standalone && last_event_id.is_none() {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        let mut builder = request(
            Method::GET,
            &uri,
            session_id.as_deref(),
            auth,
            custom_headers,
        )
        .header(http::header::ACCEPT, "text/event-stream");
        if let Some(last) = last_event_id {
            builder = builder.header(LAST_EVENT_ID, last);
        }
        let request = builder
            .body(Full::new(Bytes::new()))
            .map_err(client_error)?;
        let response = self.client.request(request).await.map_err(client_error)?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !status.is_success() {
            return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
                format!("get_stream returned {status}"),
            )));
        }
        Ok(SseStream::from_bytes_stream(response.into_body().into_data_stream()).boxed())
    }
}
