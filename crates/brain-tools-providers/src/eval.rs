//! The generic evaluator: eleven kinds of check, each a few lines over a walk of the
//! schema. The rules say which kind and with what parameters (`rules.json`, with the
//! conventions this file follows in its `conventions`, `check_kinds` and `measures`).

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;
use serde::Deserialize;
use serde_json::{Map, Value};

/// A JSON object: a schema node.
type Node = Map<String, Value>;

/// One step of a path inside the input schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// Where a finding is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum At {
    /// The tool's name.
    Name,
    /// A place in the input schema (empty: its root).
    Schema(Vec<Seg>),
}

/// The values a message template may use.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Vars {
    pub(crate) value: Option<String>,
    pub(crate) key: Option<String>,
    pub(crate) keyword: Option<String>,
    pub(crate) value_type: Option<String>,
    pub(crate) count: Option<usize>,
    pub(crate) detail: Option<String>,
    /// For an object: whether it declares any property (an SDK's fix may need one).
    pub(crate) declares_properties: Option<bool>,
}

/// One place where a rule fires.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hit {
    pub(crate) at: At,
    pub(crate) vars: Vars,
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Where {
    Root,
    #[default]
    Anywhere,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum NameTarget {
    ToolName,
    PropertyKeys,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Scope {
    Binding,
    Set,
    Node,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Measure {
    PropertyCount,
    EnumValueCount,
    SchemaStringChars,
    StringEnumChars,
    OptionalPropertyCount,
    UnionPropertyCount,
    ToolCount,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct When {
    type_is: Option<String>,
    has_any: Option<Vec<String>>,
    lacks_all: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Require {
    present: Option<String>,
    type_equals: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
}

/// A JSON type name, or several.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum Types {
    One(String),
    Many(Vec<String>),
}

impl Types {
    fn allows(&self, value: &Value) -> bool {
        let names: &[String] = match self {
            Types::One(one) => std::slice::from_ref(one),
            Types::Many(many) => many,
        };
        let kind = json_type(value);
        names.iter().any(|name| {
            name == kind || (name == "integer" && value.as_f64().is_some_and(|n| n.fract() == 0.0))
        })
    }
}

/// A check, tagged by `kind` in the data.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum Check {
    NamePattern {
        target: NameTarget,
        #[serde(default)]
        r#where: Where,
        pattern: String,
    },
    KeywordForbidden {
        r#where: Where,
        keywords: Vec<String>,
    },
    KeywordAllowlist {
        r#where: Where,
        allowed: Vec<String>,
    },
    KeywordValue {
        r#where: Where,
        keyword: String,
        #[serde(default)]
        each: bool,
        value_type: Option<Types>,
        allowed: Option<Vec<Value>>,
        #[serde(default)]
        case_insensitive: bool,
        forbidden_regex: Option<String>,
    },
    NodeRequires {
        r#where: Where,
        when: When,
        require: Require,
    },
    ObjectClosed {},
    ObjectAllRequired {},
    MaxDepth {
        max: usize,
    },
    MaxTotal {
        measure: Measure,
        max: usize,
        scope: Scope,
        min_values: Option<usize>,
    },
    MetaschemaValid {
        draft: String,
    },
    RefRules {
        #[serde(default)]
        forbid_external: bool,
        #[serde(default)]
        forbid_recursion: bool,
        #[serde(default)]
        forbid_allof_with_ref: bool,
    },
}

/// A check with its regular expression compiled.
#[derive(Debug, Clone)]
pub(crate) struct Compiled {
    pub(crate) check: Check,
    regex: Option<Regex>,
}

impl Compiled {
    pub(crate) fn new(check: Check) -> Result<Self, String> {
        let pattern = match &check {
            Check::NamePattern { pattern, .. } => Some(pattern),
            Check::KeywordValue {
                forbidden_regex, ..
            } => forbidden_regex.as_ref(),
            Check::MetaschemaValid { draft } if draft != "2020-12" => {
                return Err(format!("draft {draft} is not supported"));
            }
            _ => None,
        };
        let regex = pattern
            .map(|pattern| Regex::new(pattern).map_err(|error| error.to_string()))
            .transpose()?;
        Ok(Self { check, regex })
    }

    /// The limit of a `max_*` check, for `{max}`.
    pub(crate) fn max(&self) -> Option<usize> {
        match self.check {
            Check::MaxDepth { max } | Check::MaxTotal { max, .. } => Some(max),
            _ => None,
        }
    }

    /// Whether the check judges a set of bindings (once per set) rather than each one.
    pub(crate) fn is_set(&self) -> bool {
        matches!(
            self.check,
            Check::MaxTotal {
                scope: Scope::Set,
                ..
            }
        )
    }

    /// A set check: the count, when it is over the limit.
    pub(crate) fn set_count(&self, schemas: &[&Node]) -> Option<usize> {
        let Check::MaxTotal {
            measure,
            max,
            scope: Scope::Set,
            ..
        } = self.check
        else {
            return None;
        };
        let count = match measure {
            Measure::ToolCount => schemas.len(),
            measure => schemas.iter().map(|schema| total(measure, schema)).sum(),
        };
        (count > max).then_some(count)
    }

    /// Where the check fires on one binding.
    pub(crate) fn hits(&self, name: &str, schema: &Node) -> Vec<Hit> {
        let mut hits = Vec::new();
        let hit = |at: At, vars: Vars| Hit { at, vars };
        match &self.check {
            Check::NamePattern {
                target, r#where, ..
            } => {
                let Some(regex) = &self.regex else {
                    return hits;
                };
                match target {
                    NameTarget::ToolName => {
                        if !regex.is_match(name) {
                            hits.push(hit(
                                At::Name,
                                Vars {
                                    value: Some(name.to_owned()),
                                    ..Vars::default()
                                },
                            ));
                        }
                    }
                    NameTarget::PropertyKeys => {
                        for (node, path) in nodes(schema, *r#where) {
                            let Some(Value::Object(properties)) = node.get("properties") else {
                                continue;
                            };
                            for key in properties.keys().filter(|key| !regex.is_match(key)) {
                                hits.push(hit(
                                    At::Schema(join(&path, &["properties", key])),
                                    Vars {
                                        key: Some(key.clone()),
                                        value: Some(key.clone()),
                                        ..Vars::default()
                                    },
                                ));
                            }
                        }
                    }
                }
            }
            Check::KeywordForbidden { r#where, keywords } => {
                for (node, path) in nodes(schema, *r#where) {
                    for keyword in keywords.iter().filter(|k| node.contains_key(*k)) {
                        hits.push(hit(
                            At::Schema(join(&path, &[keyword])),
                            keyword_vars(keyword),
                        ));
                    }
                }
            }
            Check::KeywordAllowlist { r#where, allowed } => {
                for (node, path) in nodes(schema, *r#where) {
                    for keyword in node.keys().filter(|k| !allowed.contains(k)) {
                        hits.push(hit(
                            At::Schema(join(&path, &[keyword])),
                            keyword_vars(keyword),
                        ));
                    }
                }
            }
            Check::KeywordValue {
                r#where,
                keyword,
                each,
                value_type,
                allowed,
                case_insensitive,
                ..
            } => {
                for (node, path) in nodes(schema, *r#where) {
                    let Some(found) = node.get(keyword) else {
                        continue;
                    };
                    let at = join(&path, &[keyword]);
                    let values: Vec<(&Value, Vec<Seg>)> = match (each, found) {
                        (true, Value::Array(items)) => items
                            .iter()
                            .enumerate()
                            .map(|(i, item)| {
                                let mut at = at.clone();
                                at.push(Seg::Index(i));
                                (item, at)
                            })
                            .collect(),
                        (true, _) => Vec::new(),
                        (false, value) => vec![(value, at)],
                    };
                    for (value, at) in values {
                        let mut bad = value_type.as_ref().is_some_and(|t| !t.allows(value));
                        if !bad && let Some(allowed) = allowed {
                            bad = !match value {
                                Value::String(s) if *case_insensitive => allowed
                                    .iter()
                                    .filter_map(Value::as_str)
                                    .any(|a| a.eq_ignore_ascii_case(s)),
                                value => allowed.iter().any(|a| same(value, a)),
                            };
                        }
                        if !bad && let (Some(regex), Value::String(s)) = (&self.regex, value) {
                            bad = regex.is_match(s);
                        }
                        if bad {
                            hits.push(hit(
                                At::Schema(at),
                                Vars {
                                    value: Some(show(value)),
                                    value_type: Some(json_type(value).to_owned()),
                                    keyword: Some(keyword.clone()),
                                    ..Vars::default()
                                },
                            ));
                        }
                    }
                }
            }
            Check::NodeRequires {
                r#where,
                when,
                require,
            } => {
                for (node, path) in nodes(schema, *r#where) {
                    if when.type_is.as_ref().is_some_and(|t| !type_is(node, t))
                        || when
                            .has_any
                            .as_ref()
                            .is_some_and(|keys| !keys.iter().any(|k| node.contains_key(k)))
                        || when
                            .lacks_all
                            .as_ref()
                            .is_some_and(|keys| keys.iter().any(|k| node.contains_key(k)))
                    {
                        continue;
                    }
                    let mut ok = require
                        .present
                        .as_ref()
                        .is_none_or(|key| node.contains_key(key));
                    if let Some(wanted) = &require.type_equals {
                        ok = ok
                            && match node.get("type") {
                                Some(Value::String(t)) if require.case_insensitive => {
                                    t.eq_ignore_ascii_case(wanted)
                                }
                                Some(Value::String(t)) => t == wanted,
                                _ => false,
                            };
                    }
                    if !ok {
                        hits.push(hit(At::Schema(path), Vars::default()));
                    }
                }
            }
            Check::ObjectClosed {} => {
                for (node, path) in walk(schema) {
                    let found = node.get("additionalProperties");
                    if is_object_node(node) && found != Some(&Value::Bool(false)) {
                        // What is there now (none when absent): an SDK may close only an
                        // object that says nothing.
                        let declares = matches!(node.get("properties"), Some(Value::Object(p)) if !p.is_empty());
                        let vars = Vars {
                            value: found.map(show),
                            value_type: found.map(|v| json_type(v).to_owned()),
                            declares_properties: Some(declares),
                            ..Vars::default()
                        };
                        hits.push(hit(At::Schema(path), vars));
                    }
                }
            }
            Check::ObjectAllRequired {} => {
                for (node, path) in walk(schema) {
                    let (true, Some(Value::Object(properties))) =
                        (is_object_node(node), node.get("properties"))
                    else {
                        continue;
                    };
                    let required = required(node);
                    for key in properties
                        .keys()
                        .filter(|key| !required.contains(&key.as_str()))
                    {
                        hits.push(hit(
                            At::Schema(join(&path, &["properties", key])),
                            Vars {
                                key: Some(key.clone()),
                                ..Vars::default()
                            },
                        ));
                    }
                }
            }
            Check::MaxDepth { max } => {
                let (deepest, path) = depth(schema, schema, Vec::new(), &BTreeSet::new());
                if deepest > *max {
                    hits.push(hit(
                        At::Schema(path),
                        Vars {
                            count: Some(deepest),
                            ..Vars::default()
                        },
                    ));
                }
            }
            Check::MaxTotal {
                measure,
                max,
                scope,
                min_values,
            } => match scope {
                Scope::Set => {}
                Scope::Binding => {
                    let count = total(*measure, schema);
                    if count > *max {
                        hits.push(hit(
                            At::Schema(Vec::new()),
                            Vars {
                                count: Some(count),
                                ..Vars::default()
                            },
                        ));
                    }
                }
                Scope::Node => {
                    let min_values = min_values.unwrap_or(0);
                    for (node, path) in walk(schema) {
                        let Some(Value::Array(values)) = node.get("enum") else {
                            continue;
                        };
                        if values.len() <= min_values || !values.iter().all(Value::is_string) {
                            continue;
                        }
                        let count: usize = values
                            .iter()
                            .filter_map(Value::as_str)
                            .map(|s| s.chars().count())
                            .sum();
                        if count > *max {
                            hits.push(hit(
                                At::Schema(join(&path, &["enum"])),
                                Vars {
                                    count: Some(count),
                                    ..Vars::default()
                                },
                            ));
                        }
                    }
                }
            },
            Check::MetaschemaValid { .. } => {
                let value = Value::Object(schema.clone());
                if let Err(error) = jsonschema::draft202012::meta::validate(&value) {
                    let pointer = error.instance_path().to_string();
                    hits.push(hit(
                        At::Schema(segments(&value, &pointer)),
                        Vars {
                            detail: Some(error.to_string()),
                            ..Vars::default()
                        },
                    ));
                }
            }
            Check::RefRules {
                forbid_external,
                forbid_recursion,
                forbid_allof_with_ref,
            } => {
                let cycles = if *forbid_recursion {
                    ref_cycles(schema)
                } else {
                    BTreeSet::new()
                };
                for (node, path) in walk(schema) {
                    if let Some(Value::String(reference)) = node.get("$ref") {
                        let detail = if *forbid_external && !reference.starts_with('#') {
                            Some(format!("external $ref {reference}"))
                        } else if cycles.contains(reference) {
                            Some(format!("recursive $ref {reference}"))
                        } else {
                            None
                        };
                        if let Some(detail) = detail {
                            hits.push(hit(
                                At::Schema(join(&path, &["$ref"])),
                                Vars {
                                    detail: Some(detail),
                                    ..Vars::default()
                                },
                            ));
                        }
                    }
                    if *forbid_allof_with_ref && let Some(Value::Array(members)) = node.get("allOf")
                    {
                        for (i, member) in members.iter().enumerate() {
                            if member.get("$ref").is_some() {
                                let mut at = join(&path, &["allOf"]);
                                at.push(Seg::Index(i));
                                hits.push(hit(
                                    At::Schema(at),
                                    Vars {
                                        detail: Some("allOf with $ref".into()),
                                        ..Vars::default()
                                    },
                                ));
                            }
                        }
                    }
                }
            }
        }
        hits
    }
}

fn keyword_vars(keyword: &str) -> Vars {
    Vars {
        keyword: Some(keyword.to_owned()),
        value: Some(keyword.to_owned()),
        ..Vars::default()
    }
}

fn join(path: &[Seg], keys: &[&str]) -> Vec<Seg> {
    let mut path = path.to_vec();
    path.extend(keys.iter().map(|key| Seg::Key((*key).to_owned())));
    path
}

/// A value for a message: a string as is, anything else as JSON.
fn show(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The JSON type of a value; integers are numbers.
fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// JSON equality where `1` and `1.0` are the same number.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// Keywords whose value maps names to schemas.
const MAP_KEYWORDS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// Keywords whose value is one schema.
const SINGLE_KEYWORDS: &[&str] = &[
    "items",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
];
/// Keywords whose value is a list of schemas.
const ARRAY_KEYWORDS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems", "items"];
const DEFS_KEYWORDS: &[&str] = &["$defs", "definitions"];

/// The subschemas directly under a node, with their paths.
fn children<'a>(node: &'a Node, path: &[Seg], skip_defs: bool) -> Vec<(&'a Node, Vec<Seg>)> {
    let mut out = Vec::new();
    for keyword in MAP_KEYWORDS {
        if skip_defs && DEFS_KEYWORDS.contains(keyword) {
            continue;
        }
        if let Some(Value::Object(map)) = node.get(*keyword) {
            for (key, value) in map {
                if let Value::Object(child) = value {
                    out.push((child, join(path, &[keyword, key])));
                }
            }
        }
    }
    for keyword in SINGLE_KEYWORDS {
        if let Some(Value::Object(child)) = node.get(*keyword) {
            out.push((child, join(path, &[keyword])));
        }
    }
    for keyword in ARRAY_KEYWORDS {
        if let Some(Value::Array(items)) = node.get(*keyword) {
            for (i, item) in items.iter().enumerate() {
                if let Value::Object(child) = item {
                    let mut at = join(path, &[keyword]);
                    at.push(Seg::Index(i));
                    out.push((child, at));
                }
            }
        }
    }
    out
}

/// Every schema node, depth first, root first.
fn walk(schema: &Node) -> Vec<(&Node, Vec<Seg>)> {
    let mut out = Vec::new();
    let mut stack = vec![(schema, Vec::new())];
    while let Some((node, path)) = stack.pop() {
        let mut next = children(node, &path, false);
        next.reverse();
        stack.extend(next);
        out.push((node, path));
    }
    out
}

fn nodes(schema: &Node, r#where: Where) -> Vec<(&Node, Vec<Seg>)> {
    match r#where {
        Where::Root => vec![(schema, Vec::new())],
        Where::Anywhere => walk(schema),
    }
}

/// `type` is `t`, or a list that holds `t` (case-insensitive).
fn type_is(node: &Node, t: &str) -> bool {
    match node.get("type") {
        Some(Value::String(s)) => s.eq_ignore_ascii_case(t),
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .any(|s| s.eq_ignore_ascii_case(t)),
        _ => false,
    }
}

fn is_object_node(node: &Node) -> bool {
    type_is(node, "object") || (!node.contains_key("type") && node.contains_key("properties"))
}

fn required(node: &Node) -> Vec<&str> {
    match node.get("required") {
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

/// The node a local `$ref` points at.
fn resolve<'a>(root: &'a Node, reference: &str) -> Option<&'a Value> {
    if reference == "#" {
        return None;
    }
    let pointer = reference.strip_prefix('#')?;
    if !pointer.starts_with('/') {
        return None;
    }
    let mut current: Option<&Value> = None;
    for raw in pointer[1..].split('/') {
        let seg = raw.replace("~1", "/").replace("~0", "~");
        current = match current {
            None => root.get(&seg),
            Some(Value::Object(map)) => map.get(&seg),
            Some(Value::Array(items)) => seg.parse::<usize>().ok().and_then(|i| items.get(i)),
            Some(_) => None,
        };
        current?;
    }
    current
}

/// The deepest chain of object nodes (root = 1; local `$ref`s followed once on a path)
/// and where it ends.
fn depth(root: &Node, node: &Node, path: Vec<Seg>, seen: &BTreeSet<String>) -> (usize, Vec<Seg>) {
    let mut best = (0, path.clone());
    if let Some(Value::String(reference)) = node.get("$ref")
        && reference.starts_with('#')
        && !seen.contains(reference)
    {
        let target = if reference == "#" {
            Some(root)
        } else {
            resolve(root, reference).and_then(Value::as_object)
        };
        if let Some(target) = target {
            let mut seen = seen.clone();
            seen.insert(reference.clone());
            let found = depth(root, target, path.clone(), &seen);
            if found.0 > best.0 {
                best = found;
            }
        }
    }
    for (child, child_path) in children(node, &path, true) {
        let found = depth(root, child, child_path, seen);
        if found.0 > best.0 {
            best = found;
        }
    }
    if is_object_node(node) {
        let (deepest, deepest_path) = best;
        (deepest + 1, if deepest > 0 { deepest_path } else { path })
    } else {
        best
    }
}

/// A binding's measure.
fn total(measure: Measure, schema: &Node) -> usize {
    let mut sum = 0;
    for (node, _) in walk(schema) {
        let properties = match node.get("properties") {
            Some(Value::Object(properties)) => Some(properties),
            _ => None,
        };
        let enum_values = match node.get("enum") {
            Some(Value::Array(values)) => Some(values),
            _ => None,
        };
        sum += match measure {
            Measure::PropertyCount => properties.map_or(0, Map::len),
            Measure::EnumValueCount => enum_values.map_or(0, Vec::len),
            Measure::SchemaStringChars => {
                let keys = |map: Option<&Node>| {
                    map.map_or(0, |map| {
                        map.keys().map(|k| k.chars().count()).sum::<usize>()
                    })
                };
                let defs: usize = DEFS_KEYWORDS
                    .iter()
                    .map(|k| keys(node.get(*k).and_then(Value::as_object)))
                    .sum();
                let enums: usize = enum_values.map_or(0, |values| {
                    values
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|s| s.chars().count())
                        .sum()
                });
                let constant = node
                    .get("const")
                    .and_then(Value::as_str)
                    .map_or(0, |s| s.chars().count());
                keys(properties) + defs + enums + constant
            }
            Measure::OptionalPropertyCount => {
                let required = required(node);
                properties.map_or(0, |p| {
                    p.keys().filter(|k| !required.contains(&k.as_str())).count()
                })
            }
            Measure::UnionPropertyCount => properties.map_or(0, |p| {
                p.values()
                    .filter(|v| {
                        v.get("anyOf").is_some() || matches!(v.get("type"), Some(Value::Array(_)))
                    })
                    .count()
            }),
            // Per node or per set: not a binding total.
            Measure::StringEnumChars | Measure::ToolCount => 0,
        };
    }
    sum
}

/// The local `$ref`s that can reach themselves.
fn ref_cycles(schema: &Node) -> BTreeSet<String> {
    let refs_in = |node: &Node| -> BTreeSet<String> {
        walk(node)
            .into_iter()
            .filter_map(|(n, _)| n.get("$ref").and_then(Value::as_str))
            .filter(|r| r.starts_with('#'))
            .map(str::to_owned)
            .collect()
    };
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut todo: Vec<String> = refs_in(schema).into_iter().collect();
    while let Some(reference) = todo.pop() {
        if graph.contains_key(&reference) {
            continue;
        }
        let target = if reference == "#" {
            Some(schema)
        } else {
            resolve(schema, &reference).and_then(Value::as_object)
        };
        let next = target.map(refs_in).unwrap_or_default();
        todo.extend(next.iter().cloned());
        graph.insert(reference, next);
    }
    let mut cycles = BTreeSet::new();
    for (start, next) in &graph {
        let mut stack: Vec<&String> = next.iter().collect();
        let mut seen = BTreeSet::new();
        while let Some(reference) = stack.pop() {
            if reference == start {
                cycles.insert(start.clone());
                break;
            }
            if !seen.insert(reference) {
                continue;
            }
            if let Some(next) = graph.get(reference) {
                stack.extend(next);
            }
        }
    }
    cycles
}

/// A JSON pointer into `value` as path segments (array positions as indexes).
fn segments(value: &Value, pointer: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    let mut current = Some(value);
    for raw in pointer.split('/').skip(1) {
        let seg = raw.replace("~1", "/").replace("~0", "~");
        match current {
            Some(Value::Array(items)) => {
                let index = seg.parse::<usize>().ok();
                current = index.and_then(|i| items.get(i));
                match index {
                    Some(index) => out.push(Seg::Index(index)),
                    None => out.push(Seg::Key(seg)),
                }
            }
            Some(Value::Object(map)) => {
                current = map.get(&seg);
                out.push(Seg::Key(seg));
            }
            _ => {
                current = None;
                out.push(Seg::Key(seg));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn node(value: Value) -> Node {
        match value {
            Value::Object(map) => map,
            _ => unreachable!(),
        }
    }

    #[test]
    fn the_walk_reaches_every_subschema_but_not_data() {
        let schema = node(json!({
            "type": "object",
            "properties": {"type": {"type": "string"}, "list": {"type": "array", "items": [{"enum": [{"type": "x"}]}]}},
            "$defs": {"a": {"anyOf": [{"type": "null"}]}},
            "default": {"type": "object"}
        }));
        let paths: Vec<String> = walk(&schema)
            .iter()
            .map(|(_, path)| {
                path.iter()
                    .map(|seg| match seg {
                        Seg::Key(k) => k.clone(),
                        Seg::Index(i) => i.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .collect();
        assert_eq!(
            paths,
            [
                "",
                "properties/type",
                "properties/list",
                "properties/list/items/0",
                "$defs/a",
                "$defs/a/anyOf/0"
            ]
        );
    }

    #[test]
    fn depth_counts_objects_and_follows_refs_once() {
        let schema = node(json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/n"}},
            "$defs": {"n": {"type": "object", "properties": {"next": {"$ref": "#/$defs/n"}}}}
        }));
        assert_eq!(depth(&schema, &schema, Vec::new(), &BTreeSet::new()).0, 2);
        assert_eq!(
            ref_cycles(&schema),
            BTreeSet::from(["#/$defs/n".to_owned()])
        );
    }

    #[test]
    fn pointers_become_segments() {
        let value = json!({"properties": {"a/b": {"required": ["x", 5]}}});
        assert_eq!(
            segments(&value, "/properties/a~1b/required/1"),
            [
                Seg::Key("properties".into()),
                Seg::Key("a/b".into()),
                Seg::Key("required".into()),
                Seg::Index(1)
            ]
        );
    }
}
