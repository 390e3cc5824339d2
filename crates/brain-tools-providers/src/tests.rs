//! Every shipped rule against its cases (`cases.json`), and the report's shape.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::{
    Effect, Place, Provider, Verdict,
    check::{Subject, evaluate},
    eval::{At, Seg},
    rules::shipped,
    text::render_at,
};

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

fn subjects<'a>(
    bindings: &'a [(String, Map<String, Value>)],
    tenants: &'a [String],
) -> Vec<Subject<'a>> {
    bindings
        .iter()
        .enumerate()
        .map(|(index, (name, schema))| Subject {
            index,
            name,
            input_schema: schema,
            tenants,
            reported: true,
        })
        .collect()
}

/// Where one rule fires on one side: paths as findings show them, `(request)` for a
/// request's finding.
fn run(rule: &str, side: &Side) -> Vec<String> {
    let provider = shipped()
        .iter()
        .find(|ready| ready.rule.id == rule)
        .unwrap()
        .rule
        .provider;
    let bindings = bindings(side);
    let tenants = vec!["t".to_owned()];
    evaluate(&subjects(&bindings, &tenants), &[provider])
        .findings
        .into_iter()
        .filter(|f| f.rule == rule)
        .map(|f| f.path.unwrap_or_else(|| "(request)".to_owned()))
        .collect()
}

/// A case's path (segments relative to input_schema, or `["name"]`) as findings show it.
fn rendered(segments: &[Value]) -> String {
    if segments == [json!("name")] {
        return render_at(&At::Name);
    }
    render_at(&At::Schema(
        segments
            .iter()
            .map(|seg| match seg {
                Value::String(key) => Seg::Key(key.clone()),
                Value::Number(i) => Seg::Index(i.as_u64().unwrap() as usize),
                other => panic!("a path segment {other}"),
            })
            .collect(),
    ))
}

/// Each shipped rule has a case that triggers it (where the case says) and a case that
/// passes; every case names a shipped rule.
#[test]
fn every_rule_triggers_and_passes_on_its_cases() {
    let cases: Cases = serde_json::from_str(include_str!("cases.json")).unwrap();
    let mut failures = Vec::new();
    for case in &cases.cases {
        assert!(
            shipped().iter().any(|r| r.rule.id == case.rule),
            "a case for an unknown rule: {}",
            case.rule
        );
        let triggered = run(&case.rule, &case.trigger);
        let at_expected = match &case.trigger.expect_paths {
            Some(expected) => {
                let expected: Vec<String> = expected.iter().map(|p| rendered(p)).collect();
                triggered.iter().any(|path| expected.contains(path))
            }
            None => !triggered.is_empty(),
        };
        if !at_expected {
            failures.push(format!("{}: trigger found {triggered:?}", case.rule));
        }
        let passed = run(&case.rule, &case.pass);
        if !passed.is_empty() {
            failures.push(format!("{}: pass found {passed:?}", case.rule));
        }
    }
    for ready in shipped() {
        if !cases.cases.iter().any(|case| case.rule == ready.rule.id) {
            failures.push(format!("{}: no case", ready.rule.id));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    assert_eq!(shipped().len(), 43);
    assert_eq!(crate::rules().count(), 43);
}

#[test]
fn every_rule_cites_a_page_and_its_message_fills() {
    let placeholder = regex::Regex::new(r"\{[a-z_]+\}").unwrap();
    let vars = crate::eval::Vars {
        value: Some("v".into()),
        key: Some("k".into()),
        keyword: Some("kw".into()),
        value_type: Some("number".into()),
        count: Some(7),
        detail: Some("d".into()),
        declares_properties: None,
    };
    for ready in shipped() {
        let rule = &ready.rule;
        assert!(rule.source.starts_with("https://"), "{}", rule.id);
        if let Some(fix) = &rule.sdk_fix {
            assert!(fix.source.starts_with("https://github.com/"), "{}", rule.id);
            assert!(
                matches!(rule.effect, Effect::Rejected | Effect::StrictMode),
                "{}: only a refusing rule has a fix",
                rule.id
            );
        }
        let message = crate::text::fill(
            &ready.message,
            &vars,
            ready.check.max(),
            Some("input_schema"),
        );
        assert!(!placeholder.is_match(&message), "{}: {message}", rule.id);
    }
}

fn tool(name: &str, schema: Value) -> (String, Map<String, Value>) {
    (name.to_owned(), object(schema))
}

/// Verdicts: a rule no SDK fixes rejects; a rule the provider's SDK fixes (only in the
/// shape it fixes) accepts after the transformation; strict mode counts strict rules too.
#[test]
fn verdicts_per_binding_and_provider() {
    let tools = [
        // Gemini: additionalProperties and a type list, both fixed by google-genai.
        tool(
            "nullable",
            json!({"type": "object", "properties": {"q": {"type": ["string", "null"]}},
                   "required": ["q"], "additionalProperties": false}),
        ),
        // OpenAI: no properties (the Agents SDK adds them); strict: open object.
        tool("bare", json!({"type": "object"})),
        // Anthropic and OpenAI: anyOf at the root, which no SDK fixes.
        tool(
            "root_any_of",
            json!({"type": "object", "anyOf": [{"required": ["a"]}], "properties": {"a": {"type": "string"}}}),
        ),
        // Strict mode: an object that allows more properties is not closed by the
        // Agents SDK (its conversion fails), but Anthropic's transform_schema closes it.
        tool(
            "open",
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
                   "additionalProperties": true}),
        ),
        // Gemini: a type that is not a type name is not something the SDK converts.
        tool(
            "bad_type",
            json!({"type": "object", "properties": {"a": {"type": "text"}}}),
        ),
    ];
    let tenants = vec!["local".to_owned()];
    let report = evaluate(&subjects(&tools, &tenants), &Provider::ALL);
    let table: Vec<String> = report
        .verdicts
        .iter()
        .map(|v| {
            format!(
                "{} {}: {:?} / strict {:?}",
                v.name,
                v.provider.id(),
                v.default,
                v.strict
            )
        })
        .collect();
    insta::assert_debug_snapshot!(table);
    let gemini = report.verdict(0, Provider::Gemini).unwrap();
    assert_eq!(gemini.default, Verdict::AcceptedAfterSdk);
    assert_eq!(
        report.verdict(4, Provider::Gemini).unwrap().default,
        Verdict::Rejected
    );
    assert_eq!(
        report.verdict(2, Provider::Anthropic).unwrap().default,
        Verdict::Rejected
    );
}

#[test]
fn request_rules_count_what_a_tenant_sees() {
    let schema = object(json!({"type": "object", "properties": {}, "additionalProperties": false}));
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
    let report = evaluate(&subjects, &[Provider::OpenAi]);
    let requests: Vec<&Place> = report
        .findings
        .iter()
        .filter(|f| f.rule == "openai.max-tools")
        .map(|f| &f.place)
        .collect();
    assert_eq!(
        requests,
        [&Place::Request {
            tenants: vec!["a".into()],
            bindings: 130
        }]
    );
    // Request findings are not verdicts on one binding.
    assert!(
        report
            .verdicts
            .iter()
            .all(|v| v.default == Verdict::Accepted)
    );
}

#[test]
fn providers_are_checked_once_in_the_order_asked() {
    let tools = [tool("3d", json!({"type": "object", "anyOf": [{}]}))];
    let tenants = vec!["local".to_owned()];
    let report = evaluate(
        &subjects(&tools, &tenants),
        &[Provider::Gemini, Provider::OpenAi, Provider::Gemini],
    );
    assert_eq!(report.providers, [Provider::Gemini, Provider::OpenAi]);
    let order: Vec<Provider> = report.findings.iter().map(|f| f.provider).collect();
    let first_openai = order.iter().position(|p| *p == Provider::OpenAi).unwrap();
    assert!(order[..first_openai].iter().all(|p| *p == Provider::Gemini));
    assert!(order[first_openai..].iter().all(|p| *p == Provider::OpenAi));
}
