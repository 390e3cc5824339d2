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
//!
//! A call that finds no ready context but one being opened waits for it (the first one
//! ready is handed to the longest waiting call) instead of starting its own beside it:
//! on cores that are the bottleneck, two starts at once make both slower than one. So that
//! the wait is never much longer than a cold start, the call asks for one more context of
//! its own (a hedge) once the opening under way is late against the measured time to open
//! one, and takes whichever is ready first; the other stays warm for the next call. When
//! starting a stdio server takes more than twice as long as the fastest start seen (the
//! cores are busy), the pool starts one process at a time for it instead of several, and
//! a call asks for its own only once the start under way has taken twice the usual time.

use std::{
    collections::{HashMap, VecDeque},
    sync::{Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use tokio::{sync::oneshot, time::Instant};
use tokio_util::sync::CancellationToken;

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
    /// Whether it can still serve a call: a session's transport may have ended, a stdio
    /// server may have exited meanwhile, or sent something outside a call that ended our
    /// reading of it (over budget, a line too long, an answer without an id) while the
    /// process lives on.
    fn usable(&self) -> bool {
        match self {
            Warm::Legacy(session) => session.is_open(),
            Warm::Stdio(session) => {
                !session.has_exited()
                    && !session.peer().is_transport_closed()
                    && session.failure().is_none()
            }
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
    /// Contexts being opened for this server now: when each began.
    opening: Vec<Instant>,
    /// Calls waiting for the next context ready, longest waiting first.
    waiters: VecDeque<oneshot::Sender<Warm>>,
    last_call: Option<Instant>,
    /// How long opening a context takes: a moving average, and the fastest seen.
    open_time: Option<Duration>,
    fastest_open: Option<Duration>,
}

impl Entry {
    /// Opening takes more than twice as long as the fastest open: the cores (or the
    /// server) are busy, and starting several at once would make each slower.
    fn contended(&self) -> bool {
        matches!((self.open_time, self.fastest_open), (Some(usual), Some(fastest)) if usual > fastest * 2)
    }

    /// A context opened for the pool is no longer being opened; notes how long it took.
    fn finished(&mut self, refill: &Refill, now: Instant, succeeded: bool) {
        if let Some(at) = self.opening.iter().position(|&began| began == refill.began) {
            self.opening.swap_remove(at);
        }
        if succeeded {
            let took = now.duration_since(refill.began);
            self.open_time = Some(self.open_time.map_or(took, |usual| (usual * 3 + took) / 4));
            self.fastest_open = Some(self.fastest_open.map_or(took, |fastest| fastest.min(took)));
        }
    }
}

/// What a call finds in the pool.
// Returned once per call and taken apart at once, never stored: boxing the ready context
// would only add an allocation.
#[allow(clippy::large_enum_variant)]
pub(super) enum Take {
    /// A context ready now.
    Ready(Warm),
    /// None ready, but one is being opened: wait for `handoff`, and ask for a context of
    /// its own ([`Pool::hedge`]) if none came by `hedge_at`.
    Wait {
        handoff: oneshot::Receiver<Warm>,
        hedge_at: Instant,
    },
    /// Nothing for this call: it opens its own, cold.
    Cold,
}

/// The pool of one client.
pub(super) struct Pool {
    settings: WarmSettings,
    state: Mutex<State>,
    /// The client's shutdown token: refills end with it too.
    parent: CancellationToken,
}

struct State {
    entries: HashMap<PoolKey, Entry>,
    /// Counts shutdowns: a context opened for an earlier generation is not kept.
    generation: u64,
    /// Set while the client shuts down: nothing is kept, nothing opened.
    closed: bool,
    /// Cancelled at shutdown: ends the refills under way.
    refills: CancellationToken,
}

/// A refill the pool asked for: which generation it is for, when it began, and what ends
/// it.
pub(super) struct Refill {
    generation: u64,
    began: Instant,
    pub(super) cancel: CancellationToken,
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
    pub(super) fn new(settings: WarmSettings, parent: CancellationToken) -> Self {
        Self {
            settings,
            state: Mutex::new(State {
                entries: HashMap::new(),
                generation: 0,
                closed: false,
                refills: parent.child_token(),
            }),
            parent,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn enabled(&self) -> bool {
        self.settings.enabled && !self.lock().closed
    }

    /// A warm context for a call: one ready, or one being opened that no other call waits
    /// for; `stale` receives the contexts found unusable or idle too long, to close.
    pub(super) fn take(&self, key: &PoolKey, stale: &mut Vec<Warm>) -> Take {
        let now = Instant::now();
        let mut state = self.lock();
        let Some(entry) = state.entries.get_mut(key) else {
            return Take::Cold;
        };
        while let Some(idle) = entry.idle.pop_front() {
            if now.duration_since(idle.since) < self.settings.idle && idle.context.usable() {
                return Take::Ready(idle.context);
            }
            stale.push(idle.context);
        }
        entry.waiters.retain(|waiter| !waiter.is_closed());
        // Every context being opened is already someone's: this call opens its own.
        if entry.waiters.len() >= entry.opening.len() {
            return Take::Cold;
        }
        // The opening that began first (and the one this call most likely gets) is late
        // once it has taken a quarter longer than usual, and the call never waits longer
        // than one usual open before it asks for its own. Nothing measured yet: at once.
        // On busy cores (a stdio server starting one process at a time), a second start
        // would take CPU from the one the call waits for and slow both: the call asks for
        // its own only once the start under way has taken twice the usual time (one that
        // hangs is still overtaken), however long the call has waited.
        let busy = matches!(key, PoolKey::Stdio(_)) && entry.contended();
        let oldest = entry.opening.iter().min().copied().unwrap_or(now);
        let hedge_at = entry.open_time.map_or(now, |usual| {
            if busy {
                oldest + usual * 2
            } else {
                (oldest + usual + usual / 4).min(now + usual)
            }
        });
        let (sender, handoff) = oneshot::channel();
        entry.waiters.push_back(sender);
        Take::Wait { handoff, hedge_at }
    }

    /// A call that waited for a context being opened until it was late asks for one of
    /// its own: opened the way a refill is (nothing of the call's is sent before the call
    /// takes it), handed to the longest waiting call, or kept warm if none waits. `None`
    /// when the pool is closed.
    pub(super) fn hedge(&self, key: &PoolKey) -> Option<Refill> {
        let now = Instant::now();
        let mut state = self.lock();
        if state.closed {
            return None;
        }
        let refill = Refill {
            generation: state.generation,
            began: now,
            cancel: state.refills.clone(),
        };
        let entry = state.entries.get_mut(key)?;
        entry.opening.push(now);
        Some(refill)
    }

    /// Notes a call to the server; `Some` when one more context should be opened for it
    /// now (its calls come closer together than the idle bound, and the bounds allow).
    /// The caller then opens one and hands it to [`Pool::put`] (or [`Pool::opened`]
    /// when it could not).
    pub(super) fn note_call(&self, key: &PoolKey) -> Option<Refill> {
        if !self.settings.enabled {
            return None;
        }
        let now = Instant::now();
        let mut state = self.lock();
        if state.closed {
            return None;
        }
        let total: usize = state
            .entries
            .values()
            .map(|e| e.idle.len() + e.opening.len())
            .sum();
        let refill = Refill {
            generation: state.generation,
            began: now,
            cancel: state.refills.clone(),
        };
        let entry = state.entries.entry(key.clone()).or_default();
        let frequent = entry
            .last_call
            .is_some_and(|last| now.duration_since(last) < self.settings.idle);
        entry.last_call = Some(now);
        // On busy cores, one process start at a time (an HTTP session's open is two round
        // trips, mostly waiting: on loopback its time varies by 2x from noise alone).
        let one_at_a_time = matches!(key, PoolKey::Stdio(_)) && entry.contended();
        let room = entry.idle.len() + entry.opening.len() < self.settings.per_server
            && total < self.settings.total
            && (entry.opening.is_empty() || !one_at_a_time);
        (frequent && room).then(|| {
            entry.opening.push(now);
            refill
        })
    }

    /// A context opened for the pool is ready: it goes to the call waiting longest, else
    /// it is kept; returns it when it is not wanted after all (the pool is off, full, or
    /// was shut down since the refill began), to close.
    pub(super) fn put(&self, key: &PoolKey, refill: &Refill, context: Warm) -> Option<Warm> {
        let mut state = self.lock();
        if state.closed || state.generation != refill.generation {
            return Some(context);
        }
        let Some(entry) = state.entries.get_mut(key) else {
            return Some(context);
        };
        let now = Instant::now();
        entry.finished(refill, now, true);
        let mut context = context;
        while let Some(waiter) = entry.waiters.pop_front() {
            match waiter.send(context) {
                Ok(()) => return None,
                // That call stopped waiting.
                Err(back) => context = back,
            }
        }
        // A context that took long to open (a slow launcher) is not kept for a server
        // that has not been called within the idle bound since.
        let called_lately = entry
            .last_call
            .is_some_and(|last| now.duration_since(last) < self.settings.idle);
        if entry.idle.len() >= self.settings.per_server || !called_lately {
            return Some(context);
        }
        entry.idle.push_back(Idle {
            context,
            since: now,
        });
        None
    }

    /// A context being opened for the pool could not be. When nothing else is being
    /// opened, the calls waiting stop waiting and open their own (whose error, if the
    /// server cannot be reached, is theirs to report).
    pub(super) fn opened(&self, key: &PoolKey, refill: &Refill) {
        let mut state = self.lock();
        if state.generation != refill.generation {
            return;
        }
        if let Some(entry) = state.entries.get_mut(key) {
            entry.finished(refill, Instant::now(), false);
            if entry.opening.is_empty() {
                entry.waiters.clear();
            }
        }
    }

    /// Takes out every context idle longer than the bound (or no longer usable), and
    /// forgets servers with nothing left and no recent call; returns them, to close.
    pub(super) fn sweep(&self) -> Vec<Warm> {
        let now = Instant::now();
        let idle = self.settings.idle;
        let mut stale = Vec::new();
        let mut state = self.lock();
        let entries = &mut state.entries;
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
                || !entry.opening.is_empty()
                || entry
                    .last_call
                    .is_some_and(|last| now.duration_since(last) < idle)
        });
        stale
    }

    /// Shutdown: from now on nothing is kept, and the refills under way are cancelled (a
    /// context one of them still opens is handed back by `put`, whatever happens later);
    /// returns every idle context, to close.
    pub(super) fn close(&self) -> Vec<Warm> {
        let mut state = self.lock();
        state.closed = true;
        state.generation += 1;
        state.refills.cancel();
        state.refills = self.parent.child_token();
        state
            .entries
            .drain()
            .flat_map(|(_, entry)| entry.idle.into_iter().map(|warm| warm.context))
            .collect()
    }

    /// After shutdown: contexts are kept again.
    pub(super) fn reopen(&self) {
        self.lock().closed = false;
    }

    /// Warm contexts waiting for a call.
    pub(super) fn idle_count(&self) -> usize {
        self.lock()
            .entries
            .values()
            .map(|entry| entry.idle.len())
            .sum()
    }

    /// Whether anything is warm, being opened, or recently called (the sweeper runs
    /// while this is true).
    pub(super) fn is_active(&self) -> bool {
        !self.lock().entries.is_empty()
    }

    /// When the sweeper should look next: when the oldest idle context reaches the idle
    /// bound (so none is held much past it), and at least every idle bound (to forget
    /// servers no longer called).
    pub(super) fn next_sweep(&self) -> Instant {
        let idle = self.settings.idle;
        let now = Instant::now();
        let expiry = self
            .lock()
            .entries
            .values()
            .flat_map(|entry| entry.idle.iter().map(|warm| warm.since + idle))
            .min();
        let next = expiry.map_or(now + idle, |at| at.min(now + idle));
        // Never a busy loop.
        next.max(now + Duration::from_millis(10))
    }
}
