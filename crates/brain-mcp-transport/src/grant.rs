//! Whom a call acts for, and how its access tokens are obtained: a binding's OAuth grant,
//! as plain data. The machinery that turns a grant into tokens is in `auth`.
//!
//! Secrets (a client secret, a private key) are held in [`Secret`], so the `Debug` of
//! every type here shows none of them.

use serde_json::json;

use crate::secret::Secret;

/// Whose call this is, and the grant that authorizes it. A tenant's call only ever
/// carries a token obtained for that tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Authorization {
    /// The tenant the call acts for: tokens are obtained and kept per tenant.
    pub tenant: String,
    /// How the tokens are obtained.
    pub grant: Grant,
}

impl Authorization {
    /// A tenant's authorization with a grant.
    pub fn new(tenant: impl Into<String>, grant: Grant) -> Self {
        Self {
            tenant: tenant.into(),
            grant,
        }
    }
}

/// How access tokens for an MCP server are obtained: the shared auth model
/// (`brain-tools-auth`) with its secrets held in [`Secret`].
pub type Grant = brain_tools_auth::McpAuth<Secret>;
/// The client credentials grant, its secret held.
pub type ClientCredentialsGrant = brain_tools_auth::ClientCredentials<Secret>;
/// How a client authenticates at the token endpoint, its secret held.
pub type ClientAuthentication = brain_tools_auth::ClientAuthentication<Secret>;
/// A delegated grant (authorization code with PKCE), its client's secret held.
pub type AuthorizationCodeGrant = brain_tools_auth::OAuth<Secret>;
/// Enterprise-managed authorization, its client secrets held.
pub type EnterpriseGrant = brain_tools_auth::Enterprise<Secret>;
/// A workload identity, its token held.
pub type WorkloadIdentityGrant = brain_tools_auth::WorkloadIdentity<Secret>;

pub use brain_tools_auth::{DEFAULT_REDIRECT_URI, SecretMethod, SigningAlgorithm};

/// What the transport needs of a grant beyond the shared model.
pub(crate) trait GrantExt {
    /// Everything that identifies the grant except its secrets: two calls whose grants
    /// differ only in a secret (a rotated client secret) share their tokens.
    fn identity(&self) -> String;
    /// The grant's own secrets (client secrets, a private key, a workload token).
    fn owned_secrets(&self) -> Vec<Secret>;
}

impl GrantExt for Grant {
    /// Everything that identifies the grant except its secrets: two calls whose grants
    /// differ only in a secret (a rotated client secret) share their tokens.
    fn identity(&self) -> String {
        let value = match self {
            Grant::ClientCredentials(grant) => json!({
                "type": "client_credentials",
                "client_id": grant.client_id,
                "authentication": match &grant.authentication {
                    ClientAuthentication::Secret { method, .. } => {
                        json!({"secret": method.map(SecretMethod::as_str)})
                    }
                    ClientAuthentication::PrivateKeyJwt { algorithm, .. } => {
                        json!({"private_key_jwt": algorithm.as_str()})
                    }
                    other => json!({"method": other.method().map(|m| m.as_str())}),
                },
                "scopes": grant.scopes,
                "issuer": grant.issuer,
                "dpop": grant.dpop,
            }),
            Grant::OAuth(grant) => json!({
                "type": "authorization_code",
                "client_id": grant.client_id,
                "client_id_metadata_url": grant.client_id_metadata_url,
                "redirect_uri": grant.redirect_uri,
                "scopes": grant.scopes,
                "issuer": grant.issuer,
                "dpop": grant.dpop,
            }),
            Grant::Enterprise(grant) => json!({
                "type": "enterprise",
                "client_id": grant.client_id,
                "idp_issuer": grant.idp_issuer,
                "idp_token_endpoint": grant.idp_token_endpoint,
                "idp_client_id": grant.idp_client_id,
                "scopes": grant.scopes,
                "issuer": grant.issuer,
            }),
            // The assertion rotates (a platform token lives an hour or so), its subject
            // does not: a rotated token keeps the grant's cached access token, another
            // workload's never shares it.
            Grant::WorkloadIdentity(grant) => json!({
                "type": "workload_identity",
                "subject": workload_subject(grant.assertion.expose()),
                "client_id": grant.client_id,
                "scopes": grant.scopes,
                "issuer": grant.issuer,
            }),
            // A kind of grant added to the model later: its type stands for it until
            // the transport knows it (it cannot be run before then anyway).
            other => json!({"type": other.type_name()}),
        };
        value.to_string()
    }

    fn owned_secrets(&self) -> Vec<Secret> {
        self.secrets().into_iter().cloned().collect()
    }
}

/// Who a workload identity token names: its `iss` and `sub` claims (read, not verified:
/// the authorization server verifies it), or, for a token that is not a JWT with them, a
/// digest of the whole token (then each rotation is a new identity).
fn workload_subject(assertion: &str) -> String {
    let claims = jwt_claims(assertion);
    let claim = |name: &str| {
        claims
            .as_ref()
            .and_then(|claims| claims.get(name))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned)
    };
    match (claim("iss"), claim("sub")) {
        (Some(issuer), Some(subject)) => format!("{issuer} {subject}"),
        _ => {
            use sha2::{Digest, Sha256};
            let digest = Sha256::digest(assertion.as_bytes());
            digest.iter().map(|byte| format!("{byte:02x}")).collect()
        }
    }
}

/// The claims of a JWT, read without verifying it; `None` for what is not a JWT.
pub(crate) fn jwt_claims(token: &str) -> Option<serde_json::Value> {
    use base64::Engine as _;
    let payload = token.split('.').nth(1)?;
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice::<serde_json::Value>(&payload)
        .ok()
        .filter(serde_json::Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_secret_and_identity_ignores_secrets() {
        let grant = |secret: &str| {
            Grant::ClientCredentials(
                ClientCredentialsGrant::new(
                    "host",
                    ClientAuthentication::Secret {
                        secret: Secret::new(secret),
                        method: Some(SecretMethod::Basic),
                    },
                )
                .scopes(["files:read"]),
            )
        };
        let debug = format!("{:?}", Authorization::new("acme", grant("cs-0123456789")));
        assert!(!debug.contains("cs-0123456789"), "{debug}");
        assert_eq!(grant("a").identity(), grant("b").identity());
        let enterprise = Grant::Enterprise(
            EnterpriseGrant::new("c", "https://idp", "https://idp/token", "i")
                .client_secret(Some(Secret::new("as-secret-0001")))
                .idp_client_secret(Some(Secret::new("idp-secret-0001"))),
        );
        let debug = format!("{enterprise:?}");
        assert!(!debug.contains("secret-0001"), "{debug}");
        assert_eq!(enterprise.secrets().len(), 2);
        let delegated = Grant::OAuth(AuthorizationCodeGrant::new().scopes(["a"]));
        assert_ne!(delegated.identity(), enterprise.identity());
    }

    fn jwt(claims: serde_json::Value) -> String {
        use base64::Engine as _;
        let part = |value: serde_json::Value| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
        };
        format!("{}.{}.sig", part(json!({"alg": "ES256"})), part(claims))
    }

    #[test]
    fn a_workload_is_known_by_its_subject_not_its_token() {
        let identity = |token: &str| {
            Grant::WorkloadIdentity(WorkloadIdentityGrant::new(Secret::new(token))).identity()
        };
        let first = jwt(json!({"iss": "https://idp", "sub": "workload-a", "exp": 1}));
        let rotated = jwt(json!({"iss": "https://idp", "sub": "workload-a", "exp": 2}));
        let other = jwt(json!({"iss": "https://idp", "sub": "workload-b", "exp": 1}));
        assert_eq!(identity(&first), identity(&rotated), "a rotation keeps it");
        assert_ne!(
            identity(&first),
            identity(&other),
            "another workload is another"
        );
        assert_ne!(identity("opaque-1"), identity("opaque-2"));
        assert!(
            !identity("opaque-1").contains("opaque"),
            "no token in the identity"
        );
    }
}
