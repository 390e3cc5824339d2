//! Grants in memory, for one process (and tests).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    time::Duration,
};

use tokio::time::Instant;

use super::{
    CredentialStore, Expected, GrantKey, GrantVersion, Lease, LeaseHolder, StoreError, StoredGrant,
    Swap, VersionedGrant, new_version,
};

/// Grants in memory, for the life of the process: the library's default store. Cheap to
/// clone; clones share the grants and the leases.
#[derive(Debug, Clone, Default)]
pub struct MemoryCredentialStore {
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    grants: HashMap<GrantKey, VersionedGrant>,
    /// Key -> (holder, until).
    leases: HashMap<GrantKey, (u64, Instant)>,
    holders: u64,
}

impl MemoryCredentialStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[derive(Debug)]
struct MemoryLease {
    state: Arc<Mutex<State>>,
    key: GrantKey,
    holder: u64,
}

#[async_trait::async_trait]
impl LeaseHolder for MemoryLease {
    async fn release(self: Box<Self>) -> Result<(), StoreError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state
            .leases
            .get(&self.key)
            .is_some_and(|(holder, _)| *holder == self.holder)
        {
            state.leases.remove(&self.key);
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl CredentialStore for MemoryCredentialStore {
    async fn load(&self, key: &GrantKey) -> Result<Option<VersionedGrant>, StoreError> {
        Ok(self.lock().grants.get(key).cloned())
    }

    async fn save(
        &self,
        key: &GrantKey,
        grant: &StoredGrant,
        expected: Expected,
    ) -> Result<Swap<GrantVersion>, StoreError> {
        let mut state = self.lock();
        let current = state.grants.get(key).map(|stored| stored.version);
        let matches = match expected {
            Expected::Absent => current.is_none(),
            Expected::Version(version) => current == Some(version),
            Expected::Any => true,
        };
        if !matches {
            return Ok(Swap::Conflict);
        }
        let version = new_version(current);
        state
            .grants
            .insert(key.clone(), VersionedGrant::new(grant.clone(), version));
        Ok(Swap::Done(version))
    }

    async fn remove(
        &self,
        key: &GrantKey,
        version: Option<GrantVersion>,
    ) -> Result<Swap<()>, StoreError> {
        let mut state = self.lock();
        let current = state.grants.get(key).map(|stored| stored.version);
        if version.is_some() && current.is_some() && current != version {
            return Ok(Swap::Conflict);
        }
        state.grants.remove(key);
        Ok(Swap::Done(()))
    }

    async fn keys(&self, tenant: &str, resource: &str) -> Result<Vec<GrantKey>, StoreError> {
        let mut keys: Vec<GrantKey> = self
            .lock()
            .grants
            .keys()
            .filter(|key| key.tenant == tenant && key.resource == resource)
            .cloned()
            .collect();
        keys.sort();
        Ok(keys)
    }

    async fn try_lease(&self, key: &GrantKey, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        let mut state = self.lock();
        let now = Instant::now();
        if state.leases.get(key).is_some_and(|(_, until)| *until > now) {
            return Ok(None);
        }
        state.holders += 1;
        let holder = state.holders;
        let until = now.checked_add(ttl).unwrap_or(now);
        state.leases.insert(key.clone(), (holder, until));
        Ok(Some(Lease::new(MemoryLease {
            state: Arc::clone(&self.state),
            key: key.clone(),
            holder,
        })))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn the_memory_store_keeps_the_contract() {
        super::super::contract::check(Arc::new(MemoryCredentialStore::new()), true).await;
    }
}
