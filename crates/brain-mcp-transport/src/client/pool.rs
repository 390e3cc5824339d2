//! Warm contexts: a small pool, per server, of single-use MCP contexts opened before a
//! call needs one (a legacy session already through `initialize`, a stdio process
//! already started and through its handshake). Each serves exactly one call and is then
//! closed as a cold one is; nothing call-specific is sent before a call takes it, and a
//! context only ever serves calls with the credential it was opened with (the key holds
//! it). Only the latency of opening moves off the call's path; isolation is unchanged.
//!
//! The pool adapts to the call rate: a context is opened in the background after a call
//! only when that server's calls come closer together than the idle bound (so a server
//! called once an hour keeps nothing warm), at most `per_server` per server and `total`
//! in all; an idle context is closed after `idle` (a server should not hold idle sessions
//! or processes for long).

use std::{
    collections::{HashMap, VecDeque},
    sync::{
        Mutex, MutexGuard, PoisonError,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use tokio::time::Instant;

use super::cache::ServerKey;
use crate::{
    context::{legacy, stdio},
    endpoint::StdioEndpoint,
};

/// The settings of the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct WarmSettings {
    /// Off: every call opens its own context, cold.
    pub(super) enabled: bool,
    /// Warm contexts kept for one server, at most.
    pub(super) per_server: usize,
    /// Warm contexts kept in all, at most.
    pub(super) total: usize,
    /// An idle warm context is closed after this long; calls further apart than this keep
    /// no context warm.
    pub(super) idle: Duration,
}

/// Which contexts may serve a call: same server, same credential.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) enum PoolKey {
    Http(ServerKey),
    Stdio(StdioEndpoint),
}

/// A warm context.
pub(super) enum Warm {
    Legacy(legacy::Session),
    Stdio(stdio::Session),
}

impl Warm {
    /// Whether it can still serve a call (a stdio server may have exited meanwhile).
    fn usable(&self) -> bool {
        match self {
            Warm::Legacy(_) => true,
            Warm::Stdio(session) => !session.has_exited(),
        }
    }
}

struct Idle {
    context: Warm,
    since: Instant,
}

#[derive(Default)]
struct Entry {
    idle: VecDeque<Idle>,
    /// Contexts being opened for this server now.
    opening: usize,
    last_call: Option<Instant>,
}

/// The pool of one client.
pub(super) struct Pool {
    settings: WarmSettings,
    entries: Mutex<HashMap<PoolKey, Entry>>,
    /// Set while the client shuts down: nothing is kept.
    closed: AtomicBool,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("settings", &self.settings)
            .field("idle", &self.idle_count())
            .finish()
    }
}

impl Pool {
    pub(super) fn new(settings: WarmSettings) -> Self {
        Self {
            settings,
            entries: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<PoolKey, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn enabled(&self) -> bool {
        self.settings.enabled && !self.closed.load(Ordering::Acquire)
    }

    /// A warm context for a call, if one is ready; `stale` receives the contexts found
    /// unusable or idle too long, to close.
    pub(super) fn take(&self, key: &PoolKey, stale: &mut Vec<Warm>) -> Option<Warm> {
        let now = Instant::now();
        let mut entries = self.lock();
        let entry = entries.get_mut(key)?;
        while let Some(idle) = entry.idle.pop_front() {
            if now.duration_since(idle.since) < self.settings.idle && idle.context.usable() {
                return Some(idle.context);
            }
            stale.push(idle.context);
        }
        None
    }

    /// Notes a call to the server; true when one more context should be opened for it
    /// now (its calls come closer together than the idle bound, and the bounds allow).
    /// The caller then opens one and hands it to [`Pool::put`] (or [`Pool::opened`]
    /// when it could not).
    pub(super) fn note_call(&self, key: &PoolKey) -> bool {
        if !self.enabled() {
            return false;
        }
        let now = Instant::now();
        let mut entries = self.lock();
        let total: usize = entries.values().map(|e| e.idle.len() + e.opening).sum();
        let entry = entries.entry(key.clone()).or_default();
        let frequent = entry
            .last_call
            .is_some_and(|last| now.duration_since(last) < self.settings.idle);
        entry.last_call = Some(now);
        let room = entry.idle.len() + entry.opening < self.settings.per_server
            && total < self.settings.total;
        if frequent && room {
            entry.opening += 1;
            true
        } else {
            false
        }
    }

    /// A context opened for the pool is ready; returns it when it is not wanted after
    /// all (the pool is off or full), to close.
    pub(super) fn put(&self, key: &PoolKey, context: Warm) -> Option<Warm> {
        let mut entries = self.lock();
        let entry = entries.entry(key.clone()).or_default();
        entry.opening = entry.opening.saturating_sub(1);
        if entry.idle.len() >= self.settings.per_server || self.closed.load(Ordering::Acquire) {
            return Some(context);
        }
        entry.idle.push_back(Idle {
            context,
            since: Instant::now(),
        });
        None
    }

    /// A context being opened for the pool could not be.
    pub(super) fn opened(&self, key: &PoolKey) {
        if let Some(entry) = self.lock().get_mut(key) {
            entry.opening = entry.opening.saturating_sub(1);
        }
    }

    /// Takes out every context idle longer than the bound (or no longer usable), and
    /// forgets servers with nothing left and no recent call; returns them, to close.
    pub(super) fn sweep(&self) -> Vec<Warm> {
        let now = Instant::now();
        let idle = self.settings.idle;
        let mut stale = Vec::new();
        let mut entries = self.lock();
        for entry in entries.values_mut() {
            let (keep, expired): (VecDeque<Idle>, VecDeque<Idle>) = entry
                .idle
                .drain(..)
                .partition(|warm| now.duration_since(warm.since) < idle && warm.context.usable());
            entry.idle = keep;
            stale.extend(expired.into_iter().map(|warm| warm.context));
        }
        entries.retain(|_, entry| {
            !entry.idle.is_empty()
                || entry.opening > 0
                || entry
                    .last_call
                    .is_some_and(|last| now.duration_since(last) < idle)
        });
        stale
    }

    /// Shutdown: from now on nothing is kept (a context still being opened is handed
    /// back by `put`); returns every idle context, to close.
    pub(super) fn close(&self) -> Vec<Warm> {
        self.closed.store(true, Ordering::Release);
        self.lock()
            .drain()
            .flat_map(|(_, entry)| entry.idle.into_iter().map(|warm| warm.context))
            .collect()
    }

    /// After shutdown: contexts are kept again.
    pub(super) fn reopen(&self) {
        self.closed.store(false, Ordering::Release);
    }

    /// Warm contexts waiting for a call.
    pub(super) fn idle_count(&self) -> usize {
        self.lock().values().map(|entry| entry.idle.len()).sum()
    }

    /// Whether anything is warm, being opened, or recently called (the sweeper runs
    /// while this is true).
    pub(super) fn is_active(&self) -> bool {
        !self.lock().is_empty()
    }

    /// How long the sweeper waits between sweeps.
    pub(super) fn sweep_every(&self) -> Duration {
        (self.settings.idle / 2).max(Duration::from_millis(50))
    }
}
