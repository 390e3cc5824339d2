//! Serving the router on a listener: plain HTTP or TLS (rustls, from certificate files;
//! HTTP/2 for clients that offer it by ALPN), at most `max_connections` at once, a
//! client that takes too long to send its headers or stays silent too long cut off, and
//! a drain on shutdown: stop accepting and answering `/readyz` with 503, let calls in
//! flight finish within `drain_seconds`, then cancel the rest.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use axum::Router;
use hyper_util::{
    rt::{TokioExecutor, TokioIo, TokioTimer},
    server::conn::auto,
    service::TowerToHyperService,
};
use tokio::{
    io::{AsyncRead, AsyncWrite},
    net::{TcpListener, TcpStream},
    sync::Semaphore,
};
use tokio_rustls::TlsAcceptor;
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::error::GatewayError;

/// The bounds of serving.
#[derive(Debug, Clone)]
pub(crate) struct Bounds {
    pub(crate) max_connections: usize,
    pub(crate) header_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_header_bytes: usize,
}

/// The TLS server config from certificate and key files (PEM), offering HTTP/2 and
/// HTTP/1.1 by ALPN.
pub(crate) fn tls_acceptor(cert: &str, key: &str) -> Result<TlsAcceptor, GatewayError> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .and_then(Iterator::collect)
        .map_err(|error| {
            GatewayError::setup(format!("cannot read the certificate chain {cert}: {error}"))
        })?;
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|_| GatewayError::setup(format!("cannot read the private key {key}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| GatewayError::setup(format!("TLS cannot be set up: {error}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|error| {
            GatewayError::setup(format!(
                "the certificate and key do not go together: {error}"
            ))
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Serves `app` on `listener` until `stop` fires; then connections finish what they
/// serve (a graceful shutdown) until `closed` fires, when what is left is cut.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    app: Router,
    bounds: Bounds,
    stop: CancellationToken,
    closed: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(bounds.max_connections.max(1)));
    let connections = TaskTracker::new();
    loop {
        let permit = tokio::select! {
            () = stop.cancelled() => break,
            permit = Arc::clone(&slots).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        let accepted = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                let _ = stream.set_nodelay(true);
                let (tls, app, bounds, stop, closed) = (
                    tls.clone(),
                    app.clone(),
                    bounds.clone(),
                    stop.clone(),
                    closed.clone(),
                );
                connections.spawn(async move {
                    let _permit = permit;
                    accept(stream, tls, app, &bounds, stop, closed).await;
                });
            }
            Err(error) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(%error, "accepting a connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    drop(listener);
    connections.close();
    tokio::select! {
        () = connections.wait() => {}
        () = closed.cancelled() => {}
    }
}

async fn accept(
    stream: TcpStream,
    tls: Option<TlsAcceptor>,
    app: Router,
    bounds: &Bounds,
    stop: CancellationToken,
    closed: CancellationToken,
) {
    let Some(acceptor) = tls else {
        return serve_connection(stream, false, app, bounds, stop, closed).await;
    };
    let handshake = tokio::select! {
        handshake = tokio::time::timeout(bounds.header_timeout, acceptor.accept(stream)) => handshake,
        () = stop.cancelled() => return,
    };
    let Ok(Ok(stream)) = handshake else { return };
    let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
    serve_connection(stream, h2, app, bounds, stop, closed).await;
}

/// One connection: HTTP/1.1, or HTTP/2 when ALPN agreed on it (plain connections may
/// still start HTTP/2 with its preface). Cut when it has been silent longer than the
/// idle bound (a call's SSE stream is not silent: rmcp writes a keep-alive every 15 s).
async fn serve_connection<I>(
    io: I,
    h2: bool,
    app: Router,
    bounds: &Bounds,
    stop: CancellationToken,
    closed: CancellationToken,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Arc::new(Activity::default());
    let io = Watched {
        inner: io,
        activity: Arc::clone(&activity),
    };
    let service = TowerToHyperService::new(app);
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(bounds.header_timeout)
        .max_buf_size(bounds.max_header_bytes.max(8192));
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(bounds.max_header_bytes).unwrap_or(u32::MAX))
        .max_concurrent_streams(256)
        .keep_alive_interval(Some(Duration::from_secs(30)));
    let builder = if h2 { builder.http2_only() } else { builder };
    let connection = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    tokio::pin!(connection);
    let idle = async {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if activity.silent_for() > bounds.idle_timeout {
                return;
            }
        }
    };
    tokio::select! {
        _ = connection.as_mut() => return,
        () = idle => {}
        () = stop.cancelled() => {}
    }
    connection.as_mut().graceful_shutdown();
    tokio::select! {
        _ = connection => {}
        () = closed.cancelled() => {}
    }
}

/// When a connection last moved a byte.
#[derive(Debug)]
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
}

impl Default for Activity {
    fn default() -> Self {
        Self {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }
}

impl Activity {
    fn touch(&self) {
        let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(now, Ordering::Relaxed);
    }

    fn silent_for(&self) -> Duration {
        let now = self.start.elapsed();
        now.saturating_sub(Duration::from_millis(self.last_ms.load(Ordering::Relaxed)))
    }
}

/// An IO that notes every byte it moves.
struct Watched<I> {
    inner: I,
    activity: Arc<Activity>,
}

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Watched<I> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        if matches!(polled, std::task::Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let polled = std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(polled, std::task::Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
