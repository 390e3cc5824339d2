//! The state of each call in flight, shared by the call path and the transport wrappers.
//!
//! rmcp stamps its own numeric `progressToken` on every request and routes progress
//! through spawned tasks. We want the call ID on the wire and progress delivered in wire
//! order, before the result. So the call path puts a private marker in the request's
//! `_meta`; the transport wrapper that serializes the request (our HTTP backend, or the
//! stdio wrapper) swaps the marker for the call ID as `progressToken`, and routes the
//! progress notifications of that call straight to its channel as they are read.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering},
    },
};

use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetMeta, JsonRpcMessage, NumberOrString,
    ProgressNotificationParam, ProgressToken, RequestId, ServerJsonRpcMessage, ServerNotification,
};
use tokio::sync::Notify;

use crate::{
    api::ResendBudget,
    error::classify::Failure,
    progress::{Progress, ProgressSender},
};

/// The private `_meta` key that carries a call's registry key from the call path to the
/// transport wrapper. It never reaches the wire.
pub(crate) const CALL_MARKER: &str = "brain.dev/internal-call-key";

const NOT_SENT: u8 = 0;
const SENDING: u8 = 1;
const WRITTEN: u8 = 2;
/// Given up before it was sent: it never will be (so `not_sent` stays true).
const ABANDONED: u8 = 3;

/// One call in flight.
#[derive(Debug)]
pub(crate) struct CallState {
    token: Arc<str>,
    progress: Option<ProgressSender>,
    budget: usize,
    received: AtomicUsize,
    overflowed: AtomicBool,
    overflow: Notify,
    stage: AtomicU8,
    failure: Mutex<Option<Failure>>,
    resumes: AtomicUsize,
    /// `tools/call` requests sent for this call (more than one in `input_required`
    /// exchanges).
    rounds: AtomicUsize,
    request: Mutex<Option<RequestId>>,
    /// The one resend the call may get (shared with its other attempts).
    resend: ResendBudget,
}

impl CallState {
    pub(crate) fn new(token: &str, progress: Option<ProgressSender>, budget: usize) -> Self {
        Self {
            token: Arc::from(token),
            progress,
            budget,
            received: AtomicUsize::new(0),
            overflowed: AtomicBool::new(false),
            overflow: Notify::new(),
            stage: AtomicU8::new(NOT_SENT),
            resend: ResendBudget::default(),
            failure: Mutex::new(None),
            resumes: AtomicUsize::new(0),
            rounds: AtomicUsize::new(0),
            request: Mutex::new(None),
        }
    }

    pub(crate) fn budget(&self) -> usize {
        self.budget
    }

    /// The bytes of the call's response received so far.
    pub(crate) fn received(&self) -> usize {
        self.received.load(Ordering::Relaxed)
    }

    /// Counts response bytes; false (and the overflow signal raised) once past the budget.
    pub(crate) fn count(&self, bytes: usize) -> bool {
        let total = self
            .received
            .fetch_add(bytes, Ordering::Relaxed)
            .saturating_add(bytes);
        if total > self.budget {
            self.raise_overflow();
            false
        } else {
            true
        }
    }

    pub(crate) fn raise_overflow(&self) {
        if !self.overflowed.swap(true, Ordering::AcqRel) {
            self.overflow.notify_waiters();
        }
    }

    pub(crate) fn is_overflowed(&self) -> bool {
        self.overflowed.load(Ordering::Acquire)
    }

    /// Resolves once the response went over budget.
    pub(crate) async fn overflowed(&self) {
        loop {
            let notified = self.overflow.notified();
            if self.is_overflowed() {
                return;
            }
            notified.await;
        }
    }

    /// The request is about to be written. False when the call was abandoned first: then
    /// it must not be written at all.
    pub(crate) fn mark_sending(&self) -> bool {
        match self
            .stage
            .compare_exchange(NOT_SENT, SENDING, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(stage) => stage != ABANDONED,
        }
    }

    /// The call's resend budget is the request's (shared with its other attempts).
    pub(crate) fn with_resend(mut self, resend: ResendBudget) -> Self {
        self.resend = resend;
        self
    }

    /// Takes the call's one resend: true when it was still there.
    pub(crate) fn take_resend(&self) -> bool {
        self.resend.take()
    }

    /// The request was written (stdio), or the server answered it (HTTP).
    pub(crate) fn mark_written(&self) {
        self.stage.store(WRITTEN, Ordering::Release);
    }

    /// The request was provably not written (a connect error).
    pub(crate) fn mark_not_sent(&self) {
        let _ = self
            .stage
            .compare_exchange(SENDING, NOT_SENT, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Gives the call up. True when it had not been sent, which is then final: a request
    /// still queued will not be written.
    pub(crate) fn abandon(&self) -> bool {
        matches!(
            self.stage
                .compare_exchange(NOT_SENT, ABANDONED, Ordering::AcqRel, Ordering::Acquire),
            Ok(_) | Err(ABANDONED)
        )
    }

    /// The request that may be running on the server: sent, and not answered yet.
    pub(crate) fn set_request(&self, id: Option<RequestId>) {
        *self.request.lock().unwrap_or_else(PoisonError::into_inner) = id;
    }

    pub(crate) fn request(&self) -> Option<RequestId> {
        self.request
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn record(&self, failure: Failure) {
        let mut slot = self.failure.lock().unwrap_or_else(PoisonError::into_inner);
        slot.get_or_insert(failure);
    }

    pub(crate) fn failure(&self) -> Option<Failure> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Counts one `tools/call` request of the call.
    pub(crate) fn count_round(&self) {
        self.rounds.fetch_add(1, Ordering::Relaxed);
    }

    /// How many `tools/call` requests the call sent.
    pub(crate) fn rounds(&self) -> usize {
        self.rounds.load(Ordering::Relaxed)
    }

    /// Counts one resumption of the call's response stream.
    pub(crate) fn count_resume(&self) {
        self.resumes.fetch_add(1, Ordering::Relaxed);
    }

    /// How many times the call's response stream was resumed.
    pub(crate) fn resumed(&self) -> usize {
        self.resumes.load(Ordering::Relaxed)
    }

    /// Delivers the message to this call if it is one of its progress notifications.
    /// Returns true when the message was consumed.
    pub(crate) fn route(&self, message: &ServerJsonRpcMessage) -> bool {
        let JsonRpcMessage::Notification(notification) = message else {
            return false;
        };
        let ServerNotification::ProgressNotification(progress) = &notification.notification else {
            return false;
        };
        self.deliver(&progress.params)
    }

    /// Delivers a progress notification if its token is this call's.
    pub(crate) fn deliver(&self, params: &ProgressNotificationParam) -> bool {
        let matches = match &params.progress_token.0 {
            NumberOrString::String(token) => **token == *self.token,
            NumberOrString::Number(number) => number.to_string() == *self.token,
        };
        if !matches {
            return false;
        }
        if let Some(progress) = &self.progress {
            progress.send(Progress::new(
                params.progress,
                params.total,
                params.message.clone(),
            ));
        }
        true
    }
}

/// Calls in flight on one transport (one per legacy session, shared by the calls of a
/// long-lived 2026-07-28 client).
#[derive(Debug, Default)]
pub(crate) struct Registry {
    next: AtomicU64,
    calls: Mutex<HashMap<u64, Arc<CallState>>>,
    /// The trace context of the call this transport was opened for (a legacy session or
    /// a process opened for one call), put in the `_meta` of every request it writes (the
    /// handshake's too); empty for a warm context and a shared client, whose calls carry
    /// their own in their `tools/call`.
    trace: serde_json::Map<String, serde_json::Value>,
}

/// Removes its call from the registry when dropped.
#[derive(Debug)]
pub(crate) struct Registration {
    registry: Arc<Registry>,
    key: u64,
}

impl Registration {
    pub(crate) fn key(&self) -> u64 {
        self.key
    }
}

impl Drop for Registration {
    /// The call is over: a request of it still queued in rmcp is never written.
    fn drop(&mut self) {
        if let Some(state) = self.registry.lock().remove(&self.key) {
            state.abandon();
        }
    }
}

impl Registry {
    /// The registry of a transport opened for one call, whose requests carry `trace`.
    pub(crate) fn for_call(trace: serde_json::Map<String, serde_json::Value>) -> Self {
        Self {
            trace,
            ..Self::default()
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<CallState>>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn register(self: &Arc<Self>, state: Arc<CallState>) -> Registration {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().insert(key, state);
        Registration {
            registry: Arc::clone(self),
            key,
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// The call registered under `key`.
    pub(crate) fn get(&self, key: u64) -> Option<Arc<CallState>> {
        self.lock().get(&key).cloned()
    }

    /// Called as a message is about to be written. If it is a `tools/call` carrying a call
    /// marker: removes the marker, puts the call's token in `progressToken`, marks the
    /// call as sending and returns it with its key. `Err` when the call was given up (or
    /// is over) while its request waited in rmcp's queue: the request must not be written.
    pub(crate) fn claim(
        &self,
        message: &mut ClientJsonRpcMessage,
    ) -> Result<Option<(u64, Arc<CallState>)>, GivenUp> {
        let JsonRpcMessage::Request(request) = message else {
            return Ok(None);
        };
        if !self.trace.is_empty() {
            crate::telemetry::add_trace(&mut request.request.get_meta_mut().0.0, &self.trace);
        }
        if !matches!(request.request, ClientRequest::CallToolRequest(_)) {
            return Ok(None);
        }
        let meta = request.request.get_meta_mut();
        let Some(key) = meta.0.0.remove(CALL_MARKER).and_then(|key| key.as_u64()) else {
            return Ok(None);
        };
        let state = self.lock().get(&key).cloned().ok_or(GivenUp)?;
        if !state.mark_sending() {
            return Err(GivenUp);
        }
        meta.set_progress_token(ProgressToken(NumberOrString::String(Arc::clone(
            &state.token,
        ))));
        Ok(Some((key, state)))
    }
}

/// A call's request that must not be written: the call was given up before it was.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct GivenUp;

impl GivenUp {
    pub(crate) const MESSAGE: &str = "the call was given up before it was sent";
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolRequest, CallToolRequestParams, RequestMetaObject};
    use serde_json::json;

    use super::*;

    fn call_message(marker: Option<u64>) -> ClientJsonRpcMessage {
        let mut request = ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new("echo"),
        ));
        let meta = request.get_meta_mut();
        meta.set_progress_token(ProgressToken(NumberOrString::Number(7)));
        if let Some(marker) = marker {
            meta.0.0.insert(CALL_MARKER.into(), json!(marker));
        }
        meta.0
            .0
            .insert("brain.dev/scope".into(), json!({"call_id": "c1"}));
        ClientJsonRpcMessage::request(request, NumberOrString::Number(1))
    }

    #[test]
    fn claim_swaps_the_marker_for_the_call_token() {
        let registry = Arc::new(Registry::default());
        let state = Arc::new(CallState::new("c1", None, 10));
        let registration = registry.register(state);
        let mut message = call_message(Some(registration.key()));
        assert!(matches!(registry.claim(&mut message), Ok(Some(_))));
        let wire = serde_json::to_value(&message).unwrap();
        assert_eq!(
            wire["params"]["_meta"],
            json!({"progressToken": "c1", "brain.dev/scope": {"call_id": "c1"}})
        );
        drop(registration);
        assert_eq!(registry.len(), 0);
        let _ = RequestMetaObject::new();
    }

    #[test]
    fn a_request_of_a_call_given_up_is_never_claimed_for_sending() {
        let registry = Arc::new(Registry::default());
        // The call ended (timeout, cancel, dropped) while its request was queued.
        let state = Arc::new(CallState::new("c1", None, 10));
        let registration = registry.register(Arc::clone(&state));
        let mut message = call_message(Some(registration.key()));
        drop(registration);
        assert_eq!(registry.claim(&mut message).err(), Some(GivenUp));
        assert!(state.abandon(), "it stays not sent");
        // Given up while still registered: the same.
        let state = Arc::new(CallState::new("c2", None, 10));
        let registration = registry.register(Arc::clone(&state));
        assert!(state.abandon());
        let mut message = call_message(Some(registration.key()));
        assert_eq!(registry.claim(&mut message).err(), Some(GivenUp));
        // Once sending, giving up is too late: the request may be on the wire.
        let state = Arc::new(CallState::new("c3", None, 10));
        let registration = registry.register(Arc::clone(&state));
        let mut message = call_message(Some(registration.key()));
        assert!(matches!(registry.claim(&mut message), Ok(Some(_))));
        assert!(!state.abandon());
    }

    #[test]
    fn unmarked_requests_are_left_alone() {
        let registry = Arc::new(Registry::default());
        let mut message = call_message(None);
        assert!(matches!(registry.claim(&mut message), Ok(None)));
        let wire = serde_json::to_value(&message).unwrap();
        assert_eq!(wire["params"]["_meta"]["progressToken"], json!(7));
    }

    #[test]
    fn budget_overflow_is_signalled_once_past_the_limit() {
        let state = CallState::new("c1", None, 10);
        assert!(state.count(10));
        assert!(!state.is_overflowed());
        assert!(!state.count(1));
        assert!(state.is_overflowed());
    }
}
