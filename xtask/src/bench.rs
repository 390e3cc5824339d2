//! `cargo xtask bench [--rounds N] [--calls N] [--only SECTION,...]`: side-by-side figures
//! in one run (`--only` runs some sections: see [`SECTIONS`]).
//!
//! Release build; the testkit server on loopback (a child process, `TCP_NODELAY` on)
//! serves every HTTP case, and the cases run in turn, interleaved over several rounds so
//! that noise hits every client alike; each figure is the median over the rounds.
//!
//! 1. Sequential echo calls: ours in each era (legacy: a session per call, with the
//!    default settings (warm contexts on) and cold; 2026-07-28: stateless), the floor (one
//!    persistent rmcp session, one POST per call), and the official TypeScript and Python
//!    SDK clients doing a session per call (TypeScript 1.32 and the v2 client in both
//!    eras). calls/s, p50, p99, and the ratios.
//! 2. The same HTTP rows (not the Python SDK's) through a proxy that adds 5 ms each way
//!    (`brain-bench proxy`: a 10 ms round trip), in the `wan` array.
//! 3. stdio: ours (warm contexts on and off) and the TypeScript SDK's clients (1.32, v2),
//!    each starting `server-everything` per call, and the stdio floor (one persistent
//!    process through rmcp), in the `stdio` array; the spawn-bound limit (process starts a
//!    second, 1 and 2 at a time) in `spawn`.
//! 4. Calls one every 50 ms instead of back to back, for the legacy, floor and stdio rows
//!    (loopback, WAN, stdio), in the `paced` array.
//! 5. Concurrency: 1, 16, 64 and 256 callers through one `ToolHost`, both eras.
//! 6. Memory: peak RSS growth with 1,000 calls in flight on a sleeping server, and while
//!    one call's server streams 100 MiB against a 1 MiB budget.
//! 7. Discovery of 1,000 tools over 10 pages.
//! 8. The sequential case against a server without `TCP_NODELAY`, with the `TCP_QUICKACK`
//!    prototype's rows (rmcp on hyper-util, without and with the re-armed option) against
//!    both servers.
//! 9. Loading a host config of 10,000 bindings, and building the host from it.
//! 10. Authorization: sequential calls in each era with a static token and with OAuth
//!     client credentials (the token fetched once, then cached), against the testkit run
//!     `--protected` (every request's bearer checked; it is its own authorization server),
//!     and a tenant's delegated grant in a file store, in PostgreSQL, and in a file store
//!     bound to a DPoP key (a fresh ES256 proof on every request), in the `authorization`
//!     array.
//! 11. Warm against cold with and without a CPU-bound background load that the bench
//!     starts and stops itself (one spinning thread per core, no I/O): legacy back to back
//!     on loopback, stdio back to back and every 500 ms, in the `loaded` array.
//!
//! 12. The gateway: the same call directly, through our gateway (`mcp-tools serve`, a JWT
//!     checked against a loopback issuer's keys), through IBM ContextForge and through
//!     FastMCP's proxy, in both eras: latency added sequentially, calls/s at 1, 16 and 256
//!     in flight, CPU per 1,000 calls and memory of each gateway's process tree, in the
//!     `gateway` object (see `gateway`).
//!
//! Prints a markdown report, writes `target/bench/bench.json` and a bar chart of the p50s
//! (`target/bench/p50.svg`).

mod chart;
mod gateway;

use std::{fmt::Write as _, process::Command, time::Duration};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::{peers, util};

/// One measurement, run once per round.
type Measure<'a> = Box<dyn Fn() -> anyhow::Result<Value> + 'a>;

/// The delay the simulated network adds in each direction.
const WAN_DELAY_MS: u64 = 5;
/// The interval of the paced rows.
const PACE_MS: u64 = 50;
/// A slower pace for stdio, where opening a context (starting Node) takes longer than 50 ms.
const STDIO_PACE_MS: u64 = 500;

/// The sections `--only` selects (all by default).
pub(crate) const SECTIONS: [&str; 14] = [
    "sequential",
    "paced",
    "wan",
    "no-nodelay",
    "auth",
    "stdio",
    "stdio-paced",
    "spawn",
    "load",
    "concurrency",
    "memory",
    "discovery",
    "config",
    "gateway",
];

/// The subcommand.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let mut rounds = 3usize;
    let mut calls = 1000u64;
    let mut only: Option<Vec<String>> = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--rounds" => rounds = args.next().context("--rounds needs a number")?.parse()?,
            "--calls" => calls = args.next().context("--calls needs a number")?.parse()?,
            "--only" => {
                let list: Vec<String> = args
                    .next()
                    .context("--only needs a comma-separated list of sections")?
                    .split(',')
                    .map(|section| section.trim().to_owned())
                    .collect();
                if let Some(unknown) = list.iter().find(|s| !SECTIONS.contains(&s.as_str())) {
                    anyhow::bail!("unknown section {unknown:?}: {}", SECTIONS.join(", "));
                }
                only = Some(list);
            }
            other => anyhow::bail!(
                "unknown argument {other:?}: --rounds N, --calls N, --only SECTION,... ({})",
                SECTIONS.join(", ")
            ),
        }
    }
    let want = |section: &str| {
        only.as_ref()
            .is_none_or(|list| list.iter().any(|s| s == section))
    };
    // The npm and python peers of the other sections; the gateway section installs its own
    // (`peers::install_bench`).
    let peers = if SECTIONS.iter().any(|s| *s != "gateway" && want(s)) {
        peers::install()?
    } else {
        peers::Peers::locate()
    };
    let mut build = util::cargo();
    build.args([
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
    ]);
    if want("gateway") {
        build.args(["-p", "brain-mcp-tools", "--bin", "mcp-tools"]);
    }
    util::run(&mut build)?;
    let release = util::target_dir().join("release");
    let out = util::target_dir().join("bench");
    std::fs::create_dir_all(&out)?;
    let brain_bench = release.join("brain-bench");
    let bench = |args: &[&str]| -> anyhow::Result<Value> {
        let line = util::output(Command::new(&brain_bench).args(args).envs(BENCH_SECRETS))?;
        serde_json::from_str(line.trim()).with_context(|| format!("brain-bench printed {line:?}"))
    };
    let start = |flags: &[&str], name: &str| -> anyhow::Result<util::Server> {
        let mut command = Command::new(release.join("brain-mcp-testkit-http"));
        command
            .args(["--era", "both", "--no-call-details"])
            .args(flags)
            .envs(BENCH_SECRETS);
        util::Server::start(
            command,
            &out.join(format!("{name}.log")),
            Duration::from_secs(30),
        )
    };
    let proxy = |target: &str| -> anyhow::Result<util::Server> {
        let mut command = Command::new(&brain_bench);
        command.args([
            "proxy",
            "--target",
            target,
            "--delay-ms",
            &WAN_DELAY_MS.to_string(),
        ]);
        util::Server::start(command, &out.join("proxy.log"), Duration::from_secs(30))
    };
    let counts = Counts::new(calls);
    // The v2 client, a client per call, in either era (`legacy` or `modern`).
    let ts2_http = |url: String, calls: String, era: &'static str| -> Measure {
        let (node, script) = (
            peers.node.clone(),
            peers.scripts.join("bench_ts2_client.mjs"),
        );
        Box::new(move || {
            peer_line(Command::new(&node).arg(&script).args([
                "http",
                url.as_str(),
                calls.as_str(),
                "20",
                "echo",
                ECHO_ARGS,
                era,
            ]))
        })
    };
    let ts_http = |url: String, calls: String| -> Measure {
        let (node, script) = (
            peers.node.clone(),
            peers.scripts.join("bench_ts_client.mjs"),
        );
        Box::new(move || {
            peer_line(Command::new(&node).arg(&script).args([
                url.as_str(),
                calls.as_str(),
                "20",
                "echo",
                ECHO_ARGS,
            ]))
        })
    };
    // `brain-bench seq` with a client id, against `url` (or the stdio server).
    let seq = |url: &str, client: &str, calls: u64, warmup: u64, interval: u64| -> Measure {
        let mut args: Vec<String> = ["seq", "--client", client]
            .iter()
            .map(|arg| (*arg).to_owned())
            .collect();
        for (flag, value) in [
            ("--calls", calls.to_string()),
            ("--warmup", warmup.to_string()),
            ("--interval-ms", interval.to_string()),
        ] {
            args.push(flag.to_owned());
            args.push(value);
        }
        if client.starts_with("stdio") || client == "floor-stdio" {
            args.push("--stdio".to_owned());
            args.push(peers.node.display().to_string());
            args.push(peers.server_everything.display().to_string());
            args.push("stdio".to_owned());
        } else {
            args.push("--url".to_owned());
            args.push(url.to_owned());
        }
        Box::new(move || bench(&args.iter().map(String::as_str).collect::<Vec<_>>()))
    };

    // 1. Sequential, 2. over the simulated network, 4. paced, 8. without TCP_NODELAY.
    let mut sequential = Vec::new();
    let mut wan = Vec::new();
    let mut paced = Vec::new();
    if want("sequential") || want("paced") || want("wan") {
        let server = start(&[], "testkit-nodelay")?;
        let url = server.url.clone();
        let c = &counts;
        let mut clients: Vec<(&str, Measure)> = vec![
            ("ours-legacy", seq(&url, "legacy", c.calls, c.warmup, 0)),
            (
                "ours-legacy-cold",
                seq(&url, "legacy-cold", c.calls, c.warmup, 0),
            ),
            ("ours-modern", seq(&url, "modern", c.calls, c.warmup, 0)),
            // OpenTelemetry on and exporting (OTLP/HTTP to a sink in brain-bench).
            (
                "ours-modern-otel",
                seq(&url, "modern-otel", c.calls, c.warmup, 0),
            ),
            (
                "ours-legacy-otel",
                seq(&url, "legacy-otel", c.calls, c.warmup, 0),
            ),
            ("floor", seq(&url, "floor", c.calls, c.warmup, 0)),
            ("ts-sdk", ts_http(url.clone(), c.peer.to_string())),
            (
                "ts-sdk-v2",
                ts2_http(url.clone(), c.peer.to_string(), "legacy"),
            ),
            (
                "ts-sdk-v2-modern",
                ts2_http(url.clone(), c.peer.to_string(), "modern"),
            ),
        ];
        let (python, script) = (
            peers.python.clone(),
            peers.scripts.join("bench_py_client.py"),
        );
        let (py_url, py_calls) = (url.clone(), c.peer.to_string());
        clients.push((
            "py-sdk",
            Box::new(move || {
                peer_line(Command::new(&python).arg(&script).args([
                    py_url.as_str(),
                    py_calls.as_str(),
                    "20",
                    "echo",
                    ECHO_ARGS,
                ]))
            }),
        ));
        // The TCP_QUICKACK prototype, to show what it costs against a server that needs
        // none of it.
        for id in QUICKACK_ROWS {
            clients.push((id, seq(&url, id, c.calls, c.warmup, 0)));
        }
        if want("sequential") {
            sequential.extend(
                measure(&clients, rounds, "sequential (nodelay)")?
                    .into_iter()
                    .map(|row| with(row, "server", "nodelay")),
            );
        }

        let paced_clients: Vec<(&str, Measure)> = ["legacy", "legacy-cold", "floor"]
            .into_iter()
            .map(|client| {
                (
                    id_of(client),
                    seq(&url, client, c.paced, c.paced_warmup, PACE_MS),
                )
            })
            .collect();
        if want("paced") {
            paced.extend(
                measure(&paced_clients, rounds, "paced (loopback)")?
                    .into_iter()
                    .map(|row| with(row, "network", "loopback")),
            );
        }

        let delayed = proxy(&url)?;
        let wan_url = delayed.url.clone();
        let wan_clients: Vec<(&str, Measure)> = vec![
            (
                "ours-legacy",
                seq(&wan_url, "legacy", c.wan, c.wan_warmup, 0),
            ),
            (
                "ours-legacy-cold",
                seq(&wan_url, "legacy-cold", c.wan, c.wan_warmup, 0),
            ),
            (
                "ours-modern",
                seq(&wan_url, "modern", c.wan, c.wan_warmup, 0),
            ),
            ("floor", seq(&wan_url, "floor", c.wan, c.wan_warmup, 0)),
            ("ts-sdk", ts_http(wan_url.clone(), c.wan_peer.to_string())),
            (
                "ts-sdk-v2",
                ts2_http(wan_url.clone(), c.wan_peer.to_string(), "legacy"),
            ),
            (
                "ts-sdk-v2-modern",
                ts2_http(wan_url.clone(), c.wan_peer.to_string(), "modern"),
            ),
        ];
        if want("wan") {
            wan.extend(measure(&wan_clients, rounds, "wan")?);
        }
        let paced_wan: Vec<(&str, Measure)> = ["legacy", "legacy-cold", "floor"]
            .into_iter()
            .map(|client| {
                (
                    id_of(client),
                    seq(&wan_url, client, c.paced, c.paced_warmup, PACE_MS),
                )
            })
            .collect();
        if want("paced") {
            paced.extend(
                measure(&paced_wan, rounds, "paced (wan)")?
                    .into_iter()
                    .map(|row| with(row, "network", "wan")),
            );
        }
        drop(delayed);
        drop(server);
    }
    if want("no-nodelay") {
        let c = &counts;
        let server = start(&["--no-nodelay"], "testkit-no-nodelay")?;
        let url = server.url.clone();
        let mut clients: Vec<(&str, Measure)> = vec![
            ("ours-legacy", seq(&url, "legacy", c.slow, c.slow_warmup, 0)),
            (
                "ours-legacy-cold",
                seq(&url, "legacy-cold", c.slow, c.slow_warmup, 0),
            ),
            ("ours-modern", seq(&url, "modern", c.slow, c.slow_warmup, 0)),
            ("floor", seq(&url, "floor", c.slow, c.slow_warmup, 0)),
        ];
        for id in QUICKACK_ROWS {
            clients.push((id, seq(&url, id, c.slow, c.slow_warmup, 0)));
        }
        sequential.extend(
            measure(&clients, rounds, "sequential (no-nodelay)")?
                .into_iter()
                .map(|row| with(row, "server", "no-nodelay")),
        );
        drop(server);
    }

    // 10. Authorization: a static token and cached client credentials, against the
    // testkit behind a bearer check.
    let authorization = if want("auth") {
        let server = start(&["--protected"], "testkit-protected")?;
        let url = server.url.clone();
        let clients: Vec<(&str, Measure)> = AUTH_ROWS
            .iter()
            .map(|&(id, client)| (id, seq(&url, client, counts.calls, counts.warmup, 0)))
            .collect();
        measure(&clients, rounds, "authorization")?
    } else {
        Vec::new()
    };

    // 3. stdio, and paced.
    let ts2_stdio = |calls: u64| -> Measure {
        let (node, script, server, n) = (
            peers.node.clone(),
            peers.scripts.join("bench_ts2_client.mjs"),
            peers.server_everything.clone(),
            calls.to_string(),
        );
        Box::new(move || {
            peer_line(
                Command::new(&node)
                    .arg(&script)
                    .args(["stdio", n.as_str(), "1", "echo", ECHO_ARGS, "--"])
                    .arg(&node)
                    .arg(&server)
                    .arg("stdio"),
            )
        })
    };
    let stdio_clients: Vec<(&str, Measure)> = vec![
        (
            "floor-stdio",
            seq("", "floor-stdio", counts.stdio, counts.stdio_warmup, 0),
        ),
        (
            "ours-stdio",
            seq("", "stdio", counts.stdio, counts.stdio_warmup, 0),
        ),
        (
            "ours-stdio-cold",
            seq("", "stdio-cold", counts.stdio, counts.stdio_warmup, 0),
        ),
        ("ts-sdk-stdio", {
            let (node, script, server, n) = (
                peers.node.clone(),
                peers.scripts.join("bench_ts_stdio_client.mjs"),
                peers.server_everything.clone(),
                counts.ts_stdio.to_string(),
            );
            Box::new(move || {
                peer_line(
                    Command::new(&node)
                        .arg(&script)
                        .args([n.as_str(), "1", "echo", ECHO_ARGS, "--"])
                        .arg(&node)
                        .arg(&server)
                        .arg("stdio"),
                )
            })
        }),
        ("ts-sdk-v2-stdio", ts2_stdio(counts.ts_stdio)),
    ];
    let stdio = if want("stdio") {
        measure(&stdio_clients, rounds, "stdio")?
    } else {
        Vec::new()
    };
    if want("stdio-paced") {
        let mut paced_stdio: Vec<(&str, Measure)> = Vec::new();
        for pace in [PACE_MS, STDIO_PACE_MS] {
            for client in ["stdio", "stdio-cold", "floor-stdio"] {
                paced_stdio.push((
                    id_of(client),
                    seq("", client, counts.stdio, counts.stdio_warmup, pace),
                ));
            }
        }
        paced.extend(
            measure(&paced_stdio, rounds, "paced (stdio)")?
                .into_iter()
                .map(|row| with(row, "network", "stdio")),
        );
    }

    // The spawn-bound limit: process starts a second, one and two at a time.
    let mut spawn = Vec::new();
    if want("spawn") {
        let stdio_command = [
            "--stdio".to_owned(),
            peers.node.display().to_string(),
            peers.server_everything.display().to_string(),
            "stdio".to_owned(),
        ];
        for parallel in [1u64, 2] {
            let mut runs = Vec::new();
            for round in 0..rounds {
                eprintln!("bench: spawn round {} ({parallel} at a time)", round + 1);
                let mut args = vec![
                    "spawn".to_owned(),
                    "--starts".to_owned(),
                    counts.stdio.to_string(),
                    "--parallel".to_owned(),
                    parallel.to_string(),
                ];
                args.extend(stdio_command.iter().cloned());
                runs.push(bench(&args.iter().map(String::as_str).collect::<Vec<_>>())?);
            }
            spawn.push(json!({
                "parallel": parallel,
                "starts": counts.stdio,
                "starts_per_s": median(&runs, "starts_per_s"),
                "p50_ms": median(&runs, "p50_ms"),
                "p99_ms": median(&runs, "p99_ms"),
            }));
        }
    }

    // 11. Warm against cold, without and with a CPU-bound background load.
    let mut loaded = Vec::new();
    if want("load") {
        let server = start(&[], "testkit-load-cpu")?;
        let url = server.url.clone();
        let c = &counts;
        let cases: [(&str, &str, u64, u64, u64); 6] = [
            ("loopback", "legacy", c.calls, c.warmup, 0),
            ("loopback", "legacy-cold", c.calls, c.warmup, 0),
            ("stdio", "stdio", c.stdio, c.stdio_warmup, 0),
            ("stdio", "stdio-cold", c.stdio, c.stdio_warmup, 0),
            ("stdio", "stdio", c.stdio, c.stdio_warmup, STDIO_PACE_MS),
            (
                "stdio",
                "stdio-cold",
                c.stdio,
                c.stdio_warmup,
                STDIO_PACE_MS,
            ),
        ];
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        for load in ["none", "cpu"] {
            let clients: Vec<(&str, Measure)> = cases
                .iter()
                .map(|&(_, client, calls, warmup, pace)| {
                    (id_of(client), seq(&url, client, calls, warmup, pace))
                })
                .collect();
            // The load runs only while this half measures, and ends with it.
            let _load = (load == "cpu").then(|| CpuLoad::start(cores));
            let rows = measure(&clients, rounds, &format!("load {load}"))?;
            loaded.extend(
                rows.into_iter()
                    .zip(cases)
                    .map(|(row, (network, ..))| with(with(row, "network", network), "load", load)),
            );
        }
        drop(server);
    }

    // 5. Concurrency, 6. memory.
    let server = start(&[], "testkit-load")?;
    let url = server.url.clone();
    let mut concurrency = Vec::new();
    for era in ["legacy", "modern"]
        .into_iter()
        .filter(|_| want("concurrency"))
    {
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
    let memory = if want("memory") {
        eprintln!("bench: memory");
        let ca = out.join("testkit-ca.pem").to_string_lossy().into_owned();
        // 1,000 calls in flight on a sleeping server: plain HTTP/1.1 (a connection per
        // call), then HTTPS offering HTTP/2, taken (one connection for all) or declined.
        let tls = start(&["--tls", "h2", "--ca-out", &ca], "testkit-tls")?;
        let mut inflight = Vec::new();
        for (era, over, url, flags) in [
            ("legacy", "HTTP/1.1", &url, &[][..]),
            ("modern", "HTTP/1.1", &url, &[][..]),
            ("legacy", "HTTPS, HTTP/1.1", &tls.url, &["--http1"][..]),
            ("modern", "HTTPS, HTTP/1.1", &tls.url, &["--http1"][..]),
            ("legacy", "HTTPS, HTTP/2", &tls.url, &[][..]),
            ("modern", "HTTPS, HTTP/2", &tls.url, &[][..]),
        ] {
            let mut args = vec![
                "inflight",
                "--url",
                url,
                "--era",
                era,
                "--calls",
                "1000",
                "--sleep-ms",
                "3000",
            ];
            if url == &tls.url {
                args.extend(["--ca", ca.as_str()]);
            }
            args.extend(flags);
            let mut row = bench(&args)?;
            row["over"] = json!(over);
            inflight.push(row);
        }
        drop(tls);
        let stream = bench(&[
            "stream",
            "--url",
            &url,
            "--bytes",
            &(100u64 << 20).to_string(),
            "--budget",
            &(1u64 << 20).to_string(),
        ])?;
        json!({"inflight": inflight, "stream": stream})
    } else {
        Value::Null
    };
    drop(server);

    // 7. Discovery.
    // The testkit lists 13 scripted tools; the rest are generated.
    let tools = 1000 - 13;
    let discovery = if want("discovery") {
        let server = start(
            &["--page-size", "100", "--extra-tools", &tools.to_string()],
            "testkit-discovery",
        )?;
        eprintln!("bench: discovery");
        let discovery = bench(&["discover", "--url", &server.url])?;
        drop(server);
        discovery
    } else {
        Value::Null
    };

    let config = if want("config") {
        eprintln!("bench: config");
        bench(&["config", "--bindings", "10000"])?
    } else {
        Value::Null
    };

    // 12. The gateway: ours, ContextForge and FastMCP's proxy against a direct call.
    let gateway = if want("gateway") {
        gateway::run(&release, &out, calls)?
    } else {
        Value::Null
    };

    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let report = json!({
        "cores": cores,
        "rounds": rounds,
        "versions": {
            "rmcp": "3.11.0",
            "ts_sdk": peers::TS_SDK,
            "ts_sdk_v2": peers::TS_SDK_V2,
            "python_mcp": peers::PY_MCP,
            "node": peers::NODE,
            "server_everything": peers::SERVER_EVERYTHING,
            "contextforge": peers::CONTEXTFORGE,
            "fastmcp": peers::FASTMCP,
        },
        "wan_delay_ms_each_way": WAN_DELAY_MS,
        "paced_interval_ms": PACE_MS,
        "stdio_paced_interval_ms": STDIO_PACE_MS,
        "sequential": sequential,
        "wan": wan,
        "stdio": stdio,
        "spawn": spawn,
        "loaded": loaded,
        "sections": only.clone().map_or_else(|| json!(SECTIONS), |list| json!(list)),
        "paced": paced,
        "authorization": authorization,
        "concurrency": concurrency,
        "memory": memory,
        "discovery": discovery,
        "config": config,
        "gateway": gateway,
    });
    let path = out.join("bench.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&report)?)?;
    let svg = out.join("p50.svg");
    chart::p50(&report, &svg)?;
    println!("{}", markdown(&report));
    eprintln!("bench: wrote {} and {}", path.display(), svg.display());
    Ok(())
}

const ECHO_ARGS: &str = r#"{"message":"hello"}"#;

/// The protected testkit's client secret and static token, in the variables the server
/// and brain-bench's bindings read (loopback fixtures, not secrets of anyone's).
const BENCH_SECRETS: [(&str, &str); 2] = [
    ("TESTKIT_CLIENT_SECRET", "bench-client-secret-0123456789"),
    ("TESTKIT_STATIC_TOKEN", "bench-static-token-0123456789"),
];

/// The authorization rows: (id, `brain-bench seq --client`).
const AUTH_ROWS: [(&str, &str); 7] = [
    ("ours-modern-static-token", "modern-static-token"),
    (
        "ours-modern-client-credentials",
        "modern-client-credentials",
    ),
    ("ours-legacy-static-token", "legacy-static-token"),
    (
        "ours-legacy-client-credentials",
        "legacy-client-credentials",
    ),
    ("ours-modern-oauth-file-store", "modern-oauth-file"),
    ("ours-modern-oauth-postgres-store", "modern-oauth-postgres"),
    (
        "ours-modern-oauth-dpop-file-store",
        "modern-oauth-dpop-file",
    ),
];

/// The `TCP_QUICKACK` prototype's rows (`brain-bench seq --client ID`).
const QUICKACK_ROWS: [&str; 4] = [
    "floor-hyper",
    "floor-quickack",
    "session-hyper",
    "session-quickack",
];

/// How many calls each kind of row makes (and how many it makes first, uncounted).
#[derive(Debug)]
struct Counts {
    calls: u64,
    warmup: u64,
    /// The session-per-call peers' clients (a few ms per call).
    peer: u64,
    /// Through the simulated network (10 to 60 ms per call).
    wan: u64,
    wan_warmup: u64,
    wan_peer: u64,
    /// At one call every 50 ms.
    paced: u64,
    paced_warmup: u64,
    /// Against the server without TCP_NODELAY (44 ms per call for most).
    slow: u64,
    slow_warmup: u64,
    /// stdio (a process per call: 0.3 s cold).
    stdio: u64,
    stdio_warmup: u64,
    /// The TypeScript SDK's stdio client (a process per call, and a close that waits
    /// for it to exit).
    ts_stdio: u64,
}

impl Counts {
    fn new(calls: u64) -> Self {
        Self {
            calls,
            warmup: (calls / 10).max(10),
            peer: (calls / 5).max(50),
            wan: (calls / 5).max(50),
            wan_warmup: 10,
            wan_peer: (calls / 10).max(30),
            paced: (calls / 10).max(50),
            paced_warmup: 10,
            slow: (calls / 5).max(50),
            slow_warmup: 10,
            stdio: (calls / 25).max(20),
            stdio_warmup: 2,
            ts_stdio: (calls / 100).max(5),
        }
    }
}

/// The label `brain-bench seq --client CLIENT` rows have in the report.
fn id_of(client: &str) -> &'static str {
    match client {
        "legacy" => "ours-legacy",
        "legacy-cold" => "ours-legacy-cold",
        "modern" => "ours-modern",
        "stdio" => "ours-stdio",
        "stdio-cold" => "ours-stdio-cold",
        "floor-stdio" => "floor-stdio",
        _ => "floor",
    }
}

/// A CPU-bound background load: one thread per core spinning on arithmetic (no I/O, no
/// network), until dropped; a thread also stops by itself after an hour, so a bench that
/// dies cannot leave it running.
struct CpuLoad {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl CpuLoad {
    fn start(threads: usize) -> Self {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..threads)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let until = std::time::Instant::now() + Duration::from_secs(3600);
                    let mut x = 0x9e37_79b9_7f4a_7c15u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed)
                        && std::time::Instant::now() < until
                    {
                        for _ in 0..10_000 {
                            x = std::hint::black_box(x.rotate_left(5) ^ x.wrapping_mul(31));
                        }
                    }
                })
            })
            .collect();
        Self { stop, threads }
    }
}

impl Drop for CpuLoad {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

/// Runs a peer's benchmark script; its last line is its JSON.
fn peer_line(command: &mut Command) -> anyhow::Result<Value> {
    let output = util::output(command)?;
    let line = output.lines().last().unwrap_or_default();
    serde_json::from_str(line.trim()).with_context(|| format!("the peer printed {output:?}"))
}

/// Runs every client once per round, in turn; one row per client, with the medians.
fn measure(clients: &[(&str, Measure)], rounds: usize, what: &str) -> anyhow::Result<Vec<Value>> {
    let mut runs: Vec<Vec<Value>> = vec![Vec::new(); clients.len()];
    for round in 0..rounds {
        for (i, (name, client)) in clients.iter().enumerate() {
            eprintln!("bench: {what} round {} {name}", round + 1);
            runs[i].push(client()?);
        }
    }
    Ok(clients
        .iter()
        .zip(runs)
        .map(|((name, _), runs)| {
            let mut row = json!({
                "client": name,
                "label": runs[0]["client"],
                "calls": runs[0]["calls"],
                "calls_per_s": median(&runs, "calls_per_s"),
                "p50_ms": median(&runs, "p50_ms"),
                "p99_ms": median(&runs, "p99_ms"),
            });
            for extra in ["result_p50_ms", "result_p99_ms", "interval_ms"] {
                if runs[0].get(extra).is_some() {
                    row[extra] = json!(median(&runs, extra));
                }
            }
            if runs[0].get("warm_served").is_some() {
                // Of the calls of a run (warm-up included), how many a warm context served.
                row["warm_served"] = runs[0]["warm_served"].clone();
                row["calls_with_warmup"] = runs[0]["calls_with_warmup"].clone();
                // Of those, how many waited for a context being opened, and how many
                // contexts calls asked for when that one was late.
                row["warm_waited"] = runs[0]["warm_waited"].clone();
                row["warm_hedged"] = runs[0]["warm_hedged"].clone();
            }
            row
        })
        .collect())
}

fn with(mut row: Value, key: &str, value: &str) -> Value {
    row[key] = json!(value);
    row
}

fn median(runs: &[Value], key: &str) -> f64 {
    let mut values: Vec<f64> = runs.iter().filter_map(|run| run[key].as_f64()).collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// The rows of one array of the report (optionally only those with `key` = `value`).
fn rows<'a>(report: &'a Value, array: &str, filter: Option<(&str, &str)>) -> Vec<&'a Value> {
    report[array]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|row| filter.is_none_or(|(key, value)| row[key] == value))
        .collect()
}

fn find<'a>(rows: &[&'a Value], client: &str) -> Option<&'a Value> {
    rows.iter().find(|row| row["client"] == client).copied()
}

fn num(row: Option<&Value>, key: &str) -> f64 {
    row.and_then(|row| row[key].as_f64()).unwrap_or(f64::NAN)
}

/// A ratio with its goal, as a line of the report.
fn ratio_line(md: &mut String, what: &str, value: f64, goal: &str, met: bool) {
    let _ = writeln!(
        md,
        "- {what}: **{value:.2}x** (goal {goal}: {})",
        if value.is_nan() {
            "not measured"
        } else if met {
            "met"
        } else {
            "not met"
        }
    );
}

/// " (N of M calls warm, W waited, H hedged)" for a row of ours with warm contexts on
/// (with `always`, also when none was warm).
fn warm_note(row: &Value, always: bool) -> String {
    let (Some(served), Some(total)) = (
        row["warm_served"].as_u64(),
        row["calls_with_warmup"].as_u64(),
    ) else {
        return String::new();
    };
    if served == 0 && !always {
        return String::new();
    }
    let mut note = format!(" ({served} of {total} calls warm");
    match row["warm_waited"].as_u64() {
        Some(waited) if waited > 0 => {
            let _ = write!(note, ", {waited} of them waited for one being opened");
        }
        _ => {}
    }
    match row["warm_hedged"].as_u64() {
        Some(hedged) if hedged > 0 => {
            let _ = write!(note, ", {hedged} hedged");
        }
        _ => {}
    }
    note + ")"
}

fn table(md: &mut String, rows: &[&Value], extra_result: bool) {
    let _ = writeln!(
        md,
        "| id | client | calls/s | p50 ms | p99 ms |{}\n|---|---|---|---|---|{}",
        if extra_result {
            " p50 until the result ms |"
        } else {
            ""
        },
        if extra_result { "---|" } else { "" }
    );
    for row in rows {
        let warm = warm_note(row, row["client"] == "ours-legacy");
        let rate = row["calls_per_s"].as_f64().unwrap_or(0.0);
        let _ = write!(
            md,
            "| `{}` | {}{} | {} | {:.3} | {:.3} |",
            row["client"].as_str().unwrap_or_default(),
            row["label"].as_str().unwrap_or_default(),
            warm,
            if rate < 100.0 {
                format!("{rate:.1}")
            } else {
                format!("{rate:.0}")
            },
            row["p50_ms"].as_f64().unwrap_or(0.0),
            row["p99_ms"].as_f64().unwrap_or(0.0),
        );
        if extra_result {
            let _ = write!(
                md,
                " {} |",
                row["result_p50_ms"]
                    .as_f64()
                    .map_or("-".to_owned(), |v| format!("{v:.3}"))
            );
        }
        let _ = writeln!(md);
    }
}

fn markdown(report: &Value) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "## cargo xtask bench\n\n{} cores; rmcp {}, TypeScript SDK {} and v2 client {}, python mcp {}, server-everything {}; medians of {} rounds; echo tool.\n",
        report["cores"],
        report["versions"]["rmcp"],
        report["versions"]["ts_sdk"],
        report["versions"]["ts_sdk_v2"],
        report["versions"]["python_mcp"],
        report["versions"]["server_everything"],
        report["rounds"]
    );
    let main_ids = [
        "ours-legacy",
        "ours-legacy-cold",
        "ours-modern",
        "floor",
        "ts-sdk",
        "ts-sdk-v2",
        "ts-sdk-v2-modern",
        "py-sdk",
    ];
    let loopback = rows(report, "sequential", Some(("server", "nodelay")));
    let main: Vec<&Value> = main_ids
        .iter()
        .filter_map(|id| find(&loopback, id))
        .collect();
    let _ = writeln!(
        md,
        "### Sequential calls, testkit with TCP_NODELAY, loopback\n"
    );
    table(&mut md, &main, false);
    let wan = rows(report, "wan", None);
    let _ = writeln!(
        md,
        "\n### The same through the delay proxy ({} ms each way: 10 ms round trip)\n",
        report["wan_delay_ms_each_way"]
    );
    table(&mut md, &wan, false);
    let stdio = rows(report, "stdio", None);
    let _ = writeln!(
        md,
        "\n### stdio: server-everything, a process per call\n\nThe TypeScript SDK's p50 and calls/s include its `close()`, which closes the server's stdin and waits for the process to exit; the last column stops at the result. Ours returns at the result and ends the process group in the background.\n"
    );
    table(&mut md, &stdio, true);
    let spawn: Vec<&Value> = rows(report, "spawn", None);
    if !spawn.is_empty() {
        let _ = writeln!(
            md,
            "\n### The spawn-bound limit: server-everything processes started, through the handshake and one call, then killed\n\n| at a time | starts/s | p50 ms (start to first result) | p99 ms |\n|---|---|---|---|"
        );
        for row in &spawn {
            let _ = writeln!(
                md,
                "| {} | {:.2} | {:.1} | {:.1} |",
                row["parallel"],
                row["starts_per_s"].as_f64().unwrap_or(0.0),
                row["p50_ms"].as_f64().unwrap_or(0.0),
                row["p99_ms"].as_f64().unwrap_or(0.0)
            );
        }
    }
    let loaded = rows(report, "loaded", None);
    if !loaded.is_empty() {
        let _ = writeln!(
            md,
            "\n### Warm against cold, without and with a CPU-bound background load (one spinning thread per core)\n\n| case | load | warm p50 ms | warm p99 ms | cold p50 ms | cold p99 ms | warm calls/s | cold calls/s | warm p99 ≤ cold p99 |\n|---|---|---|---|---|---|---|---|---|"
        );
        for (case, network, warm_id, cold_id, every) in [
            (
                "legacy, loopback, back to back",
                "loopback",
                "ours-legacy",
                "ours-legacy-cold",
                0,
            ),
            (
                "stdio, back to back",
                "stdio",
                "ours-stdio",
                "ours-stdio-cold",
                0,
            ),
            (
                "stdio, one call every 500 ms",
                "stdio",
                "ours-stdio",
                "ours-stdio-cold",
                STDIO_PACE_MS,
            ),
        ] {
            for load in ["none", "cpu"] {
                let of = |id: &str| {
                    loaded.iter().copied().find(|row| {
                        row["client"] == id
                            && row["network"] == network
                            && row["load"] == load
                            && row["interval_ms"].as_f64() == Some(every as f64)
                    })
                };
                let (warm, cold) = (of(warm_id), of(cold_id));
                let served = warm.map_or_else(String::new, |row| warm_note(row, true));
                let (warm_p99, cold_p99) = (num(warm, "p99_ms"), num(cold, "p99_ms"));
                let _ = writeln!(
                    md,
                    "| {case}{served} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} | {:.1} | {} |",
                    if load == "cpu" {
                        "2 spinning threads"
                    } else {
                        "none"
                    },
                    num(warm, "p50_ms"),
                    warm_p99,
                    num(cold, "p50_ms"),
                    cold_p99,
                    num(warm, "calls_per_s"),
                    num(cold, "calls_per_s"),
                    if warm_p99.is_nan() || cold_p99.is_nan() {
                        "not measured".to_owned()
                    } else if warm_p99 <= cold_p99 {
                        format!("met ({:.2}x)", warm_p99 / cold_p99)
                    } else {
                        format!("not met ({:.2}x)", warm_p99 / cold_p99)
                    }
                );
            }
        }
    }
    let authorization = rows(report, "authorization", None);
    let _ = writeln!(
        md,
        "\n### Authorization: testkit behind a bearer check, loopback\n\nThe same server for every row; client credentials fetch a token once (the server is its own authorization server), then every call carries the cached one.\n"
    );
    table(&mut md, &authorization, false);
    let paced = rows(report, "paced", None);
    let _ = writeln!(
        md,
        "\n### Paced: one call every N ms (still one at a time), instead of back to back\n\n| network | every | id | client | p50 ms | p99 ms |\n|---|---|---|---|---|---|"
    );
    for row in &paced {
        let warm = warm_note(row, false);
        let _ = writeln!(
            md,
            "| {} | {} ms | `{}` | {}{} | {:.3} | {:.3} |",
            row["network"].as_str().unwrap_or_default(),
            row["interval_ms"].as_f64().unwrap_or(0.0),
            row["client"].as_str().unwrap_or_default(),
            row["label"].as_str().unwrap_or_default(),
            warm,
            row["p50_ms"].as_f64().unwrap_or(0.0),
            row["p99_ms"].as_f64().unwrap_or(0.0),
        );
    }

    // The goals.
    let p50 = |rows: &[&Value], id: &str| num(find(rows, id), "p50_ms");
    let cps = |rows: &[&Value], id: &str| num(find(rows, id), "calls_per_s");
    let paced_in = |network: &str, every: u64| -> Vec<&Value> {
        paced
            .iter()
            .filter(|row| {
                row["network"] == network && row["interval_ms"].as_f64() == Some(every as f64)
            })
            .copied()
            .collect()
    };
    let (paced_loop, paced_wan, paced_stdio, slow_stdio) = (
        paced_in("loopback", PACE_MS),
        paced_in("wan", PACE_MS),
        paced_in("stdio", PACE_MS),
        paced_in("stdio", STDIO_PACE_MS),
    );
    let _ = writeln!(md, "\n### Ratios and goals\n");
    let r = p50(&loopback, "ours-legacy") / p50(&loopback, "floor");
    ratio_line(
        &mut md,
        "legacy (default) p50 ÷ floor p50, loopback, back to back",
        r,
        "≤ 1.5x",
        r <= 1.5,
    );
    let r = p50(&paced_loop, "ours-legacy") / p50(&paced_loop, "floor");
    ratio_line(
        &mut md,
        "legacy (default) p50 ÷ floor p50, loopback, one call every 50 ms",
        r,
        "≤ 1.5x",
        r <= 1.5,
    );
    let r = p50(&wan, "ours-legacy") / p50(&wan, "floor");
    ratio_line(
        &mut md,
        "legacy (default) p50 ÷ floor p50, 10 ms RTT, back to back",
        r,
        "≤ 1.3x",
        r <= 1.3,
    );
    let r = p50(&paced_wan, "ours-legacy") / p50(&paced_wan, "floor");
    ratio_line(
        &mut md,
        "legacy (default) p50 ÷ floor p50, 10 ms RTT, one call every 50 ms",
        r,
        "≤ 1.3x",
        r <= 1.3,
    );
    let _ = writeln!(
        md,
        "- legacy cold p50 ÷ legacy default p50: loopback {:.2}x, 10 ms RTT {:.2}x (back to back); at one call every 50 ms: loopback {:.2}x, 10 ms RTT {:.2}x",
        p50(&loopback, "ours-legacy-cold") / p50(&loopback, "ours-legacy"),
        p50(&wan, "ours-legacy-cold") / p50(&wan, "ours-legacy"),
        p50(&paced_loop, "ours-legacy-cold") / p50(&paced_loop, "ours-legacy"),
        p50(&paced_wan, "ours-legacy-cold") / p50(&paced_wan, "ours-legacy"),
    );
    let r = p50(&stdio, "ours-stdio-cold") / p50(&stdio, "ours-stdio");
    ratio_line(
        &mut md,
        "stdio cold p50 ÷ stdio default p50, back to back",
        r,
        "≥ 50x",
        r >= 50.0,
    );
    let r = p50(&paced_stdio, "ours-stdio-cold") / p50(&paced_stdio, "ours-stdio");
    ratio_line(
        &mut md,
        "stdio cold p50 ÷ stdio default p50, one call every 50 ms",
        r,
        "≥ 50x",
        r >= 50.0,
    );
    let r = p50(&slow_stdio, "ours-stdio-cold") / p50(&slow_stdio, "ours-stdio");
    ratio_line(
        &mut md,
        &format!("stdio cold p50 ÷ stdio default p50, one call every {STDIO_PACE_MS} ms"),
        r,
        "≥ 50x",
        r >= 50.0,
    );
    let r = p50(&slow_stdio, "ours-stdio") / p50(&slow_stdio, "floor-stdio");
    ratio_line(
        &mut md,
        &format!("stdio default p50 ÷ floor-stdio p50, one call every {STDIO_PACE_MS} ms"),
        r,
        "≤ 2x",
        r <= 2.0,
    );
    let r = p50(&paced_stdio, "ours-stdio") / p50(&paced_stdio, "floor-stdio");
    ratio_line(
        &mut md,
        "stdio default p50 ÷ floor-stdio p50, one call every 50 ms",
        r,
        "≤ 2x",
        r <= 2.0,
    );
    let limit = spawn
        .iter()
        .filter_map(|row| row["starts_per_s"].as_f64())
        .fold(f64::NAN, f64::max);
    let r = cps(&stdio, "ours-stdio") / limit;
    ratio_line(
        &mut md,
        &format!("ours-stdio calls/s back to back ÷ the spawn-bound limit ({limit:.2} starts/s)"),
        r,
        "≥ 0.8x",
        r >= 0.8,
    );
    let r = cps(&stdio, "ours-stdio") / cps(&stdio, "ts-sdk-stdio");
    ratio_line(
        &mut md,
        "ours-stdio calls/s ÷ ts-sdk-stdio calls/s",
        r,
        "≥ 10x",
        r >= 10.0,
    );
    let r = p50(&loopback, "ours-modern") / p50(&loopback, "floor");
    ratio_line(
        &mut md,
        "2026-07-28 p50 ÷ floor p50, loopback",
        r,
        "≤ 1.3x",
        r <= 1.3,
    );
    let r = p50(&loopback, "ours-modern-otel") / p50(&loopback, "ours-modern");
    ratio_line(
        &mut md,
        "OpenTelemetry on and exporting ÷ off, p50, 2026-07-28, loopback",
        r,
        "≤ 1.05x",
        r <= 1.05,
    );
    let _ = writeln!(
        md,
        "- OpenTelemetry on and exporting ÷ off, p50, legacy session per call (warm), loopback: {:.2}x",
        p50(&loopback, "ours-legacy-otel") / p50(&loopback, "ours-legacy")
    );
    let _ = writeln!(
        md,
        "- 2026-07-28 p50 ÷ floor p50, 10 ms RTT: {:.2}x",
        p50(&wan, "ours-modern") / p50(&wan, "floor")
    );
    let _ = writeln!(
        md,
        "- calls/s ÷ the TypeScript SDK's per-call client (loopback): ours legacy {:.1}x, ours 2026-07-28 {:.1}x",
        cps(&loopback, "ours-legacy") / cps(&loopback, "ts-sdk"),
        cps(&loopback, "ours-modern") / cps(&loopback, "ts-sdk"),
    );
    let r = cps(&loopback, "ours-legacy") / cps(&loopback, "ts-sdk-v2");
    ratio_line(
        &mut md,
        "ours legacy calls/s ÷ ts-sdk-v2 (legacy) calls/s, loopback",
        r,
        "≥ 5x",
        r >= 5.0,
    );
    let r = cps(&loopback, "ours-modern") / cps(&loopback, "ts-sdk-v2-modern");
    ratio_line(
        &mut md,
        "ours 2026-07-28 calls/s ÷ ts-sdk-v2 (2026-07-28) calls/s, loopback",
        r,
        "≥ 5x",
        r >= 5.0,
    );
    let _ = writeln!(
        md,
        "- the same through the 10 ms proxy: legacy {:.1}x, 2026-07-28 {:.1}x; stdio: ours-stdio ÷ ts-sdk-v2-stdio calls/s {:.1}x",
        cps(&wan, "ours-legacy") / cps(&wan, "ts-sdk-v2"),
        cps(&wan, "ours-modern") / cps(&wan, "ts-sdk-v2-modern"),
        cps(&stdio, "ours-stdio") / cps(&stdio, "ts-sdk-v2-stdio"),
    );
    let _ = writeln!(
        md,
        "- OAuth client credentials (token cached) p50 ÷ static token p50, protected server: 2026-07-28 {:.2}x, legacy {:.2}x\n- A delegated grant (token cached) in a PostgreSQL store ÷ in a file store, p50: {:.2}x\n- A DPoP-bound delegated grant (a fresh ES256 proof per request) ÷ the same grant as a Bearer token, file store, p50: {:.2}x",
        p50(&authorization, "ours-modern-client-credentials")
            / p50(&authorization, "ours-modern-static-token"),
        p50(&authorization, "ours-legacy-client-credentials")
            / p50(&authorization, "ours-legacy-static-token"),
        p50(&authorization, "ours-modern-oauth-postgres-store")
            / p50(&authorization, "ours-modern-oauth-file-store"),
        p50(&authorization, "ours-modern-oauth-dpop-file-store")
            / p50(&authorization, "ours-modern-oauth-file-store"),
    );

    let no_nodelay = rows(report, "sequential", Some(("server", "no-nodelay")));
    let _ = writeln!(md, "\n### Sequential calls, testkit without TCP_NODELAY\n");
    table(&mut md, &no_nodelay, false);
    let _ = writeln!(
        md,
        "\n### The TCP_QUICKACK prototype against both servers (p50 ms)\n\n| id | client | with TCP_NODELAY | without TCP_NODELAY |\n|---|---|---|---|"
    );
    for id in ["floor"]
        .into_iter()
        .chain(QUICKACK_ROWS)
        .chain(["ours-legacy-cold"])
    {
        let (with, without) = (find(&loopback, id), find(&no_nodelay, id));
        let _ = writeln!(
            md,
            "| `{id}` | {} | {:.3} | {:.3} |",
            with.or(without)
                .and_then(|row| row["label"].as_str())
                .unwrap_or_default(),
            num(with, "p50_ms"),
            num(without, "p50_ms"),
        );
    }
    let _ = writeln!(
        md,
        "\n### Concurrency (one ToolHost)\n\n| era | callers | calls/s | p99 ms |\n|---|---|---|---|"
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
    if memory.is_object() {
        let _ = writeln!(
            md,
            "\n### Memory\n\n| case | baseline RSS | peak RSS | growth |\n|---|---|---|---|"
        );
        for row in memory["inflight"].as_array().into_iter().flatten() {
            let _ = writeln!(
                md,
                "| 1,000 calls in flight, {}, {} | {} KiB | {} KiB | {} KiB ({:.1} KiB per call) |",
                row["era"].as_str().unwrap_or_default(),
                row["over"].as_str().unwrap_or_default(),
                row["baseline_rss_kib"],
                row["peak_rss_kib"],
                row["growth_kib"],
                row["per_call_kib"].as_f64().unwrap_or(0.0)
            );
        }
        let _ = writeln!(
            md,
            "| one call, server streams 100 MiB, budget 1 MiB ({}) | {} KiB | {} KiB | {} KiB |",
            memory["stream"]["outcome"].as_str().unwrap_or_default(),
            memory["stream"]["baseline_rss_kib"],
            memory["stream"]["peak_rss_kib"],
            memory["stream"]["growth_kib"],
        );
    }
    let discovery = &report["discovery"];
    if discovery.is_object() {
        let _ = writeln!(
            md,
            "\n### Discovery\n\n{} tools over {} pages: {:.1} ms (median of 5).",
            discovery["tools"],
            discovery["pages"],
            discovery["median_ms"].as_f64().unwrap_or(0.0)
        );
    }
    let config = &report["config"];
    if config.is_object() {
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
    }
    gateway::markdown(report, &mut md);
    md
}
