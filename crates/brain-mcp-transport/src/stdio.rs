//! stdio servers: a fresh process per call, in its own process group.
//!
//! stderr is drained into a bounded tail (an undrained pipe would block the child); the
//! response is counted against the call's budget as stdout is read; when the call ends
//! the child's stdin is closed, it gets a short grace to exit, and then its whole process
//! group is killed (so `npx`/`uvx` grandchildren die too) and the child is reaped. A
//! dropped call kills the group at once.

use std::{
    collections::VecDeque,
    io,
    pin::Pin,
    process::Stdio,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use futures::future::Either;
use nix::{sys::signal::Signal, unistd::Pid};
use rmcp::{
    Peer, RoleClient,
    model::{ErrorCode, ProtocolVersion, RequestId},
    service::{
        ClientInitializeError, ClientLifecycleMode, RunningService, RxJsonRpcMessage,
        TxJsonRpcMessage, serve_client_with_lifecycle,
    },
    transport::{Transport, async_rw::AsyncRwTransport},
};
use tokio::{
    io::{AsyncRead, AsyncReadExt, ReadBuf},
    process::{Child, ChildStdin, ChildStdout},
    time::Instant,
};
use tokio_util::{sync::CancellationToken, task::TaskTracker};
use tracing::Instrument;

use crate::{
    calls::{CallState, GivenUp, Registry},
    client::{EraPreference, McpClient, spawn_background},
    endpoint::{Endpoint, StdioEndpoint},
    error::{CallError, Delivery, ErrorKind},
    handler::Handler,
    run::{Era, cancel_request},
};

/// How much of the child's stderr is kept for error messages.
const STDERR_TAIL: usize = 8 * 1024;
/// The call running on a process, once its request went out (set by the transport,
/// read by the stdout counter).
type CallSlot = Arc<std::sync::OnceLock<Arc<CallState>>>;

/// A call's own server process, after its handshake.
pub(crate) struct Session {
    running: RunningService<RoleClient, Handler>,
    process: Process,
    registry: Arc<Registry>,
    era: Era,
}

impl Session {
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        self.running.peer()
    }

    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    pub(crate) fn era(&self) -> Era {
        self.era
    }

    /// `" (exit status 3; stderr: ...)"` when the process has stopped.
    pub(crate) async fn explain(&mut self, endpoint: &Endpoint) -> String {
        self.process.stopped_detail(endpoint).await
    }

    /// Ends the process in the background: the cancel notice for an abandoned request,
    /// stdin closed, a grace period, then the process group killed and the child reaped.
    pub(crate) fn finish(
        self,
        tasks: &TaskTracker,
        grace: Duration,
        abandoned: Option<(RequestId, &'static str)>,
    ) {
        spawn_background(
            tasks,
            self.process
                .close(Some(self.running), abandoned, grace)
                .in_current_span(),
        );
    }
}

/// Starts the server and runs its handshake. In the automatic era, a server that
/// refuses `initialize` because it only speaks 2026-07-28 is started again in that era
/// (what each command speaks is remembered).
pub(crate) async fn open(
    client: &McpClient,
    endpoint: &StdioEndpoint,
    deadline: Instant,
    cancel: &CancellationToken,
    line_limit: usize,
) -> Result<Session, CallError> {
    let auto = client.inner.options.era == EraPreference::Auto;
    let era = match client.inner.options.era {
        EraPreference::Modern => Era::Modern,
        EraPreference::Legacy => Era::Legacy,
        EraPreference::Auto => client.stdio_era(endpoint).unwrap_or(Era::Legacy),
    };
    let session = match open_in(client, endpoint, deadline, cancel, era, line_limit).await {
        Err(Retry::Modern) if auto => {
            open_in(client, endpoint, deadline, cancel, Era::Modern, line_limit).await
        }
        other => other,
    }
    .map_err(Retry::into_error)?;
    if auto {
        client.remember_stdio_era(endpoint, session.era);
    }
    Ok(session)
}

/// A failure, or the signal to start again in the 2026-07-28 era.
enum Retry {
    Modern,
    Failed(CallError),
}

impl Retry {
    fn into_error(self) -> CallError {
        match self {
            Retry::Failed(error) => error,
            Retry::Modern => CallError::new(
                ErrorKind::Connect,
                Delivery::NotSent,
                "the server refused the initialize handshake (it only speaks 2026-07-28)",
            ),
        }
    }
}

async fn open_in(
    client: &McpClient,
    endpoint: &StdioEndpoint,
    deadline: Instant,
    cancel: &CancellationToken,
    era: Era,
    line_limit: usize,
) -> Result<Session, Retry> {
    let inner = &client.inner;
    let described = Endpoint::Stdio(endpoint.clone());
    let mut process = Process::spawn(endpoint, &inner.children, &inner.tasks)
        .map_err(|error| Retry::Failed(spawn_error(&error, &described)))?;
    let registry = Arc::new(Registry::default());
    let current = CallSlot::default();
    let (stdout, stdin) = process.pipes();
    let reader = CountingReader {
        inner: stdout,
        current: Arc::clone(&current),
    };
    let transport = StdioTransport {
        inner: AsyncRwTransport::new_client(reader, stdin).with_max_line_length(line_limit),
        registry: Arc::clone(&registry),
        current,
    };
    let lifecycle = match era {
        Era::Legacy => ClientLifecycleMode::Initialize,
        Era::Modern => ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    };
    let opened = tokio::select! {
        opened = serve_client_with_lifecycle(inner.handler.clone(), transport, lifecycle) => opened.map_err(Some),
        () = tokio::time::sleep_until(deadline) => Err(None),
        () = cancel.cancelled() => Err(None),
    };
    match opened {
        Ok(running) => Ok(Session {
            running,
            process,
            registry,
            era,
        }),
        Err(error) => {
            let modern_only = era == Era::Legacy
                && matches!(
                    &error,
                    Some(ClientInitializeError::JsonRpcError(data))
                        if data.code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
                );
            let detail = process.stopped_detail(&described).await;
            inner.tasks.spawn(
                process
                    .close(None, None, inner.options.stdio_grace)
                    .in_current_span(),
            );
            if modern_only {
                return Err(Retry::Modern);
            }
            Err(Retry::Failed(match error {
                None if cancel.is_cancelled() => {
                    CallError::new(ErrorKind::Cancelled, Delivery::NotSent, "was cancelled")
                }
                None => CallError::new(ErrorKind::Timeout, Delivery::NotSent, "timed out"),
                Some(error) => handshake_error(&error, &described, detail),
            }))
        }
    }
}

fn spawn_error(error: &io::Error, endpoint: &Endpoint) -> CallError {
    let why = match error.kind() {
        io::ErrorKind::NotFound => "not found",
        io::ErrorKind::PermissionDenied => "permission denied",
        _ => "it could not be started",
    };
    CallError::new(
        ErrorKind::Connect,
        Delivery::NotSent,
        format!("could not start {} ({why})", endpoint.describe()),
    )
}

fn handshake_error(
    error: &ClientInitializeError,
    endpoint: &Endpoint,
    detail: String,
) -> CallError {
    let what = match error {
        ClientInitializeError::JsonRpcError(data) => format!(
            "{} refused the handshake with JSON-RPC error {}: {}",
            endpoint.describe(),
            data.code.0,
            endpoint.quote(&data.message, 200)
        ),
        _ => format!("{} ended before its handshake", endpoint.describe()),
    };
    CallError::new(
        ErrorKind::Connect,
        Delivery::NotSent,
        format!("{what}{detail}"),
    )
}

/// A child process, its process group, and its stderr tail. Dropping it kills the group.
struct Process {
    child: Option<Child>,
    pgid: Option<Pid>,
    stdout: Option<ChildStdout>,
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    alive: Arc<AtomicUsize>,
}

impl Process {
    fn spawn(
        endpoint: &StdioEndpoint,
        alive: &Arc<AtomicUsize>,
        tasks: &TaskTracker,
    ) -> io::Result<Self> {
        let mut command = tokio::process::Command::new(&endpoint.program);
        command
            .args(&endpoint.args)
            .envs(endpoint.env.iter().map(|(key, value)| (key, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(cwd) = &endpoint.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn()?;
        alive.fetch_add(1, Ordering::Relaxed);
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        let stderr = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
        if let Some(mut pipe) = child.stderr.take() {
            let tail = Arc::clone(&stderr);
            tasks.spawn(async move {
                let mut buffer = [0u8; 4096];
                while let Ok(read) = pipe.read(&mut buffer).await {
                    if read == 0 {
                        break;
                    }
                    let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                    tail.extend(&buffer[..read]);
                    let excess = tail.len().saturating_sub(STDERR_TAIL);
                    tail.drain(..excess);
                }
            });
        }
        Ok(Self {
            stdout: child.stdout.take(),
            stdin: child.stdin.take(),
            child: Some(child),
            pgid,
            stderr,
            alive: Arc::clone(alive),
        })
    }

    fn pipes(&mut self) -> (ChildStdout, ChildStdin) {
        (
            self.stdout.take().expect("stdout is piped"),
            self.stdin.take().expect("stdin is piped"),
        )
    }

    /// `" (exit status 3; stderr: last line)"`, or empty while it runs.
    async fn stopped_detail(&mut self, endpoint: &Endpoint) -> String {
        let Some(child) = self.child.as_mut() else {
            return String::new();
        };
        // Give a dying child a moment to be reaped, so its status can be reported.
        let status = tokio::time::timeout(Duration::from_millis(200), child.wait())
            .await
            .ok()
            .and_then(Result::ok);
        let tail = {
            let tail = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
            let bytes: Vec<u8> = tail.iter().copied().collect();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            text.lines()
                .rev()
                .find(|line| !line.trim().is_empty())
                .map(|line| endpoint.quote(line.trim(), 200))
        };
        match (status, tail) {
            (Some(status), Some(line)) => format!(" ({status}; stderr: {line})"),
            (Some(status), None) => format!(" ({status})"),
            (None, Some(line)) => format!(" (stderr: {line})"),
            (None, None) => String::new(),
        }
    }

    fn kill_group(&self) {
        if let Some(pgid) = self.pgid {
            let _ = nix::sys::signal::killpg(pgid, Signal::SIGKILL);
        }
    }

    /// Closes stdin (ending the session), waits up to `grace` for the child, then kills
    /// its process group and reaps the child.
    async fn close(
        mut self,
        running: Option<RunningService<RoleClient, Handler>>,
        abandoned: Option<(RequestId, &'static str)>,
        grace: Duration,
    ) {
        if let Some(mut running) = running {
            if let Some((id, reason)) = abandoned {
                cancel_request(running.peer(), id, reason, grace).await;
            }
            // Cancels the service: the transport drops stdin, the server sees EOF.
            let _ = tokio::time::timeout(grace, running.close()).await;
        }
        drop(self.stdin.take());
        if let Some(child) = self.child.as_mut() {
            let _ = tokio::time::timeout(grace, child.wait()).await;
        }
        // Always: the child may be gone while its grandchildren live on.
        self.kill_group();
        if let Some(mut child) = self.child.take() {
            let _ = child.wait().await;
            self.alive.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            // The call was dropped: kill now; tokio reaps the killed child.
            self.kill_group();
            drop(child);
            self.alive.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// Counts the bytes of stdout read after the call was sent against its budget.
struct CountingReader {
    inner: ChildStdout,
    current: CallSlot,
}

impl AsyncRead for CountingReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let read = buf.filled().len() - before;
            if read > 0
                && let Some(call) = self.current.get()
                && !call.count(read)
            {
                return Poll::Ready(Err(io::Error::other("the output exceeded its budget")));
            }
        }
        polled
    }
}

/// rmcp's line transport, plus the call ID as `progressToken` and progress routing.
struct StdioTransport {
    inner: AsyncRwTransport<RoleClient, CountingReader, ChildStdin>,
    registry: Arc<Registry>,
    current: CallSlot,
}

impl Transport<RoleClient> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // A call given up while its request waited in rmcp's queue stays unsent.
        let claimed = match self.registry.claim(&mut item) {
            Ok(claimed) => claimed.map(|(_, call)| call),
            Err(GivenUp) => {
                return Either::Left(std::future::ready(Err(io::Error::other(GivenUp::MESSAGE))));
            }
        };
        if let Some(call) = &claimed {
            let _ = self.current.set(Arc::clone(call));
        }
        let sending = self.inner.send(item);
        Either::Right(async move {
            let sent = sending.await;
            if let Some(call) = claimed {
                match &sent {
                    Ok(()) => call.mark_written(),
                    Err(_) => call.mark_not_sent(),
                }
            }
            sent
        })
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let message = self.inner.receive().await?;
            if self.current.get().is_some_and(|call| call.route(&message)) {
                continue;
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
