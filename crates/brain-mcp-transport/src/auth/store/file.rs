//! Grants in files, shared by the processes of one machine through OS file locks.

use std::{
    fs::File,
    path::{Path, PathBuf},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use serde::{Deserialize, Serialize};

use super::{
    CredentialStore, Expected, GrantKey, GrantVersion, Lease, LeaseHolder, StoreError,
    StoreErrorKind, StoredGrant, Swap, VersionedGrant, from_millis, new_version, to_millis,
};
use crate::secret::Secret;

/// Grants in files: one JSON file per grant, owner-only (`0600`) in an owner-only
/// directory (`0700`), each written whole to a temporary file and renamed into place (a
/// reader never sees half a grant; a crash leaves the old one). File names are a hash of
/// the key; the key is also inside, and checked on reading.
///
/// Several processes on one machine share a store safely: a write compares and swaps
/// under an exclusive lock on the grant's `.lock` file, held only for the write; a
/// refresh's lease is an exclusive lock on its `.lease` file, which the OS releases the
/// moment its holder exits, however it exits (so the file store's leases need no
/// time-to-live). The locks are advisory (`flock` on Unix, `LockFileEx` on Windows,
/// through the standard library): only processes that use this store respect them.
///
/// The CLI keeps its grants in `$XDG_STATE_HOME/brain-mcp-tools/credentials`, or
/// `~/.local/state/brain-mcp-tools/credentials` ([`FileCredentialStore::default_dir`]).
/// Nothing is created until a grant is saved or leased.
#[derive(Debug, Clone)]
pub struct FileCredentialStore {
    dir: PathBuf,
}

/// One file's content.
#[derive(Serialize, Deserialize)]
struct Record {
    /// The record format.
    version: u32,
    /// The grant's version (none in format 1).
    #[serde(default)]
    revision: u64,
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
    /// When the access token was issued, in milliseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    obtained_at_ms: Option<u64>,
    /// When it expires, in milliseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at_ms: Option<u64>,
    /// Format 1: when the access token was issued, in seconds; read, never written.
    #[serde(default, skip_serializing)]
    obtained_at: Option<u64>,
    /// Format 1: its lifetime, in seconds; read, never written.
    #[serde(default, skip_serializing)]
    expires_in: Option<u64>,
    #[serde(default)]
    scopes: Vec<String>,
    /// Format 3: the DPoP key the grant's tokens are bound to (PKCS#8, base64url).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dpop_key: Option<String>,
    /// Format 3: that key's thumbprint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dpop_thumbprint: Option<String>,
}

/// The format a grant is written in: 2, or 3 for a grant bound to a DPoP key (a build
/// that reads only 1 and 2 then refuses it as unreadable, rather than using its tokens
/// as Bearer tokens).
const RECORD_VERSION: u32 = 2;
const DPOP_RECORD_VERSION: u32 = 3;
/// Records of these formats are read.
const READ_VERSIONS: [u32; 3] = [1, 2, 3];
/// A record larger than this is not a grant.
const MAX_RECORD_BYTES: u64 = 256 * 1024;

impl Record {
    fn of(key: &GrantKey, grant: &StoredGrant, version: GrantVersion) -> Self {
        let exposed = |secret: &Option<Secret>| secret.as_ref().map(|s| s.expose().to_owned());
        let dpop = grant.dpop_key.is_some() || grant.dpop_thumbprint.is_some();
        Self {
            version: if dpop {
                DPOP_RECORD_VERSION
            } else {
                RECORD_VERSION
            },
            revision: version.get(),
            tenant: key.tenant.clone(),
            resource: key.resource.clone(),
            issuer: key.issuer.clone(),
            client_id: grant.client_id.clone(),
            client_secret: exposed(&grant.client_secret),
            access_token: exposed(&grant.access_token),
            refresh_token: exposed(&grant.refresh_token),
            obtained_at_ms: grant.obtained_at.map(to_millis),
            expires_at_ms: grant.expires_at.map(to_millis),
            obtained_at: None,
            expires_in: None,
            scopes: grant.scopes.clone(),
            dpop_key: exposed(&grant.dpop_key),
            dpop_thumbprint: grant.dpop_thumbprint.clone(),
        }
    }

    fn key(&self) -> GrantKey {
        GrantKey::new(&self.tenant, &self.resource, &self.issuer)
    }

    fn grant(self) -> VersionedGrant {
        let mut grant = StoredGrant::new(self.client_id);
        grant.client_secret = self.client_secret.map(Secret::new);
        grant.access_token = self.access_token.map(Secret::new);
        grant.refresh_token = self.refresh_token.map(Secret::new);
        grant.scopes = self.scopes;
        grant.dpop_key = self.dpop_key.map(Secret::new);
        grant.dpop_thumbprint = self.dpop_thumbprint;
        if self.version == 1 {
            if let Some(obtained) = self.obtained_at {
                grant.set_lifetime(
                    UNIX_EPOCH + Duration::from_secs(obtained.min(u64::from(u32::MAX))),
                    self.expires_in.map(Duration::from_secs),
                );
            }
        } else {
            grant.obtained_at = self.obtained_at_ms.map(from_millis);
            grant.expires_at = self.expires_at_ms.map(from_millis);
        }
        VersionedGrant::new(grant, GrantVersion::new(self.revision))
    }
}

/// A grant file and what reading it gave.
type GrantFile = (PathBuf, Result<Option<Record>, StoreError>);

/// A lock file held exclusively; unlocked when dropped (and by the OS when the process
/// exits).
#[derive(Debug)]
struct Locked(#[allow(dead_code)] File);

#[async_trait::async_trait]
impl LeaseHolder for Locked {
    async fn release(self: Box<Self>) -> Result<(), StoreError> {
        Ok(())
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

    /// The file of a key, with an extension: `<tenant and resource>-<key>`, each part a
    /// SHA-256 in hex (the first one cut to 16 digits), so that a tenant's files for a
    /// server are known by their name even when one cannot be read.
    fn path(&self, key: &GrantKey, extension: &str) -> PathBuf {
        let prefix = prefix(&key.tenant, &key.resource);
        let name = hex(&digest(&[&key.tenant, &key.resource, &key.issuer]));
        self.dir.join(format!("{prefix}-{name}.{extension}"))
    }

    /// Where format 1 kept a key's grant (read, and replaced on the next write).
    fn legacy_file(&self, key: &GrantKey) -> PathBuf {
        let name = hex(&digest(&[&key.tenant, &key.resource, &key.issuer]));
        self.dir.join(format!("{name}.json"))
    }

    /// The file that holds a key's grant.
    pub fn file(&self, key: &GrantKey) -> PathBuf {
        self.path(key, "json")
    }

    fn read(path: &Path) -> Result<Option<Record>, StoreError> {
        use std::io::Read;
        let file = match File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(io_error("read the grant file", path, error)),
        };
        let mut text = Vec::new();
        file.take(MAX_RECORD_BYTES + 1)
            .read_to_end(&mut text)
            .map_err(|error| io_error("read the grant file", path, error))?;
        let corrupt = |what: &str| {
            StoreError::new(
                StoreErrorKind::Corrupt,
                format!("the grant file {} {what}", path.display()),
            )
        };
        if text.len() as u64 > MAX_RECORD_BYTES {
            return Err(corrupt("is larger than any grant"));
        }
        let record: Record = serde_json::from_slice(&text)
            .map_err(|error| corrupt("is not a grant record").with_source(error))?;
        if !READ_VERSIONS.contains(&record.version) {
            return Err(corrupt(&format!(
                "has a record format this version cannot read ({})",
                record.version
            )));
        }
        Ok(Some(record))
    }

    fn load_sync(&self, key: &GrantKey) -> Result<Option<VersionedGrant>, StoreError> {
        // The key inside must be this one: a file name is only a hash.
        let record = match Self::read(&self.file(key))? {
            Some(record) => Some(record),
            None => Self::read(&self.legacy_file(key))?,
        };
        Ok(record
            .filter(|record| record.key() == *key)
            .map(Record::grant))
    }

    /// Opens (creating) a key's lock file of one kind.
    fn lock_file(&self, key: &GrantKey, extension: &str) -> Result<File, StoreError> {
        self.create_dir()?;
        let path = self.path(key, extension);
        let mut options = std::fs::OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        options
            .open(&path)
            .map_err(|error| io_error("open the lock file", &path, error))
    }

    /// Runs `work` under the key's write lock: what it reads stays current until it has
    /// written.
    fn exclusively<T>(
        &self,
        key: &GrantKey,
        work: impl FnOnce() -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let file = self.lock_file(key, "lock")?;
        file.lock()
            .map_err(|error| io_error("lock", &self.path(key, "lock"), error))?;
        let outcome = work();
        drop(file);
        outcome
    }

    /// The version stored under `key`: `None` for no grant (or another key's record).
    fn current(&self, key: &GrantKey) -> Result<Option<GrantVersion>, StoreError> {
        Ok(self.load_sync(key)?.map(|stored| stored.version))
    }

    fn save_sync(
        &self,
        key: &GrantKey,
        grant: &StoredGrant,
        expected: Expected,
    ) -> Result<Swap<GrantVersion>, StoreError> {
        self.exclusively(key, || {
            // A record this version cannot read is replaced only by a write that expects
            // anything (a login): a refresh must not guess what it held.
            let current = match (self.current(key), expected) {
                (Ok(current), _) => current,
                (Err(error), Expected::Any) if error.kind() == StoreErrorKind::Corrupt => None,
                (Err(error), _) => return Err(error),
            };
            let matches = match expected {
                Expected::Absent => current.is_none(),
                Expected::Version(version) => current == Some(version),
                Expected::Any => true,
            };
            if !matches {
                return Ok(Swap::Conflict);
            }
            let version = new_version(current);
            let bytes =
                serde_json::to_vec_pretty(&Record::of(key, grant, version)).map_err(|error| {
                    StoreError::new(StoreErrorKind::Failed, "a grant could not be serialized")
                        .with_source(error)
                })?;
            write_atomically(&self.file(key), &bytes)?;
            // A grant of format 1 now lives under its new name.
            let _ = std::fs::remove_file(self.legacy_file(key));
            Ok(Swap::Done(version))
        })
    }

    fn remove_sync(
        &self,
        key: &GrantKey,
        version: Option<GrantVersion>,
    ) -> Result<Swap<()>, StoreError> {
        let paths = [self.file(key), self.legacy_file(key)];
        if !paths.iter().any(|path| path.exists()) {
            return Ok(Swap::Done(()));
        }
        self.exclusively(key, || {
            for path in &paths {
                match Self::read(path) {
                    // Another key's file under the same name is left alone.
                    Ok(Some(record)) if record.key() != *key => continue,
                    Ok(Some(record)) if version.is_some_and(|v| v.get() != record.revision) => {
                        return Ok(Swap::Conflict);
                    }
                    // Unreadable: removed only when asked to remove whatever is there.
                    Err(error) if version.is_some() => return Err(error),
                    _ => {}
                }
                match std::fs::remove_file(path) {
                    Ok(()) => {}
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                    Err(error) => return Err(io_error("remove the grant file", path, error)),
                }
            }
            Ok(Swap::Done(()))
        })
    }

    /// The grant files of a tenant for a server: by name (an unreadable one is still
    /// known to be theirs), and format 1 files by their content.
    fn files_of(&self, tenant: &str, resource: &str) -> Result<Vec<GrantFile>, StoreError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(io_error("list", &self.dir, error)),
        };
        let ours = format!("{}-", prefix(tenant, resource));
        let mut files = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".json") else {
                continue;
            };
            if stem.starts_with(&ours) {
                files.push((path.clone(), Self::read(&path)));
            } else if stem.len() == 64 && stem.bytes().all(|b| b.is_ascii_hexdigit()) {
                // Format 1: a file that cannot be read names no tenant.
                match Self::read(&path) {
                    Ok(Some(record)) if record.tenant == tenant && record.resource == resource => {
                        files.push((path, Ok(Some(record))));
                    }
                    _ => {}
                }
            }
        }
        files.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(files)
    }

    fn keys_sync(&self, tenant: &str, resource: &str) -> Result<Vec<GrantKey>, StoreError> {
        let mut keys = Vec::new();
        for (_, record) in self.files_of(tenant, resource)? {
            if let Some(record) = record? {
                keys.push(record.key());
            }
        }
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    fn purge_sync(&self, tenant: &str, resource: &str) -> Result<usize, StoreError> {
        let mut removed = 0;
        for (path, _) in self.files_of(tenant, resource)? {
            match std::fs::remove_file(&path) {
                Ok(()) => removed += 1,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(io_error("remove the grant file", &path, error)),
            }
        }
        Ok(removed)
    }

    fn try_lease_sync(&self, key: &GrantKey) -> Result<Option<Lease>, StoreError> {
        let file = self.lock_file(key, "lease")?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Lease::new(Locked(file)))),
            Err(std::fs::TryLockError::WouldBlock) => Ok(None),
            Err(std::fs::TryLockError::Error(error)) => {
                Err(io_error("lock", &self.path(key, "lease"), error))
            }
        }
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
            .map_err(|error| io_error("create", &self.dir, error))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&self.dir)
                .map_err(|error| io_error("read", &self.dir, error))?
                .permissions()
                .mode();
            if mode & 0o077 != 0 {
                std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
                    .map_err(|error| io_error("make private", &self.dir, error))?;
            }
        }
        Ok(())
    }
}

/// The SHA-256 of parts, each preceded by its length.
fn digest(parts: &[&str]) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    hasher.finalize().into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The start of the names of a tenant's files for a server.
fn prefix(tenant: &str, resource: &str) -> String {
    hex(&digest(&[tenant, resource])[..8])
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
        return Err(io_error("write the grant file", path, error));
    }
    // The rename itself is durable once the directory is synced (best effort).
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
    Ok(())
}

fn io_error(what: &str, path: &Path, error: std::io::Error) -> StoreError {
    StoreError::new(
        StoreErrorKind::Failed,
        format!("the credential store could not {what} {}", path.display()),
    )
    .with_source(error)
}

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(work).await.map_err(|error| {
        StoreError::new(StoreErrorKind::Failed, "the credential store's task failed")
            .with_source(error)
    })?
}

#[async_trait::async_trait]
impl CredentialStore for FileCredentialStore {
    async fn load(&self, key: &GrantKey) -> Result<Option<VersionedGrant>, StoreError> {
        let (store, key) = (self.clone(), key.clone());
        blocking(move || store.load_sync(&key)).await
    }

    async fn save(
        &self,
        key: &GrantKey,
        grant: &StoredGrant,
        expected: Expected,
    ) -> Result<Swap<GrantVersion>, StoreError> {
        let (store, key, grant) = (self.clone(), key.clone(), grant.clone());
        blocking(move || store.save_sync(&key, &grant, expected)).await
    }

    async fn remove(
        &self,
        key: &GrantKey,
        version: Option<GrantVersion>,
    ) -> Result<Swap<()>, StoreError> {
        let (store, key) = (self.clone(), key.clone());
        blocking(move || store.remove_sync(&key, version)).await
    }

    async fn keys(&self, tenant: &str, resource: &str) -> Result<Vec<GrantKey>, StoreError> {
        let (store, tenant, resource) = (self.clone(), tenant.to_owned(), resource.to_owned());
        blocking(move || store.keys_sync(&tenant, &resource)).await
    }

    async fn purge(&self, tenant: &str, resource: &str) -> Result<usize, StoreError> {
        let (store, tenant, resource) = (self.clone(), tenant.to_owned(), resource.to_owned());
        blocking(move || store.purge_sync(&tenant, &resource)).await
    }

    /// The OS releases the lease when its holder exits: `ttl` is not needed here (a
    /// holder's refresh is bounded by the lease time all the same).
    async fn try_lease(&self, key: &GrantKey, _ttl: Duration) -> Result<Option<Lease>, StoreError> {
        let (store, key) = (self.clone(), key.clone());
        blocking(move || store.try_lease_sync(&key)).await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{super::contract, *};

    fn temp_dir(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("brain-credentials-{name}-"))
            .tempdir()
            .unwrap()
    }

    #[tokio::test]
    async fn the_file_store_keeps_the_contract() {
        let dir = temp_dir("contract");
        contract::check(Arc::new(FileCredentialStore::new(dir.path())), false).await;
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn the_file_store_is_owner_only_and_writes_atomically() {
        use std::os::unix::fs::PermissionsExt;
        let parent = temp_dir("perms");
        let dir = parent.path().join("nested").join("credentials");
        let store = FileCredentialStore::new(&dir);
        let key = GrantKey::new("acme", "https://mcp/x", "https://as1");
        assert!(!dir.exists(), "nothing is created before a grant is saved");
        let Swap::Done(v1) = store
            .save(&key, &contract::grant("first"), Expected::Absent)
            .await
            .unwrap()
        else {
            panic!("refused")
        };
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        let grant_file = store.file(&key);
        let grants = || -> Vec<PathBuf> {
            std::fs::read_dir(&dir)
                .unwrap()
                .map(|entry| entry.unwrap().path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
                .collect()
        };
        assert_eq!(grants(), vec![grant_file.clone()], "no temporary left");
        assert_eq!(mode(&grant_file), 0o600);
        assert_eq!(mode(&store.path(&key, "lock")), 0o600);
        // Rewriting replaces the file whole: the old inode is renamed over.
        let _ = store
            .save(&key, &contract::grant("second"), Expected::Version(v1))
            .await
            .unwrap();
        let loaded = store.load(&key).await.unwrap().unwrap();
        assert_eq!(loaded.grant.access_token, Some(Secret::new("second")));
        assert_eq!(grants().len(), 1);
        assert_eq!(mode(&grant_file), 0o600);
        // A directory made too open is made private again on the next write.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let _ = store
            .save(&key, &contract::grant("third"), Expected::Any)
            .await
            .unwrap();
        assert_eq!(mode(&dir), 0o700);
        // A record whose key is another one's (a hash collision, a copied file) is not
        // this key's grant, and not removed for it.
        let other = GrantKey::new("umbrella", "https://mcp/x", "https://as1");
        std::fs::copy(&grant_file, store.file(&other)).unwrap();
        assert_eq!(store.load(&other).await.unwrap(), None);
        let _ = store.remove(&other, None).await.unwrap();
        assert!(store.file(&other).exists(), "another key's record is kept");
        std::fs::remove_file(store.file(&other)).unwrap();
    }

    #[tokio::test]
    async fn a_corrupt_file_is_named_and_a_login_or_logout_replaces_it() {
        let dir = temp_dir("corrupt");
        let store = FileCredentialStore::new(dir.path());
        let key = GrantKey::new("acme", "https://mcp/x", "https://as1");
        let _ = store
            .save(&key, &contract::grant("first"), Expected::Absent)
            .await
            .unwrap();
        let file = store.file(&key);
        std::fs::write(&file, b"{\"version\":2,").unwrap();
        let error = store.load(&key).await.unwrap_err();
        assert_eq!(error.kind(), StoreErrorKind::Corrupt);
        assert!(
            error.to_string().contains(&file.display().to_string()),
            "{error}"
        );
        // Listing the tenant's grants names it too (its name says whose it is), and no
        // other tenant's listing is troubled by it.
        let listed = store.keys("acme", "https://mcp/x").await.unwrap_err();
        assert_eq!(listed.kind(), StoreErrorKind::Corrupt);
        assert_eq!(
            store.keys("umbrella", "https://mcp/x").await.unwrap(),
            vec![]
        );
        // A refresh's write does not guess over it; a login replaces it.
        let refresh = store
            .save(
                &key,
                &contract::grant("x"),
                Expected::Version(GrantVersion::new(7)),
            )
            .await;
        assert_eq!(refresh.unwrap_err().kind(), StoreErrorKind::Corrupt);
        let _ = store
            .save(&key, &contract::grant("login"), Expected::Any)
            .await
            .unwrap();
        assert!(store.load(&key).await.unwrap().is_some());
        // A logout removes it, readable or not: by its key, or every grant of the tenant
        // for the server (when the issuer is not known).
        std::fs::write(&file, b"garbage").unwrap();
        assert_eq!(store.remove(&key, None).await.unwrap(), Swap::Done(()));
        assert!(!file.exists());
        std::fs::write(&file, b"garbage").unwrap();
        assert_eq!(store.purge("acme", "https://mcp/x").await.unwrap(), 1);
        assert!(!file.exists());
    }

    #[tokio::test]
    async fn a_grant_of_format_1_is_read_with_an_absolute_expiry() {
        let dir = temp_dir("format1");
        let store = FileCredentialStore::new(dir.path());
        let key = GrantKey::new("acme", "https://mcp/x", "https://as1");
        std::fs::write(
            store.file(&key),
            serde_json::json!({
                "version": 1, "tenant": "acme", "resource": "https://mcp/x",
                "issuer": "https://as1", "client_id": "c", "access_token": "at",
                "refresh_token": "rt", "obtained_at": 1_700_000_000u64,
                "expires_in": u64::MAX, "scopes": ["a"]
            })
            .to_string(),
        )
        .unwrap();
        let loaded = store.load(&key).await.unwrap().unwrap();
        assert_eq!(
            loaded.grant.expires_at,
            Some(contract::at(1_700_000_000) + super::super::MAX_TOKEN_LIFETIME)
        );
        assert_eq!(loaded.version, GrantVersion::new(0));
        // Its first write names that version.
        assert!(matches!(
            store
                .save(&key, &loaded.grant, Expected::Version(loaded.version))
                .await
                .unwrap(),
            Swap::Done(_)
        ));
    }

    #[tokio::test]
    async fn a_dpop_grant_is_written_in_format_3_and_older_records_still_read() {
        let dir = temp_dir("format3");
        let store = FileCredentialStore::new(dir.path());
        let key = GrantKey::new("acme", "https://mcp/x", "https://as1");
        let format = |store: &FileCredentialStore| -> serde_json::Value {
            serde_json::from_slice(&std::fs::read(store.file(&key)).unwrap()).unwrap()
        };
        // A Bearer grant: format 2, which builds before DPoP read too.
        let mut bearer = contract::grant("bearer");
        bearer.dpop_key = None;
        bearer.dpop_thumbprint = None;
        let _ = store.save(&key, &bearer, Expected::Any).await.unwrap();
        assert_eq!(format(&store)["version"], 2);
        assert!(format(&store).get("dpop_key").is_none());
        assert_eq!(store.load(&key).await.unwrap().unwrap().grant, bearer);
        // Bound to a key: format 3, the key and its thumbprint kept.
        let bound = contract::grant("bound");
        let _ = store.save(&key, &bound, Expected::Any).await.unwrap();
        let record = format(&store);
        assert_eq!(record["version"], 3);
        assert_eq!(record["dpop_key"], "dpop-key-secret-0001");
        assert_eq!(record["dpop_thumbprint"], "jkt-0001");
        assert_eq!(store.load(&key).await.unwrap().unwrap().grant, bound);
        // A record of format 2 written by an older build: no key, a Bearer grant.
        std::fs::write(
            store.file(&key),
            serde_json::json!({
                "version": 2, "revision": 7, "tenant": "acme", "resource": "https://mcp/x",
                "issuer": "https://as1", "client_id": "c", "access_token": "at",
                "scopes": ["a"]
            })
            .to_string(),
        )
        .unwrap();
        let loaded = store.load(&key).await.unwrap().unwrap();
        assert_eq!(
            (loaded.grant.dpop_key, loaded.grant.dpop_thumbprint),
            (None, None)
        );
        assert_eq!(loaded.version, GrantVersion::new(7));
    }

    #[test]
    fn the_default_directory_follows_xdg() {
        if let Some(dir) = FileCredentialStore::default_dir() {
            assert!(dir.ends_with("brain-mcp-tools/credentials"), "{dir:?}");
        }
    }
}
