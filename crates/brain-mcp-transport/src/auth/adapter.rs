//! rmcp's credential store, over ours: rmcp's store has no key (one store per
//! authorization manager), so the adapter carries its key, and converts rmcp's records
//! (oauth2 types) to ours and back. rmcp's records have no client secret: the adapter
//! keeps a dynamically registered client's secret with the grant.

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use oauth2::{AccessToken, RefreshToken, TokenResponse, basic::BasicTokenType};
use rmcp::transport::auth::{
    AuthError, CredentialStore as RmcpStore, OAuthTokenResponse, StoredCredentials,
    VendorExtraTokenFields,
};

use super::store::{CredentialStore, GrantKey, StoredGrant};
use crate::secret::Secret;

/// rmcp's view of one grant in our store.
#[derive(Debug)]
pub(super) struct KeyedStore {
    store: Arc<dyn CredentialStore>,
    key: GrantKey,
    /// The secret of a dynamically registered client, kept with the grant.
    client_secret: Option<Secret>,
    /// The grant as last saved through this adapter.
    saved: Arc<Mutex<Option<StoredGrant>>>,
}

impl KeyedStore {
    pub(super) fn new(
        store: Arc<dyn CredentialStore>,
        key: GrantKey,
        client_secret: Option<Secret>,
    ) -> (Self, Arc<Mutex<Option<StoredGrant>>>) {
        let saved = Arc::default();
        (
            Self {
                store,
                key,
                client_secret,
                saved: Arc::clone(&saved),
            },
            saved,
        )
    }
}

/// The grant last saved through an adapter, if any.
pub(super) fn last_saved(saved: &Mutex<Option<StoredGrant>>) -> Option<StoredGrant> {
    saved.lock().unwrap_or_else(PoisonError::into_inner).clone()
}

fn store_error(error: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

/// rmcp's token response for a stored grant.
pub(super) fn token_response(grant: &StoredGrant) -> Option<OAuthTokenResponse> {
    let access = grant.access_token.as_ref()?;
    let mut response = OAuthTokenResponse::new(
        AccessToken::new(access.expose().to_owned()),
        BasicTokenType::Bearer,
        VendorExtraTokenFields::default(),
    );
    response.set_expires_in(grant.expires_in.map(Duration::from_secs).as_ref());
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
        grant.obtained_at,
    )
    .with_issuer(Some(key.issuer.clone()))
}

/// Our record of rmcp's.
pub(super) fn from_rmcp(
    credentials: &StoredCredentials,
    client_secret: Option<Secret>,
) -> StoredGrant {
    let token = credentials.token_response.as_ref();
    let mut grant = StoredGrant::new(credentials.client_id.clone());
    grant.client_secret = client_secret;
    grant.access_token = token.map(|token| Secret::new(token.access_token().secret().clone()));
    grant.refresh_token = token
        .and_then(|token| token.refresh_token())
        .map(|token| Secret::new(token.secret().clone()));
    grant.expires_in = token
        .and_then(|token| token.expires_in())
        .map(|lifetime| lifetime.as_secs());
    grant.obtained_at = credentials.token_received_at;
    grant.scopes = credentials.granted_scopes.clone();
    grant
}

#[async_trait::async_trait]
impl RmcpStore for KeyedStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let grant = self.store.load(&self.key).await.map_err(store_error)?;
        Ok(grant.map(|grant| to_rmcp(&grant, &self.key)))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let grant = from_rmcp(&credentials, self.client_secret.clone());
        self.store
            .save(&self.key, &grant)
            .await
            .map_err(store_error)?;
        *self.saved.lock().unwrap_or_else(PoisonError::into_inner) = Some(grant);
        Ok(())
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.store.remove(&self.key).await.map_err(store_error)
    }

    /// The authorization server rejected the refresh token for good: the grant is gone,
    /// unless it was replaced meanwhile (a new login from another process).
    async fn on_refresh_token_rejected(
        &self,
        credentials: &StoredCredentials,
    ) -> Result<(), AuthError> {
        let rejected = credentials
            .token_response
            .as_ref()
            .and_then(|token| token.refresh_token())
            .map(|token| token.secret().as_str());
        let current = self.store.load(&self.key).await.map_err(store_error)?;
        let unchanged = current
            .as_ref()
            .is_some_and(|grant| grant.refresh_token.as_ref().map(Secret::expose) == rejected);
        if unchanged {
            self.store.remove(&self.key).await.map_err(store_error)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::store::MemoryCredentialStore;

    #[test]
    fn a_grant_survives_the_round_trip_through_rmcp() {
        let key = GrantKey::new("acme", "https://mcp/x", "https://as");
        let mut grant = StoredGrant::new("client-1");
        grant.access_token = Some(Secret::new("at-1"));
        grant.refresh_token = Some(Secret::new("rt-1"));
        grant.expires_in = Some(3600);
        grant.obtained_at = Some(1_700_000_000);
        grant.scopes = vec!["a".into(), "b".into()];
        let rmcp = to_rmcp(&grant, &key);
        assert_eq!(rmcp.issuer.as_deref(), Some("https://as"));
        let mut back = from_rmcp(&rmcp, None);
        assert_eq!(back, grant);
        back.client_secret = Some(Secret::new("dcr-secret"));
        assert_eq!(
            from_rmcp(&to_rmcp(&back, &key), back.client_secret.clone()),
            back
        );
    }

    #[tokio::test]
    async fn a_rejected_refresh_token_removes_the_grant_unless_it_was_replaced() {
        let store = Arc::new(MemoryCredentialStore::new());
        let key = GrantKey::new("acme", "https://mcp/x", "https://as");
        let (adapter, saved) = KeyedStore::new(store.clone(), key.clone(), None);
        let mut grant = StoredGrant::new("client-1");
        grant.access_token = Some(Secret::new("at-1"));
        grant.refresh_token = Some(Secret::new("rt-1"));
        adapter.save(to_rmcp(&grant, &key)).await.unwrap();
        assert_eq!(last_saved(&saved), Some(grant.clone()));
        let rejected = to_rmcp(&grant, &key);
        // Replaced meanwhile: kept.
        grant.refresh_token = Some(Secret::new("rt-2"));
        store.save(&key, &grant).await.unwrap();
        adapter.on_refresh_token_rejected(&rejected).await.unwrap();
        assert!(store.load(&key).await.unwrap().is_some());
        // The rejected one: removed.
        adapter
            .on_refresh_token_rejected(&to_rmcp(&grant, &key))
            .await
            .unwrap();
        assert!(store.load(&key).await.unwrap().is_none());
    }
}
