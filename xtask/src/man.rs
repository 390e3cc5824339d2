//! `cargo xtask man`: the man pages of `mcp-tools`, generated from its command-line
//! definition (clap_mangen) into `target/man/`.

use anyhow::Context as _;

use crate::util;

/// The subcommand.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    anyhow::ensure!(args.is_empty(), "man takes no arguments");
    util::run(util::cargo().args([
        "build",
        "--quiet",
        "-p",
        "brain-mcp-tools",
        "--bin",
        "mcp-tools",
    ]))?;
    let out = util::target_dir().join("man");
    util::run(
        std::process::Command::new(util::target_dir().join("debug/mcp-tools"))
            .args(["manpage", "--out-dir"])
            .arg(&out),
    )?;
    let mut pages: Vec<String> = std::fs::read_dir(&out)
        .with_context(|| format!("cannot list {}", out.display()))?
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    eprintln!(
        "==> {} man pages in {}: {}\n    read one with: man -l {}",
        pages.len(),
        out.display(),
        pages.join(", "),
        out.join("mcp-tools.1").display()
    );
    Ok(())
}
