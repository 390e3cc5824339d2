//! The identity of a call, which the call path (`host.rs`) and its telemetry
//! (`telemetry.rs`) both read; it depends on neither.

use brain_tools_events::CallHeader;

/// The identity of a call: whose session, which call. The call ID is also the MCP
/// progress token.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CallScope {
    /// The session's tenant.
    pub tenant_id: String,
    /// The session.
    pub session_id: String,
    /// The call.
    pub call_id: String,
}

impl CallScope {
    /// A scope.
    pub fn new(
        tenant_id: impl Into<String>,
        session_id: impl Into<String>,
        call_id: impl Into<String>,
    ) -> Self {
        Self {
            tenant_id: tenant_id.into(),
            session_id: session_id.into(),
            call_id: call_id.into(),
        }
    }

    /// The head every event of this call carries.
    pub(crate) fn header(&self, tool: &str) -> CallHeader {
        CallHeader::new(&self.tenant_id, &self.session_id, &self.call_id, tool)
    }
}
