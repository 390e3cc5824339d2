//! `cargo xtask test`: everything CI checks, in order, with a short summary at the end.
//!
//! 1. `cargo fmt --all -- --check`
//! 2. `cargo clippy --workspace --all-targets -- -D warnings`
//! 3. the dependency direction (`cargo tree`), an invariant of `docs/ARCHITECTURE.md`
//! 4. the testkit binaries (tests of other crates spawn them)
//! 5. the pinned peers in `target/peers/` (some tests start server-everything)
//! 6. the workspace's tests (`cargo nextest run` when installed, else `cargo test`)
//! 7. `cargo xtask conformance`
//!
//! Every step runs even when an earlier one failed, so one run shows every problem.
//! `--step NAME` (repeatable) runs only the named steps: fmt, clippy, deps, testkit,
//! peers, tests, conformance.

use std::{collections::BTreeSet, time::Instant};

use anyhow::Context as _;

use crate::{conformance, util};

type Step = (&'static str, fn() -> anyhow::Result<()>);

const STEPS: &[Step] = &[
    ("fmt", fmt),
    ("clippy", clippy),
    ("deps", dependency_direction),
    ("testkit", testkit_binaries),
    // Some tests start the real peers (server-everything): install them first.
    ("peers", || crate::peers::install().map(|_| ())),
    ("tests", tests),
    ("conformance", || conformance::run(&[])),
];

/// The subcommand.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let mut only = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        anyhow::ensure!(
            arg == "--step",
            "unknown argument {arg:?} (option: --step NAME)"
        );
        let name = args.next().context("--step needs a name")?;
        anyhow::ensure!(
            STEPS.iter().any(|(step, _)| step == name),
            "unknown step {name:?}: {}",
            STEPS
                .iter()
                .map(|(step, _)| *step)
                .collect::<Vec<_>>()
                .join(", ")
        );
        only.push(name.as_str());
    }
    let mut summary = Vec::new();
    for (name, step) in STEPS {
        if !only.is_empty() && !only.contains(name) {
            continue;
        }
        eprintln!("\n==> {name}");
        let started = Instant::now();
        let outcome = step();
        if let Err(error) = &outcome {
            eprintln!("==> {name} FAILED: {error:#}");
        }
        summary.push((name, outcome.is_ok(), started.elapsed().as_secs_f64()));
    }
    println!("\ncargo xtask test:");
    for (name, ok, seconds) in &summary {
        println!(
            "  {:<22} {:<4} {seconds:>6.1} s",
            name,
            if *ok { "ok" } else { "FAIL" }
        );
    }
    let failed: Vec<&str> = summary
        .iter()
        .filter(|(_, ok, _)| !ok)
        .map(|(name, _, _)| **name)
        .collect();
    anyhow::ensure!(failed.is_empty(), "failed: {}", failed.join(", "));
    Ok(())
}

fn fmt() -> anyhow::Result<()> {
    util::run(util::cargo().args(["fmt", "--all", "--", "--check"]))
}

fn clippy() -> anyhow::Result<()> {
    util::run(util::cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))
}

fn testkit_binaries() -> anyhow::Result<()> {
    util::run(util::cargo().args(["build", "-p", "brain-mcp-testkit", "--bins"]))
}

fn tests() -> anyhow::Result<()> {
    if util::works("cargo", &["nextest", "--version"]) {
        util::run(util::cargo().args(["nextest", "run", "--workspace", "--no-fail-fast"]))?;
        // nextest does not run doctests.
        util::run(util::cargo().args(["test", "--workspace", "--doc"]))
    } else {
        util::run(util::cargo().args(["test", "--workspace", "--no-fail-fast"]))
    }
}

/// The packages a package depends on (normal edges; `direct` for depth 1 only).
fn dependencies(package: &str, direct: bool) -> anyhow::Result<BTreeSet<String>> {
    let mut command = util::cargo();
    command.args([
        "tree", "-p", package, "-e", "normal", "--prefix", "none", "--format", "{p}",
    ]);
    if direct {
        command.args(["--depth", "1"]);
    }
    let text = util::output(&mut command)?;
    Ok(text
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != package)
        .map(str::to_owned)
        .collect())
}

/// The workspace packages that depend on `dependency` directly (normal and dev edges).
fn direct_dependents(dependency: &str) -> anyhow::Result<BTreeSet<String>> {
    let text = util::output(util::cargo().args([
        "tree",
        "--workspace",
        "-i",
        dependency,
        "-e",
        "normal,dev",
        "--depth",
        "1",
        "--prefix",
        "none",
        "--format",
        "{p}",
    ]))?;
    Ok(text
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != dependency)
        .map(str::to_owned)
        .collect())
}

/// The dependency direction of `docs/ARCHITECTURE.md`, checked with `cargo tree`.
fn dependency_direction() -> anyhow::Result<()> {
    let mut problems = Vec::new();
    // (package, must not depend on, at any depth)
    let forbidden = [
        ("brain-tools-config", "tokio"),
        ("brain-tools-config", "rmcp"),
        ("brain-tools-policy", "tokio"),
        ("brain-tools-policy", "rmcp"),
        ("brain-tools-events", "rmcp"),
    ];
    for (package, dependency) in forbidden {
        let all =
            dependencies(package, false).with_context(|| format!("cargo tree -p {package}"))?;
        if all.contains(dependency) {
            problems.push(format!("{package} depends on {dependency}"));
        }
    }
    let allowed = [
        "brain-mcp-transport",
        "brain-mcp-testkit",
        "brain-conformance",
    ];
    for dependent in direct_dependents("rmcp")? {
        if !allowed.contains(&dependent.as_str()) {
            problems.push(format!(
                "{dependent} depends on rmcp directly (only {} may)",
                allowed.join(", ")
            ));
        }
    }
    if dependencies("brain-tools", true)?.contains("rmcp") {
        problems.push("brain-tools depends on rmcp directly".to_owned());
    }
    anyhow::ensure!(problems.is_empty(), "{}", problems.join("; "));
    eprintln!("dependency direction ok");
    Ok(())
}
