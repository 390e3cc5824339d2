//! The host config model for Brain tool bindings.
//!
//! A host config is a JSON document; this crate reads its `tools` array (other top-level
//! keys belong to other parts of the host and are ignored), fills in defaults, and
//! validates every binding. Validation reports every problem at once, each with its JSON
//! path, the binding's name and a hint. Schemas are compiled at load (so a broken schema
//! never reaches a call) but kept verbatim: nothing here rewrites or dereferences them,
//! and loading never reads a file or the network. Input is bounded
//! ([`MAX_CONFIG_BYTES`]), and a key repeated in a binding is an error, not a silent
//! choice. Credentials are never in the config: `token_env` and the `*_env` fields of an
//! [`McpAuth`] name the environment variables that hold them.
//!
//! What this crate is not: it does not decide who may call what (that is
//! `brain-tools-policy`) and it does not talk to servers (`brain-mcp-transport`).
//!
//! A host that keeps its own config in serde can embed a host config in it: [`HostConfig`]
//! and [`Loaded`] implement `Deserialize`, validating as [`HostConfig::from_json_bytes`]
//! does.
//!
//! **Key order.** Schemas are kept verbatim, key order included, so this crate turns on
//! `serde_json`'s `preserve_order` feature; cargo unifies features, so every
//! `serde_json::Map` in an application that depends on this crate (its own `json!`
//! objects included) keeps insertion order instead of sorting its keys. Nothing else
//! changes: lookups, equality and serialization of values are the same.
//!
//! ```
//! use brain_tools_config::{HostConfig, Target};
//!
//! let loaded = HostConfig::from_json_bytes(br#"{"tools": [{
//!     "name": "search",
//!     "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
//!     "url": "https://mcp.example.com/mcp",
//!     "mcp_tool": "search",
//!     "tenants": ["local"]
//! }]}"#)?;
//! let binding = &loaded.config.tools[0];
//! assert_eq!(binding.timeout_seconds, 300);
//! assert_eq!(binding.max_output_bytes, 1_048_576);
//! assert!(matches!(binding.target, Target::Mcp(_)));
//! # Ok::<(), brain_tools_config::ConfigErrors>(())
//! ```

mod auth;
mod binding;
mod error;
mod gateway;
mod load;
mod parse;
mod path;
mod schema;
mod serialize;
pub mod text;

pub use auth::{
    ClientAuthentication, ClientCredentialsAuth, EnterpriseAuth, McpAuth, OAuthAuth, SecretMethod,
    SigningAlgorithm, TokenEndpointAuthMethod, WorkloadIdentityAuth,
};
pub use binding::{
    DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_SECONDS, EnvValue, HostConfig, HttpTarget,
    JsonObject, MAX_MAX_OUTPUT_BYTES, MAX_TIMEOUT_SECONDS, McpEra, McpServer, McpTarget,
    ResultContent, StdioCommand, Target, ToolBinding,
};
pub use error::{ConfigError, ConfigErrors, Problem, Warning, WarningKind};
pub use gateway::{GatewayConfig, GatewayIssuer, GatewayLimits, GatewayTls};
pub use load::{Loaded, MAX_CONFIG_BYTES};
pub use schema::{CompiledSchema, SchemaError, SchemaViolation, compile_schema};
