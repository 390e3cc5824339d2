//! rmcp's credential store, over ours: rmcp's store has no key (one store per
//! authorization manager) and no versions, so the adapter carries the key and, for a
//! refresh, the grant as read under the lease: rmcp's refresh starts from it, and its
//! save is a compare-and-swap against it. It converts rmcp's records (oauth2 types) to
//! ours and back; rmcp's records have no client secret or DPoP key, so the adapter keeps a
//! dynamically registered client's secret, and the DPoP key a grant's tokens are bound
//! to, with the grant.

use std::sync::{Arc, Mutex, PoisonError};

use oauth2::{AccessToken, RefreshToken, TokenResponse, basic::BasicTokenType};
use rmcp::transport::auth::{
    AuthError, CredentialStore as RmcpStore, OAuthTokenResponse, StoredCredentials,
    VendorExtraTokenFields,
};

use super::{
    answer::{TokenScheme, token_scheme},
    store::{CredentialStore, Expected, GrantKey, StoreError, StoredGrant, Swap, VersionedGrant},
};
use crate::{dpop::DpopKey, secret::Secret};

/// What the adapter's last save did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Saved {
    /// Stored.
    Stored(StoredGrant),
    /// Not stored: another writer replaced the grant since it was read (the grant
    /// obtained is still valid; the store holds another).
    Conflict(StoredGrant),
}

impl Saved {
    pub(super) fn grant(&self) -> &StoredGrant {
        match self {
            Saved::Stored(grant) | Saved::Conflict(grant) => grant,
        }
    }
}

/// What the adapter's owner reads back after rmcp is done.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    /// The last save, if any.
    pub(super) saved: Option<Saved>,
    /// A save that failed in the store: rmcp is told it succeeded (its tokens were issued
    /// and must not be lost with the error), and the owner retries it.
    pub(super) unsaved: Option<(StoredGrant, StoreError)>,
    /// The grant was marked revoked (its refresh token was refused, and nobody had
    /// replaced it).
    pub(super) revoked: bool,
}

pub(super) type Shared = Arc<Mutex<Outcome>>;

pub(super) fn outcome<T>(shared: &Shared, read: impl FnOnce(&mut Outcome) -> T) -> T {
    read(&mut shared.lock().unwrap_or_else(PoisonError::into_inner))
}

/// rmcp's view of one grant in our store.
#[derive(Debug)]
pub(super) struct KeyedStore {
    store: Arc<dyn CredentialStore>,
    key: GrantKey,
    /// The secret of a dynamically registered client, kept with the grant.
    client_secret: Option<Secret>,
    /// The DPoP key the grant's token requests prove: kept with a grant whose tokens are
    /// bound to it.
    dpop: Option<Arc<DpopKey>>,
    /// The grant a refresh starts from, read under the lease; `None` for a new grant
    /// (a login), whose save replaces whatever is stored.
    base: Option<VersionedGrant>,
    outcome: Shared,
}

impl KeyedStore {
    pub(super) fn new(
        store: Arc<dyn CredentialStore>,
        key: GrantKey,
        client_secret: Option<Secret>,
        base: Option<VersionedGrant>,
        dpop: Option<Arc<DpopKey>>,
    ) -> (Self, Shared) {
        let outcome = Shared::default();
        (
            Self {
                store,
                key,
                client_secret,
                dpop,
                base,
                outcome: Arc::clone(&outcome),
            },
            outcome,
        )
    }
}

fn store_error(error: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

/// rmcp's token response for a stored grant, its lifetime what is left of it.
pub(super) fn token_response(grant: &StoredGrant) -> Option<OAuthTokenResponse> {
    let access = grant.access_token.as_ref()?;
    let token_type = if grant.dpop_key.is_some() {
        BasicTokenType::Extension("dpop".to_owned())
    } else {
        BasicTokenType::Bearer
    };
    let mut response = OAuthTokenResponse::new(
        AccessToken::new(access.expose().to_owned()),
        token_type,
        VendorExtraTokenFields::default(),
    );
    response.set_expires_in(grant.lifetime().as_ref());
    response.set_refresh_token(
        grant
            .refresh_token
            .as_ref()
            .map(|token| RefreshToken::new(token.expose().to_owned())),
    );
    Some(response)
}

/// rmcp's record of a stored grant.
pub(super) fn to_rmcp(grant: &StoredGrant, key: &GrantKey) -> StoredCredentials {
    StoredCredentials::new(
        grant.client_id.clone(),
        token_response(grant),
        grant.scopes.clone(),
        grant.obtained_at.map(|at| {
            at.duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_secs())
        }),
    )
    .with_issuer(Some(key.issuer.clone()))
}

/// Our record of rmcp's, received now: its lifetime made an absolute expiry (bounded).
/// rmcp keeps the time of receipt in whole seconds; the store keeps it to the
/// millisecond, so that a short-lived token is not taken for older than it is. `dpop`:
/// the key the token request proved, kept when the token is bound to it (a DPoP token;
/// an authorization server that answered with a Bearer token bound nothing).
pub(super) fn from_rmcp(
    credentials: &StoredCredentials,
    client_secret: Option<Secret>,
    dpop: Option<&DpopKey>,
) -> StoredGrant {
    let token = credentials.token_response.as_ref();
    let mut grant = StoredGrant::new(credentials.client_id.clone());
    grant.client_secret = client_secret;
    grant.access_token = token.map(|token| Secret::new(token.access_token().secret().clone()));
    grant.refresh_token = token
        .and_then(|token| token.refresh_token())
        .map(|token| Secret::new(token.secret().clone()));
    grant.set_lifetime(
        std::time::SystemTime::now(),
        token.and_then(|token| token.expires_in()),
    );
    grant.scopes = credentials.granted_scopes.clone();
    let bound = token
        .is_some_and(|token| token_scheme(token.token_type().as_ref()) == Some(TokenScheme::Dpop));
    if let Some(key) = dpop.filter(|_| bound) {
        grant.dpop_key = Some(key.stored().clone());
        grant.dpop_thumbprint = Some(key.thumbprint().to_owned());
    }
    grant
}

#[async_trait::async_trait]
impl RmcpStore for KeyedStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        if let Some(base) = &self.base {
            return Ok(Some(to_rmcp(&base.grant, &self.key)));
        }
        let grant = self.store.load(&self.key).await.map_err(store_error)?;
        Ok(grant.map(|stored| to_rmcp(&stored.grant, &self.key)))
    }

    /// A compare-and-swap against the grant the refresh started from (a login replaces
    /// whatever is stored). Never an error to rmcp once tokens were issued: a conflict
    /// or a failed write is recorded for the owner, who still has the tokens.
    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let grant = from_rmcp(
            &credentials,
            self.client_secret.clone(),
            self.dpop.as_deref(),
        );
        let expected = self
            .base
            .as_ref()
            .map_or(Expected::Any, |base| Expected::Version(base.version));
        let written = self.store.save(&self.key, &grant, expected).await;
        outcome(&self.outcome, |outcome| match written {
            Ok(Swap::Done(_)) => outcome.saved = Some(Saved::Stored(grant)),
            Ok(Swap::Conflict) => outcome.saved = Some(Saved::Conflict(grant)),
            Err(error) => {
                outcome.saved = Some(Saved::Conflict(grant.clone()));
                outcome.unsaved = Some((grant, error));
            }
        });
        Ok(())
    }

    async fn clear(&self) -> Result<(), AuthError> {
        let version = self.base.as_ref().map(|base| base.version);
        let _ = self
            .store
            .remove(&self.key, version)
            .await
            .map_err(store_error)?;
        Ok(())
    }

    /// The authorization server refused the refresh token for good: the grant is marked
    /// revoked (its client registration kept), only if the store still holds the grant
    /// whose refresh token was refused: a grant another writer replaced is left alone.
    async fn on_refresh_token_rejected(
        &self,
        credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        let rejected = credentials
            .token_response
            .as_ref()
            .and_then(|token| token.refresh_token())
            .map(|token| token.secret().as_str());
        let Some(current) = self.store.load(&self.key).await.map_err(store_error)? else {
            return Ok(());
        };
        let unchanged = current.grant.refresh_token.as_ref().map(Secret::expose) == rejected
            && self
                .base
                .as_ref()
                .is_none_or(|base| base.version == current.version);
        if unchanged {
            let mut revoked = current.grant;
            revoked.revoke();
            let written = self
                .store
                .save(&self.key, &revoked, Expected::Version(current.version))
                .await
                .map_err(store_error)?;
            if matches!(written, Swap::Done(_)) {
                outcome(&self.outcome, |outcome| outcome.revoked = true);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::auth::store::{GrantVersion, MemoryCredentialStore};

    fn grant(refresh: &str) -> StoredGrant {
        let mut grant = StoredGrant::new("client-1");
        grant.access_token = Some(Secret::new("at-1"));
        grant.refresh_token = Some(Secret::new(refresh));
        grant.set_lifetime(
            std::time::SystemTime::now(),
            Some(Duration::from_secs(3600)),
        );
        grant.scopes = vec!["a".into(), "b".into()];
        grant
    }

    /// The two grants are the same but for when they were taken: rmcp keeps times in whole
    /// seconds and a grant from rmcp is taken as received now, so each time may differ by
    /// the clock's progress (a few seconds at most on a loaded machine), never more.
    #[track_caller]
    fn assert_same(left: &StoredGrant, right: &StoredGrant) {
        let near = |a: Option<std::time::SystemTime>, b: Option<std::time::SystemTime>| match (a, b)
        {
            (Some(a), Some(b)) => {
                let apart = a
                    .duration_since(b)
                    .or_else(|_| b.duration_since(a))
                    .unwrap();
                apart <= Duration::from_secs(5)
            }
            (a, b) => a == b,
        };
        assert!(
            near(left.obtained_at, right.obtained_at),
            "{left:?} / {right:?}"
        );
        assert!(
            near(left.expires_at, right.expires_at),
            "{left:?} / {right:?}"
        );
        let untimed = |grant: &StoredGrant| {
            let mut grant = grant.clone();
            (grant.obtained_at, grant.expires_at) = (None, None);
            grant
        };
        assert_eq!(untimed(left), untimed(right));
    }

    #[test]
    fn a_grant_survives_the_round_trip_through_rmcp() {
        let key = GrantKey::new("acme", "https://mcp/x", "https://as");
        let grant = grant("rt-1");
        let rmcp = to_rmcp(&grant, &key);
        assert_eq!(rmcp.issuer.as_deref(), Some("https://as"));
        let mut back = from_rmcp(&rmcp, None, None);
        assert_same(&back, &grant);
        assert_eq!(back.lifetime(), Some(Duration::from_secs(3600)));
        back.client_secret = Some(Secret::new("dcr-secret"));
        assert_same(
            &from_rmcp(&to_rmcp(&back, &key), back.client_secret.clone(), None),
            &back,
        );
    }

    #[test]
    fn a_dpop_bound_grant_keeps_its_key_and_a_bearer_one_none() {
        let key = GrantKey::new("acme", "https://mcp/x", "https://as");
        let dpop = DpopKey::generate().unwrap();
        let mut bound = grant("rt-1");
        bound.dpop_key = Some(dpop.stored().clone());
        bound.dpop_thumbprint = Some(dpop.thumbprint().to_owned());
        // Through rmcp and back, the token type says DPoP and the key is kept.
        let rmcp = to_rmcp(&bound, &key);
        let back = from_rmcp(&rmcp, None, Some(&dpop));
        assert_same(&back, &bound);
        // The same request answered with a Bearer token: nothing is bound to the key.
        let mut bearer = bound.clone();
        bearer.dpop_key = None;
        bearer.dpop_thumbprint = None;
        let back = from_rmcp(&to_rmcp(&bearer, &key), None, Some(&dpop));
        assert_eq!((back.dpop_key, back.dpop_thumbprint), (None, None));
    }

    async fn stored(
        store: &MemoryCredentialStore,
        key: &GrantKey,
        grant: &StoredGrant,
    ) -> VersionedGrant {
        let _ = store.save(key, grant, Expected::Any).await.unwrap();
        store.load(key).await.unwrap().unwrap()
    }

    #[tokio::test]
    async fn a_refresh_saves_only_over_the_grant_it_started_from() {
        let store = Arc::new(MemoryCredentialStore::new());
        let key = GrantKey::new("acme", "https://mcp/x", "https://as");
        let base = stored(&store, &key, &grant("rt-1")).await;
        let (adapter, outcome) =
            KeyedStore::new(store.clone(), key.clone(), None, Some(base.clone()), None);
        // rmcp starts from the grant read under the lease.
        assert_same(
            &from_rmcp(&adapter.load().await.unwrap().unwrap(), None, None),
            &base.grant,
        );
        // Someone else wrote meanwhile: the refresh's grant is not stored over theirs.
        let theirs = stored(&store, &key, &grant("rt-theirs")).await;
        adapter.save(to_rmcp(&grant("rt-2"), &key)).await.unwrap();
        assert!(matches!(
            super::outcome(&outcome, |o| o.saved.clone()),
            Some(Saved::Conflict(_))
        ));
        assert_eq!(store.load(&key).await.unwrap().unwrap(), theirs);
        // Nobody wrote: stored.
        let (adapter, outcome) =
            KeyedStore::new(store.clone(), key.clone(), None, Some(theirs), None);
        adapter.save(to_rmcp(&grant("rt-3"), &key)).await.unwrap();
        let Some(Saved::Stored(saved)) = super::outcome(&outcome, |o| o.saved.clone()) else {
            panic!("stored")
        };
        assert_same(&saved, &grant("rt-3"));
        assert_same(
            &store.load(&key).await.unwrap().unwrap().grant,
            &grant("rt-3"),
        );
    }

    #[tokio::test]
    async fn a_rejected_refresh_token_revokes_the_grant_unless_it_was_replaced() {
        let store = Arc::new(MemoryCredentialStore::new());
        let key = GrantKey::new("acme", "https://mcp/x", "https://as");
        let base = stored(&store, &key, &grant("rt-1")).await;
        let rejected = to_rmcp(&base.grant, &key);
        // Replaced meanwhile (another process refreshed): kept as it is.
        let replaced = stored(&store, &key, &grant("rt-2")).await;
        let (adapter, outcome) =
            KeyedStore::new(store.clone(), key.clone(), None, Some(base.clone()), None);
        adapter.on_refresh_token_rejected(&rejected).await.unwrap();
        assert_eq!(store.load(&key).await.unwrap().unwrap(), replaced);
        assert!(!super::outcome(&outcome, |o| o.revoked));
        // The refused one is still there: revoked, never deleted; the client is kept.
        let (adapter, outcome) = KeyedStore::new(
            store.clone(),
            key.clone(),
            None,
            Some(replaced.clone()),
            None,
        );
        adapter
            .on_refresh_token_rejected(&to_rmcp(&replaced.grant, &key))
            .await
            .unwrap();
        let after = store.load(&key).await.unwrap().unwrap();
        assert!(after.grant.is_revoked(), "{after:?}");
        assert_eq!(after.grant.client_id, "client-1");
        assert!(super::outcome(&outcome, |o| o.revoked));
        assert_ne!(after.version, GrantVersion::new(0));
    }
}
