//! Where delegated grants are kept: the [`CredentialStore`] contract, keyed by tenant,
//! server resource and issuer, with versions (compare-and-swap writes) and leases (one
//! refresher at a time across every process that shares the store); a store in memory,
//! one in files (one machine, OS file locks) and, with the `postgres` feature, one in
//! PostgreSQL (a fleet of hosts).
//!
//! Only delegated grants (authorization code) are stored: client credentials, enterprise
//! and workload identity tokens can be obtained again at any time, so they live in
//! memory only.

mod file;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod seal;

use std::{
    error::Error as StdError,
    fmt,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

#[cfg(feature = "postgres")]
pub use self::postgres::{PostgresCredentialStore, PostgresStoreOptions};
pub use self::{
    file::FileCredentialStore,
    memory::MemoryCredentialStore,
    seal::{KeyRing, KeyRingError},
};
use crate::{endpoint::redacted_url, secret::Secret};

/// Which grant: the tenant it was made for, the server (resource) it is for, and the
/// authorization server (issuer) that issued it. A grant from another issuer is another
/// grant: when a server moves to a new authorization server, the tenant authorizes again.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub struct GrantKey {
    /// The tenant.
    pub tenant: String,
    /// The MCP server's URL, as configured.
    pub resource: String,
    /// The issuer of the authorization server.
    pub issuer: String,
}

/// Without the resource URL's user info, query and fragment (they may hold secrets).
impl fmt::Debug for GrantKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrantKey")
            .field("tenant", &self.tenant)
            .field("resource", &redacted_url(&self.resource))
            .field("issuer", &self.issuer)
            .finish()
    }
}

/// `tenant T, server URL, issuer I`, for messages (the URL without its secrets).
impl fmt::Display for GrantKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tenant {}, server {}, issuer {}",
            crate::secret::one_line(&self.tenant, 80),
            redacted_url(&self.resource),
            crate::secret::one_line(&self.issuer, 120)
        )
    }
}

impl GrantKey {
    /// A key.
    pub fn new(
        tenant: impl Into<String>,
        resource: impl Into<String>,
        issuer: impl Into<String>,
    ) -> Self {
        Self {
            tenant: tenant.into(),
            resource: resource.into(),
            issuer: issuer.into(),
        }
    }
}

/// The longest an access token is taken to live: a lifetime a server states beyond it
/// (up to `u64::MAX` seconds) is cut to it, so that no server number meets a clock
/// unbounded.
pub const MAX_TOKEN_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);

/// A time as milliseconds since the Unix epoch (how the stores keep times): before the
/// epoch is zero, beyond `u64` milliseconds is the largest.
pub(crate) fn to_millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |elapsed| {
        u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
    })
}

/// The time of milliseconds since the Unix epoch, bounded to what the clock can hold.
pub(crate) fn from_millis(millis: u64) -> SystemTime {
    UNIX_EPOCH
        .checked_add(Duration::from_millis(millis))
        .unwrap_or(UNIX_EPOCH + Duration::from_secs(i32::MAX as u64))
}

/// A delegated grant as stored: the client it was made for, its tokens, when the access
/// token was issued and when it expires (absolute times, so that every process reading
/// the grant agrees), and the scopes granted. `Debug` shows no token or secret.
///
/// A grant whose refresh token the authorization server refused is kept *revoked*
/// ([`StoredGrant::revoke`]): no tokens, but the client it was made for, so that the next
/// login does not register a new client.
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredGrant {
    /// The client the grant was made for (pre-registered, a metadata document URL, or
    /// dynamically registered).
    pub client_id: String,
    /// The secret of a dynamically registered client, if the authorization server gave
    /// one (a pre-registered client's secret comes from the config, never from here).
    pub client_secret: Option<Secret>,
    /// The access token.
    pub access_token: Option<Secret>,
    /// The refresh token.
    pub refresh_token: Option<Secret>,
    /// When the access token was issued.
    pub obtained_at: Option<SystemTime>,
    /// When the access token expires; `None`: not stated.
    pub expires_at: Option<SystemTime>,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// The DPoP key (RFC 9449) the grant's tokens are bound to, as its PKCS#8 document in
    /// base64url: created with the grant, and proven on every refresh, so a refresh from
    /// any process presents the same key. `None`: Bearer tokens.
    pub dpop_key: Option<Secret>,
    /// The thumbprint (RFC 7638) of that key, which its tokens name (`cnf.jkt`). A grant
    /// that names one but holds no key, or another key, lost its key: its tokens cannot
    /// be used, and the tenant must log in again. A store keeps both fields.
    pub dpop_thumbprint: Option<String>,
}

impl StoredGrant {
    /// A grant for a client, with no tokens yet.
    pub fn new(client_id: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret: None,
            access_token: None,
            refresh_token: None,
            obtained_at: None,
            expires_at: None,
            scopes: Vec::new(),
            dpop_key: None,
            dpop_thumbprint: None,
        }
    }

    /// Sets when the access token was issued and how long it lives (cut to
    /// [`MAX_TOKEN_LIFETIME`]), as absolute times.
    pub fn set_lifetime(&mut self, obtained_at: SystemTime, lifetime: Option<Duration>) {
        self.obtained_at = Some(obtained_at);
        self.expires_at = lifetime.map(|lifetime| {
            let lifetime = lifetime.min(MAX_TOKEN_LIFETIME);
            obtained_at.checked_add(lifetime).unwrap_or(obtained_at)
        });
    }

    /// How long the access token has left at `now`: `None` when no expiry is known, zero
    /// once expired. Never more than [`MAX_TOKEN_LIFETIME`].
    pub fn lifetime_left(&self, now: SystemTime) -> Option<Duration> {
        let left = self
            .expires_at?
            .duration_since(now)
            .unwrap_or(Duration::ZERO);
        Some(left.min(MAX_TOKEN_LIFETIME))
    }

    /// How long the access token was issued for, if known (never more than
    /// [`MAX_TOKEN_LIFETIME`]).
    pub fn lifetime(&self) -> Option<Duration> {
        let (at, obtained) = (self.expires_at?, self.obtained_at?);
        Some(
            at.duration_since(obtained)
                .unwrap_or(Duration::ZERO)
                .min(MAX_TOKEN_LIFETIME),
        )
    }

    /// Whether the access token can still be used now (not expired), or the grant can be
    /// refreshed.
    pub fn is_usable(&self) -> bool {
        let unexpired = self.access_token.is_some()
            && self
                .lifetime_left(SystemTime::now())
                .is_none_or(|left| !left.is_zero());
        unexpired || self.refresh_token.is_some()
    }

    /// Whether the grant was revoked: it holds no token any more.
    pub fn is_revoked(&self) -> bool {
        self.access_token.is_none() && self.refresh_token.is_none()
    }

    /// Drops the tokens (the authorization server refused the refresh token) and the DPoP
    /// key they were bound to: the client registration is kept for the next login.
    pub fn revoke(&mut self) {
        self.access_token = None;
        self.refresh_token = None;
        self.expires_at = None;
        self.dpop_key = None;
        self.dpop_thumbprint = None;
    }
}

impl fmt::Debug for StoredGrant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = |present: bool| if present { "<redacted>" } else { "none" };
        f.debug_struct("StoredGrant")
            .field("client_id", &self.client_id)
            .field("client_secret", &shown(self.client_secret.is_some()))
            .field("access_token", &shown(self.access_token.is_some()))
            .field("refresh_token", &shown(self.refresh_token.is_some()))
            .field("obtained_at", &self.obtained_at)
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .field("dpop_key", &shown(self.dpop_key.is_some()))
            .field("dpop_thumbprint", &self.dpop_thumbprint)
            .finish()
    }
}

/// The version of a stored grant: a new one with every write, never reused for another
/// grant under the same key (so a writer that read an old grant cannot overwrite a newer
/// one that happens to carry the same number). Opaque: only compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GrantVersion(u64);

impl GrantVersion {
    /// A version from a store's own number.
    pub fn new(value: u64) -> Self {
        Self(value)
    }

    /// The store's number.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// A stored grant and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VersionedGrant {
    /// The grant.
    pub grant: StoredGrant,
    /// Its version: what a compare-and-swap write names.
    pub version: GrantVersion,
}

impl VersionedGrant {
    /// A grant at a version.
    pub fn new(grant: StoredGrant, version: GrantVersion) -> Self {
        Self { grant, version }
    }
}

/// What a write expects to find under its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Expected {
    /// No grant: the write creates one.
    Absent,
    /// This version: nobody wrote since it was read.
    Version(GrantVersion),
    /// Anything: the write replaces whatever is there (a person's login).
    Any,
}

/// How a compare-and-swap write went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
#[non_exhaustive]
pub enum Swap<T> {
    /// Written; for a save, the new version.
    Done(T),
    /// Not written: the stored grant is not what the write expected (another writer got
    /// there first). Read it again.
    Conflict,
}

/// A lease on one grant: while it is held, no other holder (in this process or any other
/// sharing the store) gets one. It ends when released, when its holder dies, or when its
/// time-to-live passes, whichever comes first.
#[must_use = "a lease is held until it is released"]
pub struct Lease(Box<dyn LeaseHolder>);

impl fmt::Debug for Lease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Lease").field(&self.0).finish()
    }
}

impl Lease {
    /// A lease from a store's own holder.
    pub fn new(holder: impl LeaseHolder + 'static) -> Self {
        Self(Box::new(holder))
    }

    /// Ends the lease now (a lease dropped unreleased ends when it expires).
    ///
    /// # Errors
    /// The store's own [`StoreError`] when it could not end the lease (its database
    /// unreachable, say); the lease then ends when its time-to-live passes.
    pub async fn release(self) -> Result<(), StoreError> {
        self.0.release().await
    }
}

/// A store's side of a [`Lease`].
#[async_trait::async_trait]
pub trait LeaseHolder: Send + Sync + fmt::Debug {
    /// Ends the lease.
    ///
    /// # Errors
    /// A [`StoreError`] when the store cannot be reached to end it; the lease then ends
    /// when its time-to-live passes.
    async fn release(self: Box<Self>) -> Result<(), StoreError>;
}

/// What went wrong in a credential store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The store could not be reached (a database down, a network failure): try again
    /// later; nothing is lost.
    Unavailable,
    /// A stored record cannot be read (torn, edited, encrypted with a key the host no
    /// longer has): the message names it; logging out or in again replaces it.
    Corrupt,
    /// The store refused (permissions, a full disk, a misconfigured database).
    Failed,
}

/// A credential store that failed. Its message names what failed (the file or the key)
/// and holds no secret; its source, if any, is the driver's own error.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct StoreError {
    kind: StoreErrorKind,
    message: String,
    #[source]
    source: Option<Box<dyn StdError + Send + Sync>>,
}

impl StoreError {
    /// An error of a kind, with a message (which must not contain a secret).
    pub fn new(kind: StoreErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// The same error, caused by `source` (a driver's or the OS's error).
    pub fn with_source(mut self, source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }
}

/// How long a lease lasts by default: longer than a refresh may take (a refresh runs
/// within three quarters of it), short enough that a holder killed mid-refresh holds the
/// others up briefly.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// Where delegated grants are kept, per (tenant, resource, issuer), shared by every
/// process (or host replica) that uses the same store. It holds only the grants a tenant
/// made by authorizing (the authorization code flow: a person logged in); tokens of
/// client credentials, enterprise and workload identity grants are obtained again when
/// needed and stay in memory.
///
/// The contract that keeps a grant from being lost when several processes refresh it:
/// - every grant has a [`GrantVersion`]; [`save`](Self::save) writes only when the
///   stored grant is what the writer expects ([`Expected`]), else it answers
///   [`Swap::Conflict`] and changes nothing;
/// - a refresh runs under a [`Lease`] ([`try_lease`](Self::try_lease)) held by one
///   holder at a time across the store; the lease expires by itself after its
///   time-to-live, so a holder that died cannot block the others for long;
/// - whoever waited for the lease reads the grant again and uses a token another holder
///   refreshed meanwhile, without refreshing again.
///
/// The client reads a grant when a tenant's token is first needed (and when renewing),
/// and writes it when a grant is made or refreshed: a call with a valid token in memory
/// does not touch the store.
///
/// [`MemoryCredentialStore`] (one process), [`FileCredentialStore`] (one machine) and,
/// with the `postgres` feature, `PostgresCredentialStore` (a fleet) implement it; a host
/// may implement it over its own storage.
///
/// # Implementing a store
///
/// With `#[async_trait::async_trait]` (`brain_tools::async_trait` for a host that depends
/// on `brain-tools` alone). A store of one's own keeps the contract above:
/// - `save` and `remove` compare and write in one step (one transaction, or one
///   conditional statement such as `UPDATE ... WHERE version = $expected`), and a write
///   that finds something else answers [`Swap::Conflict`], not an error;
/// - a new [`GrantVersion`] on every write, never one used before under the key, even
///   after the grant was removed (a sequence, or a random number);
/// - `try_lease` gives a key's lease to one holder at a time, and to the next once its
///   `ttl` has passed; a holder's `release` ends only its own lease (an expired one may
///   have passed on);
/// - a driver's failure is a [`StoreError`] of kind `Unavailable` (try again later),
///   `Corrupt` or `Failed`, with the driver's error as its source
///   ([`StoreError::with_source`]), and no secret in its message.
///
/// A complete example over a map, handed to a host, is on `ToolHostBuilder::client` in
/// [`brain-tools`](https://docs.rs/brain-tools/latest/brain_tools/struct.ToolHostBuilder.html#method.client);
/// [`MemoryCredentialStore`] is another ([its source](https://github.com/brain-dev/brain-mcp-tools/blob/main/crates/brain-mcp-transport/src/auth/store/memory.rs)).
#[async_trait::async_trait]
pub trait CredentialStore: Send + Sync + fmt::Debug {
    /// The grant stored under `key`, with its version, if any.
    ///
    /// # Errors
    /// `Unavailable` when the store cannot be reached, `Corrupt` when the record under
    /// `key` cannot be read (the message names it), `Failed` when the store refuses.
    async fn load(&self, key: &GrantKey) -> Result<Option<VersionedGrant>, StoreError>;

    /// Stores `grant` under `key` if what is stored is what `expected` says; returns the
    /// new version, or [`Swap::Conflict`] (nothing written).
    ///
    /// # Errors
    /// `Unavailable` when the store cannot be reached, `Failed` when it refuses the write
    /// (permissions, a full disk). A write that lost a race is not an error: it is
    /// [`Swap::Conflict`].
    async fn save(
        &self,
        key: &GrantKey,
        grant: &StoredGrant,
        expected: Expected,
    ) -> Result<Swap<GrantVersion>, StoreError>;

    /// Removes the grant under `key`: only at `version` if one is given (else whatever
    /// is there). No grant is no error.
    ///
    /// # Errors
    /// `Unavailable` when the store cannot be reached, `Failed` when it refuses. A grant
    /// at another version is not an error: it is [`Swap::Conflict`].
    async fn remove(
        &self,
        key: &GrantKey,
        version: Option<GrantVersion>,
    ) -> Result<Swap<()>, StoreError>;

    /// The keys of every grant a tenant has for a resource (one per issuer). A record the
    /// store knows to be theirs but cannot read is an error (`Corrupt`, naming it), so
    /// that the tenant hears of it; [`purge`](Self::purge) removes it.
    ///
    /// # Errors
    /// `Unavailable` when the store cannot be reached, `Corrupt` for a record that is
    /// theirs but cannot be read, `Failed` when the store refuses.
    async fn keys(&self, tenant: &str, resource: &str) -> Result<Vec<GrantKey>, StoreError>;

    /// Removes every grant a tenant has for a resource, readable or not (a logout);
    /// returns how many.
    ///
    /// # Errors
    /// As [`keys`](Self::keys) and [`remove`](Self::remove) fail; grants removed
    /// before the error stay removed.
    async fn purge(&self, tenant: &str, resource: &str) -> Result<usize, StoreError> {
        let keys = self.keys(tenant, resource).await?;
        for key in &keys {
            let _ = self.remove(key, None).await?;
        }
        Ok(keys.len())
    }

    /// Takes the lease on `key` for `ttl` if nobody holds it; `None` when another holder
    /// does (try again later).
    ///
    /// # Errors
    /// `Unavailable` when the store cannot be reached, `Failed` when it refuses. A lease
    /// someone else holds is not an error: it is `None`.
    async fn try_lease(&self, key: &GrantKey, ttl: Duration) -> Result<Option<Lease>, StoreError>;

    /// How long leases last in this store (default [`DEFAULT_LEASE_TTL`]).
    fn lease_ttl(&self) -> Duration {
        DEFAULT_LEASE_TTL
    }
}

/// The time a lease gives its holder.
pub(crate) struct LeaseTerms;

impl LeaseTerms {
    /// How long a refresh may take under a lease of `ttl`: three quarters of it, so the
    /// holder is done (or has given up) before the lease can pass to another.
    pub(crate) fn refresh_within(ttl: Duration) -> Duration {
        ttl.mul_f64(0.75)
    }
}

/// A unique number for a new version: the hash of the time, the process, a counter and
/// the version it replaces (no two writers, in any process, pick the same one).
pub(crate) fn new_version(previous: Option<GrantVersion>) -> GrantVersion {
    use sha2::{Digest, Sha256};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    let mut hasher = Sha256::new();
    hasher.update(nanos.to_be_bytes());
    hasher.update(std::process::id().to_be_bytes());
    hasher.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_be_bytes());
    hasher.update(previous.map_or(0, GrantVersion::get).to_be_bytes());
    let digest = hasher.finalize();
    let mut bytes = [0; 8];
    bytes.copy_from_slice(&digest[..8]);
    // Zero stands for "no version" in records written before versions existed.
    GrantVersion(u64::from_be_bytes(bytes).max(1))
}

#[cfg(test)]
pub(crate) mod contract {
    //! The contract every store keeps, run against each.

    use std::sync::Arc;

    use super::*;

    pub(crate) fn grant(access: &str) -> StoredGrant {
        let mut grant = StoredGrant::new("client-1");
        grant.access_token = Some(Secret::new(access));
        grant.refresh_token = Some(Secret::new("rt-secret-0001"));
        grant.client_secret = Some(Secret::new("cs-secret-0001"));
        grant.set_lifetime(at(1_700_000_000), Some(Duration::from_secs(3600)));
        grant.scopes = vec!["files:read".into()];
        grant.dpop_key = Some(Secret::new("dpop-key-secret-0001"));
        grant.dpop_thumbprint = Some("jkt-0001".into());
        grant
    }

    /// The time of seconds since the epoch.
    pub(crate) fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    fn saved(swap: Swap<GrantVersion>) -> GrantVersion {
        match swap {
            Swap::Done(version) => version,
            Swap::Conflict => panic!("the write was refused"),
        }
    }

    /// Keys, compare-and-swap writes and removals, and leases.
    pub(crate) async fn check(store: Arc<dyn CredentialStore>, leases_expire: bool) {
        let a = GrantKey::new("acme", "https://mcp/x", "https://as1");
        let b = GrantKey::new("acme", "https://mcp/x", "https://as2");
        let c = GrantKey::new("umbrella", "https://mcp/x", "https://as1");
        let d = GrantKey::new("acme", "https://mcp/y", "https://as1");
        assert_eq!(store.load(&a).await.unwrap(), None);
        assert_eq!(store.keys("acme", "https://mcp/x").await.unwrap(), vec![]);
        let mut versions = Vec::new();
        for (key, token) in [(&a, "ta"), (&b, "tb"), (&c, "tc"), (&d, "td")] {
            versions.push(saved(
                store
                    .save(key, &grant(token), Expected::Absent)
                    .await
                    .unwrap(),
            ));
        }
        for ((key, token), version) in [(&a, "ta"), (&b, "tb"), (&c, "tc"), (&d, "td")]
            .into_iter()
            .zip(&versions)
        {
            let loaded = store.load(key).await.unwrap().unwrap();
            assert_eq!(loaded.grant, grant(token), "{store:?} {key:?}");
            assert_eq!(loaded.version, *version);
        }
        assert_eq!(
            store.keys("acme", "https://mcp/x").await.unwrap(),
            vec![a.clone(), b.clone()]
        );

        // Compare-and-swap: a write that expects an older version, or no grant, changes
        // nothing; one that expects the current version wins, once.
        let v1 = versions[0];
        assert_eq!(
            store
                .save(&a, &grant("other"), Expected::Absent)
                .await
                .unwrap(),
            Swap::Conflict
        );
        let v2 = saved(
            store
                .save(&a, &grant("second"), Expected::Version(v1))
                .await
                .unwrap(),
        );
        assert_ne!(v1, v2);
        assert_eq!(
            store
                .save(&a, &grant("lost"), Expected::Version(v1))
                .await
                .unwrap(),
            Swap::Conflict
        );
        assert_eq!(
            store.load(&a).await.unwrap().unwrap().grant,
            grant("second")
        );
        assert_eq!(
            store.remove(&a, Some(v1)).await.unwrap(),
            Swap::Conflict,
            "a removal that read an older grant removes nothing"
        );
        assert!(store.load(&a).await.unwrap().is_some());
        let v3 = saved(
            store
                .save(&a, &grant("third"), Expected::Any)
                .await
                .unwrap(),
        );
        assert_eq!(store.remove(&a, Some(v3)).await.unwrap(), Swap::Done(()));
        assert_eq!(store.load(&a).await.unwrap(), None);
        assert_eq!(store.remove(&a, None).await.unwrap(), Swap::Done(()));
        // Removed and made again: a new version, not the old one back (no ABA).
        let v4 = saved(
            store
                .save(&a, &grant("again"), Expected::Absent)
                .await
                .unwrap(),
        );
        assert!(![v1, v2, v3].contains(&v4));
        assert_eq!(
            store
                .save(&a, &grant("x"), Expected::Version(v1))
                .await
                .unwrap(),
            Swap::Conflict
        );
        assert_eq!(store.remove(&a, None).await.unwrap(), Swap::Done(()));
        assert_eq!(
            store.keys("acme", "https://mcp/x").await.unwrap(),
            vec![b.clone()]
        );

        // Leases: one holder at a time, per key; released, the next one gets it.
        let ttl = Duration::from_secs(30);
        let lease = store
            .try_lease(&b, ttl)
            .await
            .unwrap()
            .expect("a free lease");
        assert!(store.try_lease(&b, ttl).await.unwrap().is_none());
        let other = store
            .try_lease(&c, ttl)
            .await
            .unwrap()
            .expect("another key's");
        lease.release().await.unwrap();
        let again = store.try_lease(&b, ttl).await.unwrap().expect("released");
        again.release().await.unwrap();
        other.release().await.unwrap();
        // A lease past its time-to-live passes to the next holder (a lease of no time
        // at all is past it at once); the file store's leases end with their holder
        // instead, which the OS sees at once.
        let short = store
            .try_lease(&d, Duration::ZERO)
            .await
            .unwrap()
            .expect("a free lease");
        let next = store.try_lease(&d, ttl).await.unwrap();
        if leases_expire {
            next.expect("an expired lease passes on")
                .release()
                .await
                .unwrap();
        } else {
            assert!(next.is_none(), "held while its holder lives");
            drop(short);
            let next = store.try_lease(&d, ttl).await.unwrap();
            next.expect("its holder is gone").release().await.unwrap();
        }
    }

    #[test]
    fn lifetimes_are_absolute_and_bounded() {
        let mut grant = grant("t");
        assert_eq!(grant.expires_at, Some(at(1_700_003_600)));
        assert_eq!(grant.lifetime(), Some(Duration::from_secs(3600)));
        assert_eq!(
            grant.lifetime_left(at(1_700_003_000)),
            Some(Duration::from_secs(600))
        );
        assert_eq!(grant.lifetime_left(at(1_800_000_000)), Some(Duration::ZERO));
        // Expired, but refreshable.
        assert!(grant.is_usable());
        grant.refresh_token = None;
        assert!(!grant.is_usable());
        grant.expires_at = None;
        assert!(grant.is_usable(), "no expiry known: usable until refused");
        // A server's lifetime of u64::MAX seconds is cut, and meets no clock unbounded.
        grant.set_lifetime(at(1_700_000_000), Some(Duration::from_secs(u64::MAX)));
        assert_eq!(grant.lifetime(), Some(MAX_TOKEN_LIFETIME));
        assert_eq!(grant.lifetime_left(at(0)), Some(MAX_TOKEN_LIFETIME));
        // Times far out of range become the bounds, never a panic.
        assert_eq!(
            to_millis(from_millis(u64::MAX)),
            to_millis(from_millis(u64::MAX))
        );
        assert_eq!(to_millis(UNIX_EPOCH - Duration::from_secs(5)), 0);
        grant.revoke();
        assert!(grant.is_revoked() && !grant.is_usable());
        assert_eq!((grant.dpop_key, grant.dpop_thumbprint), (None, None));
        assert_eq!(
            grant.client_id, "client-1",
            "the client registration is kept"
        );
    }

    #[test]
    fn debug_shows_no_secret() {
        let debug = format!("{:?}", grant("at-secret-0001"));
        for secret in ["at-secret", "rt-secret", "cs-secret", "dpop-key-secret"] {
            assert!(!debug.contains(secret), "{debug}");
        }
        assert!(debug.contains("client-1") && debug.contains("files:read"));
    }

    #[test]
    fn errors_keep_their_source() {
        let io = std::io::Error::other("disk on fire");
        let error =
            StoreError::new(StoreErrorKind::Failed, "the store could not write").with_source(io);
        assert_eq!(error.to_string(), "the store could not write");
        assert_eq!(error.source().unwrap().to_string(), "disk on fire");
        assert_eq!(error.kind(), StoreErrorKind::Failed);
    }
}
