//! Bearer tokens for a protected test server ([`BearerOptions`]): the check in front of
//! `/mcp`, the protected resource metadata (RFC 9728), and the server's own authorization
//! server (RFC 8414 metadata, a `/token` endpoint for the client credentials grant).

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Form;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

use crate::options::BearerOptions;
use crate::tools::Kit;

/// Where the protected resource metadata of `/mcp` is (RFC 9728's path-suffixed form).
pub(crate) const RESOURCE_METADATA: &str = "/.well-known/oauth-protected-resource/mcp";
/// Where the authorization server metadata is (RFC 8414, issuer at the root).
pub(crate) const AUTHORIZATION_METADATA: &str = "/.well-known/oauth-authorization-server";

/// The tokens a protected server accepts.
#[derive(Debug)]
pub(crate) struct Bearers {
    options: BearerOptions,
    issued: Mutex<HashSet<String>>,
    next: AtomicU64,
}

impl Bearers {
    pub(crate) fn new(options: BearerOptions) -> Self {
        Self {
            options,
            issued: Mutex::default(),
            next: AtomicU64::new(1),
        }
    }

    /// Whether the request's `Authorization` header carries a token this server accepts:
    /// as a Bearer token, or as a DPoP-bound one (RFC 9449) with a `DPoP` proof, whose
    /// form only is looked at (checking it is a server's cost, not the client's).
    pub(crate) fn accepts(&self, headers: &HeaderMap) -> bool {
        let authorization = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        let proved = || {
            headers
                .get("dpop")
                .and_then(|value| value.to_str().ok())
                .is_some_and(|proof| proof.split('.').count() == 3)
        };
        let token = authorization
            .strip_prefix("Bearer ")
            .or_else(|| authorization.strip_prefix("DPoP ").filter(|_| proved()));
        let Some(token) = token else {
            return false;
        };
        self.options.static_token.as_deref() == Some(token)
            || self
                .issued
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .contains(token)
    }

    fn issue(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let token = format!(
            "testkit-at-{n:08}-{:016x}",
            n.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        );
        self.issued
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(token.clone());
        token
    }
}

/// `http://<Host>`: the origin the client used (so a proxy in front keeps its own).
fn origin(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|host| host.to_str().ok())
        .unwrap_or("127.0.0.1");
    format!("http://{host}")
}

/// The 401 of a request without an accepted bearer.
pub(crate) fn challenge(headers: &HeaderMap) -> Response {
    let value = format!(
        "Bearer error=\"invalid_token\", resource_metadata=\"{}{RESOURCE_METADATA}\"",
        origin(headers)
    );
    let mut response = (StatusCode::UNAUTHORIZED, "a bearer token is required").into_response();
    if let Ok(value) = HeaderValue::from_str(&value) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// RFC 9728 metadata of `/mcp`: this server is its own authorization server.
pub(crate) async fn resource_metadata(headers: HeaderMap) -> Response {
    let origin = origin(&headers);
    axum::Json(json!({
        "resource": format!("{origin}/mcp"),
        "authorization_servers": [origin],
        "bearer_methods_supported": ["header"],
    }))
    .into_response()
}

/// RFC 8414 metadata: client credentials with `client_secret_post` only.
pub(crate) async fn authorization_metadata(headers: HeaderMap) -> Response {
    let origin = origin(&headers);
    axum::Json(json!({
        "issuer": origin,
        "authorization_endpoint": format!("{origin}/authorize"),
        "token_endpoint": format!("{origin}/token"),
        "grant_types_supported": ["client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_post"],
        "response_types_supported": ["code"],
    }))
    .into_response()
}

/// The fields of a token request this server reads.
#[derive(Debug, Deserialize)]
pub(crate) struct TokenRequest {
    grant_type: String,
    #[serde(default)]
    client_id: String,
    #[serde(default)]
    client_secret: String,
}

fn oauth_error(status: StatusCode, error: &str) -> Response {
    (status, axum::Json(json!({ "error": error }))).into_response()
}

/// The token endpoint: a fresh access token for the configured client.
pub(crate) async fn token(
    State(kit): State<Arc<Kit>>,
    Form(request): Form<TokenRequest>,
) -> Response {
    let Some(bearers) = &kit.bearers else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if request.grant_type != "client_credentials" {
        return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type");
    }
    if request.client_id != bearers.options.client_id
        || request.client_secret != bearers.options.client_secret
    {
        return oauth_error(StatusCode::UNAUTHORIZED, "invalid_client");
    }
    kit.stats.update(|c| c.tokens_issued += 1);
    axum::Json(json!({
        "access_token": bearers.issue(),
        "token_type": "Bearer",
        "expires_in": bearers.options.expires_in,
    }))
    .into_response()
}
