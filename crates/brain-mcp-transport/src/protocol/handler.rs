//! The client side of server-to-client requests.
//!
//! A tool call in an agent host has no user to ask mid-call, so by default every server
//! request (elicitation, sampling, roots) is answered with an error and the call goes on.
//! A host can opt into answering form elicitations with the schema's defaults.

#![allow(deprecated)] // sampling and roots types (SEP-2577): refused, but still named

use rmcp::{
    ClientHandler, ErrorData,
    model::{
        ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
        ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability, ErrorCode,
        FormElicitationCapability, Implementation, InputRequest, JsonObject, ListRootsResult,
        ProtocolVersion, TASKS_EXTENSION_ID,
    },
    service::{RequestContext, RoleClient},
};
use serde_json::{Map, Value};

use crate::api::ServerRequestPolicy;

/// Our [`ClientHandler`]: client info, capabilities, and the answers to server requests.
#[derive(Debug, Clone)]
pub(crate) struct Handler {
    info: ClientConfig,
    policy: ServerRequestPolicy,
}

impl Handler {
    pub(crate) fn new(client_info: Implementation, policy: ServerRequestPolicy) -> Self {
        let mut capabilities = ClientCapabilities::default();
        if policy == ServerRequestPolicy::AcceptElicitationDefaults {
            let mut elicitation = ElicitationCapability::new();
            elicitation.form = Some(FormElicitationCapability::new());
            capabilities.elicitation = Some(elicitation);
        }
        let info = ClientConfig::new(capabilities, client_info)
            .with_protocol_version(ProtocolVersion::V_2025_11_25);
        Self { info, policy }
    }

    /// The same handler, declaring the tasks extension (`io.modelcontextprotocol/tasks`)
    /// on every request: for 2026-07-28 contexts only, where capabilities travel in each
    /// request's `_meta` (the extension is not defined for the initialize lifecycle, and
    /// a legacy session's capabilities would hold for every call of the session).
    /// `ClientCapabilitiesBuilder::enable_tasks` is compiled only with rmcp's `server`
    /// feature, so the entry is written by hand.
    pub(crate) fn with_tasks(&self) -> Self {
        let mut tasks = self.clone();
        tasks
            .info
            .capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION_ID.to_owned(), JsonObject::new());
        tasks
    }

    /// Whether this handler declares the tasks extension.
    pub(crate) fn declares_tasks(&self) -> bool {
        self.info.capabilities.supports_tasks()
    }

    /// The capabilities to send in a request's `_meta` when a call must not run as a
    /// task: these, without the tasks extension.
    pub(crate) fn capabilities_without_tasks(&self) -> Value {
        let mut capabilities = self.info.capabilities.clone();
        if let Some(extensions) = &mut capabilities.extensions {
            extensions.remove(TASKS_EXTENSION_ID);
            if extensions.is_empty() {
                capabilities.extensions = None;
            }
        }
        serde_json::to_value(capabilities).unwrap_or_default()
    }

    /// The answer to an elicitation.
    fn elicit(&self, params: &ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        match (self.policy, params) {
            (
                ServerRequestPolicy::AcceptElicitationDefaults,
                ElicitRequestParams::FormElicitationParams {
                    requested_schema, ..
                },
            ) => {
                let schema = serde_json::to_value(requested_schema).unwrap_or_default();
                let content: Map<String, Value> = schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .filter_map(|(name, property)| {
                        property
                            .get("default")
                            .map(|value| (name.clone(), value.clone()))
                    })
                    .collect();
                Ok(ElicitResult::new(ElicitationAction::Accept)
                    .with_content(Value::Object(content)))
            }
            _ => Err(refused("elicitation/create")),
        }
    }

    /// The answer to one input request of a 2026-07-28 `input_required` result.
    pub(crate) fn answer(&self, request: &InputRequest) -> Result<Value, ErrorData> {
        match request {
            InputRequest::Elicitation(request) => self
                .elicit(&request.params)
                .and_then(|result| serde_json::to_value(result).map_err(internal)),
            InputRequest::ListRoots(_) => Err(refused("roots/list")),
            InputRequest::CreateMessage(_) => Err(refused("sampling/createMessage")),
            _ => Err(refused("this input request")),
        }
    }
}

fn internal(error: serde_json::Error) -> ErrorData {
    ErrorData::internal_error(error.to_string(), None)
}

fn refused(method: &str) -> ErrorData {
    ErrorData::new(
        ErrorCode::METHOD_NOT_FOUND,
        format!("{method}: this client does not answer server requests during tool calls"),
        None,
    )
}

// Sampling and roots are deprecated (SEP-2577), but servers may still ask: refuse them.
#[allow(deprecated)]
impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        Err(refused("sampling/createMessage"))
    }

    async fn list_roots(
        &self,
        _context: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Err(refused("roots/list"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.elicit(&request)
    }
}
