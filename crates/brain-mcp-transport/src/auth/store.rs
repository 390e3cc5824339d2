//! Where delegated grants are kept: the [`CredentialStore`] trait, keyed by tenant,
//! server resource and issuer; a file store (the default) and an in-memory one.
//!
//! Only delegated grants (authorization code) are stored: client credentials and
//! enterprise tokens can be obtained again at any time, so they live in memory only.

use std::{
    collections::HashMap,
    fmt,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, PoisonError},
    time::{SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};

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

/// A delegated grant as stored: the client it was made for, its tokens, when they were
/// issued and for how long, and the scopes granted. `Debug` shows no token or secret.
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
    /// When the access token was issued (seconds since the Unix epoch).
    pub obtained_at: Option<u64>,
    /// How long the access token lives, in seconds, from `obtained_at`.
    pub expires_in: Option<u64>,
    /// The scopes granted.
    pub scopes: Vec<String>,
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
            expires_in: None,
            scopes: Vec::new(),
        }
    }

    /// When the access token expires, if known.
    pub fn expires_at(&self) -> Option<SystemTime> {
        let at = self.obtained_at?.checked_add(self.expires_in?)?;
        UNIX_EPOCH.checked_add(std::time::Duration::from_secs(at))
    }

    /// Whether the access token can still be used now (not expired), or the grant can be
    /// refreshed.
    pub fn is_usable(&self) -> bool {
        let unexpired = self.access_token.is_some()
            && self.expires_at().is_none_or(|at| at > SystemTime::now());
        unexpired || self.refresh_token.is_some()
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
            .field("expires_in", &self.expires_in)
            .field("scopes", &self.scopes)
            .finish()
    }
}

/// A credential store that failed (I/O, permissions, a corrupt record). Its message
/// holds no secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(String);

impl StoreError {
    /// An error with a message (which must not contain a secret).
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

/// Where delegated grants are kept, per (tenant, resource, issuer). A host may implement
/// it over its own secret storage; [`FileCredentialStore`] is the default and
/// [`MemoryCredentialStore`] keeps grants for the life of the process.
///
/// The client reads a grant when a tenant's token is first needed (and again when the
/// server rejects it), and writes it when a grant is made or refreshed: not per call.
#[async_trait::async_trait]
pub trait CredentialStore: Send + Sync + fmt::Debug {
    /// The grant stored under `key`, if any.
    async fn load(&self, key: &GrantKey) -> Result<Option<StoredGrant>, StoreError>;
    /// Stores a grant under `key`, replacing any.
    async fn save(&self, key: &GrantKey, grant: &StoredGrant) -> Result<(), StoreError>;
    /// Removes the grant under `key` (no error when there is none).
    async fn remove(&self, key: &GrantKey) -> Result<(), StoreError>;
    /// The keys of every grant a tenant has for a resource (one per issuer).
    async fn keys(&self, tenant: &str, resource: &str) -> Result<Vec<GrantKey>, StoreError>;
}

/// Grants in memory, for the life of the process (and for tests). Cheap to clone; clones
/// share the grants.
#[derive(Debug, Clone, Default)]
pub struct MemoryCredentialStore {
    grants: Arc<Mutex<HashMap<GrantKey, StoredGrant>>>,
}

impl MemoryCredentialStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<GrantKey, StoredGrant>> {
        self.grants.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait::async_trait]
impl CredentialStore for MemoryCredentialStore {
    async fn load(&self, key: &GrantKey) -> Result<Option<StoredGrant>, StoreError> {
        Ok(self.lock().get(key).cloned())
    }

    async fn save(&self, key: &GrantKey, grant: &StoredGrant) -> Result<(), StoreError> {
        self.lock().insert(key.clone(), grant.clone());
        Ok(())
    }

    async fn remove(&self, key: &GrantKey) -> Result<(), StoreError> {
        self.lock().remove(key);
        Ok(())
    }

    async fn keys(&self, tenant: &str, resource: &str) -> Result<Vec<GrantKey>, StoreError> {
        let mut keys: Vec<GrantKey> = self
            .lock()
            .keys()
            .filter(|key| key.tenant == tenant && key.resource == resource)
            .cloned()
            .collect();
        keys.sort();
        Ok(keys)
    }
}

/// Grants in files: one JSON file per grant, owner-only (`0600`) in an owner-only
/// directory (`0700`), each written whole to a temporary file and renamed into place (a
/// reader never sees half a grant; a crash leaves the old one). File names are a hash of
/// the key; the key is also inside, and checked on reading.
///
/// The default directory is `$XDG_STATE_HOME/brain-mcp-tools/credentials`, or
/// `~/.local/state/brain-mcp-tools/credentials` when `XDG_STATE_HOME` is unset
/// ([`FileCredentialStore::default_dir`]). Nothing is created until a grant is saved.
#[derive(Debug, Clone)]
pub struct FileCredentialStore {
    dir: PathBuf,
}

/// One file's content.
#[derive(Serialize, Deserialize)]
struct Record {
    version: u32,
    tenant: String,
    resource: String,
    issuer: String,
    client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    access_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    obtained_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_in: Option<u64>,
    #[serde(default)]
    scopes: Vec<String>,
}

const RECORD_VERSION: u32 = 1;
/// A record larger than this is not a grant.
const MAX_RECORD_BYTES: u64 = 256 * 1024;

impl Record {
    fn of(key: &GrantKey, grant: &StoredGrant) -> Self {
        let exposed = |secret: &Option<Secret>| secret.as_ref().map(|s| s.expose().to_owned());
        Self {
            version: RECORD_VERSION,
            tenant: key.tenant.clone(),
            resource: key.resource.clone(),
            issuer: key.issuer.clone(),
            client_id: grant.client_id.clone(),
            client_secret: exposed(&grant.client_secret),
            access_token: exposed(&grant.access_token),
            refresh_token: exposed(&grant.refresh_token),
            obtained_at: grant.obtained_at,
            expires_in: grant.expires_in,
            scopes: grant.scopes.clone(),
        }
    }

    fn key(&self) -> GrantKey {
        GrantKey::new(&self.tenant, &self.resource, &self.issuer)
    }

    fn grant(self) -> StoredGrant {
        StoredGrant {
            client_id: self.client_id,
            client_secret: self.client_secret.map(Secret::new),
            access_token: self.access_token.map(Secret::new),
            refresh_token: self.refresh_token.map(Secret::new),
            obtained_at: self.obtained_at,
            expires_in: self.expires_in,
            scopes: self.scopes,
        }
    }
}

impl FileCredentialStore {
    /// A store in `dir` (created, owner-only, when the first grant is saved).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// A store in [`FileCredentialStore::default_dir`], if there is one.
    pub fn at_default_dir() -> Option<Self> {
        Self::default_dir().map(Self::new)
    }

    /// `$XDG_STATE_HOME/brain-mcp-tools/credentials`, or
    /// `$HOME/.local/state/brain-mcp-tools/credentials`; `None` when neither variable is
    /// set to an absolute path.
    pub fn default_dir() -> Option<PathBuf> {
        let absolute = |name: &str| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .filter(|path| path.is_absolute())
        };
        let state = absolute("XDG_STATE_HOME")
            .or_else(|| absolute("HOME").map(|home| home.join(".local").join("state")))?;
        Some(state.join("brain-mcp-tools").join("credentials"))
    }

    /// The directory the grants are in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of a key: the SHA-256 of its parts, in hex.
    fn file(&self, key: &GrantKey) -> PathBuf {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        for part in [&key.tenant, &key.resource, &key.issuer] {
            hasher.update((part.len() as u64).to_be_bytes());
            hasher.update(part.as_bytes());
        }
        let name: String = hasher
            .finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        self.dir.join(format!("{name}.json"))
    }

    fn read(path: &Path) -> Result<Option<Record>, StoreError> {
        use std::io::Read;
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(io_error("read a grant", &error)),
        };
        let mut text = Vec::new();
        file.take(MAX_RECORD_BYTES + 1)
            .read_to_end(&mut text)
            .map_err(|error| io_error("read a grant", &error))?;
        if text.len() as u64 > MAX_RECORD_BYTES {
            return Err(StoreError::new(format!(
                "the credential store holds a file that is not a grant: {}",
                path.display()
            )));
        }
        serde_json::from_slice::<Record>(&text)
            .ok()
            .filter(|record| record.version == RECORD_VERSION)
            .map(Some)
            .ok_or_else(|| {
                StoreError::new(format!(
                    "the credential store holds a grant it cannot read: {}",
                    path.display()
                ))
            })
    }

    fn load_sync(&self, key: &GrantKey) -> Result<Option<StoredGrant>, StoreError> {
        // The key inside must be this one: a file name is only a hash.
        Ok(Self::read(&self.file(key))?
            .filter(|record| record.key() == *key)
            .map(Record::grant))
    }

    fn save_sync(&self, key: &GrantKey, grant: &StoredGrant) -> Result<(), StoreError> {
        self.create_dir()?;
        let bytes = serde_json::to_vec_pretty(&Record::of(key, grant))
            .map_err(|_| StoreError::new("a grant could not be serialized"))?;
        write_atomically(&self.file(key), &bytes)
    }

    fn remove_sync(&self, key: &GrantKey) -> Result<(), StoreError> {
        let path = self.file(key);
        match Self::read(&path) {
            // Another key's file under the same name is left alone.
            Ok(Some(record)) if record.key() != *key => return Ok(()),
            _ => {}
        }
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(io_error("remove a grant", &error)),
        }
    }

    fn keys_sync(&self, tenant: &str, resource: &str) -> Result<Vec<GrantKey>, StoreError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(io_error("list grants", &error)),
        };
        let mut keys = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|ext| ext != "json") {
                continue;
            }
            // A file that cannot be read is not this tenant's grant; the others still are.
            if let Ok(Some(record)) = Self::read(&path)
                && record.tenant == tenant
                && record.resource == resource
            {
                keys.push(record.key());
            }
        }
        keys.sort();
        Ok(keys)
    }

    /// Creates the directory, owner-only; an existing one is made owner-only.
    fn create_dir(&self) -> Result<(), StoreError> {
        let mut builder = std::fs::DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::DirBuilderExt;
            builder.mode(0o700);
        }
        builder
            .create(&self.dir)
            .map_err(|error| io_error("create the credential directory", &error))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&self.dir)
                .map_err(|error| io_error("read the credential directory", &error))?
                .permissions()
                .mode();
            if mode & 0o077 != 0 {
                std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
                    .map_err(|error| io_error("make the credential directory private", &error))?;
            }
        }
        Ok(())
    }
}

/// Writes a file whole or not at all: a private temporary file in the same directory,
/// synced, then renamed over the target.
fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    use std::io::Write;
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.subsec_nanos())
        .unwrap_or_default();
    let temporary = dir.join(format!(
        ".{}.{}.{nanos}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let written = options.open(&temporary).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&temporary, path));
    if let Err(error) = renamed {
        let _ = std::fs::remove_file(&temporary);
        return Err(io_error("write a grant", &error));
    }
    // The rename itself is durable once the directory is synced (best effort).
    if let Ok(dir) = std::fs::File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

fn io_error(what: &str, error: &std::io::Error) -> StoreError {
    StoreError::new(format!("the credential store could not {what}: {error}"))
}

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|_| StoreError::new("the credential store's task failed"))?
}

#[async_trait::async_trait]
impl CredentialStore for FileCredentialStore {
    async fn load(&self, key: &GrantKey) -> Result<Option<StoredGrant>, StoreError> {
        let (store, key) = (self.clone(), key.clone());
        blocking(move || store.load_sync(&key)).await
    }

    async fn save(&self, key: &GrantKey, grant: &StoredGrant) -> Result<(), StoreError> {
        let (store, key, grant) = (self.clone(), key.clone(), grant.clone());
        blocking(move || store.save_sync(&key, &grant)).await
    }

    async fn remove(&self, key: &GrantKey) -> Result<(), StoreError> {
        let (store, key) = (self.clone(), key.clone());
        blocking(move || store.remove_sync(&key)).await
    }

    async fn keys(&self, tenant: &str, resource: &str) -> Result<Vec<GrantKey>, StoreError> {
        let (store, tenant, resource) = (self.clone(), tenant.to_owned(), resource.to_owned());
        blocking(move || store.keys_sync(&tenant, &resource)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(access: &str) -> StoredGrant {
        let mut grant = StoredGrant::new("client-1");
        grant.access_token = Some(Secret::new(access));
        grant.refresh_token = Some(Secret::new("rt-secret-0001"));
        grant.client_secret = Some(Secret::new("cs-secret-0001"));
        grant.obtained_at = Some(1_700_000_000);
        grant.expires_in = Some(3600);
        grant.scopes = vec!["files:read".into()];
        grant
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "brain-credentials-{name}-{}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn debug_shows_no_secret() {
        let debug = format!("{:?}", grant("at-secret-0001"));
        for secret in ["at-secret", "rt-secret", "cs-secret"] {
            assert!(!debug.contains(secret), "{debug}");
        }
        assert!(debug.contains("client-1") && debug.contains("files:read"));
    }

    #[tokio::test]
    async fn stores_are_keyed_by_tenant_resource_and_issuer() {
        let file_dir = temp_dir("keys");
        let stores: Vec<Box<dyn CredentialStore>> = vec![
            Box::new(MemoryCredentialStore::new()),
            Box::new(FileCredentialStore::new(&file_dir)),
        ];
        for store in stores {
            let a = GrantKey::new("acme", "https://mcp/x", "https://as1");
            let b = GrantKey::new("acme", "https://mcp/x", "https://as2");
            let c = GrantKey::new("umbrella", "https://mcp/x", "https://as1");
            let d = GrantKey::new("acme", "https://mcp/y", "https://as1");
            assert_eq!(store.load(&a).await.unwrap(), None);
            assert_eq!(store.keys("acme", "https://mcp/x").await.unwrap(), vec![]);
            for (key, token) in [(&a, "ta"), (&b, "tb"), (&c, "tc"), (&d, "td")] {
                store.save(key, &grant(token)).await.unwrap();
            }
            for (key, token) in [(&a, "ta"), (&b, "tb"), (&c, "tc"), (&d, "td")] {
                let loaded = store.load(key).await.unwrap().unwrap();
                assert_eq!(loaded, grant(token), "{store:?} {key:?}");
            }
            assert_eq!(
                store.keys("acme", "https://mcp/x").await.unwrap(),
                vec![a.clone(), b.clone()]
            );
            store.remove(&a).await.unwrap();
            store.remove(&a).await.unwrap();
            assert_eq!(store.load(&a).await.unwrap(), None);
            assert_eq!(store.keys("acme", "https://mcp/x").await.unwrap(), vec![b]);
        }
        let _ = std::fs::remove_dir_all(&file_dir);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn the_file_store_is_owner_only_and_writes_atomically() {
        use std::os::unix::fs::PermissionsExt;
        let parent = temp_dir("perms");
        let dir = parent.join("nested").join("credentials");
        let store = FileCredentialStore::new(&dir);
        let key = GrantKey::new("acme", "https://mcp/x", "https://as1");
        assert!(!dir.exists(), "nothing is created before a grant is saved");
        store.save(&key, &grant("first")).await.unwrap();
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        let files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "one file, no temporary left: {files:?}");
        assert_eq!(mode(&files[0]), 0o600);
        // Rewriting replaces the file whole: the old inode is renamed over.
        store.save(&key, &grant("second")).await.unwrap();
        let loaded = store.load(&key).await.unwrap().unwrap();
        assert_eq!(loaded.access_token, Some(Secret::new("second")));
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        assert_eq!(mode(&files[0]), 0o600);
        // A directory made too open is made private again on the next write.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        store.save(&key, &grant("third")).await.unwrap();
        assert_eq!(mode(&dir), 0o700);
        // A record whose key is another one's (a hash collision, a copied file) is not
        // this key's grant.
        let other = GrantKey::new("umbrella", "https://mcp/x", "https://as1");
        std::fs::copy(&files[0], store.file(&other)).unwrap();
        assert_eq!(store.load(&other).await.unwrap(), None);
        store.remove(&other).await.unwrap();
        assert!(
            store.file(&other).exists(),
            "another key's record is not removed"
        );
        std::fs::remove_file(store.file(&other)).unwrap();
        // A torn or foreign file is an error on load, and skipped when listing.
        std::fs::write(&files[0], b"{\"version\":1,").unwrap();
        assert!(store.load(&key).await.is_err());
        assert_eq!(store.keys("acme", "https://mcp/x").await.unwrap(), vec![]);
        let _ = std::fs::remove_dir_all(&parent);
    }

    #[test]
    fn the_default_directory_follows_xdg() {
        let dir = FileCredentialStore::default_dir();
        if let Some(dir) = dir {
            assert!(dir.ends_with("brain-mcp-tools/credentials"), "{dir:?}");
        }
    }

    #[test]
    fn usability_and_expiry() {
        let mut grant = grant("t");
        assert_eq!(
            grant.expires_at(),
            UNIX_EPOCH.checked_add(std::time::Duration::from_secs(1_700_003_600))
        );
        // Expired, but refreshable.
        assert!(grant.is_usable());
        grant.refresh_token = None;
        assert!(!grant.is_usable());
        grant.expires_in = None;
        assert!(grant.is_usable(), "no expiry known: usable until refused");
    }
}
