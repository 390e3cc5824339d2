//! A [`SessionManager`] wrapper that counts legacy sessions opened and closed, each close once.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};

use crate::tools::Kit;

/// Counts sessions around an inner manager. rmcp calls `close_session` on DELETE *and* when the
/// session worker ends, so a live set makes each session count once.
#[derive(Debug)]
pub(crate) struct CountingSessions<M> {
    inner: M,
    live: Mutex<HashSet<SessionId>>,
    kit: Arc<Kit>,
}

impl<M> CountingSessions<M> {
    pub(crate) fn new(inner: M, kit: Arc<Kit>) -> Self {
        Self {
            inner,
            live: Mutex::new(HashSet::new()),
            kit,
        }
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashSet<SessionId>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<M: SessionManager> CountingSessions<M> {
    /// Closes every live session (a server expiring them).
    pub(crate) async fn expire_all(&self) {
        let live: Vec<SessionId> = self.live().iter().cloned().collect();
        for id in live {
            let _ = self.close_session(&id).await;
        }
    }
}

impl<M: SessionManager> SessionManager for CountingSessions<M> {
    type Error = M::Error;
    type Transport = M::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        self.live().insert(id.clone());
        self.kit.stats.update(|c| c.sessions_opened += 1);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let was_live = self.live().remove(id);
        if was_live {
            self.kit.stats.update(|c| c.sessions_closed += 1);
        }
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}
