//! The session id the server issued, what is needed to delete it, and its `DELETE`.

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
};

use http::{HeaderName, HeaderValue, StatusCode};
use rmcp::transport::streamable_http_client::StreamableHttpError;
use tokio::sync::Notify;

use super::{Bound, HttpBackend, HttpError, Resend, Result};
use crate::error::classify::Failure;

/// What the backend knows about its session, for cleanup and classification.
#[derive(Debug, Default)]
pub(crate) struct SessionTracker {
    id: Mutex<Option<Arc<str>>>,
    headers: Mutex<HashMap<HeaderName, HeaderValue>>,
    pub(super) deleted: AtomicBool,
    failure: Mutex<Option<Failure>>,
    /// Set once the bytes outside calls passed their budget: every later non-call
    /// answer is refused, so a request waiting in rmcp for one wakes up on it. (Not set
    /// by failures a request recovers from, such as a version the server rejects and
    /// the retry it answers.)
    over_budget: Latch,
    /// Set once the standalone GET stream was answered (or refused).
    pub(super) standalone: Latch,
    /// Whether an `initialize` went out, and set once it was answered (or failed): a
    /// session the server created for it can only be deleted once its id is known.
    pub(super) initializing: AtomicBool,
    pub(super) initialized: Latch,
    /// Tools listed so far on this transport (discovery's bound counts them).
    listed: AtomicUsize,
    /// Bytes received that were not a call's (handshake, listing).
    received: AtomicUsize,
}

/// A flag that can be awaited.
#[derive(Debug, Default)]
pub(super) struct Latch {
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

    /// Counts bytes received that were not a call's; false (and the failure recorded)
    /// once past `budget`.
    pub(super) fn count(&self, bytes: usize, budget: usize) -> bool {
        let total = self
            .received
            .fetch_add(bytes, Ordering::Relaxed)
            .saturating_add(bytes);
        if total > budget {
            self.record(Failure::OverBudget { budget });
            self.over_budget.set();
            return false;
        }
        true
    }

    /// Tools listed so far on this transport.
    pub(super) fn listed(&self) -> usize {
        self.listed.load(Ordering::Relaxed)
    }

    pub(super) fn add_listed(&self, tools: usize) {
        self.listed.fetch_add(tools, Ordering::Relaxed);
    }

    /// The first failure of a request that was not a call (the handshake, discovery).
    pub(crate) fn failure(&self) -> Option<Failure> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(super) fn record(&self, failure: Failure) {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(failure);
    }

    /// Resolves once the bytes outside calls passed their budget.
    pub(crate) async fn over_budget(&self) {
        self.over_budget.wait().await;
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

    /// The session id the server issued, if any.
    pub(crate) fn session_id(&self) -> Option<String> {
        self.id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_deref()
            .map(str::to_owned)
    }

    pub(super) fn issued(&self, id: &str) {
        *self.id.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::from(id));
    }

    pub(super) fn used_headers(&self, headers: &HashMap<HeaderName, HeaderValue>) {
        let mut kept = self.headers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(version) = headers.get("mcp-protocol-version") {
            kept.insert(
                HeaderName::from_static("mcp-protocol-version"),
                version.clone(),
            );
        }
    }
}

/// Sets a latch when dropped, however the request that holds it ends.
pub(super) struct SetOnDrop<'a>(pub(super) Option<&'a Latch>);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(latch) = self.0 {
            latch.set();
        }
    }
}

impl HttpBackend {
    /// Deletes the session; rmcp calls this when it closes, and we do when rmcp could not.
    pub(crate) async fn delete(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<()> {
        self.session.deleted.store(true, Ordering::Release);
        let request = self.authorize(
            self.client().delete(uri.as_ref()),
            auth_header,
            custom_headers,
            Some(&session_id),
        );
        // Not bound to the lifetime token: a DELETE is what closing sends. rmcp bounds it
        // (5 s), and so do we. Failures are the session's, not a call's.
        let response = self
            .execute(request, None, Resend::Once, Bound::Unbound)
            .await?;
        let status = response.status();
        if status.is_success() || status == StatusCode::METHOD_NOT_ALLOWED {
            Ok(())
        } else {
            Err(StreamableHttpError::Client(HttpError::Status(
                status.as_u16(),
            )))
        }
    }
}
