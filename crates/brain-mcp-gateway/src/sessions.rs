//! Legacy-era (`2025-11-25` and before) sessions that any replica serves, with no
//! session table shared between replicas: a session id is sealed (AES-256-GCM, the key
//! ring's current key) over its expiry and the protocol version the client asked for,
//! bound to the tenant that opened it. A replica that has not seen the id opens it with
//! its caller's tenant and, through rmcp's session store hook, replays the handshake from
//! what it holds; an id another tenant opened, an altered or expired one does not open
//! (404: the client starts a new session).
//!
//! The `2026-07-28` era needs none of this: it is stateless.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use crate::serving::Serving;
use base64::Engine as _;
use brain_tools::KeyRing;
use futures::Stream;
use rmcp::{
    model::{
        ClientCapabilities, ClientJsonRpcMessage, Implementation, InitializeRequestParams,
        ProtocolVersion, ServerJsonRpcMessage,
    },
    transport::streamable_http_server::session::{
        RestoreOutcome, ServerSseMessage, SessionId, SessionManager, SessionState, SessionStore,
        SessionStoreError,
        local::{LocalSessionManager, LocalSessionManagerError},
    },
};

/// How long a session id opens after it was made. A client whose session ended starts
/// another (the spec's answer to a 404).
pub(crate) const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);
/// The first part of every id: the format's version.
const PREFIX: &str = "s1.";
/// What a session id is sealed for (with the tenant after it): never opens as anything
/// else sealed with the same ring (a grant in the store).
const CONTEXT: &[u8] = b"brain.dev/gateway-session/1\0";
/// Ended sessions remembered (so that a DELETE is final on the replica that served it).
const MAX_ENDED: usize = 100_000;
/// The version a replayed handshake asks for when the id holds none.
const DEFAULT_VERSION: &str = "2025-11-25";

/// What an id that opened holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sealed {
    pub(crate) version: String,
    /// Seconds since the epoch.
    expires: u64,
}

/// Sealing and opening session ids.
#[derive(Debug)]
pub(crate) struct Sessions {
    ring: KeyRing,
    /// Ended sessions and when their ids would have expired (seconds since the epoch).
    ended: Mutex<HashMap<String, u64>>,
}

impl Sessions {
    pub(crate) fn new(ring: KeyRing) -> Self {
        Self {
            ring,
            ended: Mutex::new(HashMap::new()),
        }
    }

    /// A new session id for `tenant`, asking for `version`.
    pub(crate) fn seal(&self, tenant: &str, version: &str) -> Option<String> {
        let expires = now() + SESSION_LIFETIME.as_secs();
        let mut plain = expires.to_be_bytes().to_vec();
        plain.extend_from_slice(version.as_bytes());
        let (key_id, sealed) = self.ring.seal(&context(tenant), &plain)?;
        let sealed = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sealed);
        Some(format!("{PREFIX}{key_id}.{sealed}"))
    }

    /// What `id` holds, if it was sealed for `tenant` with a key of the ring, has not
    /// expired and was not ended.
    pub(crate) fn open(&self, id: &str, tenant: &str) -> Option<Sealed> {
        let (key_id, sealed) = id.strip_prefix(PREFIX)?.rsplit_once('.')?;
        let sealed = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(sealed)
            .ok()?;
        let plain = self.ring.open(key_id, &context(tenant), &sealed).ok()?;
        let (expires, version) = plain.split_first_chunk::<8>()?;
        let expires = u64::from_be_bytes(*expires);
        if expires <= now() || self.ended().contains_key(id) {
            return None;
        }
        Some(Sealed {
            version: String::from_utf8(version.to_vec()).ok()?,
            expires,
        })
    }

    /// The session `id` (which opens until `expires`) was ended by its client: it no
    /// longer opens here.
    fn end(&self, id: &str, expires: u64) {
        let mut ended = self.ended();
        if ended.len() >= MAX_ENDED {
            let now = now();
            ended.retain(|_, until| *until > now);
        }
        if ended.len() < MAX_ENDED {
            ended.insert(id.to_owned(), expires);
        }
    }

    fn ended(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        self.ended.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn context(tenant: &str) -> Vec<u8> {
    let mut context = CONTEXT.to_vec();
    context.extend_from_slice(tenant.as_bytes());
    context
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs())
}

/// A session could not be made or found.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    #[error("a session is made only for a known caller")]
    NoCaller,
}

/// rmcp's in-memory sessions, under sealed ids.
#[derive(Debug)]
pub(crate) struct SealedSessions {
    local: LocalSessionManager,
    sessions: Arc<Sessions>,
}

impl SealedSessions {
    pub(crate) fn new(sessions: Arc<Sessions>) -> Self {
        Self {
            local: LocalSessionManager::default(),
            sessions,
        }
    }
}

impl SessionManager for SealedSessions {
    type Error = SessionError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), SessionError> {
        let id = Serving::with(|serving| {
            self.sessions.seal(
                &serving.caller.tenant,
                serving
                    .initialize_version
                    .as_deref()
                    .unwrap_or(DEFAULT_VERSION),
            )
        })
        .flatten()
        .ok_or(SessionError::NoCaller)?;
        let id = SessionId::from(id);
        // rmcp's manager makes a session under an id it is given only when restoring.
        match self.local.restore_session(id.clone()).await? {
            RestoreOutcome::Restored(transport) => Ok((id, transport)),
            _ => Err(SessionError::NoCaller),
        }
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, SessionError> {
        Ok(self.local.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, SessionError> {
        Ok(self.local.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), SessionError> {
        Ok(self.local.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        Ok(self.local.create_stream(id, message).await?)
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), SessionError> {
        Ok(self.local.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        Ok(self.local.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, SessionError> {
        Ok(self.local.resume(id, last_event_id).await?)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, SessionError> {
        Ok(self.local.restore_session(id).await?)
    }
}

/// rmcp's session store hook: what a sealed id holds is all there is to load; nothing is
/// stored.
#[derive(Debug)]
pub(crate) struct SealedStore(pub(crate) Arc<Sessions>);

#[brain_tools::async_trait]
impl SessionStore for SealedStore {
    async fn load(&self, id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(sealed) =
            Serving::with(|serving| self.0.open(id, &serving.caller.tenant)).flatten()
        else {
            return Ok(None);
        };
        let version: ProtocolVersion = serde_json::from_value(sealed.version.into())?;
        let params = InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("restored", "0"),
        )
        .with_protocol_version(version);
        Ok(Some(SessionState::new(params)))
    }

    async fn store(&self, _: &str, _: &SessionState) -> Result<(), SessionStoreError> {
        Ok(())
    }

    async fn delete(&self, id: &str) -> Result<(), SessionStoreError> {
        if let Some(sealed) =
            Serving::with(|serving| self.0.open(id, &serving.caller.tenant)).flatten()
        {
            self.0.end(id, sealed.expires);
        }
        Ok(())
    }
}
