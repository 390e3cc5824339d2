//! The line transport over a stdio server's pipes: one JSON-RPC message per line, and
//! what a per-call tool layer needs on top: the call ID as `progressToken`, progress
//! routed to its call in wire order, stdout counted against the call's budget once the
//! call is written, every line through `wire::ingress` before it is parsed (secrets
//! hidden, shapes bounded), a line past its bound ending the stream (never dropped
//! silently), and the end of the stream when the child has exited, even if a descendant
//! holds the pipe open.

use std::{
    io,
    pin::Pin,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use futures::{FutureExt, future::BoxFuture, future::Shared};
use rmcp::{
    RoleClient,
    model::{ClientRequest, JsonRpcMessage, RequestId},
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use tokio::{
    io::{AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader, ReadBuf},
    process::{ChildStdin, ChildStdout},
};

use crate::{
    call_state::{CallState, GivenUp, Registry},
    error::classify::Failure,
    secret::Redactor,
    wire::ingress::{self, Expect, Refused},
};

/// How long stdout is still read after the child exited: what it wrote before exiting
/// is in the pipe already.
const AFTER_EXIT: Duration = Duration::from_millis(100);

/// The call running on a process, once its request went out, or the `tasks/get` of its
/// task last sent (set by the transport, read by the stdout counter).
type CallSlot = Arc<Current>;

/// What stdout is counted against: nothing before the call's request went out, then the
/// call, then each `tasks/get` of its task in turn (each answer gets the call's budget).
#[derive(Debug, Default)]
struct Current(Mutex<Option<Arc<CallState>>>);

impl Current {
    fn get(&self) -> Option<Arc<CallState>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, call: Arc<CallState>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(call);
    }
}

/// What the transport learned about messages that were not a call's (the handshake, a
/// listing), for classification.
pub(crate) type FailureSlot = Arc<Mutex<Option<Failure>>>;

/// The bound on one line, which a call that takes a warm process sets to its budget.
pub(crate) type LineLimit = Arc<AtomicUsize>;

/// Keeps the first failure of messages that are not a call's.
fn record(slot: &FailureSlot, failure: Failure) {
    slot.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get_or_insert(failure);
}

/// Counts the bytes of stdout: once the call was sent, against its budget; before (the
/// handshake, a listing), against the bound of everything that is no call's.
struct CountingReader {
    inner: ChildStdout,
    current: CallSlot,
    received: usize,
    non_call_budget: usize,
    failure: FailureSlot,
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
            let within = match self.current.get() {
                Some(call) => call.count(read),
                None => {
                    self.received = self.received.saturating_add(read);
                    let budget = self.non_call_budget;
                    if self.received > budget {
                        record(&self.failure, Failure::OverBudget { budget });
                    }
                    self.received <= budget
                }
            };
            if !within {
                return Poll::Ready(Err(io::Error::other("the output exceeded its budget")));
            }
        }
        polled
    }
}

/// Why reading a line stopped.
enum Line {
    /// A line is in the buffer.
    Read,
    /// The stream ended (or failed, or went over budget).
    End,
    /// A line longer than the bound.
    TooLong,
}

/// The transport of one stdio server.
pub(crate) struct StdioTransport {
    reader: BufReader<CountingReader>,
    line: Vec<u8>,
    line_limit: LineLimit,
    writer: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    registry: Arc<Registry>,
    current: CallSlot,
    exited: Shared<BoxFuture<'static, ()>>,
    redactor: Redactor,
    /// `tools/list` requests sent and not answered yet, and the tools listed so far.
    lists: Arc<Mutex<Vec<RequestId>>>,
    listed: usize,
    failure: FailureSlot,
}

impl std::fmt::Debug for StdioTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioTransport").finish_non_exhaustive()
    }
}

impl StdioTransport {
    /// A transport over the child's pipes; a line longer than `line_limit` ends the
    /// stream, and so do more than `non_call_budget` bytes outside the call; `exited`
    /// resolves when the child has exited. Failures of messages that are not a call's go
    /// to `failure`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        stdout: ChildStdout,
        stdin: ChildStdin,
        line_limit: LineLimit,
        non_call_budget: usize,
        registry: Arc<Registry>,
        exited: impl Future<Output = ()> + Send + 'static,
        redactor: Redactor,
        failure: FailureSlot,
    ) -> Self {
        let current = CallSlot::default();
        let reader = CountingReader {
            inner: stdout,
            current: Arc::clone(&current),
            received: 0,
            non_call_budget,
            failure: Arc::clone(&failure),
        };
        Self {
            reader: BufReader::new(reader),
            line: Vec::new(),
            line_limit,
            writer: Arc::new(tokio::sync::Mutex::new(Some(stdin))),
            registry,
            current,
            exited: exited.boxed().shared(),
            redactor,
            lists: Arc::default(),
            listed: 0,
            failure,
        }
    }

    /// Reads one line (without its end) into the buffer, bounded.
    /// Reads the rest of a line into the buffer, bounded; what was read stays in the
    /// buffer if the read is dropped halfway (the caller clears it once it took a line).
    /// A last line without its newline still counts at the end of the stream.
    async fn read_line(&mut self) -> Line {
        loop {
            let available = match self.reader.fill_buf().await {
                Ok([]) | Err(_) if !self.line.is_empty() => {
                    if self.line.last() == Some(&b'\r') {
                        self.line.pop();
                    }
                    return Line::Read;
                }
                Ok([]) | Err(_) => return Line::End,
                Ok(available) => available,
            };
            let newline = available.iter().position(|byte| *byte == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let limit = self.line_limit.load(Ordering::Relaxed);
            if self.line.len() + take > limit.saturating_add(1) {
                return Line::TooLong;
            }
            self.line.extend_from_slice(&available[..take]);
            self.reader.consume(take);
            if newline.is_some() {
                self.line.pop();
                if self.line.last() == Some(&b'\r') {
                    self.line.pop();
                }
                return Line::Read;
            }
        }
    }

    /// The next line, or the end: also when the child has exited (what it wrote before
    /// is still read, briefly) — a descendant holding the pipe must not hold the call.
    async fn next_line(&mut self, exited: &mut bool) -> Line {
        if *exited {
            return tokio::time::timeout(AFTER_EXIT, self.read_line())
                .await
                .unwrap_or(Line::End);
        }
        let child_exited = self.exited.clone();
        tokio::select! {
            biased;
            line = self.read_line() => line,
            () = child_exited => {
                *exited = true;
                tokio::time::timeout(AFTER_EXIT, self.read_line())
                    .await
                    .unwrap_or(Line::End)
            }
        }
    }

    fn record(&self, failure: Failure) {
        match self.current.get() {
            Some(call) => call.record(failure),
            None => record(&self.failure, failure),
        }
    }

    /// What the next answer is expected to be.
    fn expect(&self) -> Expect {
        if let Some(call) = self.current.get() {
            ingress::expect_of(&call)
        } else if !self
            .lists
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
        {
            Expect::List
        } else {
            Expect::Other
        }
    }
}

/// The code of a line that is no JSON-RPC message rmcp reads but the answer a server
/// gives when it could not read a request at all: a parse error (-32700) or an invalid
/// request (-32600) whose `id` is missing or null. Other id-less answers (a buggy server's
/// reply to a notification, say) are skipped, as before (`None`).
fn answer_without_id(text: &str) -> Option<i32> {
    let Ok(serde_json::Value::Object(message)) = serde_json::from_str(text) else {
        return None;
    };
    let code = message
        .get("error")
        .and_then(|error| error.get("code"))
        .and_then(serde_json::Value::as_i64)
        .filter(|code| *code == -32700 || *code == -32600)?;
    (!message.contains_key("method") && message.get("id").is_none_or(serde_json::Value::is_null))
        .then(|| i32::try_from(code).unwrap_or_default())
}

impl Transport<RoleClient> for StdioTransport {
    type Error = io::Error;

    fn send(
        &mut self,
        mut item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        // A call given up while its request waited in rmcp's queue stays unsent.
        let claimed = self.registry.claim(&mut item);
        if let JsonRpcMessage::Request(request) = &item
            && matches!(request.request, ClientRequest::ListToolsRequest(_))
        {
            self.lists
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(request.id.clone());
        }
        if let Ok(Some((_, call))) = &claimed {
            self.current.set(Arc::clone(call));
        }
        let writer = Arc::clone(&self.writer);
        async move {
            let call = match claimed {
                Ok(claimed) => claimed.map(|(_, call)| call),
                Err(GivenUp) => return Err(io::Error::other(GivenUp::MESSAGE)),
            };
            let mut line = serde_json::to_vec(&item).map_err(io::Error::other)?;
            line.push(b'\n');
            let mut writer = writer.lock().await;
            let mut written = 0;
            let sent = match writer.as_mut() {
                Some(stdin) => loop {
                    if written == line.len() {
                        break stdin.flush().await;
                    }
                    match stdin.write(&line[written..]).await {
                        Ok(0) => break Err(io::ErrorKind::WriteZero.into()),
                        Ok(n) => written += n,
                        Err(error) => break Err(error),
                    }
                },
                None => Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "the transport is closed",
                )),
            };
            if let Some(call) = call {
                match &sent {
                    Ok(()) => call.mark_written(),
                    // Only a write that put no byte in the pipe is provably unsent.
                    Err(_) if written == 0 => call.mark_not_sent(),
                    Err(_) => {}
                }
            }
            sent
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let mut exited = false;
        loop {
            match self.next_line(&mut exited).await {
                Line::Read => {}
                Line::End => {
                    // The stream ended under a call: when the process ended too (by
                    // now, or a moment later: its stdout may close first), it died with
                    // the call, and the call says so.
                    if let Some(call) = self.current.get().filter(|call| !call.is_overflowed())
                        && (exited
                            || tokio::time::timeout(AFTER_EXIT, self.exited.clone())
                                .await
                                .is_ok())
                    {
                        call.record(Failure::Exited);
                    }
                    return None;
                }
                Line::TooLong => {
                    // The call's budget, or the bound of one message: never dropped
                    // silently, so the call does not wait for its deadline.
                    match self.current.get() {
                        Some(call) => call.raise_overflow(),
                        None => self.record(Failure::Protocol("a line longer than its bound")),
                    }
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&line);
            // Blank lines and lines that are not UTF-8 JSON are skipped, as before.
            let Ok(text) = std::str::from_utf8(line) else {
                continue;
            };
            if text.trim().is_empty() {
                continue;
            }
            let (text, tools) =
                match ingress::inspect(&self.redactor, text, self.expect(), self.listed) {
                    Ok(inspected) => inspected,
                    Err(refused) => {
                        self.record(match refused {
                            Refused::Blocks => Failure::TooManyBlocks,
                            Refused::Tools => Failure::TooManyTools,
                            Refused::Values { answer } => Failure::TooManyValues { answer },
                        });
                        return None;
                    }
                };
            // A server that could not read a request answers with no request id (a parse
            // error's `"id": null`); a process serves one call, so that is the call's
            // answer: waiting for another would only meet the deadline. (rmcp reads such
            // an answer, and drops it.)
            if let Some(code) = answer_without_id(&text).filter(|_| text.contains("\"error\"")) {
                self.record(Failure::AnswerWithoutId { code });
                return None;
            }
            let Ok(message) = serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(&text) else {
                continue;
            };
            if tools > 0 || matches!(&message, JsonRpcMessage::Response(_)) {
                self.listed += tools;
                if let JsonRpcMessage::Response(response) = &message {
                    self.lists
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .retain(|id| id.to_string() != response.id.to_string());
                }
            }
            if self.current.get().is_some_and(|call| call.route(&message)) {
                continue;
            }
            return Some(message);
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        let writer = Arc::clone(&self.writer);
        async move {
            drop(writer.lock().await.take());
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::answer_without_id;

    #[test]
    fn answers_without_an_id_are_told_apart() {
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
                true,
            ),
            (
                r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"bad"}}"#,
                true,
            ),
            // A reply to a notification (method not found), or a result without an id.
            (
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"nope"}}"#,
                false,
            ),
            (r#"{"jsonrpc":"2.0","result":{}}"#, false),
            // A notification, an answer with an id, and what is not JSON-RPC at all.
            (
                r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#,
                false,
            ),
            (r#"{"jsonrpc":"2.0","id":3,"result":{}}"#, false),
            ("not json", false),
            ("[1, 2]", false),
        ];
        for (line, expected) in cases {
            assert_eq!(answer_without_id(line).is_some(), expected, "{line}");
        }
    }
}
