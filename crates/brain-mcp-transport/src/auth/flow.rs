//! One grant's state (per tenant, server and grant) and the ways a token is obtained for
//! it, all on rmcp's `AuthorizationManager`: discovery from the server's challenge, the
//! issuer pin, client credentials, the authorization code flow, refresh, step-up and
//! enterprise-managed exchanges.
//!
//! The token in use is cached in memory (`Entry::token`, a short synchronous lock): a
//! call reads it and goes. Everything that talks to an authorization server runs under
//! the entry's `flight` lock, one at a time per entry, and re-reads the cache first: a
//! hundred calls that find the token about to expire cause one refresh.
//!
//! DPoP (RFC 9449), when the binding asks for it and the authorization server offers
//! ES256: a delegated grant gets a key pair of its own when it is made (stored with it, so
//! that a refresh from any process proves the same key); a machine grant (client
//! credentials) one per entry, in memory like its tokens. Each operation that requests a
//! token puts the grant's key in the entry's [`DpopSlot`] first, for its OAuth client to
//! prove; a token whose type is DPoP carries its key to every request that presents it.

use std::{
    fmt,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use oauth2::TokenResponse;
#[cfg(feature = "oauth-jwt")]
use rmcp::transport::auth::JwtSigningAlgorithm;
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationMetadataSource,
    AuthorizationRequest, AuthorizationSession, ClientCredentialsConfig, OAuthClientConfig,
    OAuthHttpClient, OAuthTokenResponse, WWWAuthenticateParams,
    enterprise::{EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest},
};
use serde_json::json;
use tokio::time::Instant;

use super::{
    AuthorizationPrompt, Authorizer, IdentityTokenProvider, Refreshes,
    adapter::{self, KeyedStore, Saved},
    answer::Refused,
    errors::{failed, from_auth, from_discovery, from_ema, required, token_refused},
    http::{DpopSlot, Issued, OAuthHttp, OAuthHttpError},
    silenced,
    store::{
        CredentialStore, GrantKey, Lease, LeaseTerms, MAX_TOKEN_LIFETIME, StoreError,
        StoreErrorKind, StoredGrant, VersionedGrant,
    },
};
use crate::{
    dpop::{self, Dpop, DpopKey, Nonces},
    endpoint::redacted_url,
    error::{CallError, Challenge},
    grant::{
        AuthorizationCodeGrant, ClientAuthentication, ClientCredentialsGrant, DEFAULT_REDIRECT_URI,
        EnterpriseGrant, Grant, GrantExt, WorkloadIdentityGrant,
    },
    secret::{Secret, one_line},
    telemetry::{Metrics, TokenRequest},
};

/// A token is renewed when less than this (or half its lifetime, if shorter) is left.
const RENEW_BEFORE: Duration = Duration::from_secs(30);

/// What the flows need from the client.
pub(super) struct Ctx<'a> {
    pub(super) http: &'a Arc<OAuthHttp>,
    pub(super) store: &'a Arc<dyn CredentialStore>,
    /// Who runs the interactive step of the authorization code flow, if anyone.
    pub(super) authorizer: Option<&'a Arc<dyn Authorizer>>,
    pub(super) identity: Option<&'a Arc<dyn IdentityTokenProvider>>,
    pub(super) client_name: &'a str,
    /// Where a refresh runs: on its own, so that a call that stops waiting for it cannot
    /// lose the refresh token it rotates, and a process waits for it before it ends.
    pub(super) refreshes: &'a Arc<Refreshes>,
    /// Counts token requests.
    pub(super) metrics: &'a Metrics,
}

/// The error for a credential store that failed: `credential_store`, not sent, with the
/// store's message (it names the file or key, and holds no secret).
/// A grant the store cannot read is marked (`CallError::unreadable_grant`), so that the
/// message can name the command that repairs it: this crate does not know it.
pub(super) fn store_failed(error: &StoreError) -> CallError {
    // A store that is down may be back; a record it cannot read stays so until someone
    // logs out or in.
    let may_pass = error.kind() != StoreErrorKind::Corrupt;
    let detail = match error.kind() {
        StoreErrorKind::Unavailable => format!("the credential store is unavailable: {error}"),
        StoreErrorKind::Corrupt => {
            format!("the credential store holds a grant it cannot read: {error}")
        }
        _ => format!("the credential store failed: {error}"),
    };
    let failed = CallError::new(
        crate::error::ErrorKind::CredentialStore,
        crate::error::Delivery::NotSent,
        detail,
    )
    .retryable_if(may_pass);
    if error.kind() == StoreErrorKind::Corrupt {
        failed.unreadable()
    } else {
        failed
    }
}

/// Waits for the lease on a grant, polling with backoff (5 ms, doubling to 200 ms), until
/// it is free; the operation's deadline bounds the wait. `wait == false`: `None` at once
/// when another holder has it.
async fn take_lease(
    store: &Arc<dyn CredentialStore>,
    key: &GrantKey,
    wait: bool,
) -> Result<Option<Lease>, CallError> {
    let ttl = store.lease_ttl();
    let mut pause = Duration::from_millis(5);
    loop {
        match store
            .try_lease(key, ttl)
            .await
            .map_err(|error| store_failed(&error))?
        {
            Some(lease) => return Ok(Some(lease)),
            None if !wait => return Ok(None),
            None => {
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(200));
            }
        }
    }
}

/// An access token in use, with what it takes to renew it and the secrets to hide.
#[derive(Clone)]
pub(crate) struct Token {
    pub(crate) bearer: Secret,
    refresh: Option<Secret>,
    /// From then on the token is renewed before use.
    renew_at: Option<Instant>,
    /// From then on it is not sent.
    expires_at: Option<Instant>,
    scopes: Vec<String>,
    /// The grant's secrets that must never come back from the server (the refresh token
    /// among them).
    pub(crate) hidden: Vec<Secret>,
    /// The key the token is bound to (a DPoP token), with which every request that
    /// presents it proves possession; `None`: a Bearer token.
    pub(crate) dpop: Option<Dpop>,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("bearer", &self.bearer)
            .field("refreshable", &self.refresh.is_some())
            .field("expires_at", &self.expires_at)
            .field("scopes", &self.scopes)
            .field("dpop", &self.dpop)
            .finish_non_exhaustive()
    }
}

/// Where a workload identity token may go: a token endpoint over https (plain http only
/// when it and the MCP server are both on loopback, as rmcp allows for client
/// credentials), and, when the token names its audience, the authorization server it
/// names (its issuer or token endpoint): a server cannot collect a workload's token for
/// an authorization server of its own choosing.
fn check_workload_destination(
    assertion: &str,
    token_endpoint: &str,
    issuer: Option<&str>,
    resource: &str,
) -> Result<(), CallError> {
    let loopback = |url: &str| {
        reqwest::Url::parse(url)
            .ok()
            .is_some_and(|url| matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]")))
    };
    let scheme_ok = match reqwest::Url::parse(token_endpoint) {
        Ok(url) if url.scheme() == "https" => true,
        Ok(url) if url.scheme() == "http" => loopback(token_endpoint) && loopback(resource),
        _ => false,
    };
    if !scheme_ok {
        return Err(failed(
            "the authorization server's token endpoint is not https: the workload identity \
             token is not sent",
        ));
    }
    let audiences: Vec<String> = match crate::grant::jwt_claims(assertion)
        .as_ref()
        .and_then(|claims| claims.get("aud"))
    {
        Some(serde_json::Value::String(audience)) => vec![audience.clone()],
        Some(serde_json::Value::Array(audiences)) => audiences
            .iter()
            .filter_map(serde_json::Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => return Ok(()),
    };
    let same = |a: &str, b: &str| a.trim_end_matches('/') == b.trim_end_matches('/');
    let meant = audiences.iter().any(|audience| {
        same(audience, token_endpoint) || issuer.is_some_and(|issuer| same(audience, issuer))
    });
    if meant {
        Ok(())
    } else {
        Err(failed(
            "the workload identity token is for another authorization server (its audience \
             names neither the server's issuer nor its token endpoint): it is not sent",
        ))
    }
}

/// The scopes a grant with no user asks for: the configured ones, else the server's
/// (challenge, then resource metadata) without `offline_access` (such grants get no
/// refresh tokens), and `more` on top (a step-up).
async fn machine_scopes(
    manager: &AuthorizationManager,
    configured: &[String],
    more: Vec<String>,
) -> Vec<String> {
    let mut scopes = if configured.is_empty() {
        let mut selected = manager.select_initial_scopes(&[]).await;
        selected.retain(|scope| scope != "offline_access");
        selected
    } else {
        configured.to_vec()
    };
    union(&mut scopes, more);
    scopes
}

/// The grant type of the JWT bearer grant (RFC 7523).
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// A token endpoint's answer to the JWT bearer grant (RFC 6749 §5.1); its `token_type`
/// was checked by the OAuth client (see [`super::answer::token_scheme`]).
#[derive(serde::Deserialize)]
struct JwtBearerAnswer {
    access_token: String,
    /// A number, or (some servers) a string of one.
    expires_in: Option<serde_json::Value>,
    scope: Option<String>,
    refresh_token: Option<String>,
}

impl JwtBearerAnswer {
    fn lifetime(&self) -> Option<Duration> {
        match self.expires_in.as_ref()? {
            serde_json::Value::Number(seconds) => seconds.as_u64(),
            serde_json::Value::String(seconds) => seconds.trim().parse().ok(),
            _ => None,
        }
        .map(Duration::from_secs)
    }
}

impl Token {
    /// A token issued now for `lifetime`.
    fn new(
        bearer: Secret,
        refresh: Option<Secret>,
        lifetime: Option<Duration>,
        scopes: Vec<String>,
        hidden: Vec<Secret>,
    ) -> Result<Self, CallError> {
        Self::aged(
            bearer,
            refresh,
            lifetime.map(|lifetime| (lifetime, lifetime)),
            scopes,
            hidden,
        )
    }

    /// A token with `(lifetime, left)` of its lifetime (both cut to
    /// [`MAX_TOKEN_LIFETIME`]: a server's number meets the clock bounded): renewed when
    /// less than `min(RENEW_BEFORE, lifetime / 2)` is left.
    fn aged(
        bearer: Secret,
        refresh: Option<Secret>,
        lifetime: Option<(Duration, Duration)>,
        scopes: Vec<String>,
        mut hidden: Vec<Secret>,
    ) -> Result<Self, CallError> {
        if !bearer.is_header_safe() {
            return Err(failed(
                "the authorization server issued an access token that cannot be sent in an \
                 HTTP header",
            ));
        }
        hidden.extend(refresh.iter().cloned());
        let now = Instant::now();
        let at = |after: Duration| now.checked_add(after).unwrap_or(now);
        let left = lifetime.map(|(lifetime, left)| {
            (
                lifetime.min(MAX_TOKEN_LIFETIME),
                left.min(lifetime).min(MAX_TOKEN_LIFETIME),
            )
        });
        Ok(Self {
            bearer,
            refresh,
            renew_at: left
                .map(|(lifetime, left)| at(left.saturating_sub(RENEW_BEFORE.min(lifetime / 2)))),
            expires_at: left.map(|(_, left)| at(left)),
            scopes,
            hidden,
            dpop: None,
        })
    }

    /// The same token, bound to a DPoP key.
    fn bound(mut self, dpop: Option<Dpop>) -> Self {
        self.dpop = dpop;
        self
    }

    /// The token of a token endpoint's answer to a request that proved `dpop` (if any):
    /// bound to it when its type is DPoP (a Bearer answer bound nothing).
    fn from_response(
        response: &OAuthTokenResponse,
        scopes: Vec<String>,
        hidden: Vec<Secret>,
        dpop: Option<&Dpop>,
    ) -> Result<Self, CallError> {
        let bound = super::answer::token_scheme(response.token_type().as_ref())
            == Some(super::answer::TokenScheme::Dpop);
        let granted = response
            .scopes()
            .map(|granted| granted.iter().map(|scope| scope.to_string()).collect())
            .unwrap_or(scopes);
        Self::new(
            Secret::new(response.access_token().secret().clone()),
            response
                .refresh_token()
                .map(|token| Secret::new(token.secret().clone())),
            response.expires_in(),
            granted,
            hidden,
        )
        .map(|token| token.bound(dpop.filter(|_| bound).cloned()))
    }

    /// A stored grant's token (bound to the grant's DPoP key, if it has one); `None` when
    /// it has no access token.
    fn from_stored(
        grant: &StoredGrant,
        hidden: Vec<Secret>,
        nonces: &Arc<Nonces>,
    ) -> Option<Result<Self, CallError>> {
        let bearer = grant.access_token.clone()?;
        let dpop = match stored_dpop(grant, nonces) {
            Ok(dpop) => dpop,
            Err(error) => return Some(Err(error)),
        };
        let left = grant.lifetime_left(std::time::SystemTime::now());
        let lifetime = left.map(|left| (grant.lifetime().unwrap_or(left), left));
        let mut hidden = hidden;
        hidden.extend(grant.client_secret.iter().cloned());
        Some(
            Self::aged(
                bearer,
                grant.refresh_token.clone(),
                lifetime,
                grant.scopes.clone(),
                hidden,
            )
            .map(|token| token.bound(dpop)),
        )
    }

    /// Good for use without renewing.
    pub(super) fn is_fresh(&self, now: Instant) -> bool {
        self.renew_at.is_none_or(|at| now < at)
    }

    /// Not expired (it may still be used when renewing fails).
    fn is_unexpired(&self, now: Instant) -> bool {
        self.expires_at.is_none_or(|at| now < at)
    }
}

/// The DPoP binding of a stored grant: its key, when it has one. A grant whose tokens name
/// a key (its thumbprint) that the store no longer holds, or holds another key, or one
/// that cannot be read, cannot present them: the tenant must log in again.
fn stored_dpop(grant: &StoredGrant, nonces: &Arc<Nonces>) -> Result<Option<Dpop>, CallError> {
    let lost = || {
        required(
            "the tenant's grant is bound to a DPoP key that the credential store no longer \
             holds (or holds another key, or one it cannot read), so its tokens cannot be \
             used; the tenant must log in again",
        )
    };
    let Some(stored) = &grant.dpop_key else {
        return match grant.dpop_thumbprint {
            Some(_) => Err(lost()),
            None => Ok(None),
        };
    };
    let key = DpopKey::from_stored(stored).map_err(|_| lost())?;
    if grant
        .dpop_thumbprint
        .as_deref()
        .is_some_and(|thumbprint| thumbprint != key.thumbprint())
    {
        return Err(lost());
    }
    Ok(Some(Dpop::new(Arc::new(key), Arc::clone(nonces))))
}

/// Which DPoP key a token request proves (see [`Entry::grant_dpop`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    /// A new one: a new delegated grant.
    New,
    /// The entry's own: a machine grant's.
    Entry,
}

/// The state of one grant: one tenant, one server, one grant configuration.
pub(super) struct Entry {
    tenant: String,
    url: String,
    /// The grant as the latest call gave it (its secrets are read at call time).
    grant: Mutex<Grant>,
    /// The token in use.
    token: Mutex<Option<Token>>,
    /// Tokens this grant replaced, and every token its authorization servers issued for
    /// it (some never become the token in use): still secrets, so still hidden.
    retired: Arc<Issued>,
    /// Everything that talks to an authorization server, one at a time.
    flight: tokio::sync::Mutex<Flight>,
    /// The DPoP key this grant's next token request proves, set before each (read by its
    /// OAuth client).
    dpop: Arc<DpopSlot>,
    /// A machine grant's DPoP key (client credentials): one per entry, in memory like its
    /// tokens.
    machine_key: Mutex<Option<Arc<DpopKey>>>,
    /// The client's DPoP nonces.
    nonces: Arc<Nonces>,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("tenant", &self.tenant)
            .field("has_token", &lock(&self.token).is_some())
            .finish_non_exhaustive()
    }
}

/// What renewing needs between calls: rmcp's manager (its metadata, client, granted
/// scopes and authorization states: a step-up must use the manager that made the grant).
#[derive(Default)]
struct Flight {
    manager: Option<AuthorizationManager>,
    /// The metadata as discovered (before any narrowing for a token request).
    metadata: Option<AuthorizationMetadata>,
    /// Whether that metadata was published by the authorization server (RFC 8414 or
    /// OpenID Connect), not synthesized from the 2025-03-26 default endpoints.
    published: bool,
    /// The store key of a delegated grant.
    key: Option<GrantKey>,
    /// Whether the store was read for a delegated grant.
    loaded: bool,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The union of two scope lists, first-seen order.
pub(super) fn union(scopes: &mut Vec<String>, more: impl IntoIterator<Item = String>) {
    for scope in more {
        if !scope.is_empty() && !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
}

/// The scopes a challenge names (`scope="a b"`), and whether it is `insufficient_scope`.
pub(super) fn challenged(challenge: &Challenge, url: &str) -> (Vec<String>, bool) {
    let (Some(header), Ok(base)) = (&challenge.header, reqwest::Url::parse(url)) else {
        return (Vec::new(), false);
    };
    let params = WWWAuthenticateParams::parse(header, &base);
    let scopes = params
        .scope
        .as_deref()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    (scopes, params.is_insufficient_scope())
}

impl Entry {
    pub(super) fn new(tenant: &str, url: &str, grant: &Grant, nonces: Arc<Nonces>) -> Self {
        Self {
            tenant: tenant.to_owned(),
            url: url.to_owned(),
            grant: Mutex::new(grant.clone()),
            token: Mutex::new(None),
            retired: Arc::default(),
            flight: tokio::sync::Mutex::new(Flight::default()),
            dpop: Arc::default(),
            machine_key: Mutex::new(None),
            nonces,
        }
    }

    /// Whether this grant's tokens are to be DPoP-bound: the binding asks, and the
    /// authorization server (as discovered) offers ES256.
    fn wants_dpop(&self, metadata: Option<&AuthorizationMetadata>) -> bool {
        self.grant().dpop()
            && metadata.is_some_and(|metadata| dpop::offered(&metadata.additional_fields))
    }

    /// The DPoP binding of the grant a token request makes, when wanted: a new key for a
    /// new delegated grant (`Key::New`); a machine grant's (client credentials) is the
    /// entry's, made on first use (`Key::Entry`).
    fn grant_dpop(
        &self,
        metadata: Option<&AuthorizationMetadata>,
        key: Key,
    ) -> Result<Option<Dpop>, CallError> {
        if !self.wants_dpop(metadata) {
            return Ok(None);
        }
        let generate = || {
            DpopKey::generate()
                .map(Arc::new)
                .map_err(|error| failed(error.to_string()))
        };
        let key = match key {
            Key::New => generate()?,
            Key::Entry => {
                let mut held = lock(&self.machine_key);
                match &*held {
                    Some(key) => Arc::clone(key),
                    None => Arc::clone(held.insert(generate()?)),
                }
            }
        };
        Ok(Some(Dpop::new(key, Arc::clone(&self.nonces))))
    }

    /// Takes the call's grant (new secrets, after a rotation).
    pub(super) fn update_grant(&self, grant: &Grant) {
        let mut current = lock(&self.grant);
        if *current != *grant {
            *current = grant.clone();
        }
    }

    fn grant(&self) -> Grant {
        lock(&self.grant).clone()
    }

    /// The error for an rmcp failure while talking to an authorization server: why this
    /// entry's OAuth client refused a request or an answer, when it did (rmcp then knows
    /// only that the request failed), else rmcp's error as `map` reads it.
    fn refused_or(&self, map: fn(&AuthError) -> CallError, error: &AuthError) -> CallError {
        self.retired
            .take_refused()
            .map_or_else(|| map(error), Refused::error)
    }

    /// [`Self::refused_or`] with rmcp's errors read the usual way.
    fn auth_error(&self, error: &AuthError) -> CallError {
        self.refused_or(from_auth, error)
    }

    /// Starts an operation that talks to an authorization server: a refusal recorded
    /// before it (by a request whose failure was reported otherwise) is not its own.
    fn start_operation(&self) {
        let _ = self.retired.take_refused();
    }

    /// Makes `token` the one in use. The one it replaces (and its refresh token) stays
    /// hidden, and `token` hides every secret this grant keeps hidden (see [`Issued`]).
    fn set(&self, token: &mut Token) {
        self.retire();
        token.hidden.extend(self.retired.secrets());
        *lock(&self.token) = Some(token.clone());
    }

    /// Drops the token in use (the grant is gone); it stays hidden, as a replaced one.
    fn forget(&self) {
        self.retire();
    }

    /// Takes the token in use out, and keeps it and its refresh token hidden.
    fn retire(&self) {
        if let Some(old) = lock(&self.token).take() {
            self.retired.keep(old.bearer, old.expires_at);
            if let Some(refresh) = old.refresh {
                self.retired.keep(refresh, None);
            }
        }
    }

    /// The cached token, when it needs no renewing: the per-call path.
    pub(super) fn fresh(&self) -> Option<Token> {
        lock(&self.token)
            .as_ref()
            .filter(|token| token.is_fresh(Instant::now()))
            .cloned()
    }

    /// The token for the next request: the cached one, or one renewed now (once, however
    /// many calls ask at the same time, in this process and, through the store's lease,
    /// in every process that shares the grant). `None`: no token is known yet; the
    /// request goes without, and the server's challenge says what it wants.
    pub(super) async fn current(&self, ctx: &Ctx<'_>) -> Result<Option<Token>, CallError> {
        if let Some(token) = self.fresh() {
            return Ok(Some(token));
        }
        let mut flight = self.flight.lock().await;
        if let Some(token) = self.fresh() {
            return Ok(Some(token));
        }
        let delegated = matches!(self.grant(), Grant::OAuth(_));
        if delegated && !flight.loaded {
            // First use: the stored grant's token becomes the one in use, even when it is
            // due for renewal (while it has not expired, it is what a failed renewal
            // falls back to).
            flight.loaded = true;
            if let Some((key, stored)) = self.stored(ctx).await? {
                flight.key = Some(key);
                let token =
                    Token::from_stored(&stored.grant, self.grant().owned_secrets(), &self.nonces);
                if let Some(token) = token {
                    let mut token = match token {
                        Ok(token) => token,
                        // A grant that lost its DPoP key: with someone to authorize, the
                        // request goes without a token and the challenge leads to a new
                        // login; without, the call says why.
                        Err(error)
                            if ctx.authorizer.is_some()
                                && error.kind()
                                    == crate::error::ErrorKind::AuthorizationRequired =>
                        {
                            return Ok(None);
                        }
                        Err(error) => return Err(error),
                    };
                    self.set(&mut token);
                    if token.is_fresh(Instant::now()) {
                        return Ok(Some(token));
                    }
                }
            }
        }
        let stale = lock(&self.token).clone();
        let now = Instant::now();
        let renewed = match self.grant() {
            Grant::OAuth(_)
                if flight.key.is_some()
                    && stale.as_ref().is_none_or(|token| token.refresh.is_some()) =>
            {
                // While the old token works, another process's refresh is not waited for.
                let wait = stale.as_ref().is_none_or(|token| !token.is_unexpired(now));
                self.refresh(ctx, &mut flight, None, stale.as_ref(), wait)
                    .await
            }
            // Nothing to refresh with: used until it expires, then the server says.
            Grant::OAuth(_) => Ok(None),
            _ if stale.is_some() && flight.manager.is_some() => self
                .obtain(ctx, &mut flight, None, Vec::new())
                .await
                .map(Some),
            _ => Ok(None),
        };
        let now = Instant::now();
        match renewed {
            Ok(Some(mut token)) => {
                self.set(&mut token);
                Ok(Some(token))
            }
            Ok(None) => Ok(stale.filter(|token| token.is_unexpired(now))),
            // The old token still works (a passing failure of the authorization server or
            // of the store): use it, and renew on a later call.
            Err(error) if stale.as_ref().is_some_and(|token| token.is_unexpired(now)) => {
                tracing::debug!(
                    tenant = %self.tenant,
                    error = %error,
                    "renewing the access token failed; the current one is still valid"
                );
                Ok(stale)
            }
            Err(error) => {
                if error.kind() == crate::error::ErrorKind::AuthorizationRequired {
                    self.forget();
                }
                Err(error)
            }
        }
    }

    /// The server refused the request that carried `sent` (or none) with `challenge`:
    /// obtains a token it should accept. Another call that met the same refusal first may
    /// have done so already; then its token is used. `force`: authorize interactively
    /// whatever is stored (a login).
    pub(super) async fn react(
        &self,
        ctx: &Ctx<'_>,
        challenge: &Challenge,
        sent: Option<&Token>,
        force: bool,
    ) -> Result<Token, CallError> {
        let mut flight = self.flight.lock().await;
        let current = lock(&self.token).clone();
        if let Some(current) = current.filter(|current| {
            !force
                && sent.is_none_or(|sent| sent.bearer != current.bearer)
                && current.is_unexpired(Instant::now())
        }) {
            return Ok(current);
        }
        let (scopes, insufficient_scope) = challenged(challenge, &self.url);
        let header = challenge.header.as_deref();
        let mut outcome = if challenge.status == 403 && insufficient_scope {
            self.step_up(ctx, &mut flight, header, scopes, sent).await
        } else {
            self.reauthorize(ctx, &mut flight, header, sent, force)
                .await
        };
        match &mut outcome {
            Ok(token) => {
                tracing::debug!(tenant = %self.tenant, "obtained an access token");
                self.set(token);
            }
            Err(error) if error.kind() == crate::error::ErrorKind::AuthorizationRequired => {
                self.forget();
            }
            Err(_) => {}
        }
        outcome
    }

    /// A fresh manager, its metadata discovered from the challenge (or the well-known
    /// locations), and the issuer pin enforced before any credential can go anywhere.
    /// Returns the issuer (the store key's).
    async fn discover(
        &self,
        ctx: &Ctx<'_>,
        flight: &mut Flight,
        challenge: Option<&str>,
    ) -> Result<String, CallError> {
        self.start_operation();
        flight.manager = None;
        flight.metadata = None;
        let http: Arc<dyn OAuthHttpClient> = Arc::new(
            ctx.http
                .noting(Arc::clone(&self.retired))
                .proving(Arc::clone(&self.dpop)),
        );
        let mut manager = silenced(AuthorizationManager::new_with_oauth_http_client(
            self.url.as_str(),
            http,
        ))
        .await
        .map_err(|error| from_auth(&error))?;
        let resolution = silenced(manager.resolve_metadata_from_challenge(challenge))
            .await
            .map_err(|error| self.refused_or(from_discovery, &error))?;
        let metadata = resolution.metadata;
        flight.published = resolution.source != AuthorizationMetadataSource::LegacyEndpointFallback;
        let grant = self.grant();
        // A trailing slash is no difference (rmcp's own issuer check ignores it too).
        let same = |a: &str, b: &str| a.trim_end_matches('/') == b.trim_end_matches('/');
        if let Some(pinned) = grant.issuer()
            && !metadata
                .issuer
                .as_deref()
                .is_some_and(|issuer| same(issuer, pinned))
        {
            // What the server named is not repeated: it is the server's text.
            let found = if metadata.issuer.is_some() {
                "names another issuer"
            } else {
                "names no issuer"
            };
            return Err(failed(format!(
                "the server's authorization server {found}, not the pinned issuer {}",
                one_line(&redacted_url(pinned), 120)
            )));
        }
        // Without an issuer (the 2025-03-26 default endpoints), the token endpoint's
        // origin stands for it.
        let issuer = metadata.issuer.clone().unwrap_or_else(|| {
            reqwest::Url::parse(&metadata.token_endpoint)
                .map(|url| url.origin().ascii_serialization())
                .unwrap_or_default()
        });
        manager.set_metadata(metadata.clone());
        flight.manager = Some(manager);
        flight.metadata = Some(metadata);
        Ok(issuer)
    }

    /// A 401: a new token, by the grant's own means.
    async fn reauthorize(
        &self,
        ctx: &Ctx<'_>,
        flight: &mut Flight,
        challenge: Option<&str>,
        sent: Option<&Token>,
        force: bool,
    ) -> Result<Token, CallError> {
        match self.grant() {
            Grant::OAuth(grant) => {
                self.reauthorize_delegated(ctx, flight, challenge, sent, force, &grant)
                    .await
            }
            _ => {
                // Discovered again: the server may have moved to another authorization
                // server since (the pin still holds).
                self.discover(ctx, flight, challenge).await?;
                self.obtain(ctx, flight, None, Vec::new()).await
            }
        }
    }

    /// A 403 `insufficient_scope`: a token with the scopes held so far and the ones the
    /// server asks for (SEP-2350).
    async fn step_up(
        &self,
        ctx: &Ctx<'_>,
        flight: &mut Flight,
        challenge: Option<&str>,
        asked: Vec<String>,
        sent: Option<&Token>,
    ) -> Result<Token, CallError> {
        let mut scopes = sent.map(|token| token.scopes.clone()).unwrap_or_default();
        union(&mut scopes, asked.iter().cloned());
        match self.grant() {
            Grant::OAuth(grant) => {
                let Some(authorizer) = ctx.authorizer else {
                    return Err(required(format!(
                        "the server needs more scope ({}) than the tenant granted",
                        one_line(&asked.join(" "), 200)
                    )));
                };
                self.step_up_delegated(ctx, flight, challenge, scopes, authorizer, &grant)
                    .await
            }
            _ => {
                if flight.manager.is_none() {
                    self.discover(ctx, flight, challenge).await?;
                }
                self.obtain(ctx, flight, None, scopes).await
            }
        }
    }

    /// A token for a client credentials or enterprise grant (discovered first if need be),
    /// with `more` scopes on top of the configured (or the server's) ones.
    async fn obtain(
        &self,
        ctx: &Ctx<'_>,
        flight: &mut Flight,
        challenge: Option<&str>,
        more: Vec<String>,
    ) -> Result<Token, CallError> {
        self.start_operation();
        if flight.manager.is_none() {
            self.discover(ctx, flight, challenge).await?;
        }
        let obtained = match self.grant() {
            Grant::ClientCredentials(grant) => self.client_credentials(flight, &grant, more).await,
            Grant::Enterprise(grant) => self.enterprise(ctx, flight, &grant, more).await,
            Grant::WorkloadIdentity(grant) => {
                self.workload_identity(ctx, flight, &grant, more).await
            }
            _ => return Err(failed("the grant cannot be obtained without a user")),
        };
        ctx.metrics.token(TokenRequest::Obtain, obtained.is_ok());
        obtained
    }

    async fn client_credentials(
        &self,
        flight: &mut Flight,
        grant: &ClientCredentialsGrant,
        more: Vec<String>,
    ) -> Result<Token, CallError> {
        let (Some(manager), Some(metadata)) = (flight.manager.as_mut(), flight.metadata.clone())
        else {
            return Err(failed("the authorization metadata is unknown"));
        };
        let scopes = machine_scopes(manager, &grant.scopes, more).await;
        let resource = Some(self.url.clone());
        let dpop = self.grant_dpop(Some(&metadata), Key::Entry)?;
        self.dpop.set(dpop.clone());
        let config = match &grant.authentication {
            ClientAuthentication::Secret { secret, method } => {
                let mut metadata = metadata;
                if let Some(method) = method {
                    // rmcp picks the method from the metadata: show it only ours, once we
                    // know the server offers it.
                    let key = "token_endpoint_auth_methods_supported";
                    let offered = metadata
                        .additional_fields
                        .get(key)
                        .and_then(|methods| methods.as_array());
                    if offered.is_some_and(|offered| {
                        !offered.iter().any(|m| m.as_str() == Some(method.as_str()))
                    }) {
                        return Err(failed(format!(
                            "the authorization server does not offer {}",
                            method.as_str()
                        )));
                    }
                    metadata
                        .additional_fields
                        .insert(key.to_owned(), json!([method.as_str()]));
                }
                manager.set_metadata(metadata);
                ClientCredentialsConfig::ClientSecret {
                    client_id: grant.client_id.clone(),
                    client_secret: secret.expose().to_owned(),
                    scopes: scopes.clone(),
                    resource,
                }
            }
            #[cfg(feature = "oauth-jwt")]
            ClientAuthentication::PrivateKeyJwt { key, algorithm } => {
                manager.set_metadata(metadata);
                ClientCredentialsConfig::PrivateKeyJwt {
                    client_id: grant.client_id.clone(),
                    signing_key: key.expose().as_bytes().to_vec(),
                    signing_algorithm: jwt_algorithm(*algorithm),
                    token_endpoint_audience: None,
                    scopes: scopes.clone(),
                    resource,
                }
            }
            // `private_key_jwt` without the `oauth-jwt` feature: refused before the call
            // gets here (`crate::features`), with the feature's name.
            _ => {
                return Err(failed(
                    "this build does not support the binding's client authentication",
                ));
            }
        };
        manager
            .validate_client_credentials_metadata(&config)
            .map_err(|error| from_auth(&error))?;
        manager
            .configure_client_credentials(&config)
            .map_err(|error| from_auth(&error))?;
        let response = exchange_client_credentials(flight, config)
            .await?
            .map_err(|error| self.auth_error(&error))?;
        Token::from_response(
            &response,
            scopes,
            Grant::ClientCredentials(grant.clone()).owned_secrets(),
            dpop.as_ref(),
        )
    }

    async fn enterprise(
        &self,
        ctx: &Ctx<'_>,
        flight: &mut Flight,
        grant: &EnterpriseGrant,
        more: Vec<String>,
    ) -> Result<Token, CallError> {
        let Some(metadata) = flight.metadata.clone() else {
            return Err(failed("the authorization metadata is unknown"));
        };
        self.dpop.set(None);
        let Some(issuer) = metadata.issuer.clone() else {
            return Err(failed(
                "the server's authorization server names no issuer, which enterprise-managed \
                 authorization needs",
            ));
        };
        let Some(provider) = ctx.identity else {
            return Err(failed(
                "this host supplies no identity tokens for enterprise-managed authorization",
            ));
        };
        let id_token = provider
            .identity_token(&self.tenant, &grant.idp_issuer)
            .await
            .map_err(|_| failed("the host's identity-token provider failed"))?
            .ok_or_else(|| required("the host has no identity token for the tenant"))?;
        let basic = |secret: &Option<Secret>| match secret {
            Some(secret) => EmaClientAuthentication::ClientSecretBasic(oauth2::ClientSecret::new(
                secret.expose().to_owned(),
            )),
            None => EmaClientAuthentication::None,
        };
        let idp = EmaAuthorizationServer::new(
            &grant.idp_issuer,
            &grant.idp_token_endpoint,
            &grant.idp_client_id,
        )
        .with_client_authentication(basic(&grant.idp_client_secret));
        let resource_server =
            EmaAuthorizationServer::new(issuer, &metadata.token_endpoint, &grant.client_id)
                .with_client_authentication(basic(&grant.client_secret));
        let mut scopes = grant.scopes.clone();
        union(&mut scopes, more);
        let mut request = EmaExchangeRequest::new_with_id_token(
            idp,
            resource_server,
            &self.url,
            id_token.expose(),
        );
        if !scopes.is_empty() {
            request = request.with_scopes(scopes.clone());
        }
        let noting = ctx.http.noting(Arc::clone(&self.retired));
        let http: &dyn OAuthHttpClient = &noting;
        let token = silenced(request.exchange(http, http))
            .await
            .map_err(|error| {
                self.retired
                    .take_refused()
                    .map_or_else(|| from_ema(&error), Refused::error)
            })?;
        let mut hidden = Grant::Enterprise(grant.clone()).owned_secrets();
        hidden.push(id_token);
        let granted = if token.scopes.is_empty() {
            scopes
        } else {
            token.scopes.iter().cloned().collect()
        };
        Token::new(
            Secret::new(token.access_token.secret().clone()),
            None,
            token.expires_in,
            granted,
            hidden,
        )
    }

    /// A token for a workload identity: the JWT bearer grant (RFC 7523) at the token
    /// endpoint of the (pinned) authorization server, the workload's token as the
    /// assertion, and the server as the resource (RFC 8707). rmcp has no such grant, so
    /// the request is ours, through the same bounded client; a refusal is final (no other
    /// grant is tried, nothing is sent again).
    async fn workload_identity(
        &self,
        ctx: &Ctx<'_>,
        flight: &mut Flight,
        grant: &WorkloadIdentityGrant,
        more: Vec<String>,
    ) -> Result<Token, CallError> {
        let (Some(manager), Some(metadata)) = (flight.manager.as_mut(), flight.metadata.clone())
        else {
            return Err(failed("the authorization metadata is unknown"));
        };
        let scopes = machine_scopes(manager, &grant.scopes, more).await;
        check_workload_destination(
            grant.assertion.expose(),
            &metadata.token_endpoint,
            metadata.issuer.as_deref(),
            &self.url,
        )?;
        let scope = scopes.join(" ");
        let mut form = vec![
            ("grant_type", JWT_BEARER),
            ("assertion", grant.assertion.expose()),
            ("resource", self.url.as_str()),
        ];
        if let Some(client_id) = &grant.client_id {
            form.push(("client_id", client_id));
        }
        if !scope.is_empty() {
            form.push(("scope", &scope));
        }
        let noting = ctx.http.noting(Arc::clone(&self.retired));
        let response = noting
            .post_form(&metadata.token_endpoint, &form)
            .await
            .map_err(|error| match error {
                OAuthHttpError::Refused(refused) => refused.error(),
                error => failed(format!("the token request failed: {error}")),
            })?;
        let status = response.status();
        let body = String::from_utf8_lossy(response.body());
        if !status.is_success() {
            return Err(token_refused(status.as_u16(), &body));
        }
        let answer: JwtBearerAnswer =
            serde_json::from_str(&body).map_err(|_| Refused::Unusable.error())?;
        let lifetime = answer.lifetime();
        let granted = match answer.scope {
            Some(granted) => granted.split_whitespace().map(str::to_owned).collect(),
            None => scopes,
        };
        Token::new(
            Secret::new(answer.access_token),
            answer.refresh_token.map(Secret::new),
            lifetime,
            granted,
            Grant::WorkloadIdentity(grant.clone()).owned_secrets(),
        )
    }

    /// The delegated grant stored for this tenant and server: under the pinned issuer's
    /// key, else the most recent usable one of any issuer.
    async fn stored(&self, ctx: &Ctx<'_>) -> Result<Option<(GrantKey, VersionedGrant)>, CallError> {
        let store_failed = |error: StoreError| store_failed(&error);
        let keys = match self.grant().issuer() {
            Some(issuer) => vec![GrantKey::new(&self.tenant, &self.url, issuer)],
            None => ctx
                .store
                .keys(&self.tenant, &self.url)
                .await
                .map_err(store_failed)?,
        };
        let mut best: Option<(GrantKey, VersionedGrant)> = None;
        for key in keys {
            let Some(stored) = ctx.store.load(&key).await.map_err(store_failed)? else {
                continue;
            };
            let newer = best
                .as_ref()
                .is_none_or(|(_, best)| stored.grant.obtained_at > best.grant.obtained_at);
            if stored.grant.is_usable() && newer {
                best = Some((key, stored));
            }
        }
        Ok(best)
    }

    /// Refreshes the delegated grant under `flight.key`, across every process that shares
    /// the store: under the grant's lease, the stored grant is read again, and a token
    /// another holder refreshed meanwhile (not `stale`, the one this process has or the
    /// server refused) is used as it is, without refreshing again. Otherwise the refresh
    /// runs in a task of its own, bounded by the lease (so that a call that stops waiting
    /// cannot lose a rotated refresh token), and its grant is written over the one it
    /// started from, never over another writer's.
    ///
    /// `wait == false`: `Ok(None)` at once when another holder is refreshing.
    async fn refresh(
        &self,
        ctx: &Ctx<'_>,
        flight: &mut Flight,
        challenge: Option<&str>,
        stale: Option<&Token>,
        wait: bool,
    ) -> Result<Option<Token>, CallError> {
        let Some(key) = flight.key.clone() else {
            return Err(required("the tenant has no grant for this server"));
        };
        if flight.manager.is_none() {
            let issuer = self.discover(ctx, flight, challenge).await?;
            if issuer != key.issuer {
                return Err(required(
                    "the server moved to another authorization server, which the tenant has \
                     not authorized",
                ));
            }
        }
        let Some(lease) = take_lease(ctx.store, &key, wait).await? else {
            return Ok(None);
        };
        let reloaded = self.refresh_leased(ctx, flight, &key, lease, stale).await;
        reloaded.map(Some)
    }

    /// The part of [`Entry::refresh`] under the lease (which it releases).
    async fn refresh_leased(
        &self,
        ctx: &Ctx<'_>,
        flight: &mut Flight,
        key: &GrantKey,
        lease: Lease,
        stale: Option<&Token>,
    ) -> Result<Token, CallError> {
        let release = |lease: Lease| async move {
            if let Err(error) = lease.release().await {
                tracing::debug!(error = %error, "releasing a grant's lease failed; it expires");
            }
        };
        let stored = match ctx.store.load(key).await {
            Ok(Some(stored)) => stored,
            Ok(None) => {
                release(lease).await;
                return Err(required("the tenant's grant for this server was removed"));
            }
            Err(error) => {
                release(lease).await;
                return Err(store_failed(&error));
            }
        };
        if let Some(token) = self.refreshed_elsewhere(&stored, stale) {
            release(lease).await;
            tracing::debug!(tenant = %self.tenant, "using the token another holder refreshed");
            return token;
        }
        if stored.grant.refresh_token.is_none() {
            release(lease).await;
            return Err(required(if stored.grant.is_revoked() {
                "the tenant's grant was revoked (its refresh token was refused)"
            } else {
                "the tenant's grant cannot be refreshed (no refresh token)"
            }));
        }
        // The refresh proves the key the grant was made with.
        let dpop = match stored_dpop(&stored.grant, &self.nonces) {
            Ok(dpop) => dpop,
            Err(error) => {
                release(lease).await;
                return Err(error);
            }
        };
        self.dpop.set(dpop.clone());
        let configured = self.configure_delegated(
            ctx,
            flight,
            key,
            &stored.grant,
            Some(stored.clone()),
            dpop.as_ref(),
        );
        let outcome = match configured {
            Ok(outcome) => outcome,
            Err(error) => {
                release(lease).await;
                return Err(error);
            }
        };
        let Some(manager) = flight.manager.take() else {
            release(lease).await;
            return Err(failed("the authorization metadata is unknown"));
        };
        let ttl = ctx.store.lease_ttl();
        let within = LeaseTerms::refresh_within(ttl);
        let until = Instant::now() + ttl.mul_f64(0.9);
        let (store, retry_key, retry_version) =
            (Arc::clone(ctx.store), key.clone(), stored.version);
        let retry_outcome = Arc::clone(&outcome);
        let refreshes = Arc::clone(ctx.refreshes);
        // The refresh, its write and the lease's release run to their end even when the
        // call that started them stops waiting; the client's shutdown waits for them.
        let task = ctx.refreshes.spawn(key.clone(), async move {
            let response = tokio::time::timeout(within, silenced(manager.refresh_token()))
                .await
                .ok();
            let saved =
                retry_unsaved(&store, &retry_key, retry_version, &retry_outcome, until).await;
            if !saved {
                refreshes.unsaved(retry_key);
            }
            release(lease).await;
            (manager, response)
        });
        let Ok((manager, response)) = task.await else {
            return Err(failed("the token refresh could not be run"));
        };
        flight.manager = Some(manager);
        ctx.metrics
            .token(TokenRequest::Refresh, matches!(response, Some(Ok(_))));
        let response = match response {
            Some(Ok(response)) => response,
            Some(Err(error)) => return self.refused(ctx, key, &error, &outcome, stale).await,
            None => {
                return Err(failed(format!(
                    "the token refresh took longer than {} s",
                    within.as_secs()
                )));
            }
        };
        let saved = adapter::outcome(&outcome, |outcome| outcome.saved.clone());
        if let Some(Saved::Conflict(_)) = &saved {
            tracing::warn!(
                tenant = %self.tenant,
                "the refreshed grant was not stored: another writer replaced it meanwhile"
            );
        }
        tracing::debug!(tenant = %self.tenant, "refreshed the access token");
        let scopes = saved.map_or(stored.grant.scopes.clone(), |saved| {
            saved.grant().scopes.clone()
        });
        let mut hidden = self.grant().owned_secrets();
        hidden.extend(stored.grant.client_secret.iter().cloned());
        Token::from_response(&response, scopes, hidden, dpop.as_ref())
    }

    /// The stored grant's token, when another holder refreshed it since `stale` (a token
    /// this process holds, or the server refused) and it has not expired: that holder
    /// just renewed it, so it is used as it is, even when it is already due again (a
    /// short-lived token, or one whose issue time the store rounded down to the second).
    fn refreshed_elsewhere(
        &self,
        stored: &VersionedGrant,
        stale: Option<&Token>,
    ) -> Option<Result<Token, CallError>> {
        let token =
            match Token::from_stored(&stored.grant, self.grant().owned_secrets(), &self.nonces)? {
                Ok(token) => token,
                Err(error) => return Some(Err(error)),
            };
        let other = stale.is_none_or(|stale| stale.bearer != token.bearer);
        (other && token.is_unexpired(Instant::now())).then_some(Ok(token))
    }

    /// A refresh the authorization server refused. Refused for good (`invalid_grant`):
    /// read the store again first; a process that lost a race to another refresher finds
    /// that one's token there and uses it. Only a grant nobody replaced is revoked.
    async fn refused(
        &self,
        ctx: &Ctx<'_>,
        key: &GrantKey,
        error: &rmcp::transport::auth::AuthError,
        outcome: &adapter::Shared,
        stale: Option<&Token>,
    ) -> Result<Token, CallError> {
        let mapped = from_auth(error);
        if mapped.kind() != crate::error::ErrorKind::AuthorizationRequired {
            return Err(mapped);
        }
        if let Ok(Some(current)) = ctx.store.load(key).await
            && let Some(token) = self.refreshed_elsewhere(&current, stale)
        {
            tracing::debug!(
                tenant = %self.tenant,
                "the refresh token was refused, and another holder's refreshed grant is stored"
            );
            return token;
        }
        if adapter::outcome(outcome, |outcome| outcome.revoked) {
            Err(required(
                "the authorization server refused the tenant's refresh token; the grant is \
                 revoked",
            ))
        } else {
            Err(mapped)
        }
    }

    /// Points the manager at the stored grant: our store under its key, and the client it
    /// was made for (rmcp's records hold no secret: a registered client's comes from the
    /// grant, a pre-registered one's from the config). `base`: the grant a refresh starts
    /// from (its save compares and swaps against it); `None` for a person's new grant,
    /// which replaces whatever is stored. `dpop`: the key the grant's tokens are bound to,
    /// kept with what is saved.
    fn configure_delegated(
        &self,
        ctx: &Ctx<'_>,
        flight: &mut Flight,
        key: &GrantKey,
        stored: &StoredGrant,
        base: Option<VersionedGrant>,
        dpop: Option<&Dpop>,
    ) -> Result<adapter::Shared, CallError> {
        let Some(manager) = flight.manager.as_mut() else {
            return Err(failed("the authorization metadata is unknown"));
        };
        let Grant::OAuth(grant) = self.grant() else {
            return Err(failed("not a delegated grant"));
        };
        let secret = stored.client_secret.clone().or_else(|| {
            grant
                .client_secret
                .clone()
                .filter(|_| grant.client_id.as_deref() == Some(stored.client_id.as_str()))
        });
        let (adapter, outcome) = KeyedStore::new(
            Arc::clone(ctx.store),
            key.clone(),
            stored.client_secret.clone(),
            base,
            dpop.map(|dpop| Arc::clone(dpop.key())),
        );
        manager.set_credential_store(adapter);
        let mut config =
            OAuthClientConfig::new(&stored.client_id, redirect_uri(&grant, ctx.authorizer));
        if let Some(secret) = secret {
            config = config.with_client_secret(secret.expose());
        }
        manager
            .configure_client(config)
            .map_err(|error| from_auth(&error))?;
        Ok(outcome)
    }

    async fn reauthorize_delegated(
        &self,
        ctx: &Ctx<'_>,
        flight: &mut Flight,
        challenge: Option<&str>,
        sent: Option<&Token>,
        force: bool,
        grant: &AuthorizationCodeGrant,
    ) -> Result<Token, CallError> {
        // Discovered again: a server that moved to another authorization server has
        // another issuer, hence another key (and no grant, until the tenant authorizes).
        let issuer = self.discover(ctx, flight, challenge).await?;
        let key = GrantKey::new(&self.tenant, &self.url, &issuer);
        flight.key = Some(key.clone());
        flight.loaded = true;
        if !force {
            let stored = ctx
                .store
                .load(&key)
                .await
                .map_err(|error| store_failed(&error))?;
            if let Some(stored) = stored {
                // A token the server has not refused yet (stored by a login, or a refresh
                // of another process, meanwhile).
                let lost = match self.refreshed_elsewhere(&stored, sent) {
                    Some(Ok(token)) => return Ok(token),
                    // Its DPoP key is lost: nothing stored can be used; a new login.
                    Some(Err(error))
                        if error.kind() == crate::error::ErrorKind::AuthorizationRequired =>
                    {
                        Some(error)
                    }
                    Some(Err(error)) => return Err(error),
                    None => None,
                };
                if let (Some(error), None) = (&lost, ctx.authorizer) {
                    return Err(error.clone());
                }
                if lost.is_none() && stored.grant.refresh_token.is_some() {
                    match self.refresh(ctx, flight, challenge, sent, true).await {
                        Ok(Some(token)) => return Ok(token),
                        Ok(None) => {}
                        // The grant is gone: authorize anew, if someone can.
                        Err(error)
                            if error.kind() == crate::error::ErrorKind::AuthorizationRequired => {}
                        Err(error) => return Err(error),
                    }
                }
            }
        }
        let Some(authorizer) = ctx.authorizer else {
            return Err(required(
                "the tenant has no usable grant for this server (none was made, it expired, or \
                 its refresh token was rejected)",
            ));
        };
        self.code_flow(ctx, flight, authorizer, grant, key).await
    }

    /// The authorization code flow with PKCE: the client identified (pre-registered, a
    /// metadata document, an earlier registration at this issuer, or a new dynamic
    /// registration), the authorizer sends the user to the authorization URL and returns
    /// the redirect, whose `state` and `iss` rmcp checks before the code is exchanged.
    async fn code_flow(
        &self,
        ctx: &Ctx<'_>,
        flight: &mut Flight,
        authorizer: &Arc<dyn Authorizer>,
        grant: &AuthorizationCodeGrant,
        key: GrantKey,
    ) -> Result<Token, CallError> {
        let Some(metadata) = flight.metadata.clone() else {
            return Err(failed("the authorization metadata is unknown"));
        };
        require_pkce(&metadata, flight.published)?;
        self.start_operation();
        let Some(mut manager) = flight.manager.take() else {
            return Err(failed("the authorization metadata is unknown"));
        };
        let redirect = redirect_uri(grant, Some(authorizer));
        // A record that cannot be read is replaced by this grant: a login repairs it.
        let stored = match ctx.store.load(&key).await {
            Ok(stored) => stored.map(|stored| stored.grant),
            Err(error) if error.kind() == StoreErrorKind::Corrupt => None,
            Err(error) => return Err(store_failed(&error)),
        };
        let metadata_documents = metadata
            .additional_fields
            .get("client_id_metadata_document_supported")
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        let scopes = if grant.scopes.is_empty() {
            manager.select_initial_scopes(&[]).await
        } else {
            grant.scopes.clone()
        };
        let mut request = AuthorizationRequest::new(&redirect)
            .with_client_name(ctx.client_name)
            .with_initial_scope_selection();
        if !scopes.is_empty() {
            request = request.with_scopes(scopes.clone());
        }
        let mut registered_secret = None;
        if let Some(client_id) = &grant.client_id {
            request = request.with_preregistered_client(client_id);
            if let Some(secret) = &grant.client_secret {
                request = request.with_client_secret(secret.expose());
            }
        } else if let Some(url) = grant
            .client_id_metadata_url
            .as_ref()
            .filter(|_| metadata_documents)
        {
            request = request.with_client_metadata_url(url);
        } else if let Some(stored) = stored
            .as_ref()
            .filter(|stored| !stored.client_id.starts_with("https://"))
        {
            // Registered at this issuer before: not again.
            request = request.with_preregistered_client(&stored.client_id);
            if let Some(secret) = &stored.client_secret {
                request = request.with_client_secret(secret.expose());
                registered_secret = Some(secret.clone());
            }
        } else {
            let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
            let registered =
                silenced(manager.register_client(ctx.client_name, &redirect, &refs)).await;
            let registered = match registered {
                Ok(registered) => registered,
                Err(error) => {
                    flight.manager = Some(manager);
                    return Err(self.auth_error(&error));
                }
            };
            request = request.with_preregistered_client(&registered.client_id);
            if let Some(secret) = registered.client_secret {
                request = request.with_client_secret(&secret);
                registered_secret = Some(Secret::new(secret));
            }
        }
        // A new grant, a new DPoP key (when wanted): its token request proves it, and the
        // grant is stored with it.
        let dpop = match self.grant_dpop(Some(&metadata), Key::New) {
            Ok(dpop) => dpop,
            Err(error) => {
                flight.manager = Some(manager);
                return Err(error);
            }
        };
        self.dpop.set(dpop.clone());
        let (adapter, saved) = KeyedStore::new(
            Arc::clone(ctx.store),
            key,
            registered_secret.clone(),
            None,
            dpop.as_ref().map(|dpop| Arc::clone(dpop.key())),
        );
        manager.set_credential_store(adapter);
        let session = match silenced(AuthorizationSession::new(manager, request)).await {
            Ok(session) => session,
            Err((manager, error)) => {
                flight.manager = Some(manager);
                return Err(self.auth_error(&error));
            }
        };
        let prompt = AuthorizationPrompt {
            tenant: self.tenant.clone(),
            resource: self.url.clone(),
            authorization_url: session.get_authorization_url().to_owned(),
            redirect_uri: redirect,
        };
        let callback = authorizer.authorize(&prompt).await;
        let exchanged = match &callback {
            Ok(callback) => Some(silenced(session.handle_callback_url(callback)).await),
            Err(_) => None,
        };
        flight.manager = Some(session.auth_manager);
        let response = match exchanged {
            Some(exchanged) => exchanged.map_err(|error| self.auth_error(&error))?,
            None => return Err(failed("the authorizer did not complete the authorization")),
        };
        let scopes = adapter::outcome(&saved, |outcome| outcome.saved.clone())
            .map_or(scopes, |saved| saved.grant().scopes.clone());
        let mut hidden = Grant::OAuth(grant.clone()).owned_secrets();
        hidden.extend(registered_secret);
        Token::from_response(&response, scopes, hidden, dpop.as_ref())
    }

    /// A step-up on the manager that made the grant (rmcp keeps the granted scopes and
    /// the authorization state there): the union of the scopes held and asked for.
    async fn step_up_delegated(
        &self,
        ctx: &Ctx<'_>,
        flight: &mut Flight,
        challenge: Option<&str>,
        scopes: Vec<String>,
        authorizer: &Arc<dyn Authorizer>,
        grant: &AuthorizationCodeGrant,
    ) -> Result<Token, CallError> {
        let Some(key) = flight.key.clone() else {
            return Err(required("the tenant has no grant for this server"));
        };
        let stored = ctx
            .store
            .load(&key)
            .await
            .map_err(|error| store_failed(&error))?
            .ok_or_else(|| required("the tenant's grant for this server was removed"))?
            .grant;
        // The step-up's exchange proves the key the grant was made with.
        let dpop = stored_dpop(&stored, &self.nonces)?;
        self.dpop.set(dpop.clone());
        if flight.manager.is_none() {
            let issuer = self.discover(ctx, flight, challenge).await?;
            if issuer != key.issuer {
                return Err(required(
                    "the server moved to another authorization server, which the tenant has \
                     not authorized",
                ));
            }
            let _ = self.configure_delegated(ctx, flight, &key, &stored, None, dpop.as_ref())?;
        }
        let mut wanted = stored.scopes.clone();
        union(&mut wanted, scopes);
        let (Some(manager), Some(metadata)) = (flight.manager.as_ref(), flight.metadata.as_ref())
        else {
            return Err(failed("the authorization metadata is unknown"));
        };
        require_pkce(metadata, flight.published)?;
        self.start_operation();
        let url = silenced(manager.request_scope_upgrade(&wanted.join(" ")))
            .await
            .map_err(|error| self.auth_error(&error))?;
        let prompt = AuthorizationPrompt {
            tenant: self.tenant.clone(),
            resource: self.url.clone(),
            authorization_url: url,
            redirect_uri: redirect_uri(grant, Some(authorizer)),
        };
        let callback = authorizer
            .authorize(&prompt)
            .await
            .map_err(|_| failed("the authorizer did not complete the authorization"))?;
        let callback = rmcp::transport::auth::AuthorizationCallback::from_redirect_url(&callback)
            .map_err(|error| self.auth_error(&error))?;
        let response = silenced(manager.exchange_code_for_token_with_issuer(
            &callback.code,
            &callback.csrf_token,
            callback.issuer.as_deref(),
        ))
        .await
        .map_err(|error| self.auth_error(&error))?;
        let mut hidden = self.grant().owned_secrets();
        hidden.extend(stored.client_secret.iter().cloned());
        Token::from_response(&response, wanted, hidden, dpop.as_ref())
    }
}

/// rmcp's client credentials exchange. Its future is not `Send` in rmcp 3.11 (the JWT
/// branch holds a `form_urlencoded::Serializer` across an await), so it cannot be awaited
/// inside a call's future, which must be: it runs on a blocking thread instead, on the
/// caller's runtime (`Handle::block_on` there drives it; the runtime's own threads keep
/// driving the I/O). The manager goes with it and comes back; one thread per token
/// obtained, not per call.
async fn exchange_client_credentials(
    flight: &mut Flight,
    config: ClientCredentialsConfig,
) -> Result<Result<OAuthTokenResponse, AuthError>, CallError> {
    let Some(manager) = flight.manager.take() else {
        return Err(failed("the authorization metadata is unknown"));
    };
    let runtime = tokio::runtime::Handle::current();
    // Logs on that thread go where the caller's go.
    let dispatch = tracing::dispatcher::get_default(tracing::Dispatch::clone);
    let exchanged = tokio::task::spawn_blocking(move || {
        let response = tracing::dispatcher::with_default(&dispatch, || {
            runtime.block_on(silenced(manager.exchange_client_credentials(&config)))
        });
        (manager, response)
    })
    .await;
    let Ok((manager, response)) = exchanged else {
        return Err(failed("the token request could not be run"));
    };
    flight.manager = Some(manager);
    Ok(response)
}

/// The MCP authorization specification's PKCE rule (2025-11-25 on): the authorization
/// server's metadata must list `S256` in `code_challenge_methods_supported`; when the
/// field is absent, or lists other methods only, the client must refuse to proceed (rmcp
/// proceeds on an absent field, with a warning). Checked before a client is registered or
/// an authorization URL is made. A 2025-03-26 server that publishes no metadata at all
/// (`published` false: its default endpoints are used) has nothing to verify against, and
/// that revision asked for no check: the flow goes on, with an S256 challenge as always.
fn require_pkce(metadata: &AuthorizationMetadata, published: bool) -> Result<(), CallError> {
    match &metadata.code_challenge_methods_supported {
        Some(methods) if methods.iter().any(|method| method == "S256") => Ok(()),
        None if !published => Ok(()),
        Some(_) => Err(failed(
            "the authorization server does not support PKCE with S256 \
             (code_challenge_methods_supported lacks it), which MCP authorization requires; \
             no authorization was started",
        )),
        None => Err(failed(
            "the authorization server's metadata does not advertise PKCE \
             (code_challenge_methods_supported is missing), which MCP authorization \
             requires; no authorization was started",
        )),
    }
}

/// A refreshed grant the store did not take (it failed a moment: a database restarting):
/// written again, with backoff, over the grant the refresh started from, until `until`
/// (within the lease). The tokens a refresh rotated must not be lost to a passing fault.
/// False when they could not be stored: the authorization server may have rotated the
/// refresh token, and the store still holds the spent one.
async fn retry_unsaved(
    store: &Arc<dyn CredentialStore>,
    key: &GrantKey,
    version: crate::auth::store::GrantVersion,
    outcome: &adapter::Shared,
    until: Instant,
) -> bool {
    let Some((grant, mut error)) = adapter::outcome(outcome, |outcome| outcome.unsaved.take())
    else {
        return true;
    };
    let mut pause = Duration::from_millis(50);
    while Instant::now() + pause < until {
        tokio::time::sleep(pause).await;
        pause *= 2;
        match store
            .save(key, &grant, crate::auth::store::Expected::Version(version))
            .await
        {
            Ok(crate::auth::store::Swap::Done(_)) => {
                adapter::outcome(outcome, |outcome| {
                    outcome.saved = Some(Saved::Stored(grant))
                });
                return true;
            }
            // Another writer got there: theirs stands.
            Ok(crate::auth::store::Swap::Conflict) => return true,
            Err(again) => error = again,
        }
    }
    tracing::error!(
        error = %error,
        "the refreshed grant of tenant {} could not be stored; this process keeps its token \
         in memory, and the tenant may need to log in again",
        one_line(&key.tenant, 80)
    );
    false
}

/// The redirect URI: the grant's, else the authorizer's, else the default.
fn redirect_uri(
    grant: &AuthorizationCodeGrant,
    authorizer: Option<&Arc<dyn Authorizer>>,
) -> String {
    grant
        .redirect_uri
        .clone()
        .or_else(|| authorizer.and_then(|authorizer| authorizer.redirect_uri()))
        .unwrap_or_else(|| DEFAULT_REDIRECT_URI.to_owned())
}

#[cfg(feature = "oauth-jwt")]
fn jwt_algorithm(algorithm: crate::grant::SigningAlgorithm) -> JwtSigningAlgorithm {
    match algorithm {
        crate::grant::SigningAlgorithm::Rs384 => JwtSigningAlgorithm::RS384,
        crate::grant::SigningAlgorithm::Rs512 => JwtSigningAlgorithm::RS512,
        crate::grant::SigningAlgorithm::Es256 => JwtSigningAlgorithm::ES256,
        crate::grant::SigningAlgorithm::Es384 => JwtSigningAlgorithm::ES384,
        _ => JwtSigningAlgorithm::RS256,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_a_grant_the_store_cannot_read_is_marked_unreadable() {
        use super::{StoreError, StoreErrorKind, store_failed};
        // (kind, marked, how the detail begins)
        let cases = [
            (
                StoreErrorKind::Corrupt,
                true,
                "the credential store holds a grant it cannot read: f.json is not a grant record",
            ),
            (
                StoreErrorKind::Unavailable,
                false,
                "the credential store is unavailable",
            ),
            (StoreErrorKind::Failed, false, "the credential store failed"),
        ];
        for (kind, marked, detail) in cases {
            let error = store_failed(&StoreError::new(kind, "f.json is not a grant record"));
            assert_eq!(error.kind(), crate::error::ErrorKind::CredentialStore);
            assert_eq!(error.unreadable_grant(), marked, "{kind:?}");
            assert!(error.detail().starts_with(detail), "{}", error.detail());
            assert!(
                !error.detail().contains("logging out"),
                "{}",
                error.detail()
            );
        }
    }

    #[test]
    fn a_workload_token_goes_only_where_it_is_meant_to() {
        use base64::Engine as _;
        let jwt = |aud: serde_json::Value| {
            let part = |value: serde_json::Value| {
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
            };
            format!(
                "{}.{}.sig",
                part(json!({"alg": "ES256"})),
                part(json!({"aud": aud}))
            )
        };
        let resource = "https://mcp.example.com/mcp";
        // (assertion, token endpoint, issuer, resource, allowed)
        let cases = [
            (
                jwt(json!("https://as.example.com")),
                "https://as.example.com/token",
                Some("https://as.example.com/"),
                resource,
                true,
            ),
            (
                jwt(json!("https://as.example.com/token")),
                "https://as.example.com/token",
                None,
                resource,
                true,
            ),
            (
                jwt(json!(["x", "https://as.example.com"])),
                "https://as.example.com/token",
                Some("https://as.example.com"),
                resource,
                true,
            ),
            // No audience in the token (or not a JWT): the authorization server decides.
            (
                "opaque".to_owned(),
                "https://as.example.com/token",
                None,
                resource,
                true,
            ),
            // Meant for another authorization server.
            (
                jwt(json!("https://real-as.example.com")),
                "https://evil.example.com/token",
                Some("https://evil.example.com"),
                resource,
                false,
            ),
            // Plain http: only on loopback, for a loopback server.
            (
                "opaque".to_owned(),
                "http://as.example.com/token",
                None,
                resource,
                false,
            ),
            (
                "opaque".to_owned(),
                "http://127.0.0.1:9/token",
                None,
                "http://127.0.0.1:8/mcp",
                true,
            ),
            (
                "opaque".to_owned(),
                "http://127.0.0.1:9/token",
                None,
                resource,
                false,
            ),
        ];
        for (assertion, endpoint, issuer, resource, allowed) in cases {
            assert_eq!(
                check_workload_destination(&assertion, endpoint, issuer, resource).is_ok(),
                allowed,
                "{endpoint} {issuer:?} {resource}"
            );
        }
    }

    use super::*;

    #[test]
    fn pkce_with_s256_is_required_of_published_metadata() {
        let metadata = |methods: Option<&[&str]>| {
            let mut metadata = AuthorizationMetadata::default();
            metadata.code_challenge_methods_supported =
                methods.map(|methods| methods.iter().map(|m| (*m).to_owned()).collect());
            metadata
        };
        // (methods, published, allowed)
        let cases: [(Option<&[&str]>, bool, bool); 7] = [
            (Some(&["S256"]), true, true),
            (Some(&["plain", "S256"]), true, true),
            (None, true, false),
            (Some(&[]), true, false),
            (Some(&["plain"]), true, false),
            // The 2025-03-26 default endpoints: no metadata was published to check.
            (None, false, true),
            (Some(&["plain"]), false, false),
        ];
        for (methods, published, allowed) in cases {
            let checked = require_pkce(&metadata(methods), published);
            assert_eq!(checked.is_ok(), allowed, "{methods:?} {published}");
            if let Err(error) = checked {
                assert!(error.detail().contains("PKCE"), "{error}");
            }
        }
    }

    #[test]
    fn scopes_union_keeps_order_and_drops_repeats() {
        let mut scopes = vec!["a".to_owned(), "b".to_owned()];
        union(&mut scopes, ["b", "c", "", "a", "d"].map(String::from));
        assert_eq!(scopes, ["a", "b", "c", "d"]);
    }

    #[test]
    fn challenges_are_read_for_scope_and_kind() {
        let url = "http://127.0.0.1:9/mcp";
        let check = |status, header: Option<&str>, scopes: &[&str], insufficient| {
            let challenge = Challenge::of(status, header).unwrap();
            let (found, is_insufficient) = challenged(&challenge, url);
            assert_eq!(
                (
                    found.iter().map(String::as_str).collect::<Vec<_>>(),
                    is_insufficient
                ),
                (scopes.to_vec(), insufficient),
                "{header:?}"
            );
        };
        check(401, None, &[], false);
        check(401, Some("Bearer"), &[], false);
        check(
            401,
            Some(
                r#"Bearer error="invalid_token", scope="mcp:basic", resource_metadata="http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp""#,
            ),
            &["mcp:basic"],
            false,
        );
        check(
            403,
            Some(r#"Bearer error="insufficient_scope", scope="mcp:write files:read""#),
            &["mcp:write", "files:read"],
            true,
        );
        check(403, Some(r#"Bearer error="forbidden""#), &[], false);
    }

    #[test]
    fn tokens_are_renewed_before_they_expire() {
        let token = |lifetime: Option<u64>| {
            Token::new(
                Secret::new("at"),
                None,
                lifetime.map(Duration::from_secs),
                Vec::new(),
                Vec::new(),
            )
            .unwrap()
        };
        let now = Instant::now();
        assert!(token(None).is_fresh(now + Duration::from_secs(1_000_000)));
        let hour = token(Some(3600));
        assert!(hour.is_fresh(now + Duration::from_secs(3500)));
        assert!(!hour.is_fresh(now + Duration::from_secs(3580)));
        assert!(hour.is_unexpired(now + Duration::from_secs(3580)));
        // Short-lived: renewed at half its life, not on every call.
        let short = token(Some(10));
        assert!(short.is_fresh(now + Duration::from_secs(4)));
        assert!(!short.is_fresh(now + Duration::from_secs(6)));
        assert!(Token::new(Secret::new("a b"), None, None, vec![], vec![]).is_err());
        let debug = format!("{:?}", token(Some(5)));
        assert!(!debug.contains("\"at\""), "{debug}");
    }
}
