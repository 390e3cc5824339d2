//! The HTTP client of OpenTelemetry exporters (feature `otel`): OTLP over HTTP on a client
//! built as the MCP clients are (rustls on `ring` with the platform verifier, no process-wide
//! TLS provider, no redirects).

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use tokio::runtime::Handle;

use super::ClientBuildError;
use crate::{endpoint::redacted_url, wire::http::export_client};

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
    /// Sends an export request. An endpoint's user info (`https://user:password@host`) is
    /// sent as `Authorization: Basic` (unless the request has an `Authorization` header
    /// of its own), never in the URL the connection pool sees (it logs its key, the
    /// URL's authority, at trace level); errors and log lines name the URL without user
    /// info and query.
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let url = reqwest::Url::parse(&parts.uri.to_string())
            .map_err(|_| HttpError::from("the export request's URL is not a URL"))?;
        let shown = redacted_url(url.as_str());
        // reqwest's builder moves the user info into a Basic header; the request's own
        // headers replace it.
        let request = self
            .client
            .request(parts.method, url)
            .headers(parts.headers)
            .body(body)
            .build()
            .map_err(reqwest::Error::without_url)?;
        let client = self.client.clone();
        let sending = async move {
            let failed = |error: reqwest::Error| {
                let error = error.without_url();
                tracing::debug!(url = %shown, %error, "an OpenTelemetry export request failed");
                error
            };
            let response = client.execute(request).await.map_err(failed)?;
            let status = response.status();
            let headers = response.headers().clone();
            let mut body = Vec::new();
            let mut stream = response.bytes_stream();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(failed)?;
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

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// Serves one request: answers 200 and gives back the request's head.
    async fn one_request(listener: tokio::net::TcpListener) -> String {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut head = Vec::new();
        let mut buffer = [0u8; 4096];
        while !head.windows(4).any(|window| window == b"\r\n\r\n") {
            let read = stream.read(&mut buffer).await.unwrap();
            assert!(read > 0, "the request ended early");
            head.extend_from_slice(&buffer[..read]);
        }
        stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await
            .unwrap();
        String::from_utf8_lossy(&head).into_owned()
    }

    fn request(url: &str, authorization: Option<&str>) -> Request<Bytes> {
        let mut request = Request::post(url);
        if let Some(value) = authorization {
            request = request.header("authorization", value);
        }
        request.body(Bytes::from_static(b"spans")).unwrap()
    }

    #[tokio::test]
    async fn user_info_goes_as_a_basic_header_never_in_the_url() {
        let client = ExportHttpClient::new(Duration::from_secs(5)).unwrap();
        for (authorization, expected) in [
            // user "user", password "p@ss" (percent-encoded in the URL).
            (None, "authorization: Basic dXNlcjpwQHNz"),
            // The request's own header wins.
            (Some("Bearer own"), "authorization: Bearer own"),
        ] {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let served = tokio::spawn(one_request(listener));
            let url = format!("http://user:p%40ss@127.0.0.1:{port}/v1/traces?k=v");
            let answer = client
                .send_bytes(request(&url, authorization))
                .await
                .unwrap();
            assert_eq!(answer.status(), 200);
            let head = served.await.unwrap();
            assert!(
                head.starts_with("POST /v1/traces?k=v HTTP/1.1\r\n"),
                "{head}"
            );
            let lower = head.to_ascii_lowercase();
            assert!(lower.contains(&expected.to_ascii_lowercase()), "{head}");
            assert_eq!(lower.matches("authorization:").count(), 1, "{head}");
            assert!(!head.contains("user:"), "{head}");
        }
    }

    #[tokio::test]
    async fn a_failed_export_names_no_user_info_or_query() {
        let client = ExportHttpClient::new(Duration::from_secs(5)).unwrap();
        // A port nothing listens on (bound, then closed).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("http://user:hunter2@127.0.0.1:{port}/v1/traces?key=s3cret");
        let error = client
            .send_bytes(request(&url, None))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            !error.contains("hunter2") && !error.contains("s3cret"),
            "{error}"
        );
    }
}
