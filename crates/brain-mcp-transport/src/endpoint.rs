//! Where an MCP server is.

use std::{fmt, path::PathBuf};

use crate::{error::one_line, secret::Secret};

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
        })
    }

    /// A stdio command.
    pub fn stdio(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Endpoint::Stdio(StdioEndpoint {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
            cwd: None,
        })
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

    /// Server text for a message: the endpoint's secrets hidden first (the bearer token;
    /// the URL's password and query values, a stdio server's arguments and environment
    /// values, those of 8 characters or more), then shortened to one line of at most `max`
    /// characters, so no part of a secret survives the cut.
    pub(crate) fn quote(&self, text: &str, max: usize) -> String {
        let mut secrets: Vec<&str> = match self {
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
                password
                    .into_iter()
                    .chain(values)
                    .filter(|value| value.len() >= MIN_SECRET_LEN)
                    .chain(http.bearer.iter().map(Secret::expose))
                    .collect()
            }
            Endpoint::Stdio(stdio) => stdio
                .args
                .iter()
                .chain(stdio.env.iter().map(|(_, value)| value))
                .map(String::as_str)
                .filter(|value| value.len() >= MIN_SECRET_LEN)
                .collect(),
        };
        // Longest first: a secret inside another must not leave the rest of it behind.
        secrets.sort_by_key(|secret| std::cmp::Reverse(secret.len()));
        let mut text = text.to_owned();
        for secret in secrets.into_iter().filter(|secret| !secret.is_empty()) {
            text = text.replace(secret, "<redacted>");
        }
        one_line(&text, max)
    }
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
fn redacted_url(url: &str) -> String {
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
    /// Sent as `Authorization: Bearer` on every request to the server (POST, GET, DELETE).
    pub bearer: Option<Secret>,
}

/// A stdio MCP server.
#[derive(Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct StdioEndpoint {
    /// The program (a path, or a name looked up in `PATH`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables added to the inherited environment.
    pub env: Vec<(String, String)>,
    /// The working directory, if not the host's.
    pub cwd: Option<PathBuf>,
}

impl fmt::Debug for HttpEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpEndpoint")
            .field("url", &redacted_url(&self.url))
            .field("bearer", &self.bearer)
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
            .field("cwd", &self.cwd)
            .finish()
    }
}

impl StdioEndpoint {
    /// A command with arguments, the inherited environment and working directory.
    pub fn new(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            env: Vec::new(),
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
