//! The credential store a command opens for tenants' OAuth grants: `--store DIR` (a
//! folder on this machine), `--store postgres://...` (a database a fleet of hosts
//! shares, its secrets sealed with a key ring), or the defaults the environment gives.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use brain_tools::{
    CredentialStore, Expected, FileCredentialStore, GrantKey, GrantVersion, Lease, StoreError,
    StoreErrorKind, StoredGrant, Swap, VersionedGrant,
};

use crate::{cli::StoreArgs, runtime::exit::Exit};

/// The variable that names the credential store when `--store` is not given.
const STORE_VARIABLE: &str = "MCP_TOOLS_STORE";
/// The variable that holds the key ring (a PostgreSQL store's, a gateway fleet's session
/// keys) when `--store-keys` is not given.
#[cfg(any(feature = "postgres", feature = "gateway"))]
const STORE_KEYS_VARIABLE: &str = "MCP_TOOLS_STORE_KEYS";

/// Whether a store location is a database URL rather than a folder.
pub(crate) fn is_database(location: &str) -> bool {
    let lower = location.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// An open credential store, and how to name it to a person.
pub(crate) struct Store {
    pub(crate) store: Arc<dyn CredentialStore>,
    /// The folder, or "the PostgreSQL store" (its URL may hold a password).
    pub(crate) place: String,
}

/// Where the store is: `--store`, else `$MCP_TOOLS_STORE`, else the user's folder.
enum Location {
    Folder(PathBuf),
    Database(String),
}

fn locate(args: &StoreArgs) -> Result<Location, String> {
    let location = args.location.clone().or_else(|| {
        std::env::var(STORE_VARIABLE)
            .ok()
            .filter(|v| !v.trim().is_empty())
    });
    match location {
        Some(url) if is_database(&url) => Ok(Location::Database(url)),
        Some(dir) => Ok(Location::Folder(PathBuf::from(dir))),
        None => FileCredentialStore::default_dir()
            .map(Location::Folder)
            .ok_or_else(|| {
                "there is no default place for grants (neither XDG_STATE_HOME nor HOME is set to an absolute path); give --store DIR".into()
            }),
    }
}

/// The credential store, open now: `--store`, else `$MCP_TOOLS_STORE`, else the user's
/// folder. A `postgres://` URL connects to (and migrates) the shared store, its secrets
/// sealed with the key ring of `--store-keys FILE` or `$MCP_TOOLS_STORE_KEYS`. For the
/// commands that are about the store (`login`, `logout`): a store that cannot be opened
/// is their error.
pub(crate) async fn open(args: &StoreArgs) -> Result<Store, Exit> {
    match locate(args).map_err(Exit::Failed)? {
        Location::Folder(dir) => Ok(folder(dir)),
        Location::Database(url) => {
            let store = database(&url, args.keys.as_deref()).map_err(Exit::Failed)?;
            connect(&store).await?;
            Ok(Store {
                store,
                place: "the PostgreSQL store".into(),
            })
        }
    }
}

/// The credential store of the commands that run calls (`call`, `check --live`,
/// discovery): opened when a call first needs it. A store that cannot be opened (a
/// database down, a key ring missing, no place for grants) fails the calls that need a
/// grant, each as its own `credential_store` result within its own timeout; calls that
/// need none never notice.
pub(crate) fn for_calls(args: &StoreArgs) -> Arc<dyn CredentialStore> {
    let opened = locate(args).and_then(|location| match location {
        Location::Folder(dir) => Ok(folder(dir).store),
        Location::Database(url) => database(&url, args.keys.as_deref()),
    });
    opened.unwrap_or_else(|why| Arc::new(Unopened(why)))
}

fn folder(dir: PathBuf) -> Store {
    Store {
        store: Arc::new(FileCredentialStore::new(&dir)),
        place: dir.display().to_string(),
    }
}

/// The key ring of `--store-keys FILE`, else of `$MCP_TOOLS_STORE_KEYS` when it is set:
/// `None` when neither is given.
///
/// # Errors
/// The file cannot be read, or what it (or the variable) holds is not a key ring.
#[cfg(any(feature = "postgres", feature = "gateway"))]
pub(crate) fn key_ring(keys: Option<&Path>) -> Result<Option<brain_tools::KeyRing>, String> {
    use brain_tools::KeyRing;
    match keys {
        Some(file) => KeyRing::from_file(file).map(Some),
        None if std::env::var_os(STORE_KEYS_VARIABLE).is_some() => {
            KeyRing::from_env(STORE_KEYS_VARIABLE).map(Some)
        }
        None => Ok(None),
    }
    .map_err(|error| error.to_string())
}

/// The PostgreSQL store, not connected yet.
#[cfg(feature = "postgres")]
fn database(url: &str, keys: Option<&Path>) -> Result<Arc<dyn CredentialStore>, String> {
    use brain_tools::{PostgresCredentialStore, PostgresStoreOptions};
    let keys = key_ring(keys)
        .and_then(|ring| {
            ring.ok_or_else(|| format!("the variable {STORE_KEYS_VARIABLE} holds no key ring"))
        })
        .map_err(|error| {
        format!(
            "the PostgreSQL store needs a key ring to seal grants (--store-keys FILE, or ${STORE_KEYS_VARIABLE}): {error}"
        )
    })?;
    let store = PostgresCredentialStore::lazy(PostgresStoreOptions::new(url, keys))
        .map_err(|error| format!("cannot open the PostgreSQL store: {error}"))?;
    Ok(Arc::new(store))
}

#[cfg(not(feature = "postgres"))]
fn database(_: &str, _: Option<&Path>) -> Result<Arc<dyn CredentialStore>, String> {
    Err(
        "this mcp-tools was built without the `postgres` feature: it cannot use a postgres:// store".into(),
    )
}

/// Reaches the store once (a database: connects and migrates its schema).
async fn connect(store: &Arc<dyn CredentialStore>) -> Result<(), Exit> {
    let probe = GrantKey::new("", "", "");
    match store.load(&probe).await {
        Ok(_) => Ok(()),
        Err(error) => Err(Exit::Failed(format!(
            "cannot open the PostgreSQL store: {error}"
        ))),
    }
}

/// A store that could not be opened: every operation fails with why.
#[derive(Debug)]
struct Unopened(String);

impl Unopened {
    fn error(&self) -> StoreError {
        StoreError::new(StoreErrorKind::Unavailable, self.0.clone())
    }
}

#[brain_tools::async_trait]
impl CredentialStore for Unopened {
    async fn load(&self, _: &GrantKey) -> Result<Option<VersionedGrant>, StoreError> {
        Err(self.error())
    }

    async fn save(
        &self,
        _: &GrantKey,
        _: &StoredGrant,
        _: Expected,
    ) -> Result<Swap<GrantVersion>, StoreError> {
        Err(self.error())
    }

    async fn remove(&self, _: &GrantKey, _: Option<GrantVersion>) -> Result<Swap<()>, StoreError> {
        Err(self.error())
    }

    async fn keys(&self, _: &str, _: &str) -> Result<Vec<GrantKey>, StoreError> {
        Err(self.error())
    }

    async fn try_lease(&self, _: &GrantKey, _: Duration) -> Result<Option<Lease>, StoreError> {
        Err(self.error())
    }
}
