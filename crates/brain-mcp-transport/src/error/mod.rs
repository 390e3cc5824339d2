//! Why a call failed, and whether the server may have run it.

use std::{fmt, sync::Arc};

use crate::endpoint::Unusable;

pub(crate) mod classify;

pub use brain_tools_events::{Delivery, ErrorKind};

/// A call that did not produce a result.
///
/// The detail is built by this crate from fixed phrases, HTTP status codes and the
/// server's JSON-RPC error message (truncated); it never holds the bearer token, the
/// arguments, a URL path or query, or a response body.
///
/// Before trying again a host asks two questions, answered apart:
/// [`may_have_run`](Self::may_have_run) (from [`delivery`](Self::delivery): a retry may
/// repeat what the tool did) and [`retryable`](Self::retryable) (whether another try may
/// succeed at all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    kind: ErrorKind,
    delivery: Delivery,
    retryable: bool,
    status: Option<u16>,
    /// The JSON-RPC error code that ended the call, when a server answered one.
    rpc_code: Option<i32>,
    detail: String,
    /// The server refused the request for want of authorization (401, or 403 with a
    /// challenge): what the authorization layer reacts to.
    challenge: Option<Challenge>,
    /// The refused request was the call's own `tools/call` (not its handshake): sending
    /// it again after a new authorization is its one resend.
    call_refused: bool,
    /// The server answered the call (with a JSON-RPC error): another context would get
    /// the same answer.
    answered: bool,
    /// The credential store holds the tenant's grant and cannot read it.
    unreadable_grant: bool,
}

/// A server's refusal of a request for want of authorization: the status (401, or 403)
/// and its `WWW-Authenticate` header, if it sent one (bounded; never shown in messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub(crate) status: u16,
    pub(crate) header: Option<Arc<str>>,
}

/// The longest `WWW-Authenticate` value kept: a real challenge is a few hundred bytes.
pub(crate) const MAX_CHALLENGE_BYTES: usize = 8 * 1024;

impl Challenge {
    /// The challenge in a 401 or 403 answer, from its `WWW-Authenticate` header (a 403
    /// without one is a plain refusal, not a challenge).
    pub(crate) fn of(status: u16, header: Option<&str>) -> Option<Self> {
        let header = header
            .filter(|value| value.len() <= MAX_CHALLENGE_BYTES)
            .map(Arc::from);
        match status {
            401 => Some(Self { status, header }),
            403 if header.is_some() => Some(Self { status, header }),
            _ => None,
        }
    }
}

impl CallError {
    /// An error, retryable as its kind usually is
    /// ([`ErrorKind::retryable_by_default`]; [`Self::retryable_if`] says otherwise).
    pub(crate) fn new(kind: ErrorKind, delivery: Delivery, detail: impl Into<String>) -> Self {
        Self {
            kind,
            delivery,
            retryable: kind.retryable_by_default(),
            status: None,
            rpc_code: None,
            detail: detail.into(),
            challenge: None,
            call_refused: false,
            answered: false,
            unreadable_grant: false,
        }
    }

    /// The server answered `status`; `session`: to a request that carried a session id.
    pub(crate) fn http_status(status: u16, session: bool, delivery: Delivery) -> Self {
        Self {
            kind: ErrorKind::HttpStatus,
            delivery,
            retryable: status_passes(status, session),
            status: Some(status),
            rpc_code: None,
            detail: format!(
                "the server answered HTTP {status}{}",
                status_hint(status, session)
            ),
            challenge: None,
            call_refused: false,
            answered: false,
            unreadable_grant: false,
        }
    }

    /// Says whether another try may succeed.
    pub(crate) fn retryable_if(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// Notes the JSON-RPC error code the server ended the call with.
    pub(crate) fn with_rpc_code(mut self, code: i32) -> Self {
        self.rpc_code = Some(code);
        self
    }

    /// The JSON-RPC error code the server ended the call with, if it answered one.
    pub(crate) fn rpc_code(&self) -> Option<i32> {
        self.rpc_code
    }

    /// Attaches the server's authorization challenge.
    pub(crate) fn with_challenge(mut self, challenge: Option<Challenge>) -> Self {
        self.challenge = challenge;
        self
    }

    /// Marks the error as the server's answer to the call.
    pub(crate) fn answered(mut self) -> Self {
        self.answered = true;
        self
    }

    /// Marks a credential store error as a grant the store holds and cannot read.
    pub(crate) fn unreadable(mut self) -> Self {
        self.unreadable_grant = true;
        self
    }

    /// Whether the server answered the call (so sending it elsewhere changes nothing).
    pub(crate) fn is_an_answer(&self) -> bool {
        self.answered
    }

    /// Marks the refusal as one of the call's own `tools/call`.
    pub(crate) fn refusing_the_call(mut self) -> Self {
        self.call_refused = true;
        self
    }

    /// Whether the server refused the call's own `tools/call` (not its handshake) for
    /// want of authorization.
    pub(crate) fn refused_the_call(&self) -> bool {
        self.call_refused && self.challenge().is_some()
    }

    /// The server's authorization challenge, when it refused the request for want of
    /// authorization (the request was then not run: the error is `not_sent`).
    pub(crate) fn challenge(&self) -> Option<&Challenge> {
        self.challenge
            .as_ref()
            .filter(|_| self.delivery == Delivery::NotSent)
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// Whether the server may have run the tool.
    pub fn delivery(&self) -> Delivery {
        self.delivery
    }

    /// Whether the credential store holds the tenant's grant but cannot read it (a torn
    /// or edited file, a row sealed with a key this host does not have; kind
    /// [`ErrorKind::CredentialStore`]): removing the grant (`mcp-tools logout`) or making
    /// it again (`mcp-tools login`) repairs it, which a message can tell the operator.
    pub fn unreadable_grant(&self) -> bool {
        self.unreadable_grant
    }

    /// Whether the server may have run the tool (delivery `unknown` or `delivered`), so
    /// that trying again may repeat what it did. False only for `not_sent`.
    pub fn may_have_run(&self) -> bool {
        self.delivery.may_have_run()
    }

    /// Whether the same call, made again unchanged, may succeed: false when it is known
    /// to fail the same way (a command that cannot start, a refusal of the request as
    /// such, an answer that is not MCP), true when the failure may pass (a server that is
    /// down or slow, a connection that broke, a process that died). See docs/errors.md.
    pub fn retryable(&self) -> bool {
        self.retryable
    }

    /// The HTTP status, for [`ErrorKind::HttpStatus`].
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// A clause describing the failure, e.g. `the server answered HTTP 401 (unauthorized)`.
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// The error with these secrets taken out of its text.
    pub(crate) fn hiding(mut self, redactor: &crate::secret::Redactor) -> Self {
        if let std::borrow::Cow::Owned(hidden) = redactor.text(&self.detail) {
            self.detail = hidden;
        }
        self
    }

    /// Adds what explains the failure (for example a stdio server's exit status).
    pub(crate) fn with_detail_suffix(mut self, suffix: &str) -> Self {
        self.detail.push_str(suffix);
        self
    }
}

/// Whether a refusing status may pass: a session the server expired (a fresh one may
/// serve), a timeout, a rate limit, a server error or overload. Every other status says
/// the same again to the same request (the credentials, the URL, the method).
fn status_passes(status: u16, session: bool) -> bool {
    match status {
        404 => session,
        408 | 425 | 429 | 500..=599 => true,
        _ => false,
    }
}

fn status_hint(status: u16, session: bool) -> &'static str {
    match status {
        401 => " (unauthorized: check the token)",
        403 => " (forbidden)",
        // Only a request that carried a session id can find its session gone.
        404 if session => " (the session expired)",
        404 => " (not found: check that the URL is the server's MCP endpoint)",
        405 => " (method not allowed)",
        406 => " (not acceptable)",
        429 => " (too many requests)",
        500..=599 => " (server error)",
        _ => "",
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for CallError {}

impl From<Unusable> for CallError {
    fn from(unusable: Unusable) -> Self {
        let (kind, detail) = match unusable {
            Unusable::Url => (
                ErrorKind::Connect,
                "the endpoint URL is not an absolute http or https URL",
            ),
            Unusable::UserInfo => (
                ErrorKind::Connect,
                "the endpoint URL holds user info (user:password@), which this client does not \
                 send; use a bearer token instead",
            ),
            Unusable::Token => (
                ErrorKind::MissingToken,
                "the bearer token is not a valid HTTP header value (it is empty, or holds a \
                 space, a newline or another control character)",
            ),
        };
        CallError::new(kind, Delivery::NotSent, detail).retryable_if(false)
    }
}
