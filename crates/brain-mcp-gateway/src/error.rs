//! The gateway's one error type: what kept it from starting or serving.

/// Why the gateway could not be set up or could not serve.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct GatewayError {
    message: String,
    #[source]
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl GatewayError {
    pub(crate) fn setup(message: String) -> Self {
        Self {
            message,
            source: None,
        }
    }
}
