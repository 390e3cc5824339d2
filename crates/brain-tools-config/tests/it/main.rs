//! Integration tests of the config loader: a data-driven corpus with snapshot-checked
//! messages, the spec's example, and generated extremes.

mod corpus;
mod generated;
mod round_trip;
mod spec_example;

use brain_tools_config::HostConfig;

/// The variables the tests treat as set; every other is unset.
pub(crate) fn is_set(name: &str) -> bool {
    matches!(
        name,
        "SET_TOKEN"
            | "MCP_API_KEY"
            | "MCP_CLIENT_SECRET"
            | "MCP_PRIVATE_KEY"
            | "IDP_CLIENT_SECRET"
            | "WORKLOAD_IDENTITY_TOKEN"
    )
}

/// Loads a config as the host would, with the variables of [`is_set`] set and every
/// other unset, and renders what a user would read: the config back as JSON and the
/// warnings, or every problem.
pub(crate) fn render(bytes: &[u8]) -> String {
    match HostConfig::from_json_bytes_with_env(bytes, is_set) {
        Ok(loaded) => {
            let mut out = String::from("loads\n");
            for warning in &loaded.warnings {
                out.push_str(&format!("warning: {warning}\n"));
            }
            out.push_str(&serde_json::to_string_pretty(&loaded.config).expect("serializes"));
            out
        }
        Err(errors) => errors.to_string(),
    }
}
