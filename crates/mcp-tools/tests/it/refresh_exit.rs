//! A process that ends while its refresh is in flight (its call timed out, Ctrl-C,
//! SIGTERM) against an authorization server that rotates refresh tokens and revokes a
//! grant whose spent refresh token comes back: the rotated token reaches the store before
//! the process exits, with the file store and with PostgreSQL. And a PostgreSQL store
//! that is down, hung, missing its key ring or holding a row altered by hand fails the
//! calls that need it, each as its own result, never the process.

use std::{
    sync::atomic::Ordering,
    time::{Duration, SystemTime},
};

use brain_mcp_testkit::{
    Postgres,
    oauth::{Servers, lock},
};
use brain_tools::{
    CredentialStore, Expected, FileCredentialStore, GrantKey, KeyRing, PostgresCredentialStore,
    PostgresStoreOptions, Secret, StoredGrant,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::support::{config, mcp_tools, spawn};

const KEYS: &str = "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const STORED_REFRESH: &str = "rt-acme-stored-0123456789";
/// The static token of the binding that needs no grant.
const PLAIN_TOKEN: &str = "plain-api-key-0123456789";

/// The servers, rotating refresh tokens (reuse revokes the grant).
async fn rotating() -> Servers {
    let servers = Servers::start().await;
    servers.auth.state.rotation.store(true, Ordering::SeqCst);
    servers
}

/// An OAuth binding `echo` for tenant acme, and a plain one `plain` beside it.
fn bindings(servers: &Servers, timeout_seconds: u64) -> Value {
    json!([
        {
            "name": "echo",
            "input_schema": {"type": "object"},
            "url": servers.url(),
            "mcp_tool": "echo",
            "tenants": ["acme"],
            "timeout_seconds": timeout_seconds,
            "auth": {"type": "oauth", "issuer": servers.issuer()},
        },
        {
            "name": "plain",
            "input_schema": {"type": "object"},
            "url": servers.url(),
            "mcp_tool": "echo",
            "tenants": ["acme"],
            "timeout_seconds": timeout_seconds,
            "token_env": "PLAIN_TOKEN",
        },
    ])
}

fn key(servers: &Servers) -> GrantKey {
    GrantKey::new("acme", servers.url(), servers.issuer())
}

/// Stores acme's grant with its access token expired; returns the grant's number at the
/// authorization server.
async fn expired_grant(servers: &Servers, store: &dyn CredentialStore) -> usize {
    let scopes = vec!["files:read".to_owned()];
    let access = "at-acme-stored-0123456789";
    let mut grant = StoredGrant::new("pre-registered-client");
    grant.access_token = Some(Secret::new(access));
    grant.refresh_token = Some(Secret::new(STORED_REFRESH));
    grant.set_lifetime(
        SystemTime::now() - Duration::from_secs(7200),
        Some(Duration::from_secs(3600)),
    );
    grant.scopes = scopes.clone();
    let _ = store
        .save(&key(servers), &grant, Expected::Any)
        .await
        .unwrap();
    servers.resource.state.accept(access, scopes.clone());
    servers
        .auth
        .state
        .knows_refresh_token(STORED_REFRESH, scopes)
}

/// A running `mcp-tools call`, its stdout and stderr read line by line.
struct Call {
    child: tokio::process::Child,
    stderr: tokio::sync::mpsc::UnboundedReceiver<String>,
    stdout: tokio::task::JoinHandle<String>,
}

impl Call {
    fn start(path: &str, tool: &str, store: &[&str], env: &[(&str, &str)]) -> Self {
        let mut args = vec![
            "call", "--config", path, "--tool", tool, "--tenant", "acme", "--args", "{}",
            "--format", "json",
        ];
        args.extend_from_slice(store);
        let mut env = env.to_vec();
        env.push(("PLAIN_TOKEN", PLAIN_TOKEN));
        let mut spawned = spawn(&args, &env);
        let stderr = spawned.child.stderr.take().unwrap();
        let stdout = spawned.child.stdout.take().unwrap();
        let (lines, receiver) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut stderr = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = stderr.next_line().await {
                let _ = lines.send(line);
            }
        });
        let stdout = tokio::spawn(async move {
            let mut text = String::new();
            let mut stdout = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = stdout.next_line().await {
                text.push_str(&line);
                text.push('\n');
            }
            text
        });
        Self {
            child: spawned.child,
            stderr: receiver,
            stdout,
        }
    }

    /// Sends a signal (`TERM`, `INT`) to the process, as `kill` does.
    fn signal(&self, signal: &str) {
        let status = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().unwrap().to_string())
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal}");
    }

    /// Reads stderr until a line holds `text`; every line read so far.
    async fn stderr_until(&mut self, text: &str, read: &mut Vec<String>) {
        let wait = async {
            while let Some(line) = self.stderr.recv().await {
                let found = line.contains(text);
                read.push(line);
                if found {
                    return;
                }
            }
            panic!("stderr ended without {text:?}: {read:#?}");
        };
        tokio::time::timeout(Duration::from_secs(30), wait)
            .await
            .unwrap_or_else(|_| panic!("no {text:?} on stderr within 30 s"));
    }

    /// Waits for the process to end: its exit code, its `tool.result`, and the rest of
    /// stderr.
    async fn end(mut self, mut read: Vec<String>) -> (i32, Value, Vec<String>) {
        let status = tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("the process ends")
            .unwrap();
        while let Some(line) = self.stderr.recv().await {
            read.push(line);
        }
        let stdout = self.stdout.await.unwrap();
        let result = stdout
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find(|event| event["type"] == "tool.result")
            .unwrap_or_else(|| panic!("no tool.result:\n{stdout}\n{read:#?}"));
        (status.code().unwrap_or(-1), result, read)
    }
}

/// What the store holds for acme now.
async fn stored(servers: &Servers, store: &dyn CredentialStore) -> StoredGrant {
    store
        .load(&key(servers))
        .await
        .unwrap()
        .expect("acme's grant is stored")
        .grant
}

/// The refresh token the authorization server rotated is the one stored: not the spent
/// one, and the next call (in a new process) works without reuse detection.
async fn rotated_and_kept(
    servers: &Servers,
    store: &dyn CredentialStore,
    path: &str,
    store_args: &[&str],
    env: &[(&str, &str)],
) {
    let after = stored(servers, store).await;
    let refresh = after.refresh_token.as_ref().map(Secret::expose);
    assert!(
        refresh.is_some_and(|token| token != STORED_REFRESH),
        "the rotated refresh token is stored: {after:?}"
    );
    *lock(&servers.auth.state.token_delay) = Duration::ZERO;
    let next = Call::start(path, "echo", store_args, env);
    let (code, result, stderr) = next.end(Vec::new()).await;
    assert_eq!(result["is_error"], false, "{result} {stderr:#?}");
    assert_eq!(code, 0);
    assert_eq!(
        servers.auth.state.reuses.load(Ordering::SeqCst),
        0,
        "no refresh token came back after it was rotated"
    );
}

/// A tenant whose grant needs a refresh, in a file store; the authorization server
/// rotates the refresh token at once and answers after `delay`.
struct FileCase {
    servers: Servers,
    _dir: tempfile::TempDir,
    _grants: tempfile::TempDir,
    store: FileCredentialStore,
    path: String,
    location: String,
    grant: usize,
}

impl FileCase {
    async fn new(timeout_seconds: u64, delay: Duration) -> Self {
        let servers = rotating().await;
        let dir = tempfile::tempdir().unwrap();
        let grants = tempfile::tempdir().unwrap();
        let store = FileCredentialStore::new(grants.path());
        let grant = expired_grant(&servers, &store).await;
        *lock(&servers.auth.state.token_delay) = delay;
        let path = config(&dir, bindings(&servers, timeout_seconds));
        let location = grants.path().to_string_lossy().into_owned();
        Self {
            servers,
            _dir: dir,
            _grants: grants,
            store,
            path,
            location,
            grant,
        }
    }

    fn store_args(&self) -> [&str; 2] {
        ["--store", &self.location]
    }

    fn call(&self) -> Call {
        Call::start(&self.path, "echo", &self.store_args(), &[])
    }

    /// Waits until the authorization server has the refresh request.
    async fn refresh_asked(&self) {
        let mut seen = self.servers.auth.state.token_requests_seen.subscribe();
        tokio::time::timeout(Duration::from_secs(30), seen.wait_for(|n| *n >= 1))
            .await
            .expect("the refresh is asked for")
            .unwrap();
    }

    async fn rotated_and_kept(&self) {
        rotated_and_kept(
            &self.servers,
            &self.store,
            &self.path,
            &self.store_args(),
            &[],
        )
        .await;
    }
}

fn said(stderr: &[String], text: &str) -> bool {
    stderr.iter().any(|line| line.contains(text))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_times_out_mid_refresh_saves_the_rotated_token_before_exiting() {
    // The call has 1 s; the authorization server answers after 3 s.
    let case = FileCase::new(1, Duration::from_secs(3)).await;
    let mut call = case.call();
    let mut read = Vec::new();
    call.stderr_until("saving the refreshed grant of tenant acme", &mut read)
        .await;
    let (_, result, stderr) = call.end(read).await;
    assert_eq!(result["error"]["kind"], "timeout", "{result}");
    assert_eq!(result["error"]["delivery"], "not_sent");
    assert!(!said(&stderr, "could not be saved"), "{stderr:#?}");
    let refreshes = case.servers.auth.state.refreshes_per_grant();
    assert_eq!(refreshes[&case.grant].len(), 1, "one refresh");
    case.rotated_and_kept().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_and_ctrl_c_mid_refresh_wait_for_the_rotated_token_to_be_saved() {
    for signal in ["TERM", "INT"] {
        let case = FileCase::new(60, Duration::from_secs(3)).await;
        let mut call = case.call();
        case.refresh_asked().await;
        call.signal(signal);
        let mut read = Vec::new();
        call.stderr_until("saving the refreshed grant of tenant acme", &mut read)
            .await;
        let (_, result, stderr) = call.end(read).await;
        assert_eq!(result["error"]["kind"], "cancelled", "{signal}: {result}");
        assert!(
            !said(&stderr, "could not be saved"),
            "{signal}: {stderr:#?}"
        );
        case.rotated_and_kept().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_ctrl_c_stops_waiting_and_says_what_may_be_lost() {
    // An answer that would take longer than anyone waits.
    let case = FileCase::new(60, Duration::from_secs(25)).await;
    let mut call = case.call();
    case.refresh_asked().await;
    call.signal("INT");
    let mut read = Vec::new();
    call.stderr_until("Ctrl-C again to stop waiting", &mut read)
        .await;
    let stopped_at = std::time::Instant::now();
    call.signal("INT");
    let (_, result, stderr) = call.end(read).await;
    assert!(
        stopped_at.elapsed() < Duration::from_secs(20),
        "the second Ctrl-C ends the wait, not the answer"
    );
    assert_eq!(result["error"]["kind"], "cancelled", "{result}");
    let said = stderr
        .iter()
        .find(|line| line.contains("stopped waiting"))
        .unwrap_or_else(|| panic!("{stderr:#?}"));
    let login = format!(
        "mcp-tools login --config {} --tool echo --tenant acme --store {}",
        case.path, case.location
    );
    assert!(
        said.contains("tenant acme") && said.contains("may be lost") && said.contains(&login),
        "{said}"
    );
}

/// A PostgreSQL store for these tests: the database, and the store the test itself uses.
async fn database() -> (Postgres, PostgresCredentialStore) {
    let database = Postgres::start_new().unwrap_or_else(|error| panic!("{error}"));
    let options = PostgresStoreOptions::new(database.url(), KeyRing::parse(KEYS).unwrap())
        .timeout(Duration::from_secs(2));
    let store = PostgresCredentialStore::connect(options).await.unwrap();
    (database, store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_postgres_the_rotated_token_is_saved_though_the_call_and_the_database_went_away() {
    let servers = rotating().await;
    let dir = tempfile::tempdir().unwrap();
    let (database, store) = database().await;
    expired_grant(&servers, &store).await;
    *lock(&servers.auth.state.token_delay) = Duration::from_secs(3);
    let path = config(&dir, bindings(&servers, 1));
    let url = database.uri();
    let store_args = ["--store", url.as_str()];
    let env = [("MCP_TOOLS_STORE_KEYS", KEYS)];
    let mut seen = servers.auth.state.token_requests_seen.subscribe();

    // The database goes away once the refresh is sent, for longer than the call's
    // timeout, and comes back while the lease holds.
    let mut call = Call::start(&path, "echo", &store_args, &env);
    tokio::time::timeout(Duration::from_secs(30), seen.wait_for(|n| *n >= 1))
        .await
        .expect("the refresh is asked for")
        .unwrap();
    database.stop().unwrap();
    // The process says it waits only once the call's result is printed: the call timed
    // out with the database still away.
    let mut read = Vec::new();
    call.stderr_until("saving the refreshed grant of tenant acme", &mut read)
        .await;
    database.start().unwrap();
    let (_, result, stderr) = call.end(read).await;
    assert_eq!(result["error"]["kind"], "timeout", "{result}");
    assert!(
        !stderr
            .iter()
            .any(|line| line.contains("could not be saved")),
        "{stderr:#?}"
    );
    rotated_and_kept(&servers, &store, &path, &store_args, &env).await;
}

/// A loopback port that accepts connections and never answers (a database that hangs),
/// held open as long as the returned task runs.
async fn hung_port() -> (u16, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    (port, task)
}

/// A loopback port nothing listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_cannot_be_had_fails_the_calls_that_need_it_and_no_other() {
    let servers = rotating().await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(&dir, bindings(&servers, 2));
    servers
        .resource
        .state
        .accept(PLAIN_TOKEN, vec!["files:read".to_owned()]);
    let (hung, _held) = hung_port().await;
    let unreachable = format!("postgres://brain@127.0.0.1:{}/brain", closed_port());
    let hanging = format!("postgres://brain@127.0.0.1:{hung}/brain?connect_timeout=30");
    // (store URL, key ring in the environment, what the case is)
    let cases = [
        (unreachable.as_str(), Some(KEYS), "unreachable"),
        (hanging.as_str(), Some(KEYS), "hung"),
        (unreachable.as_str(), None, "without its key ring"),
    ];
    for (url, keys, case) in cases {
        let env: Vec<(&str, &str)> = keys
            .map(|keys| ("MCP_TOOLS_STORE_KEYS", keys))
            .into_iter()
            .collect();
        let store_args = ["--store", url];
        // A binding that needs no grant never notices.
        let plain = Call::start(&path, "plain", &store_args, &env);
        let (code, result, stderr) = plain.end(Vec::new()).await;
        assert_eq!(code, 0, "{case}: {result} {stderr:#?}");
        assert_eq!(result["is_error"], false, "{case}: {result}");
        // The one that needs the store gets one result saying so, within its timeout.
        let started = std::time::Instant::now();
        let echo = Call::start(&path, "echo", &store_args, &env);
        let (code, result, stderr) = echo.end(Vec::new()).await;
        assert_eq!(code, 1, "{case}: {stderr:#?}");
        assert_eq!(
            result["error"]["kind"], "credential_store",
            "{case}: {result}"
        );
        assert_eq!(result["error"]["delivery"], "not_sent", "{case}");
        let message = result["content"][0]["text"].as_str().unwrap();
        assert!(message.starts_with("echo "), "{case}: {message}");
        if keys.is_none() {
            assert!(message.contains("key ring"), "{case}: {message}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(2 + 5),
            "{case}: the binding's 2 s bound the call, not the store's"
        );
        // check --live checks the plain binding and names the store on the other.
        let mut check_env = env.clone();
        check_env.push(("PLAIN_TOKEN", PLAIN_TOKEN));
        let check = mcp_tools(
            &["check", "--config", &path, "--live", "--store", url],
            &check_env,
        )
        .await;
        assert!(
            check.stdout.contains("plain") && check.stdout.contains("credential_store"),
            "{case}:\n{}\n{}",
            check.stdout,
            check.stderr
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_altered_by_hand_is_named_and_never_panics_the_process() {
    let servers = rotating().await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(&dir, bindings(&servers, 10));
    let (database, store) = database().await;
    let url = database.uri();
    let env = [("MCP_TOOLS_STORE_KEYS", KEYS)];
    for alteration in [
        "ALTER TABLE brain_mcp_grants ALTER COLUMN scopes TYPE text",
        "ALTER TABLE brain_mcp_grants ALTER COLUMN scopes DROP NOT NULL; \
         UPDATE brain_mcp_grants SET scopes = NULL",
    ] {
        expired_grant(&servers, &store).await;
        database.sql(alteration).unwrap();
        let echo = Call::start(&path, "echo", &["--store", &url], &env);
        let (code, result, stderr) = echo.end(Vec::new()).await;
        assert_eq!(code, 1, "{alteration}: {stderr:#?}");
        assert_eq!(result["error"]["kind"], "credential_store", "{result}");
        let message = result["content"][0]["text"].as_str().unwrap();
        assert!(
            message.contains("tenant acme") && message.contains("scopes"),
            "{alteration}: {message}"
        );
        // Put back as this build writes it, for the next case.
        database
            .sql(
                "DELETE FROM brain_mcp_grants; \
                 ALTER TABLE brain_mcp_grants ALTER COLUMN scopes TYPE text[] USING NULL; \
                 ALTER TABLE brain_mcp_grants ALTER COLUMN scopes SET NOT NULL",
            )
            .unwrap();
    }
}
