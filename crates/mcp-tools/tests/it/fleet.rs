//! Several `mcp-tools` processes sharing one credential store and one grant, against an
//! authorization server that rotates refresh tokens and revokes a grant whose used
//! refresh token comes back (RFC 9700 §4.14.2).

use std::{
    sync::atomic::Ordering,
    time::{Duration, SystemTime},
};

use brain_mcp_testkit::oauth::Servers;
use brain_tools::{CredentialStore, Expected, FileCredentialStore, GrantKey, Secret, StoredGrant};
use serde_json::{Value, json};

use crate::support::{config, spawn};

/// The servers, with refresh tokens that rotate and reuse that revokes.
async fn rotating() -> Servers {
    let servers = Servers::start().await;
    servers.auth.state.rotation.store(true, Ordering::SeqCst);
    servers
}

/// An OAuth binding `echo` for tenant acme, pinned to the authorization server.
fn binding(servers: &Servers) -> Value {
    json!([{
        "name": "echo",
        "input_schema": {"type": "object"},
        "url": servers.url(),
        "mcp_tool": "echo",
        "tenants": ["acme"],
        "auth": {"type": "oauth", "issuer": servers.issuer()},
    }])
}

/// Stores acme's grant, its access token expired an hour ago; returns the grant's
/// number at the authorization server.
async fn expired_grant(servers: &Servers, store: &FileCredentialStore) -> usize {
    let scopes = vec!["files:read".to_owned()];
    let (access, refresh) = ("at-acme-stored-0123456789", "rt-acme-stored-0123456789");
    let mut grant = StoredGrant::new("pre-registered-client");
    grant.access_token = Some(Secret::new(access));
    grant.refresh_token = Some(Secret::new(refresh));
    grant.set_lifetime(
        SystemTime::now() - Duration::from_secs(7200),
        Some(Duration::from_secs(3600)),
    );
    grant.scopes = scopes.clone();
    let key = GrantKey::new("acme", servers.url(), servers.issuer());
    let _ = store.save(&key, &grant, Expected::Any).await.unwrap();
    servers.resource.state.accept(access, scopes.clone());
    servers.auth.state.knows_refresh_token(refresh, scopes)
}

fn call_args<'a>(path: &'a str, store: &'a str) -> [&'a str; 11] {
    [
        "call", "--config", path, "--tool", "echo", "--tenant", "acme", "--args", "{}", "--store",
        store,
    ]
}

/// The `tool.result` line of a finished `mcp-tools call`.
async fn result_of(spawned: crate::support::Spawned) -> Value {
    let output = tokio::time::timeout(Duration::from_secs(60), spawned.child.wait_with_output())
        .await
        .expect("the call ends")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["type"] == "tool.result")
        .unwrap_or_else(|| panic!("no tool.result:\n{stdout}\n{stderr}"))
}

/// What the store holds for acme afterwards.
async fn acme(servers: &Servers, store: &FileCredentialStore) -> StoredGrant {
    let key = GrantKey::new("acme", servers.url(), servers.issuer());
    store
        .load(&key)
        .await
        .unwrap()
        .expect("the grant is stored")
        .grant
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_processes_on_one_store_refresh_an_expired_grant_once() {
    let servers = rotating().await;
    let dir = tempfile::tempdir().unwrap();
    let grants = tempfile::tempdir().unwrap();
    let store = FileCredentialStore::new(grants.path());
    let grant = expired_grant(&servers, &store).await;
    let path = config(&dir, binding(&servers));
    let location = grants.path().to_string_lossy().into_owned();
    let processes: Vec<_> = (0..5)
        .map(|_| spawn(&call_args(&path, &location), &[]))
        .collect();
    for process in processes {
        let result = result_of(process).await;
        assert_eq!(result["is_error"], false, "{result}");
        assert_eq!(result["content"][0]["text"], "ok");
    }
    let state = &servers.auth.state;
    assert_eq!(state.refreshes_per_grant()[&grant].len(), 1, "one refresh");
    assert_eq!(state.reuses.load(Ordering::SeqCst), 0, "no reuse detected");
    let after = acme(&servers, &store).await;
    assert!(after.is_usable(), "a usable grant is stored: {after:?}");
    // Every call carried the one refreshed token.
    let bearers: Vec<_> = servers
        .resource
        .state
        .calls_seen()
        .into_iter()
        .map(|(bearer, _)| bearer)
        .collect();
    assert_eq!(bearers.len(), 5);
    assert_eq!(
        bearers[0].as_deref(),
        after.access_token.as_ref().map(Secret::expose)
    );
    assert!(bearers.iter().all(|bearer| bearer == &bearers[0]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_process_that_holds_the_lease_mid_refresh_loses_nothing() {
    let servers = rotating().await;
    let dir = tempfile::tempdir().unwrap();
    let grants = tempfile::tempdir().unwrap();
    let store = FileCredentialStore::new(grants.path());
    let grant = expired_grant(&servers, &store).await;
    let path = config(&dir, binding(&servers));
    let location = grants.path().to_string_lossy().into_owned();
    // The first refresh request stalls at the authorization server (it never gets to it).
    servers
        .auth
        .state
        .stall_refreshes
        .store(1, Ordering::SeqCst);
    let mut seen = servers.auth.state.token_requests_seen.subscribe();
    let mut holder = spawn(&call_args(&path, &location), &[]);
    tokio::time::timeout(Duration::from_secs(30), seen.wait_for(|n| *n >= 1))
        .await
        .expect("the first process asks for a refresh")
        .unwrap();
    // The others start while it holds the lease, and it dies: the OS frees its lock.
    let others: Vec<_> = (0..4)
        .map(|_| spawn(&call_args(&path, &location), &[]))
        .collect();
    holder.child.start_kill().unwrap();
    let status = holder.child.wait().await.unwrap();
    assert!(!status.success());
    for process in others {
        let result = result_of(process).await;
        assert_eq!(result["is_error"], false, "{result}");
    }
    let state = &servers.auth.state;
    assert_eq!(
        state.refreshes_per_grant()[&grant].len(),
        1,
        "one refresh granted"
    );
    assert_eq!(state.reuses.load(Ordering::SeqCst), 0);
    assert!(acme(&servers, &store).await.is_usable());
}

#[tokio::test]
async fn a_grant_file_that_cannot_be_read_is_named_and_logout_repairs_it() {
    let servers = rotating().await;
    let dir = tempfile::tempdir().unwrap();
    let grants = tempfile::tempdir().unwrap();
    let store = FileCredentialStore::new(grants.path());
    expired_grant(&servers, &store).await;
    let key = GrantKey::new("acme", servers.url(), servers.issuer());
    let file = store.file(&key);
    std::fs::write(&file, b"{\"version\": 2, \"tenant\": ").unwrap();
    let path = config(&dir, binding(&servers));
    let location = grants.path().to_string_lossy().into_owned();
    let named = file.display().to_string();

    let result = result_of(spawn(&call_args(&path, &location), &[])).await;
    assert_eq!(result["error"]["kind"], "credential_store", "{result}");
    assert_eq!(result["error"]["delivery"], "not_sent");
    let message = result["error"]["message"].as_str().unwrap();
    // The message says what to run, exactly: the store included.
    let flags = format!("--config {path} --tool echo --tenant acme --store {location}");
    let logout = format!("mcp-tools logout {flags}");
    let login = format!("mcp-tools login {flags}");
    assert!(
        message.contains(&named)
            && message.ends_with(&format!(
                ": run `{logout}` to remove it, or `{login}` to make it again"
            )),
        "{message}"
    );
    assert_eq!(servers.auth.state.token_requests("refresh_token").len(), 0);

    let check = crate::support::mcp_tools(
        &["check", "--config", &path, "--live", "--store", &location],
        &[],
    )
    .await;
    assert!(
        check.stdout.contains(
            "echo: cannot read tenant acme's grant (credential_store): the credential store holds a grant it cannot read: "
        ) && check.stdout.contains(&named)
            && check.stdout.contains(&format!(
            "; run `{logout}` to remove it, or `{login}` to make it again\n"
        )),
        "{}\n{}",
        check.stdout,
        check.stderr
    );
    // The command as printed, run by a shell, repairs the store.
    let printed = message
        .split('`')
        .nth(1)
        .expect("a command in backquotes")
        .strip_prefix("mcp-tools ")
        .unwrap();
    let logout = tokio::process::Command::new("bash")
        .args([
            "-c",
            &format!("\"$0\" {printed}"),
            env!("CARGO_BIN_EXE_mcp-tools"),
        ])
        .output()
        .await
        .unwrap();
    let logout = crate::support::Run {
        code: logout.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&logout.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&logout.stderr).into_owned(),
        elapsed: Duration::ZERO,
    };
    assert_eq!(logout.code, 0, "{}\n{}", logout.stdout, logout.stderr);
    assert!(
        logout.stdout.contains("removed 1 grant"),
        "{}",
        logout.stdout
    );
    assert!(!file.exists());
    // Now the tenant simply has no grant: the usual message, naming the login.
    let result = result_of(spawn(&call_args(&path, &location), &[])).await;
    assert_eq!(
        result["error"]["kind"], "authorization_required",
        "{result}"
    );
}
