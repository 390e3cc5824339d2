//! Bindings with an `auth` object through `ToolHost`: secrets read from their variables
//! at call time, the tenant's token on the wire, and what a tenant without a grant is
//! told to run.

use std::sync::{Arc, Mutex};

use brain_tools::{CallScope, ClientOptions, McpClient, MemoryCredentialStore, ToolHost};
use brain_tools_config::HostConfig;
use brain_tools_events::{Delivery, ErrorKind, ToolEvent};
use serde_json::{Value, json};
use wiremock::{
    Mock, MockServer, Request, Respond, ResponseTemplate,
    matchers::{method, path},
};

const SECRET: &str = "cs-host-secret-0123456789";

/// An MCP server that wants `Bearer at-<tenant>` tokens, and its authorization server,
/// which issues one per client credentials request (the tenant is not in the request:
/// tokens are numbered, and the test reads which one each call carried).
struct Scripted {
    resource: MockServer,
    _auth: MockServer,
    seen: Arc<Mutex<Vec<Option<String>>>>,
    issued: Arc<Mutex<Vec<String>>>,
}

struct Resource {
    base: String,
    issued: Arc<Mutex<Vec<String>>>,
    seen: Arc<Mutex<Vec<Option<String>>>>,
}

impl Respond for Resource {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let id = body["id"].clone();
        let bearer = request
            .headers
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::to_owned);
        if body["method"] == "tools/call" {
            self.seen.lock().unwrap().push(bearer.clone());
        }
        if !bearer.is_some_and(|bearer| self.issued.lock().unwrap().contains(&bearer)) {
            let challenge = format!(
                "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
                self.base
            );
            return ResponseTemplate::new(401)
                .insert_header("www-authenticate", challenge.as_str());
        }
        let result = match body["method"].as_str() {
            Some("server/discover") => json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "ttlMs": 0,
                "cacheScope": "public",
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "s", "version": "1"}}
            }),
            Some("tools/call") => json!({"content": [{"type": "text", "text": "done"}]}),
            _ if id.is_null() => return ResponseTemplate::new(202),
            _ => json!({}),
        };
        ResponseTemplate::new(200)
            .set_body_json(json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }
}

struct Token(Arc<Mutex<Vec<String>>>);

impl Respond for Token {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body = String::from_utf8_lossy(&request.body);
        if !body.contains(SECRET) {
            return ResponseTemplate::new(401).set_body_json(json!({"error": "invalid_client"}));
        }
        let mut issued = self.0.lock().unwrap();
        let token = format!("at-{}-0123456789", issued.len());
        issued.push(token.clone());
        ResponseTemplate::new(200).set_body_json(
            json!({"access_token": token, "token_type": "Bearer", "expires_in": 3600}),
        )
    }
}

impl Scripted {
    async fn start() -> Self {
        let resource = MockServer::start().await;
        let auth = MockServer::start().await;
        let issued = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::new(Mutex::new(Vec::new()));
        Mock::given(method("POST"))
            .and(path("/mcp"))
            .respond_with(Resource {
                base: resource.uri(),
                issued: Arc::clone(&issued),
                seen: Arc::clone(&seen),
            })
            .mount(&resource)
            .await;
        Mock::given(method("GET"))
            .and(path("/.well-known/oauth-protected-resource/mcp"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "resource": format!("{}/mcp", resource.uri()),
                "authorization_servers": [auth.uri()],
            })))
            .mount(&resource)
            .await;
        let issuer = auth.uri();
        Mock::given(method("GET"))
            .and(path("/.well-known/oauth-authorization-server"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{issuer}/authorize"),
                "token_endpoint": format!("{issuer}/token"),
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["client_secret_post"],
            })))
            .mount(&auth)
            .await;
        Mock::given(method("POST"))
            .and(path("/token"))
            .respond_with(Token(Arc::clone(&issued)))
            .mount(&auth)
            .await;
        Self {
            resource,
            _auth: auth,
            seen,
            issued,
        }
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.resource.uri())
    }
}

fn host(config: Value) -> ToolHost {
    let loaded = HostConfig::from_json_value_with_env(&config, |_| true).expect("a valid config");
    let options = ClientOptions::default()
        .warm_contexts(false)
        .credential_store(Arc::new(MemoryCredentialStore::new()));
    ToolHost::builder(loaded.config)
        .client(McpClient::new(options).unwrap())
        .token_source(|name| (name == "HOST_SECRET").then(|| SECRET.to_owned()))
        .config_path("/etc/brain/host.json")
        .build()
        .unwrap()
}

fn config(url: &str) -> Value {
    json!({"tools": [
        {
            "name": "search",
            "input_schema": {"type": "object"},
            "url": url,
            "mcp_tool": "search",
            "tenants": ["acme", "umbrella"],
            "auth": {"type": "client_credentials", "client_id": "host", "client_secret_env": "HOST_SECRET"}
        },
        {
            "name": "unset",
            "input_schema": {"type": "object"},
            "url": url,
            "mcp_tool": "search",
            "tenants": ["acme"],
            "auth": {"type": "client_credentials", "client_id": "host", "client_secret_env": "UNSET_SECRET"}
        },
        {
            "name": "files",
            "input_schema": {"type": "object"},
            "url": url,
            "mcp_tool": "search",
            "tenants": ["acme"],
            "auth": {"type": "oauth", "scopes": ["files:read"]}
        }
    ]})
}

async fn call(
    host: &ToolHost,
    tenant: &str,
    tool: &str,
) -> (brain_tools::ResultEvent, Vec<ToolEvent>) {
    let sink = Arc::new(Mutex::new(Vec::new()));
    let scope = CallScope::new(tenant, "s1", "c1");
    let result = host
        .call(scope.clone(), tool, json!({}))
        .sink(sink.clone())
        .await;
    let events = std::mem::take(&mut *sink.lock().unwrap());
    (result, events)
}

#[tokio::test]
async fn each_tenants_call_carries_its_own_token() {
    let server = Scripted::start().await;
    let host = host(config(&server.url()));
    for tenant in ["acme", "umbrella", "acme", "umbrella"] {
        let (result, _) = call(&host, tenant, "search").await;
        assert!(!result.is_error, "{tenant}: {result:?}");
    }
    let seen = server.seen.lock().unwrap().clone();
    let issued = server.issued.lock().unwrap().clone();
    assert_eq!(issued.len(), 2, "one token per tenant");
    // Every call carried a token; acme's calls one, umbrella's the other.
    assert!(seen.iter().all(Option::is_some), "{seen:?}");
    assert_eq!(seen[0], seen[2]);
    assert_eq!(seen[1], seen[3]);
    assert_ne!(seen[0], seen[1]);
}

#[tokio::test]
async fn an_unset_secret_variable_is_a_missing_token_that_names_it() {
    let server = Scripted::start().await;
    let host = host(config(&server.url()));
    let (result, _) = call(&host, "acme", "unset").await;
    let error = result.error.unwrap();
    assert_eq!(
        (error.kind, error.delivery),
        (ErrorKind::MissingToken, Delivery::NotSent)
    );
    assert_eq!(
        error.message,
        "unset was not called because UNSET_SECRET, the environment variable that holds its client secret, is not set; it did not run, and calling it again fails the same way until the variable is set"
    );
    assert!(!error.retryable && !error.may_have_run());
    assert!(
        server
            .resource
            .received_requests()
            .await
            .unwrap()
            .is_empty()
    );
}

/// The login command is pasted into a shell: a config path with a space, a tenant with
/// a space and an ESC come back as they are, and no ESC reaches the terminal raw; the
/// store's flags the host gives are in it.
#[tokio::test]
async fn the_login_command_is_quoted_for_a_shell() {
    let server = Scripted::start().await;
    let tenant = "acme corp\u{1b}[2J";
    let mut config = config(&server.url());
    config["tools"][2]["tenants"] = json!([tenant]);
    let loaded = HostConfig::from_json_value_with_env(&config, |_| true).unwrap();
    let host = ToolHost::builder(loaded.config)
        .client(
            McpClient::new(
                ClientOptions::default()
                    .warm_contexts(false)
                    .credential_store(Arc::new(MemoryCredentialStore::new())),
            )
            .unwrap(),
        )
        .config_path("/etc/brain/my host.json")
        .store_flags("--store '/var/lib/brain grants'")
        .build()
        .unwrap();
    let (result, _) = call(&host, tenant, "files").await;
    let error = result.error.unwrap();
    assert_eq!(error.kind, ErrorKind::AuthorizationRequired);
    assert!(
        error.message.ends_with(
            r"run `mcp-tools login --config '/etc/brain/my host.json' --tool files --tenant $'acme corp\x1b[2J' --store '/var/lib/brain grants'`"
        ),
        "{}",
        error.message
    );
    assert!(!error.message.contains('\u{1b}'), "{}", error.message);
}

#[tokio::test]
async fn a_tenant_without_a_grant_is_told_the_login_command() {
    let server = Scripted::start().await;
    let host = host(config(&server.url()));
    let (result, events) = call(&host, "acme", "files").await;
    let error = result.error.clone().unwrap();
    assert_eq!(
        (error.kind, error.delivery),
        (ErrorKind::AuthorizationRequired, Delivery::NotSent)
    );
    assert!(
        error
            .message
            .starts_with("files was not called because it needs the tenant to authorize"),
        "{}",
        error.message
    );
    assert!(
        error.message.ends_with(
            "run `mcp-tools login --config /etc/brain/host.json --tool files --tenant acme`"
        ),
        "{}",
        error.message
    );
    let line = ToolEvent::Result(result).to_json_line();
    assert!(
        line.contains("\"kind\":\"authorization_required\""),
        "{line}"
    );
    assert_eq!(events.len(), 1);
    assert!(server.seen.lock().unwrap().is_empty(), "no call was sent");
}

/// Client credentials against an rmcp server behind a bearer check (the testkit protected),
/// in both eras and with warm contexts on (the default): every call runs, every call after
/// the first carries the cached token, and the token endpoint is asked once.
#[tokio::test]
async fn a_cached_client_credentials_token_serves_every_call_in_both_eras() {
    use brain_mcp_testkit::{BearerOptions, Era, ServerOptions, TestServer};
    for era in [Era::Legacy, Era::Modern] {
        let server = TestServer::start(ServerOptions {
            era,
            bearer: Some(BearerOptions {
                static_token: None,
                client_id: "host".to_owned(),
                client_secret: SECRET.to_owned(),
                expires_in: 3600,
            }),
            ..ServerOptions::default()
        })
        .await
        .unwrap();
        let loaded = HostConfig::from_json_value_with_env(
            &json!({"tools": [{
                "name": "echo",
                "input_schema": {"type": "object"},
                "url": server.url(),
                "mcp_tool": "echo",
                "tenants": ["acme"],
                "auth": {"type": "client_credentials", "client_id": "host", "client_secret_env": "HOST_SECRET"}
            }]}),
            |_| true,
        )
        .expect("a valid config");
        let host = ToolHost::builder(loaded.config)
            .client(McpClient::new(ClientOptions::default()).unwrap())
            .token_source(|name| (name == "HOST_SECRET").then(|| SECRET.to_owned()))
            .build()
            .unwrap();
        for i in 0..10 {
            let scope = CallScope::new("acme", "s1", format!("c{i}"));
            let result = host.call(scope, "echo", json!({"message": "hi"})).await;
            assert!(!result.is_error, "{era} call {i}: {result:?}");
        }
        host.client()
            .shutdown(std::time::Duration::from_secs(5))
            .await;
        let seen = server.counters();
        assert_eq!(seen.tokens_issued, 1, "{era}: one token for every call");
        assert_eq!(seen.method("tools/call"), 10, "{era}");
        // Only the first request of the first call may go without the token (its 401
        // names the metadata); nothing after it is refused.
        assert!(
            seen.unauthorized <= 1,
            "{era}: {} refused",
            seen.unauthorized
        );
        let bearers = seen
            .call_headers
            .iter()
            .map(|headers| headers.get("authorization").cloned())
            .collect::<std::collections::BTreeSet<_>>();
        assert_eq!(bearers.len(), 1, "{era}: {bearers:?}");
        server.shutdown().await;
    }
}

/// Two tenants on one client-credentials binding, legacy era, warm contexts on (the
/// default): each tenant's calls carry that tenant's own token, checked on the wire, also
/// the calls that took a warm session (a session opened with one tenant's token serves
/// only that tenant's calls).
#[tokio::test]
async fn two_tenants_on_warm_sessions_each_carry_their_own_token() {
    use brain_mcp_testkit::{BearerOptions, Era, ServerOptions, TestServer};
    let server = TestServer::start(ServerOptions {
        era: Era::Legacy,
        bearer: Some(BearerOptions {
            static_token: None,
            client_id: "host".to_owned(),
            client_secret: SECRET.to_owned(),
            expires_in: 3600,
        }),
        ..ServerOptions::default()
    })
    .await
    .unwrap();
    let loaded = HostConfig::from_json_value_with_env(
        &json!({"tools": [{
            "name": "echo",
            "input_schema": {"type": "object"},
            "url": server.url(),
            "mcp_tool": "echo",
            "tenants": ["acme", "umbrella"],
            "auth": {"type": "client_credentials", "client_id": "host", "client_secret_env": "HOST_SECRET"}
        }]}),
        |_| true,
    )
    .expect("a valid config");
    let host = ToolHost::builder(loaded.config)
        .client(McpClient::new(ClientOptions::default()).unwrap())
        .token_source(|name| (name == "HOST_SECRET").then(|| SECRET.to_owned()))
        .build()
        .unwrap();
    let tenants = ["acme", "umbrella"];
    for i in 0..12 {
        let scope = CallScope::new(tenants[i % 2], "s1", format!("c{i}"));
        let result = host.call(scope, "echo", json!({"message": "hi"})).await;
        assert!(!result.is_error, "call {i}: {result:?}");
    }
    let warm = host.client().stats().warm_served;
    host.client()
        .shutdown(std::time::Duration::from_secs(5))
        .await;
    assert!(warm > 0, "some calls took a warm session");
    let seen = server.counters();
    assert_eq!(seen.tokens_issued, 2, "one token per tenant");
    let bearers: Vec<Option<String>> = seen
        .call_headers
        .iter()
        .map(|headers| headers.get("authorization").cloned())
        .collect();
    assert_eq!(bearers.len(), 12);
    assert_ne!(bearers[0], bearers[1], "the tenants' tokens differ");
    for (i, bearer) in bearers.iter().enumerate() {
        assert!(bearer.is_some(), "call {i} carried a token");
        assert_eq!(
            bearer,
            &bearers[i % 2],
            "call {i} carried its tenant's token"
        );
    }
    server.shutdown().await;
}
