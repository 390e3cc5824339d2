//! The refreshes of delegated grants running now, and the grants whose refreshed tokens
//! could not be saved: what a host waits for before its process ends, and what it tells
//! its operator when a rotated refresh token may be lost.
//!
//! A refresh runs in a task of its own, bounded by the grant's lease (see `flow.rs`):
//! once the authorization server may have rotated the refresh token, its answer must
//! reach the store even when the call that started it ended. A process that exits
//! before then keeps the spent refresh token in the store, and the next refresh that
//! presents it can revoke the grant (reuse detection). So `McpClient::shutdown` waits for
//! these tasks, and `McpClient::refreshes_in_flight` tells which grants they are for.

use std::{
    collections::HashMap,
    sync::{
        Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
};

use tokio_util::task::TaskTracker;

use super::GrantKey;

/// Refreshes in flight and grants left unsaved, for one client.
#[derive(Debug, Default)]
pub(crate) struct Refreshes {
    tasks: TaskTracker,
    next: AtomicU64,
    running: Mutex<HashMap<u64, GrantKey>>,
    unsaved: Mutex<Vec<GrantKey>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Removes a refresh from the running ones however its task ends (finished, or dropped
/// with its runtime).
struct Running<'a> {
    refreshes: &'a Refreshes,
    id: u64,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        lock(&self.refreshes.running).remove(&self.id);
    }
}

impl Refreshes {
    /// Runs the refresh of `key` in a task of its own, counted as in flight until it ends.
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    pub(crate) fn spawn<F>(
        self: &std::sync::Arc<Self>,
        key: GrantKey,
        refresh: F,
    ) -> tokio::task::JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.running).insert(id, key);
        let refreshes = std::sync::Arc::clone(self);
        self.tasks.spawn(async move {
            let _running = Running {
                refreshes: &refreshes,
                id,
            };
            refresh.await
        })
    }

    /// Records a grant whose refreshed tokens could not be saved.
    #[cfg_attr(not(feature = "oauth"), allow(dead_code))]
    pub(crate) fn unsaved(&self, key: GrantKey) {
        let mut unsaved = lock(&self.unsaved);
        if !unsaved.contains(&key) {
            unsaved.push(key);
        }
    }

    /// The grants being refreshed now, one entry per grant.
    pub(crate) fn running(&self) -> Vec<GrantKey> {
        let mut keys: Vec<GrantKey> = lock(&self.running).values().cloned().collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// The grants whose refreshed tokens could not be saved since the last call.
    pub(crate) fn take_unsaved(&self) -> Vec<GrantKey> {
        std::mem::take(&mut *lock(&self.unsaved))
    }

    /// Waits until no refresh runs (each ends within its lease).
    pub(crate) async fn wait(&self) {
        self.tasks.close();
        self.tasks.wait().await;
        self.tasks.reopen();
    }

    /// Refreshes running now (tasks not finished).
    pub(crate) fn len(&self) -> usize {
        self.tasks.len()
    }
}
