//! `cargo xtask test`: everything CI checks, in order, with a short summary at the end.
//!
//! 1. `cargo fmt --all -- --check`
//! 2. `cargo clippy --workspace --all-targets -- -D warnings`
//! 3. the cargo features: `cargo clippy` (lib, warnings denied) of `brain-tools` and the
//!    transport under it with no features, each feature alone, the default and all, so
//!    that no combination rots
//! 4. the dependency direction (`cargo tree`), an invariant of `docs/ARCHITECTURE.md`
//! 5. the public API of the library crates against `xtask/api/` (`cargo xtask api`)
//! 6. semver: each published crate against its last release on crates.io, with
//!    `cargo semver-checks`, once it has one (until then the listing of step 5 is the review)
//! 7. `cargo doc` of the published crates with every feature, warnings denied (docs.rs
//!    builds them so)
//! 8. `cargo package` of the published crates, what they hold, and a check that each
//!    builds from its package alone
//! 9. the tests and the binaries they spawn (`cargo test --no-run`: one build for the
//!    tests and the conformance run)
//! 10. the pinned peers in `target/peers/` (some tests start server-everything)
//! 11. the workspace's tests (`cargo nextest run` when installed, else `cargo test`)
//! 12. `cargo xtask conformance`
//!
//! Every step runs even when an earlier one failed, so one run shows every problem.
//! `--step NAME` (repeatable) runs only the named steps: fmt, clippy, features, deps, api, semver,
//! docs, package, build, peers, tests, conformance.

use std::{collections::BTreeSet, time::Instant};

use anyhow::Context as _;
use serde_json::Value;

use crate::{api, conformance, util};

type Step = (&'static str, fn() -> anyhow::Result<()>);

const STEPS: &[Step] = &[
    ("fmt", fmt),
    ("clippy", clippy),
    ("features", features),
    ("deps", dependency_direction),
    ("api", || api::run(&[])),
    ("semver", semver),
    ("docs", docs),
    ("package", package),
    ("build", build_tests),
    // Some tests start the real peers (server-everything): install them first.
    ("peers", || crate::peers::install().map(|_| ())),
    ("tests", tests),
    ("conformance", || conformance::run(&[])),
];

/// The names of the steps, in order (`--step NAME`).
pub(crate) fn step_names() -> impl Iterator<Item = &'static str> {
    STEPS.iter().map(|(name, _)| *name)
}

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
            step_names().collect::<Vec<_>>().join(", ")
        );
        only.push(name.as_str());
    }
    let runs = |name: &str| only.is_empty() || only.contains(&name);
    // The peers download and unpack (npm, PyPI) while the build steps before them keep
    // the cores busy: their install starts in the background now, and the `peers` step
    // waits for it.
    let mut peers = None;
    if runs("peers")
        && STEPS
            .iter()
            .take_while(|(name, _)| *name != "peers")
            .any(|(name, _)| runs(name))
    {
        match BackgroundPeers::start() {
            Ok(background) => peers = Some(background),
            Err(error) => eprintln!(
                "peers: cannot install in the background ({error:#}): the peers step installs them"
            ),
        }
    }
    let mut summary = Vec::new();
    for (name, step) in STEPS {
        if !runs(name) {
            continue;
        }
        eprintln!("\n==> {name}");
        let started = Instant::now();
        let outcome = if *name == "peers"
            && let Some(background) = peers.take()
        {
            background.finish()
        } else {
            step()
        };
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

/// `cargo xtask test --step peers` in a child process, its output in a log that the
/// `peers` step prints.
struct BackgroundPeers {
    child: std::process::Child,
    log: std::path::PathBuf,
    started: Instant,
}

impl BackgroundPeers {
    fn start() -> anyhow::Result<Self> {
        let log = util::target_dir().join("peers-install.log");
        std::fs::create_dir_all(util::target_dir())?;
        let file = std::fs::File::create(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let child = std::process::Command::new(
            std::env::current_exe().context("cannot find xtask's own executable")?,
        )
        .args(["test", "--step", "peers"])
        .stdin(std::process::Stdio::null())
        .stdout(file.try_clone()?)
        .stderr(file)
        .spawn()
        .context("cannot start the peers' install")?;
        eprintln!(
            "peers: installing in the background (log: {})",
            log.display()
        );
        Ok(Self {
            child,
            log,
            started: Instant::now(),
        })
    }

    /// Waits for the install and prints its log.
    fn finish(mut self) -> anyhow::Result<()> {
        let status = self
            .child
            .wait()
            .context("waiting for the peers' install")?;
        eprint!(
            "{}",
            String::from_utf8_lossy(&std::fs::read(&self.log).unwrap_or_default())
        );
        eprintln!(
            "peers: installed in the background (its own time is in the log above), \
             ended within {:.0} s of the start",
            self.started.elapsed().as_secs_f64()
        );
        anyhow::ensure!(status.success(), "installing the peers failed ({status})");
        Ok(())
    }
}

impl Drop for BackgroundPeers {
    /// A run that ends before the `peers` step (a panic) stops the install with it.
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
            eprintln!(
                "peers: the background install was stopped (log: {})",
                self.log.display()
            );
        }
    }
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

/// The crate whose cargo features are checked, and its features: `brain-tools` passes the
/// transport's through under the same names (and adds its own code under `otel`, `http`
/// and the transports), and clippy lints the workspace crates a package depends on, so
/// each set checks both crates (and config, policy and events) with those features. A
/// set of the transport's alone would check the same code again.
const FEATURED: (&str, &[&str]) = (
    "brain-tools",
    &["stdio", "http", "oauth", "oauth-jwt", "postgres", "otel"],
);

/// `cargo clippy` of the library of [`FEATURED`] (and of the workspace crates under it),
/// warnings denied, with no features, each alone, the default and all. In the main target
/// directory: the lints' flags reach only workspace crates (not `RUSTFLAGS`, which would
/// change every dependency's fingerprint), so what a set shares with the workspace's
/// build (build scripts, dependencies with the same features) is reused.
fn features() -> anyhow::Result<()> {
    let (package, features) = FEATURED;
    let mut sets: Vec<Vec<&str>> = vec![vec!["--no-default-features"]];
    for feature in features {
        sets.push(vec!["--no-default-features", "--features", feature]);
    }
    sets.push(Vec::new());
    sets.push(vec!["--all-features"]);
    for set in sets {
        eprintln!("--> {package} {}", set.join(" "));
        util::run(
            util::cargo()
                .args(["clippy", "--quiet", "--lib", "-p", package])
                .args(&set)
                .args(["--", "-D", "warnings"]),
        )?;
    }
    Ok(())
}

/// The published crates' docs, as docs.rs builds them (every feature), with rustdoc's
/// warnings denied: a broken link or a bare URL fails here, not on docs.rs.
fn docs() -> anyhow::Result<()> {
    let mut command = util::cargo();
    command.env("RUSTDOCFLAGS", "-D warnings").args([
        "doc",
        "--quiet",
        "--no-deps",
        "--all-features",
    ]);
    for name in PUBLISHED {
        command.args(["-p", name]);
    }
    util::run(&mut command)
}

/// The repository every published crate names (the workspace's).
const REPOSITORY: &str = "https://github.com/brain-dev/brain-mcp-tools";

/// The crates that publish, in dependency order; every other member is `publish = false`.
const PUBLISHED: &[&str] = &[
    "brain-tools-auth",
    "brain-tools-config",
    "brain-tools-policy",
    "brain-tools-events",
    "brain-tools-providers",
    "brain-mcp-transport",
    "brain-tools",
    "brain-mcp-gateway",
    "brain-mcp-tools",
];

/// What a package may hold besides `src/` and `examples/`.
const PACKAGE_FILES: &[&str] = &[
    ".cargo_vcs_info.json",
    "Cargo.lock",
    "Cargo.toml",
    "Cargo.toml.orig",
    "LICENSE",
    "README.md",
];

/// `cargo package` of the published crates, and a check that each builds from its package.
///
/// First the metadata and the file lists: exactly [`PUBLISHED`] may publish, and a
/// package holds its sources, README and LICENSE, and nothing else (no tests, snapshots
/// of integration tests or fixtures). Then one `cargo package` for all of them, and
/// [`verify_packages`].
fn package() -> anyhow::Result<()> {
    let metadata: Value = serde_json::from_str(&util::output(util::cargo().args([
        "metadata",
        "--no-deps",
        "--format-version",
        "1",
    ]))?)
    .context("cargo metadata printed something that is not JSON")?;
    let mut problems = Vec::new();
    let license = std::fs::read(util::workspace_root().join("LICENSE"))
        .context("cannot read the workspace's LICENSE")?;
    let mut versions = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let name = package["name"].as_str().unwrap_or("?");
        // `publish = false` is an empty list of registries; no `publish` is null.
        let publishes = package["publish"].as_array().is_none_or(|r| !r.is_empty());
        if publishes != PUBLISHED.contains(&name) {
            problems.push(format!(
                "{name} {} publish (expected only {})",
                if publishes { "may" } else { "may not" },
                PUBLISHED.join(", ")
            ));
        }
        if !publishes {
            continue;
        }
        versions.push((
            name.to_owned(),
            package["version"].as_str().unwrap_or("?").to_owned(),
        ));
        for field in [
            "description",
            "license",
            "readme",
            "repository",
            "rust_version",
        ] {
            if package[field].as_str().is_none_or(str::is_empty) {
                problems.push(format!("{name} has no {field}"));
            }
        }
        for field in ["keywords", "categories"] {
            if package[field].as_array().is_none_or(Vec::is_empty) {
                problems.push(format!("{name} has no {field}"));
            }
        }
        let dir = std::path::Path::new(package["manifest_path"].as_str().unwrap_or_default())
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default();
        // A symlink to the workspace's LICENSE; a checkout without symlinks breaks it.
        if std::fs::read(dir.join("LICENSE")).ok().as_deref() != Some(license.as_slice()) {
            problems.push(format!(
                "{name}: {}/LICENSE is not the workspace's LICENSE",
                dir.display()
            ));
        }
        let listed =
            util::output(util::cargo().args(["package", "--list", "--allow-dirty", "-p", name]))?;
        for file in listed.lines() {
            let allowed = PACKAGE_FILES.contains(&file)
                || file.starts_with("src/")
                || file.starts_with("examples/");
            if !allowed {
                problems.push(format!("{name} would ship {file}"));
            }
        }
        for file in ["LICENSE", "README.md"] {
            if !listed.lines().any(|listed| listed == file) {
                problems.push(format!("{name} would ship without {file}"));
            }
        }
    }
    anyhow::ensure!(problems.is_empty(), "{}", problems.join("; "));
    let mut command = util::cargo();
    command.args(["package", "--quiet", "--no-verify", "--allow-dirty"]);
    for name in PUBLISHED {
        command.args(["-p", name]);
    }
    util::run(&mut command)?;
    verify_packages(&versions)
}

/// Checks that each package builds from what it ships: the `.crate` files unpacked into
/// `target/package-verify/`, a workspace of their own in which each depends on its
/// siblings' unpacked packages (`[patch.crates-io]`: nothing has to be on crates.io
/// first), and `cargo check` of each alone (its library and binaries, with its own
/// default features, as `cargo package` would verify it).
///
/// Not `cargo package`'s own verification: that builds (code generation included) every
/// package's graph again in a target directory of its own, about five minutes on a
/// 2-core machine, because cargo takes the copies it unpacks as registry crates whose
/// artifacts it may not reuse. Checked here in the workspace's target directory, each
/// package reuses what the earlier steps checked with the same features, and a package
/// whose `.crate` did not change keeps its unpacked files (and their times), so checking
/// it again is a no-op. What this leaves out is code generation and linking, which the
/// tests build from the same sources.
fn verify_packages(versions: &[(String, String)]) -> anyhow::Result<()> {
    let packaged = util::target_dir().join("package");
    let verify = util::target_dir().join("package-verify");
    std::fs::create_dir_all(&verify)
        .with_context(|| format!("cannot create {}", verify.display()))?;
    // What an earlier run unpacked of another version goes: only this run's packages
    // are members.
    let current: Vec<String> = versions
        .iter()
        .map(|(name, version)| format!("{name}-{version}"))
        .collect();
    for entry in std::fs::read_dir(&verify)?.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let stem = file_name.strip_suffix(".crate").unwrap_or(&file_name);
        let ours = file_name != "Cargo.toml" && file_name != "Cargo.lock";
        if ours && !current.iter().any(|unpacked| unpacked == stem) {
            let path = entry.path();
            if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            }
            .with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    let mut members = String::new();
    let mut patches = String::new();
    for (name, version) in versions {
        let unpacked = format!("{name}-{version}");
        let file = packaged.join(format!("{unpacked}.crate"));
        let bytes = std::fs::read(&file).with_context(|| format!("no {}", file.display()))?;
        eprintln!(
            "{name} {version}: {:.1} KiB packaged",
            bytes.len() as f64 / 1024.0
        );
        let dir = verify.join(&unpacked);
        let copy = verify.join(format!("{unpacked}.crate"));
        if std::fs::read(&copy).ok().as_deref() != Some(bytes.as_slice()) || !dir.is_dir() {
            if dir.exists() {
                std::fs::remove_dir_all(&dir)
                    .with_context(|| format!("cannot remove {}", dir.display()))?;
            }
            // `--touch`: a `.crate` holds its files with a fixed old time, and cargo
            // takes a path package whose files are older than its last check as checked.
            util::run(
                std::process::Command::new("tar")
                    .arg("--touch")
                    .arg("-xzf")
                    .arg(&file)
                    .arg("-C")
                    .arg(&verify),
            )?;
            std::fs::write(&copy, &bytes)
                .with_context(|| format!("cannot write {}", copy.display()))?;
        }
        members.push_str(&format!("    \"{unpacked}\",\n"));
        patches.push_str(&format!("{name} = {{ path = \"{unpacked}\" }}\n"));
    }
    std::fs::write(
        verify.join("Cargo.toml"),
        format!(
            "# Written by `cargo xtask test` (step package): the published crates as they \
             ship,\n# each built against the others.\n[workspace]\nresolver = \"3\"\n\
             members = [\n{members}]\n\n[patch.crates-io]\n{patches}"
        ),
    )?;
    // The workspace's versions of every dependency, as a user of the lock file gets them.
    std::fs::copy(
        util::workspace_root().join("Cargo.lock"),
        verify.join("Cargo.lock"),
    )
    .context("cannot copy Cargo.lock")?;
    let mut failed = Vec::new();
    for (name, _) in versions {
        let checked = util::run(
            util::cargo()
                .args(["check", "--quiet", "--manifest-path"])
                .arg(verify.join("Cargo.toml"))
                .args(["-p", name, "--target-dir"])
                .arg(util::target_dir()),
        );
        if checked.is_err() {
            failed.push(name.as_str());
        }
    }
    anyhow::ensure!(
        failed.is_empty(),
        "these do not build from their packages (errors above): {}",
        failed.join(", ")
    );
    Ok(())
}

/// Each published crate against its last release: `cargo info` asks the registry (its
/// index, which a mirror serves too) for the newest version; a crate with one is checked
/// by `cargo semver-checks` against it (installed on first use), which says whether the
/// version in `Cargo.toml` is bumped enough for the change. A crate never released has
/// nothing to compare with: its public API is reviewed through `xtask/api/` (step `api`).
fn semver() -> anyhow::Result<()> {
    let mut released = Vec::new();
    for name in PUBLISHED {
        let output = util::cargo()
            .args(["info", "--quiet", name])
            .current_dir(std::env::temp_dir())
            .output()
            .with_context(|| format!("cargo info {name}"))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.success() {
            // A name on the registry is ours only if it names our repository: another
            // project's crate of the same name is a name we cannot publish under.
            let info = String::from_utf8_lossy(&output.stdout);
            let repository = info
                .lines()
                .find_map(|line| line.strip_prefix("repository:"))
                .map(str::trim);
            anyhow::ensure!(
                repository == Some(REPOSITORY),
                "{name} on the registry is another project's ({}): rename the package to publish it",
                repository.unwrap_or("no repository")
            );
            released.push(*name);
        } else if stderr.contains("could not find") {
            eprintln!(
                "{name}: no release on the registry yet: its API is reviewed through xtask/api/{name}.txt"
            );
        } else {
            anyhow::bail!("cargo info {name} failed: {}", stderr.trim());
        }
    }
    if released.is_empty() {
        return Ok(());
    }
    if !util::works("cargo", &["semver-checks", "--version"]) {
        util::run(util::cargo().args(["install", "--locked", "cargo-semver-checks"]))?;
    }
    let mut command = util::cargo();
    command.args(["semver-checks", "check-release"]);
    for name in released {
        command.args(["-p", name]);
    }
    util::run(&mut command)
}

/// The workspace's tests and every binary they spawn, in one build: the testkit's servers,
/// `mcp-tools`, `brain-conformance` and `brain-fleet-host` are binaries of packages with
/// integration tests, so cargo builds them with the tests, with the same features. A
/// binary built alone (`cargo build -p brain-mcp-testkit`) gets the features of its
/// package alone, and much of the graph would be built a second time for it.
fn build_tests() -> anyhow::Result<()> {
    util::run(util::cargo().args(["test", "--workspace", "--no-run", "--quiet"]))
}

/// Where [`build_tests`] leaves the testkit's binaries; the tests of other crates spawn
/// them from there instead of building them alone.
fn testkit_binaries() -> [(&'static str, std::path::PathBuf); 2] {
    let dir = util::target_dir().join("debug");
    [
        (
            "BRAIN_MCP_TESTKIT_STDIO",
            dir.join("brain-mcp-testkit-stdio"),
        ),
        ("BRAIN_MCP_TESTKIT_HTTP", dir.join("brain-mcp-testkit-http")),
    ]
}

fn tests() -> anyhow::Result<()> {
    let mut command = util::cargo();
    // With a target triple the binaries are elsewhere: the tests build them (as outside
    // xtask).
    if std::env::var_os("CARGO_BUILD_TARGET").is_none() {
        command.envs(testkit_binaries());
    }
    if util::works("cargo", &["nextest", "--version"]) {
        util::run(command.args(["nextest", "run", "--workspace", "--no-fail-fast"]))?;
        // nextest does not run doctests.
        util::run(util::cargo().args(["test", "--workspace", "--doc"]))
    } else {
        util::run(command.args(["test", "--workspace", "--no-fail-fast"]))
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
        ("brain-tools-providers", "tokio"),
        ("brain-tools-providers", "rmcp"),
    ];
    // The auth model is plain data both the config and the transport share: it depends on
    // nothing at all.
    let auth = dependencies("brain-tools-auth", false)?;
    if !auth.is_empty() {
        problems.push(format!(
            "brain-tools-auth depends on {}",
            auth.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    for (package, dependency) in forbidden {
        let all =
            dependencies(package, false).with_context(|| format!("cargo tree -p {package}"))?;
        if all.contains(dependency) {
            problems.push(format!("{package} depends on {dependency}"));
        }
    }
    // The transport is the MCP client; the gateway alone uses rmcp's server side (its
    // own MCP server); the testkit and brain-conformance never publish.
    let allowed = [
        "brain-mcp-transport",
        "brain-mcp-gateway",
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
    // The gateway is the server side, above brain-tools: it uses rmcp's server features
    // only (the client's are the transport's), and what a host could of ours.
    let gateway = dependencies("brain-mcp-gateway", true)?;
    for ours in [
        "brain-mcp-transport",
        "brain-tools-events",
        "brain-tools-policy",
    ] {
        if gateway.contains(ours) {
            problems.push(format!(
                "brain-mcp-gateway depends on {ours} directly (a host would use brain-tools)"
            ));
        }
    }
    if dependencies("brain-tools", true)?.contains("rmcp") {
        problems.push("brain-tools depends on rmcp directly".to_owned());
    }
    // The provider rules read bindings: the config crate is the only one of ours they use.
    let providers = dependencies("brain-tools-providers", false)?;
    for ours in [
        "brain-tools-policy",
        "brain-tools-events",
        "brain-mcp-transport",
        "brain-tools",
    ] {
        if providers.contains(ours) {
            problems.push(format!("brain-tools-providers depends on {ours}"));
        }
    }
    // The CLI uses only what a host could: brain-tools, the config crate, the provider
    // rules and the gateway.
    let cli = dependencies("brain-mcp-tools", true)?;
    for ours in [
        "brain-mcp-transport",
        "brain-tools-events",
        "brain-tools-policy",
    ] {
        if cli.contains(ours) {
            problems.push(format!(
                "brain-mcp-tools (mcp-tools) depends on {ours} directly (a host would use brain-tools)"
            ));
        }
    }
    anyhow::ensure!(problems.is_empty(), "{}", problems.join("; "));
    eprintln!("dependency direction ok");
    Ok(())
}
