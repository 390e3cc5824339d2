//! Every OAuth request (discovery, registration, token, refresh, enterprise exchanges)
//! goes through our pooled HTTP client: rmcp's own constructors build a reqwest client
//! of their own, which in this build has no TLS provider and panics.
//!
//! The pooled client never follows redirects (a bearer must not follow one to another
//! origin). rmcp asks for `Stop` (discovery follows same-origin redirects itself; token
//! requests follow none) or `Follow` (dynamic registration): those are followed here, by
//! hand, at most [`MAX_REDIRECTS`] times, never from https to http, dropping credentials
//! when the origin changes. Every response body is bounded; every request is bounded in
//! time.

use std::time::Duration;

use http::{Method, StatusCode, header};
use reqwest::Url;
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};

/// Redirects followed for one request, at most.
pub(crate) const MAX_REDIRECTS: usize = 10;
/// Bound on one OAuth response body (metadata, a token response).
pub(crate) const MAX_BODY_BYTES: usize = 1024 * 1024;
/// Bound on one OAuth request, redirects included, when rmcp suggests none (or more).
pub(crate) const MAX_REQUEST_TIME: Duration = Duration::from_secs(30);

/// Why an OAuth request failed. Fixed phrases: no URL, header or body.
#[derive(Debug, thiserror::Error)]
pub(crate) enum OAuthHttpError {
    #[error("the request could not be built")]
    Build,
    #[error("the request failed")]
    Send,
    #[error("the request timed out")]
    Timeout,
    #[error("the response body exceeded {MAX_BODY_BYTES} bytes")]
    TooLarge,
    #[error("more than {MAX_REDIRECTS} redirects")]
    TooManyRedirects,
    #[error("a redirect to an unusable location")]
    BadRedirect,
}

/// rmcp's OAuth HTTP client, over our pooled client.
#[derive(Debug, Clone)]
pub(crate) struct OAuthHttp {
    client: reqwest::Client,
}

impl OAuthHttp {
    /// Over a client that follows no redirects (the pooled one).
    pub(crate) fn new(client: reqwest::Client) -> Self {
        Self { client }
    }

    async fn send(
        &self,
        request: http::Request<Vec<u8>>,
        policy: OAuthHttpRedirectPolicy,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpError> {
        let (parts, body) = request.into_parts();
        let mut method = parts.method;
        let mut url = Url::parse(&parts.uri.to_string()).map_err(|_| OAuthHttpError::Build)?;
        let mut headers = parts.headers;
        let mut body = Some(body);
        for hop in 0..=MAX_REDIRECTS {
            let mut builder = self
                .client
                .request(method.clone(), url.clone())
                .headers(headers.clone());
            if let Some(body) = &body {
                builder = builder.body(body.clone());
            }
            let response = builder.send().await.map_err(|error| {
                if error.is_builder() {
                    OAuthHttpError::Build
                } else {
                    OAuthHttpError::Send
                }
            })?;
            let status = response.status();
            let follow = policy == OAuthHttpRedirectPolicy::Follow
                && matches!(
                    status,
                    StatusCode::MOVED_PERMANENTLY
                        | StatusCode::FOUND
                        | StatusCode::SEE_OTHER
                        | StatusCode::TEMPORARY_REDIRECT
                        | StatusCode::PERMANENT_REDIRECT
                );
            let location = response
                .headers()
                .get(header::LOCATION)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned);
            let (true, Some(location)) = (follow, location) else {
                return read(response).await;
            };
            if hop == MAX_REDIRECTS {
                return Err(OAuthHttpError::TooManyRedirects);
            }
            let next = url
                .join(&location)
                .map_err(|_| OAuthHttpError::BadRedirect)?;
            let downgrade = url.scheme() == "https" && next.scheme() != "https";
            if !matches!(next.scheme(), "http" | "https") || downgrade {
                return Err(OAuthHttpError::BadRedirect);
            }
            if next.origin() != url.origin() {
                // Credentials are for the origin they were meant for.
                headers.remove(header::AUTHORIZATION);
                headers.remove(header::COOKIE);
            }
            let to_get = status == StatusCode::SEE_OTHER
                || (matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND)
                    && method == Method::POST);
            if to_get {
                method = Method::GET;
                body = None;
                headers.remove(header::CONTENT_TYPE);
                headers.remove(header::CONTENT_LENGTH);
            }
            url = next;
            // The redirect's own body is not read: the connection goes back to the pool
            // only if it is, and redirects are rare enough not to matter.
            drop(response);
        }
        Err(OAuthHttpError::TooManyRedirects)
    }
}

/// A whole response, its body bounded.
async fn read(mut response: reqwest::Response) -> Result<http::Response<Vec<u8>>, OAuthHttpError> {
    if response
        .content_length()
        .is_some_and(|length| length > MAX_BODY_BYTES as u64)
    {
        return Err(OAuthHttpError::TooLarge);
    }
    let mut builder = http::Response::builder()
        .status(response.status())
        .version(response.version());
    for (name, value) in response.headers() {
        builder = builder.header(name, value);
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|_| OAuthHttpError::Send)? {
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(OAuthHttpError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    builder.body(body).map_err(|_| OAuthHttpError::Build)
}

impl OAuthHttpClient for OAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let OAuthHttpRequest {
                request,
                redirect_policy,
                timeout,
                ..
            } = request;
            let bound = timeout.map_or(MAX_REQUEST_TIME, |asked| asked.min(MAX_REQUEST_TIME));
            match tokio::time::timeout(bound, self.send(request, redirect_policy)).await {
                Ok(Ok(response)) => Ok(response),
                Ok(Err(error)) => Err(Box::new(error) as OAuthHttpClientError),
                Err(_) => Err(Box::new(OAuthHttpError::Timeout) as OAuthHttpClientError),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use wiremock::{
        Mock, MockServer, ResponseTemplate,
        matchers::{header_exists, method, path},
    };

    use super::*;

    fn client() -> OAuthHttp {
        OAuthHttp::new(crate::wire::http::pooled_client(true).unwrap())
    }

    fn get(url: &str) -> http::Request<Vec<u8>> {
        http::Request::builder()
            .uri(url)
            .header(header::AUTHORIZATION, "Basic c2VjcmV0")
            .body(Vec::new())
            .unwrap()
    }

    #[tokio::test]
    async fn redirects_are_followed_only_when_asked_and_bounded() {
        let server = MockServer::start().await;
        let other = MockServer::start().await;
        let to = |target: String| ResponseTemplate::new(307).insert_header("location", target);
        Mock::given(path("/a"))
            .respond_with(to("/b".into()))
            .mount(&server)
            .await;
        Mock::given(path("/b"))
            .respond_with(ResponseTemplate::new(200).set_body_string("b"))
            .mount(&server)
            .await;
        Mock::given(path("/loop"))
            .respond_with(to("/loop".into()))
            .mount(&server)
            .await;
        Mock::given(path("/away"))
            .respond_with(to(format!("{}/landing", other.uri())))
            .mount(&server)
            .await;
        Mock::given(path("/big"))
            .respond_with(ResponseTemplate::new(200).set_body_bytes(vec![b'x'; MAX_BODY_BYTES + 1]))
            .mount(&server)
            .await;
        // Credentials never follow a redirect to another origin.
        Mock::given(method("GET"))
            .and(path("/landing"))
            .and(header_exists("authorization"))
            .respond_with(ResponseTemplate::new(500))
            .with_priority(1)
            .mount(&other)
            .await;
        Mock::given(path("/landing"))
            .respond_with(ResponseTemplate::new(200).set_body_string("landed"))
            .mount(&other)
            .await;
        let http = client();
        let base = server.uri();
        let follow = OAuthHttpRedirectPolicy::Follow;
        let stop = OAuthHttpRedirectPolicy::Stop;
        let answer = http.send(get(&format!("{base}/a")), follow).await.unwrap();
        assert_eq!(
            (answer.status().as_u16(), answer.body().as_slice()),
            (200, &b"b"[..])
        );
        let answer = http.send(get(&format!("{base}/a")), stop).await.unwrap();
        assert_eq!(answer.status().as_u16(), 307);
        let answer = http
            .send(get(&format!("{base}/away")), follow)
            .await
            .unwrap();
        assert_eq!(answer.body().as_slice(), b"landed");
        assert!(matches!(
            http.send(get(&format!("{base}/loop")), follow).await,
            Err(OAuthHttpError::TooManyRedirects)
        ));
        assert!(matches!(
            http.send(get(&format!("{base}/big")), stop).await,
            Err(OAuthHttpError::TooLarge)
        ));
    }
}
