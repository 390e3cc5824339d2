//! `cargo xtask bench [--rounds N] [--calls N]`: side-by-side figures in one run.
//!
//! Release build; the testkit server on loopback (a child process, `TCP_NODELAY` on)
//! serves every case, and the cases run in turn, interleaved over several rounds so that
//! noise hits every client alike; each figure is the median over the rounds.
//!
//! 1. Sequential echo calls: ours in each era (legacy: a session per call; 2026-07-28:
//!    stateless), the floor (one persistent rmcp session, one POST per call), and the
//!    official TypeScript and Python SDK clients doing a session per call. calls/s, p50,
//!    p99, and each one's ratio to ours.
//! 2. Concurrency: 1, 16, 64 and 256 callers through one `ToolHost`, both eras.
//! 3. Memory: peak RSS growth with 1,000 calls in flight on a sleeping server, and while
//!    one call's server streams 100 MiB against a 1 MiB budget.
//! 4. Discovery of 1,000 tools over 10 pages.
//! 5. The sequential case against a server without `TCP_NODELAY`.
//! 6. Loading a host config of 10,000 bindings, and building the host from it.
//!
//! Prints a markdown report and writes `target/bench/bench.json`.

use std::{fmt::Write as _, process::Command, time::Duration};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::{peers, util};

/// One measurement, run once per round.
type Measure<'a> = Box<dyn Fn() -> anyhow::Result<Value> + 'a>;

/// The subcommand.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let mut rounds = 3usize;
    let mut calls = 1000u64;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => rounds = args.next().context("--rounds needs a number")?.parse()?,
            "--calls" => calls = args.next().context("--calls needs a number")?.parse()?,
            other => anyhow::bail!("unknown argument {other:?}: --rounds N, --calls N"),
        }
    }
    let peers = peers::install()?;
    util::run(util::cargo().args([
        "build",
        "--quiet",
        "--release",
        "-p",
        "brain-conformance",
        "--bin",
        "brain-bench",
        "-p",
        "brain-mcp-testkit",
        "--bins",
    ]))?;
    let release = util::target_dir().join("release");
    let out = util::target_dir().join("bench");
    std::fs::create_dir_all(&out)?;
    let bench = |args: &[&str]| -> anyhow::Result<Value> {
        let line = util::output(Command::new(release.join("brain-bench")).args(args))?;
        serde_json::from_str(line.trim()).with_context(|| format!("brain-bench printed {line:?}"))
    };
    let start = |flags: &[&str], name: &str| -> anyhow::Result<util::Server> {
        let mut command = Command::new(release.join("brain-mcp-testkit-http"));
        command
            .args(["--era", "both", "--no-call-details"])
            .args(flags);
        util::Server::start(
            command,
            &out.join(format!("{name}.log")),
            Duration::from_secs(30),
        )
    };
    let echo_args = r#"{"message":"hello"}"#;
    let peer_calls = (calls / 5).max(50).to_string();
    let calls_text = calls.to_string();
    let warmup = (calls / 10).max(10).to_string();

    // 1. Sequential, and 5. without TCP_NODELAY.
    let mut sequential = Vec::new();
    for (label, flags) in [("nodelay", vec![]), ("no-nodelay", vec!["--no-nodelay"])] {
        let server = start(&flags, &format!("testkit-{label}"))?;
        let url = server.url.clone();
        let mut clients: Vec<(&str, Measure)> = vec![
            (
                "ours-legacy",
                Box::new(|| {
                    bench(&[
                        "seq",
                        "--url",
                        &url,
                        "--client",
                        "legacy",
                        "--calls",
                        &calls_text,
                        "--warmup",
                        &warmup,
                    ])
                }),
            ),
            (
                "ours-modern",
                Box::new(|| {
                    bench(&[
                        "seq",
                        "--url",
                        &url,
                        "--client",
                        "modern",
                        "--calls",
                        &calls_text,
                        "--warmup",
                        &warmup,
                    ])
                }),
            ),
            (
                "floor",
                Box::new(|| {
                    bench(&[
                        "seq",
                        "--url",
                        &url,
                        "--client",
                        "floor",
                        "--calls",
                        &calls_text,
                        "--warmup",
                        &warmup,
                    ])
                }),
            ),
        ];
        if label == "nodelay" {
            let (node, python, scripts) = (
                peers.node.clone(),
                peers.python.clone(),
                peers.scripts.clone(),
            );
            let (u1, u2, n1, n2) = (
                url.clone(),
                url.clone(),
                peer_calls.clone(),
                peer_calls.clone(),
            );
            clients.push((
                "ts-sdk",
                Box::new(move || {
                    let line = util::output(
                        Command::new(&node)
                            .arg(scripts.join("bench_ts_client.mjs"))
                            .args([u1.as_str(), n1.as_str(), "20", "echo", echo_args]),
                    )?;
                    Ok(serde_json::from_str(line.trim())?)
                }),
            ));
            let scripts = peers.scripts.clone();
            clients.push((
                "py-sdk",
                Box::new(move || {
                    let line = util::output(
                        Command::new(&python)
                            .arg(scripts.join("bench_py_client.py"))
                            .args([u2.as_str(), n2.as_str(), "20", "echo", echo_args]),
                    )?;
                    Ok(serde_json::from_str(line.trim())?)
                }),
            ));
        }
        let mut runs: Vec<Vec<Value>> = vec![Vec::new(); clients.len()];
        for round in 0..rounds {
            for (i, (name, client)) in clients.iter().enumerate() {
                eprintln!("bench: sequential ({label}) round {} {name}", round + 1);
                runs[i].push(client()?);
            }
        }
        for ((name, _), runs) in clients.iter().zip(runs) {
            sequential.push(json!({
                "server": label,
                "client": name,
                "label": runs[0]["client"],
                "calls_per_s": median(&runs, "calls_per_s"),
                "p50_ms": median(&runs, "p50_ms"),
                "p99_ms": median(&runs, "p99_ms"),
            }));
        }
        drop(server);
    }

    // 2. Concurrency, 3. memory.
    let server = start(&[], "testkit-load")?;
    let url = server.url.clone();
    let mut concurrency = Vec::new();
    for era in ["legacy", "modern"] {
        for callers in [1u64, 16, 64, 256] {
            let total = (callers * 50).clamp(1000, 5000).to_string();
            let mut runs = Vec::new();
            for _ in 0..rounds {
                eprintln!("bench: {callers} concurrent callers ({era})");
                runs.push(bench(&[
                    "concurrent",
                    "--url",
                    &url,
                    "--era",
                    era,
                    "--callers",
                    &callers.to_string(),
                    "--calls",
                    &total,
                ])?);
            }
            concurrency.push(json!({
                "era": era,
                "callers": callers,
                "calls_per_s": median(&runs, "calls_per_s"),
                "p99_ms": median(&runs, "p99_ms"),
            }));
        }
    }
    eprintln!("bench: memory");
    let inflight_legacy = bench(&[
        "inflight",
        "--url",
        &url,
        "--era",
        "legacy",
        "--calls",
        "1000",
        "--sleep-ms",
        "3000",
    ])?;
    let inflight_modern = bench(&[
        "inflight",
        "--url",
        &url,
        "--era",
        "modern",
        "--calls",
        "1000",
        "--sleep-ms",
        "3000",
    ])?;
    let stream = bench(&[
        "stream",
        "--url",
        &url,
        "--bytes",
        &(100u64 << 20).to_string(),
        "--budget",
        &(1u64 << 20).to_string(),
    ])?;
    drop(server);

    // 4. Discovery.
    // The testkit lists 13 scripted tools; the rest are generated.
    let tools = 1000 - 13;
    let server = start(
        &["--page-size", "100", "--extra-tools", &tools.to_string()],
        "testkit-discovery",
    )?;
    eprintln!("bench: discovery");
    let discovery = bench(&["discover", "--url", &server.url])?;
    drop(server);

    eprintln!("bench: config");
    let config = bench(&["config", "--bindings", "10000"])?;

    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let report = json!({
        "cores": cores,
        "rounds": rounds,
        "versions": {
            "rmcp": "3.11.0",
            "ts_sdk": peers::TS_SDK,
            "python_mcp": peers::PY_MCP,
            "node": peers::NODE,
        },
        "sequential": sequential,
        "concurrency": concurrency,
        "memory": {"inflight_legacy": inflight_legacy, "inflight_modern": inflight_modern, "stream": stream},
        "discovery": discovery,
        "config": config,
    });
    let path = out.join("bench.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&report)?)?;
    println!("{}", markdown(&report));
    eprintln!("bench: wrote {}", path.display());
    Ok(())
}

fn median(runs: &[Value], key: &str) -> f64 {
    let mut values: Vec<f64> = runs.iter().filter_map(|run| run[key].as_f64()).collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

fn markdown(report: &Value) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## cargo xtask bench\n\n{} cores; rmcp {}, TypeScript SDK {}, python mcp {}; medians of {} rounds; echo tool on the testkit over loopback.\n",
        report["cores"],
        report["versions"]["rmcp"],
        report["versions"]["ts_sdk"],
        report["versions"]["python_mcp"],
        report["rounds"]
    );
    for server in ["nodelay", "no-nodelay"] {
        let rows: Vec<&Value> = report["sequential"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|row| row["server"] == server)
            .collect();
        let find = |client: &str| rows.iter().find(|row| row["client"] == client).copied();
        let _ = writeln!(
            md,
            "### Sequential calls, server {}\n\n| client | calls/s | p50 ms | p99 ms | p50 vs legacy ours | p50 vs 2026 ours | calls/s: ours legacy ÷ it |\n|---|---|---|---|---|---|---|",
            if server == "nodelay" {
                "with TCP_NODELAY"
            } else {
                "without TCP_NODELAY"
            }
        );
        let legacy = find("ours-legacy");
        let modern = find("ours-modern");
        for row in &rows {
            let ratio = |ours: Option<&Value>, key: &str| {
                ours.and_then(|ours| Some(row[key].as_f64()? / ours[key].as_f64()?))
                    .map_or("-".to_owned(), |r| format!("{r:.2}x"))
            };
            let speedup = legacy
                .and_then(|legacy| {
                    Some(legacy["calls_per_s"].as_f64()? / row["calls_per_s"].as_f64()?)
                })
                .map_or("-".to_owned(), |r| format!("{r:.1}x"));
            let _ = writeln!(
                md,
                "| {} | {:.0} | {:.3} | {:.3} | {} | {} | {} |",
                row["label"].as_str().unwrap_or_default(),
                row["calls_per_s"].as_f64().unwrap_or(0.0),
                row["p50_ms"].as_f64().unwrap_or(0.0),
                row["p99_ms"].as_f64().unwrap_or(0.0),
                ratio(legacy, "p50_ms"),
                ratio(modern, "p50_ms"),
                speedup,
            );
        }
        if let (Some(floor), Some(legacy), Some(modern)) = (find("floor"), legacy, modern) {
            let p50 = |row: &Value| row["p50_ms"].as_f64().unwrap_or(f64::NAN);
            let _ = writeln!(
                md,
                "\nLegacy per-call p50 is {:.2}x the floor's; 2026-07-28 per-call p50 is {:.2}x the floor's.",
                p50(legacy) / p50(floor),
                p50(modern) / p50(floor)
            );
            if let Some(ts) = find("ts-sdk") {
                let _ = writeln!(
                    md,
                    "Ours (legacy) makes {:.1}x the calls/s of the TypeScript SDK's per-call client; ours (2026-07-28) {:.1}x.",
                    legacy["calls_per_s"].as_f64().unwrap_or(0.0)
                        / ts["calls_per_s"].as_f64().unwrap_or(f64::NAN),
                    modern["calls_per_s"].as_f64().unwrap_or(0.0)
                        / ts["calls_per_s"].as_f64().unwrap_or(f64::NAN)
                );
            }
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(
        md,
        "### Concurrency (one ToolHost)\n\n| era | callers | calls/s | p99 ms |\n|---|---|---|---|"
    );
    for row in report["concurrency"].as_array().into_iter().flatten() {
        let _ = writeln!(
            md,
            "| {} | {} | {:.0} | {:.2} |",
            row["era"].as_str().unwrap_or_default(),
            row["callers"],
            row["calls_per_s"].as_f64().unwrap_or(0.0),
            row["p99_ms"].as_f64().unwrap_or(0.0)
        );
    }
    let memory = &report["memory"];
    let _ = writeln!(
        md,
        "\n### Memory\n\n| case | baseline RSS | peak RSS | growth |\n|---|---|---|---|\n| 1,000 calls in flight, legacy | {} KiB | {} KiB | {} KiB ({:.1} KiB per call) |\n| 1,000 calls in flight, 2026-07-28 | {} KiB | {} KiB | {} KiB ({:.1} KiB per call) |\n| one call, server streams 100 MiB, budget 1 MiB ({}) | {} KiB | {} KiB | {} KiB |",
        memory["inflight_legacy"]["baseline_rss_kib"],
        memory["inflight_legacy"]["peak_rss_kib"],
        memory["inflight_legacy"]["growth_kib"],
        memory["inflight_legacy"]["per_call_kib"]
            .as_f64()
            .unwrap_or(0.0),
        memory["inflight_modern"]["baseline_rss_kib"],
        memory["inflight_modern"]["peak_rss_kib"],
        memory["inflight_modern"]["growth_kib"],
        memory["inflight_modern"]["per_call_kib"]
            .as_f64()
            .unwrap_or(0.0),
        memory["stream"]["outcome"].as_str().unwrap_or_default(),
        memory["stream"]["baseline_rss_kib"],
        memory["stream"]["peak_rss_kib"],
        memory["stream"]["growth_kib"],
    );
    let discovery = &report["discovery"];
    let _ = writeln!(
        md,
        "\n### Discovery\n\n{} tools over {} pages: {:.1} ms (median of 5).",
        discovery["tools"],
        discovery["pages"],
        discovery["median_ms"].as_f64().unwrap_or(0.0)
    );
    let config = &report["config"];
    let _ = writeln!(
        md,
        "\n### Host config\n\n{} bindings ({} bytes of JSON): loaded and validated in {:.0} ms (RSS {} → {} KiB); ToolHost built in {:.0} ms (RSS {} KiB).",
        config["bindings"],
        config["config_bytes"],
        config["load_ms"].as_f64().unwrap_or(0.0),
        config["rss_before_kib"],
        config["rss_after_load_kib"],
        config["build_host_ms"].as_f64().unwrap_or(0.0),
        config["rss_after_host_kib"],
    );
    md
}
