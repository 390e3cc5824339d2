//! Model providers' rules for tool definitions, checked against Brain tool bindings.
//!
//! A host hands each binding's `name`, `description` and `input_schema` to a model
//! provider's API. Each provider has its own rules for tool definitions, an MCP server's
//! schema (kept verbatim in the binding) can break them, and one definition an API refuses
//! fails the whole request: one binding can break every tool of a session. [`check`] runs
//! the rules of the chosen [`Provider`]s over a config's bindings and returns a
//! [`Report`]: every [`Finding`] as data (the rule, what the provider does, the JSON path,
//! a one-line message, the page the rule comes from), and a [`Verdict`] per binding and
//! provider: accepted, accepted after the provider SDK's own transformation, or rejected,
//! in ordinary function calling and with strict mode on.
//!
//! The rules are data (`rules.json`: 43 rules, each with its source, the quoted sentence
//! and the evidence) read by a small generic evaluator; [`rules`] lists them. Gemini is
//! checked as `FunctionDeclaration.parameters` (the OpenAPI subset most clients send).
//!
//! What this crate is not: it changes no schema (bindings stay verbatim), sends nothing
//! and prints nothing; `mcp-tools check --models` formats its reports for people.
//!
//! ```
//! use brain_tools_config::HostConfig;
//! use brain_tools_providers::{Effect, Provider, Verdict, check};
//!
//! let loaded = HostConfig::from_json_bytes(br#"{"tools": [{
//!     "name": "search",
//!     "input_schema": {"type": "object", "properties": {"q": {"type": "string"}},
//!                      "additionalProperties": false, "required": ["q"]},
//!     "url": "https://mcp.example.com/mcp",
//!     "mcp_tool": "search",
//!     "tenants": ["local"]
//! }]}"#)?;
//! let report = check(&loaded.config.tools, &[Provider::OpenAi, Provider::Gemini]);
//!
//! // Gemini's Schema object has no additionalProperties...
//! let finding = &report.findings[0];
//! assert_eq!(finding.rule, "gemini.schema-field-allowlist");
//! assert_eq!(finding.effect, Effect::Rejected);
//! assert_eq!(finding.path.as_deref(), Some("input_schema.additionalProperties"));
//! // ...which Google's SDK leaves out when it converts an MCP tool.
//! let gemini = report.verdict(0, Provider::Gemini).unwrap();
//! assert_eq!(gemini.default, Verdict::AcceptedAfterSdk);
//! assert_eq!(report.verdict(0, Provider::OpenAi).unwrap().strict, Verdict::Accepted);
//! # Ok::<(), brain_tools_config::ConfigErrors>(())
//! ```

mod check;
mod eval;
mod rules;
mod text;

pub use check::{BindingVerdict, Finding, Place, Report, Verdict, check, check_some, check_tool};
pub use rules::{Effect, Evidence, Provider, Rule, SdkFix, rules};

#[cfg(test)]
mod tests;
