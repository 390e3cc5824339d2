//! `brain-bench`: the client side of `cargo xtask bench`. Each mode runs one measurement
//! against a server that runs in another process, and prints one JSON line.
//!
//! - `seq --url URL --client legacy|modern|floor --calls N --warmup W`: sequential echo
//!   calls through `ToolHost` (a session per call, or 2026-07-28 stateless), or through
//!   one persistent rmcp session (the floor a per-call design can approach).
//! - `concurrent --url URL --era legacy|modern --callers C --calls N`: C callers sharing
//!   one `ToolHost`.
//! - `inflight --url URL --era legacy|modern --calls N --sleep-ms MS`: peak memory with N
//!   calls in flight on a sleeping server.
//! - `stream --url URL --bytes B --budget M`: memory while one call's server streams B
//!   bytes against a budget of M.
//! - `discover --url URL`: the time to list every tool (every page).

use std::{
    process::ExitCode,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use anyhow::{Context as _, bail};
use brain_mcp_transport::{DiscoveryRequest, Endpoint};
use brain_tools::{CallScope, ClientOptions, EraPreference, McpClient, ToolHost};
use brain_tools_config::HostConfig;
use brain_tools_events::ToolEvent;
use rmcp::{
    ServiceExt,
    model::CallToolRequestParams,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::flag_value;

/// Runs the bench binary with its arguments (without the program name).
pub fn main_with_args(args: Vec<String>) -> ExitCode {
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
    let outcome = runtime.block_on(run(&args));
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
    let url = flag_value(args, "--url").context("--url is required")?;
    match args.first().map(String::as_str) {
        Some("seq") => {
            let calls = number(args, "--calls", 300)?;
            let warmup = number(args, "--warmup", 30)?;
            match flag_value(args, "--client") {
                Some("floor") => floor(url, false, calls, warmup).await,
                Some("floor-modern") => floor(url, true, calls, warmup).await,
                Some("transport-modern") => transport_only(url, calls, warmup).await,
                Some("legacy") => ours(url, EraPreference::Legacy, calls, warmup).await,
                Some("modern") => ours(url, EraPreference::Modern, calls, warmup).await,
                other => {
                    bail!("--client takes legacy, modern, floor or floor-modern, not {other:?}")
                }
            }
        }
        Some("concurrent") => {
            let era = crate::parse_era(flag_value(args, "--era"))?;
            concurrent(
                url,
                era,
                number(args, "--callers", 16)?,
                number(args, "--calls", 2000)?,
            )
            .await
        }
        Some("inflight") => {
            let era = crate::parse_era(flag_value(args, "--era"))?;
            inflight(
                url,
                era,
                number(args, "--calls", 1000)?,
                number(args, "--sleep-ms", 2000)?,
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
        other => bail!("unknown mode {other:?}: seq, concurrent, inflight, stream or discover"),
    }
}

/// Latency figures of a run.
fn summary(client: &str, mut latencies: Vec<Duration>, elapsed: Duration) -> Value {
    latencies.sort();
    let at = |q: f64| {
        let index = ((latencies.len() as f64 - 1.0) * q).round() as usize;
        latencies
            .get(index)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    json!({
        "client": client,
        "calls": latencies.len(),
        "calls_per_s": latencies.len() as f64 / elapsed.as_secs_f64(),
        "p50_ms": at(0.5),
        "p99_ms": at(0.99),
    })
}

/// A host with one `echo` binding (and a `sleep` and a `big` one) on the server.
fn host(url: &str, era: EraPreference, budget: u64) -> anyhow::Result<ToolHost> {
    let tools: Vec<Value> = [("echo", 30), ("sleep", 60), ("big", 60)]
        .iter()
        .map(|(tool, timeout)| {
            json!({"name": tool, "input_schema": {"type": "object"}, "url": url, "mcp_tool": tool,
                   "tenants": ["bench"], "timeout_seconds": timeout, "max_output_bytes": budget})
        })
        .collect();
    let loaded = HostConfig::from_json_value_with_env(&json!({ "tools": tools }), |_| true)
        .map_err(|errors| anyhow::anyhow!("{errors}"))?;
    Ok(ToolHost::builder(loaded.config)
        .client(McpClient::new(ClientOptions::default().era(era)))
        .build()?)
}

fn ignore(_: ToolEvent) {}

async fn echo(host: &ToolHost, i: u64) -> anyhow::Result<()> {
    let scope = CallScope::new("bench", "s", format!("c{i}"));
    let result = host
        .call(
            &scope,
            "echo",
            json!({"message": "hello"}),
            CancellationToken::new(),
            &ignore,
        )
        .await;
    if result.is_error {
        bail!("call {i} failed: {:?}", result.error);
    }
    Ok(())
}

async fn ours(url: &str, era: EraPreference, calls: u64, warmup: u64) -> anyhow::Result<Value> {
    let host = host(url, era, 1 << 20)?;
    for i in 0..warmup {
        echo(&host, i).await?;
    }
    let mut latencies = Vec::with_capacity(calls as usize);
    let started = Instant::now();
    for i in 0..calls {
        let call = Instant::now();
        echo(&host, i).await?;
        latencies.push(call.elapsed());
    }
    let elapsed = started.elapsed();
    host.client().shutdown(Duration::from_secs(10)).await;
    let name = if era == EraPreference::Legacy {
        "ours, legacy session per call"
    } else {
        "ours, 2026-07-28 stateless"
    };
    Ok(summary(name, latencies, elapsed))
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
async fn transport_only(url: &str, calls: u64, warmup: u64) -> anyhow::Result<Value> {
    let client = McpClient::new(ClientOptions::default().era(EraPreference::Modern));
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
                .map_err(|error| anyhow::anyhow!("{error}"))
        }
    };
    for i in 0..warmup {
        call(i).await?;
    }
    let mut latencies = Vec::with_capacity(calls as usize);
    let started = Instant::now();
    for i in 0..calls {
        let one = Instant::now();
        call(i).await?;
        latencies.push(one.elapsed());
    }
    let elapsed = started.elapsed();
    client.shutdown(Duration::from_secs(10)).await;
    Ok(summary(
        "our transport alone, 2026-07-28",
        latencies,
        elapsed,
    ))
}

/// One persistent rmcp session, one POST per call, over the same kind of pooled client;
/// with `modern`, one rmcp client in the 2026-07-28 lifecycle instead (no session).
async fn floor(url: &str, modern: bool, calls: u64, warmup: u64) -> anyhow::Result<Value> {
    // Building our client installs the TLS provider reqwest needs.
    let _ours = McpClient::new(ClientOptions::default());
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .tcp_nodelay(true)
        .build()?;
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
        let params = CallToolRequestParams::new("echo").with_arguments(
            json!({"message": "hello"})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
        let peer = client.peer().clone();
        async move {
            peer.call_tool(params)
                .await
                .with_context(|| format!("floor call {i}"))
        }
    };
    for i in 0..warmup {
        call(i).await?;
    }
    let mut latencies = Vec::with_capacity(calls as usize);
    let started = Instant::now();
    for i in 0..calls {
        let one = Instant::now();
        call(i).await?;
        latencies.push(one.elapsed());
    }
    let elapsed = started.elapsed();
    let _ = client.cancel().await;
    let name = if modern {
        "rmcp alone, 2026-07-28 stateless"
    } else {
        "floor: one persistent rmcp session"
    };
    Ok(summary(name, latencies, elapsed))
}

async fn concurrent(
    url: &str,
    era: EraPreference,
    callers: u64,
    calls: u64,
) -> anyhow::Result<Value> {
    let host = host(url, era, 1 << 20)?;
    for i in 0..callers.min(32) {
        echo(&host, i).await?;
    }
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
    let mut line = summary("ours", latencies, elapsed);
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
    calls: u64,
    sleep_ms: u64,
) -> anyhow::Result<Value> {
    let host = host(url, era, 1 << 20)?;
    echo(&host, 0).await?;
    let (baseline, _) = memory();
    let mut peak = baseline;
    let mut running = Vec::new();
    for i in 0..calls {
        let host = host.clone();
        running.push(tokio::spawn(async move {
            let scope = CallScope::new("bench", "s", format!("sleep{i}"));
            host.call(
                &scope,
                "sleep",
                json!({"ms": sleep_ms}),
                CancellationToken::new(),
                &ignore,
            )
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
    let failed = results.iter().filter(|result| result.is_error).count();
    if failed > 0 {
        bail!("{failed} of {calls} sleeping calls failed");
    }
    host.client().shutdown(Duration::from_secs(30)).await;
    Ok(json!({
        "calls_in_flight": calls,
        "era": if era == EraPreference::Legacy { "legacy" } else { "2026-07-28" },
        "baseline_rss_kib": baseline,
        "peak_rss_kib": peak,
        "growth_kib": peak.saturating_sub(baseline),
        "per_call_kib": peak.saturating_sub(baseline) as f64 / calls as f64,
    }))
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
        .call(
            &scope,
            "big",
            json!({"bytes": bytes}),
            CancellationToken::new(),
            &ignore,
        )
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
    let client = McpClient::new(ClientOptions::default());
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
