//! What the HTTP layer knows of the request being served, for what rmcp asks outside a
//! request's context, in the request's own task: to make or restore a session
//! (`sessions`: whose it is, which version it asked for) and a tool's input schema for
//! the `Mcp-Param-*` headers (`Handler::get_tool`: the caller's own bindings).

use std::future::Future;

use crate::identity::Caller;

tokio::task_local! {
    static SERVING: Serving;
}

/// The request being served: who calls, and what its `initialize` asks for.
#[derive(Debug, Clone)]
pub(crate) struct Serving {
    pub(crate) caller: Caller,
    /// `params.protocolVersion` of an `initialize` request.
    pub(crate) initialize_version: Option<String>,
}

impl Serving {
    /// Runs `serving` (rmcp's service, for one request) as this request's.
    pub(crate) async fn scope<F: Future>(self, serving: F) -> F::Output {
        SERVING.scope(self, serving).await
    }

    /// `read` of the request being served; `None` outside one (over stdio).
    pub(crate) fn with<R>(read: impl FnOnce(&Self) -> R) -> Option<R> {
        SERVING.try_with(read).ok()
    }
}
