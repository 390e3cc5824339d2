//! The credential store a command opens for tenants' OAuth grants: `--store DIR` (a
//! folder on this machine), `--store postgres://...` (a database a fleet of hosts
//! shares, its secrets sealed with a key ring), or the defaults the environment gives.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use brain_tools::{CredentialStore, FileCredentialStore};

use crate::{cli::StoreArgs, runtime::exit::Exit};

/// The variable that names the credential store when `--store` is not given.
const STORE_VARIABLE: &str = "MCP_TOOLS_STORE";
/// The variable that holds a PostgreSQL store's key ring when `--store-keys` is not given.
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

/// The credential store: `--store`, else `$MCP_TOOLS_STORE`, else the user's folder. A
/// `postgres://` URL opens (and migrates) the shared store, its secrets sealed with the
/// key ring of `--store-keys FILE` or `$MCP_TOOLS_STORE_KEYS`.
pub(crate) async fn open(args: &StoreArgs) -> Result<Store, Exit> {
    let location = args.location.clone().or_else(|| {
        std::env::var(STORE_VARIABLE)
            .ok()
            .filter(|v| !v.trim().is_empty())
    });
    match location {
        Some(url) if is_database(&url) => database(&url, args.keys.as_deref()).await,
        Some(dir) => Ok(folder(PathBuf::from(dir))),
        None => {
            let dir = FileCredentialStore::default_dir().ok_or_else(|| {
                Exit::Failed(
                    "there is no default place for grants (neither XDG_STATE_HOME nor HOME is set to an absolute path); give --store DIR".into(),
                )
            })?;
            Ok(folder(dir))
        }
    }
}

fn folder(dir: PathBuf) -> Store {
    Store {
        store: Arc::new(FileCredentialStore::new(&dir)),
        place: dir.display().to_string(),
    }
}

#[cfg(feature = "postgres")]
async fn database(url: &str, keys: Option<&Path>) -> Result<Store, Exit> {
    use brain_tools::{KeyRing, PostgresCredentialStore, PostgresStoreOptions};
    let keys = match keys {
        Some(file) => KeyRing::from_file(file),
        None => KeyRing::from_env(STORE_KEYS_VARIABLE),
    }
    .map_err(|error| {
        Exit::Failed(format!(
            "the PostgreSQL store needs a key ring to seal grants (--store-keys FILE, or ${STORE_KEYS_VARIABLE}): {error}"
        ))
    })?;
    let store = PostgresCredentialStore::connect(PostgresStoreOptions::new(url, keys))
        .await
        .map_err(|error| Exit::Failed(format!("cannot open the PostgreSQL store: {error}")))?;
    Ok(Store {
        store: Arc::new(store),
        place: "the PostgreSQL store".into(),
    })
}

#[cfg(not(feature = "postgres"))]
async fn database(_: &str, _: Option<&Path>) -> Result<Store, Exit> {
    Err(Exit::Failed(
        "this mcp-tools was built without the `postgres` feature: it cannot use a postgres:// store".into(),
    ))
}
