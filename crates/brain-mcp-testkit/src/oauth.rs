//! Scripted OAuth servers (feature `oauth`): an authorization server (metadata, dynamic
//! registration, `/authorize` that redirects at once, a token endpoint for every grant), an
//! MCP resource server that checks bearers (401 with a challenge, 403 `insufficient_scope`),
//! recording what each request carried, and an identity provider for enterprise-managed
//! authorization. [`get`] does what a browser would with an authorization URL. Built on
//! wiremock; shared by the transport's and `mcp-tools`' authorization tests. Both servers
//! speak DPoP (RFC 9449) when a test turns it on ([`dpop::DpopState`]).

pub mod dpop;
mod issuer;

pub use self::issuer::JwtIssuer;

use std::{
    collections::HashMap,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use base64::{
    Engine,
    engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD},
};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use wiremock::{
    Mock, MockServer, Request, Respond, ResponseTemplate,
    matchers::{method, path},
};

use self::dpop::{At, DpopState};

/// Locks a mutex, a poisoned one included (a failed test must not hide the next one's cause).
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The form fields of a request body.
pub fn form(body: &[u8]) -> HashMap<String, String> {
    let text = String::from_utf8_lossy(body);
    url::Url::parse(&format!("http://form/?{text}"))
        .map(|url| url.query_pairs().into_owned().collect())
        .unwrap_or_default()
}

/// What the resource server accepts and answers.
#[derive(Debug, Default)]
pub struct ResourceState {
    /// Accepted access tokens and their scopes.
    pub accepted: Mutex<HashMap<String, Vec<String>>>,
    /// (method, bearer, arguments) of every POST, in order.
    pub seen: Mutex<Vec<(String, Option<String>, Value)>>,
    /// `tools/call` requests the server ran.
    pub calls: AtomicUsize,
    /// The arguments of every `tools/call` the server ran (not those it refused), in
    /// order.
    pub ran: Mutex<Vec<Value>>,
    /// The scope `tools/call` needs.
    pub call_scope: Mutex<Option<String>>,
    /// The scope named in the 401 challenge.
    pub challenge_scope: Mutex<Option<String>>,
    /// The `resource` the protected resource metadata names (default: the server's URL).
    pub resource: Mutex<Option<String>>,
    /// Text the tool answers with (default: `ok`).
    pub answer: Mutex<Option<String>>,
    /// Set: the token of the next `tools/call` expires just before it arrives (after the
    /// handshake that carried it): it is revoked, and the call refused with a 401.
    pub expire_at_call: std::sync::atomic::AtomicBool,
    /// Set: everything but `tools/call` is answered without a token (`server/discover`,
    /// `initialize` and listings are open; only calls are protected).
    pub open_handshake: std::sync::atomic::AtomicBool,
    /// DPoP, shared with the authorization server (off by default).
    pub dpop: Arc<DpopState>,
    /// When each token the authorization server issued expires (its `expires_in`).
    pub expires: Mutex<HashMap<String, std::time::Instant>>,
    /// Set: a token past its expiry is refused (401 `invalid_token`), as a real resource
    /// server refuses it.
    pub enforce_expiry: std::sync::atomic::AtomicBool,
    /// Requests refused for a token past its expiry.
    pub expired: AtomicUsize,
}

impl ResourceState {
    /// Accepts `token` as a bearer with these scopes.
    pub fn accept(&self, token: &str, scopes: Vec<String>) {
        lock(&self.accepted).insert(token.to_owned(), scopes);
    }

    /// The token stops being accepted (revoked, or the server's key rotated).
    pub fn revoke(&self, token: &str) {
        lock(&self.accepted).remove(token);
    }

    /// Bearers of the `tools/call` requests the server ran, with their arguments.
    pub fn calls_seen(&self) -> Vec<(Option<String>, Value)> {
        lock(&self.seen)
            .iter()
            .filter(|(method, ..)| method == "tools/call")
            .map(|(_, bearer, arguments)| (bearer.clone(), arguments.clone()))
            .collect()
    }
}

/// The MCP resource server: 2026-07-28 (`server/discover`), every request needing a bearer.
#[derive(Debug)]
pub struct Resource {
    /// The wiremock server (stops when dropped).
    pub server: MockServer,
    /// What it accepts and what it saw.
    pub state: Arc<ResourceState>,
}

struct ResourceAnswers {
    state: Arc<ResourceState>,
    base: String,
}

fn bearer(request: &Request) -> Option<String> {
    request
        .headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::to_owned)
}

fn header<'r>(request: &'r Request, name: &str) -> Option<&'r str> {
    request
        .headers
        .get(name)
        .and_then(|value| value.to_str().ok())
}

impl ResourceAnswers {
    /// The token a request presents, when the server takes it: a Bearer token, or with
    /// DPoP on, a `DPoP` one with a good proof for its key (a token bound to a key is
    /// refused with the Bearer scheme). Else the refusal (`None`: no token).
    fn token(
        &self,
        request: &Request,
        is_call: bool,
    ) -> Result<Option<String>, Box<ResponseTemplate>> {
        let dpop = &self.state.dpop;
        let authorization = header(request, "authorization").unwrap_or_default();
        if let Some(token) = authorization.strip_prefix("DPoP ").filter(|_| dpop.is_on()) {
            let htu = format!("{}/mcp", self.base);
            let checked = dpop.check(
                At::Resource,
                header(request, "dpop"),
                request.method.as_str(),
                &htu,
                Some(token),
                is_call,
            );
            return match checked {
                Ok(jkt) if dpop.bound_to(token).is_none_or(|bound| bound == jkt) => {
                    Ok(Some(token.to_owned()))
                }
                Ok(_) => Err(Box::new(self.dpop_refusal("invalid_token", None))),
                Err(refusal) => Err(Box::new(self.dpop_refusal(refusal.error, refusal.nonce))),
            };
        }
        let token = bearer(request);
        if token
            .as_deref()
            .is_some_and(|token| dpop.bound_to(token).is_some())
        {
            return Err(Box::new(self.challenge()));
        }
        Ok(token)
    }

    fn dpop_refusal(&self, error: &str, nonce: Option<String>) -> ResponseTemplate {
        let header = format!(
            "DPoP error=\"{error}\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            self.base
        );
        let mut answer = ResponseTemplate::new(401)
            .insert_header("www-authenticate", header.as_str())
            .set_body_json(json!({"error": error}));
        if let Some(nonce) = nonce {
            answer = answer.insert_header("dpop-nonce", nonce.as_str());
        }
        answer
    }

    fn challenge(&self) -> ResponseTemplate {
        let mut header = format!(
            "Bearer error=\"invalid_token\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
            self.base
        );
        if let Some(scope) = lock(&self.state.challenge_scope).as_deref() {
            header.push_str(&format!(", scope=\"{scope}\""));
        }
        ResponseTemplate::new(401)
            .insert_header("www-authenticate", header.as_str())
            .set_body_json(json!({"error": "invalid_token"}))
    }
}

impl Respond for ResponseAnswersGet {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        match self.0.token(request, false) {
            Ok(Some(token)) if lock(&self.0.state.accepted).contains_key(&token) => {
                ResponseTemplate::new(405)
            }
            Err(refusal) => *refusal,
            _ => self.0.challenge(),
        }
    }
}

struct ResponseAnswersGet(ResourceAnswers);

impl Respond for ResourceAnswers {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let id = body.get("id").cloned().unwrap_or(Value::Null);
        let method = body
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let token = match self.token(request, method == "tools/call") {
            Ok(token) => token,
            Err(refusal) => return *refusal,
        };
        let arguments = body["params"]["arguments"].clone();
        lock(&self.state.seen).push((method.clone(), token.clone(), arguments));
        let scopes = token
            .as_ref()
            .and_then(|token| lock(&self.state.accepted).get(token).cloned());
        let expired = token.as_ref().is_some_and(|token| {
            self.state.enforce_expiry.load(Ordering::SeqCst)
                && lock(&self.state.expires)
                    .get(token)
                    .is_some_and(|at| *at <= std::time::Instant::now())
        });
        if expired {
            self.state.expired.fetch_add(1, Ordering::SeqCst);
            return self.challenge();
        }
        let open = method != "tools/call" && self.state.open_handshake.load(Ordering::SeqCst);
        let Some(scopes) = scopes.or_else(|| open.then(Vec::new)) else {
            return self.challenge();
        };
        match method.as_str() {
            "server/discover" => ResponseTemplate::new(200).set_body_json(json!({
                "jsonrpc": "2.0", "id": id,
                "result": {
                    "resultType": "complete",
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}},
                    "ttlMs": 0,
                    "cacheScope": "public",
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "resource", "version": "1"}}
                }
            })),
            "initialize" => ResponseTemplate::new(200)
                .insert_header("mcp-session-id", "oauth-session")
                .set_body_json(json!({
                    "jsonrpc": "2.0", "id": id,
                    "result": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "resource", "version": "1"}
                    }
                })),
            "tools/list" => ResponseTemplate::new(200).set_body_json(json!({
                "jsonrpc": "2.0", "id": id,
                "result": {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
            })),
            "tools/call" => {
                if self.state.expire_at_call.swap(false, Ordering::SeqCst) {
                    if let Some(token) = &token {
                        self.state.revoke(token);
                    }
                    return self.challenge();
                }
                if let Some(needed) = lock(&self.state.call_scope).clone()
                    && !scopes.contains(&needed)
                {
                    let header = format!(
                        "Bearer error=\"insufficient_scope\", scope=\"{needed}\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"",
                        self.base
                    );
                    return ResponseTemplate::new(403)
                        .insert_header("www-authenticate", header.as_str());
                }
                self.state.calls.fetch_add(1, Ordering::SeqCst);
                lock(&self.state.ran).push(body["params"]["arguments"].clone());
                let text = lock(&self.state.answer)
                    .clone()
                    .unwrap_or_else(|| "ok".to_owned());
                // `ms`: the tool takes that long.
                let took = Duration::from_millis(
                    body["params"]["arguments"]["ms"].as_u64().unwrap_or(0),
                );
                ResponseTemplate::new(200)
                    .set_body_json(json!({
                        "jsonrpc": "2.0", "id": id,
                        "result": {"content": [{"type": "text", "text": text}]}
                    }))
                    .set_delay(took)
            }
            _ if id.is_null() => ResponseTemplate::new(202),
            _ => ResponseTemplate::new(200).set_body_json(json!({
                "jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found"}
            })),
        }
    }
}

struct Metadata {
    state: Arc<ResourceState>,
    base: String,
    authorization_server: String,
}

impl Respond for Metadata {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let resource = lock(&self.state.resource)
            .clone()
            .unwrap_or_else(|| format!("{}/mcp", self.base));
        ResponseTemplate::new(200).set_body_json(json!({
            "resource": resource,
            "authorization_servers": [self.authorization_server],
        }))
    }
}

impl Resource {
    /// A resource server whose authorization server is at `authorization_server`.
    pub async fn start(authorization_server: &str) -> Self {
        let server = MockServer::start().await;
        let state = Arc::new(ResourceState::default());
        let base = server.uri();
        Mock::given(method("POST"))
            .and(path("/mcp"))
            .respond_with(ResourceAnswers {
                state: Arc::clone(&state),
                base: base.clone(),
            })
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/mcp"))
            .respond_with(ResponseAnswersGet(ResourceAnswers {
                state: Arc::clone(&state),
                base: base.clone(),
            }))
            .mount(&server)
            .await;
        Mock::given(method("DELETE"))
            .and(path("/mcp"))
            .respond_with(ResponseTemplate::new(200))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/.well-known/oauth-protected-resource/mcp"))
            .respond_with(Metadata {
                state: Arc::clone(&state),
                base,
                authorization_server: authorization_server.to_owned(),
            })
            .mount(&server)
            .await;
        Self { server, state }
    }

    /// The MCP endpoint (`/mcp`).
    pub fn url(&self) -> String {
        format!("{}/mcp", self.server.uri())
    }
}

/// How the token endpoint answers a refresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshAnswer {
    /// New tokens.
    Grant,
    /// 500 `server_error`: a transient failure.
    Fail,
    /// 400 `invalid_grant`: the refresh token was revoked.
    Revoked,
}

/// What `/authorize` puts in its redirect as `iss`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Iss {
    /// The authorization server's own issuer.
    Correct,
    /// Another issuer (a mix-up attack).
    Wrong,
}

/// One token request as the authorization server saw it.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    /// The form fields.
    pub form: HashMap<String, String>,
    /// `client_id:secret` from HTTP Basic, if used.
    pub basic: Option<String>,
}

impl TokenRequest {
    /// The `grant_type` field (empty when absent).
    pub fn grant_type(&self) -> &str {
        self.form
            .get("grant_type")
            .map(String::as_str)
            .unwrap_or_default()
    }
}

/// The authorization server's settings and what it saw.
#[derive(Debug)]
pub struct AsState {
    /// The resource server whose tokens this server issues.
    pub resource: Arc<ResourceState>,
    /// The issuer its metadata names.
    pub issuer: String,
    /// `token_endpoint_auth_methods_supported`.
    pub auth_methods: Mutex<Vec<&'static str>>,
    /// `expires_in` of issued access tokens, in seconds.
    pub expires_in: Mutex<u64>,
    /// How a refresh is answered.
    pub refresh_answer: Mutex<RefreshAnswer>,
    /// The `iss` of `/authorize` redirects.
    pub iss: Mutex<Iss>,
    /// How long the token endpoint takes.
    pub token_delay: Mutex<Duration>,
    /// The `token_type` of issued access tokens (default `Bearer`).
    pub token_type: Mutex<String>,
    /// Set: every token request is answered with this status and body instead (a hostile
    /// or broken token endpoint); the request is still recorded.
    pub token_answer: Mutex<Option<(u16, String)>>,
    /// Fields merged into the authorization server metadata; a `null` removes the field
    /// (for example `code_challenge_methods_supported`).
    pub metadata_patch: Mutex<serde_json::Map<String, Value>>,
    /// Scopes the server never grants, whatever is asked.
    pub withheld: Mutex<Vec<String>>,
    /// Every token request, in order.
    pub tokens: Mutex<Vec<TokenRequest>>,
    /// The query of every `/authorize` request, in order.
    pub authorizations: Mutex<Vec<HashMap<String, String>>>,
    /// Dynamic client registrations made.
    pub registrations: AtomicUsize,
    /// Set: refresh tokens are single-use (each refresh issues a new one), and a used
    /// one presented again revokes its whole grant (RFC 9700 §4.14.2).
    pub rotation: std::sync::atomic::AtomicBool,
    /// With rotation: a used refresh token presented again revokes the grant (default);
    /// unset, it is only refused (`invalid_grant`).
    pub reuse_detection: std::sync::atomic::AtomicBool,
    /// A refresh answers with a new refresh token (default); unset, with none (the client
    /// keeps the one it has, RFC 6749 §6), and the old one stays valid.
    pub new_refresh_tokens: std::sync::atomic::AtomicBool,
    /// The next refresh requests to stall: not processed (nothing rotates), answered
    /// 503 after a minute (the client is gone by then), as an authorization server that
    /// had not got to a request when its client died.
    pub stall_refreshes: AtomicUsize,
    /// Token requests received so far (a test waits on it instead of sleeping).
    pub token_requests_seen: tokio::sync::watch::Sender<usize>,
    /// Refresh token reuses detected (each revoked a grant).
    pub reuses: AtomicUsize,
    /// Every refresh granted: (grant, when).
    pub refresh_log: Mutex<Vec<(usize, std::time::Instant)>>,
    /// code -> (code challenge, scopes).
    codes: Mutex<HashMap<String, (String, Vec<String>)>>,
    /// refresh token -> (scopes, grant).
    refresh_tokens: Mutex<HashMap<String, (Vec<String>, usize)>>,
    /// Used refresh tokens (with rotation) -> their grant.
    used_refresh_tokens: Mutex<HashMap<String, usize>>,
    /// Grant -> the access tokens issued for it (revoked with it).
    grant_tokens: Mutex<HashMap<usize, Vec<String>>>,
    /// Grants made (their numbers).
    grants: AtomicUsize,
    issued: AtomicUsize,
}

impl AsState {
    /// The token requests of one grant type, in order.
    pub fn token_requests(&self, grant_type: &str) -> Vec<TokenRequest> {
        lock(&self.tokens)
            .iter()
            .filter(|request| request.grant_type() == grant_type)
            .cloned()
            .collect()
    }

    /// Issues a token pair the resource accepts, for a new grant.
    pub fn issue(&self, scopes: &[String], refresh: bool) -> Value {
        let grant = self.grants.fetch_add(1, Ordering::SeqCst);
        self.issue_for(scopes, refresh, grant)
    }

    /// Issues a token pair for a grant.
    fn issue_for(&self, scopes: &[String], refresh: bool, grant: usize) -> Value {
        let n = self.issued.fetch_add(1, Ordering::SeqCst);
        let access = format!("at-{n}-0123456789abcdef");
        self.resource.accept(&access, scopes.to_vec());
        let lifetime = *lock(&self.expires_in);
        if let Some(at) = std::time::Instant::now().checked_add(Duration::from_secs(lifetime)) {
            lock(&self.resource.expires).insert(access.clone(), at);
        }
        lock(&self.grant_tokens)
            .entry(grant)
            .or_default()
            .push(access.clone());
        let mut body = json!({
            "access_token": access,
            "token_type": lock(&self.token_type).clone(),
            "expires_in": *lock(&self.expires_in),
            "scope": scopes.join(" "),
        });
        if refresh {
            let token = format!("rt-{n}-0123456789abcdef");
            lock(&self.refresh_tokens).insert(token.clone(), (scopes.to_vec(), grant));
            body["refresh_token"] = json!(token);
        }
        body
    }

    /// Stores a refresh token as issued, for a grant of its own (for grants the test puts
    /// in a store itself); returns the grant's number (as in [`AsState::refresh_log`]).
    pub fn knows_refresh_token(&self, token: &str, scopes: Vec<String>) -> usize {
        let grant = self.grants.fetch_add(1, Ordering::SeqCst);
        lock(&self.refresh_tokens).insert(token.to_owned(), (scopes, grant));
        grant
    }

    /// Refreshes granted per grant.
    pub fn refreshes_per_grant(&self) -> HashMap<usize, Vec<std::time::Instant>> {
        let mut per: HashMap<usize, Vec<std::time::Instant>> = HashMap::new();
        for (grant, at) in lock(&self.refresh_log).iter() {
            per.entry(*grant).or_default().push(*at);
        }
        per
    }

    /// A token answer bound to the key `jkt` (a proved request: `token_type` DPoP, its
    /// tokens bound), or as it is.
    fn bound(&self, mut body: Value, jkt: Option<&str>) -> Value {
        if let Some(jkt) = jkt {
            body["token_type"] = json!("DPoP");
            for field in ["access_token", "refresh_token"] {
                if let Some(token) = body[field].as_str() {
                    self.resource.dpop.bind(token, jkt);
                }
            }
        }
        body
    }

    /// A refresh with `token`: rotated or not, reuse detected or not; proved with the key
    /// `jkt`, which must be the one a bound refresh token is bound to.
    fn refresh(&self, token: &str, jkt: Option<&str>) -> ResponseTemplate {
        if let Some(bound) = self.resource.dpop.bound_to(token)
            && jkt != Some(bound.as_str())
        {
            return oauth_error(400, "invalid_dpop_proof");
        }
        let rotation =
            self.rotation.load(Ordering::SeqCst) && self.new_refresh_tokens.load(Ordering::SeqCst);
        let used = lock(&self.used_refresh_tokens).get(token).copied();
        if rotation && used.is_some() && !self.reuse_detection.load(Ordering::SeqCst) {
            return oauth_error(400, "invalid_grant");
        }
        if rotation && let Some(grant) = used {
            // Reused: the grant is revoked, every token of it.
            self.reuses.fetch_add(1, Ordering::SeqCst);
            lock(&self.refresh_tokens).retain(|_, (_, of)| *of != grant);
            for access in lock(&self.grant_tokens).remove(&grant).unwrap_or_default() {
                self.resource.revoke(&access);
            }
            return oauth_error(400, "invalid_grant");
        }
        let known = if rotation {
            lock(&self.refresh_tokens).remove(token)
        } else {
            lock(&self.refresh_tokens).get(token).cloned()
        };
        let Some((scopes, grant)) = known else {
            return oauth_error(400, "invalid_grant");
        };
        if rotation {
            lock(&self.used_refresh_tokens).insert(token.to_owned(), grant);
        }
        lock(&self.refresh_log).push((grant, std::time::Instant::now()));
        let renewed = self.new_refresh_tokens.load(Ordering::SeqCst);
        ResponseTemplate::new(200)
            .set_body_json(self.bound(self.issue_for(&scopes, renewed, grant), jkt))
    }
}

fn oauth_error(status: u16, error: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({"error": error}))
}

struct Token(Arc<AsState>);

impl Respond for Token {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let state = &self.0;
        let form = form(&request.body);
        let basic = request
            .headers
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Basic "))
            .and_then(|encoded| STANDARD.decode(encoded).ok())
            .map(|decoded| String::from_utf8_lossy(&decoded).into_owned());
        lock(&state.tokens).push(TokenRequest {
            form: form.clone(),
            basic,
        });
        state.token_requests_seen.send_modify(|seen| *seen += 1);
        let delay = *lock(&state.token_delay);
        if let Some((status, body)) = lock(&state.token_answer).clone() {
            return ResponseTemplate::new(status)
                .insert_header("content-type", "application/json")
                .set_body_string(body)
                .set_delay(delay);
        }
        // DPoP: a proof is checked (and a nonce asked for) before anything is used up; a
        // request without one gets a Bearer token.
        let dpop = &state.resource.dpop;
        let jkt = match header(request, "dpop").filter(|_| dpop.is_on()) {
            Some(proof) => {
                let htu = format!("{}/token", state.issuer);
                match dpop.check(At::Token, Some(proof), "POST", &htu, None, false) {
                    Ok(jkt) => Some(jkt),
                    Err(refusal) => {
                        let mut answer = oauth_error(400, refusal.error);
                        if let Some(nonce) = refusal.nonce {
                            answer = answer.insert_header("dpop-nonce", nonce.as_str());
                        }
                        return answer;
                    }
                }
            }
            None => None,
        };
        let jkt = jkt.as_deref();
        let withheld = lock(&state.withheld).clone();
        let scopes: Vec<String> = form
            .get("scope")
            .map(|scope| {
                scope
                    .split_whitespace()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
            .into_iter()
            .filter(|scope| !withheld.contains(scope))
            .collect();
        let answer = match form.get("grant_type").map(String::as_str) {
            Some("client_credentials") => ResponseTemplate::new(200)
                .set_body_json(state.bound(state.issue(&scopes, false), jkt)),
            Some("authorization_code") => {
                let code = form.get("code").cloned().unwrap_or_default();
                let Some((challenge, scopes)) = lock(&state.codes).remove(&code) else {
                    return oauth_error(400, "invalid_grant");
                };
                let verifier = form.get("code_verifier").cloned().unwrap_or_default();
                let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
                if computed != challenge {
                    return oauth_error(400, "invalid_grant");
                }
                ResponseTemplate::new(200)
                    .set_body_json(state.bound(state.issue(&scopes, true), jkt))
            }
            Some("refresh_token") => {
                let token = form.get("refresh_token").cloned().unwrap_or_default();
                let stall = state
                    .stall_refreshes
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
                if stall {
                    return oauth_error(503, "temporarily_unavailable")
                        .set_delay(Duration::from_secs(60));
                }
                match *lock(&state.refresh_answer) {
                    RefreshAnswer::Fail => oauth_error(500, "server_error"),
                    RefreshAnswer::Revoked => oauth_error(400, "invalid_grant"),
                    RefreshAnswer::Grant => state.refresh(&token, jkt),
                }
            }
            // An assertion that says it is invalid is refused, as an expired or forged
            // one would be.
            Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
                if form
                    .get("assertion")
                    .is_some_and(|assertion| assertion.starts_with("invalid")) =>
            {
                oauth_error(400, "invalid_grant")
            }
            Some("urn:ietf:params:oauth:grant-type:jwt-bearer") => {
                // Enterprise-managed (an ID-JAG) or a workload identity: the assertion
                // becomes an access token (no refresh token).
                let n = state.issued.fetch_add(1, Ordering::SeqCst);
                let access = format!("at-ema-{n}-0123456789abcdef");
                state.resource.accept(&access, Vec::new());
                ResponseTemplate::new(200).set_body_json(json!({
                    "access_token": access,
                    "token_type": lock(&state.token_type).clone(),
                    "expires_in": *lock(&state.expires_in),
                }))
            }
            _ => oauth_error(400, "unsupported_grant_type"),
        };
        answer.set_delay(delay)
    }
}

struct Authorize(Arc<AsState>);

impl Respond for Authorize {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let state = &self.0;
        let query: HashMap<String, String> = request.url.query_pairs().into_owned().collect();
        lock(&state.authorizations).push(query.clone());
        let code = format!(
            "authcode-{}-9f8e7d6c5b4a",
            state.issued.fetch_add(1, Ordering::SeqCst)
        );
        let scopes = query
            .get("scope")
            .map(|scope| scope.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default();
        lock(&state.codes).insert(
            code.clone(),
            (
                query.get("code_challenge").cloned().unwrap_or_default(),
                scopes,
            ),
        );
        let iss = match *lock(&state.iss) {
            Iss::Correct => state.issuer.clone(),
            Iss::Wrong => "https://attacker.example".to_owned(),
        };
        let mut location = url::Url::parse(&query["redirect_uri"]).unwrap();
        location
            .query_pairs_mut()
            .append_pair("code", &code)
            .append_pair("state", &query["state"])
            .append_pair("iss", &iss);
        ResponseTemplate::new(302).insert_header("location", location.as_str())
    }
}

struct Register(Arc<AsState>);

impl Respond for Register {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let n = self.0.registrations.fetch_add(1, Ordering::SeqCst);
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        ResponseTemplate::new(201).set_body_json(json!({
            "client_id": format!("dyn-client-{n}"),
            "redirect_uris": body["redirect_uris"],
            "token_endpoint_auth_method": "none",
        }))
    }
}

struct AsMetadata(Arc<AsState>);

impl Respond for AsMetadata {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let issuer = &self.0.issuer;
        let mut metadata = json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": format!("{issuer}/token"),
            "registration_endpoint": format!("{issuer}/register"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": *lock(&self.0.auth_methods),
            "token_endpoint_auth_signing_alg_values_supported": ["ES256", "RS256"],
            "authorization_response_iss_parameter_supported": true,
        });
        if self.0.resource.dpop.is_on() {
            metadata["dpop_signing_alg_values_supported"] = json!(["ES256"]);
        }
        if let Some(fields) = metadata.as_object_mut() {
            for (field, value) in lock(&self.0.metadata_patch).iter() {
                if value.is_null() {
                    fields.remove(field);
                } else {
                    fields.insert(field.clone(), value.clone());
                }
            }
        }
        ResponseTemplate::new(200).set_body_json(metadata)
    }
}

/// The authorization server.
#[derive(Debug)]
pub struct AuthServer {
    /// Kept: the server stops when dropped.
    _server: MockServer,
    /// Its settings and what it saw.
    pub state: Arc<AsState>,
}

impl AuthServer {
    /// An authorization server for `resource`'s tokens, issuing 1-hour tokens.
    pub async fn start(server: MockServer, resource: Arc<ResourceState>) -> Self {
        let state = Arc::new(AsState {
            resource,
            issuer: server.uri(),
            auth_methods: Mutex::new(vec!["client_secret_basic", "client_secret_post", "none"]),
            expires_in: Mutex::new(3600),
            refresh_answer: Mutex::new(RefreshAnswer::Grant),
            iss: Mutex::new(Iss::Correct),
            token_delay: Mutex::new(Duration::ZERO),
            token_type: Mutex::new("Bearer".to_owned()),
            token_answer: Mutex::default(),
            metadata_patch: Mutex::default(),
            withheld: Mutex::default(),
            tokens: Mutex::default(),
            authorizations: Mutex::default(),
            registrations: AtomicUsize::new(0),
            rotation: std::sync::atomic::AtomicBool::new(false),
            reuse_detection: std::sync::atomic::AtomicBool::new(true),
            new_refresh_tokens: std::sync::atomic::AtomicBool::new(true),
            stall_refreshes: AtomicUsize::new(0),
            token_requests_seen: tokio::sync::watch::Sender::new(0),
            reuses: AtomicUsize::new(0),
            refresh_log: Mutex::default(),
            codes: Mutex::default(),
            refresh_tokens: Mutex::default(),
            used_refresh_tokens: Mutex::default(),
            grant_tokens: Mutex::default(),
            grants: AtomicUsize::new(0),
            issued: AtomicUsize::new(0),
        });
        Mock::given(method("GET"))
            .and(path("/.well-known/oauth-authorization-server"))
            .respond_with(AsMetadata(Arc::clone(&state)))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/token"))
            .respond_with(Token(Arc::clone(&state)))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/authorize"))
            .respond_with(Authorize(Arc::clone(&state)))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/register"))
            .respond_with(Register(Arc::clone(&state)))
            .mount(&server)
            .await;
        Self {
            _server: server,
            state,
        }
    }
}

/// A resource server and its authorization server.
#[derive(Debug)]
pub struct Servers {
    /// The MCP resource server.
    pub resource: Resource,
    /// The authorization server it names.
    pub auth: AuthServer,
}

impl Servers {
    /// Starts a resource server and its authorization server.
    pub async fn start() -> Self {
        let as_server = MockServer::start().await;
        let resource = Resource::start(&as_server.uri()).await;
        let auth = AuthServer::start(as_server, Arc::clone(&resource.state)).await;
        Self { resource, auth }
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        self.resource.url()
    }

    /// The authorization server's issuer.
    pub fn issuer(&self) -> String {
        self.auth.state.issuer.clone()
    }
}

/// A response as a browser gets it: status, `Location`, body.
#[derive(Debug)]
pub struct Page {
    /// The HTTP status.
    pub status: u16,
    /// The `Location` header, if any.
    pub location: Option<String>,
    /// The body (at most 64 KiB of the response are read).
    pub body: String,
}

/// What a browser would do with a URL: a plain HTTP/1.1 GET on `http` (the servers here
/// are loopback), never following a redirect, reading at most 64 KiB.
///
/// # Errors
/// A URL that does not parse, is not `http` or has no host, or a connection or I/O
/// failure (an answer that is not HTTP is a page of status 0).
pub async fn get(url: &str) -> Result<Page, Box<dyn std::error::Error + Send + Sync>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let url = url::Url::parse(url)?;
    if url.scheme() != "http" {
        return Err(format!("{url} is not a loopback http URL").into());
    }
    let host = url.host_str().ok_or("no host")?.to_owned();
    let port = url.port_or_known_default().ok_or("no port")?;
    let mut stream = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
    let target = match url.query() {
        Some(query) => format!("{}?{query}", url.path()),
        None => url.path().to_owned(),
    };
    stream
        .write_all(
            format!("GET {target} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .await?;
    let mut response = Vec::new();
    (&mut stream)
        .take(64 * 1024)
        .read_to_end(&mut response)
        .await?;
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|status| status.parse().ok())
        .unwrap_or(0);
    let location = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("location")
            .then(|| value.trim().to_owned())
    });
    Ok(Page {
        status,
        location,
        body: body.to_owned(),
    })
}

/// An identity provider for enterprise-managed authorization: its token endpoint turns a
/// tenant's identity token into an ID-JAG for the authorization server `audience`.
#[derive(Debug)]
pub struct IdentityProvider {
    /// The wiremock server (its URI is the identity provider's issuer).
    pub server: MockServer,
    /// The form of every token exchange, in order.
    pub exchanges: Arc<Mutex<Vec<HashMap<String, String>>>>,
}

struct Exchange {
    issuer: String,
    exchanges: Arc<Mutex<Vec<HashMap<String, String>>>>,
}

impl Respond for Exchange {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let form = form(&request.body);
        lock(&self.exchanges).push(form.clone());
        if !form
            .get("subject_token")
            .is_some_and(|token| token.starts_with("idtoken-"))
        {
            return oauth_error(400, "invalid_grant");
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let part = |value: Value| URL_SAFE_NO_PAD.encode(value.to_string());
        let jag = format!(
            "{}.{}.{}",
            part(json!({"alg": "ES256", "typ": "oauth-id-jag+jwt"})),
            part(json!({
                "iss": self.issuer,
                "sub": "user-1",
                "aud": form["audience"],
                "client_id": "ema-client",
                "jti": format!("jti-{now}"),
                "exp": now + 300,
                "iat": now,
                "resource": form["resource"],
            })),
            URL_SAFE_NO_PAD.encode(b"signature")
        );
        ResponseTemplate::new(200).set_body_json(json!({
            "access_token": jag,
            "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "token_type": "N_A",
        }))
    }
}

impl IdentityProvider {
    /// Starts an identity provider whose ID-JAGs name its own URI as issuer.
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        let exchanges = Arc::default();
        Mock::given(method("POST"))
            .and(path("/token"))
            .respond_with(Exchange {
                issuer: server.uri(),
                exchanges: Arc::clone(&exchanges),
            })
            .mount(&server)
            .await;
        Self { server, exchanges }
    }
}
