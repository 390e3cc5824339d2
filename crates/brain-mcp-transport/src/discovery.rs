//! Listing a server's tools: every page (up to a cap), within one deadline, schemas kept
//! exactly as the server sent them.

use std::time::Duration;

use rmcp::model::{ClientRequest, ListToolsRequest, PaginatedRequestParams, ServerResult, Tool};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::{
    JsonObject,
    client::McpClient,
    endpoint::Endpoint,
    error::{CallError, Delivery, ErrorKind},
    opened::Purpose,
    run::{Era, from_failure},
};

/// What to list, and within which bounds.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DiscoveryRequest {
    /// The server.
    pub endpoint: Endpoint,
    /// When discovery must be over (open, every page, close excluded).
    pub deadline: Instant,
    /// At most this many `tools/list` pages are read.
    pub max_pages: usize,
    /// Cancels discovery.
    pub cancel: CancellationToken,
}

impl DiscoveryRequest {
    /// Discovery within `timeout`, at most 100 pages.
    pub fn new(endpoint: Endpoint, timeout: Duration) -> Self {
        Self {
            endpoint,
            deadline: Instant::now() + timeout,
            max_pages: 100,
            cancel: CancellationToken::new(),
        }
    }

    /// Sets the page cap.
    pub fn max_pages(mut self, pages: usize) -> Self {
        self.max_pages = pages;
        self
    }
}

/// One tool as the server lists it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DiscoveredTool {
    /// Its name on the server.
    pub name: String,
    /// Its description, if any.
    pub description: Option<String>,
    /// Its input schema, verbatim (`$ref`, `$defs` and every keyword untouched).
    pub input_schema: JsonObject,
    /// Its output schema, verbatim, if it declares one.
    pub output_schema: Option<JsonObject>,
}

impl DiscoveredTool {
    /// The tools of one `tools/list` result (the JSON of its `result`), as this client
    /// reads them: what a discovery returns for that page.
    pub fn from_list_result(result: &serde_json::Value) -> Result<Vec<Self>, serde_json::Error> {
        let listed: rmcp::model::ListToolsResult = serde_json::from_value(result.clone())?;
        Ok(listed.tools.into_iter().map(Self::from).collect())
    }
}

impl From<Tool> for DiscoveredTool {
    fn from(tool: Tool) -> Self {
        Self {
            name: tool.name.into_owned(),
            description: tool.description.map(|description| description.into_owned()),
            input_schema: (*tool.input_schema).clone(),
            output_schema: tool.output_schema.map(|schema| (*schema).clone()),
        }
    }
}

/// A server's tools.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Discovery {
    /// Every tool of every page, in the server's order.
    pub tools: Vec<DiscoveredTool>,
    /// How many pages were read.
    pub pages: usize,
    /// The era that served the listing.
    pub era: Era,
}

impl McpClient {
    /// Lists every tool of a server. Fails on more than `max_pages` pages, on the
    /// deadline, and as a call would on connection, HTTP, auth and protocol failures.
    pub async fn discover(&self, request: DiscoveryRequest) -> Result<Discovery, CallError> {
        let opened = self
            .open(
                &request.endpoint,
                request.deadline,
                &request.cancel,
                Purpose::Discovery,
            )
            .await?;
        let era = opened.era();
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut result = Err(CallError::new(
            ErrorKind::Protocol,
            Delivery::Delivered,
            format!(
                "the server listed more than {} pages of tools",
                request.max_pages
            ),
        ));
        for page in 1..=request.max_pages.max(1) {
            let params = PaginatedRequestParams::default().with_cursor(cursor.take());
            let listing = opened.peer().send_request(ClientRequest::ListToolsRequest(
                ListToolsRequest::with_param(params),
            ));
            let answer = tokio::select! {
                answer = listing => answer,
                () = tokio::time::sleep_until(request.deadline) => {
                    result = Err(CallError::new(ErrorKind::Timeout, Delivery::Unknown, "timed out"));
                    break;
                }
                () = request.cancel.cancelled() => {
                    result = Err(CallError::new(ErrorKind::Cancelled, Delivery::Unknown, "was cancelled"));
                    break;
                }
            };
            match answer {
                Ok(ServerResult::ListToolsResult(listed)) => {
                    tools.extend(listed.tools.into_iter().map(DiscoveredTool::from));
                    match listed.next_cursor {
                        Some(next) if !next.is_empty() => cursor = Some(next),
                        _ => {
                            result = Ok(page);
                            break;
                        }
                    }
                }
                Ok(_) => {
                    result = Err(CallError::new(
                        ErrorKind::Protocol,
                        Delivery::Delivered,
                        "the server answered tools/list with something else",
                    ));
                    break;
                }
                Err(rmcp::service::ServiceError::McpError(error)) => {
                    result = Err(CallError::new(
                        ErrorKind::Protocol,
                        Delivery::Delivered,
                        format!(
                            "the server returned JSON-RPC error {} to tools/list: {}",
                            error.code.0,
                            request.endpoint.quote(&error.message, 200)
                        ),
                    ));
                    break;
                }
                Err(_) => {
                    result = Err(match opened.failure() {
                        Some(failure) => {
                            from_failure(&failure, Delivery::Unknown, &request.endpoint)
                        }
                        None => CallError::new(
                            ErrorKind::Protocol,
                            Delivery::Unknown,
                            "the connection closed during tools/list",
                        ),
                    });
                    break;
                }
            }
        }
        opened.finish(self, None);
        result.map(|pages| Discovery { tools, pages, era })
    }
}
