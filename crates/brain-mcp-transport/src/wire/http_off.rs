//! Without the `http` feature: no HTTP client. What the client keeps of it (the count of
//! resends, always 0) stands here; an HTTP endpoint is refused by `crate::features`.

use std::sync::{Arc, atomic::AtomicUsize};

use crate::wire::network::Network;
pub(crate) use crate::wire::network::SetupError;

/// The HTTP clients of one `McpClient`: none in this build.
#[derive(Debug, Clone)]
pub(crate) struct Clients {
    pub(crate) resends: Arc<AtomicUsize>,
}

impl Clients {
    pub(crate) fn new(_network: &Network) -> Result<Self, SetupError> {
        Ok(Self {
            resends: Arc::default(),
        })
    }
}
