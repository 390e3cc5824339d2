//! The official suite's *server* scenarios against the gateway (`mcp-tools serve`), in
//! both revisions the gateway serves: part of `cargo xtask conformance` (suite `server`),
//! run inside its loopback-only network namespace.
//!
//! What runs, all on 127.0.0.1 inside the namespace:
//! 1. the testkit's HTTP server with the suite's tools (`brain-mcp-testkit-http
//!    --conformance-tools`): the upstream;
//! 2. `mcp-tools --url UPSTREAM --tenant conformance --tools <the suite's tools>`: the
//!    bindings, as an operator makes them; a new API key (`mcp-tools serve --new-key`);
//!    a host config of both (`target/conformance/server/host.json`);
//! 3. `mcp-tools serve --config host.json --listen 127.0.0.1:0`: the gateway;
//! 4. per revision, one run of the suite (`server --suite all --spec-version R`, every
//!    server scenario it lists for R, pending and 2026-only ones included), with the API
//!    key added to its requests by `tests/peers/conformance-auth.mjs` (the suite has no
//!    option for headers). Both revisions run at once.
//!
//! A scenario passes when at least one check succeeded and none failed or warned. The
//! scenarios (and single checks) a tools-only gateway cannot serve are listed, each group
//! with why, in `tests/conformance/gateway-excluded.json`; they run too (the suite gets
//! them as its `--expected-failures` baseline), and must fail: one that passes is a stale
//! entry and fails the run, so the list only shrinks. `--only TEXT` runs the matching
//! scenarios one suite run each.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

use anyhow::Context as _;
use serde_json::{Value, json};

use crate::{
    peers::Peers,
    results::{Expected, Row},
    util,
};

/// The revisions whose server scenarios run: the two the gateway serves (a session in
/// the first, stateless in the second).
pub(crate) const REVISIONS: &[&str] = &["2025-11-25", "2026-07-28"];

/// The tools the scenarios call, bound under the suite's own names (the testkit serves
/// them with `--conformance-tools`).
const SUITE_TOOLS: &[&str] = &[
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_progress",
    "test_error_handling",
    "json_schema_2020_12_tool",
    "test_streaming_elicitation",
    "test_logging_tool",
    "test_custom_header",
];

/// The tenant of the run's API key and bindings.
const TENANT: &str = "conformance";
/// The suite's own per-scenario timeout.
const SCENARIO_TIMEOUT_MS: u64 = 30_000;
/// Bound on one revision's whole run (some 40 scenarios, most well under a second).
const RUN_DEADLINE: Duration = Duration::from_secs(240);
const START_DEADLINE: Duration = Duration::from_secs(30);

/// A group of scenarios (or checks of one) a tools-only gateway cannot serve, with why.
#[derive(Debug, Clone)]
struct Exclusion {
    /// Scenario names (a trailing `*` matches any ending), or `scenario:check-id` for
    /// one check of a scenario that otherwise passes.
    scenarios: Vec<String>,
    reason: String,
}

impl Exclusion {
    /// Whether it excludes the whole of `scenario`.
    fn matches(&self, scenario: &str) -> bool {
        self.scenarios
            .iter()
            .filter(|pattern| !pattern.contains(':'))
            .any(|pattern| matches_name(pattern, scenario))
    }

    /// The checks of `scenario` it excludes.
    fn checks<'a>(&'a self, scenario: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.scenarios.iter().filter_map(move |pattern| {
            let (name, check) = pattern.split_once(':')?;
            matches_name(name, scenario).then_some(check)
        })
    }
}

fn matches_name(pattern: &str, scenario: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => scenario.starts_with(prefix),
        None => scenario == pattern,
    }
}

fn excluded_path() -> PathBuf {
    util::workspace_root()
        .join("tests")
        .join("conformance")
        .join("gateway-excluded.json")
}

/// Reads `tests/conformance/gateway-excluded.json`:
/// `{"excluded": [{"scenarios": [NAME or PREFIX*], "reason"}]}`.
fn load_exclusions() -> anyhow::Result<Vec<Exclusion>> {
    let path = excluded_path();
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let document: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", path.display()))?;
    let entries = document
        .get("excluded")
        .and_then(Value::as_array)
        .with_context(|| format!("{}: needs an \"excluded\" array", path.display()))?;
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let scenarios: Vec<String> = entry
                .get("scenarios")
                .and_then(Value::as_array)
                .map(|names| {
                    names
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let reason = entry
                .get("reason")
                .and_then(Value::as_str)
                .filter(|reason| !reason.trim().is_empty())
                .with_context(|| format!("{}: excluded[{i}] needs a reason", path.display()))?;
            anyhow::ensure!(
                !scenarios.is_empty(),
                "{}: excluded[{i}] needs a non-empty \"scenarios\" array",
                path.display()
            );
            Ok(Exclusion {
                scenarios,
                reason: reason.to_owned(),
            })
        })
        .collect()
}

/// What the server part produced: its rows, the expected failures of its excluded
/// scenarios, and its wall time.
pub(crate) struct Outcome {
    pub(crate) rows: Vec<Row>,
    pub(crate) excluded: Vec<Expected>,
    /// Each group of exclusions: its entries and why.
    reasons: Vec<(Vec<String>, String)>,
    pub(crate) seconds: f64,
}

/// Runs the server scenarios that `wants` selects (by scenario name). `out` is
/// `target/conformance`.
pub(crate) fn run(peers: &Peers, wants: &dyn Fn(&str) -> bool, out: &Path) -> Outcome {
    let started = Instant::now();
    let dir = out.join("server");
    let _ = std::fs::remove_dir_all(&dir);
    let mut outcome = match std::fs::create_dir_all(&dir)
        .map_err(anyhow::Error::from)
        .and_then(|()| run_inside(peers, wants, &dir))
    {
        Ok(outcome) => outcome,
        Err(error) => Outcome {
            rows: vec![Row {
                suite: "server",
                scenario: "(gateway setup)".to_owned(),
                revision: REVISIONS.join(", "),
                transport: "http",
                passed: false,
                note: format!("{error:#}"),
                seconds: 0.0,
            }],
            excluded: Vec::new(),
            reasons: Vec::new(),
            seconds: 0.0,
        },
    };
    outcome.seconds = started.elapsed().as_secs_f64();
    outcome
}

fn run_inside(peers: &Peers, wants: &dyn Fn(&str) -> bool, dir: &Path) -> anyhow::Result<Outcome> {
    let exclusions = load_exclusions()?;
    let bin = util::target_dir().join("debug");
    let mcp_tools = bin.join("mcp-tools");
    let testkit = bin.join("brain-mcp-testkit-http");
    for binary in [&mcp_tools, &testkit] {
        anyhow::ensure!(
            binary.exists(),
            "{} is missing: run `cargo xtask conformance`",
            binary.display()
        );
    }

    // The upstream, the bindings, a key, the config, the gateway.
    let mut upstream = Command::new(&testkit);
    upstream.args(["--conformance-tools", "--no-call-details"]);
    let upstream = util::Server::start(upstream, &dir.join("upstream.log"), START_DEADLINE)?;
    let bindings = util::output(
        Command::new(&mcp_tools)
            .args(["--url", &upstream.url, "--tenant", TENANT, "--tools"])
            .arg(SUITE_TOOLS.join(",")),
    )
    .context("listing the upstream's tools as bindings")?;
    let bindings: Value =
        serde_json::from_str(&bindings).context("mcp-tools printed bindings that are not JSON")?;
    let minted =
        util::output(Command::new(&mcp_tools).args(["serve", "--new-key", "--tenant", TENANT]))
            .context("making an API key")?;
    let mut lines = minted.lines();
    let (Some(key), Some(line)) = (lines.next(), lines.next()) else {
        anyhow::bail!("mcp-tools serve --new-key printed no key and key file line");
    };
    let keys = dir.join("api-keys");
    std::fs::write(&keys, format!("{line}\n"))?;
    let config = json!({
        "tools": bindings,
        "gateway": {"api_keys": keys.display().to_string()},
    });
    let host = dir.join("host.json");
    std::fs::write(&host, serde_json::to_string_pretty(&config)? + "\n")?;
    let mut serve = Command::new(&mcp_tools);
    serve
        .args(["serve", "--config"])
        .arg(&host)
        .args(["--listen", "127.0.0.1:0"]);
    let gateway = util::Server::start_until(
        serve,
        "listening on ",
        &dir.join("gateway.log"),
        START_DEADLINE,
    )?;
    let origin = gateway
        .url
        .strip_suffix("/mcp")
        .context("the gateway's URL does not end in /mcp")?
        .to_owned();

    // Each revision's scenarios, as the suite lists them, in one run each, both at once.
    let mut plans = Vec::new();
    let mut listed = Vec::new();
    for revision in REVISIONS {
        let listing = util::output(Command::new(&peers.node).arg(&peers.conformance).args([
            "list",
            "--server",
            "--spec-version",
            revision,
        ]))?;
        let scenarios: Vec<String> = crate::conformance::listed(&listing)
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        anyhow::ensure!(
            !scenarios.is_empty(),
            "the suite lists no server scenario for {revision}"
        );
        listed.extend(scenarios.iter().cloned());
        let all = scenarios.len();
        let chosen: Vec<String> = scenarios.into_iter().filter(|s| wants(s)).collect();
        if !chosen.is_empty() {
            plans.push((*revision, chosen, all));
        }
    }
    // Every entry must still name something the suite lists.
    let stale: Vec<&String> = exclusions
        .iter()
        .flat_map(|exclusion| &exclusion.scenarios)
        .filter(|pattern| {
            let name = pattern.split(':').next().unwrap_or_default();
            !listed.iter().any(|scenario| matches_name(name, scenario))
        })
        .collect();
    anyhow::ensure!(
        stale.is_empty(),
        "{}: {stale:?} name(s) no server scenario the suite lists: remove them",
        excluded_path().display()
    );
    let authorization = format!("Bearer {key}");
    let results: Vec<anyhow::Result<Vec<Row>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = plans
            .iter()
            .map(|(revision, chosen, all)| {
                let (gateway, origin, authorization, exclusions) =
                    (&gateway.url, &origin, &authorization, &exclusions);
                scope.spawn(move || {
                    run_revision(
                        peers,
                        Target {
                            url: gateway,
                            origin,
                            authorization,
                        },
                        revision,
                        chosen,
                        chosen.len() == *all,
                        exclusions,
                        dir,
                    )
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a revision's run panicked")))
            })
            .collect()
    });
    drop(gateway);
    drop(upstream);
    let mut rows = Vec::new();
    for result in results {
        rows.extend(result?);
    }
    let mut excluded = Vec::new();
    for row in &rows {
        if let Some(exclusion) = exclusions.iter().find(|e| e.matches(&row.scenario)) {
            excluded.push(Expected::excluded(
                &row.scenario,
                &row.revision,
                &exclusion.reason,
            ));
        }
    }
    let reasons = exclusions
        .into_iter()
        .map(|exclusion| (exclusion.scenarios, exclusion.reason))
        .collect();
    Ok(Outcome {
        rows,
        excluded,
        reasons,
        seconds: 0.0,
    })
}

/// The gateway, and what the suite's requests to it carry.
struct Target<'a> {
    url: &'a str,
    origin: &'a str,
    authorization: &'a str,
}

/// One revision's run of the suite: every scenario of `chosen` (`whole`: that is all it
/// lists, so one `--suite all` run; else one run per scenario), then a row per scenario.
fn run_revision(
    peers: &Peers,
    target: Target<'_>,
    revision: &str,
    chosen: &[String],
    whole: bool,
    exclusions: &[Exclusion],
    dir: &Path,
) -> anyhow::Result<Vec<Row>> {
    let out = dir.join(revision);
    std::fs::create_dir_all(&out)?;
    // The suite's baseline: the excluded scenarios and checks of this run.
    let mut baseline_entries = Vec::new();
    for scenario in chosen {
        if exclusions.iter().any(|e| e.matches(scenario)) {
            baseline_entries.push(scenario.clone());
        }
        for exclusion in exclusions {
            baseline_entries.extend(
                exclusion
                    .checks(scenario)
                    .map(|check| format!("{scenario}:{check}")),
            );
        }
    }
    let baseline = out.join("expected-failures.yml");
    let mut yaml = String::from(
        "# Written by cargo xtask conformance from tests/conformance/gateway-excluded.json.\nserver:",
    );
    if baseline_entries.is_empty() {
        yaml.push_str(" []\n");
    } else {
        yaml.push('\n');
        for entry in &baseline_entries {
            yaml.push_str(&format!("  - \"{entry}\"\n"));
        }
    }
    std::fs::write(&baseline, yaml)?;
    let suite = |extra: &[&str]| {
        let mut command = Command::new(&peers.node);
        command
            .arg("--import")
            .arg(peers.scripts.join("conformance-auth.mjs"))
            .arg(&peers.conformance)
            .args(["server", "--url", target.url, "--spec-version", revision])
            .args(extra)
            .arg("-o")
            .arg(&out)
            .arg("--expected-failures")
            .arg(&baseline)
            .args(["--timeout", &SCENARIO_TIMEOUT_MS.to_string()])
            .env("BRAIN_CONFORMANCE_AUTHORIZATION", target.authorization)
            .env("BRAIN_CONFORMANCE_AUTH_ORIGIN", target.origin);
        command
    };
    let runs: Vec<(Command, String)> = if whole {
        vec![(suite(&["--suite", "all"]), "all".to_owned())]
    } else {
        chosen
            .iter()
            .map(|scenario| (suite(&["--scenario", scenario]), scenario.clone()))
            .collect()
    };
    let mut problems = Vec::new();
    for (i, (command, what)) in runs.into_iter().enumerate() {
        let finished = crate::conformance::run_bounded(command, RUN_DEADLINE)?;
        let _ = std::fs::write(
            out.join(format!("runner-{i}-{what}.txt")),
            format!("{}\n--- stderr\n{}", finished.stdout, finished.stderr),
        );
        if finished.timed_out {
            problems.push(format!(
                "the suite ({what}) hung past {} s",
                RUN_DEADLINE.as_secs()
            ));
        } else if finished.code != Some(0) {
            problems.push(format!(
                "the suite ({what}) exited with {:?}: a failure outside the baseline, or a baseline entry that passes",
                finished.code
            ));
        }
    }
    let found = run_dirs(&out);
    let mut rows: Vec<Row> = chosen
        .iter()
        .map(|scenario| judge(scenario, revision, found.get(scenario.as_str()), exclusions))
        .collect();
    // The suite's own verdict must agree with ours: when every row is as it should be
    // and the suite still failed, say so.
    let as_expected = |row: &Row| row.passed != exclusions.iter().any(|e| e.matches(&row.scenario));
    if !problems.is_empty() && rows.iter().all(as_expected) {
        rows.push(Row {
            suite: "server",
            scenario: "(the suite's exit)".to_owned(),
            revision: revision.to_owned(),
            transport: "http",
            passed: false,
            note: problems.join("; "),
            seconds: 0.0,
        });
    }
    Ok(rows)
}

/// The row of one scenario: passed when at least one check succeeded and none failed or
/// warned (but those its exclusions name, which must fail); an excluded scenario
/// "passes" (a stale entry) unless a check failed or warned.
fn judge(
    scenario: &str,
    revision: &str,
    found: Option<&(PathBuf, f64)>,
    exclusions: &[Exclusion],
) -> Row {
    let mut row = Row {
        suite: "server",
        scenario: scenario.to_owned(),
        revision: revision.to_owned(),
        transport: "http",
        passed: false,
        note: String::new(),
        seconds: 0.0,
    };
    let Some((path, seconds)) = found else {
        row.note = "no result folder: the scenario did not run".to_owned();
        return row;
    };
    row.seconds = *seconds;
    let checks = match read_checks(path) {
        Ok(checks) => checks,
        Err(error) => {
            row.note = format!("{error:#}");
            return row;
        }
    };
    let tally = Tally::of(&checks);
    if exclusions.iter().any(|e| e.matches(scenario)) {
        row.passed = tally.bad.is_empty();
        row.note = match tally.bad.first() {
            Some((_, first)) => format!(
                "fails as it must ({} of {} checks); {first}",
                tally.bad.len(),
                tally.bad.len() + tally.successes
            ),
            None => format!(
                "{} checks passed: a stale entry, remove it from {}",
                tally.successes,
                excluded_path().display()
            ),
        };
        return row;
    }
    let excluded: Vec<&str> = exclusions.iter().flat_map(|e| e.checks(scenario)).collect();
    let mut problems = Vec::new();
    let mut skipped = 0;
    for (id, message) in &tally.bad {
        if excluded.contains(&id.as_str()) {
            skipped += 1;
        } else {
            problems.push(message.clone());
        }
    }
    for check in &excluded {
        if !tally.bad.iter().any(|(id, _)| id == check) {
            problems.push(format!(
                "excluded check {check} did not fail: a stale entry, remove it from {}",
                excluded_path().display()
            ));
        }
    }
    if tally.successes == 0 {
        problems.push("no check succeeded".to_owned());
    }
    row.passed = problems.is_empty();
    let mut note = format!(
        "{}/{} checks",
        tally.successes,
        tally.successes + tally.bad.len()
    );
    if skipped > 0 {
        note.push_str(&format!(" ({skipped} excluded)"));
    }
    for problem in problems {
        note.push_str("; ");
        note.push_str(&problem);
    }
    row.note = note;
    row
}

/// What a scenario's checks say: how many succeeded, and each FAILURE or WARNING as
/// (check id, `STATUS id: message`). INFO and SKIPPED count for nothing.
#[derive(Debug, Default)]
struct Tally {
    successes: usize,
    bad: Vec<(String, String)>,
}

impl Tally {
    fn of(checks: &[Value]) -> Self {
        let mut tally = Tally::default();
        for check in checks {
            let field = |name: &str| check.get(name).and_then(Value::as_str).unwrap_or_default();
            match field("status") {
                "SUCCESS" => tally.successes += 1,
                status @ ("FAILURE" | "WARNING") => {
                    let text = check
                        .get("errorMessage")
                        .and_then(Value::as_str)
                        .unwrap_or_else(|| field("description"));
                    let mut text: String = text.chars().take(240).collect();
                    if text.len() >= 240 {
                        text.push('…');
                    }
                    tally.bad.push((
                        field("id").to_owned(),
                        format!("{status} {}: {text}", field("id")),
                    ));
                }
                _ => {}
            }
        }
        tally
    }
}

fn read_checks(dir: &Path) -> anyhow::Result<Vec<Value>> {
    let path = dir.join("checks.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("no checks.json in {}", dir.display()))?;
    let checks: Value = serde_json::from_str(&text).context("checks.json is not JSON")?;
    checks
        .as_array()
        .cloned()
        .context("checks.json is not an array")
}

/// The length of the time in a result folder's name (`2026-12-02T10-11-12-123Z`).
const TIME_LEN: usize = 24;

/// The result folders of a run (`server-<scenario>-<ISO time>`), by scenario, each with
/// how long its scenario took (until the next one started, or its last check).
fn run_dirs(out: &Path) -> BTreeMap<String, (PathBuf, f64)> {
    let mut found: Vec<(String, String, PathBuf)> = std::fs::read_dir(out)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .filter_map(|path| {
            let name = path.file_name()?.to_string_lossy().into_owned();
            let rest = name.strip_prefix("server-")?;
            // `<scenario>-<time>`, the time as `2026-12-02T10-11-12-123Z`.
            let cut = rest.len().checked_sub(TIME_LEN + 1)?;
            let time = &rest[cut + 1..];
            let shaped = rest.as_bytes().get(cut) == Some(&b'-')
                && time.as_bytes().get(10) == Some(&b'T')
                && time.ends_with('Z');
            if !shaped {
                return None;
            }
            Some((rest[cut + 1..].to_owned(), rest[..cut].to_owned(), path))
        })
        .collect();
    found.sort();
    let mut map = BTreeMap::new();
    for (i, (time, scenario, path)) in found.iter().enumerate() {
        let start = parse_time(time);
        let end = found
            .get(i + 1)
            .and_then(|(next, _, _)| parse_time(next))
            .or_else(|| last_check_time(path));
        let seconds = match (start, end) {
            (Some(start), Some(end)) if end >= start => end - start,
            _ => 0.0,
        };
        map.insert(scenario.clone(), (path.clone(), seconds));
    }
    map
}

/// Seconds since midnight of an ISO-like time (`2026-12-02T10-11-12-123Z` or with `:`
/// and `.`); enough to subtract the times of one run.
fn parse_time(text: &str) -> Option<f64> {
    let (_, clock) = text.split_once('T')?;
    let digits: Vec<f64> = clock
        .trim_end_matches('Z')
        .split([':', '-', '.'])
        .map(|part| part.parse::<f64>().ok())
        .collect::<Option<_>>()?;
    match digits.as_slice() {
        [h, m, s, ms] => Some(h * 3600.0 + m * 60.0 + s + ms / 1000.0),
        [h, m, s] => Some(h * 3600.0 + m * 60.0 + s),
        _ => None,
    }
}

/// The time of a scenario's last check.
fn last_check_time(dir: &Path) -> Option<f64> {
    read_checks(dir)
        .ok()?
        .iter()
        .filter_map(|check| check.get("timestamp").and_then(Value::as_str))
        .filter_map(parse_time)
        .reduce(f64::max)
}

/// The gateway's table: each scenario, passed or excluded in each revision; then why
/// each group is excluded, and the wall time.
pub(crate) fn print_summary(outcome: &Outcome) {
    let mut by_scenario: BTreeMap<&str, BTreeMap<&str, &Row>> = BTreeMap::new();
    for row in &outcome.rows {
        by_scenario
            .entry(row.scenario.as_str())
            .or_default()
            .insert(row.revision.as_str(), row);
    }
    let excluded = |row: &Row| outcome.excluded.iter().any(|entry| entry.matches(row));
    let width = by_scenario
        .keys()
        .map(|s| s.len())
        .max()
        .unwrap_or(8)
        .max(8);
    println!();
    println!("The gateway (mcp-tools serve) against the official server scenarios:");
    println!();
    println!(
        "| {:<width$} | {:<10} | {:<10} |",
        "scenario", REVISIONS[0], REVISIONS[1]
    );
    println!(
        "|{}|{}|{}|",
        "-".repeat(width + 2),
        "-".repeat(12),
        "-".repeat(12)
    );
    let mut passed = [0usize; 2];
    let mut out = [0usize; 2];
    for (scenario, revisions) in &by_scenario {
        let cells = [0, 1].map(|i| match revisions.get(REVISIONS[i]) {
            None => "-",
            Some(row) if excluded(row) && !row.passed => {
                out[i] += 1;
                "excluded"
            }
            Some(row) if excluded(row) => "STALE",
            Some(row) if row.passed => {
                passed[i] += 1;
                "pass"
            }
            Some(_) => "FAIL",
        });
        println!(
            "| {scenario:<width$} | {:<10} | {:<10} |",
            cells[0], cells[1]
        );
    }
    println!();
    for (i, revision) in REVISIONS.iter().enumerate() {
        println!("{revision}: {} passed, {} excluded", passed[i], out[i]);
    }
    if !outcome.reasons.is_empty() {
        println!("Excluded ({}):", excluded_path().display());
        for (scenarios, reason) in &outcome.reasons {
            println!("- {}: {reason}", scenarios.join(", "));
        }
    }
    println!("server scenarios: {:.0} s", outcome.seconds);
}
