//! Bindings back to the spec's JSON shape, fields in the spec's order:
//! name, description, input_schema, output_schema, url (or command), mcp_tool, token_env,
//! auth, tenants, timeout_seconds, max_output_bytes, result_content, tasks, era,
//! inspect_session.

use serde::{Serialize, Serializer, ser::SerializeMap};

use crate::{
    auth::{
        ClientAuthentication, ClientCredentialsAuth, EnterpriseAuth, McpAuth, OAuthAuth,
        SecretMethod, SigningAlgorithm, WorkloadIdentityAuth,
    },
    binding::{EnvValue, HostConfig, McpServer, ResultContent, StdioCommand, Target, ToolBinding},
    gateway::GatewayConfig,
};

impl Serialize for ToolBinding {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("name", &self.name)?;
        map.serialize_entry("description", &self.description)?;
        map.serialize_entry("input_schema", &self.input_schema)?;
        if let Some(output_schema) = &self.output_schema {
            map.serialize_entry("output_schema", output_schema)?;
        }
        let (token_env, auth, inspect_session, tasks, era) = match &self.target {
            Target::Mcp(mcp) => {
                let (token_env, auth) = match &mcp.server {
                    McpServer::Http {
                        url,
                        token_env,
                        auth,
                    } => {
                        map.serialize_entry("url", url)?;
                        (token_env, auth)
                    }
                    McpServer::Stdio(command) => {
                        map.serialize_entry("command", command)?;
                        (&None, &None)
                    }
                };
                map.serialize_entry("mcp_tool", &mcp.mcp_tool)?;
                (token_env, auth, None, mcp.tasks, mcp.era)
            }
            Target::Http(http) => {
                map.serialize_entry("url", &http.url)?;
                (&http.token_env, &None, http.inspect_session, true, None)
            }
        };
        if let Some(token_env) = token_env {
            map.serialize_entry("token_env", token_env)?;
        }
        if let Some(auth) = auth {
            map.serialize_entry("auth", &AuthJson(auth))?;
        }
        map.serialize_entry("tenants", &self.tenants)?;
        map.serialize_entry("timeout_seconds", &self.timeout_seconds)?;
        map.serialize_entry("max_output_bytes", &self.max_output_bytes)?;
        if self.result_content != ResultContent::Once {
            map.serialize_entry("result_content", self.result_content.as_str())?;
        }
        if !tasks {
            map.serialize_entry("tasks", &false)?;
        }
        if let Some(era) = era {
            map.serialize_entry("era", era.as_str())?;
        }
        if let Some(inspect_session) = inspect_session {
            map.serialize_entry("inspect_session", &inspect_session)?;
        }
        map.end()
    }
}

impl Serialize for StdioCommand {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("program", &self.program)?;
        map.serialize_entry("args", &self.args)?;
        if !self.env.is_empty() {
            let env: serde_json::Map<String, serde_json::Value> = self
                .env
                .iter()
                .map(|(key, value)| {
                    let value = match value {
                        EnvValue::Value(value) => value.clone().into(),
                        EnvValue::FromHost(name) => serde_json::json!({ "from_env": name }),
                    };
                    (key.clone(), value)
                })
                .collect();
            map.serialize_entry("env", &env)?;
        }
        if let Some(cwd) = &self.cwd {
            map.serialize_entry("cwd", cwd)?;
        }
        if self.inherit_env {
            map.serialize_entry("inherit_env", &true)?;
        }
        map.end()
    }
}

/// Writes `key` when `value` is set.
fn entry_if<M: SerializeMap, T: Serialize + ?Sized>(
    map: &mut M,
    key: &'static str,
    value: Option<&T>,
) -> Result<(), M::Error> {
    match value {
        Some(value) => map.serialize_entry(key, value),
        None => Ok(()),
    }
}

/// Writes `scopes` when there are any.
fn scopes<M: SerializeMap>(map: &mut M, scopes: &[String]) -> Result<(), M::Error> {
    entry_if(map, "scopes", (!scopes.is_empty()).then_some(scopes))
}

/// An `auth` object as a config writes it (the model names secrets by variable).
struct AuthJson<'a>(&'a McpAuth);

impl Serialize for AuthJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", self.0.type_name())?;
        match self.0 {
            McpAuth::ClientCredentials(auth) => client_credentials(&mut map, auth)?,
            McpAuth::OAuth(auth) => oauth(&mut map, auth)?,
            McpAuth::Enterprise(auth) => enterprise(&mut map, auth)?,
            McpAuth::WorkloadIdentity(auth) => workload_identity(&mut map, auth)?,
            // A kind a newer model knows and this config crate does not write.
            _ => {}
        }
        map.end()
    }
}

fn client_credentials<M: SerializeMap>(
    map: &mut M,
    auth: &ClientCredentialsAuth,
) -> Result<(), M::Error> {
    map.serialize_entry("client_id", &auth.client_id)?;
    match &auth.authentication {
        ClientAuthentication::Secret { secret, method } => {
            map.serialize_entry("client_secret_env", secret)?;
            entry_if(
                map,
                "token_endpoint_auth_method",
                method.map(SecretMethod::as_str),
            )?;
        }
        ClientAuthentication::PrivateKeyJwt { key, algorithm } => {
            map.serialize_entry("token_endpoint_auth_method", "private_key_jwt")?;
            map.serialize_entry("private_key_env", key)?;
            // The default is not written: a config that named none reads the same.
            entry_if(
                map,
                "signing_algorithm",
                (*algorithm != SigningAlgorithm::default()).then(|| algorithm.as_str()),
            )?;
        }
        _ => {}
    }
    scopes(map, &auth.scopes)?;
    entry_if(map, "issuer", auth.issuer.as_ref())?;
    entry_if(map, "dpop", auth.dpop.then_some(&true))
}

fn oauth<M: SerializeMap>(map: &mut M, auth: &OAuthAuth) -> Result<(), M::Error> {
    entry_if(map, "client_id", auth.client_id.as_ref())?;
    entry_if(map, "client_secret_env", auth.client_secret.as_ref())?;
    entry_if(
        map,
        "client_id_metadata_url",
        auth.client_id_metadata_url.as_ref(),
    )?;
    scopes(map, &auth.scopes)?;
    entry_if(map, "redirect_uri", auth.redirect_uri.as_ref())?;
    entry_if(map, "issuer", auth.issuer.as_ref())?;
    entry_if(map, "dpop", auth.dpop.then_some(&true))
}

fn enterprise<M: SerializeMap>(map: &mut M, auth: &EnterpriseAuth) -> Result<(), M::Error> {
    map.serialize_entry("client_id", &auth.client_id)?;
    entry_if(map, "client_secret_env", auth.client_secret.as_ref())?;
    map.serialize_entry("idp_issuer", &auth.idp_issuer)?;
    map.serialize_entry("idp_token_endpoint", &auth.idp_token_endpoint)?;
    map.serialize_entry("idp_client_id", &auth.idp_client_id)?;
    entry_if(
        map,
        "idp_client_secret_env",
        auth.idp_client_secret.as_ref(),
    )?;
    scopes(map, &auth.scopes)?;
    entry_if(map, "issuer", auth.issuer.as_ref())
}

fn workload_identity<M: SerializeMap>(
    map: &mut M,
    auth: &WorkloadIdentityAuth,
) -> Result<(), M::Error> {
    map.serialize_entry("assertion_env", &auth.assertion)?;
    entry_if(map, "client_id", auth.client_id.as_ref())?;
    scopes(map, &auth.scopes)?;
    entry_if(map, "issuer", auth.issuer.as_ref())
}

impl Serialize for HostConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("tools", &self.tools)?;
        if let Some(gateway) = &self.gateway {
            map.serialize_entry("gateway", gateway)?;
        }
        map.end()
    }
}

/// Every field, defaults included, in the documented order.
impl Serialize for GatewayConfig {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some(resource) = &self.resource {
            map.serialize_entry("resource", resource)?;
        }
        if let Some(listen) = &self.listen {
            map.serialize_entry("listen", listen)?;
        }
        if !self.issuers.is_empty() {
            let issuers: Vec<serde_json::Value> = self
                .issuers
                .iter()
                .map(|issuer| {
                    let mut object = serde_json::Map::new();
                    object.insert("issuer".into(), issuer.issuer.clone().into());
                    if let Some(jwks_uri) = &issuer.jwks_uri {
                        object.insert("jwks_uri".into(), jwks_uri.clone().into());
                    }
                    object.into()
                })
                .collect();
            map.serialize_entry("issuers", &issuers)?;
        }
        map.serialize_entry("tenant_claim", &self.tenant_claim)?;
        map.serialize_entry("scopes", &self.scopes)?;
        if let Some(api_keys) = &self.api_keys {
            map.serialize_entry("api_keys", api_keys)?;
        }
        map.serialize_entry("allowed_origins", &self.allowed_origins)?;
        map.serialize_entry("allowed_hosts", &self.allowed_hosts)?;
        if let Some(tls) = &self.tls {
            map.serialize_entry(
                "tls",
                &serde_json::json!({"cert": tls.cert, "key": tls.key}),
            )?;
        }
        let limits = &self.limits;
        map.serialize_entry(
            "limits",
            &serde_json::json!({
                "calls_in_flight_per_tenant": limits.calls_in_flight_per_tenant,
                "requests_per_minute_per_tenant": limits.requests_per_minute_per_tenant,
                "max_body_bytes": limits.max_body_bytes,
                "header_timeout_seconds": limits.header_timeout_seconds,
                "idle_timeout_seconds": limits.idle_timeout_seconds,
                "max_connections": limits.max_connections,
                "drain_seconds": limits.drain_seconds,
                "drain_notice_seconds": limits.drain_notice_seconds,
            }),
        )?;
        map.end()
    }
}
