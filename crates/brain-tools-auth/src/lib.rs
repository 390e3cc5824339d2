//! How an MCP binding obtains access tokens: the one auth model the host config and the
//! MCP client share.
//!
//! Every type is generic over `S`, what stands for a secret: the host config
//! (`brain-tools-config`) holds the name of the environment variable a secret is read
//! from (`S = String`), the MCP client (`brain-mcp-transport`) the secret itself
//! (`S = Secret`, whose `Debug` hides it). [`McpAuth::try_map`] turns one into the other
//! when a call starts (secrets are read then, so a rotated one needs no restart), so a
//! field added here is added once, for both.
//!
//! Not for: reading configs (the config crate parses and validates the `auth` object
//! into this model) or obtaining tokens (the transport does, on rmcp's OAuth client).
//!
//! ```
//! use brain_tools_auth::{ClientAuthentication, ClientCredentials, McpAuth, SecretMethod};
//!
//! // As a config names it: the secret is in the variable MCP_CLIENT_SECRET.
//! let named: McpAuth<String> = McpAuth::ClientCredentials(
//!     ClientCredentials::new(
//!         "brain-host",
//!         ClientAuthentication::Secret {
//!             secret: "MCP_CLIENT_SECRET".to_owned(),
//!             method: Some(SecretMethod::Basic),
//!         },
//!     )
//!     .scopes(["files:read"]),
//! );
//! // As a call carries it: the secret read from the environment.
//! let read = named.try_map(|variable, _role| {
//!     if variable == "MCP_CLIENT_SECRET" { Ok("s3cr3t".to_owned()) } else { Err(variable.clone()) }
//! });
//! assert_eq!(read.unwrap().scopes(), ["files:read"]);
//! ```

use std::fmt;

/// How access tokens for an MCP server are obtained (the `auth` object of an HTTP MCP
/// binding), with its secrets as `S`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpAuth<S> {
    /// `"type": "client_credentials"`: the OAuth client credentials grant (SEP-1046):
    /// the host is the client, no user is involved; tokens are obtained at call time.
    ClientCredentials(ClientCredentials<S>),
    /// `"type": "oauth"`: a grant delegated once per tenant (authorization code with
    /// PKCE), kept in a credential store and refreshed at call time.
    OAuth(OAuth<S>),
    /// `"type": "enterprise"`: enterprise-managed authorization (SEP-990): the tenant's
    /// identity token becomes an ID-JAG at the identity provider, then an access token.
    Enterprise(Enterprise<S>),
    /// `"type": "workload_identity"`: a workload identity (a JWT the host's platform
    /// issues) exchanged for an access token with the JWT bearer grant (RFC 7523); no
    /// user involved.
    WorkloadIdentity(WorkloadIdentity<S>),
}

impl<S> McpAuth<S> {
    /// The `type` this auth has in a config.
    pub fn type_name(&self) -> &'static str {
        match self {
            McpAuth::ClientCredentials(_) => "client_credentials",
            McpAuth::OAuth(_) => "oauth",
            McpAuth::Enterprise(_) => "enterprise",
            McpAuth::WorkloadIdentity(_) => "workload_identity",
        }
    }

    /// The issuer the server's authorization server must have, if pinned.
    pub fn issuer(&self) -> Option<&str> {
        match self {
            McpAuth::ClientCredentials(auth) => auth.issuer.as_deref(),
            McpAuth::OAuth(auth) => auth.issuer.as_deref(),
            McpAuth::Enterprise(auth) => auth.issuer.as_deref(),
            McpAuth::WorkloadIdentity(auth) => auth.issuer.as_deref(),
        }
    }

    /// The scopes configured (empty: the ones the server asks for).
    pub fn scopes(&self) -> &[String] {
        match self {
            McpAuth::ClientCredentials(auth) => &auth.scopes,
            McpAuth::OAuth(auth) => &auth.scopes,
            McpAuth::Enterprise(auth) => &auth.scopes,
            McpAuth::WorkloadIdentity(auth) => &auth.scopes,
        }
    }

    /// Whether the binding asks for DPoP-bound tokens (RFC 9449): used when the
    /// authorization server advertises an algorithm this client signs with (ES256).
    pub fn dpop(&self) -> bool {
        match self {
            McpAuth::ClientCredentials(auth) => auth.dpop,
            McpAuth::OAuth(auth) => auth.dpop,
            McpAuth::Enterprise(_) | McpAuth::WorkloadIdentity(_) => false,
        }
    }

    /// Every secret, in a fixed order.
    pub fn secrets(&self) -> Vec<&S> {
        match self {
            McpAuth::ClientCredentials(auth) => vec![auth.authentication.secret()],
            McpAuth::OAuth(auth) => auth.client_secret.iter().collect(),
            McpAuth::Enterprise(auth) => auth
                .client_secret
                .iter()
                .chain(auth.idp_client_secret.iter())
                .collect(),
            McpAuth::WorkloadIdentity(auth) => vec![&auth.assertion],
        }
    }

    /// The same auth with each secret turned into a `T` by `f`, told which secret it is
    /// (for a config: read from the variable it names); the first error stops it.
    ///
    /// # Errors
    /// The first error `f` returns.
    pub fn try_map<T, E>(
        &self,
        mut f: impl FnMut(&S, SecretRole) -> Result<T, E>,
    ) -> Result<McpAuth<T>, E> {
        let mut optional =
            |secret: &Option<S>, role| secret.as_ref().map(|secret| f(secret, role)).transpose();
        Ok(match self {
            McpAuth::ClientCredentials(auth) => McpAuth::ClientCredentials(ClientCredentials {
                client_id: auth.client_id.clone(),
                authentication: match &auth.authentication {
                    ClientAuthentication::Secret { secret, method } => {
                        ClientAuthentication::Secret {
                            secret: f(secret, SecretRole::ClientSecret)?,
                            method: *method,
                        }
                    }
                    ClientAuthentication::PrivateKeyJwt { key, algorithm } => {
                        ClientAuthentication::PrivateKeyJwt {
                            key: f(key, SecretRole::PrivateKey)?,
                            algorithm: *algorithm,
                        }
                    }
                },
                scopes: auth.scopes.clone(),
                issuer: auth.issuer.clone(),
                dpop: auth.dpop,
            }),
            McpAuth::OAuth(auth) => McpAuth::OAuth(OAuth {
                client_id: auth.client_id.clone(),
                client_secret: optional(&auth.client_secret, SecretRole::ClientSecret)?,
                client_id_metadata_url: auth.client_id_metadata_url.clone(),
                redirect_uri: auth.redirect_uri.clone(),
                scopes: auth.scopes.clone(),
                issuer: auth.issuer.clone(),
                dpop: auth.dpop,
            }),
            McpAuth::Enterprise(auth) => McpAuth::Enterprise(Enterprise {
                client_id: auth.client_id.clone(),
                client_secret: optional(&auth.client_secret, SecretRole::ClientSecret)?,
                idp_issuer: auth.idp_issuer.clone(),
                idp_token_endpoint: auth.idp_token_endpoint.clone(),
                idp_client_id: auth.idp_client_id.clone(),
                idp_client_secret: optional(&auth.idp_client_secret, SecretRole::IdpClientSecret)?,
                scopes: auth.scopes.clone(),
                issuer: auth.issuer.clone(),
            }),
            McpAuth::WorkloadIdentity(auth) => McpAuth::WorkloadIdentity(WorkloadIdentity {
                assertion: f(&auth.assertion, SecretRole::WorkloadToken)?,
                client_id: auth.client_id.clone(),
                scopes: auth.scopes.clone(),
                issuer: auth.issuer.clone(),
            }),
        })
    }
}

/// Which secret of an auth a [`McpAuth::try_map`] is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SecretRole {
    /// A client's secret at the server's authorization server.
    ClientSecret,
    /// A client's private key (`private_key_jwt`).
    PrivateKey,
    /// A client's secret at the identity provider (enterprise-managed authorization).
    IdpClientSecret,
    /// The workload's identity token.
    WorkloadToken,
}

impl SecretRole {
    /// What it is, for a message (`its client secret`, ...).
    pub fn describe(self) -> &'static str {
        match self {
            SecretRole::ClientSecret => "its client secret",
            SecretRole::PrivateKey => "its private key",
            SecretRole::IdpClientSecret => "its client secret at the identity provider",
            SecretRole::WorkloadToken => "its workload identity token",
        }
    }
}

/// Sets a list of scopes from anything that names them.
fn scope_list(scopes: impl IntoIterator<Item = impl Into<String>>) -> Vec<String> {
    scopes.into_iter().map(Into::into).collect()
}

/// The client credentials grant.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientCredentials<S> {
    /// The client's identifier at the authorization server.
    pub client_id: String,
    /// How the client proves who it is at the token endpoint.
    pub authentication: ClientAuthentication<S>,
    /// The scopes to request; empty: the ones the server asks for.
    pub scopes: Vec<String>,
    /// The issuer the server's authorization server must have.
    pub issuer: Option<String>,
    /// Ask for DPoP-bound tokens (RFC 9449) when the authorization server offers them.
    pub dpop: bool,
}

impl<S> ClientCredentials<S> {
    /// Client credentials for `client_id`, authenticating with `authentication`.
    pub fn new(client_id: impl Into<String>, authentication: ClientAuthentication<S>) -> Self {
        Self {
            client_id: client_id.into(),
            authentication,
            scopes: Vec::new(),
            issuer: None,
            dpop: false,
        }
    }

    /// Sets the scopes to request.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scope_list(scopes);
        self
    }

    /// Pins the issuer of the server's authorization server.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Asks for DPoP-bound tokens (RFC 9449) when the authorization server offers them.
    pub fn dpop(mut self, dpop: bool) -> Self {
        self.dpop = dpop;
        self
    }
}

/// How a client authenticates at the token endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientAuthentication<S> {
    /// A client secret, with HTTP Basic or in the body (`None`: the one the
    /// authorization server's metadata offers, Basic first).
    Secret {
        /// The client secret.
        secret: S,
        /// `client_secret_basic` or `client_secret_post`.
        method: Option<SecretMethod>,
    },
    /// `private_key_jwt`: a client assertion (RFC 7523) signed with the client's key.
    PrivateKeyJwt {
        /// The PEM private key.
        key: S,
        /// The signing algorithm.
        algorithm: SigningAlgorithm,
    },
}

impl<S> ClientAuthentication<S> {
    /// The secret (the client secret, or the private key).
    pub fn secret(&self) -> &S {
        match self {
            ClientAuthentication::Secret { secret, .. } => secret,
            ClientAuthentication::PrivateKeyJwt { key, .. } => key,
        }
    }

    /// Its `token_endpoint_auth_method`, when fixed (`None`: chosen from the metadata).
    pub fn method(&self) -> Option<TokenEndpointAuthMethod> {
        match self {
            ClientAuthentication::Secret { method, .. } => method.map(SecretMethod::into),
            ClientAuthentication::PrivateKeyJwt { .. } => {
                Some(TokenEndpointAuthMethod::PrivateKeyJwt)
            }
        }
    }
}

/// How a client secret is sent to the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SecretMethod {
    /// `client_secret_basic`: HTTP Basic.
    Basic,
    /// `client_secret_post`: in the request body.
    Post,
}

impl SecretMethod {
    /// Its name in OAuth metadata.
    pub fn as_str(self) -> &'static str {
        TokenEndpointAuthMethod::from(self).as_str()
    }
}

impl From<SecretMethod> for TokenEndpointAuthMethod {
    fn from(method: SecretMethod) -> Self {
        match method {
            SecretMethod::Basic => TokenEndpointAuthMethod::ClientSecretBasic,
            SecretMethod::Post => TokenEndpointAuthMethod::ClientSecretPost,
        }
    }
}

/// How a client authenticates at the token endpoint, by its name in a config and in
/// OAuth metadata (`token_endpoint_auth_method`).
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

    /// Its name in a config and in OAuth metadata.
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

    /// The secret method it is, if it is one.
    pub fn secret_method(self) -> Option<SecretMethod> {
        match self {
            TokenEndpointAuthMethod::ClientSecretBasic => Some(SecretMethod::Basic),
            TokenEndpointAuthMethod::ClientSecretPost => Some(SecretMethod::Post),
            TokenEndpointAuthMethod::PrivateKeyJwt => None,
        }
    }
}

impl fmt::Display for TokenEndpointAuthMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The algorithm of a `private_key_jwt` client assertion.
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

/// The redirect URI a delegated grant uses when neither the binding nor the host names
/// one.
pub const DEFAULT_REDIRECT_URI: &str = "http://127.0.0.1:8976/callback";

/// A grant delegated per tenant: the authorization code flow with PKCE.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuth<S> {
    /// A pre-registered client identifier; `None`: a client ID metadata document or
    /// dynamic registration.
    pub client_id: Option<String>,
    /// The pre-registered client's secret, if it has one (only with `client_id`).
    pub client_secret: Option<S>,
    /// The https URL of this client's metadata document, used as its client ID.
    pub client_id_metadata_url: Option<String>,
    /// Where the authorization server sends the user back; `None`: the host's
    /// authorizer's, else [`DEFAULT_REDIRECT_URI`].
    pub redirect_uri: Option<String>,
    /// The scopes to request; empty: the ones the server asks for.
    pub scopes: Vec<String>,
    /// The issuer the server's authorization server must have.
    pub issuer: Option<String>,
    /// Ask for DPoP-bound tokens (RFC 9449) when the authorization server offers them:
    /// each grant then gets a key pair of its own, stored with it.
    pub dpop: bool,
}

impl<S> Default for OAuth<S> {
    fn default() -> Self {
        Self {
            client_id: None,
            client_secret: None,
            client_id_metadata_url: None,
            redirect_uri: None,
            scopes: Vec::new(),
            issuer: None,
            dpop: false,
        }
    }
}

impl<S> OAuth<S> {
    /// A delegated grant with every field unset.
    pub fn new() -> Self {
        Self::default()
    }

    /// A pre-registered client, with its secret if it has one.
    pub fn client(mut self, client_id: impl Into<String>, secret: Option<S>) -> Self {
        self.client_id = Some(client_id.into());
        self.client_secret = secret;
        self
    }

    /// The client's metadata document URL, as its client ID.
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
        self.scopes = scope_list(scopes);
        self
    }

    /// Pins the issuer of the server's authorization server.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Asks for DPoP-bound tokens (RFC 9449) when the authorization server offers them.
    pub fn dpop(mut self, dpop: bool) -> Self {
        self.dpop = dpop;
        self
    }
}

/// A workload identity exchanged with the JWT bearer grant.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkloadIdentity<S> {
    /// The workload's identity token (a JWT whose audience is the authorization server).
    pub assertion: S,
    /// The client's identifier at the authorization server, if it wants one.
    pub client_id: Option<String>,
    /// The scopes to request; empty: the ones the server asks for.
    pub scopes: Vec<String>,
    /// The issuer the server's authorization server must have.
    pub issuer: Option<String>,
}

impl<S> WorkloadIdentity<S> {
    /// A workload identity with its token.
    pub fn new(assertion: S) -> Self {
        Self {
            assertion,
            client_id: None,
            scopes: Vec::new(),
            issuer: None,
        }
    }

    /// Sets the client identifier sent with the grant.
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// Sets the scopes to request.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scope_list(scopes);
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
pub struct Enterprise<S> {
    /// The client's identifier at the server's authorization server.
    pub client_id: String,
    /// That client's secret (sent with HTTP Basic), if it has one.
    pub client_secret: Option<S>,
    /// The identity provider's issuer.
    pub idp_issuer: String,
    /// The identity provider's token endpoint, where the identity token becomes an ID-JAG.
    pub idp_token_endpoint: String,
    /// The client's identifier at the identity provider.
    pub idp_client_id: String,
    /// The client's secret at the identity provider (sent with HTTP Basic), if any.
    pub idp_client_secret: Option<S>,
    /// The scopes to request; empty: the ones the server asks for.
    pub scopes: Vec<String>,
    /// The issuer the server's authorization server must have.
    pub issuer: Option<String>,
}

impl<S> Enterprise<S> {
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
    pub fn client_secret(mut self, secret: Option<S>) -> Self {
        self.client_secret = secret;
        self
    }

    /// Sets the client's secret at the identity provider.
    pub fn idp_client_secret(mut self, secret: Option<S>) -> Self {
        self.idp_client_secret = secret;
        self
    }

    /// Sets the scopes to request.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scope_list(scopes);
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
        assert_eq!(SecretMethod::Post.as_str(), "client_secret_post");
    }

    #[test]
    fn mapping_secrets_keeps_everything_else_and_stops_at_the_first_error() {
        let enterprise: McpAuth<&str> = McpAuth::Enterprise(
            Enterprise::new("c", "https://idp", "https://idp/token", "idp-c")
                .client_secret(Some("A"))
                .idp_client_secret(Some("B"))
                .scopes(["s"])
                .issuer("https://as"),
        );
        let mapped = enterprise
            .try_map(|name, _| Ok::<_, ()>(name.to_lowercase()))
            .unwrap();
        assert_eq!(mapped.secrets(), [&"a".to_owned(), &"b".to_owned()]);
        assert_eq!(
            (mapped.issuer(), mapped.scopes()),
            (Some("https://as"), &["s".to_owned()][..])
        );
        let mut seen = Vec::new();
        let failed = enterprise.try_map(|name, role| {
            seen.push(*name);
            Err::<String, _>(format!("{name} ({}) unset", role.describe()))
        });
        assert_eq!(failed.unwrap_err(), "A (its client secret) unset");
        assert_eq!(seen, ["A"]);
    }

    #[test]
    fn dpop_is_asked_for_by_the_grants_that_offer_it_and_survives_mapping() {
        let oauth: McpAuth<&str> = McpAuth::OAuth(OAuth::new().dpop(true));
        let machine: McpAuth<&str> = McpAuth::ClientCredentials(
            ClientCredentials::new(
                "c",
                ClientAuthentication::Secret {
                    secret: "S",
                    method: None,
                },
            )
            .dpop(true),
        );
        for auth in [oauth, machine] {
            assert!(auth.dpop(), "{auth:?}");
            let mapped = auth.try_map(|s, _| Ok::<_, ()>(s.to_owned())).unwrap();
            assert!(mapped.dpop(), "{mapped:?}");
        }
        let plain: McpAuth<&str> = McpAuth::OAuth(OAuth::new());
        assert!(!plain.dpop());
        let workload: McpAuth<&str> = McpAuth::WorkloadIdentity(WorkloadIdentity::new("W"));
        assert!(!workload.dpop());
    }
}
