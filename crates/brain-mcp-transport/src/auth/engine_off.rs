//! Without the `oauth` feature: the same interface as `engine.rs`, refusing every grant
//! with an error that names the feature (a call with a grant is refused earlier, by
//! `crate::features`; this is what the grant commands of a client get).

use std::sync::Arc;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{AuthOptions, Authorizer, GrantStatus, Refreshes};
use crate::{
    endpoint::HttpEndpoint,
    error::{CallError, ErrorKind},
    grant::Authorization,
    telemetry::Metrics,
    wire::http::Clients,
};

/// The authorization state of a client built without OAuth: none (no refresh ever runs).
#[derive(Debug, Clone, Default)]
pub(crate) struct Auth {
    refreshes: Arc<Refreshes>,
}

/// One operation's use of a grant (never run in this build).
#[allow(dead_code)]
pub(crate) struct Run<'a> {
    pub(crate) authorization: &'a Authorization,
    pub(crate) url: &'a str,
    pub(crate) deadline: Instant,
    pub(crate) cancel: &'a CancellationToken,
    pub(crate) authorizer: Option<Arc<dyn Authorizer>>,
    pub(crate) login: bool,
    pub(crate) resend: Option<crate::api::ResendBudget>,
}

/// What one attempt sends: never anything in this build.
#[derive(Debug, Clone)]
pub(crate) enum Credentials {}

impl Credentials {
    pub(crate) fn apply(&self, _endpoint: &mut HttpEndpoint) {
        match *self {}
    }
}

fn no_oauth() -> CallError {
    crate::features::missing(ErrorKind::AuthorizationFailed, "an OAuth grant", "oauth")
}

impl Auth {
    pub(crate) fn new(
        _options: &AuthOptions,
        _http: &Clients,
        _client_name: &str,
        _metrics: Metrics,
    ) -> Self {
        Self::default()
    }

    pub(crate) fn refreshes(&self) -> &Refreshes {
        &self.refreshes
    }

    pub(crate) async fn run<T, F, Fut>(&self, _run: Run<'_>, _attempt: F) -> Result<T, CallError>
    where
        F: FnMut(Option<Credentials>) -> Fut,
        Fut: Future<Output = Result<T, CallError>>,
    {
        Err(no_oauth())
    }

    pub(crate) async fn forget(
        &self,
        _authorization: &Authorization,
        _url: &str,
    ) -> Result<usize, CallError> {
        Err(no_oauth())
    }

    pub(crate) async fn status(
        &self,
        _authorization: &Authorization,
        _url: &str,
    ) -> Result<GrantStatus, CallError> {
        Err(no_oauth())
    }
}
