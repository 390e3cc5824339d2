//! `cargo xtask conformance`: the proof that this client speaks MCP as the spec's own
//! referee sees it, and that it works with real servers.
//!
//! Outside the namespace: install the pinned peers (`target/peers/`), build the
//! `brain-conformance` client and the testkit binaries, then run this same command again
//! with `--inside` in a private network namespace that has only loopback (`unshare -rn`),
//! so that every server that listens on all interfaces (the suite's mock servers,
//! server-everything) is reachable from nowhere else.
//!
//! Inside: run each official client scenario on its own (never with the suite's
//! `--expected-failures`, which hides crashes and timeouts), the official server
//! scenarios against the gateway (`server_scenarios`), our scenario suite against the
//! testkit, and the interop matrix; print one table; apply
//! `tests/conformance/expected-failures.json`; write `target/conformance/results.json`.
//!
//! Options: `--suite official|server|ours|interop` and `--only TEXT` (rows whose scenario
//! or peer contains TEXT) narrow the run, for iterating on one scenario.

use std::{
    io::Read,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::Context as _;
use serde_json::Value;

use crate::{
    peers::{self, Peers},
    results::{self, Row},
    server_scenarios, util,
};

/// The revisions whose client scenarios we run, oldest first: each scenario at every
/// revision the suite lists it for (`conformance list --client --spec-version R`).
const REVISIONS: &[&str] = &["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

/// Extension scenarios (listed as `[extension]`, not on the spec timeline, never scored)
/// are run at these revisions' wires, with `--force`, as the suite's `--requirements`
/// runs do.
const EXTENSION_REVISIONS: &[&str] = &["2025-11-25", "2026-07-28"];

/// Client scenarios the suite lists that we do not run, with why.
const NOT_RUN: &[(&str, &str)] = &[(
    "sep-2640-client-",
    "the skills extension (SEP-2640: skills/list and skill files) is not part of a tool layer",
)];

/// Scenarios whose server misbehaves so that the client must stop (the suite allows a
/// client error there): a run passes only when the client failed with its error exit, and
/// the suite's checks found nothing sent that must not be (no authorization request, no
/// code exchange, no fourth authorization).
const MUST_REFUSE: &[&str] = &[
    "auth/resource-mismatch",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
    "auth/scope-retry-limit",
];

/// One official client scenario at one revision.
#[derive(Debug, Clone)]
struct Official {
    scenario: String,
    revision: &'static str,
    /// An extension scenario: run with `--force`, shown as suite `extension`.
    extension: bool,
}

/// The scenario names of a `conformance list --client ...` listing, each with the
/// bracketed revisions (or `extension`) after it.
pub(crate) fn listed(listing: &str) -> Vec<(String, String)> {
    listing
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter_map(|entry| {
            let (name, tags) = entry.split_once(' ')?;
            let tags = tags.trim().strip_prefix('[')?.strip_suffix(']')?;
            Some((name.to_owned(), tags.to_owned()))
        })
        .collect()
}

/// Every client scenario the pinned suite lists, at every revision it lists it for, and
/// the extensions at [`EXTENSION_REVISIONS`], from the suite's own listing.
fn official_scenarios(peers: &Peers) -> anyhow::Result<Vec<Official>> {
    let list = |args: &[&str]| -> anyhow::Result<Vec<(String, String)>> {
        let text = util::output(
            Command::new(&peers.node)
                .arg(&peers.conformance)
                .args(["list", "--client"])
                .args(args),
        )?;
        Ok(listed(&text))
    };
    let skipped = |name: &str| NOT_RUN.iter().any(|(prefix, _)| name.starts_with(prefix));
    let mut runs = Vec::new();
    for revision in REVISIONS {
        for (scenario, _) in list(&["--spec-version", revision])? {
            if !skipped(&scenario) {
                runs.push(Official {
                    scenario,
                    revision,
                    extension: false,
                });
            }
        }
    }
    let extensions: Vec<String> = list(&[])?
        .into_iter()
        .filter(|(name, tags)| tags == "extension" && !skipped(name))
        .map(|(name, _)| name)
        .collect();
    for revision in EXTENSION_REVISIONS {
        for scenario in &extensions {
            runs.push(Official {
                scenario: scenario.clone(),
                revision,
                extension: true,
            });
        }
    }
    anyhow::ensure!(
        !runs.is_empty(),
        "the suite lists no client scenario (`conformance list --client` printed nothing usable)"
    );
    Ok(runs)
}

/// How many official scenarios run at once (each is a node process and our client,
/// mostly waiting on each other); `BRAIN_CONFORMANCE_JOBS` overrides.
fn official_jobs() -> usize {
    std::env::var("BRAIN_CONFORMANCE_JOBS")
        .ok()
        .and_then(|jobs| jobs.parse().ok())
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map_or(2, std::num::NonZeroUsize::get)
                .saturating_add(1)
                .min(4)
        })
        .max(1)
}

/// Runs the official scenarios, `jobs` at a time; rows in the order given.
fn run_official(peers: &Peers, client: &Path, runs: &[Official], out: &Path) -> Vec<Row> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let rows = std::sync::Mutex::new(vec![None; runs.len()]);
    std::thread::scope(|scope| {
        for _ in 0..official_jobs().min(runs.len()) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some(run) = runs.get(i) else { break };
                    let row = official(peers, client, run, out);
                    eprintln!(
                        "{} {} @ {}: {}",
                        row.suite,
                        row.scenario,
                        row.revision,
                        if row.passed { "pass" } else { "fail" }
                    );
                    rows.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)[i] = Some(row);
                }
            });
        }
    });
    rows.into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .into_iter()
        .flatten()
        .collect()
}

/// The suite kills a client after this long; we kill the suite itself a bit later.
const SCENARIO_TIMEOUT_MS: u64 = 30_000;
const RUNNER_DEADLINE: Duration = Duration::from_secs(60);
/// Bound on one of our own or interop runs (the binary bounds itself at 90 s).
const RUN_DEADLINE: Duration = Duration::from_secs(120);
/// Bound on a peer server's start.
const START_DEADLINE: Duration = Duration::from_secs(30);

#[derive(Debug, Default)]
struct Options {
    inside: bool,
    suite: Option<String>,
    only: Option<String>,
    /// The arguments to hand to the inside run.
    forwarded: Vec<String>,
}

impl Options {
    fn parse(args: &[String]) -> anyhow::Result<Self> {
        let mut options = Options::default();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--inside" => options.inside = true,
                "--suite" | "--only" => {
                    let value = args
                        .next()
                        .with_context(|| format!("{arg} needs a value"))?
                        .clone();
                    if arg == "--suite" {
                        anyhow::ensure!(
                            matches!(value.as_str(), "official" | "server" | "ours" | "interop"),
                            "--suite takes official, server, ours or interop"
                        );
                        options.suite = Some(value.clone());
                    } else {
                        options.only = Some(value.clone());
                    }
                    options.forwarded.extend([arg.clone(), value]);
                }
                other => anyhow::bail!(
                    "unknown argument {other:?} (options: --suite official|server|ours|interop, --only TEXT)"
                ),
            }
        }
        Ok(options)
    }

    fn wants(&self, suite: &str, scenario: &str) -> bool {
        self.suite.as_deref().is_none_or(|wanted| wanted == suite)
            && self
                .only
                .as_deref()
                .is_none_or(|text| scenario.contains(text))
    }

    fn narrowed(&self) -> bool {
        self.suite.is_some() || self.only.is_some()
    }
}

/// The subcommand.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let options = Options::parse(args)?;
    if options.inside {
        inside(&options)
    } else {
        outside(&options)
    }
}

fn out_dir() -> PathBuf {
    util::target_dir().join("conformance")
}

/// Our client; `BRAIN_CONFORMANCE_CLIENT` replaces it for the official scenarios (to
/// check the harness itself with a stand-in, e.g. `/bin/true` must fail every row).
fn client_binary() -> PathBuf {
    util::target_dir().join("debug").join("brain-conformance")
}

fn official_client(ours: &Path) -> PathBuf {
    std::env::var_os("BRAIN_CONFORMANCE_CLIENT").map_or_else(|| ours.to_path_buf(), PathBuf::from)
}

fn outside(options: &Options) -> anyhow::Result<()> {
    for (program, package) in [("unshare", "util-linux"), ("ip", "iproute2")] {
        anyhow::ensure!(
            util::works("sh", &["-c", &format!("command -v {program}")]),
            "`{program}` is not installed: the conformance run needs it for a loopback-only \
             network namespace. Install {package} (for example `apt-get install {package}`)"
        );
    }
    let started = Instant::now();
    peers::install()?;
    // The client and the testkit's servers, as the tests build them (`cargo test
    // --no-run`): nothing to do after `cargo xtask test`'s build step, the workspace's
    // tests when run alone. Built alone with `-p`, they would get other features, and
    // after the tests much of the graph would be built again.
    util::run(util::cargo().args(["test", "--workspace", "--no-run", "--quiet"]))?;
    let probe = Command::new("unshare")
        .args(["-rn", "sh", "-c", "ip link set lo up"])
        .stdin(Stdio::null())
        .output()
        .context("cannot run unshare")?;
    anyhow::ensure!(
        probe.status.success(),
        "cannot create a loopback-only network namespace (`unshare -rn` failed: {}). \
         The conformance run never listens outside one: allow unprivileged user namespaces \
         (sysctl kernel.unprivileged_userns_clone=1, or in containers run with \
         --security-opt seccomp=unconfined / a userns-capable runtime), or run as root",
        String::from_utf8_lossy(&probe.stderr).trim()
    );
    eprintln!(
        "setup took {:.0} s; running inside a loopback-only network namespace",
        started.elapsed().as_secs_f64()
    );
    let exe = std::env::current_exe().context("cannot find the xtask binary")?;
    let results = out_dir().join("results.json");
    let _ = std::fs::remove_file(&results);
    let status = Command::new("unshare")
        .args(["-rn", "sh", "-c", r#"ip link set lo up && exec "$0" "$@""#])
        .arg(&exe)
        .args(["conformance", "--inside"])
        .args(&options.forwarded)
        .current_dir(util::workspace_root())
        .status()
        .context("cannot run unshare")?;
    if status.success() {
        return Ok(());
    }
    let failing = std::fs::read_to_string(&results)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .and_then(|results| results.get("failing").and_then(Value::as_u64));
    match failing {
        Some(failing) => anyhow::bail!("{failing} row(s) failed (see the table above)"),
        None => anyhow::bail!("the conformance run failed ({status})"),
    }
}

fn inside(options: &Options) -> anyhow::Result<()> {
    let links = util::output(Command::new("ip").args(["-o", "link", "show"]))?;
    let names: Vec<&str> = links
        .lines()
        .filter_map(|line| line.split(':').nth(1))
        .map(str::trim)
        .collect();
    anyhow::ensure!(
        names == ["lo"],
        "not in a loopback-only network namespace (links: {names:?}); run `cargo xtask conformance`"
    );
    let peers = Peers::locate();
    peers.check()?;
    let client = client_binary();
    // (The server scenarios use the gateway and the testkit instead; it checks those.)
    anyhow::ensure!(
        client.exists() || options.suite.as_deref() == Some("server"),
        "{} is missing: run `cargo xtask conformance`",
        client.display()
    );
    let out = out_dir();
    for sub in ["official", "logs"] {
        let dir = out.join(sub);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
    }
    let mut rows = Vec::new();
    if options
        .suite
        .as_deref()
        .is_none_or(|suite| suite == "official")
    {
        let runs: Vec<Official> = official_scenarios(&peers)?
            .into_iter()
            .filter(|run| options.wants("official", &run.scenario))
            .collect();
        rows.extend(run_official(&peers, &official_client(&client), &runs, &out));
    }
    let server = options
        .suite
        .as_deref()
        .is_none_or(|suite| suite == "server")
        .then(|| {
            server_scenarios::run(&peers, &|scenario| options.wants("server", scenario), &out)
        });
    if let Some(server) = &server {
        rows.extend(server.rows.iter().cloned());
    }
    for (name, server_era, transport, era) in OURS {
        if options.wants("ours", name) {
            rows.push(ours(&client, name, server_era, transport, era, &out));
        }
    }
    for peer in interop_matrix() {
        if options.wants("interop", &peer.name) {
            rows.push(interop(&peers, &client, &peer, &out));
        }
    }
    anyhow::ensure!(!rows.is_empty(), "no row matches the options");
    let expected_path = util::workspace_root()
        .join("tests")
        .join("conformance")
        .join("expected-failures.json");
    let mut expected = results::load_expected(&expected_path)?;
    if let Some(server) = &server {
        expected.extend(server.excluded.iter().cloned());
    }
    let bad = results::report(&rows, &expected, &out.join("results.json"))?;
    if let Some(server) = &server {
        server_scenarios::print_summary(server);
    }
    if options.narrowed() {
        println!("(a narrowed run: expected failures of rows that did not run are not checked)");
    }
    if bad > 0 {
        // The outer process reads results.json and says how many failed.
        std::process::exit(1);
    }
    Ok(())
}

/// A finished process.
pub(crate) struct Finished {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) timed_out: bool,
    pub(crate) seconds: f64,
}

/// Runs a command with piped output, killed past the deadline.
pub(crate) fn run_bounded(mut command: Command, deadline: Duration) -> anyhow::Result<Finished> {
    let shown = util::show(&command);
    let started = Instant::now();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {shown}"))?;
    let reader = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut text);
            }
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if started.elapsed() > deadline {
            timed_out = true;
            let _ = child.kill();
            break child.wait()?;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(Finished {
        code: status.code(),
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
        timed_out,
        seconds: started.elapsed().as_secs_f64(),
    })
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// One official client scenario, run on its own.
fn official(peers: &Peers, client: &Path, run: &Official, out: &Path) -> Row {
    let (scenario, revision) = (run.scenario.as_str(), run.revision);
    let dir = out.join("official").join(revision).join(scenario);
    let mut row = Row {
        suite: if run.extension {
            "extension"
        } else {
            "official"
        },
        scenario: scenario.to_owned(),
        revision: revision.to_owned(),
        transport: "http",
        passed: false,
        note: String::new(),
        seconds: 0.0,
    };
    let mut command = Command::new(&peers.node);
    command
        .arg(&peers.conformance)
        .args(["client", "--command"])
        .arg(format!("exec {}", client.display()))
        .args(["--scenario", scenario, "--spec-version", revision, "-o"])
        .arg(&dir)
        .args(["--timeout", &SCENARIO_TIMEOUT_MS.to_string()])
        .env_remove("MCP_CONFORMANCE_CONTEXT");
    if run.extension {
        // Extensions are not on the spec timeline: skipped under --spec-version otherwise.
        command.arg("--force");
    }
    let finished = match std::fs::create_dir_all(&dir)
        .map_err(anyhow::Error::from)
        .and_then(|()| run_bounded(command, RUNNER_DEADLINE))
    {
        Ok(finished) => finished,
        Err(error) => {
            row.note = format!("{error:#}");
            return row;
        }
    };
    row.seconds = finished.seconds;
    let stderr = strip_ansi(&finished.stderr);
    let _ = std::fs::write(dir.join("runner-stdout.txt"), &finished.stdout);
    let _ = std::fs::write(dir.join("runner-stderr.txt"), &stderr);
    let mut problems = Vec::new();
    if finished.timed_out {
        problems.push(format!(
            "the suite itself hung past {} s",
            RUNNER_DEADLINE.as_secs()
        ));
    }
    if finished.stdout.trim_start().starts_with("SKIPPED") {
        problems.push(format!(
            "not run: {}",
            finished.stdout.trim().lines().next().unwrap_or_default()
        ));
    }
    if stderr.contains("CLIENT TIMED OUT") {
        problems.push("the client timed out".to_owned());
    }
    let exited = stderr
        .lines()
        .find(|line| line.contains("Client exited with code"))
        .map(|line| line.trim().to_owned());
    let refusal = MUST_REFUSE.contains(&scenario);
    match exited {
        // The client refused, as it must here: it failed with its error exit (1), not a
        // crash (101) or a kill. The checks say it sent nothing it must not send.
        Some(line) if refusal && line.ends_with("code 1") => {}
        Some(line) => problems.push(line),
        None if refusal => {
            problems.push("the client did not refuse (it exited 0; it must fail here)".into());
        }
        None => {}
    }
    let checks = read_checks(&dir, scenario);
    let (successes, failing) = match &checks {
        Ok(checks) => summarize(checks),
        Err(error) => {
            problems.push(format!("{error:#}"));
            (0, Vec::new())
        }
    };
    if checks.is_ok() && successes == 0 && failing.is_empty() {
        problems.push("no check succeeded (the client did nothing the suite could see)".into());
    }
    problems.extend(failing.iter().cloned());
    if finished.code != Some(0) && problems.is_empty() {
        problems.push(format!("the suite exited with {:?}", finished.code));
    }
    row.passed = problems.is_empty() && finished.code == Some(0);
    row.note = if row.passed && refusal {
        let why = client_failure(&dir, scenario)
            .map(|line| {
                line.split_once("FAILED: ")
                    .map_or(line.clone(), |(_, why)| why.to_owned())
            })
            .unwrap_or_default();
        format!("{successes}/{successes} checks; refused: {why}")
    } else if row.passed {
        format!("{successes}/{successes} checks")
    } else {
        // What the client said about it, last.
        if let Some(line) = client_failure(&dir, scenario) {
            problems.push(format!("client: {line}"));
        }
        format!("{successes} ok; {}", problems.join("; "))
    };
    row
}

/// `checks.json` of a scenario run.
fn read_checks(dir: &Path, scenario: &str) -> anyhow::Result<Vec<Value>> {
    let run_dir = run_dir(dir, scenario).context("no result folder")?;
    let path = run_dir.join("checks.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("no checks.json in {}", run_dir.display()))?;
    let checks: Value = serde_json::from_str(&text).context("checks.json is not JSON")?;
    checks
        .as_array()
        .cloned()
        .context("checks.json is not an array")
}

/// The suite's result folder, `<dir>/<scenario>-<time>` (`auth/x` is `<dir>/auth/x-<time>`).
fn run_dir(dir: &Path, scenario: &str) -> Option<PathBuf> {
    let scenario = Path::new(scenario);
    let dir = match scenario.parent() {
        Some(parent) => dir.join(parent),
        None => dir.to_path_buf(),
    };
    let prefix = format!("{}-", scenario.file_name()?.to_string_lossy());
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| {
            path.is_dir()
                && path
                    .file_name()
                    .is_some_and(|name| name.to_string_lossy().starts_with(&prefix))
        })
}

/// Successful checks, and the failing ones (FAILURE or WARNING) as `id: message`.
fn summarize(checks: &[Value]) -> (usize, Vec<String>) {
    let mut successes = std::collections::BTreeSet::new();
    let mut failing = Vec::new();
    for check in checks {
        let field = |name: &str| check.get(name).and_then(Value::as_str).unwrap_or_default();
        let key = format!("{}/{}", field("id"), field("name"));
        match field("status") {
            "SUCCESS" => {
                successes.insert(key);
            }
            status @ ("FAILURE" | "WARNING") => {
                let message = check
                    .get("errorMessage")
                    .and_then(Value::as_str)
                    .unwrap_or_else(|| field("description"));
                let mut message: String = message.chars().take(300).collect();
                if message.len() >= 300 {
                    message.push('…');
                }
                let entry = format!("{status} {}: {message}", field("name"));
                if !failing.contains(&entry) {
                    failing.push(entry);
                }
            }
            _ => {}
        }
    }
    (successes.len(), failing)
}

/// The client's own last word (its stderr is kept by the suite).
fn client_failure(dir: &Path, scenario: &str) -> Option<String> {
    let text = std::fs::read_to_string(run_dir(dir, scenario)?.join("stderr.txt")).ok()?;
    text.lines()
        .rev()
        .find(|line| line.contains("FAILED") || line.contains("failed"))
        .map(|line| line.chars().take(300).collect())
}

/// Our scenario suite: (row name, testkit era, transport, client era).
const OURS: &[(&str, &str, &str, &str)] = &[
    (
        "testkit server=legacy client=auto",
        "legacy",
        "http",
        "auto",
    ),
    (
        "testkit server=both client=legacy",
        "both",
        "http",
        "legacy",
    ),
    (
        "testkit server=modern client=auto",
        "modern",
        "http",
        "auto",
    ),
    ("testkit server=both client=auto", "both", "http", "auto"),
    (
        "testkit server=legacy client=auto",
        "legacy",
        "stdio",
        "auto",
    ),
    (
        "testkit server=modern client=auto",
        "modern",
        "stdio",
        "auto",
    ),
];

fn ours(
    client: &Path,
    name: &str,
    server_era: &str,
    transport: &'static str,
    era: &str,
    out: &Path,
) -> Row {
    eprintln!("ours {name} over {transport} ...");
    let mut command = Command::new(client);
    command.args([
        "ours",
        "--server-era",
        server_era,
        "--transport",
        transport,
        "--era",
        era,
    ]);
    let log = out
        .join("logs")
        .join(format!("ours-{}-{transport}.log", slug(name)));
    let mut row = checks_row("ours", name, transport, command, &log);
    if row.revision.is_empty() {
        row.revision = if server_era == "modern"
            || (era == "auto" && server_era == "both" && transport == "http")
        {
            "2026-07-28".into()
        } else {
            "2025-11-25".into()
        };
    }
    row
}

/// One interop run: a peer, how to reach it, the era the client is set to, and the
/// revision it must end up speaking.
struct PeerRun {
    name: String,
    transport: &'static str,
    era: &'static str,
    revision: &'static str,
}

fn interop_matrix() -> Vec<PeerRun> {
    let run = |name: &str, transport, era, revision| PeerRun {
        name: name.to_owned(),
        transport,
        era,
        revision,
    };
    vec![
        run("server-everything", "http", "auto", "2025-11-25"),
        run("server-everything", "stdio", "auto", "2025-11-25"),
        run("python-sdk", "http", "legacy", "2025-11-25"),
        run("python-sdk", "http", "modern", "2026-07-28"),
        run("python-sdk client=auto", "http", "auto", "2026-07-28"),
        run("python-sdk", "stdio", "legacy", "2025-11-25"),
        run("python-sdk", "stdio", "modern", "2026-07-28"),
    ]
}

fn interop(peers: &Peers, client: &Path, peer: &PeerRun, out: &Path) -> Row {
    eprintln!(
        "interop {} over {} ({}) ...",
        peer.name, peer.transport, peer.era
    );
    let logs = out.join("logs");
    let stem = format!(
        "interop-{}-{}-{}",
        slug(&peer.name),
        peer.transport,
        peer.era
    );
    let profile = if peer.name.starts_with("server-everything") {
        "server-everything"
    } else {
        "python-sdk"
    };
    let mut command = Command::new(client);
    command.args([
        "interop",
        "--peer",
        profile,
        "--era",
        peer.era,
        "--expect-revision",
        peer.revision,
    ]);
    let failed = |note: String| Row {
        suite: "interop",
        scenario: peer.name.clone(),
        revision: peer.revision.to_owned(),
        transport: peer.transport,
        passed: false,
        note,
        seconds: 0.0,
    };
    // Held until the run ends: dropping it stops the server.
    let mut _server = None;
    match (profile, peer.transport) {
        ("server-everything", "http") => {
            let mut start = Command::new(&peers.node);
            start
                .arg("--require")
                .arg(peers.scripts.join("loopback-preload.cjs"))
                .arg(&peers.server_everything)
                .arg("streamableHttp")
                .env("PORT", "0");
            match util::Server::start(
                start,
                &logs.join(format!("{stem}.server.log")),
                START_DEADLINE,
            ) {
                Ok(server) => {
                    command.args(["--url", &format!("{}/mcp", server.url)]);
                    _server = Some(server);
                }
                Err(error) => return failed(format!("{error:#}")),
            }
        }
        ("server-everything", _) => {
            command
                .arg("--stdio")
                .arg(&peers.node)
                .arg(&peers.server_everything)
                .arg("stdio");
        }
        (_, "http") => {
            let mut start = Command::new(&peers.python);
            start
                .arg(peers.scripts.join("py_server.py"))
                .args(["http", "--port", "0"]);
            match util::Server::start(
                start,
                &logs.join(format!("{stem}.server.log")),
                START_DEADLINE,
            ) {
                Ok(server) => {
                    command.args(["--url", &server.url]);
                    _server = Some(server);
                }
                Err(error) => return failed(format!("{error:#}")),
            }
        }
        _ => {
            command
                .arg("--stdio")
                .arg(&peers.python)
                .arg(peers.scripts.join("py_server.py"))
                .arg("stdio");
        }
    }
    let mut row = checks_row(
        "interop",
        &peer.name,
        peer.transport,
        command,
        &logs.join(format!("{stem}.client.log")),
    );
    if row.revision.is_empty() {
        row.revision = peer.revision.to_owned();
    }
    if (profile, peer.transport) == ("server-everything", "http") {
        // It keeps a session until DELETE: every session the client opened must be gone.
        let log = util::stdout_log(&logs.join(format!("{stem}.server.log")));
        drop(_server.take());
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let opened = text.matches("Session initialized with ID").count();
        let closed = text.matches("Received session termination request").count();
        if opened == 0 || opened != closed {
            row.passed = false;
            row.note.push_str(&format!(
                "; sessions-deleted: server-everything saw {opened} session(s) initialized and {closed} DELETE(s) ({})",
                log.display()
            ));
        } else {
            row.note.push_str(&format!(
                ", {opened}/{opened} sessions deleted (server log)"
            ));
        }
    }
    row
}

/// Runs `brain-conformance interop|ours` and turns its JSON line into a row.
fn checks_row(
    suite: &'static str,
    name: &str,
    transport: &'static str,
    command: Command,
    log: &Path,
) -> Row {
    let mut row = Row {
        suite,
        scenario: name.to_owned(),
        revision: String::new(),
        transport,
        passed: false,
        note: String::new(),
        seconds: 0.0,
    };
    let finished = match run_bounded(command, RUN_DEADLINE) {
        Ok(finished) => finished,
        Err(error) => {
            row.note = format!("{error:#}");
            return row;
        }
    };
    row.seconds = finished.seconds;
    let _ = std::fs::write(log, format!("{}\n{}", finished.stderr, finished.stdout));
    let report = finished
        .stdout
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str::<Value>(line).ok());
    let Some(report) = report else {
        row.note = format!(
            "no report ({}; exit {:?}); see {}",
            if finished.timed_out {
                "killed at the deadline"
            } else {
                "crashed?"
            },
            finished.code,
            log.display()
        );
        return row;
    };
    if let Some(revision) = report.get("revision").and_then(Value::as_str) {
        row.revision = revision.to_owned();
    }
    let checks = report
        .get("checks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let failing: Vec<String> = checks
        .iter()
        .filter(|check| check.get("ok") != Some(&Value::Bool(true)))
        .map(|check| {
            format!(
                "{}: {}",
                check.get("name").and_then(Value::as_str).unwrap_or("?"),
                check.get("note").and_then(Value::as_str).unwrap_or("")
            )
        })
        .collect();
    row.passed = finished.code == Some(0)
        && report.get("ok") == Some(&Value::Bool(true))
        && failing.is_empty()
        && !checks.is_empty();
    row.note = if row.passed {
        format!("{}/{} checks", checks.len(), checks.len())
    } else if failing.is_empty() {
        format!("exit {:?}; see {}", finished.code, log.display())
    } else {
        format!(
            "{}/{} checks; {}",
            checks.len() - failing.len(),
            checks.len(),
            failing.join("; ")
        )
    };
    row
}

fn slug(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}
