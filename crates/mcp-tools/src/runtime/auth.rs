//! OAuth for a person at a terminal: which server and auth object a command is about, the
//! tenant's grant, a stored grant in one line, and the authorizer that sends the person to
//! the authorization server and receives the redirect on a loopback listener.

use std::{
    io::IsTerminal,
    time::{Duration, SystemTime},
};

use brain_tools::{
    Authorization, AuthorizationPrompt, Authorizer, Grant, HostAuthError, StoredGrantSummary,
};
use brain_tools_config::{HostConfig, McpAuth, McpServer, Target};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};

use crate::{
    cli::GrantTarget,
    runtime::{
        config::{self, Warn},
        exit::Exit,
        output::escape,
    },
};

/// A protected server as a command sees it.
#[derive(Debug, Clone)]
pub(crate) struct Protected {
    /// The server's MCP endpoint.
    pub(crate) url: String,
    /// Its auth object.
    pub(crate) auth: McpAuth,
    /// The tenants of its binding (`None`: not from a config).
    pub(crate) tenants: Option<Vec<String>>,
}

/// An auth object given on the command line (`--auth`), checked as the config loader
/// checks one: every problem with `--auth` as its path.
pub(crate) fn parse_auth(text: &str) -> Result<McpAuth, Exit> {
    let value: Value = serde_json::from_str(text)
        .map_err(|error| Exit::Usage(format!("--auth is not JSON: {error}")))?;
    let document = json!({"tools": [{
        "name": "auth",
        "input_schema": {"type": "object"},
        "url": "https://mcp.example.com/mcp",
        "mcp_tool": "auth",
        "tenants": ["t"],
        "auth": value,
    }]});
    let prefix = "tools[0] (auth).auth";
    match HostConfig::from_json_value_with_env(&document, |name| std::env::var_os(name).is_some()) {
        Ok(loaded) => {
            for warning in &loaded.warnings {
                eprintln!("warning: {}", warning.to_string().replace(prefix, "--auth"));
            }
            let binding = loaded.config.tools.into_iter().next();
            match binding.map(|binding| binding.target) {
                Some(Target::Mcp(mcp)) => match mcp.server {
                    McpServer::Http {
                        auth: Some(auth), ..
                    } => Ok(auth),
                    _ => Err(Exit::Usage("--auth is not an auth object".into())),
                },
                _ => Err(Exit::Usage("--auth is not an auth object".into())),
            }
        }
        Err(errors) => {
            let lines: Vec<String> = errors
                .errors()
                .iter()
                .map(|error| error.to_string().replace(prefix, "--auth"))
                .collect();
            Err(Exit::Usage(lines.join("; ")))
        }
    }
}

/// The protected server a login or logout is about.
pub(crate) fn target(args: &GrantTarget) -> Result<Protected, Exit> {
    match (&args.config, &args.tool, &args.url, &args.auth) {
        (Some(config), Some(tool), None, None) => {
            let loaded = config::load(config, Warn::Binding(tool))?;
            let binding = config::find_binding(&loaded.config.tools, tool, config)?;
            let Some(McpServer::Http { url, auth, .. }) = binding.mcp().map(|mcp| &mcp.server)
            else {
                return Err(Exit::Failed(format!(
                    "{tool} is not bound to an MCP server over HTTP: only those take an auth object"
                )));
            };
            let Some(auth) = auth else {
                return Err(Exit::Failed(format!(
                    "{tool} has no auth object: its server takes no OAuth grant (a token_env key is read at call time); see docs/auth.md"
                )));
            };
            Ok(Protected {
                url: url.clone(),
                auth: auth.clone(),
                tenants: Some(binding.tenants.clone()),
            })
        }
        (None, None, Some(url), Some(auth)) => Ok(Protected {
            url: url.clone(),
            auth: parse_auth(auth)?,
            tenants: None,
        }),
        _ => Err(Exit::Usage(
            "give --config FILE --tool NAME, or --url URL --auth JSON".into(),
        )),
    }
}

/// The tenant's grant for an auth object, its secrets read from the environment now.
pub(crate) fn authorization(tenant: &str, auth: &McpAuth) -> Result<Authorization, Exit> {
    let grant = brain_tools::grant_of(auth, |variable| std::env::var(variable).ok())
        .map_err(|error| Exit::Failed(format!("the auth object cannot be used: {error}")))?;
    Ok(Authorization::new(tenant, grant))
}

/// The tenant's grant for looking in the store only (`logout`, the grant check): no
/// secret is needed there, and none is sent, so an unset secret variable does not
/// matter.
pub(crate) fn stored_authorization(tenant: &str, auth: &McpAuth) -> Result<Authorization, Exit> {
    let grant: Grant = brain_tools::grant_of(auth, |variable| {
        Some(std::env::var(variable).unwrap_or_else(|_| "unset-not-sent".to_owned()))
    })
    .map_err(|error| Exit::Failed(format!("the auth object cannot be used: {error}")))?;
    Ok(Authorization::new(tenant, grant))
}

/// When an access token expires, for a person: `in 59 min`, `expired`.
fn expiry(at: Option<SystemTime>) -> String {
    let Some(at) = at else {
        return "no expiry given".to_owned();
    };
    match at.duration_since(SystemTime::now()) {
        Ok(left) if left >= Duration::from_secs(120 * 60) => {
            format!("expires in {} h", left.as_secs() / 3600)
        }
        Ok(left) if left >= Duration::from_secs(120) => {
            format!("expires in {} min", left.as_secs() / 60)
        }
        Ok(left) => format!("expires in {} s", left.as_secs()),
        Err(_) => "expired".to_owned(),
    }
}

/// A stored grant, in one line.
pub(crate) fn describe(summary: &StoredGrantSummary) -> String {
    // The issuer and the scopes are what an authorization server said.
    if summary.revoked {
        return format!(
            "issuer {}; revoked (the authorization server refused its refresh token)",
            escape::escape(&summary.key.issuer, false)
        );
    }
    format!(
        "issuer {}; scopes {}; access token {}; {}",
        escape::escape(&summary.key.issuer, false),
        if summary.scopes.is_empty() {
            "(none named)".to_owned()
        } else {
            escape::escape(&summary.scopes.join(" "), false)
        },
        expiry(summary.expires_at),
        if summary.refreshable {
            "refreshed with its refresh token"
        } else {
            "no refresh token (log in again when it expires)"
        }
    )
}

/// Whether a person can answer here: stdin and stderr are terminals.
pub(crate) fn interactive() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// What a person reads when the authorization server refused in its redirect: its
/// error code and description, escaped and bounded.
fn refused(error: &str, description: &str) -> String {
    format!(
        "the authorization server refused: {} {}",
        escape::line(error, 100),
        escape::line(description, 300)
    )
}

/// The authorizer of a person at a terminal: prints the authorization URL on stderr and
/// waits for the authorization server's redirect on a loopback listener at the redirect
/// URI's port (the client then checks `state` and `iss`, and exchanges the code). A
/// redirect URI that is not loopback `http` is pasted back by the person instead, when
/// stdin is a terminal.
#[derive(Debug, Default)]
pub(crate) struct LoopbackAuthorizer;

/// How long one connection to the listener may take to send its request.
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);
/// The largest request head read.
const MAX_REQUEST: usize = 16 * 1024;

/// A redirect URI, as far as the listener needs it.
#[derive(Debug, PartialEq, Eq)]
struct Redirect {
    /// `http://host:port`, as the authorization server will use it.
    origin: String,
    /// Addresses to listen on.
    listen: Vec<std::net::SocketAddr>,
    path: String,
}

/// A loopback `http` redirect URI; `None` for any other.
fn loopback(uri: &str) -> Option<Redirect> {
    let url = url::Url::parse(uri).ok()?;
    if url.scheme() != "http" {
        return None;
    }
    let port = url.port_or_known_default()?;
    let listen = match url.host()? {
        url::Host::Domain(host) if host.eq_ignore_ascii_case("localhost") => vec![
            std::net::SocketAddr::from(([127, 0, 0, 1], port)),
            std::net::SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, port)),
        ],
        url::Host::Ipv4(ip) if ip.is_loopback() => vec![std::net::SocketAddr::from((ip, port))],
        url::Host::Ipv6(ip) if ip.is_loopback() => vec![std::net::SocketAddr::from((ip, port))],
        _ => return None,
    };
    Some(Redirect {
        origin: url.origin().ascii_serialization(),
        listen,
        path: url.path().to_owned(),
    })
}

/// The `state` of an authorization URL.
fn state_of(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()?
        .query_pairs()
        .find(|(name, _)| name == "state")
        .map(|(_, value)| value.into_owned())
}

#[async_trait::async_trait]
impl Authorizer for LoopbackAuthorizer {
    async fn authorize(&self, prompt: &AuthorizationPrompt) -> Result<String, HostAuthError> {
        let Some(redirect) = loopback(&prompt.redirect_uri) else {
            return paste(prompt).await;
        };
        let mut listeners = Vec::new();
        let mut refused = None;
        for address in &redirect.listen {
            match TcpListener::bind(address).await {
                Ok(listener) => listeners.push(listener),
                Err(error) => refused = Some((address, error)),
            }
        }
        if listeners.is_empty() {
            let (address, error) = refused.ok_or("no address to listen on")?;
            eprintln!(
                "mcp-tools: cannot listen on {address} for the redirect: {error}; set the binding's auth.redirect_uri to a free loopback port (and register it with the authorization server)"
            );
            return Err("cannot listen for the redirect".into());
        }
        eprintln!(
            "To authorize tenant {} for {}, open this URL in a browser:\n\n  {}\n\nWaiting for the redirect to {} (Ctrl-C to give up) ...",
            escape::line(&prompt.tenant, 200),
            escape::redacted_url(&prompt.resource),
            prompt.authorization_url,
            escape::line(&prompt.redirect_uri, 500),
        );
        let state = state_of(&prompt.authorization_url);
        let (sender, mut received) = tokio::sync::mpsc::channel(1);
        let mut tasks = tokio::task::JoinSet::new();
        for listener in listeners {
            let sender = sender.clone();
            let path = redirect.path.clone();
            let state = state.clone();
            tasks.spawn(async move {
                let mut connections = tokio::task::JoinSet::new();
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        // Out of file descriptors, say: try again shortly.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    };
                    let sender = sender.clone();
                    let path = path.clone();
                    let state = state.clone();
                    connections.spawn(async move {
                        if let Some(outcome) = callback(stream, &path, state.as_deref()).await {
                            let _ = sender.send(outcome).await;
                        }
                    });
                    // Finished connections are reaped as new ones come.
                    while connections.try_join_next().is_some() {}
                }
            });
        }
        drop(sender);
        let outcome = received.recv().await.ok_or("the listener stopped")?;
        tasks.abort_all();
        let query = outcome?;
        eprintln!("mcp-tools: the browser came back; finishing the authorization");
        Ok(format!("{}{}?{query}", redirect.origin, redirect.path))
    }
}

/// One connection to the listener: the callback's query when it is the redirect (with
/// our `state`), answered with a page for the browser; `None` for anything else.
async fn callback(
    mut stream: TcpStream,
    path: &str,
    state: Option<&str>,
) -> Option<Result<String, HostAuthError>> {
    let head = tokio::time::timeout(REQUEST_DEADLINE, read_head(&mut stream))
        .await
        .ok()??;
    let target = head
        .lines()
        .next()?
        .strip_prefix("GET ")?
        .split(' ')
        .next()?
        .to_owned();
    let (request_path, query) = target.split_once('?').unwrap_or((&target, ""));
    if request_path != path {
        respond(&mut stream, 404, "Not the redirect URI.").await;
        return None;
    }
    let params: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let param = |name: &str| {
        params
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    if state.is_some() && param("state") != state {
        // Not the answer to this authorization (a stale tab, or someone else's request).
        respond(
            &mut stream,
            400,
            "This is not the answer to the authorization mcp-tools is waiting for.",
        )
        .await;
        return None;
    }
    if let Some(error) = param("error") {
        let description = param("error_description").unwrap_or_default();
        eprintln!("mcp-tools: {}", refused(error, description));
        respond(
            &mut stream,
            200,
            "Authorization refused. You can close this window.",
        )
        .await;
        return Some(Err("the authorization server refused".into()));
    }
    param("code")?;
    respond(
        &mut stream,
        200,
        "Authorized. You can close this window and return to the terminal.",
    )
    .await;
    Some(Ok(query.to_owned()))
}

/// The request head (up to the blank line), at most [`MAX_REQUEST`] bytes.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 2048];
    while !head.windows(4).any(|window| window == b"\r\n\r\n") {
        let read = stream.read(&mut buffer).await.ok()?;
        if read == 0 || head.len() + read > MAX_REQUEST {
            return None;
        }
        head.extend_from_slice(&buffer[..read]);
    }
    String::from_utf8(head).ok()
}

async fn respond(stream: &mut TcpStream, status: u16, text: &str) {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        _ => "Not Found",
    };
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>mcp-tools</title></head><body><p>{text}</p></body></html>"
    );
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// A redirect URI nothing here can listen on: the person pastes the address the browser
/// was sent to.
async fn paste(prompt: &AuthorizationPrompt) -> Result<String, HostAuthError> {
    if !interactive() {
        eprintln!(
            "mcp-tools: the redirect URI {} is not a loopback http URL, so mcp-tools cannot receive the redirect, and there is no terminal to paste it into; use a redirect_uri like http://127.0.0.1:8976/callback",
            escape::line(&prompt.redirect_uri, 500)
        );
        return Err("cannot receive the redirect".into());
    }
    eprintln!(
        "To authorize tenant {} for {}, open this URL in a browser:\n\n  {}\n\nThen paste here the address the browser was sent to ({}...):",
        escape::line(&prompt.tenant, 200),
        escape::redacted_url(&prompt.resource),
        prompt.authorization_url,
        escape::line(&prompt.redirect_uri, 500),
    );
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await??;
    Ok(line.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_in_the_redirect_is_shown_escaped_and_bounded() {
        use crate::runtime::output::escape::hostile::{TEXT, assert_escaped};
        let shown = refused("access_denied", TEXT);
        assert!(shown.starts_with("the authorization server refused: access_denied x"));
        assert_escaped(&shown);
        let long = refused(&"e".repeat(1000), &"d".repeat(1000));
        assert!(long.chars().count() <= 34 + 101 + 1 + 301, "{long}");
    }

    #[test]
    fn loopback_redirects_are_listened_for_and_others_are_not() {
        let redirect = loopback("http://127.0.0.1:8976/callback").unwrap();
        assert_eq!(redirect.origin, "http://127.0.0.1:8976");
        assert_eq!(redirect.path, "/callback");
        assert_eq!(redirect.listen.len(), 1);
        assert_eq!(
            loopback("http://localhost:3000/cb").unwrap().listen.len(),
            2
        );
        assert_eq!(loopback("http://[::1]:3000/cb").unwrap().listen.len(), 1);
        assert!(loopback("https://127.0.0.1:8976/callback").is_none());
        assert!(loopback("http://10.0.0.1:8976/callback").is_none());
        assert!(loopback("http://example.com/callback").is_none());
    }

    #[test]
    fn auth_objects_on_the_command_line_are_checked_like_the_config() {
        assert!(matches!(
            parse_auth(r#"{"type": "oauth"}"#),
            Ok(McpAuth::OAuth(_))
        ));
        let Err(Exit::Usage(message)) = parse_auth(r#"{"type": "oauth", "client_secret": "x"}"#)
        else {
            panic!("a secret in the auth object is refused");
        };
        assert!(message.starts_with("--auth.client_secret"), "{message}");
        assert!(matches!(parse_auth("{"), Err(Exit::Usage(_))));
    }
}
