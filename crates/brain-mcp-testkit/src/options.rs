//! What a test server speaks and how: [`Era`] and [`ServerOptions`].

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use rmcp::model::ProtocolVersion;

/// Which MCP protocol lifecycle(s) a test server speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Era {
    /// The `initialize` lifecycle only, protocol versions up to `2025-11-25`.
    ///
    /// `server/discover` is answered as a server from before 2026 answers an unknown method:
    /// a JSON-RPC error `-32601` (HTTP 200), so that a client in automatic mode falls back to `initialize`.
    Legacy,
    /// `2026-07-28` only: stateless, `server/discover`, every request carries its `_meta` and headers.
    /// `initialize` is rejected with `-32022` (unsupported protocol version).
    Modern,
    /// Both lifecycles on one endpoint, as rmcp serves them by default. The default.
    #[default]
    Both,
}

const MODERN_VERSIONS: &[ProtocolVersion] = &[ProtocolVersion::V_2026_07_28];

impl Era {
    /// The protocol versions a server of this era supports.
    pub(crate) fn supported_versions(self) -> Cow<'static, [ProtocolVersion]> {
        match self {
            Era::Legacy => {
                Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25))
            }
            Era::Modern => Cow::Borrowed(MODERN_VERSIONS),
            Era::Both => Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
        }
    }

    /// The name used on command lines: `legacy`, `modern` or `both`.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
            Era::Both => "both",
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Era {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "legacy" => Ok(Era::Legacy),
            "modern" => Ok(Era::Modern),
            "both" => Ok(Era::Both),
            other => Err(format!(
                "unknown era {other:?}: expected legacy, modern or both"
            )),
        }
    }
}

/// How to run a [`TestServer`](crate::TestServer).
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// The protocol lifecycle(s) served. Default [`Era::Both`].
    pub era: Era,
    /// Set `TCP_NODELAY` on every accepted connection. Default `true`.
    /// Turn it off to reproduce servers whose small writes wait for a delayed ACK.
    pub tcp_nodelay: bool,
    /// Answer stateless (2026) requests with `application/json` when the first message is the result.
    /// Default `false`: SSE responses. Legacy session streams are always SSE.
    pub json_response: bool,
    /// `tools/list` page size; `None` (the default) lists every tool in one page.
    pub page_size: Option<usize>,
    /// Extra generated tools `gen_0000`, `gen_0001`, ... with small distinct input schemas
    /// (for discovery tests): a required argument `field_NNNN` of its own and, as real
    /// servers' tools often have, an optional `limit` (an integer with a `minimum`). Each
    /// echoes its arguments as JSON text. Default 0.
    pub extra_tools: usize,
    /// Protect `/mcp` with bearer tokens, the server acting as its own OAuth
    /// authorization server (client credentials). Default `None`: bearers are recorded,
    /// never checked.
    pub bearer: Option<BearerOptions>,
    /// Serve HTTPS, with a certificate from a CA of the server's own
    /// ([`TestServer::ca_pem`](crate::TestServer::ca_pem)) for `127.0.0.1` and
    /// `localhost`, offering HTTP/2 by ALPN or not. Default `None`: plain HTTP/1.1.
    pub tls: Option<crate::Tls>,
    /// The loopback port to listen on; 0 (the default) takes a free one, which tests
    /// should: a fixed port collides with whatever else runs. A taken port fails
    /// [`TestServer::start`](crate::TestServer::start).
    pub port: u16,
    /// In the [`Era::Legacy`] era: hold `server/discover` open and never answer it (as
    /// some servers treat a method they do not know), instead of refusing it with
    /// `-32601`; `initialize` is still answered at once. Default `false`.
    pub hold_discover: bool,
    /// Also list and serve the tools of the official conformance suite's server
    /// scenarios (`test_simple_text`, `test_tool_with_progress`, `json_schema_2020_12_tool`,
    /// ...), as the suite's fixture server answers them, after the scripted ones. Default
    /// `false`.
    pub conformance_tools: bool,
}

/// How a protected test server checks bearers and issues tokens.
///
/// `/mcp` answers 401 with a `WWW-Authenticate` challenge naming its protected resource
/// metadata (RFC 9728) unless the request carries the static token or one the server
/// issued. The server is its own authorization server (RFC 8414 metadata at the root's
/// well-known URI): its `/token` endpoint grants `client_credentials` to one client,
/// authenticated by `client_secret_post`.
#[derive(Clone)]
pub struct BearerOptions {
    /// A token always accepted, as a static API key is.
    pub static_token: Option<String>,
    /// The one client the token endpoint knows.
    pub client_id: String,
    /// Its secret.
    pub client_secret: String,
    /// `expires_in` of issued tokens, in seconds.
    pub expires_in: u64,
}

impl fmt::Debug for BearerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerOptions")
            .field(
                "static_token",
                &self.static_token.as_ref().map(|_| "<hidden>"),
            )
            .field("client_id", &self.client_id)
            .field("client_secret", &"<hidden>")
            .field("expires_in", &self.expires_in)
            .finish()
    }
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            era: Era::Both,
            tcp_nodelay: true,
            json_response: false,
            page_size: None,
            extra_tools: 0,
            bearer: None,
            tls: None,
            port: 0,
            hold_discover: false,
            conformance_tools: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eras_parse_and_print() {
        for era in [Era::Legacy, Era::Modern, Era::Both] {
            assert_eq!(era.as_str().parse::<Era>(), Ok(era));
        }
        assert!("2026".parse::<Era>().is_err());
    }

    #[test]
    fn legacy_era_stops_before_2026() {
        let versions = Era::Legacy.supported_versions();
        assert!(versions.contains(&ProtocolVersion::V_2025_11_25));
        assert!(!versions.contains(&ProtocolVersion::V_2026_07_28));
        assert_eq!(&*Era::Modern.supported_versions(), MODERN_VERSIONS);
        assert!(
            Era::Both
                .supported_versions()
                .contains(&ProtocolVersion::V_2026_07_28)
        );
    }
}
