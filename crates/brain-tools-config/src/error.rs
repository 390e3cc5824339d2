//! Config problems and warnings: where each is (a JSON path and the binding's name),
//! what is wrong, and what to do about it.

use std::fmt;

use crate::path::Path;

/// Every problem found in a config, in document order. Loading fails with this when
/// there is at least one.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigErrors {
    errors: Vec<ConfigError>,
}

impl ConfigErrors {
    pub(crate) fn new(errors: Vec<ConfigError>) -> Self {
        debug_assert!(!errors.is_empty());
        Self { errors }
    }

    /// The problems, in document order.
    pub fn errors(&self) -> &[ConfigError] {
        &self.errors
    }

    /// How many problems there are.
    pub fn len(&self) -> usize {
        self.errors.len()
    }

    /// Always false: a `ConfigErrors` holds at least one problem.
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.errors.len();
        write!(
            f,
            "the host config has {n} problem{}:",
            if n == 1 { "" } else { "s" }
        )?;
        for error in &self.errors {
            write!(f, "\n  {error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

impl IntoIterator for ConfigErrors {
    type Item = ConfigError;
    type IntoIter = std::vec::IntoIter<ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.errors.into_iter()
    }
}

/// One problem in a config.
///
/// Displayed as `tools[3] (docs_search).inspect_session: applies to HTTP and SSE tools
/// only; remove it from this MCP binding`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ConfigError {
    /// The JSON path of the offending value, e.g. `tools[3].inspect_session`; empty for
    /// the whole document.
    pub path: String,
    /// The name of the binding the problem is in, when the binding has a usable name.
    pub tool: Option<String>,
    /// What is wrong.
    pub problem: Problem,
}

impl ConfigError {
    pub(crate) fn new(path: &Path, tool: Option<&str>, problem: Problem) -> Self {
        Self {
            path: path.to_string(),
            tool: tool.map(str::to_owned),
            problem,
        }
    }

    /// What to do about it.
    pub fn hint(&self) -> String {
        self.problem.hint()
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_location(f, &self.path, self.tool.as_deref())?;
        write!(f, ": {}; {}", self.problem, self.problem.hint())
    }
}

impl std::error::Error for ConfigError {}

/// Writes `tools[3] (name).rest`, or `config` for the whole document.
fn write_location(f: &mut fmt::Formatter<'_>, path: &str, tool: Option<&str>) -> fmt::Result {
    if path.is_empty() {
        return f.write_str("config");
    }
    match (tool, path.find(']')) {
        (Some(tool), Some(end)) if path.starts_with("tools[") => {
            let (binding, rest) = path.split_at(end + 1);
            write!(f, "{binding} ({tool}){rest}")
        }
        _ => f.write_str(path),
    }
}

/// What is wrong with a value in the config.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Problem {
    /// The document is not UTF-8.
    NotUtf8 {
        /// Byte offset of the first invalid byte.
        offset: usize,
    },
    /// The document is empty or only whitespace.
    EmptyDocument,
    /// The document is not JSON.
    NotJson {
        /// serde_json's description of the syntax error.
        reason: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
    },
    /// A required field is absent.
    Missing {
        /// What the field is for, to say what to add.
        what: &'static str,
    },
    /// A value has the wrong JSON type.
    WrongType {
        /// The type the field takes.
        expected: &'static str,
        /// The type found.
        found: &'static str,
    },
    /// A string that must not be empty is empty.
    EmptyString,
    /// `name` does not match `^[A-Za-z0-9_-]{1,64}$`.
    BadName,
    /// `name` is already used by an earlier binding.
    DuplicateName {
        /// The index of the binding that has it first.
        first: usize,
    },
    /// A key that is not a binding field.
    UnknownField {
        /// What kind of object it is in ("a tool binding", "a command").
        object: &'static str,
        /// A field with a similar name, if any.
        suggestion: Option<&'static str>,
        /// The fields this object takes.
        allowed: &'static [&'static str],
    },
    /// A tool's `input_schema` whose `type` is not `object`.
    NotObjectSchema,
    /// `$schema` names a dialect the validator does not know.
    UnknownDialect {
        /// The `$schema` value.
        uri: String,
    },
    /// A `$ref` that points outside the schema document.
    ExternalRef {
        /// The `$ref` value.
        reference: String,
    },
    /// The schema does not compile.
    InvalidSchema {
        /// The validator's reason.
        reason: String,
    },
    /// `url` is not an absolute URL.
    BadUrl {
        /// Why it does not parse.
        reason: String,
    },
    /// `url` is not `http` or `https`.
    UrlScheme {
        /// The scheme found.
        scheme: String,
    },
    /// `token_env` is not a variable name.
    BadTokenEnv,
    /// `tenants` is empty.
    NoTenants,
    /// A tenant is listed twice.
    DuplicateTenant {
        /// The index of its first listing.
        first: usize,
    },
    /// An integer out of its range.
    OutOfRange {
        /// The smallest accepted value.
        min: u64,
        /// The largest accepted value.
        max: u64,
        /// An example value for the hint.
        example: u64,
    },
    /// `inspect_session` on an MCP binding.
    InspectSessionOnMcp,
    /// `command` on a binding without `mcp_tool`.
    CommandWithoutMcpTool,
    /// Both `url` and `command`.
    UrlAndCommand,
    /// Neither `url` nor `command`.
    NoEndpoint,
    /// `token_env` on a stdio binding.
    TokenEnvOnStdio,
    /// The document is larger than [`MAX_CONFIG_BYTES`](crate::MAX_CONFIG_BYTES).
    TooLarge {
        /// The limit, in bytes.
        max: usize,
    },
    /// A key appears more than once in one object (JSON parsers disagree on which one
    /// wins, so neither is taken).
    DuplicateKey {
        /// How many times it appears.
        count: usize,
    },
    /// More repeated keys than are listed.
    MoreDuplicateKeys {
        /// How many more.
        count: usize,
    },
    /// A URL in `auth` that is not an absolute URL with a host.
    BadAuthUrl {
        /// Why it does not parse.
        reason: String,
    },
    /// A URL with a user name or password in it.
    UrlUserInfo {
        /// The URL without its user info (never the password).
        without: String,
        /// Whether it is the binding's `url` (the client would send a second
        /// `Authorization` header) rather than an `auth` URL.
        endpoint: bool,
    },
    /// A URL that must use https (or, where allowed, http to a loopback host).
    NotHttps {
        /// Whether plain http to a loopback host is accepted here.
        loopback_allowed: bool,
    },
    /// A URL with a part it must not have.
    UrlPart {
        /// "query", "fragment".
        part: &'static str,
    },
    /// A URL that must have a path after the host.
    RootPath,
    /// A `*_env` field that is not a variable name.
    BadEnvName {
        /// What the variable holds ("client secret").
        holds: &'static str,
        /// An example name.
        example: &'static str,
    },
    /// A secret written into the config.
    InlineSecret {
        /// The field that names its environment variable instead, when this object has one.
        env_key: Option<&'static str>,
    },
    /// Both `token_env` and `auth`.
    AuthAndTokenEnv,
    /// `auth` on a stdio binding.
    AuthOnStdio,
    /// `auth` on an HTTP tool (no `mcp_tool`).
    AuthOnHttpTool,
    /// A string that is not one of the accepted values.
    NotOneOf {
        /// The accepted values.
        allowed: &'static [&'static str],
    },
    /// A field that does not apply given the other fields.
    NotApplicable {
        /// Why, one clause ("applies to private_key_jwt only").
        reason: &'static str,
        /// What to do.
        fix: &'static str,
    },
    /// A `command.env` key that no environment can hold: empty, or with `=` or NUL in it.
    BadEnvKey,
    /// A string passed to the operating system (a program, an argument, an environment
    /// value, a directory) with a NUL character in it.
    NulCharacter,
    /// `scopes` is an empty list.
    NoScopes,
    /// A scope with whitespace or a control character in it.
    BadScope,
    /// A scope is listed twice.
    DuplicateScope {
        /// The index of its first listing.
        first: usize,
    },
    /// A gateway that names no way to know who calls (no issuers, no API keys).
    NoCallerIdentity,
    /// A listen address that is not `IP:PORT`.
    BadListenAddress,
    /// An origin that is not `scheme://host[:port]`.
    BadOrigin,
    /// A value listed twice where each must be unique.
    Repeated {
        /// The index of its first listing.
        first: usize,
    },
}

impl Problem {
    /// What to do about it, one clause.
    pub fn hint(&self) -> String {
        match self {
            Problem::NotUtf8 { .. } => "save the config as UTF-8".into(),
            Problem::EmptyDocument => {
                r#"write a JSON object with a "tools" array, e.g. {"tools": []}"#.into()
            }
            Problem::NotJson { .. } => "fix the JSON syntax at that place".into(),
            Problem::Missing { what } => format!("add {what}"),
            Problem::WrongType { expected, .. } => format!("write {expected} here"),
            Problem::EmptyString => "write a value or remove the field".into(),
            Problem::BadName => {
                "use 1 to 64 letters, digits, '_' or '-', e.g. docs_search".into()
            }
            Problem::DuplicateName { .. } => {
                "rename one of them, e.g. prefix it with the server's name (docs_search)".into()
            }
            Problem::UnknownField {
                suggestion: Some(field),
                ..
            } => format!("did you mean \"{field}\"?"),
            Problem::UnknownField {
                suggestion: None,
                allowed,
                ..
            } => format!("remove it; the fields are {}", allowed.join(", ")),
            Problem::NotObjectSchema => {
                r#"tool arguments are a JSON object: set "type": "object""#.into()
            }
            Problem::UnknownDialect { .. } => {
                "use a draft 4, 6, 7, 2019-09 or 2020-12 $schema URI, or remove $schema (2020-12 is the default)".into()
            }
            Problem::ExternalRef { .. } => {
                r##"move the referenced schema under "$defs" and point at "#/$defs/...": loading never fetches files or URLs"##.into()
            }
            Problem::InvalidSchema { .. } => "fix the schema".into(),
            Problem::BadUrl { .. } => {
                "write the server's full endpoint, e.g. https://mcp.example.com/mcp".into()
            }
            Problem::UrlScheme { .. } => "use an http:// or https:// URL".into(),
            Problem::BadTokenEnv => {
                "name the variable that holds the key (e.g. MCP_API_KEY), not the key itself"
                    .into()
            }
            Problem::NoTenants => r#"list the tenants that may use the tool, e.g. ["local"]"#.into(),
            Problem::DuplicateTenant { .. } => "remove the repeated tenant".into(),
            Problem::OutOfRange { example, .. } => format!("e.g. {example}"),
            Problem::InspectSessionOnMcp => "remove it from this MCP binding".into(),
            Problem::CommandWithoutMcpTool => {
                "add mcp_tool (the tool's name on the stdio server), or use url for an HTTP tool"
                    .into()
            }
            Problem::UrlAndCommand => {
                "keep url for an HTTP server or command for a stdio server".into()
            }
            Problem::NoEndpoint => {
                r#"add "url" (the server's endpoint) or, for an installed stdio MCP server, "command""#
                    .into()
            }
            Problem::TokenEnvOnStdio => {
                "remove it; pass secrets to a stdio server through command.env or the host's environment".into()
            }
            Problem::TooLarge { .. } => "write a smaller host config".into(),
            Problem::DuplicateKey { .. } => "keep one".into(),
            Problem::MoreDuplicateKeys { .. } => "keep one of each".into(),
            Problem::BadAuthUrl { .. } => {
                "write an absolute https URL, e.g. https://auth.example.com".into()
            }
            Problem::UrlUserInfo {
                without,
                endpoint: true,
            } => format!(
                "write {without} and name the credential's variable in token_env or auth (the client would otherwise send two Authorization headers)"
            ),
            Problem::UrlUserInfo {
                without,
                endpoint: false,
            } => format!(
                "write {without}; secrets come from environment variables named in the config, never the config itself"
            ),
            Problem::NotHttps { .. } => "use an https:// URL".into(),
            Problem::UrlPart { part } => format!("remove the {part}"),
            Problem::RootPath => {
                "publish the metadata document at a path, e.g. https://app.example.com/oauth/client.json"
                    .into()
            }
            Problem::BadEnvName { holds, example } => {
                format!("name the variable that holds the {holds} (e.g. {example}), not the {holds} itself")
            }
            Problem::InlineSecret {
                env_key: Some("token_env"),
            } => {
                r#"remove it; a static token is named by the binding's "token_env" (instead of "auth"), and tokens for "auth" are obtained at call time"#
                    .into()
            }
            Problem::InlineSecret {
                env_key: Some(env_key),
            } => format!(
                r#"name an environment variable that holds it with "{env_key}"; secrets come from the environment, never the config itself"#
            ),
            Problem::InlineSecret { env_key: None } => {
                "remove it; secrets come from environment variables named in the config, never the config itself".into()
            }
            Problem::AuthAndTokenEnv => {
                "keep token_env for a static API key or auth for OAuth".into()
            }
            Problem::AuthOnStdio => {
                "remove it; pass secrets to a stdio server through command.env".into()
            }
            Problem::AuthOnHttpTool => {
                "remove it, or add mcp_tool if the url is an MCP server".into()
            }
            Problem::NotOneOf { allowed } => match allowed.first() {
                Some(first) => format!("write one of them, e.g. \"{first}\""),
                None => "remove it".into(),
            },
            Problem::NotApplicable { fix, .. } => (*fix).into(),
            Problem::BadEnvKey => "name the variable, e.g. \"LOG_LEVEL\"".into(),
            Problem::NulCharacter => "remove the NUL character (\\u0000)".into(),
            Problem::NoScopes => {
                "list the scopes to request, or remove scopes to request the ones the server asks for".into()
            }
            Problem::BadScope => {
                r#"list each scope as its own string, e.g. ["files:read", "files:write"]"#.into()
            }
            Problem::DuplicateScope { .. } => "remove the repeated scope".into(),
            Problem::NoCallerIdentity => {
                r#"add "issuers" (the authorization servers whose access tokens name the caller's tenant) or "api_keys" (a file of API keys: mcp-tools serve --new-key makes one)"#.into()
            }
            Problem::BadListenAddress => {
                "write an IP address and a port, e.g. 127.0.0.1:8443 or [::1]:8443".into()
            }
            Problem::BadOrigin => {
                "write the scheme, host and port as a browser sends them, e.g. https://app.example.com".into()
            }
            Problem::Repeated { .. } => "remove the repeated value".into(),
        }
    }
}

/// Values quoted in a message come from the config or from a server's schema: control
/// characters, bidirectional controls and zero-width characters in them are written as
/// `\u{..}` escapes, so a message stays one line and cannot drive a terminal.
impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.describe(&mut Escaped(f))
    }
}

/// A writer that escapes what the one rule ([`crate::text::escape`]) escapes.
struct Escaped<'a, 'b>(&'a mut fmt::Formatter<'b>);

impl fmt::Write for Escaped<'_, '_> {
    fn write_str(&mut self, text: &str) -> fmt::Result {
        for c in text.chars() {
            if crate::text::is_hidden(c) {
                write!(self.0, "\\u{{{:x}}}", u32::from(c))?;
            } else {
                fmt::Write::write_char(self.0, c)?;
            }
        }
        Ok(())
    }
}

impl Problem {
    fn describe(&self, f: &mut impl fmt::Write) -> fmt::Result {
        match self {
            Problem::NotUtf8 { offset } => {
                write!(f, "is not UTF-8 (invalid byte at offset {offset})")
            }
            Problem::EmptyDocument => f.write_str("is empty"),
            Problem::NotJson {
                reason,
                line,
                column,
            } => write!(
                f,
                "is not valid JSON: {reason} at line {line}, column {column}"
            ),
            Problem::Missing { .. } => f.write_str("is required"),
            Problem::WrongType { expected, found } => {
                write!(f, "must be {expected}, found {found}")
            }
            Problem::EmptyString => f.write_str("must not be empty"),
            Problem::BadName => f.write_str("must match ^[A-Za-z0-9_-]{1,64}$"),
            Problem::DuplicateName { first } => {
                write!(f, "repeats the name of tools[{first}]")
            }
            Problem::UnknownField { object, .. } => write!(f, "is not a field of {object}"),
            Problem::NotObjectSchema => f.write_str(r#"must have "type": "object""#),
            Problem::UnknownDialect { uri } => {
                write!(f, "$schema names an unknown dialect \"{uri}\"")
            }
            Problem::ExternalRef { reference } => {
                write!(f, "$ref \"{reference}\" points outside this schema")
            }
            Problem::InvalidSchema { reason } => {
                write!(f, "is not a valid JSON Schema: {reason}")
            }
            Problem::BadUrl { reason } | Problem::BadAuthUrl { reason } => {
                write!(f, "is not an absolute URL ({reason})")
            }
            Problem::UrlScheme { scheme } => {
                write!(f, "must be an http or https URL, not {scheme}")
            }
            Problem::NoTenants => f.write_str("must list at least one tenant"),
            Problem::DuplicateTenant { first } => {
                write!(f, "repeats tenants[{first}]")
            }
            Problem::OutOfRange { min, max, .. } => {
                write!(f, "must be an integer from {min} to {max}")
            }
            Problem::InspectSessionOnMcp => f.write_str("applies to HTTP and SSE tools only"),
            Problem::CommandWithoutMcpTool => f.write_str("applies to MCP bindings only"),
            Problem::UrlAndCommand => f.write_str("has both url and command"),
            Problem::NoEndpoint => f.write_str("has neither url nor command"),
            Problem::TokenEnvOnStdio => f.write_str("applies to HTTP servers only"),
            Problem::TooLarge { max } => write!(
                f,
                "is larger than {max} bytes ({} MiB)",
                max / (1024 * 1024)
            ),
            Problem::DuplicateKey { count: 2 } => f.write_str("appears twice"),
            Problem::DuplicateKey { count } => write!(f, "appears {count} times"),
            Problem::MoreDuplicateKeys { count } => write!(
                f,
                "repeats {count} more key{} (not listed)",
                if *count == 1 { "" } else { "s" }
            ),
            Problem::UrlUserInfo { .. } => {
                f.write_str("has a user name or password in it (before the host)")
            }
            Problem::NotHttps {
                loopback_allowed: true,
            } => f.write_str(
                "must be an https URL (plain http is accepted for 127.0.0.1, ::1 and localhost only)",
            ),
            Problem::NotHttps {
                loopback_allowed: false,
            } => f.write_str("must be an https URL"),
            Problem::UrlPart { part } => write!(f, "must not have a {part}"),
            Problem::RootPath => f.write_str("must have a path after the host"),
            Problem::BadEnvName { .. } | Problem::BadTokenEnv => {
                f.write_str("must be an environment variable name (^[A-Za-z_][A-Za-z0-9_]*$)")
            }
            Problem::InlineSecret { .. } => f.write_str("is a secret written into the config"),
            Problem::AuthAndTokenEnv => f.write_str("has both token_env and auth"),
            Problem::AuthOnStdio => f.write_str("applies to HTTP MCP servers only"),
            Problem::AuthOnHttpTool => f.write_str("applies to MCP bindings only"),
            Problem::NotOneOf { allowed } => {
                f.write_str("must be one of ")?;
                for (i, value) in allowed.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "\"{value}\"")?;
                }
                Ok(())
            }
            Problem::NotApplicable { reason, .. } => f.write_str(reason),
            Problem::BadEnvKey => {
                f.write_str("is not an environment variable name (it is empty, or holds = or NUL)")
            }
            Problem::NulCharacter => {
                f.write_str("holds a NUL character, which no program can be given")
            }
            Problem::NoScopes => f.write_str("must list at least one scope"),
            Problem::BadScope => {
                f.write_str("must be one scope, without spaces or control characters")
            }
            Problem::DuplicateScope { first } => write!(f, "repeats scopes[{first}]"),
            Problem::NoCallerIdentity => f.write_str("names no way to know who calls"),
            Problem::BadListenAddress => f.write_str("is not an address to listen on"),
            Problem::BadOrigin => f.write_str("is not an origin"),
            Problem::Repeated { first } => write!(f, "repeats [{first}]"),
        }
    }
}

/// Something in a config that loads but deserves a look.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Warning {
    /// The JSON path of the value, e.g. `tools[0].token_env`.
    pub path: String,
    /// The binding's name.
    pub tool: Option<String>,
    /// What deserves a look.
    pub kind: WarningKind,
}

impl Warning {
    pub(crate) fn new(path: &Path, tool: Option<&str>, kind: WarningKind) -> Self {
        Self {
            path: path.to_string(),
            tool: tool.map(str::to_owned),
            kind,
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_location(f, &self.path, self.tool.as_deref())?;
        f.write_str(": ")?;
        match &self.kind {
            WarningKind::PlainHttpToken { host } => write!(
                f,
                "sends its bearer token over plain http to {host}, a host that is not loopback; use https"
            ),
            WarningKind::TokenEnvUnset { variable } => write!(
                f,
                "names {variable}, which is not set now; calls fail with missing_token until it is"
            ),
            WarningKind::AuthEnvUnset { variable } => write!(
                f,
                "names {variable}, which is not set now; calls fail until it is"
            ),
            WarningKind::EnvFromHostUnset { variable } => write!(
                f,
                "names {variable}, which is not set now; the server starts without it until it is"
            ),
            WarningKind::IssuerNotPinned => f.write_str(
                "without issuer, this client's credentials go to whichever authorization server the MCP server names; set issuer to pin it",
            ),
        }
    }
}

/// The kinds of [`Warning`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum WarningKind {
    /// A token would travel over plain http to a host that is not loopback.
    PlainHttpToken {
        /// The URL's host.
        host: String,
    },
    /// `token_env` names a variable that is not set at load (it is read again at call time).
    TokenEnvUnset {
        /// The variable's name.
        variable: String,
    },
    /// A `*_env` field of `auth` names a variable that is not set at load.
    AuthEnvUnset {
        /// The variable's name.
        variable: String,
    },
    /// A `command.env` reference (`{"from_env": ...}`) names a host variable that is not
    /// set at load (it is read again each time the server starts).
    EnvFromHostUnset {
        /// The host variable's name.
        variable: String,
    },
    /// `auth` without `issuer`: the client trusts whichever authorization server the MCP
    /// server names.
    IssuerNotPinned,
}
