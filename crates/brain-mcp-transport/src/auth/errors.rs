//! From what went wrong while obtaining a token to the error a host acts on. Every
//! message is built from fixed phrases (and, for a token endpoint's refusal, the OAuth
//! error code): never from what an authorization server sent, which could hold a secret.

use rmcp::transport::auth::enterprise::{EmaError, EmaExchangeStage};
use rmcp::transport::auth::{AuthError, ProtectedResourceMetadataInvalidReason};

use crate::error::{CallError, Delivery, ErrorKind};

/// The OAuth error codes (RFC 6749 §5.2 and extensions) a message may name.
const OAUTH_CODES: &[&str] = &[
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "unauthorized_client",
    "unsupported_grant_type",
    "invalid_scope",
    "invalid_target",
    "access_denied",
    "server_error",
    "temporarily_unavailable",
    "invalid_dpop_proof",
    "use_dpop_nonce",
];

/// `authorization_required`: someone must authorize (again).
pub(crate) fn required(detail: impl Into<String>) -> CallError {
    CallError::new(ErrorKind::AuthorizationRequired, Delivery::NotSent, detail)
}

/// `authorization_failed`: obtaining a token failed.
pub(crate) fn failed(detail: impl Into<String>) -> CallError {
    CallError::new(ErrorKind::AuthorizationFailed, Delivery::NotSent, detail)
}

/// `authorization_failed` for a reason that may pass: an authorization server that could
/// not be reached, or that said it is in trouble (a 5xx, a 429, `server_error`,
/// `temporarily_unavailable`).
fn failed_for_now(detail: impl Into<String>) -> CallError {
    failed(detail).retryable_if(true)
}

/// `failed`, or [`failed_for_now`] when the OAuth error code in `text` says the server is
/// in trouble for now.
fn failed_with_code(phrase: &str, text: &str) -> CallError {
    let detail = with_code(phrase, text);
    match oauth_code(text) {
        Some("server_error" | "temporarily_unavailable") => failed_for_now(detail),
        _ => failed(detail),
    }
}

/// A server refused a request for want of a DPoP nonce again, after the one time the
/// transport answered it (or when the call's one resend was used already): the request
/// was not run.
pub(crate) fn nonce_refused() -> CallError {
    failed(
        "the server refused the request for want of a DPoP nonce, after it was sent again with \
         the nonce the server gave (or when the call's one resend was used already); it was not \
         run",
    )
}

/// The OAuth error code a failure's text names, if one of the known ones.
fn oauth_code(text: &str) -> Option<&'static str> {
    OAUTH_CODES.iter().copied().find(|code| text.contains(code))
}

fn with_code(phrase: &str, text: &str) -> String {
    match oauth_code(text) {
        Some(code) => format!("{phrase} ({code})"),
        None => phrase.to_owned(),
    }
}

/// A token endpoint refused a token request: its OAuth error code is named, nothing else
/// of what it sent.
pub(crate) fn token_refused(status: u16, body: &str) -> CallError {
    let error = failed_with_code(
        &format!("the token endpoint refused the request with HTTP {status}"),
        body,
    );
    if matches!(status, 429 | 500..=599) {
        error.retryable_if(true)
    } else {
        error
    }
}

/// The error for a failed discovery of the authorization server's metadata. There an
/// issuer that does not match is the metadata's own (RFC 8414 section 3.3: the issuer
/// the metadata names must be the one its well-known address was built from), not the
/// authorization response's (RFC 9207), which is what rmcp's same error means elsewhere.
pub(crate) fn from_discovery(error: &AuthError) -> CallError {
    match error {
        // Both issuers are servers' text: not repeated.
        AuthError::AuthorizationServerMismatch { .. } => failed(
            "the authorization server's metadata names another issuer than the one its \
             address was built from (RFC 8414 section 3.3)",
        ),
        AuthError::AuthorizationServerMissingIssuer { .. } => {
            failed("the authorization server's metadata names no issuer (RFC 8414 section 3.3)")
        }
        _ => from_auth(error),
    }
}

/// The error for one of rmcp's.
pub(crate) fn from_auth(error: &AuthError) -> CallError {
    match error {
        AuthError::AuthorizationRequired => required(
            "the tenant has no usable grant for this server (none was made, or it expired and \
             cannot be refreshed)",
        ),
        AuthError::TokenRefreshRejected(_) => {
            required("the authorization server rejected the tenant's refresh token")
        }
        AuthError::TokenRefreshFailed(text) => {
            failed_with_code("the access token could not be refreshed", text)
        }
        // Both issuers are servers' text: not repeated.
        AuthError::AuthorizationServerMismatch { .. } => failed(
            "the authorization response names another issuer than the authorization \
             server's metadata (RFC 9207)",
        ),
        AuthError::AuthorizationServerMissingIssuer { .. } => failed(
            "the authorization response did not name its issuer, which the authorization \
             server said it would (RFC 9207)",
        ),
        AuthError::ProtectedResourceMetadataInvalid { reason, .. } => match reason.as_ref() {
            ProtectedResourceMetadataInvalidReason::ResourceMismatch { .. } => failed(
                "the server's protected resource metadata names another resource than this \
                 server",
            ),
            _ => failed("the server's protected resource metadata is invalid"),
        },
        AuthError::AuthorizationServersUnavailable { .. } => failed_for_now(
            "none of the authorization servers the server names published usable metadata",
        ),
        AuthError::DiscoveryRequestFailed { .. } => {
            failed_for_now("the authorization metadata could not be fetched")
        }
        AuthError::PkceUnsupported => {
            failed("the authorization server does not support PKCE with S256")
        }
        AuthError::RegistrationFailed(text) => {
            failed(with_code("dynamic client registration failed", text))
        }
        // rmcp's own check, before a client assertion is signed: nothing was sent.
        AuthError::ClientCredentialsError(text) if text.contains("HTTPS is required") => failed(
            "the authorization server's token endpoint is not https, so the client \
                 assertion was not sent",
        ),
        AuthError::TokenExchangeFailed(text) | AuthError::ClientCredentialsError(text) => {
            failed_with_code("the token endpoint refused the request", text)
        }
        #[cfg(feature = "oauth-jwt")]
        AuthError::JwtSigningError(_) => failed(
            "the client assertion could not be signed (check the private key and its algorithm)",
        ),
        AuthError::CredentialStoreError(_) => failed("the credential store failed"),
        AuthError::AuthorizationFailed(_) => failed("the authorization response was invalid"),
        AuthError::NoAuthorizationSupport | AuthError::MetadataError(_) => {
            failed("the server's authorization metadata is unusable")
        }
        AuthError::InvalidScope(_) => failed("the authorization server refused the scopes"),
        _ => failed("the authorization failed"),
    }
}

/// The error for a failed enterprise-managed exchange.
pub(crate) fn from_ema(error: &EmaError) -> CallError {
    let stage = |stage: &EmaExchangeStage| match stage {
        EmaExchangeStage::IdentityProvider => "the identity provider",
        _ => "the authorization server",
    };
    match error {
        EmaError::InvalidGrant(at) => required(format!(
            "{} rejected the tenant's identity assertion (invalid_grant)",
            stage(at)
        )),
        EmaError::InsufficientUserAuthentication(at) => required(format!(
            "{} requires the user to authenticate again",
            stage(at)
        )),
        EmaError::OAuthRejected {
            stage: at, code, ..
        } => failed(format!("{} refused the token exchange ({code})", stage(at))),
        EmaError::RequestFailed(at) => {
            failed_for_now(format!("{} could not be reached", stage(at)))
        }
        EmaError::InvalidResponse { stage: at, message } => failed(format!(
            "{} answered with an invalid token: {message}",
            stage(at)
        )),
        EmaError::InvalidRequest(message) => {
            failed(format!("the token exchange could not be made: {message}"))
        }
        _ => failed("the token exchange failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_codes_never_bodies() {
        let body = "Server returned error response: invalid_client: secret cs-LEAKED-0001 is wrong";
        for error in [
            AuthError::ClientCredentialsError(body.into()),
            AuthError::TokenExchangeFailed(body.into()),
            AuthError::TokenRefreshFailed(body.into()),
            AuthError::RegistrationFailed(body.into()),
        ] {
            let mapped = from_auth(&error);
            assert_eq!(mapped.kind(), ErrorKind::AuthorizationFailed);
            assert_eq!(mapped.delivery(), Delivery::NotSent);
            assert!(mapped.detail().ends_with("(invalid_client)"), "{mapped}");
            assert!(!mapped.detail().contains("LEAKED"), "{mapped}");
        }
        for error in [
            AuthError::AuthorizationRequired,
            AuthError::TokenRefreshRejected(body.into()),
        ] {
            let mapped = from_auth(&error);
            assert_eq!(mapped.kind(), ErrorKind::AuthorizationRequired);
            assert!(!mapped.detail().contains("LEAKED"), "{mapped}");
        }
        let mismatch = || AuthError::AuthorizationServerMismatch {
            expected_issuer: "https://as.example".into(),
            received_issuer: "https://evil.example".into(),
        };
        // In an authorization response (RFC 9207), and in discovered metadata (RFC 8414).
        for (mapped, rfc) in [
            (from_auth(&mismatch()), "RFC 9207"),
            (from_discovery(&mismatch()), "RFC 8414"),
        ] {
            assert!(
                !mapped.detail().contains("evil") && mapped.detail().contains(rfc),
                "{mapped}"
            );
        }
        assert_eq!(
            from_ema(&EmaError::InvalidGrant(EmaExchangeStage::IdentityProvider)).kind(),
            ErrorKind::AuthorizationRequired
        );
    }
}
