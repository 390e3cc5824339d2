//! A load balancer in front of a fleet of HTTP servers, as an operator runs one: each
//! request goes to the next backend in turn that its health check (`GET /readyz`, every
//! 100 ms) finds ready, with no affinity; a backend that refuses the connection is marked
//! down and the request goes to the next (nothing was sent); a response is streamed as it
//! comes, and one that breaks mid-way breaks the client's connection (the front never
//! sends a request twice once it may have reached a backend).

use std::{
    net::SocketAddr,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::{
    Router,
    body::{Body, Bytes},
    extract::{Request, State},
    http::{StatusCode, Uri},
    response::{IntoResponse, Response},
};
use http_body_util::BodyExt;
use hyper_util::{
    client::legacy::{Client, connect::HttpConnector},
    rt::TokioExecutor,
};
use tokio_util::sync::CancellationToken;

/// How often the health check runs.
const CHECK_EVERY: Duration = Duration::from_millis(100);
/// The largest request body the front takes.
const MAX_BODY: usize = 8 << 20;

/// A running front. Dropping it stops it.
#[derive(Debug)]
pub struct Front {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
}

#[derive(Debug)]
struct Backend {
    /// `http://IP:PORT`.
    base: String,
    ready: AtomicBool,
    /// Requests sent to it.
    sent: AtomicUsize,
}

#[derive(Debug)]
struct Shared {
    backends: Mutex<Vec<Arc<Backend>>>,
    next: AtomicUsize,
    client: Client<HttpConnector, Body>,
    /// Bumped after every round of health checks.
    checked: tokio::sync::watch::Sender<u64>,
}

impl Drop for Front {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Front {
    /// A front on a loopback port, for backends at these `http://IP:PORT` bases.
    ///
    /// # Errors
    /// The port cannot be bound.
    pub async fn start(backends: &[String]) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let shared = Arc::new(Shared {
            backends: Mutex::new(backends.iter().map(|base| backend(base)).collect()),
            next: AtomicUsize::new(0),
            client: Client::builder(TokioExecutor::new()).build(connector),
            checked: tokio::sync::watch::channel(0).0,
        });
        let stop = CancellationToken::new();
        tokio::spawn(health_checks(Arc::clone(&shared), stop.clone()));
        let app = Router::new()
            .fallback(proxy)
            .with_state(Arc::clone(&shared));
        let until = stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async move { until.cancelled().await })
                .await;
        });
        let front = Self { addr, shared, stop };
        front.checked().await;
        Ok(front)
    }

    /// The front's base, `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Puts `base` in place of the backend at `index` (unready until its check passes).
    pub fn replace(&self, index: usize, base: &str) {
        let mut backends = self.shared.backends();
        if let Some(slot) = backends.get_mut(index) {
            *slot = backend(base);
        }
    }

    /// Waits for the end of the next full round of health checks.
    pub async fn checked(&self) {
        let mut seen = self.shared.checked.subscribe();
        let _ = seen.borrow_and_update();
        let _ = seen.changed().await;
        let _ = seen.changed().await;
    }

    /// Whether each backend is ready, by the last health check.
    pub fn ready(&self) -> Vec<bool> {
        self.shared
            .backends()
            .iter()
            .map(|backend| backend.ready.load(Ordering::Acquire))
            .collect()
    }

    /// The requests sent to each backend now in place.
    pub fn sent(&self) -> Vec<usize> {
        self.shared
            .backends()
            .iter()
            .map(|backend| backend.sent.load(Ordering::Relaxed))
            .collect()
    }
}

fn backend(base: &str) -> Arc<Backend> {
    Arc::new(Backend {
        base: base.trim_end_matches('/').to_owned(),
        ready: AtomicBool::new(false),
        sent: AtomicUsize::new(0),
    })
}

impl Shared {
    fn backends(&self) -> std::sync::MutexGuard<'_, Vec<Arc<Backend>>> {
        self.backends.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The ready backends, from the next one in turn.
    fn in_turn(&self) -> Vec<Arc<Backend>> {
        let backends = self.backends().clone();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let count = backends.len();
        (0..count)
            .map(|i| Arc::clone(&backends[(start + i) % count]))
            .filter(|backend| backend.ready.load(Ordering::Acquire))
            .collect()
    }
}

async fn health_checks(shared: Arc<Shared>, stop: CancellationToken) {
    let mut round = 0u64;
    loop {
        let backends = shared.backends().clone();
        let checks = backends.iter().map(|backend| {
            let shared = Arc::clone(&shared);
            async move {
                let uri: Result<Uri, _> = format!("{}/readyz", backend.base).parse();
                let ready = match uri {
                    Ok(uri) => {
                        let request = axum::http::Request::get(uri).body(Body::empty());
                        match request {
                            Ok(request) => matches!(
                                tokio::time::timeout(Duration::from_secs(1), shared.client.request(request)).await,
                                Ok(Ok(response)) if response.status() == StatusCode::OK
                            ),
                            Err(_) => false,
                        }
                    }
                    Err(_) => false,
                };
                backend.ready.store(ready, Ordering::Release);
            }
        });
        futures::future::join_all(checks).await;
        round += 1;
        shared.checked.send_replace(round);
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(CHECK_EVERY) => {}
        }
    }
}

async fn proxy(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        return StatusCode::PAYLOAD_TOO_LARGE.into_response();
    };
    let path = parts
        .uri
        .path_and_query()
        .map_or("/", |path| path.as_str())
        .to_owned();
    for backend in shared.in_turn() {
        let Ok(uri) = format!("{}{path}", backend.base).parse::<Uri>() else {
            continue;
        };
        let mut forwarded = axum::http::Request::builder()
            .method(parts.method.clone())
            .uri(uri);
        for (name, value) in &parts.headers {
            if name != axum::http::header::HOST {
                forwarded = forwarded.header(name, value);
            }
        }
        let Ok(forwarded) = forwarded.body(Body::from(Bytes::clone(&body))) else {
            continue;
        };
        backend.sent.fetch_add(1, Ordering::Relaxed);
        match shared.client.request(forwarded).await {
            Ok(response) => {
                let (parts, body) = response.into_parts();
                // A body that breaks mid-way breaks the client's response too.
                return Response::from_parts(parts, Body::new(body.map_err(axum::Error::new)));
            }
            // Refused before anything was sent: the next backend, as a balancer does.
            Err(error) if error.is_connect() => {
                backend.ready.store(false, Ordering::Release);
            }
            // It may have reached the backend: never sent twice.
            Err(_) => return StatusCode::BAD_GATEWAY.into_response(),
        }
    }
    StatusCode::SERVICE_UNAVAILABLE.into_response()
}
