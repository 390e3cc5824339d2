//! Where an MCP server is.

use std::{fmt, path::PathBuf};

use crate::{
    dpop::Dpop,
    secret::{Redactor, Secret, one_line},
};

/// Values shorter than this (environment values, arguments, query values) are not taken
/// for secrets: hiding a `1` or a `true` would garble every message, and a credential is
/// longer. The bearer token is always hidden.
const MIN_SECRET_LEN: usize = 8;

/// How to reach an MCP server. Its `Debug` shows no secret: not the bearer token, the
/// URL's user info or query, or the values of a stdio server's environment.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Endpoint {
    /// A Streamable HTTP endpoint.
    Http(HttpEndpoint),
    /// A command speaking MCP on stdin/stdout, started per call.
    Stdio(StdioEndpoint),
}

impl Endpoint {
    /// An HTTP endpoint with an optional bearer token.
    pub fn http(url: impl Into<String>, bearer: Option<Secret>) -> Self {
        Endpoint::Http(HttpEndpoint {
            url: url.into(),
            bearer,
            hidden: Vec::new(),
            dpop: None,
        })
    }

    /// A stdio command (as [`StdioEndpoint::new`] makes it).
    pub fn stdio(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Endpoint::Stdio(StdioEndpoint::new(program, args))
    }

    /// A short description for messages: the URL's origin, or the program's name. Never
    /// the token, a query string or the arguments.
    pub fn describe(&self) -> String {
        match self {
            Endpoint::Http(http) => match UrlParts::of(&http.url) {
                Some(url) => format!("{}://{}", url.scheme, url.host),
                None => "the server".to_owned(),
            },
            Endpoint::Stdio(stdio) => {
                let name = std::path::Path::new(&stdio.program)
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
                    .unwrap_or_else(|| stdio.program.clone());
                format!("command {name}")
            }
        }
    }

    /// The endpoint's secrets: the bearer token; the URL's password and query values and
    /// a stdio server's environment values (the binding passes secrets there), those of
    /// 8 characters or more; with `arguments`, the values a stdio server's arguments mark
    /// as secret too (see [`secret_arguments`]; for error messages only). Other
    /// arguments are paths and flags (`--db-path`), which a person must be able to read
    /// in a message, and results may rightly contain.
    fn secrets(&self, arguments: bool) -> Vec<&str> {
        let long = |value: &&str| value.len() >= MIN_SECRET_LEN;
        match self {
            Endpoint::Http(http) => {
                let url = UrlParts::of(&http.url);
                let password = url
                    .as_ref()
                    .and_then(|url| url.userinfo?.split_once(':'))
                    .map(|(_, password)| password);
                let query = url.as_ref().map_or("", |url| url.query);
                let values = query
                    .split('&')
                    .filter_map(|pair| pair.split_once('=').map(|(_, value)| value));
                // Every secret, the bearer included, from 8 characters on: a shorter one
                // would match the protocol's own text ("text", "result") and corrupt
                // every answer, and is no credential worth the name.
                password
                    .into_iter()
                    .chain(values)
                    .chain(http.bearer.iter().map(Secret::expose))
                    .chain(http.hidden.iter().map(Secret::expose))
                    // An echoed DPoP proof: its header part, the same in every proof of
                    // the key, never comes back whole.
                    .chain(http.dpop.iter().map(Dpop::proof_prefix))
                    .filter(long)
                    .collect()
            }
            Endpoint::Stdio(stdio) => secret_arguments(&stdio.args)
                .filter(|_| arguments)
                .chain(stdio.env.iter().map(|(_, value)| value.as_str()))
                .filter(long)
                .collect(),
        }
    }

    /// The redactor for what this server sends: its secrets (see `secrets`), arguments
    /// excepted.
    pub(crate) fn redactor(&self) -> Redactor {
        Redactor::new(self.secrets(false))
    }

    /// Server text for a message: the endpoint's secrets hidden first (arguments
    /// included), then shortened to one line of at most `max` characters, so no part of
    /// a secret survives the cut.
    pub(crate) fn quote(&self, text: &str, max: usize) -> String {
        let hidden = Redactor::new(self.secrets(true));
        one_line(&hidden.text(text), max)
    }
}

/// The values a command line marks as secret: the value of a flag whose name says it
/// holds a credential (`--token VALUE`, `--api-key=VALUE`, `-password VALUE`, ...), and
/// a bearer token written out (`Authorization: Bearer VALUE`).
fn secret_arguments(args: &[String]) -> impl Iterator<Item = &str> {
    const NAMES: [&str; 8] = [
        "token",
        "key",
        "secret",
        "password",
        "passwd",
        "credential",
        "auth",
        "bearer",
    ];
    let names_a_secret = |flag: &str| {
        let name = flag.trim_start_matches('-').to_ascii_lowercase();
        flag.starts_with('-') && NAMES.iter().any(|secret| name.contains(secret))
    };
    args.iter().enumerate().filter_map(move |(i, arg)| {
        if let Some((flag, value)) = arg.split_once('=')
            && names_a_secret(flag)
        {
            return Some(value);
        }
        if let Some(at) = arg.to_ascii_lowercase().find("bearer ") {
            return Some(arg[at + "bearer ".len()..].trim());
        }
        let previous = i.checked_sub(1).map(|p| args[p].as_str());
        previous
            .filter(|flag| !flag.contains('=') && names_a_secret(flag))
            .map(|_| arg.as_str())
    })
}

/// The parts of an absolute URL that messages and `Debug` care about.
struct UrlParts<'a> {
    scheme: &'a str,
    userinfo: Option<&'a str>,
    /// Host and port.
    host: &'a str,
    path: &'a str,
    /// After `?`, up to `#`.
    query: &'a str,
    /// Whether a query or a fragment follows the path.
    has_tail: bool,
}

impl<'a> UrlParts<'a> {
    fn of(url: &'a str) -> Option<Self> {
        let (scheme, rest) = url.split_once("://")?;
        let (authority, rest) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
        let (userinfo, host) = match authority.rsplit_once('@') {
            Some((userinfo, host)) => (Some(userinfo), host),
            None => (None, authority),
        };
        let (path, tail) = rest.split_at(rest.find(['?', '#']).unwrap_or(rest.len()));
        let query = tail
            .strip_prefix('?')
            .map_or("", |query| query.split('#').next().unwrap_or_default());
        Some(Self {
            scheme,
            userinfo,
            host,
            path,
            query,
            has_tail: !tail.is_empty(),
        })
    }
}

/// A URL for `Debug`: user info, query and fragment hidden.
pub(crate) fn redacted_url(url: &str) -> String {
    match UrlParts::of(url) {
        Some(parts) => format!(
            "{}://{}{}{}{}",
            parts.scheme,
            if parts.userinfo.is_some() {
                "<redacted>@"
            } else {
                ""
            },
            parts.host,
            parts.path,
            if parts.has_tail { "?<redacted>" } else { "" },
        ),
        None => "<not an absolute URL>".to_owned(),
    }
}

/// A Streamable HTTP endpoint.
#[derive(Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct HttpEndpoint {
    /// The MCP endpoint URL; requests go to exactly this URL.
    pub url: String,
    /// Sent as `Authorization: Bearer` on every request to the server (POST, GET, DELETE)
    /// (as `Authorization: DPoP`, with a proof, for a DPoP-bound OAuth token).
    pub bearer: Option<Secret>,
    /// Secrets that are never sent to the server but must never come back from it
    /// either (an OAuth grant's refresh token and client secret): hidden like the bearer.
    pub(crate) hidden: Vec<Secret>,
    /// The bearer is DPoP-bound to this key: it is sent with the `DPoP` scheme and a fresh
    /// proof on every request.
    pub(crate) dpop: Option<Dpop>,
}

/// A stdio MCP server.
#[derive(Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct StdioEndpoint {
    /// The program (a path, or a name looked up in `PATH`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for the child, over the few it inherits (or over the whole
    /// environment of the host, with `inherit_env`).
    pub env: Vec<(String, String)>,
    /// Whether the child inherits the host's whole environment. Off by default: it then
    /// inherits only `HOME`, `LOGNAME`, `PATH`, `SHELL`, `TERM` and `USER` (what the
    /// official SDKs pass), so a third-party server cannot read other servers' keys.
    pub inherit_env: bool,
    /// The working directory, if not the host's.
    pub cwd: Option<PathBuf>,
}

impl HttpEndpoint {
    /// Checks what comes from our side before anything is sent, so that a bad URL or
    /// token is named as such (and never mistaken for a failure on the wire): the URL is
    /// an absolute `http`/`https` URL with a host and no user info (user info would be
    /// sent as a second `Authorization` header), and the bearer token is a valid header
    /// value.
    pub(crate) fn check(&self) -> Result<(), Unusable> {
        let url = url::Url::parse(&self.url).ok().filter(|url| {
            matches!(url.scheme(), "http" | "https")
                && url.host_str().is_some_and(|h| !h.is_empty())
        });
        let Some(url) = url else {
            return Err(Unusable::Url);
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Unusable::UserInfo);
        }
        if self
            .bearer
            .as_ref()
            .is_some_and(|bearer| !bearer.is_header_safe())
        {
            return Err(Unusable::Token);
        }
        Ok(())
    }
}

/// What makes an HTTP endpoint unusable before anything is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unusable {
    /// Not an absolute `http`/`https` URL with a host.
    Url,
    /// The URL holds user info.
    UserInfo,
    /// The bearer token is not a valid header value.
    Token,
}

impl fmt::Debug for HttpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpEndpoint")
            .field("url", &redacted_url(&self.url))
            .field("bearer", &self.bearer)
            .field("dpop", &self.dpop.is_some())
            .finish()
    }
}

impl fmt::Debug for StdioEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env: Vec<String> = self
            .env
            .iter()
            .map(|(key, _)| format!("{key}=<redacted>"))
            .collect();
        f.debug_struct("StdioEndpoint")
            .field("program", &self.program)
            .field("args", &format_args!("<{} redacted>", self.args.len()))
            .field("env", &env)
            .field("inherit_env", &self.inherit_env)
            .field("cwd", &self.cwd)
            .finish()
    }
}

impl StdioEndpoint {
    /// The variables a stdio server inherits from the host unless it inherits the whole
    /// environment (`inherit_env`): those the official TypeScript and python SDKs pass.
    /// The rest of the host's environment, other bindings' keys included, stays out
    /// unless the binding's `env` names it.
    pub const INHERITED_ENV: &'static [&'static str] =
        &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

    /// A command with arguments, the minimal inherited environment and the host's
    /// working directory.
    pub fn new(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            inherit_env: false,
            cwd: None,
        }
    }

    /// Sets the working directory.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Adds an environment variable for the child.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Lets the child inherit the host's whole environment.
    pub fn inherit_env(mut self, inherit: bool) -> Self {
        self.inherit_env = inherit;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_hides_credentials_paths_and_arguments() {
        let endpoint = Endpoint::http("https://user:pw@mcp.example.com:8443/mcp?key=abc", None);
        assert_eq!(endpoint.describe(), "https://mcp.example.com:8443");
        let endpoint = Endpoint::stdio("/usr/bin/server", ["--token", "abc"]);
        assert_eq!(endpoint.describe(), "command server");
    }

    #[test]
    fn debug_hides_secrets() {
        let endpoint = Endpoint::http(
            "https://user:pw@mcp.example.com/mcp?key=abc",
            Some(Secret::new("tok-123")),
        );
        let debug = format!("{endpoint:?}");
        assert!(debug.contains("https://<redacted>@mcp.example.com/mcp?<redacted>"));
        for secret in ["pw", "abc", "tok-123"] {
            assert!(!debug.contains(secret), "{debug}");
        }
        let endpoint = Endpoint::http("http://127.0.0.1:9/mcp#frag-secret", None);
        let debug = format!("{endpoint:?}");
        assert!(
            debug.contains("http://127.0.0.1:9/mcp?<redacted>"),
            "{debug}"
        );
        assert!(!debug.contains("frag-secret"), "{debug}");
        let endpoint = Endpoint::Stdio(
            StdioEndpoint::new("server", ["--token", "arg-secret-99"])
                .env("API_KEY", "sk-live-0123456789"),
        );
        let debug = format!("{endpoint:?}");
        assert!(debug.contains("API_KEY=<redacted>"), "{debug}");
        assert!(debug.contains("<2 redacted>"), "{debug}");
        for secret in ["sk-live", "arg-secret"] {
            assert!(!debug.contains(secret), "{debug}");
        }
    }

    #[test]
    fn quote_hides_secrets_before_it_shortens() {
        let token = "tok-0123456789abcdef";
        let endpoint = Endpoint::http("http://127.0.0.1/mcp", Some(Secret::new(token)));
        // The cut falls inside the token: no prefix of it may remain.
        let text = format!("bad token {token} was sent");
        let quoted = endpoint.quote(&text, 16);
        assert!(!quoted.contains("tok-0"), "{quoted}");
        assert_eq!(endpoint.quote(&text, 200), "bad token <redacted> was sent");
        let endpoint = Endpoint::Stdio(
            StdioEndpoint::new("server", ["--stdio"])
                .env("API_KEY", "sk-live-0123456789")
                .env("DEBUG", "1"),
        );
        assert_eq!(
            endpoint.quote("key sk-live-0123456789 rejected (1 try)", 200),
            "key <redacted> rejected (1 try)"
        );
        // Arguments are a person's to read (paths, flags), except those that hold a
        // credential.
        let endpoint = Endpoint::Stdio(StdioEndpoint::new(
            "server",
            [
                "--db-path",
                "/var/lib/notes.sqlite",
                "--api-key",
                "sk-arg-0123456789",
                "--client-secret=cs-arg-0123456789",
                "--header",
                "Authorization: Bearer bt-arg-0123456789",
                "--read-only",
            ],
        ));
        assert_eq!(
            endpoint.quote(
                "cannot open /var/lib/notes.sqlite with sk-arg-0123456789, \
                 cs-arg-0123456789 or bt-arg-0123456789 (--read-only)",
                300
            ),
            "cannot open /var/lib/notes.sqlite with <redacted>, <redacted> or <redacted> \
             (--read-only)"
        );
        // One secret inside another: the longer goes first, nothing of it is left.
        let endpoint = Endpoint::Stdio(
            StdioEndpoint::new("server", ["--stdio"])
                .env("SHORT", "abcdefgh")
                .env("LONG", "abcdefgh-0123"),
        );
        assert_eq!(endpoint.quote("got abcdefgh-0123", 200), "got <redacted>");
        // The URL's password and query values.
        let endpoint = Endpoint::http(
            "https://user:hunter2-pass@mcp.example.com/mcp?api_key=query-secret-1&v=2",
            None,
        );
        assert_eq!(
            endpoint.quote("denied hunter2-pass / query-secret-1 (v=2)", 200),
            "denied <redacted> / <redacted> (v=2)"
        );
    }
}
