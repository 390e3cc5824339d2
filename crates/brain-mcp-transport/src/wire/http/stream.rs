//! SSE streams: a call's own (counted against its budget, its progress routed to it, a
//! response to another id refused), a resumed one, the standalone one.

use std::{
    borrow::Cow,
    collections::HashMap,
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll, ready},
};

use bytes::Bytes;
use futures::{Stream, StreamExt, stream::BoxStream};
use http::{HeaderName, HeaderValue, StatusCode, header};
use rmcp::{
    model::RequestId,
    transport::streamable_http_client::{SseError, StreamableHttpError},
};
use sse_stream::Sse;

use super::{
    EVENT_STREAM, HttpBackend, HttpError, Resend, Result, SessionTracker,
    session::SetOnDrop,
    sse_filter::{
        Event, UNEXPECTED_CONTENT_TYPE, WRONG_ID, event_to, media_type, parse_resume_id,
        progress_message, resume_id,
    },
};
use crate::{
    call_state::CallState,
    error::classify::Failure,
    wire::ingress::{self, Expect, keep_task_support, shape},
};

const LAST_EVENT_ID_HEADER: &str = "last-event-id";

impl HttpBackend {
    /// Opens a GET stream: a call's stream resumed (its key is in the event id), or the
    /// standalone stream when asked for.
    pub(super) async fn stream(
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
            Some(id) => match parse_resume_id(&id) {
                Some((key, server_id)) => match self.registry.get(key) {
                    Some(call) => (Some((key, call)), Some(server_id.to_owned())),
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
        // The id is the server's: one that is not a valid header value cannot be sent
        // back, and that is the server's fault, not ours.
        let last_event_id = match last_event_id.map(HeaderValue::try_from) {
            Some(Err(_)) => {
                self.failed(call.as_deref(), Failure::BadEventId);
                return Err(StreamableHttpError::Client(HttpError::Build));
            }
            Some(Ok(id)) => Some(id),
            None => None,
        };
        let mut request = self.authorize(
            self.client()
                .get(uri.as_ref())
                .header(header::ACCEPT, EVENT_STREAM),
            auth_header,
            custom_headers,
            session_id.as_deref(),
        );
        if let Some(id) = last_event_id {
            request = request.header(LAST_EVENT_ID_HEADER, id);
        }
        if let Some(call) = &call {
            call.count_resume();
        }
        // A GET runs no tool: it may go again.
        let response = self.send(request, call.as_deref(), Resend::Once).await?;
        let status = response.status();
        if status == StatusCode::METHOD_NOT_ALLOWED {
            return Err(StreamableHttpError::ServerDoesNotSupportSse);
        }
        if !status.is_success() {
            // A call's stream resumed: the call went out before, so no status here can
            // make it unsent (nor offer it for a new authorization and a resend).
            let failure = match &call {
                Some(_) => Failure::ResumeRefused {
                    status: status.as_u16(),
                },
                None => Failure::Status {
                    status: status.as_u16(),
                    session: session_id.is_some(),
                    challenge: None,
                    reason: None,
                    old_sse: false,
                },
            };
            self.failed(call.as_deref(), failure);
            return Err(StreamableHttpError::Client(HttpError::Status(
                status.as_u16(),
            )));
        }
        let media = media_type(
            response
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|value| value.to_str().ok()),
        );
        if media.as_deref() != Some(EVENT_STREAM) {
            return Err(self.not_mcp(call.as_deref(), UNEXPECTED_CONTENT_TYPE));
        }
        Ok(self.events(
            response,
            resumed.map(|(key, call)| CallStream {
                key,
                call,
                expected: None,
            }),
            Expect::Other,
        ))
    }

    /// A response's SSE events. Every event's data has the server's secrets hidden
    /// before anything reads it; a listing's pages are counted. For a call's stream: its
    /// progress is routed to it, its answer's shape is bounded, a response to another
    /// request id fails the stream (`expected` is the call's request id; `None` on a
    /// resumed stream, where any response is the answer), nothing after the answer is
    /// counted or passed on, and event ids carry the call's key so that a resumed stream
    /// finds its call.
    pub(super) fn events(
        &self,
        response: reqwest::Response,
        call: Option<CallStream>,
        expect: Expect,
    ) -> BoxStream<'static, std::result::Result<Sse, SseError>> {
        // Set once the call's answer went past: what follows (rmcp drains the stream a
        // moment) is neither counted against the budget nor routed.
        let answered = Arc::new(AtomicBool::new(false));
        let bytes = CountedBytes {
            inner: response.bytes_stream().boxed(),
            call: call.as_ref().map(|stream| Arc::clone(&stream.call)),
            session: Arc::clone(&self.session),
            non_call_budget: self.config.non_call_budget,
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
        let events =
            super::sse_parse::events(bytes).take_until(async move { lifetime.cancelled().await });
        let backend = self.clone();
        let Some(CallStream {
            key,
            call,
            expected,
        }) = call
        else {
            return events
                .map(move |event| {
                    let mut sse = event?;
                    backend.hide_secrets(&mut sse);
                    // Only a call's stream carries resume ids of ours: one the server
                    // forged here must not resume another call's stream.
                    if sse.id.as_deref().and_then(parse_resume_id).is_some() {
                        sse.id = None;
                    }
                    if let Some(data) = sse.data.as_deref() {
                        match shape(data, expect, backend.session.listed()) {
                            Ok(tools) => backend.session.add_listed(tools),
                            Err(refused) => {
                                backend.refuse(refused, None);
                                return Err(SseError::InvalidLine);
                            }
                        }
                        if expect == Expect::List
                            && let Some(kept) = keep_task_support(data)
                        {
                            sse.data = Some(kept);
                        }
                    }
                    Ok(sse)
                })
                .boxed();
        };
        let budget = ingress::expect_of(&call);
        events
            .filter_map(move |event| {
                let event = match event {
                    Ok(_) if answered.load(Ordering::Acquire) => None,
                    Ok(mut sse) => {
                        backend.hide_secrets(&mut sse);
                        // Every event is bounded, whatever it looks like: an answer in
                        // disguise must not slip past the bound.
                        if let Some(data) = sse.data.as_deref()
                            && let Err(refused) = shape(data, budget, 0)
                        {
                            backend.refuse(refused, Some(&call));
                            return std::future::ready(Some(Err(SseError::InvalidLine)));
                        }
                        if matches!(budget, Expect::Poll { .. })
                            && let Some(read) = sse.data.as_deref().and_then(ingress::poll_answer)
                        {
                            sse.data = Some(read);
                        }
                        let id = sse.id.as_ref().map(|id| resume_id(key, id));
                        // A server's retry was bounded where it was read.
                        let retry = sse.retry;
                        let progress = progress_message(sse.data.as_deref());
                        if progress.is_some_and(|message| call.route(&message)) {
                            // Delivered to the call. rmcp still sees the event's id (and
                            // retry), without data, so a resumed stream starts after it.
                            (id.is_some() || sse.retry.is_some()).then_some(Ok(Sse {
                                id,
                                data: None,
                                event: None,
                                retry,
                            }))
                        } else {
                            // rmcp reads only `message` events (the default type).
                            let message = sse.event.as_deref().is_none_or(|kind| kind == "message");
                            match event_to(
                                sse.data.as_deref().filter(|_| message),
                                expected.as_ref(),
                            ) {
                                Event::Other => Some(Ok(Sse { id, retry, ..sse })),
                                Event::Ours => {
                                    answered.store(true, Ordering::Release);
                                    Some(Ok(Sse { id, retry, ..sse }))
                                }
                                Event::Wrong => {
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

    /// Hides the server's secrets in an event: its data, its id and its type (rmcp logs
    /// the last two).
    fn hide_secrets(&self, sse: &mut Sse) {
        let redactor = &self.config.redactor;
        if let Some(data) = &sse.data
            && let Cow::Owned(hidden) = redactor.json(data)
        {
            sse.data = Some(hidden);
        }
        for field in [&mut sse.id, &mut sse.event] {
            if let Some(text) = field
                && let Cow::Owned(hidden) = redactor.text(text)
            {
                *field = Some(hidden);
            }
        }
    }
}

/// A call's response stream: the call, its registry key, and the request id it answers.
pub(super) struct CallStream {
    pub(super) key: u64,
    pub(super) call: Arc<CallState>,
    pub(super) expected: Option<RequestId>,
}

/// Counts a response's bytes against its call's budget (or bounds one event when the
/// stream belongs to no call), and fails the stream past the bound.
struct CountedBytes {
    inner: BoxStream<'static, reqwest::Result<Bytes>>,
    call: Option<Arc<CallState>>,
    /// Where a stream that is no call's is counted, and its bound.
    session: Arc<SessionTracker>,
    non_call_budget: usize,
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
                let within = match (&call, &self.call) {
                    (Some(call), _) => call.count(chunk.len()),
                    // After the call's answer: not counted.
                    (None, Some(_)) => true,
                    (None, None) => self.session.count(chunk.len(), self.non_call_budget),
                };
                if !within || !self.event.observe(&chunk) {
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
