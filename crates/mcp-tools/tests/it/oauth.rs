//! `login`, `logout`, `check --live` and `call` with OAuth bindings: the real binary
//! against a scripted authorization server and resource server, a test playing the
//! browser (it opens the printed URL, and follows the redirect to the binary's listener).

use std::{os::unix::fs::PermissionsExt, path::Path, time::Duration};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use brain_mcp_testkit::oauth::{Iss, RefreshAnswer, Servers, get, lock};

use crate::support::{config, mcp_tools, spawn};

/// `mcp-tools login` for the binding of `tool`, as `tenant`, with grants kept in `store`.
fn login_args<'a>(path: &'a str, tool: &'a str, tenant: &'a str, store: &'a str) -> [&'a str; 9] {
    [
        "login", "--config", path, "--tool", tool, "--tenant", tenant, "--store", store,
    ]
}

/// A loopback port nothing listens on (bound, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One OAuth binding (`echo`) for tenants acme and globex, its grant's redirect at `port`.
fn binding(servers: &Servers, port: u16) -> Value {
    json!([{
        "name": "echo",
        "input_schema": {"type": "object"},
        "url": servers.url(),
        "mcp_tool": "echo",
        "tenants": ["acme", "globex"],
        "auth": {
            "type": "oauth",
            "redirect_uri": format!("http://127.0.0.1:{port}/callback"),
            "issuer": servers.issuer(),
        },
    }])
}

/// The grant files in a store directory.
fn grant_files(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs `mcp-tools login` and plays the person: reads the authorization URL the binary
/// prints, "opens" it (the authorization server redirects at once), and follows the
/// redirect to the binary's loopback listener. Returns (exit code, stdout, stderr, the
/// page the listener answered).
async fn login(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String, String) {
    let mut spawned = spawn(args, env);
    let stderr = spawned.child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            seen.push(line.clone());
            if line.trim().starts_with("http") && line.contains("/authorize?") {
                return line.trim().to_owned();
            }
        }
        panic!("no authorization URL printed: {seen:?}");
    })
    .await
    .expect("the authorization URL is printed within 30 s");
    let redirect = get(&url).await.expect("the authorization server answers");
    assert_eq!(redirect.status, 302, "{}", redirect.body);
    let callback = redirect.location.expect("a redirect");
    assert!(callback.contains("/callback?code="), "{callback}");
    let page = get(&callback).await.expect("the callback listener answers");
    assert_eq!(page.status, 200, "{}", page.body);
    let rest = tokio::spawn(async move {
        let mut rest = Vec::new();
        while let Ok(Some(line)) = lines.next_line().await {
            rest.push(line);
        }
        rest
    });
    let output = tokio::time::timeout(Duration::from_secs(30), spawned.child.wait_with_output())
        .await
        .expect("login ends")
        .unwrap();
    seen.extend(rest.await.unwrap());
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        seen.join("\n"),
        page.body,
    )
}

#[tokio::test]
async fn login_stores_a_grant_that_calls_use_check_reports_and_logout_removes() {
    let servers = Servers::start().await;
    let dir = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let xdg = state.path().to_string_lossy().into_owned();
    let env = [("XDG_STATE_HOME", xdg.as_str())];
    let path = config(&dir, binding(&servers, free_port()));
    let store = state.path().join("brain-mcp-tools").join("credentials");

    // Login, into the default store ($XDG_STATE_HOME/brain-mcp-tools/credentials).
    let (code, stdout, stderr, page) = login(
        &[
            "login", "--config", &path, "--tool", "echo", "--tenant", "acme",
        ],
        &env,
    )
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with(&format!(
            "tenant acme is authorized for {}: issuer {}",
            servers.url(),
            servers.issuer()
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("refreshed with its refresh token"),
        "{stdout}"
    );
    assert!(page.contains("Authorized"), "{page}");
    assert!(stderr.contains("To authorize tenant acme for"), "{stderr}");
    let files = grant_files(&store);
    assert_eq!(files.len(), 1, "one grant in {}", store.display());
    let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&files[0]), 0o600);
    assert_eq!(mode(&store), 0o700);
    let record: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    assert_eq!(record["tenant"], "acme");
    let issued = record["access_token"].as_str().unwrap().to_owned();
    // No token or code in what the person sees.
    for text in [&stdout, &stderr] {
        assert!(!text.contains(&issued), "{text}");
        assert!(!text.contains("rt-"), "{text}");
        assert!(!text.contains("authcode-"), "{text}");
    }
    let exchanges = servers
        .auth
        .state
        .token_requests("authorization_code")
        .len();
    assert_eq!(exchanges, 1);

    // check --live: acme has a grant; globex has none, with the command to run.
    let run = mcp_tools(&["check", "--config", &path, "--live"], &env).await;
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("echo: tenant acme's grant: issuer"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(&format!(
            "echo: tenant globex has no grant for {}; run `mcp-tools login --config {path} --tool echo --tenant globex`",
            servers.url()
        )),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("echo (echo): matches the server"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr
            .contains("mcp-tools: 1 tenant grant is missing or unusable"),
        "{}",
        run.stderr
    );

    // A call as acme carries the stored token; no new authorization.
    let run = mcp_tools(
        &[
            "call", "--config", &path, "--tenant", "acme", "--tool", "echo", "--args", "{}",
            "--format", "json",
        ],
        &env,
    )
    .await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let seen = servers.resource.state.calls_seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0.as_deref(), Some(issued.as_str()));
    assert_eq!(
        servers
            .auth
            .state
            .token_requests("authorization_code")
            .len(),
        1
    );
    assert!(!run.stdout.contains(&issued), "{}", run.stdout);

    // A call as globex is refused before anything is sent, naming the login.
    let run = mcp_tools(
        &[
            "call", "--config", &path, "--tenant", "globex", "--tool", "echo", "--args", "{}",
            "--format", "json",
        ],
        &env,
    )
    .await;
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let last: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["error"]["kind"], "authorization_required");
    let message = last["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "run `mcp-tools login --config {path} --tool echo --tenant globex`"
        )),
        "{message}"
    );
    assert_eq!(servers.resource.state.calls_seen().len(), 1);

    // Logout removes the file; check --live reports acme again.
    let run = mcp_tools(
        &[
            "logout", "--config", &path, "--tool", "echo", "--tenant", "acme",
        ],
        &env,
    )
    .await;
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.starts_with("removed 1 grant of tenant acme for"),
        "{}",
        run.stdout
    );
    let left: Vec<Value> = grant_files(&store)
        .iter()
        .map(|file| serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap())
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let run = mcp_tools(
        &[
            "logout", "--config", &path, "--tool", "echo", "--tenant", "acme",
        ],
        &env,
    )
    .await;
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("nothing to remove"), "{}", run.stdout);
    let run = mcp_tools(&["check", "--config", &path, "--live"], &env).await;
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.contains("echo: tenant acme has no grant for"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("echo: cannot compare: no tenant of these bindings has a usable grant"),
        "{}",
        run.stdout
    );
}

#[tokio::test]
async fn login_with_a_url_and_an_auth_object_into_a_given_store() {
    let servers = Servers::start().await;
    let store = tempfile::tempdir().unwrap();
    let store_path = store.path().to_string_lossy().into_owned();
    let auth = json!({
        "type": "oauth",
        "redirect_uri": format!("http://localhost:{}/callback", free_port()),
    })
    .to_string();
    let (code, stdout, stderr, _) = login(
        &[
            "login",
            "--url",
            &servers.url(),
            "--auth",
            &auth,
            "--tenant",
            "acme",
            "--store",
            &store_path,
        ],
        &[],
    )
    .await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("stored in {store_path}")),
        "{stdout}"
    );
    assert_eq!(grant_files(store.path()).len(), 1);
    // Discovery with the same auth object lists the tools with the stored grant, and the
    // bindings carry the auth object.
    let run = mcp_tools(
        &[
            "-url",
            &servers.url(),
            "-tenant",
            "acme",
            "--auth",
            &auth,
            "--store",
            &store_path,
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bindings: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(bindings[0]["mcp_tool"], "echo");
    assert_eq!(bindings[0]["auth"]["type"], "oauth");
    assert_eq!(
        servers
            .auth
            .state
            .token_requests("authorization_code")
            .len(),
        1
    );
}

#[tokio::test]
async fn discovery_of_a_protected_server_without_a_grant_names_the_login() {
    let servers = Servers::start().await;
    let store = tempfile::tempdir().unwrap();
    let store_path = store.path().to_string_lossy().into_owned();
    let run = mcp_tools(
        &[
            "-url",
            &servers.url(),
            "-tenant",
            "acme",
            "--auth",
            r#"{"type": "oauth"}"#,
            "--store",
            &store_path,
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.is_empty());
    assert!(
        run.stderr.contains(&format!(
            "authorize tenant acme first: mcp-tools login --url {} --auth '{{\"type\": \"oauth\"}}' --tenant acme --store {store_path}",
            servers.url()
        )),
        "{}",
        run.stderr
    );
    assert!(lock(&servers.auth.state.authorizations).is_empty());
    assert!(grant_files(store.path()).is_empty());
}

#[tokio::test]
async fn discovery_with_client_credentials_copies_the_auth_object_and_no_secret() {
    let servers = Servers::start().await;
    let auth = r#"{"type": "client_credentials", "client_id": "brain-host", "client_secret_env": "TEST_CLIENT_SECRET", "token_endpoint_auth_method": "client_secret_basic"}"#;
    let run = mcp_tools(
        &["-url", &servers.url(), "-tenant", "acme", "--auth", auth],
        &[("TEST_CLIENT_SECRET", "cs-secret-0123456789")],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let bindings: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        bindings[0]["auth"],
        json!({
            "type": "client_credentials",
            "client_id": "brain-host",
            "client_secret_env": "TEST_CLIENT_SECRET",
            "token_endpoint_auth_method": "client_secret_basic",
        })
    );
    assert!(!run.stdout.contains("cs-secret"));
    assert!(!run.stderr.contains("cs-secret"));
    let tokens = servers.auth.state.token_requests("client_credentials");
    assert_eq!(tokens.len(), 1);
    assert_eq!(
        tokens[0].basic.as_deref(),
        Some("brain-host:cs-secret-0123456789")
    );
    // The pin is suggested, not required.
    assert!(
        run.stderr.contains("--auth.issuer: without issuer"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn login_refuses_what_it_cannot_use() {
    let servers = Servers::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(&dir, binding(&servers, free_port()));
    let store = tempfile::tempdir().unwrap();
    let store_path = store.path().to_string_lossy().into_owned();
    let run = mcp_tools(&login_args(&path, "echo", "initech", &store_path), &[]).await;
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stderr.trim(),
        "mcp-tools: the binding is not for tenant initech (its tenants: acme, globex); a grant for it would never be used"
    );
    let run = mcp_tools(&login_args(&path, "nope", "acme", &store_path), &[]).await;
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("has no tool named nope; it has: echo"),
        "{}",
        run.stderr
    );
    let run = mcp_tools(&["login", "--tenant", "acme"], &[]).await;
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(lock(&servers.auth.state.authorizations).is_empty());
}

#[tokio::test]
async fn login_refuses_a_redirect_that_names_another_issuer() {
    let servers = Servers::start().await;
    *lock(&servers.auth.state.iss) = Iss::Wrong;
    let dir = tempfile::tempdir().unwrap();
    let path = config(&dir, binding(&servers, free_port()));
    let store = tempfile::tempdir().unwrap();
    let store_path = store.path().to_string_lossy().into_owned();
    let (code, stdout, stderr, _) =
        login(&login_args(&path, "echo", "acme", &store_path), &[]).await;
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(stderr.contains("no grant is stored"), "{stderr}");
    assert!(grant_files(store.path()).is_empty());
    // The code never reached the token endpoint (RFC 9207: a mix-up is stopped first).
    assert!(
        servers
            .auth
            .state
            .token_requests("authorization_code")
            .is_empty()
    );
}

#[tokio::test]
async fn a_revoked_refresh_token_sends_the_tenant_back_to_login() {
    let servers = Servers::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(&dir, binding(&servers, free_port()));
    let store = tempfile::tempdir().unwrap();
    let store_path = store.path().to_string_lossy().into_owned();
    let (code, stdout, stderr, _) =
        login(&login_args(&path, "echo", "acme", &store_path), &[]).await;
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    // The resource server stops accepting the access token, and the authorization server
    // has revoked the refresh token: the call's 401 leads to one refresh, which fails.
    let record: Value =
        serde_json::from_slice(&std::fs::read(&grant_files(store.path())[0]).unwrap()).unwrap();
    servers
        .resource
        .state
        .revoke(record["access_token"].as_str().unwrap());
    *lock(&servers.auth.state.refresh_answer) = RefreshAnswer::Revoked;
    let run = mcp_tools(
        &[
            "call",
            "--config",
            &path,
            "--tenant",
            "acme",
            "--tool",
            "echo",
            "--args",
            "{}",
            "--format",
            "json",
            "--store",
            &store_path,
        ],
        &[],
    )
    .await;
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let last: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["error"]["kind"], "authorization_required", "{last}");
    assert_eq!(last["error"]["delivery"], "not_sent", "{last}");
    let message = last["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "mcp-tools login --config {path} --tool echo --tenant acme"
        )),
        "{message}"
    );
    assert_eq!(servers.auth.state.token_requests("refresh_token").len(), 1);
    assert!(servers.resource.state.calls_seen().is_empty());
}
