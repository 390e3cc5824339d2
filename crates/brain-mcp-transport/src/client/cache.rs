//! What the client remembers about servers: which era each HTTP server (URL and token)
//! speaks, with its shared 2026-07-28 client, and which era each stdio command speaks.
//! Bounded (least recently used first out) and expiring.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::{
    api::{DEFAULT_DISCOVERY_BYTES, Era},
    context::{
        Shared,
        modern::{ModernClient, OpenError},
    },
    endpoint::{HttpEndpoint, StdioEndpoint, redacted_url},
    error::{CallError, Delivery, ErrorKind},
    secret::Secret,
};

/// What is known about one server (one URL and token).
#[derive(Debug, Clone)]
pub(super) enum Known {
    Legacy,
    Modern(Arc<ModernSlot>),
}

#[derive(Debug)]
struct Entry {
    known: Known,
    expires: Instant,
    used: Instant,
}

/// The key of a server: its URL and the token the calls use (a new token gets a new
/// 2026-07-28 client, so a rotated key takes effect at once).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(super) struct ServerKey {
    url: String,
    bearer: Option<Secret>,
}

/// Without the URL's user info, query and fragment (they may hold secrets); the bearer is
/// a `Secret`, whose `Debug` is redacted.
impl std::fmt::Debug for ServerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerKey")
            .field("url", &redacted_url(&self.url))
            .field("bearer", &self.bearer)
            .finish()
    }
}

impl ServerKey {
    pub(super) fn of(endpoint: &HttpEndpoint) -> Self {
        Self {
            url: endpoint.url.clone(),
            bearer: endpoint.bearer.clone(),
        }
    }
}

/// The cache of one client.
#[derive(Debug)]
pub(super) struct Cache {
    ttl: Duration,
    capacity: usize,
    servers: Mutex<HashMap<ServerKey, Entry>>,
    stdio_eras: Mutex<HashMap<StdioEndpoint, (Era, Instant)>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Cache {
    pub(super) fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            ttl,
            capacity: capacity.max(1),
            servers: Mutex::new(HashMap::new()),
            stdio_eras: Mutex::new(HashMap::new()),
        }
    }

    /// What is known about a server, if it is still fresh (a modern server whose client
    /// died is forgotten at once).
    pub(super) fn lookup(&self, key: &ServerKey) -> Option<Known> {
        let now = Instant::now();
        let mut servers = lock(&self.servers);
        let entry = servers.get_mut(key)?;
        let stale = match &entry.known {
            Known::Modern(slot) => slot.is_closed(),
            Known::Legacy => false,
        };
        if entry.expires <= now || stale {
            servers.remove(key);
            return None;
        }
        entry.used = now;
        Some(entry.known.clone())
    }

    /// Remembers what a server supports; returns the slot when it is a modern one.
    pub(super) fn remember(&self, key: ServerKey, known: Known) -> Arc<ModernSlot> {
        let now = Instant::now();
        let mut servers = lock(&self.servers);
        if servers.len() >= self.capacity && !servers.contains_key(&key) {
            let oldest = servers
                .iter()
                .min_by_key(|(_, entry)| entry.used)
                .map(|(key, _)| key.clone());
            if let Some(oldest) = oldest {
                servers.remove(&oldest);
            }
        }
        let slot = match &known {
            Known::Modern(slot) => Arc::clone(slot),
            Known::Legacy => Arc::default(),
        };
        servers.insert(
            key,
            Entry {
                known,
                expires: now + self.ttl,
                used: now,
            },
        );
        slot
    }

    /// Forgets a modern server, if `slot` is still the one remembered.
    pub(super) fn forget(&self, key: &ServerKey, slot: &Arc<ModernSlot>) {
        let mut servers = lock(&self.servers);
        if let Some(Entry {
            known: Known::Modern(current),
            ..
        }) = servers.get(key)
            && Arc::ptr_eq(current, slot)
        {
            servers.remove(key);
        }
    }

    /// Forgets every server; returns the modern slots, to close.
    pub(super) fn clear(&self) -> Vec<Arc<ModernSlot>> {
        lock(&self.servers)
            .drain()
            .filter_map(|(_, entry)| match entry.known {
                Known::Modern(slot) => Some(slot),
                Known::Legacy => None,
            })
            .collect()
    }

    /// (servers remembered, live 2026-07-28 clients).
    pub(super) fn counts(&self) -> (usize, usize) {
        let servers = lock(&self.servers);
        let modern = servers
            .values()
            .filter(|entry| matches!(&entry.known, Known::Modern(slot) if slot.is_open()))
            .count();
        (servers.len(), modern)
    }

    /// The era a stdio command was last seen to speak.
    pub(super) fn stdio_era(&self, endpoint: &StdioEndpoint) -> Option<Era> {
        let mut eras = lock(&self.stdio_eras);
        match eras.get(endpoint) {
            Some((era, expires)) if *expires > Instant::now() => Some(*era),
            Some(_) => {
                eras.remove(endpoint);
                None
            }
            None => None,
        }
    }

    /// Remembers the era of a stdio command.
    pub(super) fn remember_stdio_era(&self, endpoint: &StdioEndpoint, era: Era) {
        let mut eras = lock(&self.stdio_eras);
        if eras.len() >= self.capacity && !eras.contains_key(endpoint) {
            eras.clear();
        }
        eras.insert(endpoint.clone(), (era, Instant::now() + self.ttl));
    }
}

/// Where the shared client of one server lives; created on first use, replaced when closed.
#[derive(Debug, Default)]
pub(super) struct ModernSlot {
    current: Mutex<Option<Arc<ModernClient>>>,
    opening: tokio::sync::Mutex<()>,
    /// The server turned out not to speak 2026-07-28: calls that waited for the open
    /// fall back at once, without probing again.
    legacy: std::sync::atomic::AtomicBool,
}

impl ModernSlot {
    fn current(&self) -> Option<Arc<ModernClient>> {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .filter(|client| !client.is_closed())
    }

    /// Whether the slot holds a client that died (so the server should be rediscovered).
    pub(super) fn is_closed(&self) -> bool {
        self.current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_some_and(|client| client.is_closed())
    }

    /// Whether the slot holds a live client.
    pub(super) fn is_open(&self) -> bool {
        self.current().is_some()
    }

    /// The slot's client, opening it (once, however many calls ask at the same time);
    /// `probe_until` as [`ModernClient::open`] takes it.
    pub(super) async fn get(
        slot: &Arc<Self>,
        shared: &Shared,
        endpoint: &HttpEndpoint,
        deadline: Instant,
        cancel: &CancellationToken,
        probe_until: Option<Instant>,
    ) -> Result<Arc<ModernClient>, OpenError> {
        if let Some(current) = slot.current() {
            return Ok(current);
        }
        let _opening = tokio::select! {
            guard = slot.opening.lock() => guard,
            () = tokio::time::sleep_until(deadline) => {
                return Err(OpenError::Failed(CallError::new(ErrorKind::Timeout, Delivery::NotSent, "timed out")));
            }
            () = cancel.cancelled() => {
                return Err(OpenError::Failed(CallError::new(ErrorKind::Cancelled, Delivery::NotSent, "was cancelled")));
            }
        };
        if let Some(current) = slot.current() {
            return Ok(current);
        }
        if slot.legacy.load(std::sync::atomic::Ordering::Acquire) {
            return Err(OpenError::Legacy);
        }
        let opened = ModernClient::open(
            shared,
            endpoint,
            deadline,
            cancel,
            DEFAULT_DISCOVERY_BYTES,
            probe_until,
        )
        .instrument(tracing::info_span!(
            "open",
            brain.context = "2026-07-28 client"
        ))
        .await
        .inspect_err(|error| {
            if matches!(error, OpenError::Legacy) {
                slot.legacy
                    .store(true, std::sync::atomic::Ordering::Release);
            }
        })?;
        *slot.current.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&opened));
        Ok(opened)
    }

    /// Closes the slot's client, waiting at most `grace`.
    pub(super) async fn close(&self, grace: Duration) {
        let current = self
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(client) = current {
            client.close(grace).await;
        }
    }
}
