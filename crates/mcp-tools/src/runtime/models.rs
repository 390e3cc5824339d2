//! `--models`: the providers' rules (the `brain-tools-providers` library) run over the
//! bindings, and the report formatted for a person: the rules that hit every binding once
//! at the top, each other rule once per binding with its count and a few paths (a finding
//! identical on several bindings once, naming them), a verdict per binding and provider
//! with the reason of each rejection, every line fitted to the width it is read at.
//! `check --format json` prints the library's report whole.

use std::fmt::Write as _;

use brain_tools_config::ToolBinding;
use brain_tools_providers::{
    Effect, Evidence, Finding, Place, Provider, Report as Checked, Verdict,
};

use crate::{
    cli::Model,
    runtime::output::{bindings_named, fit::fit, json},
};

/// How many paths of one rule a line names before it says how many more there are.
const PATHS_SHOWN: usize = 3;

/// The verdict table shortens binding names to fit the width, never below this.
const LABEL_MIN: usize = 16;

impl Model {
    /// The library's provider.
    pub(crate) fn provider(self) -> Provider {
        match self {
            Model::Openai => Provider::OpenAi,
            Model::Anthropic => Provider::Anthropic,
            Model::Gemini => Provider::Gemini,
        }
    }
}

/// The findings of a `--models` check, and how to show them.
#[derive(Debug)]
pub(crate) struct Report {
    checked: Checked,
    /// How many bindings were reported on.
    bindings: usize,
}

/// Checks `bindings` against the rules of `models`, reporting those whose index
/// `reported` accepts (all of them count for the per-request rules).
pub(crate) fn check(
    bindings: &[ToolBinding],
    models: &[Model],
    reported: impl Fn(usize) -> bool,
) -> Report {
    let providers: Vec<Provider> = models.iter().map(|model| model.provider()).collect();
    let count = (0..bindings.len()).filter(|&i| reported(i)).count();
    Report {
        checked: brain_tools_providers::check_some(bindings, &providers, reported),
        bindings: count,
    }
}

/// One rule's findings on one binding (or one request), in the order they were found.
#[derive(Debug)]
struct Group<'a> {
    place: &'a Place,
    findings: Vec<&'a Finding>,
}

impl Report {
    /// No finding.
    pub(crate) fn is_empty(&self) -> bool {
        self.checked.is_empty()
    }

    /// `3 findings for the providers' rules`.
    pub(crate) fn count(&self) -> String {
        let n = self.checked.findings.len();
        format!(
            "{n} finding{} for the providers' rules",
            if n == 1 { "" } else { "s" }
        )
    }

    /// The library's report as JSON: every finding, the verdicts.
    pub(crate) fn to_json(&self) -> String {
        json::to_string_pretty(&self.checked).unwrap_or_default() + "\n"
    }

    fn models(&self) -> String {
        self.checked
            .providers
            .iter()
            .map(|provider| provider.id())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The findings grouped by place and rule, in the order found.
    fn groups(&self) -> Vec<Group<'_>> {
        let mut groups: Vec<Group<'_>> = Vec::new();
        for finding in &self.checked.findings {
            match groups
                .iter_mut()
                .find(|g| *g.place == finding.place && g.findings[0].rule == finding.rule)
            {
                Some(group) => group.findings.push(finding),
                None => groups.push(Group {
                    place: &finding.place,
                    findings: vec![finding],
                }),
            }
        }
        groups
    }

    /// The rules that fire on every reported binding (when there are two or more).
    fn everywhere<'a>(&self, groups: &[Group<'a>]) -> Vec<&'a str> {
        if self.bindings < 2 {
            return Vec::new();
        }
        let mut rules: Vec<&str> = Vec::new();
        for group in groups {
            let rule = group.findings[0].rule.as_str();
            if rules.contains(&rule) {
                continue;
            }
            let hit = groups
                .iter()
                .filter(|g| matches!(g.place, Place::Binding { .. }) && g.findings[0].rule == rule)
                .count();
            if hit == self.bindings {
                rules.push(rule);
            }
        }
        rules
    }

    /// The report, its lines fitted to `width` columns: rules that hit every binding,
    /// then the other findings (each rule's message once; a finding identical on several
    /// bindings once, naming them), the requests', a verdict per binding and provider
    /// (with the reason of each rejection), where each rule comes from, and a summary.
    pub(crate) fn render(&self, width: usize) -> String {
        let mut out = String::new();
        if self.checked.findings.is_empty() {
            let _ = writeln!(
                out,
                "models ({}): no findings; every binding accepted",
                self.models()
            );
            return fit(&out, width);
        }
        let groups = self.groups();
        let everywhere = self.everywhere(&groups);
        if !everywhere.is_empty() {
            let _ = writeln!(out, "every binding ({}):", self.bindings);
            for rule in &everywhere {
                let all: Vec<&Group<'_>> = groups
                    .iter()
                    .filter(|g| g.findings[0].rule == *rule)
                    .collect();
                let first = all[0].findings[0];
                let findings: Vec<&Finding> = all
                    .iter()
                    .flat_map(|g| g.findings.iter().copied())
                    .collect();
                let paths: Vec<&str> = all
                    .iter()
                    .flat_map(|g| g.findings.iter().filter_map(|f| f.path.as_deref()))
                    .collect();
                let mut distinct: Vec<&str> = Vec::new();
                for path in &paths {
                    if !distinct.contains(path) {
                        distinct.push(path);
                    }
                }
                let _ = writeln!(
                    out,
                    "  {}: {} place{} ({}) — {}",
                    heading(&findings),
                    paths.len(),
                    plural(paths.len()),
                    listed(&distinct, "path"),
                    first.message
                );
            }
        }
        // A rule's message is shown once; later lines of the same rule name it only.
        let mut explained: Vec<&str> = everywhere.clone();
        let mut current: Option<&[&Place]> = None;
        let clusters = clusters(
            groups
                .iter()
                .filter(|g| {
                    !(matches!(g.place, Place::Binding { .. })
                        && everywhere.contains(&g.findings[0].rule.as_str()))
                })
                .collect(),
        );
        for cluster in &clusters {
            if current != Some(cluster.places.as_slice()) {
                let _ = writeln!(out, "{}:", places(&cluster.places));
                current = Some(&cluster.places);
            }
            let group = cluster.group;
            let first = group.findings[0];
            let paths: Vec<&str> = group
                .findings
                .iter()
                .filter_map(|f| f.path.as_deref())
                .collect();
            let at = match paths.len() {
                0 => String::new(),
                1 => format!(" at {}", paths[0]),
                n => format!(" at {n} places ({})", listed(&paths, "place")),
            };
            let message = if explained.contains(&first.rule.as_str()) {
                "as above"
            } else {
                explained.push(&first.rule);
                &first.message
            };
            let _ = writeln!(out, "  {}{at}: {message}", heading(&group.findings));
        }
        let mut out = fit(&out, width);
        self.render_verdicts(&mut out, width);
        let mut rest = String::new();
        let _ = writeln!(rest, "where each rule comes from:");
        let mut fired: Vec<&Finding> = Vec::new();
        for finding in &self.checked.findings {
            if !fired.iter().any(|f| f.rule == finding.rule) {
                fired.push(finding);
            }
        }
        for finding in fired {
            let _ = write!(rest, "  {}: {}", finding.rule, finding.source);
            if let Some(fix) = self
                .checked
                .findings
                .iter()
                .filter(|f| f.rule == finding.rule)
                .find_map(|f| f.sdk_fix.as_ref())
            {
                let _ = write!(
                    rest,
                    "; SDK fix: {}, {} ({})",
                    fix.sdk, fix.does, fix.source
                );
            }
            rest.push('\n');
        }
        let _ = writeln!(rest, "{}", self.summary());
        out.push_str(&fit(&rest, width));
        out
    }

    /// Why `provider` rejects the binding at `index`, if it does: the rules that refuse
    /// it and no SDK fixes (in ordinary calls, else in strict mode; a verdict of
    /// "rejected" already says no SDK fixes it), each with its first path.
    fn rejection(&self, index: usize, provider: Provider) -> Option<String> {
        let verdict = self.checked.verdict(index, provider)?;
        let (mode, effects): (&str, &[Effect]) = if verdict.default == Verdict::Rejected {
            ("", &[Effect::Rejected])
        } else if verdict.strict == Verdict::Rejected {
            (" in strict mode", &[Effect::Rejected, Effect::StrictMode])
        } else {
            return None;
        };
        let mut seen: Vec<&str> = Vec::new();
        let mut rules: Vec<String> = Vec::new();
        for finding in self.checked.findings.iter().filter(|f| {
            f.provider == provider
                && f.sdk_fix.is_none()
                && effects.contains(&f.effect)
                && matches!(&f.place, Place::Binding { index: i, .. } if *i == index)
        }) {
            let rule = match &finding.path {
                Some(path) => format!("{} at {path}", finding.rule),
                None => finding.rule.clone(),
            };
            if !seen.contains(&finding.rule.as_str()) {
                seen.push(&finding.rule);
                rules.push(rule);
            }
        }
        Some(format!(
            "{}{mode}: {}",
            provider.id(),
            if rules.is_empty() {
                "see its findings".to_owned()
            } else {
                rules.join(", ")
            }
        ))
    }

    /// A table: one row per binding, a column per provider, `ordinary / strict`, no
    /// wider than `width` (long binding names are shortened, never the verdicts; the rows
    /// above and the JSON report name them whole) unless the verdicts alone are wider, and
    /// never broken; each rejected binding's reason on the line below its row.
    fn render_verdicts(&self, out: &mut String, width: usize) {
        let verdicts = &self.checked.verdicts;
        if verdicts.is_empty() {
            return;
        }
        let providers = &self.checked.providers;
        let mut rows: Vec<(usize, String, Vec<String>)> = Vec::new();
        for verdict in verdicts {
            let label = format!("tools[{}] ({})", verdict.index, verdict.name);
            let cell = format!("{} / {}", word(verdict.default), word(verdict.strict));
            match rows.last_mut() {
                Some((_, last, cells)) if *last == label => cells.push(cell),
                _ => rows.push((verdict.index, label, vec![cell])),
            }
        }
        let widths: Vec<usize> = (0..providers.len())
            .map(|i| {
                rows.iter()
                    .filter_map(|(_, _, cells)| cells.get(i).map(String::len))
                    .chain([providers[i].id().len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let cells: usize = widths.iter().map(|w| w + 2).sum();
        let longest = rows
            .iter()
            .map(|(_, label, _)| label.chars().count())
            .max()
            .unwrap_or(0);
        let first = longest.min(width.saturating_sub(2 + cells).max(LABEL_MIN));
        for (_, label, _) in &mut rows {
            if label.chars().count() > first {
                *label = label.chars().take(first - 1).collect::<String>() + "…";
            }
        }
        out.push_str(&fit(
            "verdicts (ordinary function calling / strict mode): ok; sdk: accepted once the provider's own SDK has transformed the schema; rejected, and why below:\n",
            width,
        ));
        let mut header = format!("  {:first$}", "");
        for (provider, width) in providers.iter().zip(&widths) {
            let _ = write!(header, "  {:width$}", provider.id());
        }
        let _ = writeln!(out, "{}", header.trim_end());
        for (index, label, cells) in &rows {
            let pad = first - label.chars().count();
            let mut line = format!("  {label}{:pad$}", "");
            for (cell, width) in cells.iter().zip(&widths) {
                let _ = write!(line, "  {cell:width$}");
            }
            let _ = writeln!(out, "{}", line.trim_end());
            // Each rejected binding says why, on a line of its own.
            let reasons: Vec<String> = providers
                .iter()
                .filter_map(|provider| self.rejection(*index, *provider))
                .collect();
            if !reasons.is_empty() {
                let reason = format!("    rejected by {}\n", reasons.join("; "));
                out.push_str(&fit(&reason, width));
            }
        }
    }

    /// `models (openai, gemini): 14 bindings, 38 findings for the providers' rules;
    /// rejected by openai 0, gemini 2; in strict mode by openai 3`.
    fn summary(&self) -> String {
        let providers = &self.checked.providers;
        let rejected = |strict: bool| {
            providers
                .iter()
                .map(|provider| {
                    let n = self
                        .checked
                        .verdicts
                        .iter()
                        .filter(|v| v.provider == *provider)
                        .filter(|v| if strict { v.strict } else { v.default } == Verdict::Rejected)
                        .count();
                    format!("{} {n}", provider.id())
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "models ({}): {} binding{}, {}; rejected by {}; in strict mode by {}",
            self.models(),
            self.bindings,
            plural(self.bindings),
            self.count(),
            rejected(false),
            rejected(true),
        )
    }
}

/// `gemini, rejected, SDK fixes it [gemini.schema-field-allowlist]`, of one rule's
/// findings (`SDK fixes 3 of 5` when its fix covers only some of them).
fn heading(findings: &[&Finding]) -> String {
    let finding = findings[0];
    let effect = match finding.effect {
        Effect::Rejected => "rejected",
        Effect::StrictMode => "strict mode",
        _ => "warning",
    };
    let evidence = match finding.evidence {
        Evidence::ReportedByUsers => ", reported by users",
        _ => "",
    };
    let fixed = findings.iter().filter(|f| f.sdk_fix.is_some()).count();
    let fix = match fixed {
        0 => String::new(),
        n if n == findings.len() => ", SDK fixes it".to_owned(),
        n => format!(", SDK fixes {n} of {}", findings.len()),
    };
    format!(
        "{}, {effect}{evidence}{fix} [{}]",
        finding.provider.id(),
        finding.rule
    )
}

fn place(place: &Place) -> String {
    match place {
        Place::Binding { index, name } => format!("tools[{index}] ({name})"),
        Place::Request { tenants, bindings } => format!(
            "tenant{} {} ({bindings} binding{})",
            plural(tenants.len()),
            tenants.join(", "),
            plural(*bindings)
        ),
        _ => "other".to_owned(),
    }
}

/// One finding (a rule's findings on one place) and every binding it is identical on.
#[derive(Debug)]
struct Cluster<'a> {
    places: Vec<&'a Place>,
    group: &'a Group<'a>,
}

/// The groups, those identical on several bindings (the same rule, paths and messages)
/// made one, in the order of their first binding. A request's groups stay alone.
fn clusters<'a>(groups: Vec<&'a Group<'a>>) -> Vec<Cluster<'a>> {
    let same = |a: &Group<'_>, b: &Group<'_>| {
        a.findings.len() == b.findings.len()
            && a.findings
                .iter()
                .zip(&b.findings)
                .all(|(x, y)| x.rule == y.rule && x.path == y.path && x.message == y.message)
    };
    let mut clusters: Vec<Cluster<'a>> = Vec::new();
    for group in groups {
        let binding = matches!(group.place, Place::Binding { .. });
        match clusters.iter_mut().find(|cluster| {
            binding
                && matches!(cluster.places[0], Place::Binding { .. })
                && same(cluster.group, group)
        }) {
            Some(cluster) => cluster.places.push(group.place),
            None => clusters.push(Cluster {
                places: vec![group.place],
                group,
            }),
        }
    }
    clusters
}

/// `tools[1] (a)`, `tools[1] (a), tools[4] (b)`, or for a long list
/// `tools[13] (gen_0000) ... tools[131] (gen_0118) (119 bindings)` (the JSON report
/// names every one).
fn places(places: &[&Place]) -> String {
    let named: Vec<String> = places.iter().map(|p| place(p)).collect();
    bindings_named(&named)
}

/// A verdict in a cell of the table (the header says what each word means).
fn word(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Accepted => "ok",
        Verdict::AcceptedAfterSdk => "sdk",
        _ => "rejected",
    }
}

/// The first few items, then `and N more PATHs`.
fn listed(items: &[&str], what: &str) -> String {
    let mut text = items
        .iter()
        .take(PATHS_SHOWN)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    let more = items.len().saturating_sub(PATHS_SHOWN);
    if more > 0 {
        let _ = write!(text, " and {more} more {what}{}", plural(more));
    }
    text
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

#[cfg(test)]
mod tests {
    use brain_tools_config::HostConfig;
    use serde_json::json;

    use super::*;
    use crate::runtime::output::fit::DEFAULT_COLUMNS;

    fn bindings(tools: serde_json::Value) -> Vec<ToolBinding> {
        HostConfig::from_json_value_with_env(&json!({ "tools": tools }), |_| true)
            .unwrap()
            .config
            .tools
    }

    fn binding(name: &str, schema: serde_json::Value) -> serde_json::Value {
        json!({"name": name, "input_schema": schema, "url": "https://h/mcp", "mcp_tool": name, "tenants": ["local"]})
    }

    #[test]
    fn the_report_groups_rules_per_binding_and_ends_with_verdicts() {
        let tools = bindings(json!([
            binding(
                "render3d",
                json!({
                    "type": "object",
                    "anyOf": [{"required": ["a"]}],
                    "properties": {"a": {"type": "string", "format": "uri-reference"}, "filter[id]": {"type": "string"}},
                    "required": ["a", "filter[id]"],
                    "additionalProperties": false
                })
            ),
            binding(
                "ok",
                json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
            ),
        ]));
        let report = check(
            &tools,
            &[
                Model::Openai,
                Model::Anthropic,
                Model::Gemini,
                Model::Openai,
            ],
            |_| true,
        );
        insta::assert_snapshot!(report.render(DEFAULT_COLUMNS));
        let clean = check(&tools[1..], &[Model::Openai, Model::Anthropic], |_| true);
        assert!(clean.is_empty());
        assert_eq!(
            clean.render(DEFAULT_COLUMNS),
            "models (openai, anthropic): no findings; every binding accepted\n"
        );
    }

    #[test]
    fn a_rule_on_every_binding_is_one_line_at_the_top() {
        let schema = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"p": {"type": "string"}}});
        let tools = bindings(json!([
            binding("a", schema.clone()),
            binding("b", schema.clone()),
            binding("c", schema)
        ]));
        let text = check(&tools, &[Model::Gemini], |_| true).render(DEFAULT_COLUMNS);
        insta::assert_snapshot!(text);
        assert_eq!(text.matches("gemini.schema-field-allowlist]").count(), 1);
    }

    /// At any width from 40 columns up, the table's rows stay one line each: long binding
    /// names are shortened, the verdicts never.
    #[test]
    fn the_verdict_table_fits_the_width() {
        let schema = json!({"type": "object", "properties": {}});
        let tools = bindings(json!([
            binding(
                "a_binding_with_a_rather_long_name_for_a_tool",
                schema.clone()
            ),
            binding("b", schema)
        ]));
        let report = check(
            &tools,
            &[Model::Openai, Model::Anthropic, Model::Gemini],
            |_| true,
        );
        for width in [40, 60, 80, 100, 200] {
            let text = report.render(width);
            let rows: Vec<&str> = text
                .lines()
                .filter(|line| line.starts_with("  tools["))
                .collect();
            assert_eq!(rows.len(), 2, "{text}");
            for row in &rows {
                // The verdicts alone (three columns of `ok / rejected`) need 47.
                assert!(
                    row.chars().count() <= width.max(2 + 16 + 3 * 15),
                    "{width}: {row}"
                );
                assert_eq!(row.matches(" / ").count(), 3, "{width}: {row}");
            }
        }
        let wide = report.render(200);
        assert!(wide.contains("  tools[0] (a_binding_with_a_rather_long_name_for_a_tool)  "));
        let narrow = report.render(60);
        assert!(
            narrow.contains("  tools[0] (a_binding_wi…  ok / rejected"),
            "{narrow}"
        );
    }

    #[test]
    fn the_json_report_is_complete() {
        let tools = bindings(json!([binding(
            "a",
            json!({"type": "object", "minProperties": 1})
        )]));
        let report = check(&tools, &[Model::Gemini, Model::Anthropic], |_| true);
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["providers"], json!(["gemini", "anthropic"]));
        assert_eq!(
            json["findings"].as_array().unwrap().len(),
            report.checked.findings.len()
        );
        assert_eq!(json["verdicts"].as_array().unwrap().len(), 2);
    }
}
