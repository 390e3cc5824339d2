//! A fleet of gateways, as an operator runs one: three `mcp-tools serve` processes on one
//! PostgreSQL credential store, behind a round-robin load balancer with no affinity (the
//! testkit's `Front`, on loopback), in front of an OAuth-protected server whose
//! authorization server rotates refresh tokens and revokes a grant whose used refresh
//! token comes back. Callers are the TypeScript and python SDK clients, in both eras, one
//! tenant each, each call with an id of its own.
//!
//! CI runs the fleet for [`FLEET_SECONDS`]; `cargo xtask soak` runs it for a minute
//! (`BRAIN_FLEET_SECONDS`).

use std::{
    collections::HashMap,
    sync::{Arc, atomic::Ordering},
    time::{Duration, SystemTime},
};

use brain_mcp_testkit::{Front, Postgres, oauth::Servers};
use brain_tools::{
    CredentialStore, Expected, GrantKey, KeyRing, PostgresCredentialStore, PostgresStoreOptions,
    Secret, StoredGrant,
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// How long the callers call, in CI.
const FLEET_SECONDS: u64 = 15;
/// The key ring the replicas share: it seals the store's grants and the sessions' ids.
const KEYS: &str = "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
/// One tenant per caller.
const TENANTS: [&str; 4] = ["acme", "globex", "initech", "umbrella"];
/// Access tokens' lifetime when they rotate.
const ROTATING_SECONDS: u64 = 2;

/// One `mcp-tools serve` process.
struct Replica {
    child: tokio::process::Child,
    /// `http://127.0.0.1:PORT`.
    base: String,
}

struct Fleet {
    servers: Servers,
    _postgres: Postgres,
    store: Arc<dyn CredentialStore>,
    dir: tempfile::TempDir,
    config: String,
    store_url: String,
    keys: HashMap<&'static str, String>,
    replicas: Vec<Replica>,
    front: Front,
    started: usize,
}

impl Fleet {
    /// Three replicas behind the front; each tenant has a grant in the store whose
    /// access token expired (the first call of each refreshes it). `lifetime`: the
    /// access tokens' `expires_in` from then on (refresh tokens rotate either way).
    async fn start(lifetime: u64) -> Self {
        let servers = Servers::start().await;
        let auth = &servers.auth.state;
        auth.rotation.store(true, Ordering::SeqCst);
        *brain_mcp_testkit::oauth::lock(&auth.expires_in) = lifetime;
        servers
            .resource
            .state
            .enforce_expiry
            .store(true, Ordering::SeqCst);
        let postgres = Postgres::start_new().unwrap();
        let store: Arc<dyn CredentialStore> = Arc::new(
            PostgresCredentialStore::connect(PostgresStoreOptions::new(
                postgres.url(),
                KeyRing::parse(KEYS).unwrap(),
            ))
            .await
            .unwrap(),
        );
        for tenant in TENANTS {
            expired_grant(&servers, store.as_ref(), tenant).await;
        }
        let dir = tempfile::tempdir().unwrap();
        let mut lines = String::new();
        let mut keys = HashMap::new();
        for tenant in TENANTS {
            let (key, line) = brain_mcp_gateway_key(tenant);
            keys.insert(tenant, key);
            lines.push_str(&line);
            lines.push('\n');
        }
        let key_file = dir.path().join("keys");
        std::fs::write(&key_file, lines).unwrap();
        let host = json!({
            "tools": [{
                "name": "echo", "description": "echo, behind OAuth",
                "input_schema": {"type": "object"},
                "url": servers.url(), "mcp_tool": "echo", "tenants": TENANTS,
                "auth": {"type": "oauth", "issuer": servers.issuer()},
                "timeout_seconds": 30,
            }],
            "gateway": {
                "api_keys": key_file.to_string_lossy(),
                "limits": {
                    "drain_notice_seconds": 1,
                    "calls_in_flight_per_tenant": 256,
                    "requests_per_minute_per_tenant": 1_000_000,
                },
            },
        });
        let config = dir.path().join("host.json");
        std::fs::write(&config, host.to_string()).unwrap();
        let config = config.to_string_lossy().into_owned();
        let store_url = postgres.uri();
        let mut replicas = Vec::new();
        for n in 1..=3 {
            replicas.push(replica(dir.path(), &config, &store_url, n).await);
        }
        let bases: Vec<String> = replicas.iter().map(|r| r.base.clone()).collect();
        let fleet = Self {
            servers,
            store_url,
            _postgres: postgres,
            store,
            config,
            dir,
            keys,
            replicas,
            front: Front::start(&bases).await.unwrap(),
            started: 3,
        };
        fleet.until_ready(&[true, true, true]).await;
        fleet
    }

    /// A new replica, in place of the one at `index` (which stopped), in the front too.
    async fn replace(&mut self, index: usize) {
        self.started += 1;
        let replica = replica(self.dir.path(), &self.config, &self.store_url, self.started).await;
        self.front.replace(index, &replica.base);
        self.replicas[index] = replica;
    }

    /// Waits for the front's health checks to see the replicas so.
    async fn until_ready(&self, ready: &[bool]) {
        tokio::time::timeout(Duration::from_secs(30), async {
            while self.front.ready() != ready {
                self.front.checked().await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("the front sees {:?}", self.front.ready()));
    }

    fn url(&self) -> String {
        format!("{}/mcp", self.front.base())
    }

    /// Starts the four callers (TypeScript legacy and 2026-07-28, python legacy and
    /// 2026-07-28), one tenant each, 4 calls at once for `seconds`, each call taking `ms`
    /// upstream; resolves to their reports.
    fn callers(
        &self,
        seconds: u64,
        ms: u64,
    ) -> impl std::future::Future<Output = Vec<Value>> + use<> {
        let (node, python, scripts) = crate::support::sdk_peers();
        let ts = scripts.join("fleet_ts_client.mjs");
        let py = scripts.join("fleet_py_client.py");
        let runs = [
            (&node, &ts, "legacy", TENANTS[0]),
            (&node, &ts, "modern", TENANTS[1]),
            (&python, &py, "legacy", TENANTS[2]),
            (&python, &py, "2026-07-28", TENANTS[3]),
        ];
        let url = self.url();
        let calls: Vec<_> = runs
            .iter()
            .map(|(program, script, era, tenant)| {
                let mut command = tokio::process::Command::new(program);
                command
                    .arg(script)
                    .args([
                        url.as_str(),
                        &self.keys[tenant],
                        era,
                        &seconds.to_string(),
                        "4",
                        tenant,
                        &ms.to_string(),
                    ])
                    .env(
                        "MCP_PEERS_NODE_MODULES",
                        crate::support::peers_dir().join("npm/node_modules"),
                    )
                    .kill_on_drop(true);
                let tenant = *tenant;
                async move {
                    let output =
                        tokio::time::timeout(Duration::from_secs(seconds + 60), command.output())
                            .await
                            .unwrap_or_else(|_| panic!("{tenant}'s caller did not end"))
                            .unwrap();
                    let stdout = String::from_utf8_lossy(&output.stdout);
                    let stderr = String::from_utf8_lossy(&output.stderr);
                    assert!(output.status.success(), "{tenant}:\n{stdout}\n{stderr}");
                    serde_json::from_str::<Value>(stdout.lines().last().unwrap_or_default())
                        .unwrap_or_else(|_| panic!("{tenant}: {stdout}\n{stderr}"))
                }
            })
            .map(tokio::spawn)
            .collect();
        async move {
            let mut reports = Vec::new();
            for call in calls {
                reports.push(call.await.unwrap());
            }
            reports
        }
    }

    /// How often the upstream ran each call id (a call it refused, for a token that had
    /// expired, did not run: the gateway renews the token and sends it again).
    fn upstream_runs(&self) -> HashMap<String, usize> {
        let mut runs = HashMap::new();
        let ran = brain_mcp_testkit::oauth::lock(&self.servers.resource.state.ran).clone();
        for arguments in ran {
            if let Some(id) = arguments["id"].as_str() {
                *runs.entry(id.to_owned()).or_default() += 1;
            }
        }
        runs
    }

    /// Every tenant's grant is still in the store, usable, never revoked, and its refresh
    /// token the one the authorization server holds now (a call of a new replica needs
    /// it: the access tokens have expired, or do soon).
    async fn grants_intact(&self) {
        for tenant in TENANTS {
            let key = GrantKey::new(tenant, self.servers.url(), self.servers.issuer());
            let stored = self
                .store
                .load(&key)
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("{tenant}'s grant is stored"))
                .grant;
            assert!(
                stored.refresh_token.is_some() && !stored.is_revoked(),
                "{tenant}: {stored:?}"
            );
        }
        assert_eq!(
            self.servers.auth.state.reuses.load(Ordering::SeqCst),
            0,
            "no refresh token came back"
        );
    }

    /// SIGTERM to a replica: it drains and exits 0.
    async fn stop(replica: &mut Replica) {
        let pid = replica.child.id().unwrap().to_string();
        let status = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        assert!(status.success());
        let ended = tokio::time::timeout(Duration::from_secs(60), replica.child.wait())
            .await
            .expect("the replica drains and stops")
            .unwrap();
        assert!(ended.success(), "{ended:?}");
    }

    fn log(&self) -> String {
        let mut all = String::new();
        for n in 1..=self.started {
            let path = self.dir.path().join(format!("replica-{n}.log"));
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(20).collect();
            all.push_str(&format!("--- replica {n}\n"));
            for line in tail.into_iter().rev() {
                all.push_str(line);
                all.push('\n');
            }
        }
        all
    }
}

/// A new `mcp-tools serve` on the fleet's config and store; its log in `dir`.
async fn replica(dir: &std::path::Path, config: &str, store_url: &str, n: usize) -> Replica {
    let log = std::fs::File::create(dir.join(format!("replica-{n}.log"))).unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-tools"))
        .args([
            "serve",
            "-v",
            "--config",
            config,
            "--listen",
            "127.0.0.1:0",
            "--store",
            store_url,
        ])
        .env("MCP_TOOLS_STORE_KEYS", KEYS)
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("the replica starts")
        .unwrap()
        .unwrap_or_default();
    let base = first
        .strip_prefix("listening on ")
        .and_then(|url| url.strip_suffix("/mcp"))
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    // Nothing more is printed; the pipe stays open with its reader.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Replica { child, base }
}

/// A plain HTTP client (reqwest is built without a default TLS provider).
fn http() -> reqwest::Client {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .build()
        .unwrap()
}

/// A GET's JSON body (`/readyz`).
async fn get_json(url: &str) -> Value {
    match http().get(url).send().await {
        Ok(response) => response.json().await.unwrap_or(Value::Null),
        Err(_) => Value::Null,
    }
}

fn brain_mcp_gateway_key(tenant: &str) -> (String, String) {
    brain_mcp_gateway::new_api_key(tenant).unwrap()
}

/// Stores a tenant's grant whose access token expired an hour ago, its refresh token
/// known to the authorization server.
async fn expired_grant(servers: &Servers, store: &dyn CredentialStore, tenant: &str) {
    let scopes = vec!["files:read".to_owned()];
    let refresh = format!("rt-{tenant}-stored-0123456789");
    let mut grant = StoredGrant::new("pre-registered-client");
    grant.access_token = Some(Secret::new(format!("at-{tenant}-stored-0123456789")));
    grant.refresh_token = Some(Secret::new(refresh.clone()));
    grant.set_lifetime(
        SystemTime::now() - Duration::from_secs(7200),
        Some(Duration::from_secs(3600)),
    );
    grant.scopes = scopes.clone();
    let key = GrantKey::new(tenant, servers.url(), servers.issuer());
    let _ = store.save(&key, &grant, Expected::Any).await.unwrap();
    servers.auth.state.knows_refresh_token(&refresh, scopes);
}

/// Every caller's calls, ok or not, and their failures.
fn totals(reports: &[Value]) -> (u64, u64, Vec<Value>) {
    let mut calls = 0;
    let mut ok = 0;
    let mut failures = Vec::new();
    for report in reports {
        calls += report["calls"].as_u64().unwrap();
        ok += report["ok"].as_u64().unwrap();
        failures.extend(report["failures"].as_array().unwrap().iter().cloned());
    }
    (calls, ok, failures)
}

fn seconds() -> u64 {
    std::env::var("BRAIN_FLEET_SECONDS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(FLEET_SECONDS)
}

/// The fleet under load with 2-second tokens: no call fails (for authorization or
/// anything else), every call runs upstream exactly once, each grant is refreshed once
/// per renewal across the fleet (never twice for one expiry, whichever replica renews),
/// and no refresh token comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_on_one_postgres_serve_sdk_callers_in_both_eras_without_affinity() {
    let fleet = Fleet::start(ROTATING_SECONDS).await;
    let seconds = seconds();
    let reports = fleet.callers(seconds, 0).await;
    let (calls, ok, failures) = totals(&reports);

    assert!(failures.is_empty(), "{failures:#?}\n{}", fleet.log());
    assert_eq!(ok, calls);
    for report in &reports {
        assert!(report["ok"].as_u64().unwrap() > 0, "{report}");
    }
    // Every call ran upstream once: none twice, none lost.
    let runs = fleet.upstream_runs();
    assert_eq!(runs.len() as u64, ok);
    assert!(runs.values().all(|&n| n == 1));
    // No affinity: every replica served requests.
    let sent = fleet.front.sent();
    assert!(sent.iter().all(|&n| n > 0), "{sent:?}");
    // One refresh per renewal: a token is renewed once half its lifetime passed, so a
    // grant's refreshes are at least that far apart, whichever replica made them.
    let renew_every = Duration::from_secs(ROTATING_SECONDS) / 2;
    let refreshes = fleet.servers.auth.state.refreshes_per_grant();
    assert_eq!(refreshes.len(), TENANTS.len(), "{refreshes:?}");
    for (grant, times) in &refreshes {
        let span = times.last().unwrap().duration_since(times[0]);
        let due = (span.as_millis() / renew_every.as_millis()) as usize + 1;
        assert!(
            times.len() <= due,
            "grant {grant}: {} refreshes in {span:?}, {due} renewals due",
            times.len()
        );
        // While calls flowed the tokens were renewed: more than one renewal in the run.
        assert!(times.len() > 1, "grant {grant}: {times:?}");
    }
    fleet.grants_intact().await;
    eprintln!(
        "{seconds} s: {calls} calls, {} refreshes of {} grants, {} requests refused for an expired token, sent per replica {sent:?}",
        refreshes.values().map(Vec::len).sum::<usize>(),
        refreshes.len(),
        fleet.servers.resource.state.expired.load(Ordering::SeqCst),
    );
}

/// `kill -9` of a replica with calls in flight: each of its calls ends once, with an
/// error of the connection (never a result, never sent upstream twice), the other
/// replicas go on, and nothing is lost from the store.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_killed_with_calls_in_flight_loses_only_those_calls() {
    let mut fleet = Fleet::start(3600).await;
    let mut victim = fleet.replicas.remove(0);
    let calling = fleet.callers(8, 300);
    let front = &fleet.front;
    let killing = async {
        // Once the replica has calls running.
        let probe = format!("{}/readyz", victim.base);
        tokio::time::timeout(Duration::from_secs(30), async {
            while get_json(&probe).await["calls_in_flight"]
                .as_u64()
                .unwrap_or(0)
                == 0
            {
                front.checked().await;
            }
        })
        .await
        .expect("the replica serves calls");
        let before = front.sent();
        victim.child.start_kill().unwrap();
        let _ = victim.child.wait().await;
        before
    };
    let (reports, before) = tokio::join!(calling, killing);
    let (calls, ok, failures) = totals(&reports);
    // The killed replica's calls: errors of the connection, as many as were in flight
    // there at most (4 callers, 4 calls each).
    assert!(failures.len() <= 16, "{failures:#?}");
    for failure in &failures {
        assert!(
            failure.get("kind").is_none(),
            "a result, not a lost connection: {failure}"
        );
    }
    assert_eq!(ok + failures.len() as u64, calls);
    // The others went on.
    let after = fleet.front.sent();
    assert!(
        after[1] > before[1] && after[2] > before[2],
        "{before:?} -> {after:?}"
    );
    assert_eq!(fleet.front.ready(), [false, true, true]);
    // No call ran upstream twice: not the killed replica's, not any other.
    let runs = fleet.upstream_runs();
    assert!(runs.values().all(|&n| n == 1), "{runs:?}");
    for failure in &failures {
        let id = failure["id"].as_str().unwrap();
        assert!(runs.get(id).copied().unwrap_or(0) <= 1, "{id}");
    }
    fleet.grants_intact().await;
    eprintln!(
        "kill -9: {calls} calls, {} lost with the replica: {failures:?}",
        failures.len()
    );
}

/// A rolling restart of all three replicas under load, with 2-second tokens: each drains
/// on SIGTERM (out of the front's rotation first, by `/readyz`), a new one takes its
/// place; no call fails, none runs twice, no grant is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_under_load_fails_no_call() {
    let mut fleet = Fleet::start(ROTATING_SECONDS).await;
    let calling = fleet.callers(25, 100);
    let restarting = async {
        // Once calls flow.
        tokio::time::timeout(Duration::from_secs(30), async {
            while fleet.servers.resource.state.calls.load(Ordering::SeqCst) < 20 {
                fleet.front.checked().await;
            }
        })
        .await
        .expect("calls flow");
        for index in 0..3 {
            Fleet::stop(&mut fleet.replicas[index]).await;
            fleet.replace(index).await;
            fleet.until_ready(&[true, true, true]).await;
        }
    };
    let (reports, ()) = tokio::join!(calling, restarting);
    let (calls, ok, failures) = totals(&reports);
    assert!(failures.is_empty(), "{failures:#?}\n{}", fleet.log());
    assert_eq!(ok, calls);
    let runs = fleet.upstream_runs();
    let twice: Vec<_> = runs.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "ran more than once upstream: {twice:?} ({} refused for an expired token)\n{}",
        fleet.servers.resource.state.expired.load(Ordering::SeqCst),
        fleet.log()
    );
    assert_eq!(runs.len() as u64, ok);
    // The new replicas took calls.
    let sent = fleet.front.sent();
    assert!(sent.iter().all(|&n| n > 0), "{sent:?}");
    fleet.grants_intact().await;
    eprintln!(
        "rolling restart: {calls} calls, {} refused upstream for an expired token (renewed and sent again), sent per new replica {sent:?}",
        fleet.servers.resource.state.expired.load(Ordering::SeqCst),
    );
}

/// A replica started while its database is down (nothing listens where the store is):
/// it starts, serves a binding that needs no grant, answers a call that needs one with
/// `credential_store`, `not_sent`, retryable, within the call's timeout, and `/readyz`
/// stays 200 and says the store is unavailable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_started_while_the_database_is_down_serves_what_needs_no_grant() {
    // The testkit's OAuth servers build reqwest clients, which need a TLS provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let servers = Servers::start().await;
    let plain = brain_mcp_testkit::TestServer::start(brain_mcp_testkit::ServerOptions::default())
        .await
        .unwrap();
    let down = brain_mcp_testkit::RefusedPort::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (key, line) = brain_mcp_gateway_key("acme");
    let key_file = dir.path().join("keys");
    std::fs::write(&key_file, format!("{line}\n")).unwrap();
    let binding = |name: &str, url: String| {
        json!({"name": name, "description": format!("{name} on the testkit"),
               "input_schema": {"type": "object"}, "url": url, "mcp_tool": "echo",
               "tenants": ["acme"], "timeout_seconds": 5})
    };
    let mut granted = binding("granted", servers.url());
    granted["auth"] = json!({"type": "oauth", "issuer": servers.issuer()});
    let host = json!({
        "tools": [binding("plain", plain.url()), granted],
        "gateway": {"api_keys": key_file.to_string_lossy()},
    });
    let config = dir.path().join("host.json");
    std::fs::write(&config, host.to_string()).unwrap();
    let store_url = format!("postgres://brain@{}/brain", down.addr());
    let mut replica = replica(dir.path(), &config.to_string_lossy(), &store_url, 1).await;

    let ready = reqwest::get(format!("{}/readyz", replica.base))
        .await
        .unwrap();
    assert_eq!(
        ready.status(),
        200,
        "a replica without its store is still useful"
    );
    let ready: Value = ready.json().await.unwrap();
    assert_eq!(ready["credential_store"], "unavailable", "{ready}");

    let client = brain_tools::McpClient::new(brain_tools::ClientOptions::default()).unwrap();
    let gateway =
        brain_tools::Endpoint::http(format!("{}/mcp", replica.base), Some(Secret::new(key)));
    let call = |tool: &'static str| {
        brain_tools::CallRequest::new(gateway.clone(), tool, tool, Duration::from_secs(30))
            .arguments(json!({"message": "hi"}).as_object().cloned().unwrap())
    };
    let served = client.call(call("plain")).await.unwrap();
    assert_eq!(
        served.result["content"][0]["text"], "hi",
        "{:?}",
        served.result
    );
    let started = std::time::Instant::now();
    let refused = client.call(call("granted")).await.unwrap();
    let error = &refused.result["_meta"][brain_mcp_gateway::ERROR_META_KEY];
    assert_eq!(
        (
            error["kind"].as_str(),
            error["delivery"].as_str(),
            error["retryable"].as_bool()
        ),
        (Some("credential_store"), Some("not_sent"), Some(true)),
        "{:?}",
        refused.result
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "within the binding's timeout, not the client's"
    );
    assert!(
        brain_mcp_testkit::oauth::lock(&servers.resource.state.ran).is_empty(),
        "nothing ran upstream"
    );
    client.shutdown(Duration::from_secs(5)).await;
    Fleet::stop(&mut replica).await;
}
