//! The `auth` object of an HTTP MCP binding: its shape per `type`, the rules between its
//! fields, and its URLs. A secret is never read from the config, and never echoed: a
//! problem names the field, not its value.

use serde_json::Value;

use super::{
    ENV_NAME, Fields, Loader, UniqueStrings, has_user_info, suggest, type_name, without_user_info,
};
use crate::{
    auth::{
        ClientAuthentication, ClientCredentialsAuth, EnterpriseAuth, McpAuth, OAuthAuth,
        SigningAlgorithm, TokenEndpointAuthMethod, WorkloadIdentityAuth,
    },
    error::{Problem, Warning, WarningKind},
};

const AUTH_TYPES: &[&str] = &[
    "client_credentials",
    "oauth",
    "enterprise",
    "workload_identity",
];

/// The fields of each type, in the order they are printed.
const CLIENT_CREDENTIALS_FIELDS: &[&str] = &[
    "type",
    "client_id",
    "client_secret_env",
    "token_endpoint_auth_method",
    "private_key_env",
    "signing_algorithm",
    "scopes",
    "issuer",
    "dpop",
];
const OAUTH_FIELDS: &[&str] = &[
    "type",
    "client_id",
    "client_secret_env",
    "client_id_metadata_url",
    "scopes",
    "redirect_uri",
    "issuer",
    "dpop",
];
const ENTERPRISE_FIELDS: &[&str] = &[
    "type",
    "client_id",
    "client_secret_env",
    "idp_issuer",
    "idp_token_endpoint",
    "idp_client_id",
    "idp_client_secret_env",
    "scopes",
    "issuer",
];

const WORKLOAD_IDENTITY_FIELDS: &[&str] =
    &["type", "assertion_env", "client_id", "scopes", "issuer"];

const METHODS: &[&str] = &[
    "client_secret_basic",
    "client_secret_post",
    "private_key_jwt",
];
const ALGORITHMS: &[&str] = &["RS256", "RS384", "RS512", "ES256", "ES384"];

/// Keys that would hold a secret inline (compared ignoring case and separators), and the
/// field that names its environment variable instead.
const INLINE_SECRETS: &[(&str, Option<&str>)] = &[
    ("client_secret", Some("client_secret_env")),
    ("private_key", Some("private_key_env")),
    ("idp_client_secret", Some("idp_client_secret_env")),
    ("token", Some("token_env")),
    ("access_token", Some("token_env")),
    ("bearer_token", Some("token_env")),
    ("api_key", Some("token_env")),
    ("refresh_token", None),
    ("id_token", None),
    ("password", None),
    ("secret", None),
    ("client_assertion", None),
    ("assertion", Some("assertion_env")),
];

/// What a URL in `auth` must look like, beyond absolute https.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum UrlRule {
    /// An issuer identifier (RFC 8414): no query, no fragment; http for loopback.
    Issuer,
    /// An endpoint (token endpoint, redirect URI): no fragment; http for loopback.
    Endpoint,
    /// A client ID metadata document: https only, a path, no fragment.
    ClientMetadata,
}

impl Loader<'_> {
    /// The `auth` object of an HTTP MCP binding; `None` when a problem was reported.
    pub(super) fn auth(&mut self, binding: &Fields<'_>) -> Option<McpAuth> {
        let path = binding.at("auth");
        let tool = binding.tool.clone();
        let object = match binding.object.get("auth") {
            Some(Value::Object(object)) => object,
            Some(other) => {
                self.error(
                    &path,
                    tool.as_deref(),
                    Problem::WrongType {
                        expected: r#"an object like {"type": "oauth"}"#,
                        found: type_name(other),
                    },
                );
                return None;
            }
            None => return None,
        };
        let fields = Fields { path, object, tool };
        let errors_before = self.errors.len();

        let kind = self.auth_type(&fields);
        let allowed = match kind {
            Some("client_credentials") => Some(CLIENT_CREDENTIALS_FIELDS),
            Some("oauth") => Some(OAUTH_FIELDS),
            Some("enterprise") => Some(ENTERPRISE_FIELDS),
            Some("workload_identity") => Some(WORKLOAD_IDENTITY_FIELDS),
            _ => None,
        };
        for key in object.keys() {
            if let Some(env_key) = inline_secret(key) {
                // Point at the variable field only where this type has one.
                let env_key = env_key
                    .filter(|env| *env == "token_env" || allowed.is_none_or(|a| a.contains(env)));
                self.error(
                    &fields.at(key),
                    fields.tool.as_deref(),
                    Problem::InlineSecret { env_key },
                );
            } else if let Some(allowed) = allowed
                && !allowed.contains(&key.as_str())
            {
                self.error(
                    &fields.at(key),
                    fields.tool.as_deref(),
                    Problem::UnknownField {
                        object: match kind {
                            Some("client_credentials") => "a client_credentials auth",
                            Some("oauth") => "an oauth auth",
                            Some("workload_identity") => "a workload_identity auth",
                            _ => "an enterprise auth",
                        },
                        suggestion: suggest(key, allowed),
                        allowed,
                    },
                );
            }
        }
        let auth = match kind? {
            "client_credentials" => self
                .client_credentials(&fields)
                .map(McpAuth::ClientCredentials),
            "oauth" => self.oauth(&fields).map(McpAuth::OAuth),
            "workload_identity" => self
                .workload_identity(&fields)
                .map(McpAuth::WorkloadIdentity),
            _ => self.enterprise(&fields).map(McpAuth::Enterprise),
        };
        if !fields.object.contains_key("issuer") {
            self.warnings.push(Warning::new(
                &fields.at("issuer"),
                fields.tool.as_deref(),
                WarningKind::IssuerNotPinned,
            ));
        }
        if self.errors.len() > errors_before {
            return None;
        }
        auth
    }

    /// `type`, one of [`AUTH_TYPES`]; `None` when reported.
    fn auth_type(&mut self, fields: &Fields<'_>) -> Option<&'static str> {
        let path = fields.at("type");
        let tool = fields.tool.as_deref();
        match fields.object.get("type") {
            None => {
                self.error(
                    &path,
                    tool,
                    Problem::Missing {
                        what: r#"the kind of authorization: "client_credentials", "oauth", "enterprise" or "workload_identity""#,
                    },
                );
                None
            }
            Some(Value::String(kind)) => {
                let found = AUTH_TYPES.iter().copied().find(|known| known == kind);
                if found.is_none() {
                    self.error(
                        &path,
                        tool,
                        Problem::NotOneOf {
                            allowed: AUTH_TYPES,
                        },
                    );
                }
                found
            }
            Some(other) => {
                self.error(
                    &path,
                    tool,
                    Problem::WrongType {
                        expected: "a string",
                        found: type_name(other),
                    },
                );
                None
            }
        }
    }

    fn client_credentials(&mut self, fields: &Fields<'_>) -> Option<ClientCredentialsAuth> {
        let client_id = self.required_string(
            fields,
            "client_id",
            "the client's identifier at the authorization server",
        );
        let client_secret_env = self.env_field(
            fields,
            "client_secret_env",
            "client secret",
            "MCP_CLIENT_SECRET",
        );
        let method = self.one_of(fields, "token_endpoint_auth_method", METHODS);
        let private_key_env = self.env_field(
            fields,
            "private_key_env",
            "PEM private key",
            "MCP_PRIVATE_KEY",
        );
        let algorithm = self.one_of(fields, "signing_algorithm", ALGORITHMS);
        let scopes = self.scopes(fields);
        let issuer = self.auth_url(fields, "issuer", UrlRule::Issuer);
        let dpop = self.dpop(fields);

        let method = method.map(|m| m.and_then(TokenEndpointAuthMethod::from_name));
        let has = |key| fields.object.contains_key(key);
        let tool = fields.tool.as_deref();
        match method {
            Some(Some(TokenEndpointAuthMethod::PrivateKeyJwt)) => {
                if !has("private_key_env") {
                    self.error(
                        &fields.at("private_key_env"),
                        tool,
                        Problem::Missing {
                            what: "private_key_env, the variable that holds the PEM private key that signs the client assertion",
                        },
                    );
                }
                if has("client_secret_env") {
                    self.error(
                        &fields.at("client_secret_env"),
                        tool,
                        Problem::NotApplicable {
                            reason: "does not apply to private_key_jwt",
                            fix: "remove it; private_key_jwt signs with the key named by private_key_env",
                        },
                    );
                }
            }
            // A secret method, or none (then one is chosen from the server's metadata).
            Some(_) => {
                if !has("client_secret_env") {
                    self.error(
                        &fields.at("client_secret_env"),
                        tool,
                        Problem::Missing {
                            what: r#"client_secret_env, the variable that holds the client secret (or set "token_endpoint_auth_method": "private_key_jwt" with private_key_env)"#,
                        },
                    );
                }
                for key in ["private_key_env", "signing_algorithm"] {
                    if has(key) {
                        self.error(
                            &fields.at(key),
                            tool,
                            Problem::NotApplicable {
                                reason: "applies to private_key_jwt only",
                                fix: r#"remove it, or set "token_endpoint_auth_method": "private_key_jwt""#,
                            },
                        );
                    }
                }
            }
            // A bad method, already reported.
            None => {}
        }

        // Every problem is reported above; what is missing here was among them.
        let method = method?;
        let authentication = if method == Some(TokenEndpointAuthMethod::PrivateKeyJwt) {
            ClientAuthentication::PrivateKeyJwt {
                key: private_key_env??,
                algorithm: algorithm?
                    .and_then(SigningAlgorithm::from_name)
                    .unwrap_or_default(),
            }
        } else {
            ClientAuthentication::Secret {
                secret: client_secret_env??,
                method: method.and_then(TokenEndpointAuthMethod::secret_method),
            }
        };
        let mut auth = ClientCredentialsAuth::new(client_id?, authentication)
            .scopes(scopes?)
            .dpop(dpop?);
        auth.issuer = issuer?;
        Some(auth)
    }

    fn oauth(&mut self, fields: &Fields<'_>) -> Option<OAuthAuth> {
        let client_id = self.non_empty_string(fields, "client_id");
        let client_secret_env = self.env_field(
            fields,
            "client_secret_env",
            "client secret",
            "MCP_CLIENT_SECRET",
        );
        if fields.object.contains_key("client_secret_env")
            && !fields.object.contains_key("client_id")
        {
            self.error(
                &fields.at("client_secret_env"),
                fields.tool.as_deref(),
                Problem::NotApplicable {
                    reason: "applies only with client_id",
                    fix: "add the pre-registered client_id the secret belongs to, or remove it",
                },
            );
        }
        let client_id_metadata_url =
            self.auth_url(fields, "client_id_metadata_url", UrlRule::ClientMetadata);
        let scopes = self.scopes(fields);
        let redirect_uri = self.auth_url(fields, "redirect_uri", UrlRule::Endpoint);
        let issuer = self.auth_url(fields, "issuer", UrlRule::Issuer);
        let dpop = self.dpop(fields);
        let mut auth = OAuthAuth::new().scopes(scopes?).dpop(dpop?);
        auth.client_id = client_id?;
        auth.client_secret = client_secret_env?;
        auth.client_id_metadata_url = client_id_metadata_url?;
        auth.redirect_uri = redirect_uri?;
        auth.issuer = issuer?;
        Some(auth)
    }

    fn enterprise(&mut self, fields: &Fields<'_>) -> Option<EnterpriseAuth> {
        let client_id = self.required_string(
            fields,
            "client_id",
            "the client's identifier at the MCP server's authorization server",
        );
        let client_secret_env = self.env_field(
            fields,
            "client_secret_env",
            "client secret",
            "MCP_CLIENT_SECRET",
        );
        let idp_issuer = self.required_url(
            fields,
            "idp_issuer",
            "the identity provider's issuer, e.g. https://idp.example.com",
            UrlRule::Issuer,
        );
        let idp_token_endpoint = self.required_url(
            fields,
            "idp_token_endpoint",
            "the identity provider's token endpoint, e.g. https://idp.example.com/oauth2/token",
            UrlRule::Endpoint,
        );
        let idp_client_id = self.required_string(
            fields,
            "idp_client_id",
            "the client's identifier at the identity provider",
        );
        let idp_client_secret_env = self.env_field(
            fields,
            "idp_client_secret_env",
            "identity provider's client secret",
            "IDP_CLIENT_SECRET",
        );
        let scopes = self.scopes(fields);
        let issuer = self.auth_url(fields, "issuer", UrlRule::Issuer);
        let mut auth =
            EnterpriseAuth::new(client_id?, idp_issuer?, idp_token_endpoint?, idp_client_id?)
                .client_secret(client_secret_env?)
                .idp_client_secret(idp_client_secret_env?)
                .scopes(scopes?);
        auth.issuer = issuer?;
        Some(auth)
    }

    fn workload_identity(&mut self, fields: &Fields<'_>) -> Option<WorkloadIdentityAuth> {
        let assertion_env = self.env_field(
            fields,
            "assertion_env",
            "workload identity token",
            "WORKLOAD_IDENTITY_TOKEN",
        );
        if !fields.object.contains_key("assertion_env") {
            self.error(
                &fields.at("assertion_env"),
                fields.tool.as_deref(),
                Problem::Missing {
                    what: "assertion_env, the variable that holds the workload's identity token (a JWT for the authorization server)",
                },
            );
        }
        let client_id = self.non_empty_string(fields, "client_id");
        let scopes = self.scopes(fields);
        let issuer = self.auth_url(fields, "issuer", UrlRule::Issuer);
        let mut auth = WorkloadIdentityAuth::new(assertion_env??).scopes(scopes?);
        auth.client_id = client_id?;
        auth.issuer = issuer?;
        Some(auth)
    }

    /// `dpop`: a boolean, false when absent; `None` when reported.
    fn dpop(&mut self, fields: &Fields<'_>) -> Option<bool> {
        if !fields.object.contains_key("dpop") {
            return Some(false);
        }
        self.optional_bool(fields, "dpop")
    }

    /// An optional string that must not be empty: `Some(None)` when absent, `None` when
    /// reported.
    pub(super) fn non_empty_string(
        &mut self,
        fields: &Fields<'_>,
        field: &str,
    ) -> Option<Option<String>> {
        if !fields.object.contains_key(field) {
            return Some(None);
        }
        let value = self.optional_string(fields, field)?;
        if value.is_empty() {
            self.error(
                &fields.at(field),
                fields.tool.as_deref(),
                Problem::EmptyString,
            );
            return None;
        }
        Some(Some(value))
    }

    /// A `*_env` field: a variable name, warned about when unset now. `Some(None)` when
    /// absent, `None` when reported.
    fn env_field(
        &mut self,
        fields: &Fields<'_>,
        field: &str,
        holds: &'static str,
        example: &'static str,
    ) -> Option<Option<String>> {
        let Some(name) = self.non_empty_string(fields, field)? else {
            return Some(None);
        };
        let path = fields.at(field);
        let tool = fields.tool.as_deref();
        if !ENV_NAME.is_match(&name) {
            self.error(&path, tool, Problem::BadEnvName { holds, example });
            return None;
        }
        if !(self.is_set)(&name) {
            self.warnings.push(Warning::new(
                &path,
                tool,
                WarningKind::AuthEnvUnset {
                    variable: name.clone(),
                },
            ));
        }
        Some(Some(name))
    }

    /// A string that must be one of `allowed` (the value is not echoed: it may be a
    /// secret pasted into the wrong field). `Some(None)` when absent, `None` when reported.
    fn one_of(
        &mut self,
        fields: &Fields<'_>,
        field: &str,
        allowed: &'static [&'static str],
    ) -> Option<Option<&'static str>> {
        let Some(value) = self.non_empty_string(fields, field)? else {
            return Some(None);
        };
        match allowed.iter().copied().find(|known| *known == value) {
            Some(known) => Some(Some(known)),
            None => {
                self.error(
                    &fields.at(field),
                    fields.tool.as_deref(),
                    Problem::NotOneOf { allowed },
                );
                None
            }
        }
    }

    /// `scopes`: a non-empty list of unique scope strings. Empty when absent, `None` when
    /// reported.
    pub(super) fn scopes(&mut self, fields: &Fields<'_>) -> Option<Vec<String>> {
        let path = fields.at("scopes");
        let tool = fields.tool.as_deref();
        let items = match fields.object.get("scopes") {
            None => return Some(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(other) => {
                self.error(
                    &path,
                    tool,
                    Problem::WrongType {
                        expected: "an array of scopes",
                        found: type_name(other),
                    },
                );
                return None;
            }
        };
        self.non_empty_unique(
            &path,
            tool,
            items,
            UniqueStrings {
                empty: Problem::NoScopes,
                repeated: |first| Problem::DuplicateScope { first },
                bad: |scope| {
                    scope
                        .chars()
                        .any(|c| c.is_whitespace() || c.is_control())
                        .then_some(Problem::BadScope)
                },
            },
        )
    }

    /// A required URL field.
    pub(super) fn required_url(
        &mut self,
        fields: &Fields<'_>,
        field: &str,
        what: &'static str,
        rule: UrlRule,
    ) -> Option<String> {
        if !fields.object.contains_key(field) {
            self.error(
                &fields.at(field),
                fields.tool.as_deref(),
                Problem::Missing { what },
            );
            return None;
        }
        self.auth_url(fields, field, rule)?
    }

    /// A URL in `auth`: absolute https (http only to a loopback host, where the rule
    /// allows it), without user info, and as `rule` says. Kept as written. `Some(None)`
    /// when absent, `None` when reported.
    pub(super) fn auth_url(
        &mut self,
        fields: &Fields<'_>,
        field: &str,
        rule: UrlRule,
    ) -> Option<Option<String>> {
        let Some(text) = self.non_empty_string(fields, field)? else {
            return Some(None);
        };
        let path = fields.at(field);
        match check_auth_url(&text, rule) {
            Ok(()) => Some(Some(text)),
            Err(problem) => {
                self.error(&path, fields.tool.as_deref(), problem);
                None
            }
        }
    }
}

/// The first thing wrong with an `auth` URL, if any.
fn check_auth_url(text: &str, rule: UrlRule) -> Result<(), Problem> {
    let url = url::Url::parse(text).map_err(|error| Problem::BadAuthUrl {
        reason: error.to_string(),
    })?;
    // First, so that no later message could ever show a password.
    if has_user_info(&url) {
        return Err(Problem::UrlUserInfo {
            without: without_user_info(url),
            endpoint: false,
        });
    }
    let loopback_allowed = rule != UrlRule::ClientMetadata;
    let secure = match url.scheme() {
        "https" => true,
        "http" => loopback_allowed && is_strict_loopback(&url),
        _ => false,
    };
    if !secure {
        return Err(Problem::NotHttps { loopback_allowed });
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(Problem::BadAuthUrl {
            reason: "no host".into(),
        });
    }
    if url.fragment().is_some() {
        return Err(Problem::UrlPart { part: "fragment" });
    }
    if rule == UrlRule::Issuer && url.query().is_some() {
        return Err(Problem::UrlPart { part: "query" });
    }
    if rule == UrlRule::ClientMetadata && url.path() == "/" {
        return Err(Problem::RootPath);
    }
    Ok(())
}

/// The loopback hosts plain http is accepted for in `auth`: 127.0.0.1, ::1, localhost.
fn is_strict_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip == std::net::Ipv4Addr::LOCALHOST,
        Some(url::Host::Ipv6(ip)) => ip == std::net::Ipv6Addr::LOCALHOST,
        None => false,
    }
}

/// For a key that holds a secret inline: `Some(the field naming its variable, if any)`.
fn inline_secret(key: &str) -> Option<Option<&'static str>> {
    let normalized: String = key
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect();
    INLINE_SECRETS
        .iter()
        .find(|(secret, _)| secret.replace('_', "") == normalized)
        .map(|(_, env)| *env)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_the_enums() {
        for (name, method) in METHODS.iter().zip(TokenEndpointAuthMethod::ALL) {
            assert_eq!(*name, method.as_str());
        }
        for (name, algorithm) in ALGORITHMS.iter().zip(SigningAlgorithm::ALL) {
            assert_eq!(*name, algorithm.as_str());
        }
        assert_eq!(METHODS.len(), TokenEndpointAuthMethod::ALL.len());
        assert_eq!(ALGORITHMS.len(), SigningAlgorithm::ALL.len());
    }

    #[test]
    fn inline_secrets_are_recognized_whatever_the_spelling() {
        assert_eq!(
            inline_secret("client_secret"),
            Some(Some("client_secret_env"))
        );
        assert_eq!(
            inline_secret("clientSecret"),
            Some(Some("client_secret_env"))
        );
        assert_eq!(inline_secret("Refresh-Token"), Some(None));
        assert_eq!(inline_secret("client_secret_env"), None);
        assert_eq!(inline_secret("client_id"), None);
    }

    #[test]
    fn auth_urls() {
        use UrlRule::*;
        let check = |text, rule| check_auth_url(text, rule).err().map(|p| p.to_string());
        assert_eq!(check("https://as.example.com", Issuer), None);
        assert_eq!(check("http://127.0.0.1:8976/callback", Endpoint), None);
        assert_eq!(check("http://[::1]/cb", Endpoint), None);
        assert_eq!(check("http://LOCALHOST/cb", Endpoint), None);
        assert!(
            check("http://127.0.0.2/cb", Endpoint)
                .unwrap()
                .contains("https")
        );
        assert!(
            check("http://as.example.com", Issuer)
                .unwrap()
                .contains("https")
        );
        assert!(
            check("ftp://as.example.com", Issuer)
                .unwrap()
                .contains("https")
        );
        assert_eq!(
            check("https://as.example.com/?tenant=a", Issuer).as_deref(),
            Some("must not have a query")
        );
        assert_eq!(check("https://as.example.com/cb?x=1", Endpoint), None);
        assert_eq!(
            check("https://as.example.com/cb#x", Endpoint).as_deref(),
            Some("must not have a fragment")
        );
        assert_eq!(
            check("https://app.example.com", ClientMetadata).as_deref(),
            Some("must have a path after the host")
        );
        assert_eq!(
            check("http://127.0.0.1/client.json", ClientMetadata).as_deref(),
            Some("must be an https URL")
        );
        assert_eq!(
            check("https://app.example.com/client.json", ClientMetadata),
            None
        );
        let problem = check_auth_url("https://me:hunter2@as.example.com/x", Issuer).unwrap_err();
        let shown = format!("{problem}; {}", problem.hint());
        assert!(
            !shown.contains("hunter2") && !shown.contains("me@"),
            "{shown}"
        );
        assert!(shown.contains("https://as.example.com/x"), "{shown}");
    }
}
