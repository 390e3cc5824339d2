//! The gateway section of `cargo xtask bench` (`--only gateway`): the same echo call made
//! directly (`ToolHost` to the testkit), through our gateway (`mcp-tools serve`, a JWT from
//! an issuer on loopback), through IBM ContextForge and through FastMCP's proxy, all in
//! front of the same testkit, all driven by `brain-bench` (our `ToolHost`), in both eras
//! where the peer serves them. One run: each figure is measured once.
//!
//! Per row: sequential p50 and p99 (and what the hop adds to a direct call); calls/s at 1,
//! 16 and 256 in flight; CPU seconds per 1,000 calls of the gateway's whole process tree
//! (`/proc/<pid>/stat`, utime + stime of the tree, before and after); the tree's resident
//! memory per idle connected client (100 legacy sessions through their handshake, measured
//! first, on the gateway as started) and per call in flight (the peak with 128 calls on a
//! sleeping tool, over the same baseline: one client through one call; measured next, still
//! before any other load). A peer that cannot be installed or run
//! here gets a row that says what failed; the section still completes.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::{peers, util};

/// The variable that carries a gateway's bearer to `brain-bench` (never printed).
const TOKEN_ENV: &str = "BENCH_GATEWAY_TOKEN";
/// The audience of our gateway's tokens (a loopback `Host` is accepted at any port).
const RESOURCE: &str = "http://127.0.0.1/mcp";
/// Calls in flight for the throughput figures.
pub(super) const IN_FLIGHT: [u64; 3] = [1, 16, 256];
/// Calls held in flight (on the testkit's `sleep` tool) for the memory figure.
const HELD_CALLS: u64 = 128;
/// Idle clients for the memory figure.
const IDLE_CLIENTS: u64 = 100;

/// One thing to call through: the direct path or a gateway.
struct Target {
    id: &'static str,
    label: String,
    auth: String,
    /// Where it serves (or why it does not).
    url: anyhow::Result<String>,
    /// The root of the gateway's process tree (none for the direct path).
    pid: Option<u32>,
    /// The upstream tools' names there: this + the name.
    prefix: String,
    /// Whether it needs our bearer.
    token: bool,
    /// The eras our client calls it in.
    eras: &'static [&'static str],
    /// A Python peer: fewer calls, so the section stays within a few minutes.
    slow: bool,
}

/// Runs the section; `calls` is the bench's `--calls`.
pub(super) fn run(release: &Path, out: &Path, calls: u64) -> anyhow::Result<Value> {
    let started = Instant::now();
    let out = out.join("gateway");
    std::fs::create_dir_all(&out)?;
    let brain_bench = release.join("brain-bench");
    let scripts = util::workspace_root().join("tests").join("peers");
    eprintln!("bench: gateway: installing the peers (bench only)");
    let installed = peers::install_bench();

    // The upstream every row calls, and the issuer of our gateway's tokens.
    let mut upstream = Command::new(release.join("brain-mcp-testkit-http"));
    upstream.args(["--era", "both", "--no-call-details"]);
    let upstream =
        util::Server::start(upstream, &out.join("upstream.log"), Duration::from_secs(30))?;
    let token_file = out.join("token");
    let mut issuer = Command::new(&brain_bench);
    issuer
        .args(["issuer", "--resource", RESOURCE, "--tenant", "bench"])
        .arg("--token-out")
        .arg(&token_file);
    let issuer = util::Server::start(issuer, &out.join("issuer.log"), Duration::from_secs(30))?;
    let token = std::fs::read_to_string(&token_file)
        .with_context(|| format!("the issuer wrote no token to {}", token_file.display()))?;

    // Ours.
    let config = out.join("host.json");
    std::fs::write(
        &config,
        serde_json::to_vec_pretty(&gateway_config(&upstream.url, &issuer.url))?,
    )?;
    let mut serve = Command::new(release.join("mcp-tools"));
    serve
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .args(["--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "warn");
    let ours = util::Server::start_until(
        serve,
        "listening on ",
        &out.join("mcp-tools-serve.log"),
        Duration::from_secs(30),
    );

    // FastMCP's proxy.
    let fastmcp = installed.fastmcp.and_then(|python| {
        let mut command = Command::new(python);
        command
            .arg(scripts.join("bench_fastmcp_proxy.py"))
            .arg(&upstream.url);
        util::Server::start(command, &out.join("fastmcp.log"), Duration::from_secs(60))
    });

    // ContextForge: started, the upstream registered, a virtual server of its tools.
    let cf_state = out.join("contextforge");
    let cf_token = out.join("contextforge-token");
    // Nothing of an earlier run may stand in for this one's.
    let _ = std::fs::remove_file(cf_state.join("tools.json"));
    let _ = std::fs::remove_file(&cf_token);
    let contextforge = installed.contextforge.and_then(|python| {
        let mut command = Command::new(python);
        command
            .arg(scripts.join("bench_contextforge.py"))
            .arg(&upstream.url)
            .arg(&cf_state)
            .arg(&cf_token);
        util::Server::start(
            command,
            &out.join("contextforge.log"),
            Duration::from_secs(180),
        )
    });
    let cf_prefix = std::fs::read_to_string(cf_state.join("tools.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|names| {
            names["echo"]
                .as_str()
                .and_then(|name| name.strip_suffix("echo"))
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let cf_bearer = std::fs::read_to_string(&cf_token).unwrap_or_default();

    let server = |started: &anyhow::Result<util::Server>| match started {
        Ok(server) => (Ok(server.url.clone()), Some(server.pid())),
        Err(error) => (Err(anyhow::anyhow!("{error:#}")), None),
    };
    let (ours_url, ours_pid) = server(&ours);
    let (fastmcp_url, fastmcp_pid) = server(&fastmcp);
    let (cf_url, cf_pid) = server(&contextforge);
    let targets = [
        Target {
            id: "direct",
            label: "direct: ToolHost to the testkit".to_owned(),
            auth: "none".to_owned(),
            url: Ok(upstream.url.clone()),
            pid: None,
            prefix: String::new(),
            token: false,
            eras: &["legacy", "modern"],
            slow: false,
        },
        Target {
            id: "ours",
            label: "ours: mcp-tools serve".to_owned(),
            auth: "JWT bearer (ES256), checked against a loopback issuer's JWKS (fetched once, cached)".to_owned(),
            url: ours_url,
            pid: ours_pid,
            prefix: String::new(),
            token: true,
            eras: &["legacy", "modern"],
            slow: false,
        },
        Target {
            id: "contextforge",
            label: format!("IBM ContextForge {}", peers::CONTEXTFORGE),
            auth: "its default: JWT bearer (HS256, its JWT_SECRET_KEY) on the REST API and the MCP endpoint".to_owned(),
            url: cf_url,
            pid: cf_pid,
            prefix: cf_prefix,
            token: true,
            eras: &["legacy", "modern"],
            slow: true,
        },
        Target {
            id: "fastmcp",
            label: format!("FastMCP {} proxy (create_proxy)", peers::FASTMCP),
            auth: "its default: none".to_owned(),
            url: fastmcp_url,
            pid: fastmcp_pid,
            prefix: String::new(),
            token: false,
            eras: &["legacy", "modern"],
            slow: true,
        },
    ];

    let mut rows = Vec::new();
    // The floor: one persistent rmcp session to the testkit, what one MCP hop costs at least.
    let floor = measure(&brain_bench, &[], |run| {
        run(&[
            "seq",
            "--client",
            "floor",
            "--url",
            &upstream.url,
            "--calls",
            &calls.to_string(),
            "--warmup",
            &(calls / 10).max(10).to_string(),
        ])
    });
    for target in &targets {
        let bearer = match target.id {
            "contextforge" => cf_bearer.clone(),
            _ => token.clone(),
        };
        let env: Vec<(&str, &str)> = if target.token {
            vec![(TOKEN_ENV, bearer.as_str())]
        } else {
            Vec::new()
        };
        let mut through: Vec<String> = Vec::new();
        if let Ok(url) = &target.url {
            through.extend(["--url".into(), url.clone()]);
        }
        if target.token {
            through.extend(["--token-env".into(), TOKEN_ENV.into()]);
        }
        if !target.prefix.is_empty() {
            through.extend(["--prefix".into(), target.prefix.clone()]);
        }
        let watch: Vec<String> = target
            .pid
            .map(|pid| vec!["--watch-pid".into(), pid.to_string()])
            .unwrap_or_default();
        // First, on the gateway as it started: idle clients (legacy sessions: a 2026-07-28
        // client holds nothing at the server between calls), whose baseline (one client
        // through one call) is also the in-flight figures' (memory a load leaves behind is
        // not given back, so a baseline taken after one would hide what calls cost).
        let idle = (target.pid.is_some() && target.url.is_ok()).then(|| {
            eprintln!("bench: gateway {}: idle clients", target.id);
            measure(&brain_bench, &env, |run| {
                let mut args = vec![
                    "idle".to_owned(),
                    "--clients".into(),
                    IDLE_CLIENTS.to_string(),
                ];
                args.extend(through.iter().cloned());
                args.extend(watch.iter().cloned());
                run(&args.iter().map(String::as_str).collect::<Vec<_>>())
            })
            .unwrap_or_else(|e| json!({"error": format!("{e:#}")}))
        });
        let baseline = idle
            .as_ref()
            .and_then(|idle| idle["tree_baseline_rss_kib"].as_u64());
        // Then, still before any load, calls held in flight in each era (the second era's
        // figure follows the first's on the same process: the peak of the two).
        let mut held = Vec::new();
        for &era in target
            .eras
            .iter()
            .filter(|_| target.pid.is_some() && target.url.is_ok())
        {
            eprintln!("bench: gateway {} {era}: calls held in flight", target.id);
            let line = measure(&brain_bench, &env, |run| {
                let mut args = vec![
                    "inflight".to_owned(),
                    "--era".into(),
                    era.into(),
                    "--calls".into(),
                    HELD_CALLS.to_string(),
                    "--sleep-ms".into(),
                    "2000".into(),
                ];
                args.extend(through.iter().cloned());
                args.extend(watch.iter().cloned());
                if let Some(baseline) = baseline {
                    args.extend(["--baseline-kib".into(), baseline.to_string()]);
                }
                run(&args.iter().map(String::as_str).collect::<Vec<_>>())
            });
            held.push((
                era,
                line.unwrap_or_else(|e| json!({"error": format!("{e:#}")})),
            ));
        }
        for &era in target.eras {
            let mut row = json!({
                "id": target.id, "era": era, "label": target.label, "auth": target.auth,
            });
            if let Err(error) = &target.url {
                row["error"] = json!(format!("{error:#}"));
                rows.push(row);
                continue;
            }
            if era == "legacy"
                && let Some(idle) = &idle
            {
                row["idle_memory"] = idle.clone();
            }
            if let Some((_, line)) = held.iter().find(|(held_era, _)| *held_era == era) {
                row["in_flight_memory"] = line.clone();
            }
            let (seq_calls, seq_warmup) = if target.slow {
                ((calls / 20).max(50), 5)
            } else {
                (calls, (calls / 10).max(10))
            };
            eprintln!("bench: gateway {} {era}: sequential", target.id);
            let client = if era == "legacy" { "legacy" } else { "modern" };
            let seq = measure(&brain_bench, &env, |run| {
                let mut args = vec![
                    "seq".to_owned(),
                    "--client".into(),
                    client.into(),
                    "--calls".into(),
                    seq_calls.to_string(),
                    "--warmup".into(),
                    seq_warmup.to_string(),
                ];
                args.extend(through.iter().cloned());
                run(&args.iter().map(String::as_str).collect::<Vec<_>>())
            });
            match seq {
                Ok(seq) => row["sequential"] = seq,
                Err(error) => {
                    // Nothing else can work if one call at a time does not.
                    row["error"] = json!(format!("{error:#}"));
                    rows.push(row);
                    continue;
                }
            }
            let mut levels = Vec::new();
            for callers in IN_FLIGHT {
                eprintln!("bench: gateway {} {era}: {callers} in flight", target.id);
                // A Python peer serves some 10 calls a second: as few calls as show the
                // level (256 in flight needs 256).
                let total = if target.slow {
                    (callers * 3).clamp(30, 256)
                } else {
                    (callers * 20).clamp(1000, 5000)
                };
                let line = measure(&brain_bench, &env, |run| {
                    let mut args = vec![
                        "concurrent".to_owned(),
                        "--era".into(),
                        era.into(),
                        "--callers".into(),
                        callers.to_string(),
                        "--calls".into(),
                        total.to_string(),
                    ];
                    args.extend(through.iter().cloned());
                    args.extend(watch.iter().cloned());
                    run(&args.iter().map(String::as_str).collect::<Vec<_>>())
                });
                levels.push(match line {
                    Ok(mut line) => {
                        line["in_flight"] = json!(callers);
                        line
                    }
                    Err(error) => json!({"in_flight": callers, "error": format!("{error:#}")}),
                });
            }
            row["concurrency"] = json!(levels);
            rows.push(row);
        }
    }
    drop((ours, fastmcp, contextforge, issuer, upstream));
    Ok(json!({
        "floor": floor.unwrap_or_else(|e| json!({"error": format!("{e:#}")})),
        "rows": rows,
        "seconds": started.elapsed().as_secs_f64(),
        "in_flight_held": HELD_CALLS,
        "idle_clients": IDLE_CLIENTS,
    }))
}

/// Our gateway's host config: the testkit's `echo` and `sleep` for tenant `bench`, JWTs from
/// `issuer`, and limits above what the bench sends (its default of 64 calls in flight per
/// tenant would refuse the 256-in-flight rows).
fn gateway_config(upstream: &str, issuer: &str) -> Value {
    let tools: Vec<Value> = [("echo", 30), ("sleep", 60)]
        .iter()
        .map(|(tool, timeout)| {
            json!({"name": tool, "input_schema": {"type": "object"}, "url": upstream,
                "mcp_tool": tool, "tenants": ["bench"], "timeout_seconds": timeout})
        })
        .collect();
    json!({
        "tools": tools,
        "gateway": {
            "resource": RESOURCE,
            "issuers": [{"issuer": issuer}],
            "tenant_claim": "tenant",
            "limits": {
                "calls_in_flight_per_tenant": 4096,
                "requests_per_minute_per_tenant": 10_000_000,
            },
        },
    })
}

/// Runs one `brain-bench` measurement with `env` (a bearer) and parses its JSON line.
fn measure<F>(brain_bench: &Path, env: &[(&str, &str)], f: F) -> anyhow::Result<Value>
where
    F: FnOnce(&dyn Fn(&[&str]) -> anyhow::Result<Value>) -> anyhow::Result<Value>,
{
    let brain_bench: PathBuf = brain_bench.to_path_buf();
    let run = |args: &[&str]| -> anyhow::Result<Value> {
        let line = util::output(
            Command::new(&brain_bench)
                .args(args)
                .envs(env.iter().copied()),
        )?;
        serde_json::from_str(line.trim()).with_context(|| format!("brain-bench printed {line:?}"))
    };
    f(&run)
}

fn row<'a>(gateway: &'a Value, id: &str, era: &str) -> Option<&'a Value> {
    gateway["rows"]
        .as_array()?
        .iter()
        .find(|row| row["id"] == id && row["era"] == era)
}

fn level(row: Option<&Value>, in_flight: u64) -> Option<&Value> {
    row?["concurrency"]
        .as_array()?
        .iter()
        .find(|line| line["in_flight"] == in_flight && line.get("error").is_none())
}

fn figure(value: Option<&Value>, key: &str) -> f64 {
    value.and_then(|v| v[key].as_f64()).unwrap_or(f64::NAN)
}

fn cell(value: f64, decimals: usize) -> String {
    if value.is_nan() {
        "-".to_owned()
    } else {
        format!("{value:.decimals$}")
    }
}

/// Calls a CPU-second of the row's gateway tree, at `in_flight`.
pub(super) fn calls_per_cpu_second(gateway: &Value, id: &str, era: &str, in_flight: u64) -> f64 {
    1000.0
        / figure(
            level(row(gateway, id, era), in_flight),
            "tree_cpu_s_per_1000_calls",
        )
}

/// The section of the report.
pub(super) fn markdown(report: &Value, md: &mut String) {
    use std::fmt::Write as _;
    let gateway = &report["gateway"];
    let Some(rows) = gateway["rows"].as_array() else {
        return;
    };
    let floor = figure(Some(&gateway["floor"]), "p50_ms");
    let _ = writeln!(
        md,
        "\n### Gateway: the echo call directly and through a gateway (testkit upstream, loopback, our ToolHost as the load generator; one run)\n\nAdded = the row's sequential figure minus the direct call's in the same era. CPU and memory are the gateway's whole process tree. Floor (one persistent rmcp session to the testkit): p50 {} ms.\n",
        cell(floor, 3)
    );
    let _ = writeln!(
        md,
        "| row | era | p50 ms | p99 ms | added p50 ms | added p99 ms | calls/s, 1 in flight | 16 | 256 | CPU s per 1,000 calls, 16 in flight | 256 | KiB per call in flight ({}) | KiB per idle client ({}) |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        gateway["in_flight_held"], gateway["idle_clients"]
    );
    let mut failures = Vec::new();
    for row in rows {
        let (id, era) = (
            row["id"].as_str().unwrap_or_default(),
            row["era"].as_str().unwrap_or_default(),
        );
        if let Some(error) = row["error"].as_str() {
            let _ = writeln!(
                md,
                "| `{id}` | {era} | failed (below) | | | | | | | | | | |"
            );
            failures.push(format!("`{id}` ({era}): {error}"));
            continue;
        }
        let direct = row_direct(gateway, era);
        let seq = Some(&row["sequential"]);
        let (p50, p99) = (figure(seq, "p50_ms"), figure(seq, "p99_ms"));
        let added = |key: &str| {
            if id == "direct" {
                f64::NAN
            } else {
                figure(seq, key) - figure(direct.map(|d| &d["sequential"]), key)
            }
        };
        let at = |n: u64| level(Some(row), n);
        for line in row["concurrency"].as_array().into_iter().flatten() {
            if let Some(error) = line["error"].as_str() {
                failures.push(format!(
                    "`{id}` ({era}), {} in flight: {error}",
                    line["in_flight"]
                ));
            }
        }
        for key in ["in_flight_memory", "idle_memory"] {
            if let Some(error) = row[key]["error"].as_str() {
                failures.push(format!("`{id}` ({era}), {key}: {error}"));
            }
        }
        let _ = writeln!(
            md,
            "| `{id}` | {era} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            cell(p50, 3),
            cell(p99, 3),
            cell(added("p50_ms"), 3),
            cell(added("p99_ms"), 3),
            cell(figure(at(1), "calls_per_s"), 0),
            cell(figure(at(16), "calls_per_s"), 0),
            cell(figure(at(256), "calls_per_s"), 0),
            cell(figure(at(16), "tree_cpu_s_per_1000_calls"), 3),
            cell(figure(at(256), "tree_cpu_s_per_1000_calls"), 3),
            cell(
                figure(Some(&row["in_flight_memory"]), "tree_per_call_kib"),
                1
            ),
            cell(figure(Some(&row["idle_memory"]), "per_client_kib"), 1),
        );
    }
    let mut seen = Vec::new();
    for row in rows {
        let id = row["id"].as_str().unwrap_or_default();
        if !seen.contains(&id) {
            seen.push(id);
            let _ = writeln!(
                md,
                "\n- `{id}`: {}; auth: {}",
                row["label"].as_str().unwrap_or_default(),
                row["auth"].as_str().unwrap_or_default()
            );
        }
    }
    if !failures.is_empty() {
        let _ = writeln!(md, "\nWhat failed:\n");
        for failure in failures {
            // The first lines: enough to see why, not a whole log.
            let short: String = failure.lines().take(12).collect::<Vec<_>>().join("\n    ");
            let _ = writeln!(md, "- {short}");
        }
    }
    let _ = writeln!(md, "\nGoals (reported, never asserted):\n");
    for era in ["legacy", "modern"] {
        let era_name = if era == "legacy" {
            "legacy"
        } else {
            "2026-07-28"
        };
        let ours = row(gateway, "ours", era);
        let direct = row_direct(gateway, era);
        let hop = figure(ours.map(|r| &r["sequential"]), "p50_ms")
            - figure(direct.map(|r| &r["sequential"]), "p50_ms");
        let r = hop / floor;
        super::ratio_line(
            md,
            &format!(
                "our gateway's hop (p50 added to a direct call, sequential) ÷ floor p50, {era_name}"
            ),
            r,
            "≤ 1.2x",
            r <= 1.2,
        );
        let r = figure(level(ours, 256), "calls_per_s") / figure(level(direct, 256), "calls_per_s");
        super::ratio_line(
            md,
            &format!("our gateway's calls/s ÷ direct calls/s, 256 in flight, {era_name}"),
            r,
            "≥ 0.45x",
            r >= 0.45,
        );
        for (peer, goal) in [("contextforge", 10.0), ("fastmcp", 3.0)] {
            let r = calls_per_cpu_second(gateway, "ours", era, 16)
                / calls_per_cpu_second(gateway, peer, era, 16);
            super::ratio_line(
                md,
                &format!("our calls per CPU-second ÷ `{peer}`'s, 16 in flight, {era_name}"),
                r,
                &format!("≥ {goal}x"),
                r >= goal,
            );
        }
    }
}

fn row_direct<'a>(gateway: &'a Value, era: &str) -> Option<&'a Value> {
    row(gateway, "direct", era)
}
