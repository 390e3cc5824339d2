//! The limits a call runs under: one timeout for the whole call, and a byte bound on its
//! response. The transport enforces them.

use std::time::Duration;

use brain_tools_config::ToolBinding;

/// A binding's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Bound on steps 2 to 5 together (open, call, stream, return).
    pub timeout: Duration,
    /// Bound on the response's bytes as received.
    pub max_output_bytes: u64,
}

impl Limits {
    /// The limits of a binding.
    pub fn of(binding: &ToolBinding) -> Self {
        Self {
            timeout: Duration::from_secs(binding.timeout_seconds),
            max_output_bytes: binding.max_output_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use brain_tools_config::{JsonObject, McpServer, McpTarget, Target};

    use super::*;

    #[test]
    fn limits_come_from_the_binding() {
        let mut binding = ToolBinding::new(
            "t",
            JsonObject::new(),
            vec!["local".into()],
            Target::Mcp(McpTarget::new(
                McpServer::http("https://mcp.example.com/mcp", None),
                "t",
            )),
        );
        binding.timeout_seconds = 7;
        binding.max_output_bytes = 99;
        assert_eq!(
            Limits::of(&binding),
            Limits {
                timeout: Duration::from_secs(7),
                max_output_bytes: 99
            }
        );
    }
}
