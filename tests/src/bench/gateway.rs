//! The gateway section's own modes and measures (see `cargo xtask bench --only gateway`):
//!
//! - `issuer --resource URL --tenant T --token-out FILE`: a JWT issuer on loopback (the
//!   testkit's [`JwtIssuer`]: RFC 8414 metadata and a JWKS), and one access token for the
//!   load generator, written to FILE (mode 0600, never printed). Prints
//!   `LISTENING <issuer>`; runs until stdin closes.
//! - `idle --url URL --clients N [--token-env VAR] [--prefix P] --watch-pid PID`: N legacy
//!   clients, each through its handshake and then idle (rmcp's client: a session and its
//!   standalone GET stream), and what they add to the resident memory of PID's process
//!   tree (over its baseline: one client through one call).
//!
//! And what a gateway's process tree costs: CPU time and resident memory of a process and
//! all its descendants, read from `/proc`.

use std::{collections::HashMap, io::Read as _, time::Duration};

use anyhow::Context as _;
use brain_mcp_testkit::oauth::JwtIssuer;
use rmcp::{
    ServiceExt,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};

use crate::flag_value;

/// `brain-bench issuer`.
pub(super) async fn issuer(args: &[String]) -> anyhow::Result<()> {
    let resource = flag_value(args, "--resource").context("--resource URL is required")?;
    let tenant = flag_value(args, "--tenant").unwrap_or("bench");
    let out = flag_value(args, "--token-out").context("--token-out FILE is required")?;
    let issuer = JwtIssuer::start().await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    let token = issuer.mint(&json!({
        "iss": issuer.issuer(), "aud": resource, "sub": "bench", "tenant": tenant,
        "iat": now, "exp": now + 4 * 3600,
    }));
    write_private(out, &token)?;
    println!("LISTENING {}", issuer.issuer());
    // Until stdin closes (the bench ends the section).
    tokio::task::spawn_blocking(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
    })
    .await?;
    Ok(())
}

/// Writes a secret to a new file only its owner may read.
fn write_private(path: &str, secret: &str) -> anyhow::Result<()> {
    use std::{io::Write as _, os::unix::fs::OpenOptionsExt as _};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write {path}"))?;
    file.write_all(secret.as_bytes())?;
    Ok(())
}

/// The bearer a load-generator flag names (`--token-env VAR`), if any.
pub(super) fn bearer(args: &[String]) -> anyhow::Result<Option<String>> {
    flag_value(args, "--token-env")
        .map(|var| std::env::var(var).with_context(|| format!("${var} is not set")))
        .transpose()
}

/// `brain-bench idle`.
pub(super) async fn idle(args: &[String], url: &str) -> anyhow::Result<Value> {
    let clients: usize = flag_value(args, "--clients")
        .unwrap_or("100")
        .parse()
        .context("--clients takes a number")?;
    let pid = watched(args)?.context("--watch-pid PID is required")?;
    let token = bearer(args)?;
    // rmcp's client on a plain reqwest client needs a process-wide TLS provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .tcp_nodelay(true)
        .build()?;
    let open = || {
        let mut config = StreamableHttpClientTransportConfig::with_uri(url);
        if let Some(token) = &token {
            config = config.auth_header(token.clone());
        }
        let transport = StreamableHttpClientTransport::with_client(http.clone(), config);
        ().serve(transport)
    };
    // One first, through one call, so that the baseline has whatever the first client and
    // the first call warm up (the gateway's upstream client, lazy imports).
    let first = open().await.context("the first idle client's handshake")?;
    let prefix = flag_value(args, "--prefix").unwrap_or("");
    first
        .peer()
        .call_tool(
            rmcp::model::CallToolRequestParams::new(format!("{prefix}echo")).with_arguments(
                json!({"message": "hello"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ),
        )
        .await
        .context("the first idle client's call")?;
    let baseline = tree_rss_kib(pid);
    let mut held = Vec::with_capacity(clients);
    for i in 0..clients {
        held.push(
            open()
                .await
                .with_context(|| format!("idle client {i}'s handshake"))?,
        );
    }
    // Every client's session is open at the server; its GET stream may still be on its
    // way: ask every client for one round trip, so that all of them are settled.
    for (i, client) in held.iter().enumerate() {
        client
            .peer()
            .list_tools(None)
            .await
            .with_context(|| format!("idle client {i}'s tools/list"))?;
    }
    let after = tree_rss_kib(pid);
    for client in held {
        let _ = client.cancel().await;
    }
    let _ = first.cancel().await;
    Ok(json!({
        "clients": clients,
        "tree_baseline_rss_kib": baseline,
        "tree_rss_kib": after,
        "per_client_kib": after.saturating_sub(baseline) as f64 / clients as f64,
    }))
}

/// The process tree a flag names (`--watch-pid PID`), if any.
pub(super) fn watched(args: &[String]) -> anyhow::Result<Option<u32>> {
    flag_value(args, "--watch-pid")
        .map(|pid| pid.parse().context("--watch-pid takes a process id"))
        .transpose()
}

/// `pid` and every process below it.
fn tree(pid: u32) -> Vec<u32> {
    let mut parents: HashMap<u32, Vec<u32>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if let Some(parent) = stat(child).and_then(|fields| fields.get(1)?.parse().ok()) {
            parents.entry(parent).or_default().push(child);
        }
    }
    let mut all = vec![pid];
    let mut at = 0;
    while at < all.len() {
        all.extend(parents.get(&all[at]).into_iter().flatten());
        at += 1;
    }
    all
}

/// The fields of `/proc/PID/stat` after the command name: state is [0], ppid [1], utime
/// [11], stime [12].
fn stat(pid: u32) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &text[text.rfind(')')? + 1..];
    Some(after.split_whitespace().map(str::to_owned).collect())
}

/// The clock ticks a second of `/proc/PID/stat` (`getconf CLK_TCK`; 100 on Linux).
fn ticks_per_second() -> f64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|out| String::from_utf8_lossy(&out.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// CPU seconds (user and system) that `pid`'s process tree has used so far.
pub(super) fn tree_cpu_seconds(pid: u32) -> f64 {
    let ticks: u64 = tree(pid)
        .into_iter()
        .filter_map(stat)
        .map(|fields| {
            let at = |i: usize| {
                fields
                    .get(i)
                    .and_then(|v| v.parse::<u64>().ok())
                    .unwrap_or(0)
            };
            at(11) + at(12)
        })
        .sum();
    ticks as f64 / ticks_per_second()
}

/// The resident memory of `pid`'s process tree, in KiB.
pub(super) fn tree_rss_kib(pid: u32) -> u64 {
    tree(pid)
        .into_iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/status")).ok())
        .filter_map(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmRSS:"))
                .and_then(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .sum()
}

/// Samples the tree's resident memory every 20 ms until dropped; the peak seen.
pub(super) struct RssWatch {
    peak: std::sync::Arc<std::sync::atomic::AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl RssWatch {
    pub(super) fn start(pid: u32) -> Self {
        let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(tree_rss_kib(pid)));
        let seen = peak.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let rss = tokio::task::spawn_blocking(move || tree_rss_kib(pid))
                    .await
                    .unwrap_or(0);
                seen.fetch_max(rss, std::sync::atomic::Ordering::Relaxed);
            }
        });
        Self { peak, task }
    }

    pub(super) fn peak(&self) -> u64 {
        self.peak.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for RssWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}
