//! `brain-mcp-testkit-http`: runs a testkit `TestServer` for demos, benchmarks and trying a
//! host by hand, until SIGTERM or SIGINT (Ctrl-C), or until its stdin closes: a parent
//! that runs it with a pipe on stdin ends it by ending, and so does a shell that starts it
//! in the background with stdin from `/dev/null` (at once). To run it in the background,
//! pass `--ignore-stdin-close` (then stop it with SIGTERM), or keep stdin open
//! (`tail -f /dev/null | brain-mcp-testkit-http &`).
//!
//! Flags: `--port N` (listen on `127.0.0.1:N`; default a free port, which `LISTENING` names),
//! `--ignore-stdin-close` (run until a signal only), `--era legacy|modern|both`, `--no-nodelay`,
//! `--json-response`, `--page-size N`, `--extra-tools N`,
//! `--conformance-tools` (also serve the official conformance suite's tools),
//! `--no-call-details` (do not keep every call's `_meta` and headers), `--protected` (bearers
//! required on `/mcp`; the server is its own authorization server for the client credentials
//! grant of client `testkit-client`, whose secret is `$TESTKIT_CLIENT_SECRET`; the token in
//! `$TESTKIT_STATIC_TOKEN`, if set, is always accepted), `--tls h1|h2` (HTTPS with a certificate
//! from a CA of its own, offering HTTP/2 by ALPN with `h2`) with `--ca-out PATH` (where the CA's
//! certificate is written, PEM). Prints `LISTENING <url>` on stdout once it accepts
//! connections; on exit it prints `COUNTERS <json>`.

use std::process::ExitCode;

use brain_mcp_testkit::{BearerOptions, ServerOptions, TestServer};
use tokio::io::AsyncReadExt;

const USAGE: &str = "usage: brain-mcp-testkit-http [--port N] [--ignore-stdin-close] [--era legacy|modern|both] \
[--no-nodelay] [--json-response] [--page-size N] [--extra-tools N] [--conformance-tools] [--no-call-details] [--protected] \
[--tls h1|h2 --ca-out PATH] [--hold-discover]
Runs until SIGTERM, SIGINT or (without --ignore-stdin-close) its stdin closes; prints LISTENING <url>.";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("brain-mcp-testkit-http: {message}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn number(args: &mut impl Iterator<Item = String>, flag: &str) -> Result<usize, String> {
    let raw = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
    raw.parse()
        .map_err(|_| format!("{flag} needs a number, not {raw:?}"))
}

fn run() -> Result<(), String> {
    let mut options = ServerOptions::default();
    let mut call_details = true;
    let mut ca_out = None;
    let mut watch_stdin = true;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--era" => {
                let era = args.next().ok_or("--era needs a value")?;
                options.era = era.parse()?;
            }
            "--port" => {
                let raw = args.next().ok_or("--port needs a value")?;
                options.port = raw
                    .parse()
                    .map_err(|_| format!("--port needs a port number (0 to 65535), not {raw:?}"))?;
            }
            "--ignore-stdin-close" => watch_stdin = false,
            "--no-nodelay" => options.tcp_nodelay = false,
            "--hold-discover" => options.hold_discover = true,
            "--json-response" => options.json_response = true,
            "--page-size" => options.page_size = Some(number(&mut args, "--page-size")?),
            "--extra-tools" => options.extra_tools = number(&mut args, "--extra-tools")?,
            "--conformance-tools" => options.conformance_tools = true,
            "--no-call-details" => call_details = false,
            "--protected" => {
                let client_secret = std::env::var("TESTKIT_CLIENT_SECRET")
                    .map_err(|_| "--protected needs $TESTKIT_CLIENT_SECRET")?;
                options.bearer = Some(BearerOptions {
                    static_token: std::env::var("TESTKIT_STATIC_TOKEN").ok(),
                    client_id: "testkit-client".to_owned(),
                    client_secret,
                    expires_in: 3600,
                });
            }
            "--tls" => {
                let tls = args.next().ok_or("--tls needs a value")?;
                options.tls = Some(tls.parse()?);
            }
            "--ca-out" => ca_out = Some(args.next().ok_or("--ca-out needs a path")?),
            "-h" | "--help" => {
                eprintln!("{USAGE}");
                return Ok(());
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if options.tls.is_some() != ca_out.is_some() {
        return Err("--tls and --ca-out go together".to_owned());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime.block_on(async {
        let port = options.port;
        let server = TestServer::start(options).await.map_err(|e| {
            if port == 0 {
                format!("cannot start: {e}")
            } else {
                format!("cannot listen on 127.0.0.1:{port}: {e}")
            }
        })?;
        server.record_call_details(call_details);
        if let (Some(path), Some(pem)) = (&ca_out, server.ca_pem()) {
            std::fs::write(path, pem).map_err(|e| format!("cannot write {path}: {e}"))?;
        }
        println!("LISTENING {}", server.url());
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| format!("cannot watch SIGTERM: {e}"))?;
        let stdin_closed = async {
            if !watch_stdin {
                return std::future::pending().await;
            }
            let mut stdin = tokio::io::stdin();
            let mut buf = [0u8; 1024];
            while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
        };
        tokio::select! {
            () = stdin_closed => {}
            _ = term.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
        let counters = server.counters();
        server.shutdown().await;
        match serde_json::to_string(&counters) {
            Ok(json) => println!("COUNTERS {json}"),
            Err(e) => eprintln!("brain-mcp-testkit-http: cannot print the counters: {e}"),
        }
        Ok::<(), String>(())
    })?;
    runtime.shutdown_background();
    Ok(())
}
