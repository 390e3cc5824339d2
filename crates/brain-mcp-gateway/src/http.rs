//! The HTTP side: the router a host mounts (`/mcp`, the protected resource metadata,
//! `/healthz`, `/readyz`) and what stands in front of rmcp's Streamable HTTP service on
//! `/mcp`: who calls (`identity`), the tenant's request rate, a session used only by the
//! tenant that opened it (`sessions`), the body limit, and a call cancelled when its
//! caller's connection closes.

use std::{
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderValue, StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
    routing::get,
};
use brain_tools::{CancellationToken, CredentialStore, GrantKey};
use http_body::Frame;
use serde_json::{Value, json};

use crate::{
    handler::{CallerSession, Disconnect, Shared},
    identity::Identity,
    serving::Serving,
    sessions::Sessions,
};

const SESSION_HEADER: &str = "mcp-session-id";

/// What the HTTP layer keeps.
#[derive(Debug)]
pub(crate) struct HttpState {
    pub(crate) shared: Arc<Shared>,
    pub(crate) identity: Identity,
    /// Legacy sessions' ids, sealed for the tenant that opened each.
    pub(crate) sessions: Arc<Sessions>,
    pub(crate) max_body: usize,
    /// Serving: the listener is up and the gateway is not draining.
    pub(crate) ready: AtomicBool,
    /// The credential store, probed for `/readyz`.
    pub(crate) store: std::sync::OnceLock<Arc<dyn CredentialStore>>,
}

impl HttpState {
    pub(crate) fn new(
        shared: Arc<Shared>,
        identity: Identity,
        sessions: Sessions,
        max_body: usize,
    ) -> Self {
        Self {
            shared,
            identity,
            sessions: Arc::new(sessions),
            max_body,
            ready: AtomicBool::new(true),
            store: std::sync::OnceLock::new(),
        }
    }
}

/// The router: `/mcp` behind the guard, the metadata, the health checks.
pub(crate) fn router<S>(state: Arc<HttpState>, mcp: S) -> Router
where
    S: tower_service::Service<Request, Error = std::convert::Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Response: IntoResponse,
    S::Future: Send + 'static,
{
    let guarded =
        Router::new()
            .nest_service("/mcp", mcp)
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(&state),
                guard,
            ));
    let mut router = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz));
    if let Some(path) = state
        .identity
        .resource
        .as_deref()
        .and_then(crate::identity::metadata_url)
        .map(|(_, path)| path)
    {
        router = router.route(&path, get(metadata));
        if path != "/.well-known/oauth-protected-resource" {
            router = router.route("/.well-known/oauth-protected-resource", get(metadata));
        }
    }
    router.with_state(state).merge(guarded)
}

async fn metadata(State(state): State<Arc<HttpState>>) -> Response {
    axum::Json(state.identity.metadata()).into_response()
}

/// Ready once the config is loaded and the listener is up, until a drain starts. The
/// credential store's state is said, but does not make the gateway unready: bindings
/// that need no grant are served while it is down.
async fn readyz(State(state): State<Arc<HttpState>>) -> Response {
    let ready = state.ready.load(Ordering::Acquire);
    let store = match state.store.get() {
        None => "none",
        Some(store) => {
            let key = GrantKey::new("", "", "");
            match tokio::time::timeout(Duration::from_secs(1), store.load(&key)).await {
                Ok(Ok(_)) => "available",
                Ok(Err(_)) => "unavailable",
                Err(_) => "not answering",
            }
        }
    };
    let body = json!({
        "ready": ready,
        "calls_in_flight": state.shared.calls_in_flight.load(Ordering::Acquire),
        "credential_store": store,
    });
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(body)).into_response()
}

/// The origins of pages served from this machine, any port: allowed on a loopback host
/// (added to rmcp's list of allowed origins; the guard refuses them on any other host).
pub(crate) const LOOPBACK_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// Whether a host (a `Host` header, or the authority of an `Origin`, port included or
/// not) names this machine's loopback.
fn is_loopback(authority: &str) -> bool {
    let host = match authority.strip_prefix('[') {
        // `[::1]:8080`
        Some(rest) => rest.split_once(']').map_or(rest, |(host, _)| host),
        None => match authority.rsplit_once(':') {
            Some((host, port))
                if !host.contains(':') && port.bytes().all(|b| b.is_ascii_digit()) =>
            {
                host
            }
            _ => authority,
        },
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A loopback `Origin` (a page on this machine) on a request to a host that is not
/// loopback: a page that may not call this gateway.
fn loopback_origin_elsewhere(headers: &axum::http::HeaderMap) -> bool {
    let Some(origin) = headers
        .get(header::ORIGIN)
        .and_then(|value| value.to_str().ok())
    else {
        return false;
    };
    let Some((_, authority)) = origin.split_once("://") else {
        return false;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default();
    is_loopback(authority) && !is_loopback(host)
}

/// What stands in front of rmcp on `/mcp`.
async fn guard(State(state): State<Arc<HttpState>>, request: Request, next: Next) -> Response {
    if loopback_origin_elsewhere(request.headers()) {
        return (
            StatusCode::FORBIDDEN,
            "Forbidden: Origin header is not allowed",
        )
            .into_response();
    }
    let caller = match state.identity.caller(request.headers()).await {
        Ok(caller) => caller,
        Err(refusal) => return *refusal,
    };
    if let Err(wait) = state.shared.limits.admit(&caller.tenant) {
        let seconds = wait.as_secs_f64().ceil().max(1.0) as u64;
        let mut response = (
            StatusCode::TOO_MANY_REQUESTS,
            axum::Json(json!({
                "error": "rate_limited",
                "error_description": format!("this tenant made more requests than it may per minute; retry after {seconds} s"),
            })),
        )
            .into_response();
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        return response;
    }
    let session = request
        .headers()
        .get(SESSION_HEADER)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &session
        && state.sessions.open(id, &caller.tenant).is_none()
    {
        // Another tenant's session, an ended, expired or altered one: no session of this
        // caller's (the client starts a new one).
        return (StatusCode::NOT_FOUND, "Not Found: Session not found").into_response();
    }
    let (mut parts, body) = request.into_parts();
    let mut disconnect = None;
    let mut version = None;
    let body = if parts.method == axum::http::Method::POST {
        let bytes = match axum::body::to_bytes(body, state.max_body).await {
            Ok(bytes) => bytes,
            Err(_) => {
                return (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!(
                        "Payload Too Large: the body is over {} bytes",
                        state.max_body
                    ),
                )
                    .into_response();
            }
        };
        let peeked = Peek::of(&bytes);
        if peeked.tool_call {
            let token = CancellationToken::new();
            parts.extensions.insert(Disconnect(token.clone()));
            disconnect = Some(token);
        }
        version = peeked.initialize_version;
        Body::from(bytes)
    } else {
        body
    };
    parts.extensions.insert(CallerSession(session));
    let serving = Serving {
        caller: caller.clone(),
        initialize_version: version,
    };
    parts.extensions.insert(caller);
    let response = serving
        .scope(next.run(Request::from_parts(parts, body)))
        .await;
    match disconnect {
        Some(token) => {
            let (parts, body) = response.into_parts();
            Response::from_parts(parts, Body::new(Guarded::new(body, token)))
        }
        None => response,
    }
}

/// What the guard reads of a POST body.
#[derive(Debug, Default, PartialEq, Eq)]
struct Peek {
    /// A `tools/call` request (with an id): cancelled when its caller's connection
    /// closes.
    tool_call: bool,
    /// The version an `initialize` request asks for, sealed into the session id.
    initialize_version: Option<String>,
}

impl Peek {
    fn of(bytes: &Bytes) -> Self {
        #[derive(serde::Deserialize)]
        struct Params<'a> {
            #[serde(rename = "protocolVersion", borrow)]
            protocol_version: Option<std::borrow::Cow<'a, str>>,
        }
        #[derive(serde::Deserialize)]
        struct Message<'a> {
            #[serde(borrow)]
            method: Option<&'a str>,
            id: Option<Value>,
            #[serde(borrow)]
            params: Option<Params<'a>>,
        }
        let Ok(message) = serde_json::from_slice::<Message<'_>>(bytes) else {
            return Self::default();
        };
        Self {
            tool_call: message.method == Some("tools/call") && message.id.is_some(),
            initialize_version: (message.method == Some("initialize"))
                .then(|| message.params.and_then(|params| params.protocol_version))
                .flatten()
                .filter(|version| version.len() <= 64)
                .map(std::borrow::Cow::into_owned),
        }
    }
}

/// A response body that cancels its call when it is dropped before its end: the
/// caller's connection closed.
struct Guarded {
    inner: Body,
    guard: Option<tokio_util::sync::DropGuard>,
}

impl Guarded {
    fn new(inner: Body, token: CancellationToken) -> Self {
        Self {
            inner,
            guard: Some(token.drop_guard()),
        }
    }
}

impl http_body::Body for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = polled
            && let Some(guard) = self.guard.take()
        {
            // Ended as it should: nothing to cancel.
            guard.disarm();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_and_origins() {
        let cases = [
            ("127.0.0.1:8080", true),
            ("127.0.0.1", true),
            ("localhost:3000", true),
            ("LOCALHOST", true),
            ("[::1]:8080", true),
            ("[::1]", true),
            ("::1", true),
            ("127.1.2.3:80", true),
            ("gw.example.com:443", false),
            ("gw.example.com", false),
            ("localhost.evil.example", false),
            ("10.0.0.1:8080", false),
            ("[2001:db8::1]:443", false),
            ("", false),
        ];
        for (authority, loopback) in cases {
            assert_eq!(is_loopback(authority), loopback, "{authority}");
        }
        let refused = |origin: &str, host: &str| {
            let mut headers = axum::http::HeaderMap::new();
            headers.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
            headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
            loopback_origin_elsewhere(&headers)
        };
        assert!(!refused("http://127.0.0.1:3000", "127.0.0.1:8080"));
        assert!(!refused("http://localhost:3000", "[::1]:8080"));
        assert!(refused("http://localhost:3000", "gw.example.com"));
        // Other origins are rmcp's to judge against the config's list.
        assert!(!refused("https://app.example.com", "gw.example.com"));
        assert!(!refused("null", "gw.example.com"));
    }

    #[test]
    fn only_tool_calls_with_an_id_are_watched() {
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#,
                true,
            ),
            (r#"{"jsonrpc":"2.0","id":"a","method":"tools/call"}"#, true),
            (r#"{"jsonrpc":"2.0","method":"tools/call"}"#, false),
            (r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#, false),
            (r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]"#, false),
            ("not json", false),
        ];
        for (body, watched) in cases {
            assert_eq!(Peek::of(&Bytes::from(body)).tool_call, watched, "{body}");
        }
    }

    #[test]
    fn an_initialize_says_its_version() {
        let peek = |body: &'static str| Peek::of(&Bytes::from(body)).initialize_version;
        assert_eq!(
            peek(
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#
            ),
            Some("2025-06-18".to_owned())
        );
        assert_eq!(
            peek(
                r#"{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{"protocolVersion":"2025-06-18"}}"#
            ),
            None
        );
        assert_eq!(
            peek(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}"#),
            None
        );
    }
}
