//! How an MCP binding obtains access tokens: the `auth` object of an HTTP MCP binding.
//!
//! These types hold no secret: a secret is always named by the environment variable that
//! holds it (the `*_env` fields), and read when it is needed.

use std::fmt;

/// The `auth` object of an HTTP MCP binding: how the client obtains access tokens for
/// the server (instead of a static `token_env`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpAuth {
    /// `"type": "client_credentials"`: the host itself is the client (OAuth client
    /// credentials grant); no user or tenant grant is involved.
    ClientCredentials(ClientCredentialsAuth),
    /// `"type": "oauth"`: a grant delegated once per tenant (authorization code with
    /// PKCE), kept in a credential store.
    OAuth(OAuthAuth),
    /// `"type": "enterprise"`: enterprise-managed authorization (SEP-990): the tenant's
    /// identity token is exchanged at the identity provider for an ID-JAG, then at the MCP
    /// authorization server for an access token.
    Enterprise(EnterpriseAuth),
    /// `"type": "workload_identity"`: the host's workload identity (a JWT its platform
    /// issues, such as a Kubernetes service account token) exchanged for an access token
    /// with the JWT bearer grant (RFC 7523); no user or tenant grant is involved.
    WorkloadIdentity(WorkloadIdentityAuth),
}

impl McpAuth {
    /// The `type` this auth has in the config.
    pub fn type_name(&self) -> &'static str {
        match self {
            McpAuth::ClientCredentials(_) => "client_credentials",
            McpAuth::OAuth(_) => "oauth",
            McpAuth::Enterprise(_) => "enterprise",
            McpAuth::WorkloadIdentity(_) => "workload_identity",
        }
    }

    /// The pinned issuer of the MCP server's authorization server, if set.
    pub fn issuer(&self) -> Option<&str> {
        match self {
            McpAuth::ClientCredentials(auth) => auth.issuer.as_deref(),
            McpAuth::OAuth(auth) => auth.issuer.as_deref(),
            McpAuth::Enterprise(auth) => auth.issuer.as_deref(),
            McpAuth::WorkloadIdentity(auth) => auth.issuer.as_deref(),
        }
    }

    /// The scopes to request (empty: the ones the server asks for).
    pub fn scopes(&self) -> &[String] {
        match self {
            McpAuth::ClientCredentials(auth) => &auth.scopes,
            McpAuth::OAuth(auth) => &auth.scopes,
            McpAuth::Enterprise(auth) => &auth.scopes,
            McpAuth::WorkloadIdentity(auth) => &auth.scopes,
        }
    }
}

/// `"type": "client_credentials"`: the OAuth client credentials grant.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientCredentialsAuth {
    /// The client's identifier at the authorization server.
    pub client_id: String,
    /// The variable that holds the client secret (secret methods only).
    pub client_secret_env: Option<String>,
    /// How the client authenticates at the token endpoint; `None`: chosen from the
    /// authorization server's metadata among the secret methods.
    pub token_endpoint_auth_method: Option<TokenEndpointAuthMethod>,
    /// The variable that holds the PEM private key (`private_key_jwt` only).
    pub private_key_env: Option<String>,
    /// The algorithm of the client assertion (`private_key_jwt` only); `None` means
    /// [`SigningAlgorithm::Rs256`].
    pub signing_algorithm: Option<SigningAlgorithm>,
    /// The scopes to request; empty: the ones the server asks for.
    pub scopes: Vec<String>,
    /// The issuer the MCP server's authorization server must have.
    pub issuer: Option<String>,
}

impl ClientCredentialsAuth {
    /// Client credentials for `client_id`, every other field unset (set
    /// `client_secret_env`, or `private_key_env` with `private_key_jwt`, before use).
    pub fn new(client_id: impl Into<String>) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret_env: None,
            token_endpoint_auth_method: None,
            private_key_env: None,
            signing_algorithm: None,
            scopes: Vec::new(),
            issuer: None,
        }
    }
}

/// `"type": "oauth"`: a delegated grant per tenant (authorization code with PKCE).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct OAuthAuth {
    /// A pre-registered client identifier; `None`: a client ID metadata document or
    /// dynamic registration.
    pub client_id: Option<String>,
    /// The variable that holds the pre-registered client's secret (only with `client_id`).
    pub client_secret_env: Option<String>,
    /// The https URL of this client's metadata document, used as its client ID.
    pub client_id_metadata_url: Option<String>,
    /// The scopes to request; empty: the ones the server asks for.
    pub scopes: Vec<String>,
    /// Where the authorization server sends the user back.
    pub redirect_uri: Option<String>,
    /// The issuer the MCP server's authorization server must have.
    pub issuer: Option<String>,
}

impl OAuthAuth {
    /// A delegated grant with every field unset.
    pub fn new() -> Self {
        Self::default()
    }
}

/// `"type": "workload_identity"`: a workload identity token exchanged for an access
/// token (the JWT bearer grant, RFC 7523).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkloadIdentityAuth {
    /// The variable that holds the workload's identity token (a JWT whose audience is the
    /// authorization server); read at every token request, so a rotated token is used.
    pub assertion_env: String,
    /// The client's identifier at the authorization server, if it wants one.
    pub client_id: Option<String>,
    /// The scopes to request; empty: the ones the server asks for.
    pub scopes: Vec<String>,
    /// The issuer the MCP server's authorization server must have.
    pub issuer: Option<String>,
}

impl WorkloadIdentityAuth {
    /// A workload identity whose token is in `assertion_env`, every other field unset.
    pub fn new(assertion_env: impl Into<String>) -> Self {
        Self {
            assertion_env: assertion_env.into(),
            client_id: None,
            scopes: Vec::new(),
            issuer: None,
        }
    }
}

/// `"type": "enterprise"`: enterprise-managed authorization (SEP-990).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnterpriseAuth {
    /// The client's identifier at the MCP server's authorization server.
    pub client_id: String,
    /// The variable that holds that client's secret, if it has one.
    pub client_secret_env: Option<String>,
    /// The identity provider's issuer.
    pub idp_issuer: String,
    /// The identity provider's token endpoint, where the identity token becomes an ID-JAG.
    pub idp_token_endpoint: String,
    /// The client's identifier at the identity provider.
    pub idp_client_id: String,
    /// The variable that holds the client's secret at the identity provider, if any.
    pub idp_client_secret_env: Option<String>,
    /// The scopes to request; empty: the ones the server asks for.
    pub scopes: Vec<String>,
    /// The issuer the MCP server's authorization server must have.
    pub issuer: Option<String>,
}

impl EnterpriseAuth {
    /// Enterprise-managed authorization with its required fields, every other unset.
    pub fn new(
        client_id: impl Into<String>,
        idp_issuer: impl Into<String>,
        idp_token_endpoint: impl Into<String>,
        idp_client_id: impl Into<String>,
    ) -> Self {
        Self {
            client_id: client_id.into(),
            client_secret_env: None,
            idp_issuer: idp_issuer.into(),
            idp_token_endpoint: idp_token_endpoint.into(),
            idp_client_id: idp_client_id.into(),
            idp_client_secret_env: None,
            scopes: Vec::new(),
            issuer: None,
        }
    }
}

/// How a client authenticates at the token endpoint (`token_endpoint_auth_method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TokenEndpointAuthMethod {
    /// `client_secret_basic`: the secret in an HTTP Basic `Authorization` header.
    ClientSecretBasic,
    /// `client_secret_post`: the secret in the request body.
    ClientSecretPost,
    /// `private_key_jwt`: a JWT signed with the client's private key.
    PrivateKeyJwt,
}

impl TokenEndpointAuthMethod {
    /// Every method, in the order the docs list them.
    pub const ALL: &'static [TokenEndpointAuthMethod] = &[
        TokenEndpointAuthMethod::ClientSecretBasic,
        TokenEndpointAuthMethod::ClientSecretPost,
        TokenEndpointAuthMethod::PrivateKeyJwt,
    ];

    /// Its name in the config and in OAuth metadata.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenEndpointAuthMethod::ClientSecretBasic => "client_secret_basic",
            TokenEndpointAuthMethod::ClientSecretPost => "client_secret_post",
            TokenEndpointAuthMethod::PrivateKeyJwt => "private_key_jwt",
        }
    }

    /// The method with this name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|m| m.as_str() == name)
    }
}

impl fmt::Display for TokenEndpointAuthMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The algorithm of a `private_key_jwt` client assertion (`signing_algorithm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum SigningAlgorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (the default).
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
    /// Every algorithm, in the order the docs list them.
    pub const ALL: &'static [SigningAlgorithm] = &[
        SigningAlgorithm::Rs256,
        SigningAlgorithm::Rs384,
        SigningAlgorithm::Rs512,
        SigningAlgorithm::Es256,
        SigningAlgorithm::Es384,
    ];

    /// Its JOSE name (`RS256`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            SigningAlgorithm::Rs256 => "RS256",
            SigningAlgorithm::Rs384 => "RS384",
            SigningAlgorithm::Rs512 => "RS512",
            SigningAlgorithm::Es256 => "ES256",
            SigningAlgorithm::Es384 => "ES384",
        }
    }

    /// The algorithm with this JOSE name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|a| a.as_str() == name)
    }
}

impl fmt::Display for SigningAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for method in TokenEndpointAuthMethod::ALL {
            assert_eq!(
                TokenEndpointAuthMethod::from_name(method.as_str()),
                Some(*method)
            );
        }
        for algorithm in SigningAlgorithm::ALL {
            assert_eq!(
                SigningAlgorithm::from_name(algorithm.as_str()),
                Some(*algorithm)
            );
        }
        assert_eq!(SigningAlgorithm::from_name("rs256"), None);
        assert_eq!(SigningAlgorithm::default(), SigningAlgorithm::Rs256);
    }
}
