//! Bindings from discovered tools: what `mcp-tools` prints for the host config.

use std::collections::HashSet;

use brain_mcp_transport::{DiscoveredTool, Endpoint, Grant, Secret, StdioEndpoint};
use brain_tools_config::{EnvValue, McpAuth, McpServer, McpTarget, Target, ToolBinding};

/// Bindings for discovered tools, and the tools that had to be renamed.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Bound {
    /// One binding per tool, in the given order, with the spec's defaults.
    pub bindings: Vec<ToolBinding>,
    /// `(tool name on the server, binding name)` for each tool whose name is not a valid,
    /// unique binding name.
    pub renamed: Vec<(String, String)>,
}

/// Binds discovered tools of one server for the given tenants. Schemas are copied
/// verbatim; a tool whose name does not match `^[A-Za-z0-9_-]{1,64}$` (or repeats one)
/// gets a cleaned, unique binding name.
pub fn bind_discovered(tools: &[&DiscoveredTool], server: &McpServer, tenants: &[String]) -> Bound {
    let mut taken = HashSet::new();
    let mut renamed = Vec::new();
    let bindings = tools
        .iter()
        .map(|tool| {
            let name = binding_name(&tool.name, &mut taken);
            if name != tool.name {
                renamed.push((tool.name.clone(), name.clone()));
            }
            let mut binding = ToolBinding::new(
                name,
                tool.input_schema.clone(),
                tenants.to_vec(),
                Target::Mcp(McpTarget::new(server.clone(), tool.name.clone())),
            );
            binding.description = tool.description.clone().unwrap_or_default();
            binding.output_schema = tool.output_schema.clone();
            binding
        })
        .collect();
    Bound { bindings, renamed }
}

/// Where an MCP binding's server is, as the transport reaches it, with the bearer
/// (already read from the binding's `token_env`) for an HTTP server.
///
/// A stdio server's `{"from_env": NAME}` variables take the host's `NAME` as it is now;
/// an unset one is left out.
pub fn endpoint_of(server: &McpServer, bearer: Option<Secret>) -> Endpoint {
    endpoint_with_env(server, bearer, |name| std::env::var(name).ok())
}

/// [`endpoint_of`], reading host variables through `host_env`.
fn endpoint_with_env(
    server: &McpServer,
    bearer: Option<Secret>,
    host_env: impl Fn(&str) -> Option<String>,
) -> Endpoint {
    match server {
        McpServer::Stdio(command) => {
            let mut endpoint = StdioEndpoint::new(&command.program, &command.args);
            for (key, value) in &command.env {
                match value {
                    EnvValue::Value(value) => endpoint = endpoint.env(key, value),
                    // Read now, as the server is about to start; unset (or not UTF-8): the
                    // server starts without it, as it would from a shell.
                    EnvValue::FromHost(name) => {
                        if let Some(value) = host_env(name) {
                            endpoint = endpoint.env(key, value);
                        }
                    }
                    // A kind of value this version does not know: not passed.
                    _ => {}
                }
            }
            if let Some(cwd) = &command.cwd {
                endpoint = endpoint.cwd(cwd);
            }
            endpoint = endpoint.inherit_env(command.inherit_env);
            Endpoint::Stdio(endpoint)
        }
        McpServer::Http { url, .. } => Endpoint::http(url.clone(), bearer),
        // A kind of server this version does not know: an endpoint no call can open.
        _ => Endpoint::http(String::new(), None),
    }
}

/// Why a binding's `auth` could not become a grant: a secret it names is not set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GrantError {
    /// A variable the grant needs is unset or empty.
    #[error("{variable}, the environment variable that holds {what}, is not set")]
    MissingSecret {
        /// The variable.
        variable: String,
        /// What it holds (`its client secret`, ...).
        what: &'static str,
    },
}

/// The transport's grant for a binding's `auth`, its secrets read now through `read`
/// (a variable name to its value; the process environment in a host), so that a rotated
/// secret takes effect without a restart.
///
/// # Errors
/// [`GrantError::MissingSecret`] naming the first variable the grant needs that `read`
/// finds unset or empty.
pub fn grant_of(
    auth: &McpAuth,
    read: impl Fn(&str) -> Option<String>,
) -> Result<Grant, GrantError> {
    auth.try_map(|variable, role| {
        read(variable)
            .filter(|value| !value.is_empty())
            .map(Secret::new)
            .ok_or_else(|| GrantError::MissingSecret {
                variable: variable.clone(),
                what: role.describe(),
            })
    })
}

/// A binding name the config accepts: `^[A-Za-z0-9_-]{1,64}$`, unique among `taken`.
fn binding_name(tool: &str, taken: &mut HashSet<String>) -> String {
    let mut name: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        name.push_str("tool");
    }
    let base = name.clone();
    let mut n = 2;
    while !taken.insert(name.clone()) {
        let suffix = format!("_{n}");
        name = format!("{}{suffix}", &base[..base.len().min(64 - suffix.len())]);
        n += 1;
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cleaned_and_unique() {
        let mut taken = HashSet::new();
        assert_eq!(binding_name("search", &mut taken), "search");
        assert_eq!(binding_name("search", &mut taken), "search_2");
        assert_eq!(
            binding_name("github.search/v2", &mut taken),
            "github_search_v2"
        );
        assert_eq!(binding_name("", &mut taken), "tool");
        let long = "x".repeat(80);
        let first = binding_name(&long, &mut taken);
        let second = binding_name(&long, &mut taken);
        assert_eq!((first.len(), second.len()), (64, 64));
        assert!(second.ends_with("_2"));
    }

    #[test]
    fn stdio_variables_passed_through_are_read_as_the_server_starts() {
        use brain_tools_config::StdioCommand;
        let mut command = StdioCommand::new("server", ["--stdio"]);
        command.env = vec![
            ("LOG_LEVEL".into(), EnvValue::Value("warn".into())),
            ("API_KEY".into(), EnvValue::FromHost("HOST_API_KEY".into())),
            ("OPTIONAL".into(), EnvValue::FromHost("UNSET".into())),
        ];
        let server = McpServer::Stdio(command);
        let endpoint = |value: &str| {
            let value = value.to_owned();
            endpoint_with_env(&server, None, move |name| {
                (name == "HOST_API_KEY").then(|| value.clone())
            })
        };
        let Endpoint::Stdio(stdio) = endpoint("sk-live-first") else {
            panic!("a stdio endpoint")
        };
        assert_eq!(
            stdio.env,
            [
                ("LOG_LEVEL".to_owned(), "warn".to_owned()),
                ("API_KEY".to_owned(), "sk-live-first".to_owned())
            ]
        );
        // A rotated value is used by the next start; the endpoint's Debug never shows it.
        let rotated = endpoint("sk-live-second");
        assert_ne!(rotated, Endpoint::Stdio(stdio));
        let debug = format!("{rotated:?}");
        assert!(!debug.contains("sk-live"), "{debug}");
    }

    #[test]
    fn auth_objects_become_grants_with_their_secrets_read_now() {
        use brain_tools_config::{ClientCredentialsAuth, EnterpriseAuth, OAuthAuth};
        let env = |name: &str| match name {
            "CS" => Some("client-secret-1".to_owned()),
            "KEY" => Some("-----BEGIN PRIVATE KEY-----\n...".to_owned()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        use brain_mcp_transport::{ClientAuthentication, SecretMethod, SigningAlgorithm};
        let secret = brain_tools_config::ClientAuthentication::Secret {
            secret: "CS".into(),
            method: Some(SecretMethod::Post),
        };
        let mut cc = ClientCredentialsAuth::new("host", secret)
            .scopes(["a"])
            .issuer("https://as");
        let Ok(Grant::ClientCredentials(grant)) =
            grant_of(&McpAuth::ClientCredentials(cc.clone()), env)
        else {
            panic!("a grant");
        };
        assert_eq!(
            grant.authentication,
            ClientAuthentication::Secret {
                secret: Secret::new("client-secret-1"),
                method: Some(SecretMethod::Post)
            }
        );
        assert_eq!(
            (grant.scopes.as_slice(), grant.issuer.as_deref()),
            (&["a".to_owned()][..], Some("https://as"))
        );
        cc.authentication = brain_tools_config::ClientAuthentication::PrivateKeyJwt {
            key: "KEY".into(),
            algorithm: SigningAlgorithm::Es256,
        };
        let Ok(Grant::ClientCredentials(grant)) =
            grant_of(&McpAuth::ClientCredentials(cc.clone()), env)
        else {
            panic!("a grant");
        };
        assert!(matches!(
            grant.authentication,
            ClientAuthentication::PrivateKeyJwt {
                algorithm: SigningAlgorithm::Es256,
                ..
            }
        ));
        cc.authentication = brain_tools_config::ClientAuthentication::PrivateKeyJwt {
            key: "EMPTY".into(),
            algorithm: SigningAlgorithm::Es256,
        };
        assert_eq!(
            grant_of(&McpAuth::ClientCredentials(cc), env).unwrap_err(),
            GrantError::MissingSecret {
                variable: "EMPTY".into(),
                what: "its private key"
            }
        );
        let mut oauth = OAuthAuth::new();
        oauth.client_id = Some("pre".into());
        oauth.client_secret = Some("UNSET".into());
        let error = grant_of(&McpAuth::OAuth(oauth.clone()), env).unwrap_err();
        assert_eq!(
            error.to_string(),
            "UNSET, the environment variable that holds its client secret, is not set"
        );
        oauth.client_secret = None;
        assert!(matches!(
            grant_of(&McpAuth::OAuth(oauth), env),
            Ok(Grant::OAuth(_))
        ));
        let mut enterprise = EnterpriseAuth::new("c", "https://idp", "https://idp/token", "i");
        enterprise.idp_client_secret = Some("CS".into());
        let Ok(Grant::Enterprise(grant)) = grant_of(&McpAuth::Enterprise(enterprise), env) else {
            panic!("a grant");
        };
        assert_eq!(
            grant.idp_client_secret,
            Some(Secret::new("client-secret-1"))
        );
        assert_eq!(grant.client_secret, None);
    }
}
