//! The HTTP client of OpenTelemetry exporters (feature `otel`): OTLP over HTTP on a client
//! built as the MCP clients are (rustls on `ring` with the platform verifier, no process-wide
//! TLS provider, no redirects).

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use tokio::runtime::Handle;

use super::ClientBuildError;
use crate::wire::http::export_client;

/// The most of an exporter's response that is read (a collector answers a few bytes).
const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// An [`HttpClient`] for OpenTelemetry's OTLP/HTTP exporters
/// (`opentelemetry_otlp::WithHttpConfig::with_http_client`), so that telemetry leaves the
/// process as MCP calls do: rustls on the `ring` provider with the platform's verifier,
/// configured for this client only, and no redirects.
///
/// The SDK's batch processors export from a thread of their own, outside any async
/// runtime; each request of this client runs on the tokio runtime it was built on, so it
/// works from any thread. Keep that runtime running until the exporters are shut down.
#[derive(Debug, Clone)]
pub struct ExportHttpClient {
    client: reqwest::Client,
    runtime: Handle,
}

impl ExportHttpClient {
    /// A client whose requests each end within `timeout`, run on the current tokio runtime.
    ///
    /// # Errors
    /// A [`ClientBuildError`] when it is called outside a tokio runtime, or when TLS
    /// cannot be set up (the error's source says why).
    pub fn new(timeout: Duration) -> Result<Self, ClientBuildError> {
        let runtime = Handle::try_current().map_err(|error| {
            ClientBuildError::from((
                "the export client must be built on a tokio runtime",
                error.into(),
            ))
        })?;
        Ok(Self {
            client: export_client(timeout)?,
            runtime,
        })
    }
}

#[async_trait::async_trait]
impl HttpClient for ExportHttpClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        let sending = async move {
            let response = client.execute(request).await?;
            let status = response.status();
            let headers = response.headers().clone();
            let mut body = Vec::new();
            let mut stream = response.bytes_stream();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk?;
                if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
                    return Err(HttpError::from("the collector's answer is too large"));
                }
                body.extend_from_slice(&chunk);
            }
            let mut answer = Response::builder().status(status).body(Bytes::from(body))?;
            *answer.headers_mut() = headers;
            Ok(answer)
        };
        self.runtime
            .spawn(sending)
            .await
            .map_err(|_| HttpError::from("the export request was stopped"))?
    }
}
