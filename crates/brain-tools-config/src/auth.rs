//! How an MCP binding obtains access tokens: the `auth` object of an HTTP MCP binding.
//!
//! These types hold no secret: a secret is always named by the environment variable that
//! holds it (the `*_env` fields), and read when it is needed.

/// The `auth` object of an HTTP MCP binding: how the client obtains access tokens for
/// the server (instead of a static `token_env`). The one auth model
/// (`brain-tools-auth`), its secrets named by the environment variables that hold them.
pub type McpAuth = brain_tools_auth::McpAuth<String>;
/// `"type": "client_credentials"`: the OAuth client credentials grant; its secret (a
/// client secret or a private key) is the name of a variable.
pub type ClientCredentialsAuth = brain_tools_auth::ClientCredentials<String>;
/// How a `client_credentials` client authenticates (`token_endpoint_auth_method`), its
/// secret named by a variable (`client_secret_env` or `private_key_env`).
pub type ClientAuthentication = brain_tools_auth::ClientAuthentication<String>;
/// `"type": "oauth"`: a delegated grant per tenant (authorization code with PKCE).
pub type OAuthAuth = brain_tools_auth::OAuth<String>;
/// `"type": "workload_identity"`: a workload identity token (named by `assertion_env`)
/// exchanged for an access token (the JWT bearer grant, RFC 7523).
pub type WorkloadIdentityAuth = brain_tools_auth::WorkloadIdentity<String>;
/// `"type": "enterprise"`: enterprise-managed authorization (SEP-990).
pub type EnterpriseAuth = brain_tools_auth::Enterprise<String>;

pub use brain_tools_auth::{SecretMethod, SigningAlgorithm, TokenEndpointAuthMethod};
