//! OAuth for MCP servers, on rmcp's `auth` features: a call carries its tenant's access
//! token, obtained when the server asks for one.
//!
//! The flow is the MCP specification's, reactive: a request goes out with the tenant's
//! current token (or none, when none is known yet); a server that wants another answers
//! 401 with a `WWW-Authenticate` challenge, which the transport records on the error
//! (`CallError::challenge`); then the grant is run (discovery from the challenge, the
//! issuer pin, then client credentials, a refresh or the authorization code flow, or an
//! enterprise exchange) and the whole operation runs once more with the new token. A 401
//! means the server refused the request before running it (`not_sent`), so a
//! `tools/call` sent again after one is still sent at most once; the `tools/call`
//! itself goes again at most once (a second refusal of it ends the call). A 403
//! `insufficient_scope` steps up where the grant allows it. At most
//! [`MAX_AUTHORIZATIONS`] authorizations per operation (the handshake's included).
//!
//! What rmcp lacks, and is wrapped here: rmcp's constructors that build their own HTTP
//! client panic in this build (no process-wide TLS provider), so every OAuth request
//! goes through [`OAuthHttp`] over the pooled client; rmcp's stores have no key, so
//! [`adapter::KeyedStore`] carries one; rmcp's step-up counter resets after every
//! exchange, so the bound is counted per operation here; rmcp logs the authorization
//! code at DEBUG, so its auth calls run with tracing silenced ([`silenced`]).

#[cfg(feature = "oauth")]
mod adapter;
#[cfg(feature = "oauth")]
mod answer;
#[cfg(feature = "oauth")]
mod engine;
#[cfg(not(feature = "oauth"))]
#[path = "engine_off.rs"]
mod engine;
#[cfg(feature = "oauth")]
mod errors;
#[cfg(feature = "oauth")]
mod flow;
#[cfg(feature = "oauth")]
mod http;
mod refreshes;
mod store;

use std::{fmt, sync::Arc, time::SystemTime};

#[cfg(feature = "oauth")]
use self::engine::silenced;
pub use self::store::{
    CredentialStore, DEFAULT_LEASE_TTL, Expected, FileCredentialStore, GrantKey, GrantVersion,
    KeyRing, KeyRingError, Lease, LeaseHolder, MAX_TOKEN_LIFETIME, MemoryCredentialStore,
    StoreError, StoreErrorKind, StoredGrant, Swap, VersionedGrant,
};
#[cfg(feature = "postgres")]
pub use self::store::{PostgresCredentialStore, PostgresStoreOptions};
pub(crate) use self::{
    engine::{Auth, Credentials, Run},
    refreshes::Refreshes,
};
use crate::secret::Secret;

/// Authorizations (a first one, then step-ups or re-authorizations) one operation may
/// run, at most: past it, the operation fails.
pub const MAX_AUTHORIZATIONS: usize = 3;

/// The error an [`Authorizer`] or an [`IdentityTokenProvider`] returns. Its text is never
/// shown: the call fails with a fixed phrase.
pub type HostAuthError = Box<dyn std::error::Error + Send + Sync>;

/// The interactive step of the authorization code flow, for one tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorizationPrompt {
    /// The tenant the grant is for.
    pub tenant: String,
    /// The MCP server the grant is for.
    pub resource: String,
    /// Where to send the user (it carries the PKCE challenge and `state`).
    pub authorization_url: String,
    /// Where the authorization server will send the user back.
    pub redirect_uri: String,
}

/// What a host implements to run the interactive step of the authorization code flow:
/// send the user to the authorization URL and return the URL the authorization server
/// redirected back to (with `code`, `state` and `iss`). The client checks `state` and
/// `iss` and exchanges the code.
#[async_trait::async_trait]
pub trait Authorizer: Send + Sync + fmt::Debug {
    /// The redirect URI this authorizer receives, for grants that name none.
    fn redirect_uri(&self) -> Option<String> {
        None
    }

    /// Has the user authorize; returns the full redirect URL.
    ///
    /// # Errors
    /// Whatever error the host has when the user did not authorize (gave up, timed out,
    /// cannot be reached). Its text is not shown: the operation fails with
    /// `authorization_failed` ("the authorizer did not complete the authorization").
    async fn authorize(&self, prompt: &AuthorizationPrompt) -> Result<String, HostAuthError>;
}

/// What a host implements for enterprise-managed authorization: the tenant's identity
/// token (an OpenID Connect ID token from the identity provider `idp_issuer`), or `None`
/// when it has none.
#[async_trait::async_trait]
pub trait IdentityTokenProvider: Send + Sync + fmt::Debug {
    /// The tenant's identity token.
    ///
    /// # Errors
    /// Whatever error the host has when it cannot tell (its identity provider down, say).
    /// Its text is not shown: the call fails with `authorization_failed`. A tenant that
    /// simply has no identity token is `Ok(None)`, and the call fails with
    /// `authorization_required`.
    async fn identity_token(
        &self,
        tenant: &str,
        idp_issuer: &str,
    ) -> Result<Option<Secret>, HostAuthError>;
}

/// Whether a tenant can call a server with a grant.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GrantStatus {
    /// Tokens are obtained at call time (client credentials, enterprise): nothing to store.
    AtCallTime,
    /// A delegated grant is stored.
    Stored(StoredGrantSummary),
    /// No delegated grant is stored: the tenant must authorize (`mcp-tools login`).
    Missing,
}

/// A stored delegated grant, without its secrets.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StoredGrantSummary {
    /// Where it is stored.
    pub key: GrantKey,
    /// The scopes granted.
    pub scopes: Vec<String>,
    /// When its access token expires, if known.
    pub expires_at: Option<SystemTime>,
    /// Whether it has a refresh token.
    pub refreshable: bool,
    /// Whether it can be used now (an unexpired access token, or a refresh token).
    pub usable: bool,
    /// Whether the authorization server refused its refresh token: the tenant must log
    /// in again.
    pub revoked: bool,
}

/// The client's authorization settings.
#[derive(Debug, Clone, Default)]
pub(crate) struct AuthOptions {
    pub(crate) store: Option<Arc<dyn CredentialStore>>,
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    pub(crate) identity: Option<Arc<dyn IdentityTokenProvider>>,
}
