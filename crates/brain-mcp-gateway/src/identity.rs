//! Who is calling: the tenant comes from the caller's credentials, never from the
//! request. A bearer with three dot-separated parts is a JWT access token (checked
//! against the configured issuers, see `jwt`); any other bearer is an API key (looked up
//! in the key file). No credentials, or credentials that do not check, get `401` with a
//! `WWW-Authenticate` challenge that names the protected resource metadata (RFC 9728);
//! a token without a required scope gets `403 insufficient_scope`.
//!
//! The caller's token is never sent upstream: upstream credentials are the bindings' own.

use axum::{
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::json;

use crate::{
    jwt::{Issuers, Refusal},
    keys::ApiKeys,
};

/// Who a request comes from, as its credentials say.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Caller {
    /// The caller's tenant: the bindings it may list and call.
    pub tenant: String,
    /// The token's subject (`sub`), for the audit line; `None` for an API key.
    pub subject: Option<String>,
}

impl Caller {
    pub(crate) fn local(tenant: &str) -> Self {
        Self {
            tenant: tenant.to_owned(),
            subject: None,
        }
    }
}

/// How the gateway knows its callers.
#[derive(Debug)]
pub(crate) struct Identity {
    pub(crate) issuers: Option<Issuers>,
    pub(crate) keys: ApiKeys,
    /// The resource the gateway serves, and where its metadata is.
    pub(crate) resource: Option<String>,
    pub(crate) metadata_url: Option<String>,
}

impl Identity {
    /// The caller of a request, or the response that refuses it.
    pub(crate) async fn caller(&self, headers: &HeaderMap) -> Result<Caller, Box<Response>> {
        let Some(token) = bearer(headers) else {
            return Err(Box::new(self.challenge(
                StatusCode::UNAUTHORIZED,
                None,
                None,
            )));
        };
        let is_jwt = token.split('.').count() == 3;
        match (&self.issuers, is_jwt) {
            (Some(issuers), true) => match issuers.check(token).await {
                Ok(claimed) => Ok(Caller {
                    tenant: claimed.tenant,
                    subject: claimed.subject,
                }),
                Err(Refusal::Invalid(why)) => Err(Box::new(self.challenge(
                    StatusCode::UNAUTHORIZED,
                    Some(("invalid_token", why)),
                    None,
                ))),
                Err(Refusal::Scope(needed)) => Err(Box::new(self.challenge(
                    StatusCode::FORBIDDEN,
                    Some((
                        "insufficient_scope",
                        "the access token lacks a scope this gateway needs",
                    )),
                    Some(&needed.join(" ")),
                ))),
            },
            _ => match self.keys.tenant_of(token) {
                Some(tenant) => Ok(Caller::local(tenant)),
                None => Err(Box::new(self.challenge(
                    StatusCode::UNAUTHORIZED,
                    Some(("invalid_token", "the credentials are not valid")),
                    None,
                ))),
            },
        }
    }

    /// A refusal with its `WWW-Authenticate` challenge (RFC 6750, RFC 9728).
    fn challenge(
        &self,
        status: StatusCode,
        error: Option<(&str, &str)>,
        scope: Option<&str>,
    ) -> Response {
        let mut parts = Vec::new();
        match &self.metadata_url {
            Some(url) => parts.push(format!("resource_metadata=\"{url}\"")),
            None => parts.push("realm=\"brain-mcp-gateway\"".to_owned()),
        }
        if let Some((code, description)) = error {
            parts.push(format!("error=\"{code}\""));
            parts.push(format!("error_description=\"{description}\""));
        }
        // The scopes to ask for: the ones missing, else every one this gateway needs.
        let scope = scope.map(str::to_owned).or_else(|| {
            self.issuers
                .as_ref()
                .map(|issuers| issuers.scopes().join(" "))
                .filter(|scopes| !scopes.is_empty())
        });
        if let Some(scope) = scope {
            parts.push(format!("scope=\"{scope}\""));
        }
        let value = format!("Bearer {}", parts.join(", "));
        let mut response = (
            status,
            axum::Json(json!({
                "error": error.map_or("unauthorized", |(code, _)| code),
                "error_description": error.map_or("this gateway needs credentials: an access token or an API key, as a Bearer token", |(_, d)| d),
            })),
        )
            .into_response();
        if let Ok(value) = HeaderValue::from_str(&value) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }

    /// The protected resource metadata (RFC 9728).
    pub(crate) fn metadata(&self) -> serde_json::Value {
        let issuers: Vec<&str> = self
            .issuers
            .as_ref()
            .map(|issuers| issuers.identifiers().collect())
            .unwrap_or_default();
        let scopes: &[String] = self
            .issuers
            .as_ref()
            .map_or(&[], |issuers| issuers.scopes());
        json!({
            "resource": self.resource,
            "authorization_servers": issuers,
            "scopes_supported": scopes,
            "bearer_methods_supported": ["header"],
            "resource_name": "Brain MCP gateway",
        })
    }
}

/// The bearer token of a request, if it has one.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Where the metadata of `resource` is served (RFC 9728 section 3.1: the well-known
/// segment between the host and the resource's path).
pub(crate) fn metadata_url(resource: &str) -> Option<(String, String)> {
    let url = url::Url::parse(resource).ok()?;
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let served = format!("/.well-known/oauth-protected-resource{path}");
    Some((format!("{origin}{served}"), served))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_lives_at_the_well_known_path_of_the_resource() {
        assert_eq!(
            metadata_url("https://gw.example.com/mcp"),
            Some((
                "https://gw.example.com/.well-known/oauth-protected-resource/mcp".to_owned(),
                "/.well-known/oauth-protected-resource/mcp".to_owned()
            ))
        );
        assert_eq!(
            metadata_url("http://127.0.0.1:8080/").map(|(_, path)| path),
            Some("/.well-known/oauth-protected-resource".to_owned())
        );
    }

    #[test]
    fn only_bearer_credentials_count() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), None);
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&headers), None);
        headers.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer  k1 "),
        );
        assert_eq!(bearer(&headers), Some("k1"));
    }
}
