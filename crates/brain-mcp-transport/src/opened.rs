//! An open MCP context of any era, and the call flow on it: open, call once, close.

use std::sync::Arc;

use rmcp::{Peer, RoleClient, model::RequestId};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{
    calls::{CallState, Failure, Registry},
    client::{EraPreference, McpClient, spawn_background},
    endpoint::Endpoint,
    error::{CallError, ErrorKind},
    legacy,
    modern::{self, ModernClient},
    run::{
        CallOutcome, CallRequest, Era, Stop, cancel_reason, cancel_request, classify, drive_call,
    },
    stdio,
};

/// Room over a call's budget for the JSON-RPC envelope of a stdio answer.
const LINE_HEADROOM: usize = 64 * 1024;

/// What the context is for: a call may share a long-lived 2026-07-28 client; discovery
/// gets a fresh one, so what it reports is what the server says now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// A call, with its byte budget.
    Call {
        budget: usize,
    },
    Discovery,
}

/// An open MCP context.
pub(crate) enum Opened {
    Legacy(legacy::Session),
    Shared(Arc<ModernClient>),
    Owned(Arc<ModernClient>),
    Stdio(stdio::Session),
}

impl Opened {
    pub(crate) fn peer(&self) -> &Peer<RoleClient> {
        match self {
            Opened::Legacy(session) => session.peer(),
            Opened::Shared(client) | Opened::Owned(client) => client.peer(),
            Opened::Stdio(session) => session.peer(),
        }
    }

    fn registry(&self) -> &Arc<Registry> {
        match self {
            Opened::Legacy(session) => session.registry(),
            Opened::Shared(client) | Opened::Owned(client) => client.registry(),
            Opened::Stdio(session) => session.registry(),
        }
    }

    pub(crate) fn era(&self) -> Era {
        match self {
            Opened::Legacy(_) => Era::Legacy,
            Opened::Shared(_) | Opened::Owned(_) => Era::Modern,
            Opened::Stdio(session) => session.era(),
        }
    }

    /// What the transport recorded about requests that were not a call's own.
    pub(crate) fn failure(&self) -> Option<Failure> {
        match self {
            Opened::Legacy(session) => session.failure(),
            Opened::Owned(client) => client.failure(),
            Opened::Shared(_) | Opened::Stdio(_) => None,
        }
    }

    /// Closes the context (in the background where that takes round trips), after
    /// telling the server about an abandoned request.
    pub(crate) fn finish(self, client: &McpClient, abandoned: Option<(RequestId, &'static str)>) {
        let options = &client.inner.options;
        let owned = matches!(self, Opened::Owned(_));
        match self {
            Opened::Legacy(session) => session.finish(abandoned),
            Opened::Stdio(session) => {
                session.finish(&client.inner.tasks, options.stdio_grace, abandoned);
            }
            Opened::Shared(modern) | Opened::Owned(modern) => {
                let bound = options.close_timeout;
                // In the background: the result is not held back.
                spawn_background(&client.inner.tasks, async move {
                    // No round trip: rmcp closes the request's stream, this era's
                    // cancellation.
                    if let Some((id, reason)) = abandoned {
                        cancel_request(modern.peer(), id, reason, bound).await;
                    }
                    if owned {
                        modern.close(bound).await;
                    }
                });
            }
        }
    }
}

impl McpClient {
    /// Opens an MCP context on the endpoint, in the era the options and the server allow.
    pub(crate) async fn open(
        &self,
        endpoint: &Endpoint,
        deadline: Instant,
        cancel: &CancellationToken,
        purpose: Purpose,
    ) -> Result<Opened, CallError> {
        let http = match endpoint {
            Endpoint::Stdio(stdio) => {
                // A stdio message is one line: bound it by the call's budget (and some room
                // for the envelope), so an oversized answer ends as output_too_large.
                let line_limit = match purpose {
                    Purpose::Call { budget } => budget.saturating_add(LINE_HEADROOM),
                    Purpose::Discovery => self.inner.options.max_response_bytes,
                };
                return stdio::open(self, stdio, deadline, cancel, line_limit)
                    .await
                    .map(Opened::Stdio);
            }
            Endpoint::Http(http) => http,
        };
        let era = self.inner.options.era;
        if era != EraPreference::Legacy {
            let modern = match purpose {
                Purpose::Call { .. } => self
                    .modern_client(http, deadline, cancel)
                    .await?
                    .map(Opened::Shared),
                Purpose::Discovery => self
                    .fresh_modern_client(http, deadline, cancel)
                    .await?
                    .map(Opened::Owned),
            };
            match modern {
                Some(opened) => return Ok(opened),
                None if era == EraPreference::Modern => return Err(modern::not_modern()),
                None => {}
            }
        }
        legacy::open(self, http, deadline, cancel)
            .await
            .map(Opened::Legacy)
    }
}

/// One call: open, send once, stream progress, return; the context is closed after.
pub(crate) async fn call(
    client: &McpClient,
    request: &CallRequest,
) -> Result<CallOutcome, CallError> {
    let opened = client
        .open(
            &request.endpoint,
            request.deadline,
            &request.cancel,
            Purpose::Call {
                budget: request.max_output_bytes,
            },
        )
        .await?;
    let state = Arc::new(CallState::new(
        &request.progress_token,
        request.progress.clone(),
        request.max_output_bytes,
    ));
    let mut finishing = Finishing {
        client,
        opened: Some(opened),
        state: Arc::clone(&state),
    };
    let opened = finishing.opened.as_mut().expect("open until finished");
    if let (Opened::Shared(modern), true) = (&*opened, request.param_headers) {
        modern.ensure_listed(request.deadline).await;
    }
    let registration = opened.registry().register(Arc::clone(&state));
    let outcome = drive_call(
        opened.peer(),
        &client.inner.handler,
        registration.key(),
        &state,
        request,
    )
    .await;
    drop(registration);
    let era = opened.era();
    let (result, abandoned) = match outcome {
        Ok(result) => (Ok(CallOutcome { result, era }), None),
        Err(stop) => {
            let mut error = classify(&stop, &state, opened.failure(), &request.endpoint);
            if let (Opened::Stdio(session), Stop::Failed(_)) = (&mut *opened, &stop)
                && error.kind() == ErrorKind::Protocol
            {
                let detail = session.explain(&request.endpoint).await;
                error = error.with_detail_suffix(&detail);
            }
            (Err(error), cancel_reason(&stop))
        }
    };
    finishing.finish(abandoned);
    result
}

/// Closes a call's context however the call ends: finished, or its future dropped (then
/// the request still running is abandoned).
struct Finishing<'a> {
    client: &'a McpClient,
    opened: Option<Opened>,
    state: Arc<CallState>,
}

impl Finishing<'_> {
    /// Closes the context; `reason` is why a request still running was abandoned. A
    /// request never written needs no cancel notice (and now never will be written).
    fn finish(&mut self, reason: Option<&'static str>) {
        if let Some(opened) = self.opened.take() {
            let abandoned = reason
                .filter(|_| !self.state.abandon())
                .and_then(|reason| self.state.request().map(|id| (id, reason)));
            opened.finish(self.client, abandoned);
        }
    }
}

impl Drop for Finishing<'_> {
    fn drop(&mut self) {
        self.finish(Some("the caller dropped the call"));
    }
}
