//! Who may call which tool, with which arguments, under which limits.
//!
//! A [`Policy`] is built once from a loaded host config: every schema is compiled then and
//! reused for every call. [`Policy::check`] is step 1 of the call path: it answers an
//! unknown tool and a tool the tenant may not use identically (so a model cannot probe
//! for tools it is not given), and lists every argument violation with its instance path.
//! [`Allowed::check_output`] validates structured output against `output_schema`.
//!
//! What this crate is not: it does no I/O and knows nothing of MCP.
//!
//! ```
//! use brain_tools_config::HostConfig;
//! use brain_tools_policy::{Denied, Policy};
//! use serde_json::json;
//!
//! let loaded = HostConfig::from_json_bytes(br#"{"tools": [{
//!     "name": "search", "url": "https://mcp.example.com/mcp", "mcp_tool": "search",
//!     "input_schema": {"type": "object", "required": ["query"],
//!                      "properties": {"query": {"type": "string"}}},
//!     "tenants": ["local"]
//! }]}"#).unwrap();
//! let policy = Policy::new(&loaded.config).unwrap();
//!
//! assert!(policy.check("local", "search", &json!({"query": "rust"})).is_ok());
//! assert!(matches!(policy.check("other", "search", &json!({"query": "rust"})),
//!                  Err(Denied::UnknownTool { .. })));
//! let Err(Denied::InvalidArguments { violations, .. }) =
//!     policy.check("local", "search", &json!({"query": 7})) else { panic!() };
//! assert_eq!(violations.items()[0].instance_path, "/query");
//! ```

mod limits;

use std::{collections::HashMap, fmt, sync::Arc};

use brain_tools_config::{CompiledSchema, HostConfig, SchemaError, ToolBinding, compile_schema};
use serde_json::Value;

pub use limits::Limits;

/// At most this many violations are listed; the rest are counted.
pub const MAX_LISTED_VIOLATIONS: usize = 10;

/// The compiled, read-only policy of a host config.
#[derive(Debug, Clone)]
pub struct Policy {
    tools: Arc<HashMap<String, Arc<Entry>>>,
    order: Arc<Vec<String>>,
}

struct Entry {
    binding: ToolBinding,
    input: CompiledSchema,
    output: Option<CompiledSchema>,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("tool", &self.binding.name)
            .finish_non_exhaustive()
    }
}

/// A binding whose schema does not compile (only possible for a config built by hand:
/// loading already refuses such schemas).
#[derive(Debug, thiserror::Error)]
#[error("tool {tool}: its {which} does not compile")]
#[non_exhaustive]
pub struct PolicyError {
    /// The binding's name.
    pub tool: String,
    /// `input_schema` or `output_schema`.
    pub which: &'static str,
    /// Why it does not compile.
    #[source]
    pub source: SchemaError,
}

impl Policy {
    /// Compiles every binding's schemas.
    ///
    /// # Errors
    /// A [`PolicyError`] naming the first binding whose `input_schema` or `output_schema`
    /// does not compile (a config loaded with `HostConfig::from_json_bytes` has none: it
    /// compiles them when it loads).
    pub fn new(config: &HostConfig) -> Result<Self, PolicyError> {
        let mut tools = HashMap::with_capacity(config.tools.len());
        let mut order = Vec::with_capacity(config.tools.len());
        for binding in &config.tools {
            let compile = |which: &'static str, schema: &brain_tools_config::JsonObject| {
                compile_schema(&Value::Object(schema.clone())).map_err(|source| PolicyError {
                    tool: binding.name.clone(),
                    which,
                    source,
                })
            };
            let input = compile("input_schema", &binding.input_schema)?;
            let output = binding
                .output_schema
                .as_ref()
                .map(|schema| compile("output_schema", schema))
                .transpose()?;
            order.push(binding.name.clone());
            tools.insert(
                binding.name.clone(),
                Arc::new(Entry {
                    binding: binding.clone(),
                    input,
                    output,
                }),
            );
        }
        Ok(Self {
            tools: Arc::new(tools),
            order: Arc::new(order),
        })
    }

    /// The bindings a tenant may use, in config order.
    pub fn tools_for<'a>(&'a self, tenant: &'a str) -> impl Iterator<Item = &'a ToolBinding> + 'a {
        self.order
            .iter()
            .filter_map(|name| self.tools.get(name))
            .map(|entry| &entry.binding)
            .filter(move |binding| binding.tenants.iter().any(|t| t == tenant))
    }

    /// Step 1 of a call: the tool exists, the tenant may use it, and the arguments are a
    /// JSON object that validates against `input_schema`.
    ///
    /// # Errors
    /// [`Denied::UnknownTool`] when there is no such tool or the tenant may not use it
    /// (the same answer, on purpose); [`Denied::InvalidArguments`], with every violation
    /// and its instance path, when the arguments are not an object that satisfies
    /// `input_schema`.
    pub fn check(&self, tenant: &str, tool: &str, arguments: &Value) -> Result<Allowed, Denied> {
        let entry = self
            .tools
            .get(tool)
            .filter(|entry| entry.binding.tenants.iter().any(|t| t == tenant))
            .ok_or_else(|| Denied::UnknownTool {
                tool: tool.to_owned(),
            })?;
        let violations = Violations::collect(&entry.input, arguments);
        if !violations.is_empty() {
            return Err(Denied::InvalidArguments {
                tool: tool.to_owned(),
                violations,
            });
        }
        Ok(Allowed {
            entry: Arc::clone(entry),
        })
    }
}

/// A call that passed the check: the binding and its limits.
#[derive(Debug, Clone)]
pub struct Allowed {
    entry: Arc<Entry>,
}

impl Allowed {
    /// The binding being called.
    pub fn binding(&self) -> &ToolBinding {
        &self.entry.binding
    }

    /// The call's limits.
    pub fn limits(&self) -> Limits {
        Limits::of(&self.entry.binding)
    }

    /// Whether the binding declares an `output_schema`.
    pub fn has_output_schema(&self) -> bool {
        self.entry.output.is_some()
    }

    /// Validates a result's `structuredContent` against `output_schema`. A binding without
    /// one accepts anything; a binding with one requires structured content.
    ///
    /// # Errors
    /// The [`Violations`] of structured content that does not satisfy `output_schema`, or
    /// its absence when the binding has one.
    pub fn check_output(&self, structured: Option<&Value>) -> Result<(), Violations> {
        let Some(validator) = &self.entry.output else {
            return Ok(());
        };
        match structured {
            Some(value) => {
                let violations = Violations::collect(validator, value);
                if violations.is_empty() {
                    Ok(())
                } else {
                    Err(violations)
                }
            }
            None => Err(Violations {
                items: vec![Violation {
                    instance_path: String::new(),
                    message: "the result has no structured content".into(),
                }],
                total: 1,
            }),
        }
    }
}

/// Why a call may not proceed. Both answers happen before anything touches the network.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Denied {
    /// No such tool for this tenant: the tool does not exist, or the tenant may not use it
    /// (the two are indistinguishable on purpose).
    UnknownTool {
        /// The requested name.
        tool: String,
    },
    /// The arguments do not satisfy `input_schema`.
    InvalidArguments {
        /// The tool's name.
        tool: String,
        /// Every violation (the first [`MAX_LISTED_VIOLATIONS`] listed).
        violations: Violations,
    },
}

impl fmt::Display for Denied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Denied::UnknownTool { tool } => write!(f, "there is no tool named {tool}"),
            Denied::InvalidArguments { tool, violations } => {
                write!(f, "the arguments for {tool} are invalid: {violations}")
            }
        }
    }
}

impl std::error::Error for Denied {}

/// Schema violations, each with the instance path where it happened. Messages never
/// quote the offending values (arguments can hold secrets).
#[derive(Debug, Clone, PartialEq)]
pub struct Violations {
    items: Vec<Violation>,
    total: usize,
}

impl Violations {
    fn collect(schema: &CompiledSchema, instance: &Value) -> Self {
        // The common case, valid input, takes the validator's fast path.
        if schema.is_valid(instance) {
            return Self {
                items: Vec::new(),
                total: 0,
            };
        }
        let mut items = Vec::new();
        let mut total = 0;
        for violation in schema.violations(instance) {
            total += 1;
            if items.len() < MAX_LISTED_VIOLATIONS {
                items.push(Violation {
                    instance_path: violation.instance_path,
                    message: violation.message,
                });
            }
        }
        Self { items, total }
    }

    /// The listed violations (at most [`MAX_LISTED_VIOLATIONS`]).
    pub fn items(&self) -> &[Violation] {
        &self.items
    }

    /// How many violations there are, listed or not.
    pub fn total(&self) -> usize {
        self.total
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}

impl fmt::Display for Violations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, violation) in self.items.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{violation}")?;
        }
        let unlisted = self.total - self.items.len();
        if unlisted > 0 {
            write!(f, "; and {unlisted} more")?;
        }
        Ok(())
    }
}

/// One schema violation.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Violation {
    /// A JSON pointer into the instance (`""` for the whole value, `/query`, `/items/0`).
    pub instance_path: String,
    /// What is wrong, without the offending value.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.instance_path.is_empty() {
            "(root)"
        } else {
            &self.instance_path
        };
        write!(f, "{at}: {}", self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_error_keeps_its_source_and_says_each_thing_once() {
        let source = compile_schema(&serde_json::json!({"type": "object", "pattern": "("}))
            .expect_err("an invalid pattern");
        let cause = source.to_string();
        let error = PolicyError {
            tool: "search".into(),
            which: "input_schema",
            source,
        };
        let top = error.to_string();
        assert_eq!(top, "tool search: its input_schema does not compile");
        let next = std::error::Error::source(&error).expect("the schema error");
        assert_eq!(next.to_string(), cause);
        assert!(
            !top.contains(&cause),
            "the cause is printed once, by its own level"
        );
    }
}
