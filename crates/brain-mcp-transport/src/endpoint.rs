//! Where an MCP server is.

use std::path::PathBuf;

use crate::secret::Secret;

/// How to reach an MCP server.
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
            Endpoint::Http(http) => match http.url.split_once("://") {
                Some((scheme, rest)) => {
                    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
                    let host = host.rsplit_once('@').map_or(host, |(_, host)| host);
                    format!("{scheme}://{host}")
                }
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
}

/// A Streamable HTTP endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct HttpEndpoint {
    /// The MCP endpoint URL; requests go to exactly this URL.
    pub url: String,
    /// Sent as `Authorization: Bearer` on every request to the server (POST, GET, DELETE).
    pub bearer: Option<Secret>,
}

/// A stdio MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
}
