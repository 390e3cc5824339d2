//! `cargo xtask demo`: the main job on an embedded default, end to end.
//!
//! Starts the testkit MCP server on a free loopback port, discovers two of its tools with
//! `mcp-tools` (the spec's command line) and prints the bindings, writes a host config
//! from them, runs one call with progress through `mcp-tools call` and prints its events,
//! then stops the server.

use std::time::Duration;

use anyhow::Context as _;

use crate::util;

/// The subcommand.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    anyhow::ensure!(args.is_empty(), "demo takes no arguments");
    util::run(util::cargo().args([
        "build",
        "--quiet",
        "-p",
        "brain-mcp-tools",
        "-p",
        "brain-mcp-testkit",
        "--bins",
    ]))?;
    let bin = util::target_dir().join("debug");
    let dir = util::target_dir().join("demo");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;

    let mut server = std::process::Command::new(bin.join("brain-mcp-testkit-http"));
    server.args(["--era", "both"]);
    let server = util::Server::start(server, &dir.join("server.log"), Duration::from_secs(30))?;
    eprintln!("\n==> the testkit MCP server listens on {}", server.url);

    let mcp_tools = bin.join("mcp-tools");
    eprintln!(
        "\n==> discovery: mcp-tools -url {} -token-env DEMO_API_KEY -tenant local -tools echo,progress\n",
        server.url
    );
    let bindings = util::output(
        std::process::Command::new(&mcp_tools)
            .args(["-url", &server.url, "-token-env", "DEMO_API_KEY"])
            .args(["-tenant", "local", "-tools", "echo,progress"])
            .env("DEMO_API_KEY", "demo-token-not-a-secret"),
    )?;
    println!("{}", bindings.trim_end());

    let bindings: serde_json::Value =
        serde_json::from_str(&bindings).context("mcp-tools printed bindings that are not JSON")?;
    let config = dir.join("host.json");
    std::fs::write(
        &config,
        serde_json::to_vec_pretty(&serde_json::json!({ "tools": bindings }))?,
    )
    .with_context(|| format!("cannot write {}", config.display()))?;
    eprintln!("\n==> host config written to {}", config.display());

    let arguments = r#"{"steps": 3, "delay_ms": 150}"#;
    eprintln!(
        "\n==> one call: mcp-tools call --config {} --tenant local --tool progress --args '{arguments}'\n",
        config.display()
    );
    let events = util::output(
        std::process::Command::new(&mcp_tools)
            .args(["call", "--config"])
            .arg(&config)
            .args([
                "--tenant", "local", "--tool", "progress", "--args", arguments,
            ])
            .args(["--session", "demo", "--call", "demo-call-1"])
            .env("DEMO_API_KEY", "demo-token-not-a-secret"),
    )?;
    println!("{}", events.trim_end());
    anyhow::ensure!(
        events
            .lines()
            .filter(|line| line.contains("\"tool.progress\""))
            .count()
            == 3
            && events.lines().last().is_some_and(
                |line| line.contains("\"tool.result\"") && line.contains("\"is_error\":false")
            ),
        "the call did not give three progress events and a successful result"
    );
    drop(server);
    eprintln!("\n==> the server is stopped; the demo is done");
    Ok(())
}
