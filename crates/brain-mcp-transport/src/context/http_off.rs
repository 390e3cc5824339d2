//! Without the `http` feature: the HTTP contexts (a legacy session, a 2026-07-28 client)
//! cannot exist, so their types are uninhabited and opening one fails with the error
//! that names the feature. A call to an HTTP server is refused before it gets here
//! (`crate::features`); these keep the client's code the same in every build.

/// A legacy session: none in this build.
pub(crate) mod legacy {
    use std::sync::Arc;

    use rmcp::{Peer, RoleClient, model::RequestId};
    use tokio::time::Instant;
    use tokio_util::sync::CancellationToken;

    use crate::{
        api::JsonObject,
        call_state::Registry,
        context::Shared,
        endpoint::HttpEndpoint,
        error::{CallError, ErrorKind, classify::Failure},
    };

    pub(crate) enum Session {}

    impl Session {
        pub(crate) fn peer(&self) -> &Peer<RoleClient> {
            match *self {}
        }

        pub(crate) fn is_open(&self) -> bool {
            match *self {}
        }

        pub(crate) fn registry(&self) -> &Arc<Registry> {
            match *self {}
        }

        pub(crate) fn failure(&self) -> Option<Failure> {
            match *self {}
        }

        pub(crate) fn session_id(&self) -> Option<String> {
            match *self {}
        }

        pub(crate) async fn over_budget(&self) {
            match *self {}
        }

        pub(crate) fn finish(self, _abandoned: Option<(RequestId, &'static str)>) {
            match self {}
        }
    }

    pub(crate) async fn open(
        _shared: &Shared,
        _endpoint: &HttpEndpoint,
        _deadline: Instant,
        _cancel: &CancellationToken,
        _non_call_budget: usize,
        _trace: &JsonObject,
    ) -> Result<Session, CallError> {
        Err(crate::features::missing(
            ErrorKind::Connect,
            "an HTTP server",
            "http",
        ))
    }
}

/// A 2026-07-28 client: none in this build.
pub(crate) mod modern {
    use std::{sync::Arc, time::Duration};

    use rmcp::{Peer, RoleClient};
    use tokio::time::Instant;
    use tokio_util::sync::CancellationToken;

    use crate::{
        call_state::Registry,
        context::Shared,
        endpoint::HttpEndpoint,
        error::{CallError, ErrorKind, classify::Failure},
    };

    #[derive(Debug)]
    #[allow(dead_code)]
    pub(crate) enum OpenError {
        Legacy,
        Failed(CallError),
    }

    /// No probe in this build: nothing to bound.
    pub(crate) fn probe_deadline(deadline: Instant) -> Instant {
        deadline
    }

    pub(crate) fn not_modern() -> CallError {
        crate::features::missing(ErrorKind::Connect, "an HTTP server", "http")
    }

    #[derive(Debug)]
    pub(crate) enum ModernClient {}

    impl ModernClient {
        pub(crate) async fn open(
            _shared: &Shared,
            _endpoint: &HttpEndpoint,
            _deadline: Instant,
            _cancel: &CancellationToken,
            _non_call_budget: usize,
            _probe_until: Option<Instant>,
        ) -> Result<Arc<Self>, OpenError> {
            Err(OpenError::Failed(not_modern()))
        }

        pub(crate) fn peer(&self) -> &Peer<RoleClient> {
            match *self {}
        }

        pub(crate) fn registry(&self) -> &Arc<Registry> {
            match *self {}
        }

        pub(crate) async fn ensure_listed(&self, _deadline: Instant) {
            match *self {}
        }

        pub(crate) fn is_closed(&self) -> bool {
            match *self {}
        }

        pub(crate) fn failure(&self) -> Option<Failure> {
            match *self {}
        }

        pub(crate) async fn over_budget(&self) {
            match *self {}
        }

        pub(crate) async fn close(&self, _grace: Duration) {
            match *self {}
        }
    }
}
