//! Schema checks shared by the loader and the policy: the dialect is known, every `$ref`
//! stays inside the document, and the schema compiles. Nothing is fetched: the
//! `jsonschema` crate is built without its file and HTTP resolvers, and it is told to stay
//! offline as well.

use std::fmt;

use jsonschema::{Draft, Validator};
use serde_json::Value;

use crate::{error::Problem, path::Path};

/// A schema compiled for validation by [`compile_schema`]. Which validator does the work
/// is not part of this crate's API.
#[derive(Clone)]
pub struct CompiledSchema {
    validator: Validator,
}

impl fmt::Debug for CompiledSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledSchema").finish_non_exhaustive()
    }
}

impl CompiledSchema {
    /// Whether `instance` satisfies the schema (the fast path: no error is built).
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance)
    }

    /// Every way `instance` fails the schema, lazily, in the validator's order. Messages
    /// never quote the instance's values (they can hold secrets).
    pub fn violations<'a>(
        &'a self,
        instance: &'a Value,
    ) -> impl Iterator<Item = SchemaViolation> + 'a {
        self.validator
            .iter_errors(instance)
            .map(|error| SchemaViolation {
                instance_path: error.instance_path().as_str().to_owned(),
                message: error.masked().to_string(),
            })
    }
}

/// One way an instance fails a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaViolation {
    /// A JSON pointer into the instance (`""` for the whole value, `/query`, `/items/0`).
    pub instance_path: String,
    /// What is wrong, with the offending value masked.
    pub message: String,
}

/// Why a schema cannot be used.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SchemaError {
    /// Where in the schema, as a JSON path relative to the schema (empty for the root).
    pub path: String,
    /// What is wrong.
    pub problem: Problem,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.problem)
        } else {
            write!(f, "{}: {}", self.path, self.problem)
        }
    }
}

impl std::error::Error for SchemaError {}

/// Compiles a schema for validation: draft 2020-12 unless `$schema` names another known
/// draft; a `$ref` outside the document, an unknown `$schema` or a schema that does not
/// compile is an error. The schema itself is not changed.
///
/// # Errors
/// A [`SchemaError`] naming the first problem and where it is: an unknown `$schema`, a
/// `$ref` outside the document, a place that breaks the draft's meta-schema, or a schema
/// that does not compile.
#[allow(
    clippy::missing_panics_doc,
    reason = "the one `expect` states an invariant: a schema that fails has a problem"
)]
pub fn compile_schema(schema: &Value) -> Result<CompiledSchema, SchemaError> {
    examine(schema, &Path::root())
        .map(|validator| CompiledSchema { validator })
        .map_err(|problems| {
            let (path, problem) = problems
                .into_iter()
                .next()
                .expect("a schema that does not compile has a problem");
            SchemaError {
                path: path.to_string(),
                problem,
            }
        })
}

/// Every problem of a schema at `path`: the dialect, each external reference, each place
/// that breaks the dialect's meta-schema, and (only when there is none of those)
/// compilation.
pub(crate) fn schema_problems(schema: &Value, path: &Path) -> Vec<(Path, Problem)> {
    examine(schema, path).err().unwrap_or_default()
}

/// At most this many meta-schema violations are reported per schema.
const MAX_META_PROBLEMS: usize = 20;

fn examine(schema: &Value, path: &Path) -> Result<Validator, Vec<(Path, Problem)>> {
    let mut problems = Vec::new();
    check_references(schema, path, &mut problems);
    if let Some(uri) = schema.get("$schema").and_then(Value::as_str)
        && Draft::default().detect(schema) == Draft::Unknown
    {
        problems.push((
            path.key("$schema"),
            Problem::UnknownDialect {
                uri: uri.to_owned(),
            },
        ));
        // No meta-schema to check the rest against.
        return Err(problems);
    }
    // The dialect is known here, so the meta-schema is one of the bundled drafts.
    if let Ok(meta) = jsonschema::meta::validator_for(schema) {
        problems.extend(
            meta.iter_errors(schema)
                .take(MAX_META_PROBLEMS)
                .map(|error| {
                    (
                        pointer_path(schema, error.instance_path().as_str(), path),
                        Problem::InvalidSchema {
                            reason: error.to_string(),
                        },
                    )
                }),
        );
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    jsonschema::options()
        .offline()
        .build(schema)
        .map_err(|error| {
            // What the meta-schema does not catch (a pattern that is not a regular
            // expression, a `$ref` to nothing), and where, as a pointer into the schema.
            let at = pointer_path(schema, error.instance_path().as_str(), path);
            vec![(
                at,
                Problem::InvalidSchema {
                    reason: error.to_string(),
                },
            )]
        })
}

/// Turns a JSON pointer into `schema` into a path under `base`.
fn pointer_path(schema: &Value, pointer: &str, base: &Path) -> Path {
    let mut path = base.clone();
    let mut node = Some(schema);
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        match (node, token.parse::<usize>()) {
            (Some(Value::Array(items)), Ok(index)) => {
                path = path.index(index);
                node = items.get(index);
            }
            _ => {
                node = node.and_then(|node| node.get(&token));
                path = path.key(&token);
            }
        }
    }
    path
}

/// Keywords whose values are instance data, not schemas: a `$ref` inside them is data.
const DATA_KEYWORDS: &[&str] = &["const", "enum", "default", "examples"];
/// Keywords whose values map names to schemas: their keys are names, not keywords.
const SCHEMA_MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
const REFERENCE_KEYWORDS: &[&str] = &["$ref", "$dynamicRef", "$recursiveRef"];

/// Finds every reference that does not start with `#`. Recursion depth is bounded by
/// serde_json's parser (128 levels), so this cannot overflow the stack.
fn check_references(schema: &Value, path: &Path, problems: &mut Vec<(Path, Problem)>) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object {
                let here = path.key(key);
                if REFERENCE_KEYWORDS.contains(&key.as_str()) {
                    if let Value::String(reference) = value
                        && !reference.starts_with('#')
                    {
                        problems.push((
                            here,
                            Problem::ExternalRef {
                                reference: reference.clone(),
                            },
                        ));
                    }
                } else if DATA_KEYWORDS.contains(&key.as_str()) {
                    continue;
                } else if SCHEMA_MAPS.contains(&key.as_str()) {
                    if let Value::Object(map) = value {
                        for (name, subschema) in map {
                            check_references(subschema, &here.key(name), problems);
                        }
                    }
                } else {
                    check_references(value, &here, problems);
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                check_references(item, &path.index(index), problems);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn local_references_compile() {
        let schema = json!({
            "type": "object",
            "$defs": {"id": {"type": "string"}},
            "properties": {"id": {"$ref": "#/$defs/id"}, "$ref": {"type": "string"}}
        });
        let validator = compile_schema(&schema).expect("compiles");
        assert!(validator.is_valid(&json!({"id": "a"})));
        assert!(!validator.is_valid(&json!({"id": 1})));
    }

    #[test]
    fn violations_have_instance_paths_and_masked_messages() {
        let schema = json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}, "s": {"enum": ["a", "b"]}}
        });
        let compiled = compile_schema(&schema).unwrap();
        let instance = json!({"n": "sk-secret-1", "s": "sk-secret-2"});
        let mut violations: Vec<_> = compiled.violations(&instance).collect();
        violations.sort_by(|a, b| a.instance_path.cmp(&b.instance_path));
        let paths: Vec<_> = violations
            .iter()
            .map(|v| v.instance_path.as_str())
            .collect();
        assert_eq!(paths, ["/n", "/s"]);
        for violation in &violations {
            assert!(!violation.message.contains("sk-secret"), "{violation:?}");
        }
        assert_eq!(compiled.violations(&json!({"n": 1})).count(), 0);
    }

    #[test]
    fn external_references_are_refused_with_their_path() {
        let schema = json!({
            "type": "object",
            "properties": {"user": {"$ref": "https://example.com/user.json"}},
            "enum": [{"$ref": "data, not a reference"}]
        });
        let error = compile_schema(&schema).unwrap_err();
        assert_eq!(error.path, "properties.user.$ref");
        assert_eq!(
            error.problem,
            Problem::ExternalRef {
                reference: "https://example.com/user.json".into()
            }
        );
    }

    #[test]
    fn draft_is_2020_12_unless_schema_says_otherwise() {
        // prefixItems is a 2020-12 keyword: it constrains tuples by default...
        let schema = json!({"type": "array", "prefixItems": [{"type": "string"}]});
        assert!(!compile_schema(&schema).unwrap().is_valid(&json!([1])));
        // ...and means nothing to draft 7.
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "array",
            "prefixItems": [{"type": "string"}]
        });
        assert!(compile_schema(&schema).unwrap().is_valid(&json!([1])));
    }

    #[test]
    fn unknown_dialect_is_an_error() {
        let schema = json!({"$schema": "https://example.com/my-dialect", "type": "object"});
        assert!(matches!(
            compile_schema(&schema).unwrap_err().problem,
            Problem::UnknownDialect { .. }
        ));
    }
}
