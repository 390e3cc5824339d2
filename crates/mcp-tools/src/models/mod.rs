//! `--models`: where a binding's name or `input_schema` breaks a model provider's rules for
//! tool definitions, or will be changed by the provider's strict mode.
//!
//! The rules are data (`rules.json`, each with the page it comes from) read by a small
//! generic evaluator (`eval.rs`). A rule is `confirmed` (the provider's documentation says
//! it) or `observed-only` (the provider's own API error, quoted in public reports, shown
//! as "reported by users"). To change a rule, edit the data and its two cases in
//! `cases.json` (one that triggers it, one that passes).

mod eval;

use std::fmt::Write as _;

use brain_tools_config::{JsonObject, ToolBinding};
use serde::Deserialize;

use crate::cli::Model;

use self::eval::{At, Compiled, Seg, Vars};

/// The shipped rules.
const RULES: &str = include_str!("rules.json");

#[derive(Debug, Deserialize)]
struct RuleFile {
    format_version: u32,
    providers: Vec<Provider>,
}

#[derive(Debug, Deserialize)]
struct Provider {
    id: String,
    rules: Vec<Rule>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Severity {
    /// The provider's API refuses the definition.
    Error,
    /// Refused or changed in strict mode, or a documented limit.
    Warning,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Default,
    Strict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
enum Status {
    #[serde(rename = "confirmed")]
    Confirmed,
    #[serde(rename = "observed-only")]
    ObservedOnly,
}

#[derive(Debug, Deserialize)]
struct Rule {
    id: String,
    severity: Severity,
    mode: Mode,
    status: Status,
    /// Gemini: which form of function declaration the rule is for.
    #[serde(default)]
    applies_to: Vec<String>,
    check: eval::Check,
    message: String,
    source: String,
}

/// The Gemini form `--models gemini` checks: `parameters` (the OpenAPI subset).
const GEMINI_VARIANT: &str = "parameters";

/// A rule ready to run.
#[derive(Debug)]
struct Ready {
    provider: String,
    rule: Rule,
    check: Compiled,
}

/// The rules of the shipped data, checks compiled.
#[derive(Debug)]
pub(crate) struct Rules {
    rules: Vec<Ready>,
}

impl Rules {
    /// Parses and compiles the shipped rules.
    pub(crate) fn shipped() -> Result<Self, String> {
        Self::parse(RULES)
    }

    fn parse(text: &str) -> Result<Self, String> {
        let file: RuleFile = serde_json::from_str(text)
            .map_err(|error| format!("the model rules do not parse: {error}"))?;
        if file.format_version != 1 {
            return Err(format!(
                "the model rules are format {}, this version reads format 1",
                file.format_version
            ));
        }
        let mut rules = Vec::new();
        for provider in file.providers {
            for rule in provider.rules {
                let check = Compiled::new(rule.check.clone())
                    .map_err(|error| format!("model rule {}: {error}", rule.id))?;
                rules.push(Ready {
                    provider: provider.id.clone(),
                    rule,
                    check,
                });
            }
        }
        Ok(Self { rules })
    }

    fn for_models<'a>(&'a self, models: &'a [Model]) -> impl Iterator<Item = (usize, &'a Ready)> {
        self.rules.iter().enumerate().filter(move |(_, ready)| {
            models.iter().any(|model| model.id() == ready.provider)
                && (ready.rule.applies_to.is_empty()
                    || ready.rule.applies_to.iter().any(|v| v == GEMINI_VARIANT))
        })
    }
}

/// A binding as the rules see it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Subject<'a> {
    /// Its index in the `tools` array.
    pub(crate) index: usize,
    pub(crate) name: &'a str,
    pub(crate) input_schema: &'a JsonObject,
    pub(crate) tenants: &'a [String],
    /// Whether its own findings are reported (all of them count for set rules).
    pub(crate) reported: bool,
}

impl<'a> Subject<'a> {
    /// The binding at `index`.
    pub(crate) fn of(index: usize, binding: &'a ToolBinding) -> Self {
        Self {
            index,
            name: &binding.name,
            input_schema: &binding.input_schema,
            tenants: &binding.tenants,
            reported: true,
        }
    }

    /// The same, reported or not.
    pub(crate) fn reported(mut self, reported: bool) -> Self {
        self.reported = reported;
        self
    }
}

/// One place a rule fires.
#[derive(Debug, Clone)]
struct Finding {
    rule: usize,
    /// `Some((index, name))` for a binding's finding; `None` for a set's.
    binding: Option<(usize, String)>,
    /// For a set finding: the tenants that see the set, and its size.
    set: Option<(Vec<String>, usize)>,
    at: Option<At>,
    vars: Vars,
}

/// Every finding of a `--models` check, and how to show them.
#[derive(Debug)]
pub(crate) struct Report {
    rules: Rules,
    models: Vec<Model>,
    findings: Vec<Finding>,
}

/// Checks `subjects` against the rules of `models`.
pub(crate) fn check(subjects: &[Subject<'_>], models: &[Model]) -> Result<Report, String> {
    let rules = Rules::shipped()?;
    let mut models_seen = Vec::new();
    for model in models {
        if !models_seen.contains(model) {
            models_seen.push(*model);
        }
    }
    let findings = evaluate(&rules, subjects, &models_seen);
    Ok(Report {
        rules,
        models: models_seen,
        findings,
    })
}

fn evaluate(rules: &Rules, subjects: &[Subject<'_>], models: &[Model]) -> Vec<Finding> {
    let mut findings = Vec::new();
    let ordered: Vec<(usize, &Ready)> = models
        .iter()
        .flat_map(|model| {
            rules
                .for_models(std::slice::from_ref(model))
                .collect::<Vec<_>>()
        })
        .collect();
    for subject in subjects.iter().filter(|subject| subject.reported) {
        for (index, ready) in &ordered {
            if ready.check.is_set() {
                continue;
            }
            for hit in ready.check.hits(subject.name, subject.input_schema) {
                findings.push(Finding {
                    rule: *index,
                    binding: Some((subject.index, subject.name.to_owned())),
                    set: None,
                    at: Some(hit.at),
                    vars: hit.vars,
                });
            }
        }
    }
    // Set rules: once per group of tenants that see the same bindings (as if the host
    // sent every tool a tenant may use in one request).
    let mut groups: Vec<(Vec<String>, Vec<usize>)> = Vec::new();
    let mut tenants: Vec<&String> = subjects.iter().flat_map(|s| s.tenants).collect();
    tenants.sort();
    tenants.dedup();
    for tenant in tenants {
        let members: Vec<usize> = (0..subjects.len())
            .filter(|&i| subjects[i].tenants.contains(tenant))
            .collect();
        match groups.iter_mut().find(|(_, m)| *m == members) {
            Some((names, _)) => names.push(tenant.clone()),
            None => groups.push((vec![tenant.clone()], members)),
        }
    }
    for (names, members) in &groups {
        // Only a set that holds a reported binding is about this run.
        if !members.iter().any(|&i| subjects[i].reported) {
            continue;
        }
        let schemas: Vec<&JsonObject> = members.iter().map(|&i| subjects[i].input_schema).collect();
        for (index, ready) in &ordered {
            if let Some(count) = ready.check.set_count(&schemas) {
                findings.push(Finding {
                    rule: *index,
                    binding: None,
                    set: Some((names.clone(), members.len())),
                    at: None,
                    vars: Vars {
                        count: Some(count),
                        ..Vars::default()
                    },
                });
            }
        }
    }
    findings
}

impl Report {
    /// No finding.
    pub(crate) fn is_empty(&self) -> bool {
        self.findings.is_empty()
    }

    /// `3 findings for the providers' rules`.
    pub(crate) fn count(&self) -> String {
        let n = self.findings.len();
        format!(
            "{n} finding{} for the providers' rules",
            if n == 1 { "" } else { "s" }
        )
    }

    fn models(&self) -> String {
        self.models
            .iter()
            .map(|model| model.id())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The report: findings grouped by binding (`tools[i] (name):`), then set findings,
    /// then where each rule comes from and a summary line. When one rule fires at several
    /// places of a binding, its message is shown once and the other places follow it.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        let mut group: Option<String> = None;
        let mut previous: Option<(usize, Option<usize>)> = None;
        for finding in &self.findings {
            let ready = &self.rules.rules[finding.rule];
            let heading = match (&finding.binding, &finding.set) {
                (Some((index, name)), _) => format!("tools[{index}] ({name}):"),
                (None, Some((tenants, size))) => format!(
                    "tenant{} {} ({size} binding{}):",
                    if tenants.len() == 1 { "" } else { "s" },
                    tenants.join(", "),
                    if *size == 1 { "" } else { "s" }
                ),
                (None, None) => "all bindings:".to_owned(),
            };
            if group.as_ref() != Some(&heading) {
                let _ = writeln!(out, "{heading}");
                group = Some(heading);
                previous = None;
            }
            let path = finding.at.as_ref().map(render_at);
            let this = (
                finding.rule,
                finding.binding.as_ref().map(|(index, _)| *index),
            );
            if previous == Some(this)
                && let Some(path) = &path
            {
                let _ = writeln!(out, "    also at {path}");
                continue;
            }
            previous = Some(this);
            let message = fill(&ready.rule.message, finding, ready, path.as_deref());
            let label = label(&ready.rule);
            let _ = match &path {
                Some(path) => writeln!(
                    out,
                    "  {path}: {}, {label}: {message} [{}]",
                    ready.provider, ready.rule.id
                ),
                None => writeln!(
                    out,
                    "  {}, {label}: {message} [{}]",
                    ready.provider, ready.rule.id
                ),
            };
        }
        let rejected = self
            .findings
            .iter()
            .filter(|f| self.rules.rules[f.rule].rule.severity == Severity::Error)
            .count();
        let strict = self
            .findings
            .iter()
            .filter(|f| {
                let rule = &self.rules.rules[f.rule].rule;
                rule.severity == Severity::Warning && rule.mode == Mode::Strict
            })
            .count();
        let other = self.findings.len() - rejected - strict;
        if self.findings.is_empty() {
            let _ = writeln!(out, "models ({}): no findings", self.models());
            return out;
        }
        let _ = writeln!(out, "where each rule comes from:");
        for (id, source) in self.sources() {
            let _ = writeln!(out, "  {id}: {source}");
        }
        let _ = writeln!(
            out,
            "models ({}): {}: {rejected} rejected by the API, {strict} in strict mode only, {other} other",
            self.models(),
            self.count(),
        );
        out
    }

    /// The rules that fired, in rule order, with the page each comes from.
    fn sources(&self) -> Vec<(&str, &str)> {
        let mut fired: Vec<usize> = self.findings.iter().map(|f| f.rule).collect();
        fired.sort_unstable();
        fired.dedup();
        fired
            .into_iter()
            .map(|i| {
                let rule = &self.rules.rules[i].rule;
                (rule.id.as_str(), rule.source.as_str())
            })
            .collect()
    }
}

/// `rejected`, `strict mode` or `warning`, and whether only users report it.
fn label(rule: &Rule) -> String {
    let kind = match (rule.severity, rule.mode) {
        (_, Mode::Strict) => "strict mode",
        (Severity::Error, Mode::Default) => "rejected",
        (Severity::Warning, Mode::Default) => "warning",
    };
    match rule.status {
        Status::Confirmed => kind.to_owned(),
        Status::ObservedOnly => format!("{kind}, reported by users"),
    }
}

/// A path relative to the binding: `name`, `input_schema`, `input_schema.properties.q`,
/// `input_schema.properties["a b"]`, `input_schema.anyOf[0]`.
fn render_at(at: &At) -> String {
    match at {
        At::Name => "name".to_owned(),
        At::Schema(path) => {
            let mut out = "input_schema".to_owned();
            for seg in path {
                match seg {
                    Seg::Key(key) if is_plain_key(key) => {
                        let _ = write!(out, ".{key}");
                    }
                    Seg::Key(key) => {
                        let quoted = serde_json::to_string(key).unwrap_or_default();
                        let _ = write!(out, "[{quoted}]");
                    }
                    Seg::Index(index) => {
                        let _ = write!(out, "[{index}]");
                    }
                }
            }
            out
        }
    }
}

fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '-')
}

/// Fills a message template: `{path}`, `{value}`, `{key}`, `{keyword}`, `{value_type}`,
/// `{count}`, `{max}`, `{detail}`; `{{` and `}}` are braces.
fn fill(template: &str, finding: &Finding, ready: &Ready, path: Option<&str>) -> String {
    let vars = &finding.vars;
    let lookup = |name: &str| -> Option<String> {
        match name {
            "path" => path.map(str::to_owned),
            "value" => vars.value.clone(),
            "key" => vars.key.clone(),
            "keyword" => vars.keyword.clone(),
            "value_type" => vars.value_type.clone(),
            "count" => vars.count.map(|n| n.to_string()),
            "max" => ready.check.max().map(|n| n.to_string()),
            "detail" => vars.detail.clone(),
            _ => None,
        }
    };
    let mut out = String::new();
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push('{');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push('}');
            rest = after;
        } else if let (Some(after), Some(end)) = (tail.strip_prefix('{'), tail.find('}')) {
            let name = &after[..end - 1];
            match lookup(name) {
                Some(value) => out.push_str(&crate::escape::escape(&value, false)),
                None => out.push_str(&tail[..=end]),
            }
            rest = &tail[end + 1..];
        } else {
            out.push_str(&tail[..1]);
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::{Map, Value, json};

    use super::*;

    /// One side of a case: one binding, or a set of them.
    #[derive(Debug, Deserialize)]
    struct Side {
        name: Option<String>,
        input_schema: Option<Value>,
        expect_paths: Option<Vec<Vec<Value>>>,
        bindings: Option<SetSpec>,
    }

    #[derive(Debug, Deserialize)]
    struct SetSpec {
        count: usize,
        input_schema: Option<Value>,
        generator: Option<Value>,
    }

    #[derive(Debug, Deserialize)]
    struct Case {
        rule: String,
        trigger: Side,
        pass: Side,
    }

    #[derive(Debug, Deserialize)]
    struct Cases {
        cases: Vec<Case>,
    }

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    fn closed(properties: Map<String, Value>, required: Option<Vec<String>>) -> Value {
        let required = required.unwrap_or_else(|| properties.keys().cloned().collect());
        json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
    }

    /// The generators of cases.json (see its `generators`).
    fn generate(spec: &Value) -> Value {
        let n = |key: &str| spec[key].as_u64().unwrap() as usize;
        let properties = |names: Vec<String>, schema: Value| -> Map<String, Value> {
            names
                .into_iter()
                .map(|name| (name, schema.clone()))
                .collect()
        };
        match spec["generator"].as_str().unwrap() {
            "flat_properties" => closed(
                properties(
                    (0..n("count")).map(|i| format!("p{i}")).collect(),
                    json!({"type": "string"}),
                ),
                None,
            ),
            "nested_objects" => {
                let mut node = closed(
                    properties(vec!["leaf".into()], json!({"type": "string"})),
                    None,
                );
                for _ in 1..n("depth") {
                    node = closed(properties(vec!["n".into()], node), None);
                }
                node
            }
            "enum_values" => {
                let values: Vec<Value> = (0..n("count"))
                    .map(|i| json!(format!("{i:x>width$}", width = n("value_len"))))
                    .collect();
                closed(
                    properties(vec!["e".into()], json!({"type": "string", "enum": values})),
                    None,
                )
            }
            "long_property_names" => closed(
                properties(
                    (0..n("count"))
                        .map(|i| format!("{i:k>width$}", width = n("name_len")))
                        .collect(),
                    json!({"type": "string"}),
                ),
                None,
            ),
            "optional_properties" => closed(
                properties(
                    (0..n("count")).map(|i| format!("o{i}")).collect(),
                    json!({"type": "string"}),
                ),
                Some(Vec::new()),
            ),
            "union_properties" => closed(
                properties(
                    (0..n("count")).map(|i| format!("u{i}")).collect(),
                    json!({"type": ["string", "null"]}),
                ),
                None,
            ),
            other => panic!("unknown generator {other}"),
        }
    }

    fn schema(value: &Value) -> Value {
        if value.get("generator").is_some() {
            generate(value)
        } else {
            value.clone()
        }
    }

    /// The side's bindings as (name, schema).
    fn bindings(side: &Side) -> Vec<(String, Map<String, Value>)> {
        match &side.bindings {
            Some(set) => {
                let schema = match (&set.input_schema, &set.generator) {
                    (Some(schema), _) => schema.clone(),
                    (None, Some(generator)) => generate(generator),
                    (None, None) => panic!("a set without a schema"),
                };
                (0..set.count)
                    .map(|i| (format!("tool_{i}"), object(schema.clone())))
                    .collect()
            }
            None => vec![(
                side.name.clone().unwrap_or_else(|| "tool".into()),
                object(schema(side.input_schema.as_ref().unwrap())),
            )],
        }
    }

    /// What one rule finds on one side, as paths like the cases write them.
    fn run(rules: &Rules, rule: &str, side: &Side) -> Vec<Vec<Value>> {
        let index = rules.rules.iter().position(|r| r.rule.id == rule).unwrap();
        let ready = &rules.rules[index];
        let bindings = bindings(side);
        let tenants = vec!["t".to_owned()];
        let subjects: Vec<Subject<'_>> = bindings
            .iter()
            .enumerate()
            .map(|(index, (name, schema))| Subject {
                index,
                name,
                input_schema: schema,
                tenants: &tenants,
                reported: true,
            })
            .collect();
        let model = [Model::Openai, Model::Anthropic, Model::Gemini]
            .into_iter()
            .find(|m| m.id() == ready.provider)
            .unwrap();
        evaluate(rules, &subjects, &[model])
            .into_iter()
            .filter(|f| f.rule == index)
            .map(|f| match f.at {
                Some(At::Name) => vec![json!("name")],
                Some(At::Schema(path)) => path
                    .into_iter()
                    .map(|seg| match seg {
                        Seg::Key(key) => json!(key),
                        Seg::Index(i) => json!(i),
                    })
                    .collect(),
                None => vec![json!("(set)")],
            })
            .collect()
    }

    /// Each shipped rule has a case that triggers it (where the case says) and a case
    /// that passes; every case names a shipped rule.
    #[test]
    fn every_rule_triggers_and_passes_on_its_cases() {
        let rules = Rules::shipped().unwrap();
        let cases: Cases = serde_json::from_str(include_str!("cases.json")).unwrap();
        let mut failures = Vec::new();
        for case in &cases.cases {
            assert!(
                rules.rules.iter().any(|r| r.rule.id == case.rule),
                "a case for an unknown rule: {}",
                case.rule
            );
            let triggered = run(&rules, &case.rule, &case.trigger);
            let at_expected = match &case.trigger.expect_paths {
                Some(expected) => triggered.iter().any(|path| expected.contains(path)),
                None => !triggered.is_empty(),
            };
            if !at_expected {
                failures.push(format!("{}: trigger found {triggered:?}", case.rule));
            }
            let passed = run(&rules, &case.rule, &case.pass);
            if !passed.is_empty() {
                failures.push(format!("{}: pass found {passed:?}", case.rule));
            }
        }
        for ready in &rules.rules {
            if !cases.cases.iter().any(|case| case.rule == ready.rule.id) {
                failures.push(format!("{}: no case", ready.rule.id));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
        assert_eq!(rules.rules.len(), 43);
    }

    #[test]
    fn every_rule_cites_a_page_and_its_message_fills() {
        let rules = Rules::shipped().unwrap();
        let placeholder = regex::Regex::new(r"\{[a-z_]+\}").unwrap();
        for ready in &rules.rules {
            assert!(
                ready.rule.source.starts_with("https://"),
                "{}",
                ready.rule.id
            );
            let finding = Finding {
                rule: 0,
                binding: None,
                set: None,
                at: None,
                vars: Vars {
                    value: Some("v".into()),
                    key: Some("k".into()),
                    keyword: Some("kw".into()),
                    value_type: Some("number".into()),
                    count: Some(7),
                    detail: Some("d".into()),
                },
            };
            let message = fill(&ready.rule.message, &finding, ready, Some("input_schema"));
            assert!(
                !placeholder.is_match(&message),
                "{}: {message}",
                ready.rule.id
            );
        }
    }

    #[test]
    fn messages_fill_placeholders_and_braces() {
        let rules = Rules::shipped().unwrap();
        let ready = rules
            .rules
            .iter()
            .find(|r| r.rule.id == "anthropic.name-pattern")
            .unwrap();
        let finding = Finding {
            rule: 0,
            binding: None,
            set: None,
            at: Some(At::Name),
            vars: Vars {
                value: Some("a.b".into()),
                ..Vars::default()
            },
        };
        assert_eq!(
            fill(&ready.rule.message, &finding, ready, Some("name")),
            "Anthropic rejects the tool name 'a.b': it must match ^[a-zA-Z0-9_-]{1,128}$."
        );
    }

    #[test]
    fn the_report_groups_by_binding_and_labels_what_users_reported() {
        let schema = object(json!({
            "type": "object",
            "anyOf": [{"required": ["a"]}],
            "properties": {"a": {"type": "string", "format": "uri-reference"}, "filter[id]": {"type": "string"}},
            "required": ["a", "filter[id]"],
            "additionalProperties": false
        }));
        let clean = object(
            json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false}),
        );
        let tenants = vec!["local".to_owned()];
        let subjects = [
            Subject {
                index: 0,
                name: "3d-render",
                input_schema: &schema,
                tenants: &tenants,
                reported: true,
            },
            Subject {
                index: 1,
                name: "ok",
                input_schema: &clean,
                tenants: &tenants,
                reported: true,
            },
        ];
        let report = check(
            &subjects,
            &[
                Model::Openai,
                Model::Anthropic,
                Model::Gemini,
                Model::Openai,
            ],
        )
        .unwrap();
        insta::assert_snapshot!(report.render());
        assert!(
            report
                .sources()
                .iter()
                .all(|(_, s)| s.starts_with("https://"))
        );
        let clean_only = check(&subjects[1..], &[Model::Openai, Model::Anthropic]).unwrap();
        assert!(clean_only.is_empty());
        assert_eq!(
            clean_only.render(),
            "models (openai, anthropic): no findings\n"
        );
    }

    #[test]
    fn set_rules_count_what_a_tenant_sees() {
        let schema =
            object(json!({"type": "object", "properties": {}, "additionalProperties": false}));
        let a = vec!["a".to_owned()];
        let ab = vec!["a".to_owned(), "b".to_owned()];
        let names: Vec<String> = (0..130).map(|i| format!("t{i}")).collect();
        let subjects: Vec<Subject<'_>> = names
            .iter()
            .enumerate()
            .map(|(i, name)| Subject {
                index: i,
                name,
                input_schema: &schema,
                tenants: if i < 125 { &ab } else { &a },
                reported: true,
            })
            .collect();
        let report = check(&subjects, &[Model::Openai]).unwrap();
        let text = report.render();
        assert!(text.contains("tenant a (130 bindings):\n  openai, rejected: OpenAI rejects the request: 130 tools are bound"), "{text}");
        assert!(!text.contains("tenant b"), "{text}");
    }
}
