//! Grants in PostgreSQL, shared by a fleet of hosts (feature `postgres`).
//!
//! On tokio-postgres with the deadpool pool: the asynchronous driver every Rust
//! PostgreSQL pool builds on, without sqlx's macros, compile-time database checks or
//! its own TLS and runtime layers; TLS through rustls (the crate's own provider, `ring`,
//! and the platform's verifier). Every value is a bound parameter, never SQL text.
//!
//! Leases are rows with an expiry (`brain_mcp_leases`), not advisory locks: a lease row
//! expires by the database's clock whatever happened to its holder (advisory locks live
//! as long as a connection, which a host cut off by the network may keep open for
//! minutes, and which a transaction-pooling proxy does not keep at all), and a lease on
//! a grant nobody stored yet needs no row of the grant.

use std::{
    fmt,
    time::{Duration, SystemTime},
};

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};
use tokio_postgres::types::ToSql;

use super::{
    CredentialStore, DEFAULT_LEASE_TTL, Expected, GrantKey, GrantVersion, KeyRing, Lease,
    LeaseHolder, StoreError, StoreErrorKind, StoredGrant, Swap, VersionedGrant, from_millis,
    to_millis,
};
use crate::secret::Secret;

/// Where a [`PostgresCredentialStore`] connects, and how.
#[derive(Clone)]
#[non_exhaustive]
pub struct PostgresStoreOptions {
    url: Secret,
    keys: KeyRing,
    pool_size: usize,
    lease_ttl: Duration,
    timeout: Duration,
}

/// Without the URL (it may hold a password) or the keys.
impl fmt::Debug for PostgresStoreOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStoreOptions")
            .field("keys", &self.keys)
            .field("pool_size", &self.pool_size)
            .field("lease_ttl", &self.lease_ttl)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl PostgresStoreOptions {
    /// A database by its connection string (`postgres://user:password@host:port/db`,
    /// `host=/run/postgresql dbname=brain` or any other form libpq takes; `sslmode`
    /// `disable`, `prefer` (the default) or `require`), and the key ring its secrets
    /// are sealed with.
    pub fn new(url: impl Into<String>, keys: KeyRing) -> Self {
        Self {
            url: Secret::new(url.into()),
            keys,
            pool_size: 8,
            lease_ttl: DEFAULT_LEASE_TTL,
            timeout: Duration::from_secs(5),
        }
    }

    /// Connections kept open at most (default 8).
    pub fn pool_size(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// How long a refresh's lease lasts (default [`DEFAULT_LEASE_TTL`]); a refresh runs
    /// within three quarters of it.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl.min(Duration::from_secs(3600));
        self
    }

    /// How long connecting, or waiting for a pooled connection, may take before the
    /// store counts as unavailable (default 5 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.clamp(Duration::from_millis(10), Duration::from_secs(600));
        self
    }
}

/// Grants in a PostgreSQL database, for a fleet of hosts: tables `brain_mcp_grants`
/// (one row per grant, its secrets sealed with AES-256-GCM under the host's
/// [`KeyRing`], the key id in the row), `brain_mcp_leases` and `brain_mcp_migrations`,
/// created and migrated by [`PostgresCredentialStore::connect`] (or by the first
/// operation of a [`lazy`](PostgresCredentialStore::lazy) one). Writes compare and
/// swap on a version drawn from a sequence (never reused); leases are rows that expire
/// by the database's clock.
///
/// While the database is down, every operation fails `Unavailable` (a call that needs
/// the store fails `credential_store`, not sent); calls whose token is in memory go on,
/// and the pool reconnects by itself.
#[derive(Clone)]
pub struct PostgresCredentialStore {
    pool: Pool,
    keys: KeyRing,
    lease_ttl: Duration,
    /// Set once the schema is known to be this build's (created or migrated).
    migrated: std::sync::Arc<tokio::sync::OnceCell<()>>,
}

impl fmt::Debug for PostgresCredentialStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresCredentialStore")
            .field("keys", &self.keys)
            .field("lease_ttl", &self.lease_ttl)
            .finish_non_exhaustive()
    }
}

/// The schema, one migration per version, applied in order, each once.
const MIGRATIONS: &[&str] = &[r"
CREATE SEQUENCE brain_mcp_grant_versions;
CREATE TABLE brain_mcp_grants (
    tenant      text        NOT NULL,
    resource    text        NOT NULL,
    issuer      text        NOT NULL,
    version     bigint      NOT NULL,
    client_id   text        NOT NULL,
    scopes      text[]      NOT NULL,
    obtained_at_ms bigint,
    expires_at_ms  bigint,
    key_id      text        NOT NULL,
    sealed      bytea       NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, resource, issuer)
);
CREATE TABLE brain_mcp_leases (
    tenant      text        NOT NULL,
    resource    text        NOT NULL,
    issuer      text        NOT NULL,
    holder      text        NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant, resource, issuer)
);
"];

/// The advisory lock that keeps two hosts from migrating at once (a constant of ours).
const MIGRATION_LOCK: i64 = 0x6272_6169_6e6d_6370;

/// A grant's secrets, sealed together.
#[derive(Serialize, Deserialize)]
struct Secrets {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    access_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dpop_key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dpop_thumbprint: Option<String>,
}

/// What sealed secrets are bound to: the row's key and client, and whether they hold a
/// DPoP key (`/2`): a build that knows only `/1` cannot open such a row, so it never takes
/// a DPoP-bound token for a Bearer token.
fn context(key: &GrantKey, client_id: &str, dpop: bool) -> Vec<u8> {
    let mut context = if dpop {
        b"brain-mcp-grant/2".to_vec()
    } else {
        b"brain-mcp-grant/1".to_vec()
    };
    for part in [&key.tenant, &key.resource, &key.issuer, client_id] {
        context.extend((part.len() as u64).to_be_bytes());
        context.extend(part.as_bytes());
    }
    context
}

/// A time as the database's `bigint` of milliseconds since the epoch.
fn to_sql_time(value: Option<SystemTime>) -> Option<i64> {
    value.map(|value| i64::try_from(to_millis(value)).unwrap_or(i64::MAX))
}

fn from_sql_time(value: Option<i64>) -> Option<SystemTime> {
    value.map(|value| from_millis(u64::try_from(value).unwrap_or(0)))
}

/// The error of a database operation: connection problems are `Unavailable`.
fn db_error(what: &str, error: tokio_postgres::Error) -> StoreError {
    let unavailable = match error.code() {
        // Connection exceptions, and the server shutting down or starting.
        Some(code) => code.code().starts_with("08") || code.code().starts_with("57"),
        None => true,
    };
    let (kind, message) = if unavailable {
        (
            StoreErrorKind::Unavailable,
            format!("the credential database is unavailable ({what})"),
        )
    } else {
        (
            StoreErrorKind::Failed,
            format!("the credential database refused to {what}"),
        )
    };
    StoreError::new(kind, message).with_source(error)
}

/// A column's value, or what a column that does not hold what this build wrote says (a
/// column altered or set to NULL by hand): its name and the types the driver found,
/// never a value.
fn column<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a tokio_postgres::Row,
    name: &str,
) -> Result<T, String> {
    row.try_get(name).map_err(|error| {
        let mut text = error.to_string();
        if let Some(source) = std::error::Error::source(&error) {
            text = format!("{text}: {source}");
        }
        format!(
            "its column {name} does not hold what this build wrote ({})",
            crate::secret::one_line(&text, 200)
        )
    })
}

/// A row that is not what this build wrote, named as a corrupt row (`what`: whose).
fn unreadable(what: &str, why: String) -> StoreError {
    StoreError::new(
        StoreErrorKind::Corrupt,
        format!("{what} cannot be read: {why}"),
    )
}

fn pool_error(error: deadpool_postgres::PoolError) -> StoreError {
    match error {
        deadpool_postgres::PoolError::Backend(error) => db_error("connect", error),
        other => StoreError::new(
            StoreErrorKind::Unavailable,
            "the credential database is unavailable (no connection)",
        )
        .with_source(other),
    }
}

impl PostgresCredentialStore {
    /// Connects, and creates or migrates the schema (one host at a time).
    ///
    /// # Errors
    /// The connection string cannot be parsed (`Failed`), the database cannot be reached
    /// (`Unavailable`), or the schema cannot be created (`Failed`: the role may lack
    /// the rights).
    pub async fn connect(options: PostgresStoreOptions) -> Result<Self, StoreError> {
        let store = Self::lazy(options)?;
        drop(store.client().await?);
        Ok(store)
    }

    /// The store, without connecting: the first operation connects and creates or
    /// migrates the schema, and each operation that finds the database down fails
    /// `Unavailable` (a call that needs a grant then fails `credential_store`, not sent,
    /// within its own deadline) until it is back. A host built so starts while its
    /// database is down, and serves every binding that needs no grant.
    ///
    /// # Errors
    /// The connection string cannot be parsed, or TLS cannot be set up (`Failed`).
    pub fn lazy(options: PostgresStoreOptions) -> Result<Self, StoreError> {
        let mut config: tokio_postgres::Config = options.url.expose().parse().map_err(|_| {
            StoreError::new(
                StoreErrorKind::Failed,
                "the credential database's connection string cannot be parsed",
            )
        })?;
        config.connect_timeout(options.timeout);
        config.application_name("brain-mcp-tools");
        let tls = crate::wire::http::tls_config().map_err(|error| {
            StoreError::new(StoreErrorKind::Failed, "TLS could not be set up").with_source(error)
        })?;
        let manager = Manager::from_config(
            config,
            tokio_postgres_rustls::MakeRustlsConnect::new(tls),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(options.timeout))
            .create_timeout(Some(options.timeout))
            .recycle_timeout(Some(options.timeout))
            .build()
            .map_err(|error| {
                StoreError::new(
                    StoreErrorKind::Failed,
                    "the connection pool cannot be built",
                )
                .with_source(error)
            })?;
        Ok(Self {
            pool,
            keys: options.keys,
            lease_ttl: options.lease_ttl,
            migrated: std::sync::Arc::default(),
        })
    }

    /// A pooled connection to a database whose schema is this build's (migrated on the
    /// first use that reaches it).
    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.migrated.get_or_try_init(|| self.migrate()).await?;
        self.pooled().await
    }

    async fn pooled(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool.get().await.map_err(pool_error)
    }

    /// Applies the migrations not applied yet, in one transaction, under an advisory lock.
    async fn migrate(&self) -> Result<(), StoreError> {
        let mut client = self.pooled().await?;
        let transaction = client
            .transaction()
            .await
            .map_err(|error| db_error("begin the migration", error))?;
        transaction
            .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
            .await
            .map_err(|error| db_error("lock the schema", error))?;
        transaction
            .batch_execute(
                "CREATE TABLE IF NOT EXISTS brain_mcp_migrations (
                     version integer PRIMARY KEY,
                     applied_at timestamptz NOT NULL DEFAULT now())",
            )
            .await
            .map_err(|error| db_error("create the migrations table", error))?;
        let applied: i32 = transaction
            .query_one(
                "SELECT coalesce(max(version), 0) FROM brain_mcp_migrations",
                &[],
            )
            .await
            .map_err(|error| db_error("read the schema version", error))?
            .try_get(0)
            .map_err(|error| {
                unreadable(
                    "the credential database's schema version",
                    crate::secret::one_line(&error.to_string(), 200),
                )
            })?;
        let known = i32::try_from(MIGRATIONS.len()).unwrap_or(i32::MAX);
        if applied > known {
            return Err(StoreError::new(
                StoreErrorKind::Failed,
                format!(
                    "the credential database's schema is version {applied}, newer than this \
                     build knows ({known}): upgrade this host"
                ),
            ));
        }
        for (version, sql) in (1..).zip(MIGRATIONS).skip(applied as usize) {
            transaction
                .batch_execute(sql)
                .await
                .map_err(|error| db_error("migrate the schema", error))?;
            transaction
                .execute(
                    "INSERT INTO brain_mcp_migrations (version) VALUES ($1)",
                    &[&version],
                )
                .await
                .map_err(|error| db_error("record the migration", error))?;
        }
        transaction
            .commit()
            .await
            .map_err(|error| db_error("commit the migration", error))
    }

    /// Runs one statement and returns its rows.
    async fn query(
        &self,
        what: &str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>, StoreError> {
        let client = self.client().await?;
        let statement = client
            .prepare_cached(sql)
            .await
            .map_err(|error| db_error(what, error))?;
        client
            .query(&statement, params)
            .await
            .map_err(|error| db_error(what, error))
    }

    fn seal(&self, key: &GrantKey, grant: &StoredGrant) -> Result<(String, Vec<u8>), StoreError> {
        let exposed = |secret: &Option<Secret>| secret.as_ref().map(|s| s.expose().to_owned());
        let dpop = grant.dpop_key.is_some() || grant.dpop_thumbprint.is_some();
        let secrets = serde_json::to_vec(&Secrets {
            client_secret: exposed(&grant.client_secret),
            access_token: exposed(&grant.access_token),
            refresh_token: exposed(&grant.refresh_token),
            dpop_key: exposed(&grant.dpop_key),
            dpop_thumbprint: grant.dpop_thumbprint.clone(),
        })
        .map_err(|error| {
            StoreError::new(StoreErrorKind::Failed, "a grant could not be serialized")
                .with_source(error)
        })?;
        self.keys
            .seal(&context(key, &grant.client_id, dpop), &secrets)
            .ok_or_else(|| StoreError::new(StoreErrorKind::Failed, "a grant could not be sealed"))
    }

    fn grant_of(
        &self,
        key: &GrantKey,
        row: &tokio_postgres::Row,
    ) -> Result<VersionedGrant, StoreError> {
        let corrupt = |why: String| {
            StoreError::new(
                StoreErrorKind::Corrupt,
                format!("the grant row of {key} cannot be read: {why}"),
            )
        };
        let version: i64 = column(row, "version").map_err(corrupt)?;
        let client_id: String = column(row, "client_id").map_err(corrupt)?;
        let key_id: String = column(row, "key_id").map_err(corrupt)?;
        let sealed: Vec<u8> = column(row, "sealed").map_err(corrupt)?;
        let obtained_at: Option<i64> = column(row, "obtained_at_ms").map_err(corrupt)?;
        let expires_at: Option<i64> = column(row, "expires_at_ms").map_err(corrupt)?;
        let scopes: Vec<String> = column(row, "scopes").map_err(corrupt)?;
        let plain = self
            .keys
            .open(&key_id, &context(key, &client_id, false), &sealed)
            .or_else(|error| {
                self.keys
                    .open(&key_id, &context(key, &client_id, true), &sealed)
                    .map_err(|_| error)
            })
            .map_err(|error| corrupt(error.to_string()))?;
        let secrets: Secrets = serde_json::from_slice(&plain)
            .map_err(|_| corrupt("its sealed secrets are not a grant's".into()))?;
        let mut grant = StoredGrant::new(client_id);
        grant.client_secret = secrets.client_secret.map(Secret::new);
        grant.access_token = secrets.access_token.map(Secret::new);
        grant.refresh_token = secrets.refresh_token.map(Secret::new);
        grant.dpop_key = secrets.dpop_key.map(Secret::new);
        grant.dpop_thumbprint = secrets.dpop_thumbprint;
        grant.obtained_at = from_sql_time(obtained_at);
        grant.expires_at = from_sql_time(expires_at);
        grant.scopes = scopes;
        Ok(VersionedGrant::new(
            grant,
            GrantVersion::new(u64::try_from(version).unwrap_or(0)),
        ))
    }
}

/// A lease row of ours.
struct RowLease {
    store: PostgresCredentialStore,
    key: GrantKey,
    holder: String,
}

impl fmt::Debug for RowLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RowLease")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl LeaseHolder for RowLease {
    async fn release(self: Box<Self>) -> Result<(), StoreError> {
        let key = &self.key;
        self.store
            .query(
                "release a lease",
                "DELETE FROM brain_mcp_leases
                  WHERE tenant = $1 AND resource = $2 AND issuer = $3 AND holder = $4",
                &[&key.tenant, &key.resource, &key.issuer, &self.holder],
            )
            .await
            .map(drop)
    }
}

#[async_trait::async_trait]
impl CredentialStore for PostgresCredentialStore {
    async fn load(&self, key: &GrantKey) -> Result<Option<VersionedGrant>, StoreError> {
        let rows = self
            .query(
                "read a grant",
                "SELECT version, client_id, scopes, obtained_at_ms, expires_at_ms, key_id, sealed
                   FROM brain_mcp_grants
                  WHERE tenant = $1 AND resource = $2 AND issuer = $3",
                &[&key.tenant, &key.resource, &key.issuer],
            )
            .await?;
        rows.first().map(|row| self.grant_of(key, row)).transpose()
    }

    async fn save(
        &self,
        key: &GrantKey,
        grant: &StoredGrant,
        expected: Expected,
    ) -> Result<Swap<GrantVersion>, StoreError> {
        let (key_id, sealed) = self.seal(key, grant)?;
        let (obtained_at, expires_at) = (
            to_sql_time(grant.obtained_at),
            to_sql_time(grant.expires_at),
        );
        let values: [&(dyn ToSql + Sync); 9] = [
            &key.tenant,
            &key.resource,
            &key.issuer,
            &grant.client_id,
            &grant.scopes,
            &obtained_at,
            &expires_at,
            &key_id,
            &sealed,
        ];
        const INSERT: &str = "INSERT INTO brain_mcp_grants
             (tenant, resource, issuer, client_id, scopes, obtained_at_ms, expires_at_ms, key_id,
              sealed, version)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, nextval('brain_mcp_grant_versions'))";
        const SET: &str = "client_id = $4, scopes = $5, obtained_at_ms = $6, expires_at_ms = $7,
             key_id = $8, sealed = $9, version = nextval('brain_mcp_grant_versions'),
             updated_at = now()";
        let rows = match expected {
            Expected::Absent => {
                self.query(
                    "create a grant",
                    &format!("{INSERT} ON CONFLICT DO NOTHING RETURNING version"),
                    &values,
                )
                .await?
            }
            Expected::Any => {
                self.query(
                    "write a grant",
                    &format!(
                        "{INSERT} ON CONFLICT (tenant, resource, issuer) DO UPDATE SET {SET}
                         RETURNING version"
                    ),
                    &values,
                )
                .await?
            }
            Expected::Version(version) => {
                let version = i64::try_from(version.get()).unwrap_or(-1);
                let mut params = values.to_vec();
                params.push(&version);
                self.query(
                    "update a grant",
                    &format!(
                        "UPDATE brain_mcp_grants SET {SET}
                          WHERE tenant = $1 AND resource = $2 AND issuer = $3
                            AND version = $10
                         RETURNING version"
                    ),
                    &params,
                )
                .await?
            }
        };
        Ok(match rows.first() {
            Some(row) => Swap::Done(version_of(key, row)?),
            None => Swap::Conflict,
        })
    }

    async fn remove(
        &self,
        key: &GrantKey,
        version: Option<GrantVersion>,
    ) -> Result<Swap<()>, StoreError> {
        let version = version.map(|version| i64::try_from(version.get()).unwrap_or(-1));
        let removed = self
            .query(
                "remove a grant",
                "DELETE FROM brain_mcp_grants
                  WHERE tenant = $1 AND resource = $2 AND issuer = $3
                    AND ($4::bigint IS NULL OR version = $4)
                 RETURNING 1",
                &[&key.tenant, &key.resource, &key.issuer, &version],
            )
            .await?;
        if !removed.is_empty() || version.is_none() {
            return Ok(Swap::Done(()));
        }
        // Nothing removed at that version: another one is there, or none at all.
        Ok(match self.load_version(key).await? {
            Some(_) => Swap::Conflict,
            None => Swap::Done(()),
        })
    }

    async fn keys(&self, tenant: &str, resource: &str) -> Result<Vec<GrantKey>, StoreError> {
        let rows = self
            .query(
                "list grants",
                "SELECT issuer FROM brain_mcp_grants
                  WHERE tenant = $1 AND resource = $2 ORDER BY issuer",
                &[&tenant, &resource],
            )
            .await?;
        rows.iter()
            .map(|row| {
                let issuer: String = column(row, "issuer")
                    .map_err(|why| unreadable(&format!("a grant row of tenant {tenant:?}"), why))?;
                Ok(GrantKey::new(tenant, resource, issuer))
            })
            .collect()
    }

    async fn purge(&self, tenant: &str, resource: &str) -> Result<usize, StoreError> {
        let rows = self
            .query(
                "remove grants",
                "DELETE FROM brain_mcp_grants WHERE tenant = $1 AND resource = $2 RETURNING 1",
                &[&tenant, &resource],
            )
            .await?;
        Ok(rows.len())
    }

    async fn try_lease(&self, key: &GrantKey, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        let mut bytes = [0u8; 16];
        SystemRandom::new().fill(&mut bytes).map_err(|_| {
            StoreError::new(
                StoreErrorKind::Failed,
                "no random number for a lease holder",
            )
        })?;
        let holder: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        let seconds = ttl.as_secs_f64();
        let rows = self
            .query(
                "take a lease",
                "INSERT INTO brain_mcp_leases (tenant, resource, issuer, holder, expires_at)
                 VALUES ($1, $2, $3, $4, clock_timestamp() + make_interval(secs => $5))
                 ON CONFLICT (tenant, resource, issuer) DO UPDATE
                    SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
                  WHERE brain_mcp_leases.expires_at <= clock_timestamp()
                 RETURNING holder",
                &[&key.tenant, &key.resource, &key.issuer, &holder, &seconds],
            )
            .await?;
        Ok((!rows.is_empty()).then(|| {
            Lease::new(RowLease {
                store: self.clone(),
                key: key.clone(),
                holder,
            })
        }))
    }

    fn lease_ttl(&self) -> Duration {
        self.lease_ttl
    }
}

impl PostgresCredentialStore {
    /// The version stored under `key`, without opening its secrets.
    async fn load_version(&self, key: &GrantKey) -> Result<Option<GrantVersion>, StoreError> {
        let rows = self
            .query(
                "read a grant's version",
                "SELECT version FROM brain_mcp_grants
                  WHERE tenant = $1 AND resource = $2 AND issuer = $3",
                &[&key.tenant, &key.resource, &key.issuer],
            )
            .await?;
        rows.first().map(|row| version_of(key, row)).transpose()
    }
}

/// The version in the first column of a row about `key`.
fn version_of(key: &GrantKey, row: &tokio_postgres::Row) -> Result<GrantVersion, StoreError> {
    let version: i64 = column(row, "version")
        .map_err(|why| unreadable(&format!("the grant row of {key}"), why))?;
    Ok(GrantVersion::new(u64::try_from(version).unwrap_or(0)))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use brain_mcp_testkit::Postgres;

    use super::{super::contract, *};

    const K1: &str = "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    const K2: &str = "k2:ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8=";

    async fn store(server: &Postgres, keys: &str) -> PostgresCredentialStore {
        let options = PostgresStoreOptions::new(server.url(), KeyRing::parse(keys).unwrap())
            .timeout(Duration::from_secs(2));
        PostgresCredentialStore::connect(options).await.unwrap()
    }

    fn server() -> Postgres {
        Postgres::start_new().unwrap_or_else(|error| panic!("{error}"))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_postgres_store_keeps_the_contract_and_seals_its_secrets() {
        let server = server();
        let store = store(&server, K1).await;
        // Two hosts migrating the same database: the second finds it done.
        let _second = store_connect_again(&server).await;
        contract::check(Arc::new(store.clone()), true).await;
        // What is in the table: the key in clear, the secrets sealed.
        let key = GrantKey::new("acme", "https://mcp/x", "https://as1");
        let _ = store
            .save(&key, &contract::grant("at-secret-0001"), Expected::Any)
            .await
            .unwrap();
        let rows = store
            .query("read", "SELECT * FROM brain_mcp_grants", &[])
            .await
            .unwrap();
        let dump = format!("{rows:?}");
        for secret in [
            "at-secret-0001",
            "rt-secret-0001",
            "cs-secret-0001",
            "dpop-key-secret-0001",
        ] {
            assert!(!dump.contains(secret), "{secret} in clear");
            let sealed: Vec<u8> = rows[0].get("sealed");
            assert!(!sealed.windows(secret.len()).any(|w| w == secret.as_bytes()));
        }
        assert_eq!(rows[0].get::<_, String>("key_id"), "k1");
        assert!(!format!("{store:?}").contains("AAEC"), "no key in Debug");
        // A Bearer grant (sealed as before DPoP) and a DPoP one both read back whole.
        let mut bearer = contract::grant("bearer-0001");
        bearer.dpop_key = None;
        bearer.dpop_thumbprint = None;
        for grant in [bearer, contract::grant("bound-0001")] {
            let _ = store.save(&key, &grant, Expected::Any).await.unwrap();
            assert_eq!(store.load(&key).await.unwrap().unwrap().grant, grant);
        }
    }

    async fn store_connect_again(server: &Postgres) -> PostgresCredentialStore {
        store(server, K1).await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn keys_rotate_and_a_row_that_does_not_open_is_named_and_replaced() {
        let server = server();
        let key = GrantKey::new("acme", "https://mcp/x", "https://as1");
        let old = store(&server, K1).await;
        let _ = old
            .save(&key, &contract::grant("first"), Expected::Any)
            .await
            .unwrap();
        // Rotated: the new key first, the old one kept: old rows open, new writes use k2.
        let rotated = store(&server, &format!("{K2},{K1}")).await;
        let loaded = rotated.load(&key).await.unwrap().unwrap();
        assert_eq!(loaded.grant, contract::grant("first"));
        let _ = rotated
            .save(&key, &loaded.grant, Expected::Version(loaded.version))
            .await
            .unwrap();
        let rows = rotated
            .query("read", "SELECT key_id FROM brain_mcp_grants", &[])
            .await
            .unwrap();
        assert_eq!(rows[0].get::<_, String>(0), "k2");
        // A host without k2 cannot read it: a clear error naming the grant and the key id.
        let error = old.load(&key).await.unwrap_err();
        assert_eq!(error.kind(), StoreErrorKind::Corrupt);
        let message = error.to_string();
        assert!(
            message.contains("tenant acme") && message.contains("k2"),
            "{message}"
        );
        // An altered row: named too; the listing still shows it, so a logout removes it.
        rotated
            .query(
                "alter",
                "UPDATE brain_mcp_grants SET sealed = overlay(sealed placing '\\x00' from 20 for 1)",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(
            rotated.load(&key).await.unwrap_err().kind(),
            StoreErrorKind::Corrupt
        );
        assert_eq!(
            rotated.keys("acme", "https://mcp/x").await.unwrap(),
            vec![key.clone()]
        );
        // A login replaces it; a logout removes it.
        let _ = rotated
            .save(&key, &contract::grant("login"), Expected::Any)
            .await
            .unwrap();
        assert!(rotated.load(&key).await.unwrap().is_some());
        assert_eq!(rotated.purge("acme", "https://mcp/x").await.unwrap(), 1);
        assert_eq!(rotated.load(&key).await.unwrap(), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_database_that_goes_down_is_unavailable_and_comes_back_with_every_grant() {
        let server = server();
        let store = store(&server, K1).await;
        let key = GrantKey::new("acme", "https://mcp/x", "https://as1");
        let _ = store
            .save(&key, &contract::grant("kept"), Expected::Any)
            .await
            .unwrap();
        server.stop().unwrap();
        for error in [
            store.load(&key).await.unwrap_err(),
            store.try_lease(&key, DEFAULT_LEASE_TTL).await.unwrap_err(),
        ] {
            assert_eq!(error.kind(), StoreErrorKind::Unavailable, "{error}");
            assert!(error.to_string().contains("unavailable"), "{error}");
        }
        server.start().unwrap();
        assert_eq!(
            store.load(&key).await.unwrap().unwrap().grant,
            contract::grant("kept")
        );
        // Connecting to a database that is down: unavailable, at once.
        server.stop().unwrap();
        let options = PostgresStoreOptions::new(server.url(), KeyRing::parse(K1).unwrap())
            .timeout(Duration::from_secs(1));
        let error = PostgresCredentialStore::connect(options).await.unwrap_err();
        assert_eq!(error.kind(), StoreErrorKind::Unavailable, "{error}");
    }
}
