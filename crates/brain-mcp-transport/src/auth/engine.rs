//! The authorization engine (feature `oauth`): a registry of grant states per (tenant,
//! server, grant) and the run of an operation with its tenant's token; the flows are in
//! `flow`. Without the feature, `engine_off.rs` stands in and refuses every grant.

use std::{
    collections::HashMap,
    fmt,
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, instrument::WithSubscriber};

use super::{
    AuthOptions, Authorizer, GrantStatus, IdentityTokenProvider, MAX_AUTHORIZATIONS, Refreshes,
    StoredGrantSummary, errors,
    flow::{Ctx, Entry, Token, challenged, store_failed},
    http::OAuthHttp,
    store::{
        CredentialStore, Expected, GrantKey, GrantVersion, Lease, MemoryCredentialStore,
        StoreError, StoredGrant, Swap, VersionedGrant,
    },
};
use crate::{
    dpop::Nonces,
    endpoint::{HttpEndpoint, redacted_url},
    error::{CallError, Delivery, ErrorKind},
    grant::{Authorization, Grant, GrantExt},
    secret::Secret,
    telemetry::Metrics,
    wire::http::Clients,
};

impl StoredGrantSummary {
    fn of(key: GrantKey, grant: &StoredGrant) -> Self {
        Self {
            key,
            scopes: grant.scopes.clone(),
            expires_at: grant.expires_at,
            refreshable: grant.refresh_token.is_some(),
            usable: grant.is_usable(),
            revoked: grant.is_revoked(),
        }
    }
}

/// Runs rmcp's auth code with tracing off: rmcp 3.11 logs the authorization code at
/// DEBUG (`exchange_code_for_token_with_issuer`) and token responses' `Debug`; nothing
/// it logs on these paths may reach a host's logs. What happened is logged by us, with
/// fixed phrases.
pub(crate) fn silenced<F: Future>(future: F) -> tracing::instrument::WithDispatch<F> {
    future.with_subscriber(tracing::Dispatch::none())
}

/// The authorization state of one client: a registry of grant states per (tenant,
/// server, grant).
#[derive(Debug, Clone)]
pub(crate) struct Auth {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    http: Arc<OAuthHttp>,
    store: Arc<dyn CredentialStore>,
    authorizer: Option<Arc<dyn Authorizer>>,
    identity: Option<Arc<dyn IdentityTokenProvider>>,
    client_name: String,
    entries: Mutex<HashMap<EntryKey, Arc<Entry>>>,
    /// Refreshes in flight (each in a task of its own, bounded by its lease) and grants
    /// whose refreshed tokens could not be saved.
    refreshes: Arc<Refreshes>,
    /// The DPoP nonces servers gave, per server and origin (every grant's).
    nonces: Arc<Nonces>,
    metrics: Metrics,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct EntryKey {
    tenant: String,
    url: String,
    /// The grant without its secrets.
    grant: String,
}

/// Without the URL's user info, query and fragment (they may hold secrets).
impl std::fmt::Debug for EntryKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntryKey")
            .field("tenant", &self.tenant)
            .field("url", &redacted_url(&self.url))
            .field("grant", &self.grant)
            .finish()
    }
}

/// One operation's use of a grant.
pub(crate) struct Run<'a> {
    pub(crate) authorization: &'a Authorization,
    pub(crate) url: &'a str,
    pub(crate) deadline: Instant,
    pub(crate) cancel: &'a CancellationToken,
    /// Runs the interactive step, over the client's own authorizer.
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    /// A login: the first attempt goes without a token, and its challenge is answered
    /// with a new grant, whatever is stored.
    pub(crate) login: bool,
    /// A call's one resend (shared with the other layers that may use it); `None` for a
    /// discovery, which runs no tool.
    pub(crate) resend: Option<crate::api::ResendBudget>,
}

/// What one attempt sends: the bearer, and the secrets it must hide.
#[derive(Clone)]
pub(crate) struct Credentials(Token);

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Credentials").field(&self.0).finish()
    }
}

impl Credentials {
    /// Puts the bearer (and the secrets to hide, and the DPoP key it is bound to) on an
    /// endpoint.
    pub(crate) fn apply(&self, endpoint: &mut HttpEndpoint) {
        endpoint.bearer = Some(self.0.bearer.clone());
        endpoint.hidden = self.0.hidden.clone();
        endpoint.dpop = self.0.dpop.clone();
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Auth {
    /// The registry, with the client's pooled HTTP client (no redirects). Grants are
    /// kept in memory unless the host names a store.
    pub(crate) fn new(
        options: &AuthOptions,
        http: &Clients,
        client_name: &str,
        metrics: Metrics,
    ) -> Self {
        let store = options
            .store
            .clone()
            .unwrap_or_else(|| Arc::new(MemoryCredentialStore::new()));
        Self {
            inner: Arc::new(Inner {
                http: Arc::new(OAuthHttp::new(http.pooled.clone())),
                store,
                authorizer: options.authorizer.clone(),
                identity: options.identity.clone(),
                client_name: client_name.to_owned(),
                entries: Mutex::new(HashMap::new()),
                refreshes: Arc::default(),
                nonces: Arc::default(),
                metrics,
            }),
        }
    }

    fn entry(&self, authorization: &Authorization, url: &str) -> Arc<Entry> {
        let key = EntryKey {
            tenant: authorization.tenant.clone(),
            url: url.to_owned(),
            grant: authorization.grant.identity(),
        };
        let entry = Arc::clone(lock(&self.inner.entries).entry(key).or_insert_with(|| {
            Arc::new(Entry::new(
                &authorization.tenant,
                url,
                &authorization.grant,
                Arc::clone(&self.inner.nonces),
            ))
        }));
        entry.update_grant(&authorization.grant);
        entry
    }

    fn ctx<'a>(
        &'a self,
        authorizer: Option<&'a Arc<dyn Authorizer>>,
        store: &'a Arc<dyn CredentialStore>,
    ) -> Ctx<'a> {
        Ctx {
            http: &self.inner.http,
            store,
            authorizer: authorizer.or(self.inner.authorizer.as_ref()),
            identity: self.inner.identity.as_ref(),
            client_name: &self.inner.client_name,
            refreshes: &self.inner.refreshes,
            metrics: &self.inner.metrics,
        }
    }

    /// Runs an operation (a call, a discovery) with the tenant's token: `attempt` sends
    /// it with the credentials given (none, when no token is known yet); when the server
    /// refuses it for want of authorization, a token is obtained and it runs again, at
    /// most [`MAX_AUTHORIZATIONS`] times. Only refusals (401, 403 with a challenge) are
    /// retried: those are `not_sent`.
    pub(crate) async fn run<T, F, Fut>(&self, run: Run<'_>, mut attempt: F) -> Result<T, CallError>
    where
        F: FnMut(Option<Credentials>) -> Fut,
        Fut: Future<Output = Result<T, CallError>>,
    {
        let entry = self.entry(run.authorization, run.url);
        // The store as this operation sees it: a deadline that passes while the store
        // has not answered ends the operation `credential_store`, not `timeout`.
        let watched = Arc::new(Watched::new(Arc::clone(&self.inner.store)));
        let store: Arc<dyn CredentialStore> = watched.clone();
        let ctx = self.ctx(run.authorizer.as_ref(), &store);
        let mut token = if run.login {
            None
        } else {
            match entry.fresh() {
                // The per-call path: the cached token, no lock held, no store read.
                Some(token) => Some(token),
                None => {
                    bounded(&run, &watched, entry.current(&ctx))
                        .instrument(authorize_span("renew"))
                        .await?
                }
            }
        };
        let mut authorizations = 0;
        loop {
            let error = match attempt(token.clone().map(Credentials)).await {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            let Some(challenge) = error.challenge().cloned() else {
                return Err(error);
            };
            // A refusal for want of a DPoP nonce was answered once already, below (the
            // transport sends the request again with the nonce when it may): not a reason
            // to authorize again.
            if crate::dpop::resource_wants_nonce(challenge.status, challenge.header.as_deref()) {
                return Err(hiding(errors::nonce_refused(), token.as_ref()));
            }
            let (scopes, insufficient_scope) = challenged(&challenge, run.url);
            if challenge.status == 403 && !insufficient_scope {
                return Err(error);
            }
            // A refused `tools/call` was not run, so it may go once more with a new token:
            // that is its one resend, unless another layer used it already (a fresh
            // connection, a fresh context). A refusal of a request that carried no token
            // is the first step of authorizing, and does not count. Scopes in messages are
            // the server's text: the grant's secrets are hidden.
            if error.refused_the_call()
                && token.is_some()
                && !run
                    .resend
                    .as_ref()
                    .is_none_or(crate::api::ResendBudget::take)
            {
                let error = refused_again(&run.authorization.grant, challenge.status, &scopes);
                return Err(hiding(error, token.as_ref()));
            }
            if authorizations == MAX_AUTHORIZATIONS {
                let error = exhausted(&run.authorization.grant, challenge.status, &scopes);
                return Err(hiding(error, token.as_ref()));
            }
            authorizations += 1;
            let login = run.login && authorizations == 1;
            let step = entry.react(&ctx, &challenge, token.as_ref(), login);
            let renewed = bounded(&run, &watched, step)
                .instrument(authorize_span("challenge"))
                .await
                .map_err(|error| hiding(error, token.as_ref()))?;
            token = Some(renewed);
        }
    }

    /// The refreshes in flight and the grants left unsaved.
    pub(crate) fn refreshes(&self) -> &Refreshes {
        &self.inner.refreshes
    }

    /// Removes a tenant's grant for a server: its stored delegated grants (under every
    /// issuer, readable or not, or the pinned one) and every token in memory. Returns how
    /// many stored grants were removed.
    pub(crate) async fn forget(
        &self,
        authorization: &Authorization,
        url: &str,
    ) -> Result<usize, CallError> {
        lock(&self.inner.entries)
            .retain(|key, _| !(key.tenant == authorization.tenant && key.url == url));
        if !matches!(authorization.grant, Grant::OAuth(_)) {
            return Ok(0);
        }
        let store = &self.inner.store;
        match authorization.grant.issuer() {
            Some(issuer) => {
                let key = GrantKey::new(&authorization.tenant, url, issuer);
                // Counted when something was there, readable or not.
                let present = !matches!(store.load(&key).await, Ok(None));
                let _ = store
                    .remove(&key, None)
                    .await
                    .map_err(|error| store_failed(&error))?;
                Ok(usize::from(present))
            }
            None => store
                .purge(&authorization.tenant, url)
                .await
                .map_err(|error| store_failed(&error)),
        }
    }

    /// Whether the tenant has a usable grant for a server (reads the store; no network).
    /// A grant the store cannot read is an error (`credential_store`) that names it.
    pub(crate) async fn status(
        &self,
        authorization: &Authorization,
        url: &str,
    ) -> Result<GrantStatus, CallError> {
        if !matches!(authorization.grant, Grant::OAuth(_)) {
            return Ok(GrantStatus::AtCallTime);
        }
        let mut best: Option<StoredGrantSummary> = None;
        for key in self.stored_keys(authorization, url).await? {
            let stored = self
                .inner
                .store
                .load(&key)
                .await
                .map_err(|error| store_failed(&error))?;
            if let Some(stored) = stored {
                let summary = StoredGrantSummary::of(key, &stored.grant);
                if best
                    .as_ref()
                    .is_none_or(|best| summary.usable && !best.usable)
                {
                    best = Some(summary);
                }
            }
        }
        Ok(best.map_or(GrantStatus::Missing, GrantStatus::Stored))
    }

    async fn stored_keys(
        &self,
        authorization: &Authorization,
        url: &str,
    ) -> Result<Vec<GrantKey>, CallError> {
        match authorization.grant.issuer() {
            Some(issuer) => Ok(vec![GrantKey::new(&authorization.tenant, url, issuer)]),
            None => self
                .inner
                .store
                .keys(&authorization.tenant, url)
                .await
                .map_err(|error| store_failed(&error)),
        }
    }
}

/// The error with the token's secrets (the bearer, the refresh token, what the grant
/// hides) taken out of its text.
fn hiding(error: CallError, token: Option<&Token>) -> CallError {
    match token {
        Some(token) => error.hiding(&crate::secret::Redactor::new(
            std::iter::once(token.bearer.expose()).chain(token.hidden.iter().map(Secret::expose)),
        )),
        None => error,
    }
}

/// The span of obtaining a token: `renew` before a request (no token yet, or one about to
/// expire), `challenge` after a server refused one.
fn authorize_span(reason: &'static str) -> tracing::Span {
    tracing::info_span!("authorize", "brain.authorize.reason" = reason)
}

/// Waits for an authorization step within the operation's deadline and cancellation. A
/// deadline that passes while a request to the credential store has gone unanswered for
/// a while (a quarter second, or half the time the operation had if that is shorter) is
/// the store's failure (`credential_store`): a store that hangs (a database unreachable
/// behind a firewall that drops packets) is named as what held the call up. A deadline
/// that falls on one of the quick requests of waiting for another's refresh (the lease
/// polled with backoff) is the call's `timeout`, as it would be between two of them.
async fn bounded<T>(
    run: &Run<'_>,
    store: &Watched,
    step: impl Future<Output = Result<T, CallError>>,
) -> Result<T, CallError> {
    // Whether the store was answering is read as the deadline passes: the step (and
    // what it waits for) is dropped before a branch of `select!` runs.
    let deadline = async {
        tokio::time::sleep_until(run.deadline).await;
        store.holding_up(run.deadline)
    };
    tokio::select! {
        outcome = step => outcome,
        store_waited = deadline => Err(if store_waited {
            CallError::new(
                ErrorKind::CredentialStore,
                Delivery::NotSent,
                "the credential store did not answer within the call's timeout",
            )
        } else {
            CallError::new(ErrorKind::Timeout, Delivery::NotSent, "timed out while obtaining an access token")
        }),
        () = run.cancel.cancelled() => {
            Err(CallError::new(ErrorKind::Cancelled, Delivery::NotSent, "was cancelled"))
        }
    }
}

/// The credential store as one operation sees it: the requests to it in flight, and since
/// when one has been.
#[derive(Debug)]
struct Watched {
    store: Arc<dyn CredentialStore>,
    began: Instant,
    /// How many requests are in flight, and since when (the first of them).
    waiting: Mutex<(usize, Option<Instant>)>,
}

impl Watched {
    fn new(store: Arc<dyn CredentialStore>) -> Self {
        Self {
            store,
            began: Instant::now(),
            waiting: Mutex::new((0, None)),
        }
    }

    /// Whether a request to the store, unanswered at `deadline`, is what held the
    /// operation up: in flight for a quarter second, or half the operation's time.
    fn holding_up(&self, deadline: Instant) -> bool {
        let since = lock(&self.waiting).1;
        let long =
            Duration::from_millis(250).min(deadline.saturating_duration_since(self.began) / 2);
        since.is_some_and(|since| Instant::now().saturating_duration_since(since) >= long)
    }

    fn request(&self) -> Waiting<'_> {
        let mut waiting = lock(&self.waiting);
        waiting.0 += 1;
        waiting.1.get_or_insert_with(Instant::now);
        Waiting(self)
    }
}

/// One request to the store in flight, for as long as it lives.
struct Waiting<'a>(&'a Watched);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut waiting = lock(&self.0.waiting);
        waiting.0 -= 1;
        if waiting.0 == 0 {
            waiting.1 = None;
        }
    }
}

#[async_trait::async_trait]
impl CredentialStore for Watched {
    async fn load(&self, key: &GrantKey) -> Result<Option<VersionedGrant>, StoreError> {
        let _waiting = self.request();
        self.store.load(key).await
    }

    async fn save(
        &self,
        key: &GrantKey,
        grant: &StoredGrant,
        expected: Expected,
    ) -> Result<Swap<GrantVersion>, StoreError> {
        let _waiting = self.request();
        self.store.save(key, grant, expected).await
    }

    async fn remove(
        &self,
        key: &GrantKey,
        version: Option<GrantVersion>,
    ) -> Result<Swap<()>, StoreError> {
        let _waiting = self.request();
        self.store.remove(key, version).await
    }

    async fn keys(&self, tenant: &str, resource: &str) -> Result<Vec<GrantKey>, StoreError> {
        let _waiting = self.request();
        self.store.keys(tenant, resource).await
    }

    async fn purge(&self, tenant: &str, resource: &str) -> Result<usize, StoreError> {
        let _waiting = self.request();
        self.store.purge(tenant, resource).await
    }

    async fn try_lease(&self, key: &GrantKey, ttl: Duration) -> Result<Option<Lease>, StoreError> {
        let _waiting = self.request();
        self.store.try_lease(key, ttl).await
    }

    fn lease_ttl(&self) -> Duration {
        self.store.lease_ttl()
    }
}

/// A delegated grant the server wants more scope for than the tenant granted: the tenant
/// must authorize again.
fn more_than_granted(scopes: &[String]) -> CallError {
    errors::required(format!(
        "the server still needs more scope ({}) than the tenant granted",
        crate::secret::one_line(&scopes.join(" "), 200)
    ))
}

/// The error when the server refused a call's `tools/call` a second time, after a new
/// authorization: it is not sent a third time.
fn refused_again(grant: &Grant, status: u16, scopes: &[String]) -> CallError {
    match (status, grant) {
        (403, Grant::OAuth(_)) => more_than_granted(scopes),
        (403, _) => errors::failed(format!(
            "the server refused the call again for want of scope ({}), after a step-up",
            crate::secret::one_line(&scopes.join(" "), 200)
        )),
        _ => errors::failed(
            "the server refused the call again with a new access token, so it is not sent a third time",
        ),
    }
}

/// The error once an operation used up its authorizations.
fn exhausted(grant: &Grant, status: u16, scopes: &[String]) -> CallError {
    match (status, grant) {
        (403, Grant::OAuth(_)) => more_than_granted(scopes),
        (403, _) => errors::failed(format!(
            "the server still needs more scope ({}) after {MAX_AUTHORIZATIONS} authorizations",
            crate::secret::one_line(&scopes.join(" "), 200)
        )),
        _ => errors::failed(format!(
            "the server refused the access token after {MAX_AUTHORIZATIONS} authorizations"
        )),
    }
}
