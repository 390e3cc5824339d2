//! `cargo xtask fuzz [--seconds N] [--target NAME]`: runs each libFuzzer target.
//!
//! Targets (in `fuzz/`): `config_load` (the host config loader), `mcp_result` (MCP
//! result to events), `discovery_output` (a `tools/list` result to printed bindings).
//! Needs `cargo-fuzz` (`cargo install cargo-fuzz`); it runs on the stable toolchain with
//! `RUSTC_BOOTSTRAP=1` and no sanitizer (the code is `forbid(unsafe_code)`). New inputs go
//! to `target/fuzz-corpus/<target>`; the seeds in `fuzz/corpus/<target>` are read only;
//! crashes land in `fuzz/artifacts/<target>` (add the reproducer to the seeds when fixed).

use anyhow::Context as _;

use crate::util;

const TARGETS: &[&str] = &["config_load", "mcp_result", "discovery_output"];

/// The subcommand.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let mut seconds = 60u64;
    let mut only: Option<String> = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => seconds = args.next().context("--seconds needs a number")?.parse()?,
            "--target" => only = Some(args.next().context("--target needs a name")?.clone()),
            other => anyhow::bail!("unknown argument {other:?}: --seconds N, --target NAME"),
        }
    }
    anyhow::ensure!(
        util::works("cargo", &["fuzz", "--version"]),
        "cargo-fuzz is not installed: cargo install cargo-fuzz"
    );
    let fuzz = util::workspace_root().join("fuzz");
    for target in TARGETS {
        if only.as_deref().is_some_and(|only| only != *target) {
            continue;
        }
        let corpus = util::target_dir().join("fuzz-corpus").join(target);
        std::fs::create_dir_all(&corpus)?;
        util::run(
            std::process::Command::new("cargo")
                .current_dir(&fuzz)
                .env("RUSTC_BOOTSTRAP", "1")
                .args(["fuzz", "run", "-O", "-s", "none", target])
                .arg(&corpus)
                .arg(fuzz.join("corpus").join(target))
                .args([
                    "--",
                    &format!("-max_total_time={seconds}"),
                    "-print_final_stats=1",
                ]),
        )?;
    }
    Ok(())
}
