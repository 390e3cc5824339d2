//! Calls and discoveries that carry a tenant's OAuth token (the machinery is in
//! `crate::auth`), and what a CLI needs to manage grants: log in, log out, check.

use std::{pin::Pin, sync::Arc, time::Duration};

use super::{ClientOptions, McpClient};
use crate::{
    api::{CallOutcome, CallRequest, Discovery, DiscoveryRequest},
    auth::{Authorizer, CredentialStore, GrantStatus, IdentityTokenProvider, Run},
    endpoint::Endpoint,
    error::{CallError, Delivery, ErrorKind},
    grant::Authorization,
};

type Attempt<'a, T> = Pin<Box<dyn Future<Output = Result<T, CallError>> + Send + 'a>>;

impl ClientOptions {
    /// Where delegated grants are kept (default: in memory, for the life of the client;
    /// a [`crate::FileCredentialStore`] shares them with the other processes of a
    /// machine, a `PostgresCredentialStore` (feature `postgres`) with a fleet).
    pub fn credential_store(mut self, store: Arc<dyn CredentialStore>) -> Self {
        self.auth.store = Some(store);
        self
    }

    /// Who runs the interactive step of the authorization code flow at call time
    /// (default: nobody, and a tenant without a grant gets `authorization_required`).
    pub fn authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.auth.authorizer = Some(authorizer);
        self
    }

    /// Where tenants' identity tokens come from, for enterprise-managed authorization.
    pub fn identity_tokens(mut self, provider: Arc<dyn IdentityTokenProvider>) -> Self {
        self.auth.identity = Some(provider);
        self
    }
}

fn not_http() -> CallError {
    CallError::new(
        ErrorKind::AuthorizationFailed,
        Delivery::NotSent,
        "OAuth authorization applies to HTTP servers only",
    )
}

/// The endpoint of one attempt: the token obtained, or none yet (never a bearer of the
/// caller's beside a grant).
fn with_credentials(endpoint: &mut Endpoint, credentials: Option<&crate::auth::Credentials>) {
    if let Endpoint::Http(http) = endpoint {
        http.bearer = None;
        http.dpop = None;
        if let Some(credentials) = credentials {
            credentials.apply(http);
        }
    }
}

/// A call with its tenant's token: sent once, and once more after each refusal for want
/// of authorization (a refused call was not run). Boxed: it runs `McpClient::call`.
pub(super) fn call(client: &McpClient, request: CallRequest) -> Attempt<'_, CallOutcome> {
    Box::pin(call_authorized(client, request))
}

async fn call_authorized(
    client: &McpClient,
    request: CallRequest,
) -> Result<CallOutcome, CallError> {
    let Some(authorization) = request.authorization.clone() else {
        return Err(not_http());
    };
    let Endpoint::Http(http) = &request.endpoint else {
        return Err(not_http());
    };
    let url = http.url.clone();
    let run = Run {
        authorization: &authorization,
        url: &url,
        deadline: request.deadline,
        cancel: &request.cancel,
        authorizer: None,
        login: false,
        resend: Some(request.resend.clone()),
    };
    client
        .inner
        .auth
        .run(run, |credentials| {
            let mut attempt = request.clone();
            attempt.authorization = None;
            with_credentials(&mut attempt.endpoint, credentials.as_ref());
            client.call(attempt)
        })
        .await
}

/// A discovery with its tenant's token. `authorizer`: a login, run with this authorizer.
/// Boxed: it runs `McpClient::discover`.
pub(super) fn discover(
    client: &McpClient,
    request: DiscoveryRequest,
    authorizer: Option<Arc<dyn Authorizer>>,
) -> Attempt<'_, Discovery> {
    Box::pin(discover_authorized(client, request, authorizer))
}

async fn discover_authorized(
    client: &McpClient,
    request: DiscoveryRequest,
    authorizer: Option<Arc<dyn Authorizer>>,
) -> Result<Discovery, CallError> {
    let Some(authorization) = request.authorization.clone() else {
        return Err(not_http());
    };
    let Endpoint::Http(http) = &request.endpoint else {
        return Err(not_http());
    };
    let url = http.url.clone();
    let login = authorizer.is_some();
    let run = Run {
        authorization: &authorization,
        url: &url,
        deadline: request.deadline,
        cancel: &request.cancel,
        authorizer,
        login,
        resend: None,
    };
    client
        .inner
        .auth
        .run(run, |credentials| {
            let mut attempt = request.clone();
            attempt.authorization = None;
            with_credentials(&mut attempt.endpoint, credentials.as_ref());
            client.discover(attempt)
        })
        .await
}

impl McpClient {
    /// Makes a tenant's grant for a server (`mcp-tools login`): asks the server (a tool
    /// listing without a token), answers its challenge with the authorization code flow
    /// run by `authorizer` (whatever grant is stored already), stores the grant, and
    /// lists the tools again with the new token to prove it. Client credentials and
    /// enterprise grants are only checked: their tokens are obtained at call time.
    ///
    /// Returns the grant's status afterwards; [`GrantStatus::Missing`] for a delegated
    /// grant means the server never asked for authorization.
    ///
    /// # Errors
    /// A [`CallError`] as [`McpClient::discover`] fails (the server unreachable or not
    /// MCP, `timeout` once `timeout` has passed); `authorization_required` or
    /// `authorization_failed` when no token could be obtained (the flow run by
    /// `authorizer` did not complete, the authorization server's metadata or token
    /// endpoint failed, `url` is not an HTTP server); `credential_store` when the grant
    /// could not be read or stored.
    pub async fn authorize(
        &self,
        url: &str,
        authorization: &Authorization,
        authorizer: Arc<dyn Authorizer>,
        timeout: Duration,
    ) -> Result<GrantStatus, CallError> {
        let request = DiscoveryRequest::new(Endpoint::http(url, None), timeout)
            .authorization(authorization.clone());
        discover(self, request, Some(authorizer)).await?;
        self.inner.auth.status(authorization, url).await
    }

    /// Removes a tenant's grant for a server (`mcp-tools logout`): its stored delegated
    /// grants and every token held in memory. Returns how many stored grants were removed.
    ///
    /// # Errors
    /// A [`CallError`] of kind `credential_store` when the credential store could not be
    /// reached or refused to remove a grant (the tokens in memory are forgotten anyway).
    pub async fn forget_grant(
        &self,
        url: &str,
        authorization: &Authorization,
    ) -> Result<usize, CallError> {
        self.inner.auth.forget(authorization, url).await
    }

    /// Whether a tenant has a usable grant for a server (`mcp-tools check --live`): reads
    /// the credential store, sends nothing.
    ///
    /// # Errors
    /// A [`CallError`] of kind `credential_store` when the store could not be reached, or
    /// holds a grant of the tenant's that it cannot read (the message names it).
    pub async fn grant_status(
        &self,
        url: &str,
        authorization: &Authorization,
    ) -> Result<GrantStatus, CallError> {
        self.inner.auth.status(authorization, url).await
    }
}
