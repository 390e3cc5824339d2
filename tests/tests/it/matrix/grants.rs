//! The matrix's rows for a grant shared with other holders (processes or hosts): a
//! tenant's delegated grant in a credential store that another holder writes too, against
//! an authorization server that rotates refresh tokens and revokes a grant whose used
//! refresh token comes back (RFC 9700 section 4.14.2). The other holder is played here,
//! through the store itself, at the moment a real one would act; `fleet.rs` runs real host
//! processes (a fleet on PostgreSQL for a minute, a lease holder killed mid-refresh).

use std::{
    sync::{Arc, Mutex, atomic::Ordering},
    time::{Duration, SystemTime},
};

use brain_mcp_testkit::{Postgres, oauth::Servers};
use brain_tools::{
    CredentialStore, Expected, FileCredentialStore, GrantKey, KeyRing, Lease,
    PostgresCredentialStore, PostgresStoreOptions, Secret, StoreError, StoredGrant, Swap,
    VersionedGrant, async_trait,
};
use serde_json::{Value, json};

/// How every token these rows put in a store ends, so that the secrets check can look
/// for them.
pub(super) const TOKEN_TAIL: &str = "-0123456789";

/// What the other holder does, one case per row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Case {
    /// Nothing: this call's refresh rotates the refresh token, and the store keeps the new
    /// pair.
    Rotates,
    /// It holds the grant's lease (it is refreshing) when this call needs a new token,
    /// then saves a fresh pair and lets go: this call uses that pair and refreshes nothing.
    LeaseHeld,
    /// The authorization server refuses this call's refresh token (`invalid_grant`),
    /// because the other holder rotated it and saved the new pair meanwhile: this call
    /// reads the store again and uses the new pair; nothing is marked dead or deleted.
    RefusedButReplaced,
    /// The refresh token is refused and nobody replaced it: the grant is dead, marked so
    /// (kept for `mcp-tools login` to replace), and the call says authorization is needed.
    RefusedForGood,
    /// The store (PostgreSQL) is down when the expired token needs renewing.
    StoreDown,
    /// The stored grant's file holds bytes that are not a grant.
    CorruptFile,
    /// The store (a database that accepts connections and never answers) hangs when the
    /// expired token needs renewing: the call ends at its own deadline (2 s), saying so.
    StoreHangs,
    /// The grant's row in PostgreSQL has its `scopes` column altered by hand (to `text`).
    RowAltered,
    /// The call's deadline (1 s) passes while its refresh is at the authorization server,
    /// which rotates the refresh token at once and answers 2 s later: the refresh runs on,
    /// and the client's shutdown waits for the rotated pair to be stored.
    RefreshOutlivesTheCall,
}

impl Case {
    pub(super) const ALL: [Case; 9] = [
        Case::Rotates,
        Case::LeaseHeld,
        Case::RefusedButReplaced,
        Case::RefusedForGood,
        Case::StoreDown,
        Case::CorruptFile,
        Case::StoreHangs,
        Case::RowAltered,
        Case::RefreshOutlivesTheCall,
    ];

    /// The binding of a row: the case's resource server, with a delegated grant.
    pub(super) fn binding(self, servers: &Servers) -> Value {
        let timeout = match self {
            Case::StoreHangs => 2,
            Case::RefreshOutlivesTheCall => 1,
            _ => 10,
        };
        json!({
            "url": servers.url(), "mcp_tool": "echo", "timeout_seconds": timeout,
            "auth": {"type": "oauth", "issuer": servers.issuer()}
        })
    }

    /// The grant in the store before the call (its access token expired), the other
    /// holder set up, and the client's store.
    pub(super) async fn prepare(self, servers: &Servers) -> Prepared {
        let auth = &servers.auth.state;
        auth.rotation.store(true, Ordering::SeqCst);
        auth.reuse_detection.store(true, Ordering::SeqCst);
        let key = GrantKey::new("local", servers.url(), servers.issuer());
        let scopes = vec!["files:read".to_owned()];
        let refresh = format!("rt-{self:?}-first-0123456789");
        let mut grant = StoredGrant::new("pre-registered-client");
        grant.access_token = Some(Secret::new(format!("at-{self:?}-expired-0123456789")));
        grant.refresh_token = Some(Secret::new(refresh.clone()));
        let now = SystemTime::now();
        grant.set_lifetime(
            now - Duration::from_secs(120),
            Some(Duration::from_secs(60)),
        );
        grant.scopes = scopes.clone();
        if self != Case::RefusedButReplaced && self != Case::RefusedForGood {
            auth.knows_refresh_token(&refresh, scopes.clone());
        }
        let dir = tempfile::tempdir().unwrap();
        let mut database = None;
        let mut hung = None;
        let keys = || KeyRing::parse("k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=").unwrap();
        let inner: Arc<dyn CredentialStore> = match self {
            Case::StoreDown | Case::RowAltered => {
                let db = Postgres::start_new().unwrap();
                let options = PostgresStoreOptions::new(db.url(), keys());
                let store = PostgresCredentialStore::connect(options).await.unwrap();
                database = Some(db);
                Arc::new(store)
            }
            Case::StoreHangs => {
                // Its own bound (30 s) is longer than the call's: the call's holds.
                let (port, listener) = hung_database().await;
                hung = Some(listener);
                let url = format!("postgres://brain@127.0.0.1:{port}/brain");
                let options =
                    PostgresStoreOptions::new(url, keys()).timeout(Duration::from_secs(30));
                Arc::new(PostgresCredentialStore::lazy(options).unwrap())
            }
            _ => Arc::new(FileCredentialStore::new(dir.path())),
        };
        if self != Case::StoreHangs {
            let saved = inner.save(&key, &grant, Expected::Absent).await.unwrap();
            assert!(matches!(saved, Swap::Done(_)));
        }
        // What the other holder saves: a fresh pair the servers know.
        let access = format!("at-{self:?}-other-holder-0123456789");
        let mut fresh = grant.clone();
        fresh.access_token = Some(Secret::new(access.clone()));
        fresh.refresh_token = Some(Secret::new(format!("rt-{self:?}-other-holder-0123456789")));
        fresh.set_lifetime(now, Some(Duration::from_secs(3600)));
        servers.resource.state.accept(&access, scopes);
        let store = Arc::new(Interposed {
            inner: inner.clone(),
            lease_attempts: tokio::sync::watch::Sender::new(0),
            replacement: Mutex::new((self == Case::RefusedButReplaced).then(|| fresh.clone())),
            token_requests: auth.token_requests_seen.subscribe(),
        });
        let mut holder = None;
        match self {
            Case::LeaseHeld => {
                let lease = inner
                    .try_lease(&key, Duration::from_secs(60))
                    .await
                    .unwrap()
                    .expect("nobody holds the lease yet");
                let (inner, key, mut attempts) =
                    (inner.clone(), key.clone(), store.lease_attempts.subscribe());
                holder = Some(tokio::spawn(async move {
                    // Once the call has asked for the lease (and been told to wait), the
                    // other holder's refresh ends: it saves its pair and lets go.
                    let _ = attempts.wait_for(|n| *n >= 1).await;
                    let stored = inner.load(&key).await.unwrap().unwrap();
                    let saved = inner
                        .save(&key, &fresh, Expected::Version(stored.version))
                        .await
                        .unwrap();
                    assert!(matches!(saved, Swap::Done(_)));
                    lease.release().await.unwrap();
                }));
            }
            Case::CorruptFile => {
                std::fs::write(
                    FileCredentialStore::new(dir.path()).file(&key),
                    b"{\"version\": 3, \"grant\": trunc",
                )
                .unwrap();
            }
            Case::StoreDown => {
                database.as_ref().unwrap().stop().unwrap();
            }
            Case::RowAltered => {
                database
                    .as_ref()
                    .unwrap()
                    .sql("ALTER TABLE brain_mcp_grants ALTER COLUMN scopes TYPE text")
                    .unwrap();
            }
            Case::RefreshOutlivesTheCall => {
                *brain_mcp_testkit::oauth::lock(&auth.token_delay) = Duration::from_secs(2);
            }
            _ => {}
        }
        Prepared {
            store,
            inner,
            key,
            refresh,
            dir,
            database,
            holder,
            _hung: hung,
        }
    }

    /// After the call: what the authorization server saw, and what the store holds.
    pub(super) async fn check(self, prepared: Prepared, servers: &Servers) {
        let auth = &servers.auth.state;
        let refreshes = auth.token_requests("refresh_token").len();
        assert_eq!(
            auth.reuses.load(Ordering::SeqCst),
            0,
            "{self:?}: no reuse detected"
        );
        if let Some(holder) = prepared.holder {
            holder.await.unwrap();
        }
        if let (Some(database), Case::StoreDown) = (&prepared.database, self) {
            database.start().unwrap();
        }
        if self == Case::StoreHangs {
            // Never read: nothing was asked of the authorization server.
            assert_eq!(refreshes, 0);
            return;
        }
        let stored = match prepared.inner.load(&prepared.key).await {
            Ok(stored) => stored,
            Err(error) => {
                match self {
                    // Still there to be repaired, not deleted behind the tenant's back.
                    Case::CorruptFile => assert!(
                        FileCredentialStore::new(prepared.dir.path())
                            .file(&prepared.key)
                            .exists()
                    ),
                    Case::RowAltered => assert!(
                        error.to_string().contains("column scopes"),
                        "the row is named with its column: {error}"
                    ),
                    _ => panic!("{self:?}: {error}"),
                }
                assert_eq!(refreshes, 0);
                return;
            }
        };
        let stored = stored.expect("the grant is still in the store");
        let refresh = |grant: &VersionedGrant| {
            grant
                .grant
                .refresh_token
                .as_ref()
                .map(|token| token.expose().to_owned())
        };
        // The refreshes the authorization server saw, and the refresh token left: a new
        // one, the one stored before, or none (the grant marked dead: its tokens dropped,
        // its client registration kept for the next login).
        let before = Some(prepared.refresh.clone());
        let (expected_refreshes, left) = match self {
            Case::Rotates | Case::RefusedButReplaced | Case::RefreshOutlivesTheCall => {
                (1, refresh(&stored).filter(|t| Some(t) != before.as_ref()))
            }
            Case::LeaseHeld => (0, refresh(&stored).filter(|t| Some(t) != before.as_ref())),
            Case::RefusedForGood => (1, None),
            Case::StoreDown => (0, before.clone()),
            Case::CorruptFile | Case::RowAltered | Case::StoreHangs => {
                unreachable!("{self:?} cannot load")
            }
        };
        assert_eq!(refreshes, expected_refreshes, "{self:?}: refreshes");
        assert!(
            refresh(&stored) == left && (left.is_some() || self == Case::RefusedForGood),
            "{self:?}: the stored refresh token"
        );
        assert_eq!(
            stored.grant.is_revoked(),
            self == Case::RefusedForGood,
            "{self:?}"
        );
        assert_eq!(stored.grant.client_id, "pre-registered-client");
        if matches!(
            self,
            Case::Rotates
                | Case::LeaseHeld
                | Case::RefusedButReplaced
                | Case::RefreshOutlivesTheCall
        ) {
            assert!(stored.grant.is_usable(), "{self:?}: a usable grant is left");
        }
        drop(prepared.store);
    }
}

/// What a row keeps until its checks.
pub(super) struct Prepared {
    /// The store the client uses.
    pub(super) store: Arc<Interposed>,
    inner: Arc<dyn CredentialStore>,
    key: GrantKey,
    /// The refresh token stored before the call.
    refresh: String,
    dir: tempfile::TempDir,
    database: Option<Postgres>,
    holder: Option<tokio::task::JoinHandle<()>>,
    /// The listener of a database that never answers.
    _hung: Option<Hung>,
}

/// A database that never answers, stopped when dropped.
pub(super) struct Hung(tokio::task::JoinHandle<()>);

impl Drop for Hung {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A loopback port that accepts connections and never answers (a database that hangs),
/// for as long as the returned task runs.
async fn hung_database() -> (u16, Hung) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (port, Hung(task))
}

/// The client's store: the real one, with the other holder's moves at the moments they
/// matter (counting lease attempts; saving a new pair right after the authorization
/// server has seen this call's refresh).
#[derive(Debug)]
pub(super) struct Interposed {
    inner: Arc<dyn CredentialStore>,
    lease_attempts: tokio::sync::watch::Sender<usize>,
    replacement: Mutex<Option<StoredGrant>>,
    token_requests: tokio::sync::watch::Receiver<usize>,
}

#[async_trait]
impl CredentialStore for Interposed {
    async fn load(&self, key: &GrantKey) -> Result<Option<VersionedGrant>, StoreError> {
        let replacement = if *self.token_requests.borrow() > 0 {
            self.replacement.lock().unwrap().take()
        } else {
            None
        };
        if let Some(grant) = replacement
            && let Some(stored) = self.inner.load(key).await?
        {
            let saved = self
                .inner
                .save(key, &grant, Expected::Version(stored.version))
                .await?;
            assert!(matches!(saved, Swap::Done(_)));
        }
        self.inner.load(key).await
    }

    async fn save(
        &self,
        key: &GrantKey,
        grant: &StoredGrant,
        expected: Expected,
    ) -> Result<Swap<brain_tools::GrantVersion>, StoreError> {
        self.inner.save(key, grant, expected).await
    }

    async fn remove(
        &self,
        key: &GrantKey,
        version: Option<brain_tools::GrantVersion>,
    ) -> Result<Swap<()>, StoreError> {
        self.inner.remove(key, version).await
    }

    async fn keys(&self, tenant: &str, resource: &str) -> Result<Vec<GrantKey>, StoreError> {
        self.inner.keys(tenant, resource).await
    }

    async fn try_lease(&self, key: &GrantKey, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        let lease = self.inner.try_lease(key, ttl).await;
        self.lease_attempts.send_modify(|n| *n += 1);
        lease
    }

    fn lease_ttl(&self) -> Duration {
        self.inner.lease_ttl()
    }
}
