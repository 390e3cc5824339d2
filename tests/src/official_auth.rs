//! The authorization side of the official client: what a host configures for a protected
//! server, built from the scenario's context.
//!
//! - the binding's `auth` object, as a host config holds it (and loaded by the same
//!   loader, so it is checked like one): `client_credentials` from the context's client
//!   ID and secret or private key; `enterprise` from its identity provider fields;
//!   `oauth` with the context's pre-registered client (its issuer pinned) for
//!   `auth/pre-registration`, else with a client ID metadata document URL (used when the
//!   authorization server supports them; dynamic registration otherwise), asking for
//!   DPoP-bound tokens (`"dpop": true`) in `auth/dpop` and `auth/dpop-nonce`;
//! - the secrets the object names, handed to `ToolHost` through its token source (never
//!   written in the config);
//! - the host's [`Authorizer`]: instead of a browser, a GET of the authorization URL that
//!   does not follow the redirect, whose `Location` is the callback (the suite's
//!   authorization server redirects at once);
//! - the host's [`IdentityTokenProvider`]: the context's identity token.
//!
//! Grants are kept in a [`MemoryCredentialStore`]: a conformance run never writes to the
//! user's credential directory.

use std::{collections::HashMap, sync::Arc};

use anyhow::Context as _;
use brain_tools::{
    AuthorizationPrompt, Authorizer, ClientOptions, HostAuthError, IdentityTokenProvider,
    MemoryCredentialStore, Secret,
};
use brain_tools_config::{HostConfig, McpAuth, McpServer, Target};
use serde_json::{Value, json};

/// The client ID metadata document URL the suite expects (it need not resolve).
pub(crate) const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// Where the authorization server sends the "browser" back; nothing listens there: the
/// authorizer reads the redirect instead of following it.
pub(crate) const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// The variables the `auth` objects name; their values come from the context.
const CLIENT_SECRET: &str = "CONFORMANCE_CLIENT_SECRET";
const PRIVATE_KEY: &str = "CONFORMANCE_PRIVATE_KEY";
const WORKLOAD_TOKEN: &str = "CONFORMANCE_WORKLOAD_TOKEN";

/// What a host holds for a protected server.
#[derive(Debug, Clone)]
pub(crate) struct HostAuth {
    /// The binding's `auth` object.
    pub(crate) auth: McpAuth,
    /// The values of the variables the object names.
    pub(crate) secrets: Arc<HashMap<String, String>>,
    /// The tenant's identity token (enterprise-managed authorization).
    pub(crate) id_token: Option<String>,
}

impl HostAuth {
    /// The client options a host with this authorization sets: an in-memory credential
    /// store, the headless authorizer, the identity-token provider.
    pub(crate) fn options(&self, options: ClientOptions) -> ClientOptions {
        let mut options = options
            .credential_store(Arc::new(MemoryCredentialStore::new()))
            .authorizer(Arc::new(FollowRedirect));
        if let Some(token) = &self.id_token {
            options = options.identity_tokens(Arc::new(ContextIdentity(Secret::new(token))));
        }
        options
    }

    /// A secret variable's value (the host's token source).
    pub(crate) fn read(&self, variable: &str) -> Option<String> {
        self.secrets.get(variable).cloned()
    }
}

/// The host's authorization for an `auth/*` scenario; `None` for the others.
pub(crate) fn for_scenario(
    scenario: &str,
    context: Option<&Value>,
) -> anyhow::Result<Option<HostAuth>> {
    if !scenario.starts_with("auth/") {
        return Ok(None);
    }
    let field = |name: &str| {
        context
            .and_then(|context| context.get(name))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .with_context(|| format!("MCP_CONFORMANCE_CONTEXT has no {name}"))
    };
    let mut secrets = HashMap::new();
    let mut id_token = None;
    let auth = match scenario {
        "auth/client-credentials-basic" => {
            secrets.insert(CLIENT_SECRET.to_owned(), field("client_secret")?);
            json!({
                "type": "client_credentials",
                "client_id": field("client_id")?,
                "client_secret_env": CLIENT_SECRET,
            })
        }
        "auth/client-credentials-jwt" => {
            secrets.insert(PRIVATE_KEY.to_owned(), field("private_key_pem")?);
            json!({
                "type": "client_credentials",
                "client_id": field("client_id")?,
                "token_endpoint_auth_method": "private_key_jwt",
                "private_key_env": PRIVATE_KEY,
                "signing_algorithm": field("signing_algorithm")?,
            })
        }
        "auth/enterprise-managed-authorization" => {
            secrets.insert(CLIENT_SECRET.to_owned(), field("client_secret")?);
            id_token = Some(field("idp_id_token")?);
            json!({
                "type": "enterprise",
                "client_id": field("client_id")?,
                "client_secret_env": CLIENT_SECRET,
                "idp_issuer": field("idp_issuer")?,
                "idp_token_endpoint": field("idp_token_endpoint")?,
                "idp_client_id": field("idp_client_id")?,
            })
        }
        "auth/wif-jwt-bearer" => {
            secrets.insert(WORKLOAD_TOKEN.to_owned(), field("valid_jwt")?);
            json!({
                "type": "workload_identity",
                "assertion_env": WORKLOAD_TOKEN,
                "client_id": field("client_id")?,
            })
        }
        "auth/pre-registration" => {
            secrets.insert(CLIENT_SECRET.to_owned(), field("client_secret")?);
            json!({
                "type": "oauth",
                "client_id": field("client_id")?,
                "client_secret_env": CLIENT_SECRET,
                "issuer": field("issuer")?,
            })
        }
        // DPoP (SEP-1932): the authorization code flow as below, the binding asking for
        // DPoP-bound tokens (the authorization server offers ES256).
        "auth/dpop" | "auth/dpop-nonce" => json!({
            "type": "oauth",
            "client_id_metadata_url": CLIENT_METADATA_URL,
            "dpop": true,
        }),
        // Every other scenario is the authorization code flow with a client that has no
        // registration of its own: its metadata document where the authorization server
        // supports them, else dynamic registration.
        _ => json!({
            "type": "oauth",
            "client_id_metadata_url": CLIENT_METADATA_URL,
        }),
    };
    let auth = load(auth, &secrets)?;
    Ok(Some(HostAuth {
        auth,
        secrets: Arc::new(secrets),
        id_token,
    }))
}

/// An `auth` object as the host config loader reads it (every field checked).
fn load(auth: Value, secrets: &HashMap<String, String>) -> anyhow::Result<McpAuth> {
    let document = json!({"tools": [{
        "name": "probe",
        "input_schema": {"type": "object"},
        "url": "http://localhost/mcp",
        "mcp_tool": "probe",
        "tenants": [crate::bindings::TENANT],
        "auth": auth,
    }]});
    let loaded = HostConfig::from_json_value_with_env(&document, |name| secrets.contains_key(name))
        .map_err(|errors| anyhow::anyhow!("the auth object does not load: {errors}"))?;
    for warning in &loaded.warnings {
        eprintln!("config warning: {warning}");
    }
    let Some(Target::Mcp(mcp)) = loaded.config.tools.first().map(|binding| &binding.target) else {
        anyhow::bail!("the probe binding is not an MCP binding");
    };
    match &mcp.server {
        McpServer::Http {
            auth: Some(auth), ..
        } => Ok(auth.clone()),
        _ => anyhow::bail!("the probe binding lost its auth object"),
    }
}

/// The authorizer of a host without a browser: the authorization server redirects at
/// once, so the callback is the `Location` of a GET of the authorization URL (never
/// followed: nothing listens at the redirect URI).
#[derive(Debug)]
struct FollowRedirect;

#[async_trait::async_trait]
impl Authorizer for FollowRedirect {
    fn redirect_uri(&self) -> Option<String> {
        Some(REDIRECT_URI.to_owned())
    }

    async fn authorize(&self, prompt: &AuthorizationPrompt) -> Result<String, HostAuthError> {
        eprintln!("authorizing tenant {} (no browser)", prompt.tenant);
        location(&prompt.authorization_url).await
    }
}

/// The `Location` of a redirect (the suite's servers are loopback `http`).
async fn location(url: &str) -> Result<String, HostAuthError> {
    let page = brain_mcp_testkit::oauth::get(url).await?;
    if !(300..400).contains(&page.status) {
        let status = page.status;
        return Err(format!("the authorization server answered {status}, not a redirect").into());
    }
    page.location
        .ok_or_else(|| "the redirect has no Location".into())
}

/// The tenant's identity token, from the context.
#[derive(Debug)]
struct ContextIdentity(Secret);

#[async_trait::async_trait]
impl IdentityTokenProvider for ContextIdentity {
    async fn identity_token(
        &self,
        _tenant: &str,
        _idp_issuer: &str,
    ) -> Result<Option<Secret>, HostAuthError> {
        Ok(Some(self.0.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_become_auth_objects_that_load() {
        let context = json!({
            "client_id": "pre-registered-client",
            "client_secret": "pre-registered-secret",
            "issuer": "http://localhost:1234",
        });
        let host = for_scenario("auth/pre-registration", Some(&context))
            .unwrap()
            .unwrap();
        assert!(matches!(host.auth, McpAuth::OAuth(ref auth)
            if auth.client_id.as_deref() == Some("pre-registered-client")
                && auth.issuer.as_deref() == Some("http://localhost:1234")));
        assert_eq!(
            host.read(CLIENT_SECRET).as_deref(),
            Some("pre-registered-secret")
        );
        let host = for_scenario("auth/metadata-default", None)
            .unwrap()
            .unwrap();
        assert!(matches!(host.auth, McpAuth::OAuth(ref auth)
            if auth.client_id_metadata_url.as_deref() == Some(CLIENT_METADATA_URL)));
        let context = json!({"client_id": "workload", "valid_jwt": "eyJ.e30.sig"});
        let host = for_scenario("auth/wif-jwt-bearer", Some(&context))
            .unwrap()
            .unwrap();
        assert!(matches!(host.auth, McpAuth::WorkloadIdentity(ref auth)
            if auth.client_id.as_deref() == Some("workload")));
        assert_eq!(host.read(WORKLOAD_TOKEN).as_deref(), Some("eyJ.e30.sig"));
        assert!(for_scenario("auth/client-credentials-basic", None).is_err());
        assert!(for_scenario("tools_call", None).unwrap().is_none());
    }
}
