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

/// How access tokens for an MCP server are obtained.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Grant {
    /// The OAuth client credentials grant (SEP-1046): the host is the client, no user is
    /// involved; tokens are obtained at call time.
    ClientCredentials(ClientCredentialsGrant),
    /// A grant delegated once per tenant (authorization code with PKCE), kept in the
    /// credential store and refreshed at call time.
    AuthorizationCode(AuthorizationCodeGrant),
    /// Enterprise-managed authorization (SEP-990): the tenant's identity token becomes an
    /// ID-JAG at the identity provider, then an access token; at call time.
    Enterprise(EnterpriseGrant),
    /// A workload identity (a JWT the host's platform issues) exchanged for an access
    /// token with the JWT bearer grant (RFC 7523); at call time, no user involved.
    WorkloadIdentity(WorkloadIdentityGrant),
}

impl Grant {
    /// The issuer the server's authorization server must have, if pinned.
    pub fn issuer(&self) -> Option<&str> {
        match self {
            Grant::ClientCredentials(grant) => grant.issuer.as_deref(),
            Grant::AuthorizationCode(grant) => grant.issuer.as_deref(),
            Grant::Enterprise(grant) => grant.issuer.as_deref(),
            Grant::WorkloadIdentity(grant) => grant.issuer.as_deref(),
        }
    }

    /// The scopes configured (empty: the ones the server asks for).
    pub fn scopes(&self) -> &[String] {
        match self {
            Grant::ClientCredentials(grant) => &grant.scopes,
            Grant::AuthorizationCode(grant) => &grant.scopes,
            Grant::Enterprise(grant) => &grant.scopes,
            Grant::WorkloadIdentity(grant) => &grant.scopes,
        }
    }

    /// Everything that identifies the grant except its secrets: two calls whose grants
    /// differ only in a secret (a rotated client secret) share their tokens.
    pub(crate) fn identity(&self) -> String {
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
                },
                "scopes": grant.scopes,
                "issuer": grant.issuer,
            }),
            Grant::AuthorizationCode(grant) => json!({
                "type": "authorization_code",
                "client_id": grant.client_id,
                "client_id_metadata_url": grant.client_id_metadata_url,
                "redirect_uri": grant.redirect_uri,
                "scopes": grant.scopes,
                "issuer": grant.issuer,
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
        };
        value.to_string()
    }

    /// The grant's own secrets (client secrets, a private key).
    pub(crate) fn secrets(&self) -> Vec<Secret> {
        match self {
            Grant::ClientCredentials(grant) => match &grant.authentication {
                ClientAuthentication::Secret { secret, .. } => vec![secret.clone()],
                ClientAuthentication::PrivateKeyJwt { key, .. } => vec![key.clone()],
            },
            Grant::AuthorizationCode(grant) => grant.client_secret.iter().cloned().collect(),
            Grant::Enterprise(grant) => grant
                .client_secret
                .iter()
                .chain(grant.idp_client_secret.iter())
                .cloned()
                .collect(),
            Grant::WorkloadIdentity(grant) => vec![grant.assertion.clone()],
        }
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

/// The client credentials grant.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientCredentialsGrant {
    /// The client's identifier at the authorization server.
    pub client_id: String,
    /// How the client authenticates at the token endpoint.
    pub authentication: ClientAuthentication,
    /// The scopes to request; empty: the ones the server asks for.
    pub scopes: Vec<String>,
    /// The issuer the server's authorization server must have.
    pub issuer: Option<String>,
}

impl ClientCredentialsGrant {
    /// Client credentials for a client, no scopes, no pinned issuer.
    pub fn new(client_id: impl Into<String>, authentication: ClientAuthentication) -> Self {
        Self {
            client_id: client_id.into(),
            authentication,
            scopes: Vec::new(),
            issuer: None,
        }
    }

    /// Sets the scopes to request.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Pins the issuer of the server's authorization server.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }
}

/// How a client authenticates at the token endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientAuthentication {
    /// A client secret, sent as `method` says (`None`: as the authorization server's
    /// metadata offers; `client_secret_post` when it offers both, or says nothing).
    Secret {
        /// The client secret.
        secret: Secret,
        /// `client_secret_basic` or `client_secret_post`, if fixed.
        method: Option<SecretMethod>,
    },
    /// `private_key_jwt`: a client assertion signed with this PEM key (RSA or EC, PKCS#8).
    PrivateKeyJwt {
        /// The PEM private key.
        key: Secret,
        /// The signing algorithm.
        algorithm: SigningAlgorithm,
    },
}

/// How a client secret is sent to the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SecretMethod {
    /// `client_secret_basic`: HTTP Basic authentication.
    Basic,
    /// `client_secret_post`: in the request body.
    Post,
}

impl SecretMethod {
    /// Its name in OAuth metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            SecretMethod::Basic => "client_secret_basic",
            SecretMethod::Post => "client_secret_post",
        }
    }
}

/// The algorithm of a `private_key_jwt` client assertion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum SigningAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    #[default]
    Rs256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    Rs384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    Rs512,
    /// ECDSA with P-256 and SHA-256.
    Es256,
    /// ECDSA with P-384 and SHA-384.
    Es384,
}

impl SigningAlgorithm {
    /// Its JOSE name.
    pub fn as_str(self) -> &'static str {
        match self {
            SigningAlgorithm::Rs256 => "RS256",
            SigningAlgorithm::Rs384 => "RS384",
            SigningAlgorithm::Rs512 => "RS512",
            SigningAlgorithm::Es256 => "ES256",
            SigningAlgorithm::Es384 => "ES384",
        }
    }
}

/// A grant delegated per tenant: authorization code with PKCE. The client is identified
/// by a pre-registered `client_id`, else by its client ID metadata document (when the
/// authorization server supports them), else by dynamic registration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct AuthorizationCodeGrant {
    /// A pre-registered client identifier.
    pub client_id: Option<String>,
    /// The pre-registered client's secret, if it is a confidential client.
    pub client_secret: Option<Secret>,
    /// The https URL of this client's metadata document, used as its client ID.
    pub client_id_metadata_url: Option<String>,
    /// Where the authorization server sends the user back; `None`: the authorizer's, else
    /// [`DEFAULT_REDIRECT_URI`].
    pub redirect_uri: Option<String>,
    /// The scopes to request; empty: the ones the server asks for.
    pub scopes: Vec<String>,
    /// The issuer the server's authorization server must have.
    pub issuer: Option<String>,
}

/// The redirect URI of a delegated grant that names none and whose authorizer names none.
pub const DEFAULT_REDIRECT_URI: &str = "http://127.0.0.1:8976/callback";

impl AuthorizationCodeGrant {
    /// A delegated grant with every field unset (dynamic registration, the server's scopes).
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses a pre-registered client.
    pub fn client(mut self, client_id: impl Into<String>, secret: Option<Secret>) -> Self {
        self.client_id = Some(client_id.into());
        self.client_secret = secret;
        self
    }

    /// Identifies the client by its metadata document.
    pub fn client_id_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_id_metadata_url = Some(url.into());
        self
    }

    /// Sets the redirect URI.
    pub fn redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uri = Some(uri.into());
        self
    }

    /// Sets the scopes to request.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Pins the issuer of the server's authorization server.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }
}

/// A workload identity exchanged for an access token: the JWT bearer grant (RFC 7523),
/// `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` with the workload's token as
/// the `assertion`. No client authentication (the assertion is the credential).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkloadIdentityGrant {
    /// The workload's identity token: a JWT whose audience is the authorization server.
    pub assertion: Secret,
    /// The client's identifier, sent when set.
    pub client_id: Option<String>,
    /// The scopes to request; empty: the ones the server asks for.
    pub scopes: Vec<String>,
    /// The issuer the server's authorization server must have.
    pub issuer: Option<String>,
}

impl WorkloadIdentityGrant {
    /// A workload identity with its token, no client ID, no scopes, no pinned issuer.
    pub fn new(assertion: Secret) -> Self {
        Self {
            assertion,
            client_id: None,
            scopes: Vec::new(),
            issuer: None,
        }
    }

    /// Sends this client identifier with the token request.
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// Sets the scopes to request.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Pins the issuer of the server's authorization server.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }
}

/// Enterprise-managed authorization (SEP-990).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnterpriseGrant {
    /// The client's identifier at the server's authorization server.
    pub client_id: String,
    /// That client's secret (sent with HTTP Basic), if it has one.
    pub client_secret: Option<Secret>,
    /// The identity provider's issuer.
    pub idp_issuer: String,
    /// The identity provider's token endpoint.
    pub idp_token_endpoint: String,
    /// The client's identifier at the identity provider.
    pub idp_client_id: String,
    /// The client's secret at the identity provider (sent with HTTP Basic), if any.
    pub idp_client_secret: Option<Secret>,
    /// The scopes to request; empty: the ones the server asks for.
    pub scopes: Vec<String>,
    /// The issuer the server's authorization server must have.
    pub issuer: Option<String>,
}

impl EnterpriseGrant {
    /// Enterprise-managed authorization with its required fields.
    pub fn new(
        client_id: impl Into<String>,
        idp_issuer: impl Into<String>,
        idp_token_endpoint: impl Into<String>,
        idp_client_id: impl Into<String>,
    ) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret: None,
            idp_issuer: idp_issuer.into(),
            idp_token_endpoint: idp_token_endpoint.into(),
            idp_client_id: idp_client_id.into(),
            idp_client_secret: None,
            scopes: Vec::new(),
            issuer: None,
        }
    }

    /// Sets the client's secret at the server's authorization server.
    pub fn client_secret(mut self, secret: Option<Secret>) -> Self {
        self.client_secret = secret;
        self
    }

    /// Sets the client's secret at the identity provider.
    pub fn idp_client_secret(mut self, secret: Option<Secret>) -> Self {
        self.idp_client_secret = secret;
        self
    }

    /// Sets the scopes to request.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Pins the issuer of the server's authorization server.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }
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
        let delegated = Grant::AuthorizationCode(AuthorizationCodeGrant::new().scopes(["a"]));
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
