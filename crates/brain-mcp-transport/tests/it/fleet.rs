//! A grant shared by many holders: clients that share a store (as separate processes or
//! host replicas would, each with its own tokens in memory) against an authorization
//! server that rotates refresh tokens and revokes a grant whose used refresh token comes
//! back. The file store and a real PostgreSQL; the processes themselves are in
//! `mcp-tools`' tests and the fleet test of `brain-conformance`.

use std::{
    sync::{Arc, atomic::Ordering},
    time::{Duration, SystemTime},
};

use brain_mcp_testkit::Postgres;
use brain_mcp_transport::{
    Authorization, CallRequest, ClientOptions, CredentialStore, Delivery, Endpoint, ErrorKind,
    Expected, FileCredentialStore, GrantKey, KeyRing, Lease, McpClient, PostgresCredentialStore,
    PostgresStoreOptions, Secret, StoreError, StoreErrorKind, StoredGrant, Swap, VersionedGrant,
};
use serde_json::json;

use crate::{
    oauth::call_as,
    oauth_servers::{RefreshAnswer, Servers, lock},
    support::client_with,
};

const KEYS: &str = "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

/// The servers, with refresh tokens that rotate and reuse that revokes.
async fn servers() -> Servers {
    let servers = Servers::start().await;
    servers.auth.state.rotation.store(true, Ordering::SeqCst);
    servers
}

/// Stores a tenant's grant (1-hour tokens) issued `age` ago, as a login would have, its
/// tokens known to the servers. Returns the grant's number at the authorization server.
async fn store_grant(
    servers: &Servers,
    store: &dyn CredentialStore,
    tenant: &str,
    age: Duration,
) -> usize {
    let scopes = vec!["files:read".to_owned()];
    let access = format!("at-{tenant}-stored-0123456789");
    let refresh = format!("rt-{tenant}-stored-0123456789");
    let mut grant = StoredGrant::new("pre-registered-client");
    grant.access_token = Some(Secret::new(access.clone()));
    grant.refresh_token = Some(Secret::new(refresh.clone()));
    grant.set_lifetime(SystemTime::now() - age, Some(Duration::from_secs(3600)));
    grant.scopes = scopes.clone();
    let key = GrantKey::new(tenant, servers.url(), servers.issuer());
    let _ = store.save(&key, &grant, Expected::Any).await.unwrap();
    servers.resource.state.accept(&access, scopes.clone());
    servers.auth.state.knows_refresh_token(&refresh, scopes)
}

/// A client of its own (its own tokens in memory, as a process has) on a shared store.
fn holder(store: Arc<dyn CredentialStore>) -> McpClient {
    client_with(
        ClientOptions::default()
            .warm_contexts(false)
            .credential_store(store),
    )
}

fn pinned(servers: &Servers) -> brain_mcp_transport::Grant {
    let mut grant = brain_mcp_transport::AuthorizationCodeGrant::new();
    grant.issuer = Some(servers.issuer());
    brain_mcp_transport::Grant::OAuth(grant)
}

async fn stored(servers: &Servers, store: &dyn CredentialStore, tenant: &str) -> VersionedGrant {
    let key = GrantKey::new(tenant, servers.url(), servers.issuer());
    store
        .load(&key)
        .await
        .unwrap()
        .expect("the grant is stored")
}

async fn postgres_store(server: &Postgres, lease_ttl: Duration) -> Arc<dyn CredentialStore> {
    let options = PostgresStoreOptions::new(server.url(), KeyRing::parse(KEYS).unwrap())
        .lease_ttl(lease_ttl)
        .timeout(Duration::from_secs(2));
    Arc::new(PostgresCredentialStore::connect(options).await.unwrap())
}

/// Five holders whose shared grant's access token has expired call at once: five
/// results, one refresh, no reuse, and the rotated grant stored.
async fn five_holders_refresh_once(store: Arc<dyn CredentialStore>) {
    let servers = servers().await;
    let grant = store_grant(&servers, store.as_ref(), "acme", Duration::from_secs(7200)).await;
    let holders: Vec<McpClient> = (0..5).map(|_| holder(Arc::clone(&store))).collect();
    let url = servers.url();
    let calls = holders
        .iter()
        .map(|client| call_as(client, &url, "acme", pinned(&servers), json!({})));
    for outcome in futures::future::join_all(calls).await {
        assert_eq!(outcome.unwrap().result["content"][0]["text"], "ok");
    }
    let state = &servers.auth.state;
    assert_eq!(state.refreshes_per_grant()[&grant].len(), 1, "one refresh");
    assert_eq!(state.reuses.load(Ordering::SeqCst), 0, "no reuse detected");
    let after = stored(&servers, store.as_ref(), "acme").await.grant;
    assert!(after.is_usable() && !after.is_revoked());
    assert_ne!(
        after.refresh_token.as_ref().map(Secret::expose),
        Some("rt-acme-stored-0123456789"),
        "the rotated refresh token is stored"
    );
    // Every call carried the one new token.
    let bearers: Vec<_> = servers
        .resource
        .state
        .calls_seen()
        .into_iter()
        .map(|(b, _)| b)
        .collect();
    assert_eq!(bearers.len(), 5);
    assert!(
        bearers
            .iter()
            .all(|b| b == &bearers[0] && b.as_deref() != Some("at-acme-stored-0123456789"))
    );
    for client in holders {
        client.shutdown(Duration::from_secs(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn holders_sharing_a_file_store_refresh_a_rotating_grant_once() {
    let dir = tempfile::tempdir().unwrap();
    five_holders_refresh_once(Arc::new(FileCredentialStore::new(dir.path()))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn holders_sharing_a_postgres_store_refresh_a_rotating_grant_once() {
    let server = Postgres::start_new().unwrap();
    five_holders_refresh_once(postgres_store(&server, Duration::from_secs(30)).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_whose_token_is_due_uses_the_one_another_holder_refreshed() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn CredentialStore> = Arc::new(FileCredentialStore::new(dir.path()));
    let servers = servers().await;
    // Due for renewal (10 s left), not expired.
    let grant = store_grant(&servers, store.as_ref(), "acme", Duration::from_secs(3590)).await;
    let (a, b) = (holder(Arc::clone(&store)), holder(Arc::clone(&store)));
    call_as(&a, &servers.url(), "acme", pinned(&servers), json!({}))
        .await
        .unwrap();
    call_as(&b, &servers.url(), "acme", pinned(&servers), json!({}))
        .await
        .unwrap();
    let state = &servers.auth.state;
    assert_eq!(
        state.refreshes_per_grant()[&grant].len(),
        1,
        "b read a's refresh"
    );
    let bearers: Vec<_> = servers
        .resource
        .state
        .calls_seen()
        .into_iter()
        .map(|(b, _)| b)
        .collect();
    assert_eq!(bearers[0], bearers[1], "b sent a's new token");
    assert_eq!(state.reuses.load(Ordering::SeqCst), 0);
}

/// A store whose leases exclude nobody (a host's store that cannot coordinate), one per
/// holder on one directory. Two holders then refresh the same grant, and one is refused.
/// [`Order`] holds the order in which that happens on a real fleet at its worst, so that
/// no timing decides it: both read the grant under their "lease" before either writes
/// (so both refresh it), and the refused one reads the store again after the other's
/// write.
#[derive(Debug)]
struct NoLeases {
    inner: FileCredentialStore,
    order: Arc<Order>,
    /// Set while this holder holds its lease; the reads made under it.
    leased: Arc<std::sync::Mutex<Option<usize>>>,
}

#[derive(Debug)]
struct Order {
    /// Holders that have read the grant under their lease.
    read: tokio::sync::watch::Sender<usize>,
    /// Grants written.
    written: tokio::sync::watch::Sender<usize>,
}

impl Order {
    async fn wait(counter: &tokio::sync::watch::Sender<usize>, at_least: usize, what: &str) {
        let mut seen = counter.subscribe();
        let waited =
            tokio::time::timeout(Duration::from_secs(30), seen.wait_for(|n| *n >= at_least));
        assert!(matches!(waited.await, Ok(Ok(_))), "never happened: {what}");
    }
}

#[derive(Debug)]
struct Released(Arc<std::sync::Mutex<Option<usize>>>);

#[async_trait::async_trait]
impl brain_mcp_transport::LeaseHolder for Released {
    async fn release(self: Box<Self>) -> Result<(), StoreError> {
        *lock(&self.0) = None;
        Ok(())
    }
}

#[async_trait::async_trait]
impl CredentialStore for NoLeases {
    async fn load(&self, key: &GrantKey) -> Result<Option<VersionedGrant>, StoreError> {
        let under_lease = lock(&self.leased).as_mut().map(|reads| {
            *reads += 1;
            *reads
        });
        match under_lease {
            Some(1) => {
                let loaded = self.inner.load(key).await;
                self.order.read.send_modify(|n| *n += 1);
                loaded
            }
            Some(_) => {
                Order::wait(&self.order.written, 1, "the other holder's write").await;
                self.inner.load(key).await
            }
            None => self.inner.load(key).await,
        }
    }
    async fn save(
        &self,
        key: &GrantKey,
        grant: &StoredGrant,
        expected: Expected,
    ) -> Result<Swap<brain_mcp_transport::GrantVersion>, StoreError> {
        Order::wait(&self.order.read, 2, "both holders read the grant").await;
        let saved = self.inner.save(key, grant, expected).await;
        self.order.written.send_modify(|n| *n += 1);
        saved
    }
    async fn remove(
        &self,
        key: &GrantKey,
        version: Option<brain_mcp_transport::GrantVersion>,
    ) -> Result<Swap<()>, StoreError> {
        self.inner.remove(key, version).await
    }
    async fn keys(&self, tenant: &str, resource: &str) -> Result<Vec<GrantKey>, StoreError> {
        self.inner.keys(tenant, resource).await
    }
    async fn try_lease(&self, _: &GrantKey, _: Duration) -> Result<Option<Lease>, StoreError> {
        *lock(&self.leased) = Some(0);
        Ok(Some(Lease::new(Released(Arc::clone(&self.leased)))))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_refresh_reads_the_store_again_and_never_deletes_the_winners_grant() {
    let dir = tempfile::tempdir().unwrap();
    let order = Arc::new(Order {
        read: tokio::sync::watch::Sender::new(0),
        written: tokio::sync::watch::Sender::new(0),
    });
    let no_leases = || -> Arc<dyn CredentialStore> {
        Arc::new(NoLeases {
            inner: FileCredentialStore::new(dir.path()),
            order: Arc::clone(&order),
            leased: Arc::default(),
        })
    };
    let store = FileCredentialStore::new(dir.path());
    let servers = servers().await;
    // A used refresh token is refused, the grant not revoked: the loser must find the
    // winner's grant, use it, and leave it stored.
    servers
        .auth
        .state
        .reuse_detection
        .store(false, Ordering::SeqCst);
    store_grant(&servers, &store, "acme", Duration::from_secs(7200)).await;
    let (a, b) = (holder(no_leases()), holder(no_leases()));
    let url = servers.url();
    let (first, second) = tokio::join!(
        call_as(&a, &url, "acme", pinned(&servers), json!({})),
        call_as(&b, &url, "acme", pinned(&servers), json!({})),
    );
    assert_eq!(first.unwrap().result["content"][0]["text"], "ok");
    assert_eq!(second.unwrap().result["content"][0]["text"], "ok");
    let refreshes = servers.auth.state.token_requests("refresh_token");
    assert_eq!(
        refreshes.len(),
        2,
        "both refreshed: the store could not say otherwise"
    );
    let after = stored(&servers, &store, "acme").await.grant;
    assert!(after.is_usable(), "the winner's grant is kept: {after:?}");
}

#[tokio::test]
async fn a_refresh_answer_without_a_refresh_token_keeps_the_old_one() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn CredentialStore> = Arc::new(FileCredentialStore::new(dir.path()));
    let servers = Servers::start().await;
    servers
        .auth
        .state
        .new_refresh_tokens
        .store(false, Ordering::SeqCst);
    store_grant(&servers, store.as_ref(), "acme", Duration::from_secs(7200)).await;
    let client = holder(Arc::clone(&store));
    call_as(&client, &servers.url(), "acme", pinned(&servers), json!({}))
        .await
        .unwrap();
    let after = stored(&servers, store.as_ref(), "acme").await.grant;
    assert_eq!(
        after.refresh_token.as_ref().map(Secret::expose),
        Some("rt-acme-stored-0123456789")
    );
    assert_ne!(
        after.access_token.as_ref().map(Secret::expose),
        Some("at-acme-stored-0123456789"),
        "the new access token is stored"
    );
}

#[tokio::test]
async fn a_passing_failure_while_renewing_sends_the_stored_token_that_still_works() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn CredentialStore> = Arc::new(FileCredentialStore::new(dir.path()));
    let servers = Servers::start().await;
    *lock(&servers.auth.state.refresh_answer) = RefreshAnswer::Fail;
    // Due for renewal, 10 s left: loaded from the store by a fresh process.
    store_grant(&servers, store.as_ref(), "acme", Duration::from_secs(3590)).await;
    let client = holder(Arc::clone(&store));
    let outcome = call_as(&client, &servers.url(), "acme", pinned(&servers), json!({})).await;
    assert_eq!(outcome.unwrap().result["content"][0]["text"], "ok");
    assert_eq!(servers.auth.state.token_requests("refresh_token").len(), 1);
    let seen = servers.resource.state.calls_seen();
    assert_eq!(seen[0].0.as_deref(), Some("at-acme-stored-0123456789"));
    // The grant is kept as it was.
    let after = stored(&servers, store.as_ref(), "acme").await.grant;
    assert_eq!(
        after.refresh_token.as_ref().map(Secret::expose),
        Some("rt-acme-stored-0123456789")
    );
}

#[tokio::test]
async fn a_lifetime_of_u64_max_seconds_is_bounded_and_used_again_from_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn CredentialStore> = Arc::new(FileCredentialStore::new(dir.path()));
    let servers = Servers::start().await;
    *lock(&servers.auth.state.expires_in) = u64::MAX;
    store_grant(&servers, store.as_ref(), "acme", Duration::from_secs(7200)).await;
    let client = holder(Arc::clone(&store));
    call_as(&client, &servers.url(), "acme", pinned(&servers), json!({}))
        .await
        .unwrap();
    let after = stored(&servers, store.as_ref(), "acme").await.grant;
    let bound = brain_mcp_transport::MAX_TOKEN_LIFETIME;
    assert!(
        after.expires_at.unwrap() <= SystemTime::now() + bound,
        "{after:?}"
    );
    // A new process reads it and calls: no clock overflows.
    let again = holder(Arc::clone(&store));
    call_as(&again, &servers.url(), "acme", pinned(&servers), json!({}))
        .await
        .unwrap();
    // Client credentials too.
    let grant =
        brain_mcp_transport::Grant::ClientCredentials(crate::oauth::client_credentials(None));
    call_as(&again, &servers.url(), "acme", grant, json!({}))
        .await
        .unwrap();
    // And a stored record whose times are past anything a clock holds.
    let files = FileCredentialStore::new(dir.path());
    let key = GrantKey::new("umbrella", servers.url(), servers.issuer());
    let _ = files.save(&key, &after, Expected::Any).await.unwrap();
    let file = files.file(&key);
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    record["obtained_at_ms"] = json!(u64::MAX);
    record["expires_at_ms"] = json!(u64::MAX);
    std::fs::write(&file, record.to_string()).unwrap();
    call_as(
        &holder(Arc::clone(&store)),
        &servers.url(),
        "umbrella",
        pinned(&servers),
        json!({}),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_stops_waiting_does_not_lose_the_refresh_token_it_rotated() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn CredentialStore> = Arc::new(FileCredentialStore::new(dir.path()));
    let servers = servers().await;
    let grant = store_grant(&servers, store.as_ref(), "acme", Duration::from_secs(7200)).await;
    *lock(&servers.auth.state.token_delay) = Duration::from_secs(3);
    let client = holder(Arc::clone(&store));
    let cancel = tokio_util::sync::CancellationToken::new();
    let request = CallRequest::new(
        Endpoint::http(servers.url(), None),
        "echo",
        "call-1",
        Duration::from_secs(30),
    )
    .authorization(Authorization::new("acme", pinned(&servers)))
    .cancel(cancel.clone());
    // The call stops waiting once its refresh reached the authorization server, whose
    // answer is still on its way: mid-refresh, whatever the machine's speed.
    let mut token_requests = servers.auth.state.token_requests_seen.subscribe();
    let stop_mid_refresh = async {
        let reached = tokio::time::timeout(
            Duration::from_secs(30),
            token_requests.wait_for(|seen| *seen >= 1),
        )
        .await;
        assert!(
            matches!(reached, Ok(Ok(_))),
            "the call's refresh never reached the authorization server"
        );
        cancel.cancel();
    };
    let (outcome, ()) = tokio::join!(client.call(request), stop_mid_refresh);
    let error = outcome.unwrap_err();
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::Cancelled, Delivery::NotSent)
    );
    // The refresh runs on after the call, and shutdown waits for it to end, however
    // short its grace: the rotated grant is stored.
    let in_flight = client.refreshes_in_flight();
    assert_eq!(
        in_flight,
        [GrantKey::new("acme", servers.url(), servers.issuer())]
    );
    let report = client.shutdown(Duration::ZERO).await;
    assert!(report.unsaved_grants.is_empty(), "{report:?}");
    assert!(client.refreshes_in_flight().is_empty());
    *lock(&servers.auth.state.token_delay) = Duration::ZERO;
    let after = stored(&servers, store.as_ref(), "acme").await.grant;
    assert_ne!(
        after.refresh_token.as_ref().map(Secret::expose),
        Some("rt-acme-stored-0123456789")
    );
    // Another process uses it: no second refresh, no reuse.
    call_as(
        &holder(Arc::clone(&store)),
        &servers.url(),
        "acme",
        pinned(&servers),
        json!({}),
    )
    .await
    .unwrap();
    assert_eq!(servers.auth.state.refreshes_per_grant()[&grant].len(), 1);
    assert_eq!(servers.auth.state.reuses.load(Ordering::SeqCst), 0);
}

/// A store whose writes fail (a database gone for good), with a short lease.
#[derive(Debug)]
struct Unwritable(Arc<dyn CredentialStore>);

#[async_trait::async_trait]
impl CredentialStore for Unwritable {
    async fn load(&self, key: &GrantKey) -> Result<Option<VersionedGrant>, StoreError> {
        self.0.load(key).await
    }

    async fn save(
        &self,
        _: &GrantKey,
        _: &StoredGrant,
        _: Expected,
    ) -> Result<Swap<brain_mcp_transport::GrantVersion>, StoreError> {
        Err(StoreError::new(
            StoreErrorKind::Unavailable,
            "the credential database is unavailable (write)",
        ))
    }

    async fn remove(
        &self,
        key: &GrantKey,
        version: Option<brain_mcp_transport::GrantVersion>,
    ) -> Result<Swap<()>, StoreError> {
        self.0.remove(key, version).await
    }

    async fn keys(&self, tenant: &str, resource: &str) -> Result<Vec<GrantKey>, StoreError> {
        self.0.keys(tenant, resource).await
    }

    async fn try_lease(&self, key: &GrantKey, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        self.0.try_lease(key, ttl).await
    }

    fn lease_ttl(&self) -> Duration {
        Duration::from_secs(2)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refreshed_grant_that_cannot_be_stored_is_named_by_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let file: Arc<dyn CredentialStore> = Arc::new(FileCredentialStore::new(dir.path()));
    let servers = servers().await;
    store_grant(&servers, file.as_ref(), "acme", Duration::from_secs(7200)).await;
    let client = holder(Arc::new(Unwritable(Arc::clone(&file))));
    // The call itself works: the new token is kept in memory.
    call_as(&client, &servers.url(), "acme", pinned(&servers), json!({}))
        .await
        .unwrap();
    let report = client.shutdown(Duration::ZERO).await;
    assert_eq!(
        report.unsaved_grants,
        [GrantKey::new("acme", servers.url(), servers.issuer())]
    );
    // Said once.
    assert!(
        client
            .shutdown(Duration::ZERO)
            .await
            .unsaved_grants
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_left_by_a_dead_holder_passes_on_when_it_expires() {
    let server = Postgres::start_new().unwrap();
    let store = postgres_store(&server, Duration::from_secs(2)).await;
    let servers = servers().await;
    let grant = store_grant(&servers, store.as_ref(), "acme", Duration::from_secs(7200)).await;
    // A holder that took the lease and died: it never releases it.
    let key = GrantKey::new("acme", servers.url(), servers.issuer());
    // Timed from before the lease is taken: the lease then ends at least its 2 s later,
    // however long taking it took.
    let started = std::time::Instant::now();
    let dead = store
        .try_lease(&key, store.lease_ttl())
        .await
        .unwrap()
        .unwrap();
    std::mem::forget(dead);
    call_as(
        &holder(Arc::clone(&store)),
        &servers.url(),
        "acme",
        pinned(&servers),
        json!({}),
    )
    .await
    .unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "the call waited for the lease to expire"
    );
    assert_eq!(servers.auth.state.refreshes_per_grant()[&grant].len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_outage_keeps_cached_tokens_working_and_loses_no_grant() {
    let server = Postgres::start_new().unwrap();
    let store = postgres_store(&server, Duration::from_secs(30)).await;
    let servers = servers().await;
    store_grant(&servers, store.as_ref(), "acme", Duration::ZERO).await;
    store_grant(
        &servers,
        store.as_ref(),
        "umbrella",
        Duration::from_secs(7200),
    )
    .await;
    let client = holder(Arc::clone(&store));
    // acme's token is now in memory.
    call_as(&client, &servers.url(), "acme", pinned(&servers), json!({}))
        .await
        .unwrap();
    server.stop().unwrap();
    call_as(&client, &servers.url(), "acme", pinned(&servers), json!({}))
        .await
        .expect("a cached token needs no store");
    let error = call_as(
        &client,
        &servers.url(),
        "umbrella",
        pinned(&servers),
        json!({}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::CredentialStore, Delivery::NotSent),
        "{error}"
    );
    assert!(error.detail().contains("unavailable"), "{error}");
    assert_eq!(servers.auth.state.token_requests("refresh_token").len(), 0);
    server.start().unwrap();
    call_as(
        &client,
        &servers.url(),
        "umbrella",
        pinned(&servers),
        json!({}),
    )
    .await
    .unwrap();
    for tenant in ["acme", "umbrella"] {
        assert!(
            stored(&servers, store.as_ref(), tenant)
                .await
                .grant
                .is_usable()
        );
    }
}
