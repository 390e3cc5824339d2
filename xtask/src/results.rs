//! The rows of a conformance run, our expected-failures list, the table and its JSON.

use std::{collections::BTreeMap, path::Path};

use anyhow::Context as _;
use serde_json::{Value, json};

/// One scenario or peer run.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    /// `official`, `ours` or `interop`.
    pub(crate) suite: &'static str,
    /// The scenario, or the peer.
    pub(crate) scenario: String,
    /// The protocol revision.
    pub(crate) revision: String,
    /// `http` or `stdio`.
    pub(crate) transport: &'static str,
    /// Whether it passed.
    pub(crate) passed: bool,
    /// What happened, briefly.
    pub(crate) note: String,
    /// Wall time.
    pub(crate) seconds: f64,
}

/// A failure we know about, with why.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    scenario: String,
    revision: String,
    transport: Option<String>,
    reason: String,
    /// Not a failure we mean to fix: something the product does not do on purpose (a
    /// server scenario a tools-only gateway cannot serve).
    excluded: bool,
}

impl Expected {
    /// A scenario the product does not serve on purpose, with why: it must fail.
    pub(crate) fn excluded(scenario: &str, revision: &str, reason: &str) -> Self {
        Self {
            scenario: scenario.to_owned(),
            revision: revision.to_owned(),
            transport: None,
            reason: reason.to_owned(),
            excluded: true,
        }
    }

    pub(crate) fn matches(&self, row: &Row) -> bool {
        self.scenario == row.scenario
            && self.revision == row.revision
            && self
                .transport
                .as_deref()
                .is_none_or(|transport| transport == row.transport)
    }
}

/// Reads `tests/conformance/expected-failures.json`:
/// `{"expected_failures": [{"scenario", "revision", "transport"?, "reason"}]}`.
pub(crate) fn load_expected(path: &Path) -> anyhow::Result<Vec<Expected>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let document: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", path.display()))?;
    let entries = document
        .get("expected_failures")
        .and_then(Value::as_array)
        .with_context(|| format!("{}: needs an \"expected_failures\" array", path.display()))?;
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            let field = |name: &str| entry.get(name).and_then(Value::as_str).map(str::to_owned);
            let required = |name: &str| {
                field(name)
                    .filter(|value| !value.trim().is_empty())
                    .with_context(|| {
                        format!(
                            "{}: expected_failures[{i}] needs a non-empty \"{name}\"",
                            path.display()
                        )
                    })
            };
            Ok(Expected {
                scenario: required("scenario")?,
                revision: required("revision")?,
                transport: field("transport"),
                reason: required("reason")?,
                excluded: false,
            })
        })
        .collect()
}

/// The verdict of one row against the expected failures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Pass,
    Fail,
    ExpectedFail,
    /// Failed, and excluded on purpose (see [`Expected::excluded`]).
    Excluded,
    /// Listed as expected to fail, but passed: the list must shrink.
    Stale,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::ExpectedFail => "expected-fail",
            Verdict::Excluded => "excluded",
            Verdict::Stale => "FAIL (stale expected failure: remove it)",
        }
    }

    fn is_bad(self) -> bool {
        matches!(self, Verdict::Fail | Verdict::Stale)
    }
}

/// Judges every row, prints the table and the counts, writes the JSON; returns the number
/// of rows that fail the run.
pub(crate) fn report(
    rows: &[Row],
    expected: &[Expected],
    json_path: &Path,
) -> anyhow::Result<usize> {
    let judged: Vec<(Row, Verdict, Option<&Expected>)> = rows
        .iter()
        .map(|row| {
            let listed = expected.iter().find(|entry| entry.matches(row));
            let verdict = match (row.passed, listed) {
                (true, None) => Verdict::Pass,
                (true, Some(_)) => Verdict::Stale,
                (false, None) => Verdict::Fail,
                (false, Some(entry)) if entry.excluded => Verdict::Excluded,
                (false, Some(_)) => Verdict::ExpectedFail,
            };
            (row.clone(), verdict, listed)
        })
        .collect();
    let headers = [
        "suite",
        "scenario / peer",
        "revision",
        "transport",
        "result",
        "time",
        "note",
    ];
    let cells: Vec<[String; 7]> = judged
        .iter()
        .map(|(row, verdict, listed)| {
            let mut note = row.note.clone();
            match listed {
                // Its group's reason is printed once, below the table.
                Some(listed) if listed.excluded => {}
                Some(listed) => note = format!("{note} [expected: {}]", listed.reason),
                None => {}
            }
            [
                row.suite.to_owned(),
                row.scenario.clone(),
                row.revision.clone(),
                row.transport.to_owned(),
                verdict.label().to_owned(),
                format!("{:.1}s", row.seconds),
                note,
            ]
        })
        .collect();
    let mut widths = headers.map(str::len);
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row.iter()).take(6) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut text = String::from("|");
        for (i, cell) in cells.iter().enumerate() {
            if i < 6 {
                text.push_str(&format!(" {cell:<width$} |", width = widths[i]));
            } else {
                text.push_str(&format!(" {cell}"));
            }
        }
        text
    };
    println!();
    println!("{}", line(&headers.map(str::to_owned)));
    println!(
        "|{}",
        widths[..6]
            .iter()
            .map(|width| format!("{}|", "-".repeat(width + 2)))
            .collect::<String>()
    );
    for row in &cells {
        println!("{}", line(row));
    }
    println!();
    // Per revision: passes, over all suites and over the official suite alone; the rows
    // excluded on purpose are counted apart.
    let mut counts: BTreeMap<&str, [usize; 5]> = BTreeMap::new();
    for (row, verdict, _) in &judged {
        let entry = counts.entry(row.revision.as_str()).or_default();
        if *verdict == Verdict::Excluded {
            entry[4] += 1;
            continue;
        }
        entry[1] += 1;
        if *verdict == Verdict::Pass {
            entry[0] += 1;
        }
        if row.suite == "official" {
            entry[3] += 1;
            if *verdict == Verdict::Pass {
                entry[2] += 1;
            }
        }
    }
    for (revision, [pass, total, official_pass, official_total, excluded]) in &counts {
        let excluded = if *excluded > 0 {
            format!("; {excluded} excluded")
        } else {
            String::new()
        };
        println!(
            "{revision}: {pass}/{total} pass (official suite {official_pass}/{official_total}{excluded})"
        );
    }
    let bad = judged
        .iter()
        .filter(|(_, verdict, _)| verdict.is_bad())
        .count();
    let total: f64 = rows.iter().map(|row| row.seconds).sum();
    println!(
        "{} row(s), {bad} failing the run, {total:.0} s of runs",
        rows.len()
    );
    let document = json!({
        "rows": judged.iter().map(|(row, verdict, listed)| json!({
            "suite": row.suite,
            "scenario": row.scenario,
            "revision": row.revision,
            "transport": row.transport,
            "result": match verdict {
                Verdict::Pass => "pass",
                Verdict::Fail => "fail",
                Verdict::ExpectedFail => "expected-fail",
                Verdict::Excluded => "excluded",
                Verdict::Stale => "stale-expected-failure",
            },
            "note": row.note,
            "expected_reason": listed.map(|entry| entry.reason.clone()),
            "seconds": (row.seconds * 10.0).round() / 10.0,
        })).collect::<Vec<_>>(),
        "per_revision": counts.iter().map(|(revision, [pass, total, official_pass, official_total, excluded])| {
            (revision.to_string(), json!({
                "pass": pass, "total": total,
                "official_pass": official_pass, "official_total": official_total,
                "excluded": excluded,
            }))
        }).collect::<serde_json::Map<_, _>>(),
        "failing": bad,
    });
    if let Some(parent) = json_path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(json_path, serde_json::to_string_pretty(&document)? + "\n")
        .with_context(|| format!("cannot write {}", json_path.display()))?;
    println!("results: {}", json_path.display());
    Ok(bad)
}
