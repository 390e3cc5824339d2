//! `brain-bench`: the client side of `cargo xtask bench`. Each mode runs one measurement
//! against a server that runs in another process, and prints one JSON line.
//!
//! - `seq --url URL --client CLIENT --calls N --warmup W [--interval-ms MS]`: sequential
//!   echo calls. CLIENT is `legacy` (through `ToolHost`, a session per call, default
//!   settings: warm contexts on), `legacy-cold` (warm contexts off), `modern` (2026-07-28
//!   stateless), `floor` (one persistent rmcp session: the floor a per-call design can
//!   approach), `floor-modern` and `transport-modern` (where a 2026-07-28 call's time
//!   goes), or the `TCP_QUICKACK` prototype's `floor-hyper`, `floor-quickack`,
//!   `session-hyper` and `session-quickack` (rmcp on hyper-util, one persistent session or
//!   a session per call, without and with the re-armed `TCP_QUICKACK`; see `quickack`).
//!   With `--interval-ms MS`, calls start every MS ms (still one at a time) instead of
//!   back to back. `--warm-per-server N`, `--warm-total N` and `--warm-idle-ms MS` set the
//!   pool of warm contexts (our clients only); `--latencies` adds every call's latency, in
//!   order (`latencies_ms`). `modern-otel` and `legacy-otel` are `modern` and `legacy`
//!   with OpenTelemetry on and exporting over OTLP/HTTP to a sink in the process (see
//!   `otel`).
//! - `seq --client stdio|stdio-cold --calls N --warmup W [--interval-ms MS] --stdio PROGRAM
//!   [ARGS...]`: the same over stdio through `ToolHost`, a server process per call
//!   (warm contexts on or off); everything after `--stdio` is the server's command line.
//!   `--client floor-stdio`: the stdio floor, one persistent server process through rmcp's
//!   own client (`TokioChildProcess`), `call_tool` in a loop.
//! - `spawn --starts N --parallel P --stdio PROGRAM [ARGS...]`: the spawn-bound limit: how
//!   many server processes a second this machine starts, brings through the handshake and
//!   one echo call, and ends, with P of them at a time (rmcp's own client).
//! - `concurrent --url URL --era legacy|modern --callers C --calls N [--cold]`: C callers
//!   sharing one `ToolHost` (`--cold`: warm contexts off).
//! - `inflight --url URL --era legacy|modern --calls N --sleep-ms MS [--ca PEM] [--http1]`:
//!   peak memory with N calls in flight on a sleeping server (`--ca`: trust this CA, for an
//!   `https` server; `--http1`: offer it no HTTP/2).
//! - `stream --url URL --bytes B --budget M`: memory while one call's server streams B
//!   bytes against a budget of M.
//! - `discover --url URL`: the time to list every tool (every page).
//! - `hostile --case blocks|values|text|pages`: what a hostile answer costs in memory (see
//!   `bench/hostile.rs`).
//! - `config --bindings N`: loading a host config of N bindings.
//! - `proxy --target URL|HOST:PORT --delay-ms D`: a TCP proxy adding D ms each way (the
//!   simulated network; see `proxy`). Prints `LISTENING <url>`, runs until stdin closes.
//! - In front of a gateway (`cargo xtask bench --only gateway`): `seq` (clients `legacy`,
//!   `modern`), `concurrent` and `inflight` take `--token-env VAR` (the gateway's bearer,
//!   as the bindings' `token_env`) and `--prefix P` (the upstream's tools as the gateway
//!   names them: P + the name); `concurrent` and `inflight` take `--watch-pid PID` (the CPU
//!   time, or the resident memory, of the gateway's process tree); `issuer` and `idle` (see
//!   `gateway`).

mod gateway;
mod hostile;
mod otel;
mod proxy;
mod quickack;

use std::{
    process::ExitCode,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use brain_mcp_transport::{DiscoveryRequest, Endpoint};
use brain_tools::{CallScope, ClientOptions, EraPreference, McpClient, ToolHost};
use brain_tools_config::HostConfig;
use rmcp::{
    ServiceExt,
    model::CallToolRequestParams,
    transport::{
        StreamableHttpClientTransport,
        streamable_http_client::{StreamableHttpClient, StreamableHttpClientTransportConfig},
    },
};
use serde_json::{Value, json};

use crate::flag_value;

/// Runs the bench binary with its arguments (without the program name).
pub fn main_with_args(args: Vec<String>) -> ExitCode {
    if args.first().map(String::as_str) == Some("proxy") {
        let target = flag_value(&args, "--target");
        let delay = number(&args, "--delay-ms", 5);
        return match (target, delay) {
            (Some(target), Ok(delay)) => match proxy::run(target, Duration::from_millis(delay)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("brain-bench proxy: {error:#}");
                    ExitCode::FAILURE
                }
            },
            (None, _) => {
                eprintln!("brain-bench proxy: --target URL|HOST:PORT is required");
                ExitCode::from(2)
            }
            (_, Err(error)) => {
                eprintln!("brain-bench proxy: {error:#}");
                ExitCode::from(2)
            }
        };
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("brain-bench: cannot start the runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let outcome = runtime.block_on(run(&args)).map(|mut line| {
        if !args.iter().any(|arg| arg == "--latencies")
            && let Some(line) = line.as_object_mut()
        {
            line.remove("latencies_ms");
        }
        line
    });
    runtime.shutdown_timeout(Duration::from_secs(1));
    match outcome {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("brain-bench: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn number(args: &[String], flag: &str, default: u64) -> anyhow::Result<u64> {
    flag_value(args, flag).map_or(Ok(default), |value| {
        value
            .parse()
            .with_context(|| format!("{flag} takes a number, not {value:?}"))
    })
}

async fn run(args: &[String]) -> anyhow::Result<Value> {
    if args.first().map(String::as_str) == Some("config") {
        return config(number(args, "--bindings", 10_000)?);
    }
    if args.first().map(String::as_str) == Some("seq") {
        return seq(args).await;
    }
    if args.first().map(String::as_str) == Some("spawn") {
        let at = args
            .iter()
            .position(|arg| arg == "--stdio")
            .context("spawn needs --stdio PROGRAM [ARGS...]")?;
        return spawn_rate(
            &args[at + 1..],
            number(&args[..at], "--starts", 20)?,
            number(&args[..at], "--parallel", 1)?.max(1),
        )
        .await;
    }
    if args.first().map(String::as_str) == Some("issuer") {
        gateway::issuer(args).await?;
        return Ok(json!({"issuer": "stopped"}));
    }
    if args.first().map(String::as_str) == Some("hostile") {
        return hostile::run(flag_value(args, "--case").unwrap_or("blocks"), memory).await;
    }
    let url = flag_value(args, "--url").context("--url is required")?;
    match args.first().map(String::as_str) {
        Some("concurrent") => {
            let era = crate::parse_era(flag_value(args, "--era"))?;
            concurrent(
                url,
                era,
                number(args, "--callers", 16)?,
                number(args, "--calls", 2000)?,
                !args.iter().any(|arg| arg == "--cold"),
                args,
            )
            .await
        }
        Some("inflight") => {
            let era = crate::parse_era(flag_value(args, "--era"))?;
            let mut options = ClientOptions::default()
                .era(era)
                .http2(!args.iter().any(|arg| arg == "--http1"));
            if let Some(path) = flag_value(args, "--ca") {
                let pem = std::fs::read(path).with_context(|| format!("cannot read {path}"))?;
                options = options.root_certificates_pem(pem);
            }
            inflight(
                url,
                era,
                options,
                number(args, "--calls", 1000)?,
                number(args, "--sleep-ms", 2000)?,
                args,
            )
            .await
        }
        Some("stream") => {
            stream(
                url,
                number(args, "--bytes", 100 << 20)?,
                number(args, "--budget", 1 << 20)?,
            )
            .await
        }
        Some("discover") => discover(url).await,
        Some("idle") => gateway::idle(args, url).await,
        other => bail!(
            "unknown mode {other:?}: seq, concurrent, inflight, stream, discover, config or proxy"
        ),
    }
}

/// Latency figures of a run.
fn summary(client: &str, mut latencies: Vec<Duration>, elapsed: Duration) -> Value {
    let unsorted = latencies.clone();
    latencies.sort();
    let at = |q: f64| {
        let index = ((latencies.len() as f64 - 1.0) * q).round() as usize;
        latencies
            .get(index)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let in_order: Vec<f64> = unsorted
        .iter()
        .map(|d| (d.as_secs_f64() * 1e6).round() / 1000.0)
        .collect();
    json!({
        "client": client,
        "latencies_ms": in_order,
        "calls": latencies.len(),
        "calls_per_s": latencies.len() as f64 / elapsed.as_secs_f64(),
        "p50_ms": at(0.5),
        "p99_ms": at(0.99),
    })
}

/// A host with one `echo` binding (and a `sleep` and a `big` one) on the server.
fn host(url: &str, era: EraPreference, budget: u64) -> anyhow::Result<ToolHost> {
    host_with(url, budget, ClientOptions::default().era(era), &json!({}))
}

/// [`host`] with client options, and `extra` fields (credentials) in every binding.
fn host_with(
    url: &str,
    budget: u64,
    options: ClientOptions,
    extra: &Value,
) -> anyhow::Result<ToolHost> {
    host_prefixed(url, budget, options, extra, "")
}

/// What a load-generator run in front of a gateway adds to every binding: `--token-env
/// VAR` (the gateway's bearer, as `token_env`) and `--prefix P` (the upstream tools'
/// names as the gateway serves them: `P` + the name).
fn through(args: &[String]) -> (Value, &str) {
    let extra = flag_value(args, "--token-env")
        .map_or_else(|| json!({}), |var| json!({ "token_env": var }));
    (extra, flag_value(args, "--prefix").unwrap_or(""))
}

/// [`host_with`], the server's tools named `prefix` + the tool.
fn host_prefixed(
    url: &str,
    budget: u64,
    options: ClientOptions,
    extra: &Value,
    prefix: &str,
) -> anyhow::Result<ToolHost> {
    // Echo's 120 s: 256 calls in flight through a gateway that serves 10 a second wait
    // their turn for tens of seconds.
    let tools: Vec<Value> = [("echo", 120), ("sleep", 120), ("big", 60)]
        .iter()
        .map(|(tool, timeout)| {
            let mut binding = json!({"name": tool, "input_schema": {"type": "object"}, "url": url,
                "mcp_tool": format!("{prefix}{tool}"), "tenants": ["bench"], "timeout_seconds": timeout,
                "max_output_bytes": budget});
            if let (Some(binding), Some(extra)) = (binding.as_object_mut(), extra.as_object()) {
                binding.extend(extra.clone());
            }
            binding
        })
        .collect();
    build_host(&json!({ "tools": tools }), options)
}

/// A host with one `echo` binding on a stdio server (`command[0]` with the rest as its
/// arguments; the default minimal environment).
fn stdio_host(command: &[String], options: ClientOptions) -> anyhow::Result<ToolHost> {
    let (program, args) = command
        .split_first()
        .context("--stdio needs the server's program")?;
    let tool = json!({"name": "echo", "input_schema": {"type": "object"},
        "command": {"program": program, "args": args}, "mcp_tool": "echo",
        "tenants": ["bench"], "timeout_seconds": 60});
    build_host(&json!({ "tools": [tool] }), options)
}

fn build_host(config: &Value, options: ClientOptions) -> anyhow::Result<ToolHost> {
    let loaded = HostConfig::from_json_value_with_env(config, |_| true)
        .map_err(|errors| anyhow::anyhow!("{errors}"))?;
    Ok(ToolHost::builder(loaded.config)
        .client(McpClient::new(options).map_err(|error| anyhow::anyhow!("{error}"))?)
        .build()?)
}

async fn echo(host: &ToolHost, i: u64) -> anyhow::Result<()> {
    let scope = CallScope::new("bench", "s", format!("c{i}"));
    let result = host
        .call(scope.clone(), "echo", json!({"message": "hello"}))
        .await;
    if result.is_error {
        bail!("call {i} failed: {:?}", result.error);
    }
    Ok(())
}

/// How a sequential run goes: `warmup` calls not counted, then `calls` timed ones, one at a
/// time; back to back, or each starting `interval` after the previous one started (or at
/// once when that one took longer).
#[derive(Debug, Clone, Copy)]
struct Pace {
    calls: u64,
    warmup: u64,
    interval: Option<Duration>,
}

/// Runs `call` as `pace` says; returns the latencies of the timed calls and the time they
/// took together.
async fn sequential<F, Fut>(pace: Pace, mut call: F) -> anyhow::Result<(Vec<Duration>, Duration)>
where
    F: FnMut(u64) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let mut latencies = Vec::with_capacity(pace.calls as usize);
    let mut next = tokio::time::Instant::now();
    let mut started = Instant::now();
    for i in 0..pace.warmup + pace.calls {
        if let Some(interval) = pace.interval {
            tokio::time::sleep_until(next).await;
            next = next.max(tokio::time::Instant::now()) + interval;
        }
        if i == pace.warmup {
            started = Instant::now();
        }
        let one = Instant::now();
        call(i).await?;
        if i >= pace.warmup {
            latencies.push(one.elapsed());
        }
    }
    Ok((latencies, started.elapsed()))
}

/// `brain-bench seq`.
async fn seq(args: &[String]) -> anyhow::Result<Value> {
    // Everything after `--stdio` is the server's command line.
    let (args, command) = match args.iter().position(|arg| arg == "--stdio") {
        Some(at) => (&args[..at], &args[at + 1..]),
        None => (args, &[][..]),
    };
    let pace = Pace {
        calls: number(args, "--calls", 300)?,
        warmup: number(args, "--warmup", 30)?,
        interval: match number(args, "--interval-ms", 0)? {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        },
    };
    let options = |era: EraPreference, warm: bool| -> anyhow::Result<ClientOptions> {
        let mut options = ClientOptions::default().era(era).warm_contexts(warm);
        if let Some(n) = flag_value(args, "--warm-per-server") {
            options = options.warm_per_server(n.parse().context("--warm-per-server")?);
        }
        if let Some(n) = flag_value(args, "--warm-total") {
            options = options.warm_total(n.parse().context("--warm-total")?);
        }
        if let Some(ms) = flag_value(args, "--warm-idle-ms") {
            options =
                options.warm_idle(Duration::from_millis(ms.parse().context("--warm-idle-ms")?));
        }
        Ok(options)
    };
    let client = flag_value(args, "--client").unwrap_or("legacy");
    let url = || flag_value(args, "--url").context("--url is required");
    let mut line = match client {
        "floor-stdio" => floor_stdio(command, pace).await?,
        "stdio" | "stdio-cold" => {
            let warm = client == "stdio";
            let host = stdio_host(command, options(EraPreference::Auto, warm)?)?;
            let name = if warm {
                "ours, stdio, process per call"
            } else {
                "ours, stdio, process per call, warm contexts off"
            };
            ours(host, name, pace).await?
        }
        "legacy" | "legacy-cold" => {
            let warm = client == "legacy";
            let (extra, prefix) = through(args);
            let host = host_prefixed(
                url()?,
                1 << 20,
                options(EraPreference::Legacy, warm)?,
                &extra,
                prefix,
            )?;
            let name = if warm {
                "ours, legacy session per call"
            } else {
                "ours, legacy session per call, warm contexts off"
            };
            ours(host, name, pace).await?
        }
        "modern" => {
            let (extra, prefix) = through(args);
            let host = host_prefixed(
                url()?,
                1 << 20,
                options(EraPreference::Modern, true)?,
                &extra,
                prefix,
            )?;
            ours(host, "ours, 2026-07-28 stateless", pace).await?
        }
        // The same with OpenTelemetry on and exporting (see `otel`).
        "modern-otel" | "legacy-otel" => {
            let pipeline = otel::Pipeline::install().await?;
            let (era, name) = if client == "modern-otel" {
                (
                    EraPreference::Modern,
                    "ours, 2026-07-28 stateless, OpenTelemetry exporting",
                )
            } else {
                (
                    EraPreference::Legacy,
                    "ours, legacy session per call, OpenTelemetry exporting",
                )
            };
            let host = host_with(url()?, 1 << 20, options(era, true)?, &json!({}))?;
            let mut line = ours(host, name, pace).await?;
            pipeline.finish(&mut line).await?;
            line
        }
        // Against the testkit run `--protected` (a bearer check, and its own authorization
        // server), with the secrets in the variables it names.
        "legacy-static-token"
        | "legacy-client-credentials"
        | "modern-static-token"
        | "modern-client-credentials" => {
            let url = url()?;
            let (era, era_name) = if client.starts_with("legacy") {
                (EraPreference::Legacy, "legacy session per call")
            } else {
                (EraPreference::Modern, "2026-07-28 stateless")
            };
            let (extra, credential) = if client.ends_with("static-token") {
                (
                    json!({"token_env": "TESTKIT_STATIC_TOKEN"}),
                    "static token (token_env)",
                )
            } else {
                let issuer = url.strip_suffix("/mcp").unwrap_or(url);
                (
                    json!({"auth": {"type": "client_credentials", "client_id": "testkit-client",
                        "client_secret_env": "TESTKIT_CLIENT_SECRET", "issuer": issuer}}),
                    "OAuth client credentials, token cached",
                )
            };
            let host = host_with(url, 1 << 20, options(era, true)?, &extra)?;
            ours(host, &format!("ours, {era_name}, {credential}"), pace).await?
        }
        // A tenant's delegated grant, kept in a file store or in PostgreSQL: the store is
        // read once, then every call carries the token cached in memory (the testkit
        // `--protected` accepts the static token as the grant's access token).
        "modern-oauth-file" | "modern-oauth-postgres" | "modern-oauth-dpop-file" => {
            let url = url()?;
            let issuer = url.strip_suffix("/mcp").unwrap_or(url);
            let token = std::env::var("TESTKIT_STATIC_TOKEN")
                .context("TESTKIT_STATIC_TOKEN holds the token the server accepts")?;
            let folder = tempfile::tempdir()?;
            let database;
            let in_file = client.ends_with("file");
            let store: Arc<dyn brain_tools::CredentialStore> = if in_file {
                Arc::new(brain_tools::FileCredentialStore::new(folder.path()))
            } else {
                database = brain_mcp_testkit::Postgres::start_new().map_err(anyhow::Error::msg)?;
                let keys = brain_tools::KeyRing::parse(
                    "bench:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
                )?;
                Arc::new(
                    brain_tools::PostgresCredentialStore::connect(
                        brain_tools::PostgresStoreOptions::new(database.url(), keys),
                    )
                    .await?,
                )
            };
            let mut grant = brain_tools::StoredGrant::new("bench-client");
            grant.access_token = Some(brain_tools::Secret::new(token));
            grant.set_lifetime(
                std::time::SystemTime::now(),
                Some(Duration::from_secs(86_400)),
            );
            // Bound to a DPoP key: every request signs a fresh proof (the server accepts
            // the token under the DPoP scheme with a proof).
            let dpop = client.contains("dpop");
            if dpop {
                grant.dpop_key = Some(brain_tools::Secret::new(
                    brain_mcp_testkit::oauth::dpop::stored_key(),
                ));
            }
            let key = brain_tools::GrantKey::new("bench", url, issuer);
            let _ = store.save(&key, &grant, brain_tools::Expected::Any).await?;
            let extra = json!({"auth": {"type": "oauth", "issuer": issuer, "dpop": dpop}});
            let options = options(EraPreference::Modern, true)?.credential_store(store);
            let host = host_with(url, 1 << 20, options, &extra)?;
            let kind = match (in_file, dpop) {
                (true, true) => "file store, DPoP-bound (a proof per request)",
                (true, false) => "file store",
                (false, _) => "PostgreSQL store",
            };
            ours(
                host,
                &format!("ours, 2026-07-28 stateless, delegated grant in a {kind}, token cached"),
                pace,
            )
            .await?
        }
        "transport-modern" => transport_only(url()?, pace).await?,
        "floor" | "floor-modern" => {
            let modern = client == "floor-modern";
            // rmcp's own client on a plain reqwest client, which needs a process-wide TLS
            // provider (our client configures its own): the bench binary installs ring.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let http = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .tcp_nodelay(true)
                .build()?;
            let name = if modern {
                "rmcp alone, 2026-07-28 stateless"
            } else {
                "floor: one persistent rmcp session"
            };
            floor(http, url()?, modern, name, pace).await?
        }
        "floor-hyper" => {
            let http = quickack::HyperHttpClient::new(false, true);
            floor(http, url()?, false, "floor on hyper-util", pace).await?
        }
        "floor-quickack" => {
            let http = quickack::HyperHttpClient::new(true, true);
            floor(
                http,
                url()?,
                false,
                "floor on hyper-util, TCP_QUICKACK",
                pace,
            )
            .await?
        }
        "session-hyper" | "session-quickack" => {
            let quickack = client == "session-quickack";
            session_per_call(url()?, quickack, pace).await?
        }
        other => bail!(
            "--client takes legacy, legacy-cold, modern, floor, floor-modern, transport-modern, \
             floor-hyper, floor-quickack, session-hyper, session-quickack, stdio, stdio-cold, floor-stdio, \
             legacy-static-token, legacy-client-credentials, modern-static-token or \
             modern-client-credentials, not {other:?}"
        ),
    };
    line["interval_ms"] = json!(
        pace.interval
            .map_or(0, |interval| interval.as_millis() as u64)
    );
    Ok(line)
}

/// Sequential echo calls through a `ToolHost`.
async fn ours(host: ToolHost, name: &str, pace: Pace) -> anyhow::Result<Value> {
    let shared = &host;
    let (latencies, elapsed) = sequential(pace, |i| echo(shared, i)).await?;
    let stats = host.client().stats();
    host.client().shutdown(Duration::from_secs(10)).await;
    let mut line = summary(name, latencies, elapsed);
    line["warm_served"] = json!(stats.warm_served);
    line["warm_waited"] = json!(stats.warm_waited);
    line["warm_hedged"] = json!(stats.warm_hedged);
    line["calls_with_warmup"] = json!(pace.calls + pace.warmup);
    Ok(line)
}

/// Loading a host config of `n` bindings (each with its own small schema), and building
/// the host from it: time and memory.
fn config(n: u64) -> anyhow::Result<Value> {
    let tools: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "name": format!("tool_{i:05}"),
                "description": format!("Tool number {i}."),
                "input_schema": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "minLength": 1},
                        "limit": {"type": "integer", "minimum": 1, "maximum": i % 100 + 1}
                    },
                    "required": ["query"]
                },
                "url": format!("https://mcp{}.example.com/mcp", i % 50),
                "mcp_tool": "search",
                "token_env": "MCP_API_KEY",
                "tenants": ["local", format!("tenant-{}", i % 10)]
            })
        })
        .collect();
    let bytes = serde_json::to_vec(&json!({ "tools": tools }))?;
    let (before, _) = memory();
    let started = Instant::now();
    let loaded = HostConfig::from_json_bytes_with_env(&bytes, |_| true)
        .map_err(|errors| anyhow::anyhow!("{errors}"))?;
    let loading = started.elapsed();
    let (after_load, _) = memory();
    let started = Instant::now();
    let host = ToolHost::new(&loaded.config)?;
    let building = started.elapsed();
    let (after_host, peak) = memory();
    anyhow::ensure!(
        host.tools_for("local").len() as u64 == n,
        "every binding is visible"
    );
    Ok(json!({
        "bindings": n,
        "config_bytes": bytes.len(),
        "load_ms": loading.as_secs_f64() * 1000.0,
        "build_host_ms": building.as_secs_f64() * 1000.0,
        "rss_before_kib": before,
        "rss_after_load_kib": after_load,
        "rss_after_host_kib": after_host,
        "peak_rss_kib": peak,
    }))
}

/// Our transport alone (no `ToolHost`), 2026-07-28: where the time of a call goes.
async fn transport_only(url: &str, pace: Pace) -> anyhow::Result<Value> {
    let client = McpClient::new(ClientOptions::default().era(EraPreference::Modern))
        .expect("the client builds");
    let endpoint = Endpoint::http(url, None);
    let arguments = json!({"message": "hello"})
        .as_object()
        .cloned()
        .unwrap_or_default();
    let call = |i: u64| {
        let request = brain_mcp_transport::CallRequest::new(
            endpoint.clone(),
            "echo",
            format!("c{i}"),
            Duration::from_secs(30),
        )
        .arguments(arguments.clone());
        let client = client.clone();
        async move {
            client
                .call(request)
                .await
                .map(drop)
                .map_err(|error| anyhow::anyhow!("{error}"))
        }
    };
    let (latencies, elapsed) = sequential(pace, call).await?;
    client.shutdown(Duration::from_secs(10)).await;
    Ok(summary(
        "our transport alone, 2026-07-28",
        latencies,
        elapsed,
    ))
}

fn echo_params() -> CallToolRequestParams {
    CallToolRequestParams::new("echo").with_arguments(
        json!({"message": "hello"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    )
}

/// One persistent rmcp session on `http`, one POST per call; with `modern`, one rmcp
/// client in the 2026-07-28 lifecycle instead (no session).
async fn floor<C>(http: C, url: &str, modern: bool, name: &str, pace: Pace) -> anyhow::Result<Value>
where
    C: StreamableHttpClient + Sync,
{
    let transport = StreamableHttpClientTransport::with_client(
        http,
        StreamableHttpClientTransportConfig::with_uri(url),
    );
    let client = if modern {
        rmcp::service::serve_client_with_lifecycle(
            (),
            transport,
            rmcp::service::ClientLifecycleMode::Discover {
                preferred_versions: vec![rmcp::model::ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .context("the floor's discovery")?
    } else {
        ().serve(transport).await.context("the floor's handshake")?
    };
    let call = |i: u64| {
        let peer = client.peer().clone();
        async move {
            peer.call_tool(echo_params())
                .await
                .map(drop)
                .with_context(|| format!("floor call {i}"))
        }
    };
    let (latencies, elapsed) = sequential(pace, call).await?;
    let _ = client.cancel().await;
    Ok(summary(name, latencies, elapsed))
}

/// A stdio server started for rmcp's own client (on the child's pipes, stderr discarded),
/// with the process, which is killed when dropped.
struct StdioChild {
    client: rmcp::service::RunningService<rmcp::RoleClient, ()>,
    process: tokio::process::Child,
}

impl StdioChild {
    /// Kills the process and reaps it.
    async fn kill(mut self) {
        let _ = self.process.kill().await;
        drop(self.client);
    }

    /// Closes the session (the server's stdin) and waits for the process to exit.
    async fn end(mut self) {
        let _ = self.client.cancel().await;
        let _ = self.process.wait().await;
    }
}

/// Starts the stdio server (`command`) and runs rmcp's handshake with it.
async fn stdio_child(command: &[String]) -> anyhow::Result<StdioChild> {
    let (program, args) = command
        .split_first()
        .context("--stdio needs the server's program")?;
    let mut process = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("starting the stdio server")?;
    let (stdout, stdin) = (
        process.stdout.take().context("the child's stdout")?,
        process.stdin.take().context("the child's stdin")?,
    );
    let client = ().serve((stdout, stdin)).await.context("the stdio handshake")?;
    Ok(StdioChild { client, process })
}

/// The stdio floor: one persistent server process, rmcp's `call_tool` in a loop (what a
/// client without isolation pays per call).
async fn floor_stdio(command: &[String], pace: Pace) -> anyhow::Result<Value> {
    let child = stdio_child(command).await?;
    let call = |i: u64| {
        let peer = child.client.peer().clone();
        async move {
            peer.call_tool(echo_params())
                .await
                .map(drop)
                .with_context(|| format!("floor-stdio call {i}"))
        }
    };
    let (latencies, elapsed) = sequential(pace, call).await?;
    child.end().await;
    Ok(summary(
        "floor: one persistent stdio process (rmcp)",
        latencies,
        elapsed,
    ))
}

/// The spawn-bound limit: `starts` server processes, `parallel` at a time, each started,
/// through its handshake and one echo call, then killed and reaped. Starts per second,
/// and the time one takes (start to first result).
async fn spawn_rate(command: &[String], starts: u64, parallel: u64) -> anyhow::Result<Value> {
    let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let took = Arc::new(Mutex::new(Vec::new()));
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..parallel {
        let (next, took, command) = (next.clone(), took.clone(), command.to_vec());
        workers.spawn(async move {
            while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < starts {
                let one = Instant::now();
                let child = stdio_child(&command).await?;
                child
                    .client
                    .peer()
                    .call_tool(echo_params())
                    .await
                    .context("the first call")?;
                took.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(one.elapsed());
                // Killed, not waited out (server-everything takes some 350 ms to exit
                // once its stdin closes): what our client does with a process after its
                // call.
                child.kill().await;
            }
            anyhow::Ok(())
        });
    }
    while let Some(worker) = workers.join_next().await {
        worker??;
    }
    let elapsed = started.elapsed();
    let took = std::mem::take(
        &mut *took
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let mut line = summary(
        &format!("process starts, {parallel} at a time (start, handshake, first call)"),
        took,
        elapsed,
    );
    line["parallel"] = json!(parallel);
    line["starts_per_s"] = line["calls_per_s"].clone();
    Ok(line)
}

/// A legacy session per call with rmcp alone on hyper-util (`initialize`,
/// `notifications/initialized`, `tools/call`, then the close and its `DELETE` in the
/// background, no standalone GET stream: what our legacy path sends), with or without the
/// re-armed `TCP_QUICKACK`.
async fn session_per_call(url: &str, quickack: bool, pace: Pace) -> anyhow::Result<Value> {
    let http = quickack::HyperHttpClient::new(quickack, false);
    let url: std::sync::Arc<str> = url.into();
    let call = |i: u64| {
        let (http, url) = (http.clone(), url.clone());
        async move {
            let transport = StreamableHttpClientTransport::with_client(
                http,
                StreamableHttpClientTransportConfig::with_uri(url),
            );
            let client = ().serve(transport).await.context("the handshake")?;
            let outcome = client.peer().call_tool(echo_params()).await;
            tokio::spawn(async move {
                let _ = client.cancel().await;
            });
            outcome
                .map(drop)
                .with_context(|| format!("session call {i}"))
        }
    };
    let (latencies, elapsed) = sequential(pace, call).await?;
    let name = if quickack {
        "rmcp session per call on hyper-util, TCP_QUICKACK"
    } else {
        "rmcp session per call on hyper-util"
    };
    Ok(summary(name, latencies, elapsed))
}

async fn concurrent(
    url: &str,
    era: EraPreference,
    callers: u64,
    calls: u64,
    warm: bool,
    args: &[String],
) -> anyhow::Result<Value> {
    let (extra, prefix) = through(args);
    let host = host_prefixed(
        url,
        1 << 20,
        ClientOptions::default().era(era).warm_contexts(warm),
        &extra,
        prefix,
    )?;
    for i in 0..callers.min(32) {
        echo(&host, i).await?;
    }
    // A gateway's process tree (`--watch-pid`): the CPU time the timed calls cost it.
    let watched = gateway::watched(args)?;
    let cpu_before = watched.map(gateway::tree_cpu_seconds);
    let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(calls as usize)));
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..callers {
        let (host, next, latencies) = (host.clone(), next.clone(), latencies.clone());
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= calls {
                    return Ok::<(), anyhow::Error>(());
                }
                let one = Instant::now();
                echo(&host, i).await?;
                latencies
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push(one.elapsed());
            }
        }));
    }
    for worker in workers {
        worker.await??;
    }
    let elapsed = started.elapsed();
    host.client().shutdown(Duration::from_secs(30)).await;
    let latencies = std::mem::take(
        &mut *latencies
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let calls_done = latencies.len();
    let mut line = summary("ours", latencies, elapsed);
    if let (Some(pid), Some(before)) = (watched, cpu_before) {
        let used = gateway::tree_cpu_seconds(pid) - before;
        line["tree_cpu_s"] = json!(used);
        line["tree_cpu_s_per_1000_calls"] = json!(used * 1000.0 / calls_done as f64);
    }
    line["callers"] = json!(callers);
    line["era"] = json!(if era == EraPreference::Legacy {
        "legacy"
    } else {
        "2026-07-28"
    });
    Ok(line)
}

/// Resident and peak resident memory of this process, in KiB.
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

async fn inflight(
    url: &str,
    era: EraPreference,
    options: ClientOptions,
    calls: u64,
    sleep_ms: u64,
    args: &[String],
) -> anyhow::Result<Value> {
    let (extra, prefix) = through(args);
    let host = host_prefixed(url, 1 << 20, options, &extra, prefix)?;
    echo(&host, 0).await?;
    // A gateway's process tree (`--watch-pid`): its resident memory while the calls run.
    let watched = gateway::watched(args)?;
    // `--baseline-kib`: the tree's resident memory measured earlier, before any load (what
    // a process keeps after a load is not given back, and would hide what calls cost).
    let tree_baseline = match flag_value(args, "--baseline-kib") {
        Some(kib) => Some(kib.parse().context("--baseline-kib takes a number")?),
        None => watched.map(gateway::tree_rss_kib),
    };
    let tree_watch = watched.map(gateway::RssWatch::start);
    let (baseline, _) = memory();
    let mut peak = baseline;
    let mut running = Vec::new();
    let started = Instant::now();
    for i in 0..calls {
        let host = host.clone();
        running.push(tokio::spawn(async move {
            let scope = CallScope::new("bench", "s", format!("sleep{i}"));
            host.call(scope.clone(), "sleep", json!({"ms": sleep_ms}))
                .await
        }));
    }
    let watch = async {
        loop {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let (rss, _) = memory();
            peak = peak.max(rss);
        }
    };
    let all = futures_all(running);
    let results = tokio::select! {
        results = all => results,
        () = watch => unreachable!("the watch never ends"),
    };
    let elapsed = started.elapsed();
    let failed = results.iter().filter(|result| result.is_error).count();
    if failed > 0 {
        bail!("{failed} of {calls} sleeping calls failed");
    }
    let tree_peak = tree_watch.as_ref().map(gateway::RssWatch::peak);
    drop(tree_watch);
    host.client().shutdown(Duration::from_secs(30)).await;
    let tree = match (tree_baseline, tree_peak) {
        (Some(baseline), Some(peak)) => json!({
            "tree_baseline_rss_kib": baseline,
            "tree_peak_rss_kib": peak,
            "tree_per_call_kib": peak.saturating_sub(baseline) as f64 / calls as f64,
        }),
        _ => json!({}),
    };
    let mut line = json!({
        "calls_in_flight": calls,
        // About the sleep when every call was at the server at once.
        "ms": elapsed.as_secs_f64() * 1000.0,
        "era": if era == EraPreference::Legacy { "legacy" } else { "2026-07-28" },
        "baseline_rss_kib": baseline,
        "peak_rss_kib": peak,
        "growth_kib": peak.saturating_sub(baseline),
        "per_call_kib": peak.saturating_sub(baseline) as f64 / calls as f64,
    });
    if let (Some(line), Some(tree)) = (line.as_object_mut(), tree.as_object()) {
        line.extend(tree.clone());
    }
    Ok(line)
}

async fn futures_all(
    running: Vec<tokio::task::JoinHandle<brain_tools_events::ResultEvent>>,
) -> Vec<brain_tools_events::ResultEvent> {
    let mut results = Vec::with_capacity(running.len());
    for task in running {
        if let Ok(result) = task.await {
            results.push(result);
        }
    }
    results
}

async fn stream(url: &str, bytes: u64, budget: u64) -> anyhow::Result<Value> {
    let host = host(url, EraPreference::Auto, budget)?;
    echo(&host, 0).await?;
    let (baseline, hwm_before) = memory();
    let started = Instant::now();
    let scope = CallScope::new("bench", "s", "stream");
    let result = host
        .call(scope.clone(), "big", json!({"bytes": bytes}))
        .await;
    let elapsed = started.elapsed();
    let (_, hwm_after) = memory();
    let kind = result
        .error
        .as_ref()
        .map_or("ok", |error| error.kind.as_str());
    host.client().shutdown(Duration::from_secs(10)).await;
    Ok(json!({
        "streamed_bytes": bytes,
        "budget_bytes": budget,
        "outcome": kind,
        "baseline_rss_kib": baseline,
        "peak_rss_kib": hwm_after.max(baseline),
        "growth_kib": hwm_after.saturating_sub(hwm_before.max(baseline)),
        "ms": elapsed.as_secs_f64() * 1000.0,
    }))
}

async fn discover(url: &str) -> anyhow::Result<Value> {
    let client = McpClient::new(ClientOptions::default()).expect("the client builds");
    let mut runs = Vec::new();
    let mut found = None;
    for _ in 0..5 {
        let started = Instant::now();
        let discovery = client
            .discover(DiscoveryRequest::new(
                Endpoint::http(url, None),
                Duration::from_secs(30),
            ))
            .await?;
        runs.push(started.elapsed().as_secs_f64() * 1000.0);
        found = Some((discovery.tools.len(), discovery.pages));
    }
    runs.sort_by(f64::total_cmp);
    client.shutdown(Duration::from_secs(10)).await;
    let (tools, pages) = found.unwrap_or_default();
    Ok(json!({"tools": tools, "pages": pages, "median_ms": runs[runs.len() / 2]}))
}
