//! Listing a server's tools: every page (up to a cap), within one deadline, schemas kept
//! exactly as the server sent them.

use rmcp::{
    Peer, RoleClient,
    model::{ClientRequest, ListToolsRequest, PaginatedRequestParams, ServerResult, Tool},
    service::ServiceError,
};

use crate::{
    api::{DiscoveredTool, DiscoveryRequest},
    error::{
        CallError, Delivery, ErrorKind,
        classify::{Cause, Failure, Wire, classify},
    },
    wire::ingress::{TASK_SUPPORT_META, keep_task_support},
};

impl DiscoveredTool {
    /// The tools of one `tools/list` result (the JSON of its `result`), as this client
    /// reads them: what a discovery returns for that page.
    ///
    /// # Errors
    /// The [`serde_json::Error`] of a result that is not a `tools/list` result (no `tools`
    /// array, a tool without a `name` or an `inputSchema` object).
    pub fn from_list_result(result: &serde_json::Value) -> Result<Vec<Self>, serde_json::Error> {
        let message = serde_json::json!({"jsonrpc": "2.0", "id": 0, "result": result});
        let result = match keep_task_support(&message.to_string()) {
            Some(kept) => serde_json::from_str::<serde_json::Value>(&kept)?["result"].take(),
            None => result.clone(),
        };
        let listed: rmcp::model::ListToolsResult = serde_json::from_value(result)?;
        Ok(listed.tools.into_iter().map(discovered).collect())
    }
}

/// Our view of one of rmcp's tools. Its `execution.taskSupport`, which rmcp's `Tool`
/// does not keep, was copied into its `_meta` by `wire::ingress` before rmcp read it.
fn discovered(tool: Tool) -> DiscoveredTool {
    let task_support = tool
        .meta
        .as_ref()
        .and_then(|meta| meta.get(TASK_SUPPORT_META))
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned);
    DiscoveredTool {
        name: tool.name.into_owned(),
        description: tool.description.map(|description| description.into_owned()),
        input_schema: (*tool.input_schema).clone(),
        output_schema: tool.output_schema.map(|schema| (*schema).clone()),
        task_support,
    }
}

/// Every page of `tools/list`, in the server's order; how many pages were read.
/// `failure` is what the transport recorded, for a request that ended without an answer;
/// `over_budget` resolves once the listing passed its byte budget.
pub(crate) async fn list_tools(
    peer: &Peer<RoleClient>,
    request: &DiscoveryRequest,
    failure: impl Fn() -> Option<Failure>,
    over_budget: impl Future<Output = ()>,
) -> Result<(Vec<DiscoveredTool>, usize), CallError> {
    let mut over_budget = std::pin::pin!(over_budget);
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 1..=request.max_pages.max(1) {
        let params = PaginatedRequestParams::default().with_cursor(cursor.take());
        let listing = peer.send_request(ClientRequest::ListToolsRequest(
            ListToolsRequest::with_param(params),
        ));
        let answer = tokio::select! {
            answer = listing => answer,
            // rmcp answers nothing to a request whose answer the transport refused.
            () = &mut over_budget => Err(ServiceError::TransportClosed),
            () = tokio::time::sleep_until(request.deadline) => {
                return Err(CallError::new(ErrorKind::Timeout, Delivery::Unknown, "timed out"));
            }
            () = request.cancel.cancelled() => {
                return Err(CallError::new(ErrorKind::Cancelled, Delivery::Unknown, "was cancelled"));
            }
        };
        match answer {
            Ok(ServerResult::ListToolsResult(listed)) => {
                tools.extend(listed.tools.into_iter().map(discovered));
                match listed.next_cursor {
                    Some(next) if !next.is_empty() => cursor = Some(next),
                    _ => return Ok((tools, page)),
                }
            }
            Ok(_) => {
                return Err(CallError::new(
                    ErrorKind::Protocol,
                    Delivery::Delivered,
                    "the server answered tools/list with something else",
                ));
            }
            Err(ServiceError::McpError(error)) => {
                return Err(CallError::new(
                    ErrorKind::Protocol,
                    Delivery::Delivered,
                    format!(
                        "the server returned JSON-RPC error {} to tools/list: {}",
                        error.code.0,
                        request.endpoint.quote(&error.message, 200)
                    ),
                ));
            }
            Err(_) => {
                return Err(match failure() {
                    Some(failure) => classify(
                        Wire::MayHaveReached,
                        &Cause::Transport(&failure),
                        &request.endpoint,
                    ),
                    None => CallError::new(
                        ErrorKind::Protocol,
                        Delivery::Unknown,
                        "the connection closed during tools/list",
                    ),
                });
            }
        }
    }
    Err(CallError::new(
        ErrorKind::Protocol,
        Delivery::Delivered,
        format!(
            "the server listed more than {} pages of tools",
            request.max_pages
        ),
    ))
}
