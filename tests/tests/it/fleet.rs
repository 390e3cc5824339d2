//! A fleet: host processes (`brain-fleet-host`) sharing one PostgreSQL credential store
//! and several tenants' grants, against an authorization server that rotates refresh
//! tokens and revokes a grant whose used refresh token comes back.

use std::{
    collections::BTreeMap,
    process::Stdio,
    sync::{Arc, atomic::Ordering},
    time::{Duration, SystemTime},
};

use brain_mcp_testkit::{Postgres, oauth::Servers};
use brain_tools::{
    CredentialStore, Expected, GrantKey, KeyRing, PostgresCredentialStore, PostgresStoreOptions,
    Secret, StoredGrant,
};
use serde_json::{Value, json};

const KEYS: &str = "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

struct Fleet {
    servers: Servers,
    database: Postgres,
    store: Arc<dyn CredentialStore>,
    config: tempfile::NamedTempFile,
    /// Grant number at the authorization server, per tenant.
    grants: BTreeMap<String, usize>,
}

impl Fleet {
    /// The servers (access tokens living `lifetime`), the database, and a grant per
    /// tenant, issued now.
    async fn start(tenants: &[&str], lifetime: u64) -> Self {
        let servers = Servers::start().await;
        servers.auth.state.rotation.store(true, Ordering::SeqCst);
        *brain_mcp_testkit::oauth::lock(&servers.auth.state.expires_in) = lifetime;
        let database = Postgres::start_new().unwrap();
        let options = PostgresStoreOptions::new(database.url(), KeyRing::parse(KEYS).unwrap());
        let store: Arc<dyn CredentialStore> =
            Arc::new(PostgresCredentialStore::connect(options).await.unwrap());
        let mut grants = BTreeMap::new();
        let now = SystemTime::now();
        for tenant in tenants {
            let scopes = vec!["files:read".to_owned()];
            let access = format!("at-{tenant}-stored-0123456789");
            let refresh = format!("rt-{tenant}-stored-0123456789");
            let mut grant = StoredGrant::new("pre-registered-client");
            grant.access_token = Some(Secret::new(access.clone()));
            grant.refresh_token = Some(Secret::new(refresh.clone()));
            grant.set_lifetime(now, Some(Duration::from_secs(lifetime)));
            grant.scopes = scopes.clone();
            let key = GrantKey::new(*tenant, servers.url(), servers.issuer());
            let _ = store.save(&key, &grant, Expected::Any).await.unwrap();
            servers.resource.state.accept(&access, scopes.clone());
            let number = servers.auth.state.knows_refresh_token(&refresh, scopes);
            grants.insert((*tenant).to_owned(), number);
        }
        let config = tempfile::NamedTempFile::new().unwrap();
        let host = json!({"tools": [{
            "name": "echo",
            "input_schema": {"type": "object"},
            "url": servers.url(),
            "mcp_tool": "echo",
            "tenants": tenants,
            "timeout_seconds": 60,
            "auth": {"type": "oauth", "issuer": servers.issuer()},
        }]});
        std::fs::write(config.path(), host.to_string()).unwrap();
        Self {
            servers,
            database,
            store,
            config,
            grants,
        }
    }

    /// A host process calling each tenant in turn for `seconds`.
    fn host(
        &self,
        tenants: &[&str],
        seconds: u64,
        lease_ttl_ms: Option<u64>,
    ) -> tokio::process::Child {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_brain-fleet-host"));
        command
            .arg(self.config.path())
            .arg(self.database.url())
            .arg("echo")
            .arg(tenants.join(","))
            .arg(seconds.to_string())
            .arg("20")
            .args(lease_ttl_ms.map(|ttl| ttl.to_string()))
            .env("MCP_TOOLS_STORE_KEYS", KEYS)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command.spawn().expect("brain-fleet-host starts")
    }
}

/// Every call line of a finished host.
async fn lines(child: tokio::process::Child) -> Vec<Value> {
    let output = tokio::time::timeout(Duration::from_secs(180), child.wait_with_output())
        .await
        .expect("the host ends")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("\"done\""), "{stdout}");
    stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line.get("tenant").is_some())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hosts_on_one_database_refresh_each_grant_once_per_expiry() {
    let tenants = ["acme", "globex", "initech"];
    // Two-second tokens, renewed once half their life is gone: about a refresh a second
    // per grant, for a minute, by three hosts at once.
    let fleet = Fleet::start(&tenants, 2).await;
    let hosts: Vec<_> = (0..3).map(|_| fleet.host(&tenants, 60, None)).collect();
    let mut calls = Vec::new();
    for host in hosts {
        calls.extend(lines(host).await);
    }
    let failed: Vec<&Value> = calls.iter().filter(|call| call["ok"] != true).collect();
    assert!(
        failed.is_empty(),
        "{} of {} calls failed: {failed:?}",
        failed.len(),
        calls.len()
    );
    let state = &fleet.servers.auth.state;
    assert_eq!(
        state.reuses.load(Ordering::SeqCst),
        0,
        "no refresh token reused"
    );
    let refreshes = state.refreshes_per_grant();
    for (tenant, grant) in &fleet.grants {
        let times = &refreshes[grant];
        // One refresh per expiry: never two for one token (a duplicate would come
        // milliseconds after the first; renewals come once half a lifetime is gone).
        let closest = times
            .windows(2)
            .map(|pair| pair[1].duration_since(pair[0]))
            .min()
            .unwrap();
        assert!(
            closest >= Duration::from_millis(250),
            "{tenant}: two refreshes {closest:?} apart"
        );
        eprintln!(
            "{tenant}: {} refreshes in 60 s by 3 hosts, closest {closest:?} apart",
            times.len()
        );
        // And the store holds a usable grant.
        let key = GrantKey::new(tenant, fleet.servers.url(), fleet.servers.issuer());
        let stored = fleet.store.load(&key).await.unwrap().unwrap();
        assert!(stored.grant.is_usable());
    }
    eprintln!("{} calls, none failed", calls.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_host_that_holds_a_lease_mid_refresh_holds_the_others_until_it_expires() {
    let tenants = ["acme"];
    let fleet = Fleet::start(&tenants, 1).await;
    // The first refresh request stalls at the authorization server (it never gets to it).
    let state = &fleet.servers.auth.state;
    state.stall_refreshes.store(1, Ordering::SeqCst);
    let mut seen = state.token_requests_seen.subscribe();
    let mut holder = fleet.host(&tenants, 30, Some(3000));
    tokio::time::timeout(Duration::from_secs(30), seen.wait_for(|n| *n >= 1))
        .await
        .expect("the first host asks for a refresh")
        .unwrap();
    holder.start_kill().unwrap();
    holder.wait().await.unwrap();
    // The lease it held expires by the database's clock; then the others go on.
    let others: Vec<_> = (0..2)
        .map(|_| fleet.host(&tenants, 8, Some(3000)))
        .collect();
    let mut calls = Vec::new();
    for host in others {
        calls.extend(lines(host).await);
    }
    assert!(calls.iter().any(|call| call["ok"] == true));
    let failed: Vec<&Value> = calls.iter().filter(|call| call["ok"] != true).collect();
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(state.reuses.load(Ordering::SeqCst), 0);
    let key = GrantKey::new("acme", fleet.servers.url(), fleet.servers.issuer());
    assert!(
        fleet
            .store
            .load(&key)
            .await
            .unwrap()
            .unwrap()
            .grant
            .is_usable()
    );
}
