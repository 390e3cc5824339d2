//! Loading: bytes -> JSON -> validated bindings, collecting every problem on the way.

mod auth;
mod gateway;

use std::{collections::HashMap, sync::LazyLock};

use regex::Regex;
use serde_json::Value;

use crate::{
    binding::{
        DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_SECONDS, EnvValue, HostConfig, HttpTarget,
        JsonObject, MAX_MAX_OUTPUT_BYTES, MAX_TIMEOUT_SECONDS, McpEra, McpServer, McpTarget,
        ResultContent, StdioCommand, Target, ToolBinding,
    },
    error::{ConfigError, ConfigErrors, Problem, Warning, WarningKind},
    parse::{Duplicate, parse},
    path::Path,
    schema::schema_problems,
};

/// The largest host config accepted, in bytes (64 MiB). [`HostConfig::from_json_bytes`]
/// refuses a larger input; a reader should stop after `MAX_CONFIG_BYTES + 1` bytes, so
/// that memory stays bounded however large the file is.
pub const MAX_CONFIG_BYTES: usize = 64 * 1024 * 1024;

/// The UTF-8 byte-order mark some editors write at the start of a file.
const BYTE_ORDER_MARK: &[u8] = b"\xEF\xBB\xBF";

/// A config that loaded, and what deserves a look in it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Loaded {
    /// The validated config.
    pub config: HostConfig,
    /// Warnings, in document order.
    pub warnings: Vec<Warning>,
}

/// The fields of a tool binding, in the order the spec prints them.
const BINDING_FIELDS: &[&str] = &[
    "name",
    "description",
    "input_schema",
    "output_schema",
    "url",
    "command",
    "mcp_tool",
    "token_env",
    "auth",
    "tenants",
    "timeout_seconds",
    "max_output_bytes",
    "result_content",
    "tasks",
    "era",
    "inspect_session",
];
/// The values of `era`.
const ERAS: &[&str] = &["2025-11-25", "2026-07-28"];
/// The values of `result_content`.
const RESULT_CONTENT: &[&str] = &["once", "both", "structured", "content"];
const COMMAND_FIELDS: &[&str] = &["program", "args", "env", "cwd", "inherit_env"];

static NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z0-9_-]{1,64}$").expect("valid regex"));
static ENV_NAME: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^[A-Za-z_][A-Za-z0-9_]*$").expect("valid regex"));

impl HostConfig {
    /// Loads a host config from JSON bytes, reading the process environment for the
    /// `token_env` warnings.
    ///
    /// # Errors
    /// [`ConfigErrors`], every problem at once, each with its JSON path: bytes that are not
    /// UTF-8, more than [`MAX_CONFIG_BYTES`], not one JSON document, or a repeated key in a
    /// binding; a `tools` array that is missing or not an array; and each binding that does
    /// not validate (an unknown or missing field, a value of the wrong type or out of
    /// range, a repeated name, a schema that does not compile).
    pub fn from_json_bytes(bytes: &[u8]) -> Result<Loaded, ConfigErrors> {
        Self::from_json_bytes_with_env(bytes, |name| std::env::var_os(name).is_some())
    }

    /// Loads a host config from JSON bytes; `is_set` says whether an environment variable
    /// is set (only used for warnings: tokens are read at call time).
    ///
    /// The bytes are UTF-8 (a leading byte-order mark is skipped), at most
    /// [`MAX_CONFIG_BYTES`], and one JSON document in which no object in `tools` repeats a
    /// key: a repeated key is a problem, reported with its path, not silently resolved.
    ///
    /// # Errors
    /// [`ConfigErrors`], every problem at once, each with its JSON path: bytes that are not
    /// UTF-8, more than [`MAX_CONFIG_BYTES`], not one JSON document, or a repeated key in a
    /// binding; a `tools` array that is missing or not an array; and each binding that does
    /// not validate (an unknown or missing field, a value of the wrong type or out of
    /// range, a repeated name, a schema that does not compile).
    pub fn from_json_bytes_with_env(
        bytes: &[u8],
        is_set: impl Fn(&str) -> bool,
    ) -> Result<Loaded, ConfigErrors> {
        let root = Path::root();
        if bytes.len() > MAX_CONFIG_BYTES {
            return Err(single(
                &root,
                Problem::TooLarge {
                    max: MAX_CONFIG_BYTES,
                },
            ));
        }
        let (bom, bytes) = match bytes.strip_prefix(BYTE_ORDER_MARK) {
            Some(rest) => (BYTE_ORDER_MARK.len(), rest),
            None => (0, bytes),
        };
        let text = std::str::from_utf8(bytes).map_err(|error| {
            single(
                &root,
                Problem::NotUtf8 {
                    offset: bom + error.valid_up_to(),
                },
            )
        })?;
        if text.trim().is_empty() {
            return Err(single(&root, Problem::EmptyDocument));
        }
        let parsed = parse(text).map_err(|error| {
            let reason = error.to_string();
            // serde_json appends " at line L column C"; keep only the reason.
            let reason = reason
                .rsplit_once(" at line ")
                .map_or(reason.as_str(), |(reason, _)| reason)
                .to_owned();
            single(
                &root,
                Problem::NotJson {
                    reason,
                    line: error.line(),
                    column: error.column(),
                },
            )
        })?;
        let mut loader = Loader::new(&is_set);
        for duplicate in parsed.duplicates {
            match duplicate.path.binding_index() {
                Some(index) => loader.duplicates.entry(index).or_default().push(duplicate),
                None => loader.other_duplicates.push(duplicate),
            }
        }
        loader.unlisted_duplicates = parsed.unlisted;
        loader.load(&parsed.value)
    }

    /// Loads a host config from a parsed JSON document (which cannot hold a repeated key
    /// any more: check bytes with [`from_json_bytes`](Self::from_json_bytes)).
    ///
    /// # Errors
    /// [`ConfigErrors`], every problem at once, as
    /// [`from_json_bytes`](Self::from_json_bytes) reports them (but a repeated key, which
    /// a parsed document no longer shows).
    pub fn from_json_value_with_env(
        value: &Value,
        is_set: impl Fn(&str) -> bool,
    ) -> Result<Loaded, ConfigErrors> {
        Loader::new(&is_set).load(value)
    }
}

/// A host config inside a host's own serde config (`brain: HostConfig` in its own struct):
/// the value is validated exactly as [`HostConfig::from_json_bytes`] validates a
/// document, and every problem is reported, each with its path inside that value. What
/// serde cannot give: repeated keys (serde keeps the last one, so they are not seen) and
/// the warnings (deserialize a [`Loaded`] to keep them).
impl<'de> serde::Deserialize<'de> for HostConfig {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Loaded::deserialize(deserializer).map(|loaded| loaded.config)
    }
}

/// A host config and its warnings, inside a host's own serde config (see
/// [`HostConfig`]'s `Deserialize`).
impl<'de> serde::Deserialize<'de> for Loaded {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        HostConfig::from_json_value_with_env(&value, |name| std::env::var_os(name).is_some())
            .map_err(serde::de::Error::custom)
    }
}

impl<'a> Loader<'a> {
    fn new(is_set: &'a dyn Fn(&str) -> bool) -> Self {
        Self {
            errors: Vec::new(),
            warnings: Vec::new(),
            is_set,
            duplicates: HashMap::new(),
            other_duplicates: Vec::new(),
            unlisted_duplicates: 0,
        }
    }

    fn load(mut self, value: &Value) -> Result<Loaded, ConfigErrors> {
        for duplicate in std::mem::take(&mut self.other_duplicates) {
            self.duplicate(duplicate, None);
        }
        let config = self.document(value);
        // Every binding with a repeated key is an object in a `tools` array, which the
        // walk always reaches; this is only a safety net.
        let mut rest: Vec<Duplicate> = self.duplicates.drain().flat_map(|(_, d)| d).collect();
        rest.sort_by_key(|d| d.path.binding_index());
        for duplicate in rest {
            self.duplicate(duplicate, None);
        }
        if self.unlisted_duplicates > 0 {
            let count = self.unlisted_duplicates;
            self.error(&Path::root(), None, Problem::MoreDuplicateKeys { count });
        }
        if self.errors.is_empty() {
            Ok(Loaded {
                config,
                warnings: self.warnings,
            })
        } else {
            Err(ConfigErrors::new(self.errors))
        }
    }
}

fn single(path: &Path, problem: Problem) -> ConfigErrors {
    ConfigErrors::new(vec![ConfigError::new(path, None, problem)])
}

pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_u64() || n.is_i64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What [`Loader::non_empty_unique`] reports, for one kind of list.
struct UniqueStrings {
    /// The list is empty.
    empty: Problem,
    /// An item repeats the one at this index.
    repeated: fn(usize) -> Problem,
    /// What is wrong with a non-empty string besides a repeat, if anything.
    bad: fn(&str) -> Option<Problem>,
}

struct Loader<'a> {
    errors: Vec<ConfigError>,
    warnings: Vec<Warning>,
    is_set: &'a dyn Fn(&str) -> bool,
    /// Repeated keys inside `tools[i]`, by `i`, reported with the binding.
    duplicates: HashMap<usize, Vec<Duplicate>>,
    /// Repeated keys elsewhere (`tools` itself), reported first.
    other_duplicates: Vec<Duplicate>,
    /// Repeated keys past the listed ones.
    unlisted_duplicates: usize,
}

/// A binding being checked: its path, its fields and, once known, its name.
struct Fields<'o> {
    path: Path,
    object: &'o JsonObject,
    tool: Option<String>,
}

impl Fields<'_> {
    fn at(&self, field: &str) -> Path {
        self.path.key(field)
    }
}

impl Loader<'_> {
    fn error(&mut self, path: &Path, tool: Option<&str>, problem: Problem) {
        self.errors.push(ConfigError::new(path, tool, problem));
    }

    fn duplicate(&mut self, duplicate: Duplicate, tool: Option<&str>) {
        self.error(
            &duplicate.path,
            tool,
            Problem::DuplicateKey {
                count: duplicate.count,
            },
        );
    }

    fn document(&mut self, value: &Value) -> HostConfig {
        let root = Path::root();
        let Value::Object(object) = value else {
            self.error(
                &root,
                None,
                Problem::WrongType {
                    expected: "an object",
                    found: type_name(value),
                },
            );
            return HostConfig::default();
        };
        let path = root.key("tools");
        let tools = match object.get("tools") {
            None => {
                self.error(
                    &path,
                    None,
                    Problem::Missing {
                        what: r#"a "tools" array (use [] for none)"#,
                    },
                );
                return HostConfig::default();
            }
            Some(Value::Array(tools)) => tools,
            Some(other) => {
                self.error(
                    &path,
                    None,
                    Problem::WrongType {
                        expected: "an array",
                        found: type_name(other),
                    },
                );
                return HostConfig::default();
            }
        };
        let mut names: HashMap<&str, usize> = HashMap::with_capacity(tools.len());
        let mut bindings = Vec::with_capacity(tools.len());
        for (index, value) in tools.iter().enumerate() {
            let path = path.index(index);
            let binding = self.binding(index, &path, value);
            if let Some(name) = value.get("name").and_then(Value::as_str)
                && NAME.is_match(name)
            {
                if let Some(&first) = names.get(name) {
                    self.error(
                        &path.key("name"),
                        Some(name),
                        Problem::DuplicateName { first },
                    );
                } else {
                    names.insert(name, index);
                }
            }
            bindings.extend(binding);
        }
        HostConfig {
            tools: bindings,
            gateway: self.gateway(object.get("gateway")),
        }
    }

    fn binding(&mut self, index: usize, path: &Path, value: &Value) -> Option<ToolBinding> {
        let Value::Object(object) = value else {
            self.error(
                path,
                None,
                Problem::WrongType {
                    expected: "an object",
                    found: type_name(value),
                },
            );
            return None;
        };
        let errors_before = self.errors.len();
        let mut fields = Fields {
            path: path.clone(),
            object,
            tool: None,
        };
        let name = self.name(&mut fields);
        let tool = fields.tool.clone();
        let tool = tool.as_deref();
        for duplicate in self.duplicates.remove(&index).unwrap_or_default() {
            self.duplicate(duplicate, tool);
        }

        for key in object.keys() {
            if !BINDING_FIELDS.contains(&key.as_str()) {
                self.error(
                    &fields.at(key),
                    tool,
                    Problem::UnknownField {
                        object: "a tool binding",
                        suggestion: suggest(key, BINDING_FIELDS),
                        allowed: BINDING_FIELDS,
                    },
                );
            }
        }

        let description = self
            .optional_string(&fields, "description")
            .unwrap_or_default();
        let input_schema = self.input_schema(&fields);
        let output_schema = self.output_schema(&fields);
        let tenants = self.tenants(&fields);
        let timeout_seconds = self.integer(
            &fields,
            "timeout_seconds",
            1,
            MAX_TIMEOUT_SECONDS,
            DEFAULT_TIMEOUT_SECONDS,
        );
        let max_output_bytes = self.integer(
            &fields,
            "max_output_bytes",
            1,
            MAX_MAX_OUTPUT_BYTES,
            DEFAULT_MAX_OUTPUT_BYTES,
        );
        let result_content = self.result_content(&fields);
        let tasks = self.tasks(&fields);
        let era = self.era(&fields);
        let mut target = self.target(&fields);
        if let (Some(Target::Mcp(mcp)), Some(tasks), Some(era)) = (&mut target, tasks, era) {
            mcp.tasks = tasks;
            mcp.era = era;
        }

        if self.errors.len() > errors_before {
            return None;
        }
        Some(ToolBinding {
            name: name?,
            description,
            input_schema: input_schema?,
            output_schema: output_schema?,
            tenants: tenants?,
            timeout_seconds: timeout_seconds?,
            max_output_bytes: max_output_bytes?,
            result_content: result_content?,
            target: target?,
        })
    }

    /// Whether `field` is present on an MCP binding: false when absent, and when present
    /// on another binding (an error saying `fix`).
    fn on_mcp_binding(&mut self, fields: &Fields<'_>, field: &str, fix: &'static str) -> bool {
        if !fields.object.contains_key(field) {
            return false;
        }
        if !fields.object.contains_key("mcp_tool") {
            self.error(
                &fields.at(field),
                fields.tool.as_deref(),
                Problem::NotApplicable {
                    reason: "applies to MCP bindings only",
                    fix,
                },
            );
            return false;
        }
        true
    }

    /// `tasks`: a boolean, on an MCP binding; true when absent.
    fn tasks(&mut self, fields: &Fields<'_>) -> Option<bool> {
        let fix = "remove it; for an HTTP tool, the host's executor decides how a call waits";
        if !self.on_mcp_binding(fields, "tasks", fix) {
            return (!fields.object.contains_key("tasks")).then_some(true);
        }
        self.optional_bool(fields, "tasks")
    }

    /// `era`: one of [`ERAS`], on an MCP binding; `None` when absent.
    fn era(&mut self, fields: &Fields<'_>) -> Option<Option<McpEra>> {
        if !self.on_mcp_binding(fields, "era", "remove it") {
            return (!fields.object.contains_key("era")).then_some(None);
        }
        let value = self.optional_string(fields, "era")?;
        match value.as_str() {
            "2025-11-25" => Some(Some(McpEra::Legacy)),
            "2026-07-28" => Some(Some(McpEra::Modern)),
            _ => {
                let path = fields.at("era");
                self.error(
                    &path,
                    fields.tool.as_deref(),
                    Problem::NotOneOf { allowed: ERAS },
                );
                None
            }
        }
    }

    /// `result_content`: one of [`RESULT_CONTENT`], on an MCP binding; `once` when absent.
    fn result_content(&mut self, fields: &Fields<'_>) -> Option<ResultContent> {
        let fix = "remove it; for an HTTP tool, the host's executor says what the model reads";
        if !self.on_mcp_binding(fields, "result_content", fix) {
            return (!fields.object.contains_key("result_content")).then_some(ResultContent::Once);
        }
        let path = fields.at("result_content");
        let tool = fields.tool.as_deref();
        let value = self.optional_string(fields, "result_content")?;
        match value.as_str() {
            "once" => Some(ResultContent::Once),
            "both" => Some(ResultContent::Both),
            "structured" => Some(ResultContent::Structured),
            "content" => Some(ResultContent::Content),
            _ => {
                self.error(
                    &path,
                    tool,
                    Problem::NotOneOf {
                        allowed: RESULT_CONTENT,
                    },
                );
                None
            }
        }
    }

    fn name(&mut self, fields: &mut Fields<'_>) -> Option<String> {
        let path = fields.at("name");
        let name = self.required_string(fields, "name", "the name the model sees")?;
        if !NAME.is_match(&name) {
            self.error(&path, None, Problem::BadName);
            return None;
        }
        fields.tool = Some(name.clone());
        Some(name)
    }

    fn required_string(
        &mut self,
        fields: &Fields<'_>,
        field: &str,
        what: &'static str,
    ) -> Option<String> {
        let path = fields.at(field);
        match fields.object.get(field) {
            None => {
                self.error(&path, fields.tool.as_deref(), Problem::Missing { what });
                None
            }
            Some(_) => {
                let value = self.optional_string(fields, field)?;
                if value.is_empty() {
                    self.error(&path, fields.tool.as_deref(), Problem::EmptyString);
                    return None;
                }
                Some(value)
            }
        }
    }

    /// `Some(value)` when the field is a string, `None` when it is absent or has a wrong
    /// type (reported).
    fn optional_string(&mut self, fields: &Fields<'_>, field: &str) -> Option<String> {
        match fields.object.get(field)? {
            Value::String(value) => Some(value.clone()),
            other => {
                self.error(
                    &fields.at(field),
                    fields.tool.as_deref(),
                    Problem::WrongType {
                        expected: "a string",
                        found: type_name(other),
                    },
                );
                None
            }
        }
    }

    /// `Some(value)` when the field is a boolean, `None` when it is absent or has a wrong
    /// type (reported).
    fn optional_bool(&mut self, fields: &Fields<'_>, field: &str) -> Option<bool> {
        match fields.object.get(field)? {
            Value::Bool(value) => Some(*value),
            other => {
                self.error(
                    &fields.at(field),
                    fields.tool.as_deref(),
                    Problem::WrongType {
                        expected: "a boolean",
                        found: type_name(other),
                    },
                );
                None
            }
        }
    }

    fn input_schema(&mut self, fields: &Fields<'_>) -> Option<JsonObject> {
        let path = fields.at("input_schema");
        let tool = fields.tool.as_deref();
        let Some(value) = fields.object.get("input_schema") else {
            self.error(
                &path,
                tool,
                Problem::Missing {
                    what: r#"a JSON Schema for the arguments, e.g. {"type": "object"}"#,
                },
            );
            return None;
        };
        let schema = self.schema_object(&path, tool, value)?;
        match schema.get("type") {
            Some(Value::String(kind)) if kind == "object" => {}
            Some(_) => {
                self.error(&path.key("type"), tool, Problem::NotObjectSchema);
                return None;
            }
            None => {
                self.error(&path, tool, Problem::NotObjectSchema);
                return None;
            }
        }
        self.compile(&path, tool, value)?;
        Some(schema.clone())
    }

    /// `Some(None)` when absent, `Some(Some(schema))` when valid, `None` when reported.
    fn output_schema(&mut self, fields: &Fields<'_>) -> Option<Option<JsonObject>> {
        let path = fields.at("output_schema");
        let tool = fields.tool.as_deref();
        let Some(value) = fields.object.get("output_schema") else {
            return Some(None);
        };
        let schema = self.schema_object(&path, tool, value)?;
        self.compile(&path, tool, value)?;
        Some(Some(schema.clone()))
    }

    fn schema_object<'v>(
        &mut self,
        path: &Path,
        tool: Option<&str>,
        value: &'v Value,
    ) -> Option<&'v JsonObject> {
        match value {
            Value::Object(schema) => Some(schema),
            other => {
                self.error(
                    path,
                    tool,
                    Problem::WrongType {
                        expected: "a JSON Schema object",
                        found: type_name(other),
                    },
                );
                None
            }
        }
    }

    fn compile(&mut self, path: &Path, tool: Option<&str>, schema: &Value) -> Option<()> {
        let problems = schema_problems(schema, path);
        let ok = problems.is_empty();
        for (path, problem) in problems {
            self.error(&path, tool, problem);
        }
        ok.then_some(())
    }

    fn tenants(&mut self, fields: &Fields<'_>) -> Option<Vec<String>> {
        let path = fields.at("tenants");
        let tool = fields.tool.as_deref();
        let items = match fields.object.get("tenants") {
            None => {
                self.error(
                    &path,
                    tool,
                    Problem::Missing {
                        what: r#"the tenants that may use the tool, e.g. ["local"]"#,
                    },
                );
                return None;
            }
            Some(Value::Array(items)) => items,
            Some(other) => {
                self.error(
                    &path,
                    tool,
                    Problem::WrongType {
                        expected: "an array of tenant names",
                        found: type_name(other),
                    },
                );
                return None;
            }
        };
        self.non_empty_unique(
            &path,
            tool,
            items,
            UniqueStrings {
                empty: Problem::NoTenants,
                repeated: |first| Problem::DuplicateTenant { first },
                bad: |_| None,
            },
        )
    }

    /// A non-empty list of unique, non-empty strings (a binding's `tenants`, a grant's
    /// `scopes`), every problem reported at its item: `None` when one was.
    fn non_empty_unique(
        &mut self,
        path: &Path,
        tool: Option<&str>,
        items: &[Value],
        rules: UniqueStrings,
    ) -> Option<Vec<String>> {
        if items.is_empty() {
            self.error(path, tool, rules.empty);
            return None;
        }
        let mut strings = Vec::with_capacity(items.len());
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut ok = true;
        for (index, item) in items.iter().enumerate() {
            let problem = match item {
                Value::String(string) if string.is_empty() => Problem::EmptyString,
                Value::String(string) => match (rules.bad)(string) {
                    Some(problem) => problem,
                    None => match seen.get(string.as_str()) {
                        Some(&first) => (rules.repeated)(first),
                        None => {
                            seen.insert(string, index);
                            strings.push(string.clone());
                            continue;
                        }
                    },
                },
                other => Problem::WrongType {
                    expected: "a string",
                    found: type_name(other),
                },
            };
            self.error(&path.index(index), tool, problem);
            ok = false;
        }
        ok.then_some(strings)
    }

    fn integer(
        &mut self,
        fields: &Fields<'_>,
        field: &str,
        min: u64,
        max: u64,
        default: u64,
    ) -> Option<u64> {
        let Some(value) = fields.object.get(field) else {
            return Some(default);
        };
        let path = fields.at(field);
        let tool = fields.tool.as_deref();
        let out_of_range = Problem::OutOfRange {
            min,
            max,
            example: default,
        };
        match value {
            Value::Number(number) => match number.as_u64() {
                Some(n) if (min..=max).contains(&n) => Some(n),
                Some(_) => {
                    self.error(&path, tool, out_of_range);
                    None
                }
                None if number.is_i64() => {
                    self.error(&path, tool, out_of_range);
                    None
                }
                // JSON Schema's integer: a number with a zero fractional part (`5.0`).
                None if number.as_f64().is_some_and(|n| n.fract() == 0.0) => {
                    let n = number.as_f64().unwrap_or_default();
                    if (min as f64..=max as f64).contains(&n) {
                        Some(n as u64)
                    } else {
                        self.error(&path, tool, out_of_range);
                        None
                    }
                }
                None => {
                    self.error(
                        &path,
                        tool,
                        Problem::WrongType {
                            expected: "an integer",
                            found: "a number with a fraction",
                        },
                    );
                    None
                }
            },
            other => {
                self.error(
                    &path,
                    tool,
                    Problem::WrongType {
                        expected: "an integer",
                        found: type_name(other),
                    },
                );
                None
            }
        }
    }

    fn target(&mut self, fields: &Fields<'_>) -> Option<Target> {
        let tool = fields.tool.as_deref();
        let is_mcp = fields.object.contains_key("mcp_tool");
        let has_url = fields.object.contains_key("url");
        let has_command = fields.object.contains_key("command");
        let has_auth = fields.object.contains_key("auth");
        let mcp_tool = if is_mcp {
            self.required_string(fields, "mcp_tool", "the tool's name on the MCP server")
        } else {
            None
        };
        let token_env = if has_command {
            Some(None)
        } else {
            self.token_env(fields)
        };

        if is_mcp && fields.object.contains_key("inspect_session") {
            self.error(
                &fields.at("inspect_session"),
                tool,
                Problem::InspectSessionOnMcp,
            );
        }
        if has_command && !is_mcp {
            self.error(&fields.at("command"), tool, Problem::CommandWithoutMcpTool);
        }
        if has_auth && has_command {
            self.error(&fields.at("auth"), tool, Problem::AuthOnStdio);
        } else if has_auth && !is_mcp {
            self.error(&fields.at("auth"), tool, Problem::AuthOnHttpTool);
        }
        // An HTTP MCP binding's auth, checked whole even when something else is wrong.
        let auth = if has_auth && is_mcp && !has_command {
            if fields.object.contains_key("token_env") {
                self.error(&fields.path, tool, Problem::AuthAndTokenEnv);
            }
            self.auth(fields).map(Some)
        } else {
            Some(None)
        };
        if has_url && has_command {
            self.error(&fields.path, tool, Problem::UrlAndCommand);
            return None;
        }
        if has_command {
            if fields.object.contains_key("token_env") {
                self.error(&fields.at("token_env"), tool, Problem::TokenEnvOnStdio);
            }
            let command = self.command(fields)?;
            return Some(Target::Mcp(McpTarget::new(
                McpServer::Stdio(command),
                mcp_tool?,
            )));
        }
        if !has_url {
            if is_mcp {
                self.error(&fields.path, tool, Problem::NoEndpoint);
            } else {
                self.error(
                    &fields.at("url"),
                    tool,
                    Problem::Missing {
                        what: "the tool's endpoint URL",
                    },
                );
            }
            return None;
        }
        let sends_token = matches!(token_env, Some(Some(_))) || matches!(auth, Some(Some(_)));
        let url = self.url(fields, sends_token, is_mcp);
        let (url, token_env) = (url?, token_env?);
        if is_mcp {
            Some(Target::Mcp(McpTarget::new(
                McpServer::Http {
                    url,
                    token_env,
                    auth: auth?,
                },
                mcp_tool?,
            )))
        } else {
            let inspect_session = match fields.object.get("inspect_session") {
                None => None,
                Some(Value::Bool(inspect)) => Some(*inspect),
                Some(other) => {
                    self.error(
                        &fields.at("inspect_session"),
                        tool,
                        Problem::WrongType {
                            expected: "a boolean",
                            found: type_name(other),
                        },
                    );
                    return None;
                }
            };
            Some(Target::Http(HttpTarget {
                url,
                token_env,
                inspect_session,
            }))
        }
    }

    /// `Some(None)` when absent, `Some(Some(name))` when valid, `None` when reported.
    fn token_env(&mut self, fields: &Fields<'_>) -> Option<Option<String>> {
        if !fields.object.contains_key("token_env") {
            return Some(None);
        }
        let path = fields.at("token_env");
        let name = self.optional_string(fields, "token_env")?;
        if !ENV_NAME.is_match(&name) {
            self.error(&path, fields.tool.as_deref(), Problem::BadTokenEnv);
            return None;
        }
        if !(self.is_set)(&name) {
            self.warnings.push(Warning::new(
                &path,
                fields.tool.as_deref(),
                WarningKind::TokenEnvUnset {
                    variable: name.clone(),
                },
            ));
        }
        Some(Some(name))
    }

    /// The binding's `url`; `sends_token` when a bearer token goes with every request,
    /// `is_mcp` for an MCP binding (whose client sets `Authorization` itself).
    fn url(&mut self, fields: &Fields<'_>, sends_token: bool, is_mcp: bool) -> Option<String> {
        let path = fields.at("url");
        let tool = fields.tool.as_deref();
        let text = self.optional_string(fields, "url")?;
        // The URL parser forgives what a browser's address bar forgives (spaces around it,
        // tabs and line breaks removed, `\` for `/`, `http:/host`); a config names exactly
        // the URL requests go to, so those are refused rather than repaired.
        if let Some(reason) = unforgiven(&text) {
            self.error(
                &path,
                tool,
                Problem::BadUrl {
                    reason: reason.into(),
                },
            );
            return None;
        }
        let url = match url::Url::parse(&text) {
            Ok(url) if url.port() == Some(0) => {
                self.error(
                    &path,
                    tool,
                    Problem::BadUrl {
                        reason: "port 0".into(),
                    },
                );
                return None;
            }
            Ok(url) => url,
            Err(error) => {
                self.error(
                    &path,
                    tool,
                    Problem::BadUrl {
                        reason: error.to_string(),
                    },
                );
                return None;
            }
        };
        match url.scheme() {
            "https" => {}
            "http" => {
                if sends_token && !is_loopback(&url) {
                    self.warnings.push(Warning::new(
                        &path,
                        tool,
                        WarningKind::PlainHttpToken {
                            host: url.host_str().unwrap_or_default().to_owned(),
                        },
                    ));
                }
            }
            scheme => {
                self.error(
                    &path,
                    tool,
                    Problem::UrlScheme {
                        scheme: scheme.to_owned(),
                    },
                );
                return None;
            }
        }
        if url.host_str().is_none_or(str::is_empty) {
            self.error(
                &path,
                tool,
                Problem::BadUrl {
                    reason: "no host".into(),
                },
            );
            return None;
        }
        if is_mcp && has_user_info(&url) {
            self.error(
                &path,
                tool,
                Problem::UrlUserInfo {
                    without: without_user_info(url),
                    endpoint: true,
                },
            );
            return None;
        }
        Some(text)
    }

    fn command(&mut self, fields: &Fields<'_>) -> Option<StdioCommand> {
        let path = fields.at("command");
        let tool = fields.tool.clone();
        let object = match fields.object.get("command") {
            Some(Value::Object(object)) => object,
            Some(other) => {
                self.error(
                    &path,
                    tool.as_deref(),
                    Problem::WrongType {
                        expected: r#"an object like {"program": "...", "args": []}"#,
                        found: type_name(other),
                    },
                );
                return None;
            }
            None => return None,
        };
        let command = Fields {
            path: path.clone(),
            object,
            tool,
        };
        let tool = command.tool.as_deref();
        let errors_before = self.errors.len();
        for key in object.keys() {
            if !COMMAND_FIELDS.contains(&key.as_str()) {
                self.error(
                    &command.at(key),
                    tool,
                    Problem::UnknownField {
                        object: "a command",
                        suggestion: suggest(key, COMMAND_FIELDS),
                        allowed: COMMAND_FIELDS,
                    },
                );
            }
        }
        let program = self.required_string(&command, "program", "the program to run");
        let args = self.string_list(&command, "args");
        let env = self.env(&command);
        let cwd = self.optional_string(&command, "cwd");
        let inherit_env = self.optional_bool(&command, "inherit_env");
        self.operating_system_strings(&command, program.as_deref(), &args, &env, cwd.as_deref());
        if self.errors.len() > errors_before {
            return None;
        }
        Some(StdioCommand {
            program: program?,
            args,
            env,
            cwd,
            inherit_env: inherit_env.unwrap_or(false),
        })
    }

    /// What the operating system cannot take: a NUL anywhere, an environment key that is
    /// empty or holds `=` (it would set another variable than the one written).
    fn operating_system_strings(
        &mut self,
        command: &Fields<'_>,
        program: Option<&str>,
        args: &[String],
        env: &[(String, EnvValue)],
        cwd: Option<&str>,
    ) {
        let tool = command.tool.as_deref();
        let nul = |loader: &mut Self, path: Path, value: &str| {
            if value.contains('\0') {
                loader.error(&path, tool, Problem::NulCharacter);
            }
        };
        if let Some(program) = program {
            nul(self, command.at("program"), program);
        }
        for (index, arg) in args.iter().enumerate() {
            nul(self, command.at("args").index(index), arg);
        }
        for (key, value) in env {
            let path = command.at("env").key(key);
            if key.is_empty() || key.contains(['=', '\0']) {
                self.error(&path, tool, Problem::BadEnvKey);
            } else if let EnvValue::Value(value) = value {
                nul(self, path, value);
            }
        }
        if let Some(cwd) = cwd {
            nul(self, command.at("cwd"), cwd);
        }
    }

    fn string_list(&mut self, fields: &Fields<'_>, field: &str) -> Vec<String> {
        let path = fields.at(field);
        let tool = fields.tool.as_deref();
        match fields.object.get(field) {
            None => Vec::new(),
            Some(Value::Array(items)) => {
                let mut list = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    match item {
                        Value::String(item) => list.push(item.clone()),
                        other => self.error(
                            &path.index(index),
                            tool,
                            Problem::WrongType {
                                expected: "a string",
                                found: type_name(other),
                            },
                        ),
                    }
                }
                list
            }
            Some(other) => {
                self.error(
                    &path,
                    tool,
                    Problem::WrongType {
                        expected: "an array of strings",
                        found: type_name(other),
                    },
                );
                Vec::new()
            }
        }
    }

    /// `command.env`: each value a string, or `{"from_env": "NAME"}` to pass the host's
    /// variable `NAME` through (warned about when it is unset now).
    fn env(&mut self, fields: &Fields<'_>) -> Vec<(String, EnvValue)> {
        let path = fields.at("env");
        let tool = fields.tool.as_deref();
        let map = match fields.object.get("env") {
            None => return Vec::new(),
            Some(Value::Object(map)) => map,
            Some(other) => {
                self.error(
                    &path,
                    tool,
                    Problem::WrongType {
                        expected: "an object of strings",
                        found: type_name(other),
                    },
                );
                return Vec::new();
            }
        };
        let mut pairs = Vec::with_capacity(map.len());
        for (key, value) in map {
            let path = path.key(key);
            match value {
                Value::String(value) => pairs.push((key.clone(), EnvValue::Value(value.clone()))),
                Value::Object(reference) => {
                    if let Some(name) = self.env_reference(&path, tool, reference) {
                        pairs.push((key.clone(), EnvValue::FromHost(name)));
                    }
                }
                other => self.error(
                    &path,
                    tool,
                    Problem::WrongType {
                        expected: r#"a string or {"from_env": "NAME"}"#,
                        found: type_name(other),
                    },
                ),
            }
        }
        pairs
    }

    /// `{"from_env": "NAME"}`: the host variable's name, or `None` when reported.
    fn env_reference(
        &mut self,
        path: &Path,
        tool: Option<&str>,
        reference: &JsonObject,
    ) -> Option<String> {
        const FIELDS: &[&str] = &["from_env"];
        let mut ok = true;
        for key in reference
            .keys()
            .filter(|key| !FIELDS.contains(&key.as_str()))
        {
            self.error(
                &path.key(key),
                tool,
                Problem::UnknownField {
                    object: "an environment reference",
                    suggestion: suggest(key, FIELDS),
                    allowed: FIELDS,
                },
            );
            ok = false;
        }
        let path = path.key("from_env");
        let name = match reference.get("from_env") {
            Some(Value::String(name)) => name,
            Some(other) => {
                self.error(
                    &path,
                    tool,
                    Problem::WrongType {
                        expected: "a string",
                        found: type_name(other),
                    },
                );
                return None;
            }
            None => {
                self.error(
                    &path,
                    tool,
                    Problem::Missing {
                        what: r#"the host variable to pass, e.g. {"from_env": "API_KEY"}"#,
                    },
                );
                return None;
            }
        };
        if !ENV_NAME.is_match(name) {
            self.error(
                &path,
                tool,
                Problem::BadEnvName {
                    holds: "value to pass",
                    example: "API_KEY",
                },
            );
            return None;
        }
        if !(self.is_set)(name) {
            self.warnings.push(Warning::new(
                &path,
                tool,
                WarningKind::EnvFromHostUnset {
                    variable: name.clone(),
                },
            ));
        }
        ok.then(|| name.clone())
    }
}

/// Whether a URL carries a user name or password.
fn has_user_info(url: &url::Url) -> bool {
    !url.username().is_empty() || url.password().is_some()
}

/// The URL as it can be shown: without its user name and password.
fn without_user_info(mut url: url::Url) -> String {
    // Both only fail for URLs that cannot have user info, which then has none to remove.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    url.to_string()
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(domain)) => {
            domain.eq_ignore_ascii_case("localhost") || domain.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// A known field close to an unknown key: same letters ignoring case and separators, or
/// at most two edits away.
fn suggest(key: &str, known: &'static [&'static str]) -> Option<&'static str> {
    let normalize = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_ascii_alphanumeric())
            .map(|c| c.to_ascii_lowercase())
            .collect()
    };
    let wanted = normalize(key);
    known
        .iter()
        .map(|field| (field, normalize(field)))
        // At most two edits, and fewer than half of a short field's letters ("extra" is
        // no typo of "era").
        .map(|(field, known)| (field, edit_distance(&wanted, &known), known.len()))
        .filter(|(_, distance, len)| *distance <= 2 && distance * 2 < *len)
        .map(|(field, distance, _)| (field, distance))
        .min_by_key(|(_, distance)| *distance)
        .map(|(field, _)| *field)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

/// Why a URL string is refused although the URL parser would repair it, if it is.
fn unforgiven(text: &str) -> Option<&'static str> {
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some(
            "it holds a space, a tab, a line break or a control character; percent-encode it",
        );
    }
    if text.contains('\\') {
        return Some("it holds a backslash; write / or percent-encode it");
    }
    match text.split_once(':') {
        Some((scheme, rest))
            if (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
                && !rest.starts_with("//") =>
        {
            Some("the scheme is not followed by //")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(suggest("timeout", BINDING_FIELDS), None);
        assert_eq!(suggest("timeout_secs", BINDING_FIELDS), None);
        assert_eq!(
            suggest("timeoutSeconds", BINDING_FIELDS),
            Some("timeout_seconds")
        );
        assert_eq!(suggest("tenant", BINDING_FIELDS), Some("tenants"));
        assert_eq!(suggest("mcptool", BINDING_FIELDS), Some("mcp_tool"));
        assert_eq!(suggest("zzz", BINDING_FIELDS), None);
        assert_eq!(suggest("extra", BINDING_FIELDS), None);
        assert_eq!(suggest("eras", BINDING_FIELDS), Some("era"));
    }
}
