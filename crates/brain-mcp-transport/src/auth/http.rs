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
//!
//! Every request is checked before it leaves, and every token endpoint's answer before
//! rmcp or a flow reads it (see [`super::answer`]): nothing secret goes to plain `http`
//! off this machine, and an answer without a usable token (or a token of a type this
//! client cannot send) is refused, so it is never stored or used. rmcp reports a refused
//! request only as failed; a client built with [`OAuthHttp::noting`] records why in its
//! [`Issued`], for the flow to report.
//!
//! A grant that holds a DPoP key ([`DpopSlot`], set by its flow) proves possession of it
//! on every request for an access token (a code exchange, a refresh, client credentials):
//! a fresh proof each time, and once more with the nonce when the token endpoint answers
//! `use_dpop_nonce` (RFC 9449 section 8). That resend must happen here: rmcp drops a code
//! exchange's PKCE state before sending it, so it cannot be redone from above.
//!
//! Every token an authorization server issues passes here, also those that never become
//! a grant's token in use (the ID-JAG of an enterprise exchange, a token whose flow
//! failed after it was issued): a client built with [`OAuthHttp::noting`] notes each in
//! its [`Issued`] list, so that it is hidden like the token in use.

use std::{
    sync::{Arc, Mutex, PoisonError},
    time::Duration,
};

use http::{Method, StatusCode, header};
use reqwest::Url;
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};
use tokio::time::Instant;

use super::answer::{
    Refused, TokenRequest, carries_secret, check_token_answer, may_carry_secrets, token_request,
};
use crate::{
    dpop::{self, Dpop, Server},
    secret::Secret,
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
    #[error("{0}")]
    Refused(Refused),
}

/// The secrets one grant keeps hidden besides its token in use: tokens it replaced, and
/// every token its authorization server issued, each until a time. A secret stays hidden
/// for an hour at least, or until the token expires if that is later: what a server says
/// of a token's lifetime is not trusted to make it harmless (clocks skew, and a server
/// may accept it after its `expires_in`). At most [`Issued::MAX`], the newest.
///
/// Also the last request or answer the grant's client refused (see [`Refused`]), until a
/// flow takes it to say why its request failed.
#[derive(Debug, Default)]
pub(crate) struct Issued {
    secrets: Mutex<Vec<(Secret, Instant)>>,
    refused: Mutex<Option<Refused>>,
}

impl Issued {
    /// Secrets kept, at most.
    const MAX: usize = 16;
    /// How long a secret is kept, at least.
    const KEPT: Duration = Duration::from_secs(3600);

    /// Keeps `secret` hidden until `until` (an hour from now at least).
    pub(crate) fn keep(&self, secret: Secret, until: Option<Instant>) {
        let at_least = Instant::now() + Self::KEPT;
        let until = until.map_or(at_least, |until| until.max(at_least));
        let mut secrets = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        match secrets.iter_mut().find(|(kept, _)| *kept == secret) {
            Some(kept) => kept.1 = kept.1.max(until),
            None => secrets.push((secret, until)),
        }
        let excess = secrets.len().saturating_sub(Self::MAX);
        secrets.drain(..excess);
    }

    /// The secrets still kept.
    pub(crate) fn secrets(&self) -> Vec<Secret> {
        let now = Instant::now();
        let mut secrets = self.secrets.lock().unwrap_or_else(PoisonError::into_inner);
        secrets.retain(|(_, until)| *until > now);
        secrets.iter().map(|(secret, _)| secret.clone()).collect()
    }

    /// Records why the client refused a request or an answer.
    fn refuse(&self, refused: Refused) {
        *self.refused.lock().unwrap_or_else(PoisonError::into_inner) = Some(refused);
    }

    /// Why the client last refused a request or an answer, if it did since the last
    /// call; forgotten once taken.
    pub(crate) fn take_refused(&self) -> Option<Refused> {
        self.refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Notes the tokens of an authorization server's answer (a token response, a token
    /// exchange's): `access_token`, `refresh_token`, `id_token`.
    fn note(&self, body: &[u8]) {
        let Ok(serde_json::Value::Object(answer)) = serde_json::from_slice(body) else {
            return;
        };
        for field in ["access_token", "refresh_token", "id_token"] {
            if let Some(token) = answer.get(field).and_then(serde_json::Value::as_str) {
                self.keep(Secret::new(token), None);
            }
        }
    }
}

/// The DPoP key a grant's token requests prove possession of, if any. A grant's flow sets
/// it before each request for a token (none: Bearer tokens).
#[derive(Debug, Default)]
pub(crate) struct DpopSlot(Mutex<Option<Dpop>>);

impl DpopSlot {
    pub(crate) fn set(&self, dpop: Option<Dpop>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = dpop;
    }

    pub(crate) fn get(&self) -> Option<Dpop> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// rmcp's OAuth HTTP client, over our pooled client.
#[derive(Debug, Clone)]
pub(crate) struct OAuthHttp {
    client: reqwest::Client,
    /// Where issued tokens are noted, if anywhere.
    issued: Option<Arc<Issued>>,
    /// The grant's DPoP key, for its token requests.
    dpop: Option<Arc<DpopSlot>>,
}

impl OAuthHttp {
    /// Over a client that follows no redirects (the pooled one).
    pub(crate) fn new(client: reqwest::Client) -> Self {
        Self {
            client,
            issued: None,
            dpop: None,
        }
    }

    /// The same client, noting every token an answer carries in `issued`.
    pub(crate) fn noting(&self, issued: Arc<Issued>) -> Self {
        Self {
            client: self.client.clone(),
            issued: Some(issued),
            dpop: None,
        }
    }

    /// The same client, proving possession of the key in `slot` (when it holds one) on
    /// every request for an access token.
    pub(crate) fn proving(mut self, slot: Arc<DpopSlot>) -> Self {
        self.dpop = Some(slot);
        self
    }

    /// A form POST to a token endpoint, for a grant rmcp does not make (the JWT bearer
    /// grant of a workload identity): bounded in time and size like every other, no
    /// redirect followed, the tokens of its answer noted.
    pub(crate) async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpError> {
        let body = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form)
            .finish();
        let request = http::Request::post(url)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(header::ACCEPT, "application/json")
            .body(body.into_bytes())
            .map_err(|_| OAuthHttpError::Build)?;
        tokio::time::timeout(
            MAX_REQUEST_TIME,
            self.exchange(request, OAuthHttpRedirectPolicy::Stop),
        )
        .await
        .map_err(|_| OAuthHttpError::Timeout)?
    }

    /// One request and its answer, checked (see [`super::answer`]): a refusal is
    /// recorded, and the tokens of an answer taken are noted.
    async fn exchange(
        &self,
        request: http::Request<Vec<u8>>,
        policy: OAuthHttpRedirectPolicy,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpError> {
        let asked = token_request(request.method(), request.body());
        let dpop = self
            .dpop
            .as_ref()
            .and_then(|slot| slot.get())
            .filter(|_| asked == Some(TokenRequest::AccessToken));
        let sent = match &dpop {
            Some(dpop) => self.send_proving(request, policy, dpop).await,
            None => self.send(request, policy).await,
        };
        let answer = sent.and_then(|response| {
            if let Some(asked) = asked
                && response.status().is_success()
            {
                check_token_answer(asked, response.body(), dpop.is_some())
                    .map_err(OAuthHttpError::Refused)?;
            }
            Ok(response)
        });
        let refused = match &answer {
            Ok(response) => {
                if let Some(issued) = &self.issued {
                    issued.note(response.body());
                }
                None
            }
            Err(OAuthHttpError::Refused(refused)) => Some(*refused),
            Err(OAuthHttpError::TooLarge) => Some(Refused::TooLarge {
                token: asked.is_some(),
            }),
            Err(_) => None,
        };
        if let (Some(refused), Some(issued)) = (refused, &self.issued) {
            issued.refuse(refused);
        }
        answer
    }

    /// A token request with a fresh DPoP proof; refused for want of a nonce
    /// (`use_dpop_nonce`, with the nonce), once more with a new proof that carries it. The
    /// nonce a token endpoint gives is kept for its origin.
    async fn send_proving(
        &self,
        request: http::Request<Vec<u8>>,
        policy: OAuthHttpRedirectPolicy,
        dpop: &Dpop,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpError> {
        let (parts, body) = request.into_parts();
        let url = Url::parse(&parts.uri.to_string()).map_err(|_| OAuthHttpError::Build)?;
        let mut refused_for_nonce = false;
        loop {
            let proof = dpop
                .proof(Server::Authorization, parts.method.as_str(), &url, None)
                .and_then(|proof| http::HeaderValue::from_str(&proof).ok())
                .ok_or(OAuthHttpError::Build)?;
            let mut request = http::Request::new(body.clone());
            *request.method_mut() = parts.method.clone();
            *request.uri_mut() = parts.uri.clone();
            *request.headers_mut() = parts.headers.clone();
            request.headers_mut().insert(dpop::PROOF_HEADER, proof);
            let response = self.send(request, policy).await?;
            // Sent again only for a nonce it did not send: the same one again would be
            // refused again.
            let new_nonce = response
                .headers()
                .get(dpop::NONCE_HEADER)
                .and_then(|value| value.to_str().ok())
                .is_some_and(|nonce| dpop.learn(Server::Authorization, &url, nonce));
            let wants_nonce =
                dpop::authorization_wants_nonce(response.status().as_u16(), response.body());
            if refused_for_nonce || !(new_nonce && wants_nonce) {
                return Ok(response);
            }
            refused_for_nonce = true;
        }
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
            // Checked at every hop: a redirect must not take a secret off this machine
            // over plain http either.
            let secret = carries_secret(&headers, body.as_deref().unwrap_or_default());
            if secret && !may_carry_secrets(&url) {
                return Err(OAuthHttpError::Refused(Refused::PlainHttp));
            }
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
            match tokio::time::timeout(bound, self.exchange(request, redirect_policy)).await {
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

    #[test]
    fn issued_tokens_are_noted_once_newest_kept() {
        let issued = Issued::default();
        issued.note(br#"{"access_token": "at-1", "refresh_token": "rt-1", "expires_in": 0}"#);
        issued.note(br#"{"access_token": "at-1"}"#);
        issued.note(br#"{"id_token": "id-1", "token_type": "N_A"}"#);
        // Not JSON, not an object, no tokens: nothing.
        issued.note(b"<html>");
        issued.note(br#"["at-x"]"#);
        issued.note(br#"{"error": "invalid_grant"}"#);
        let exposed = |issued: &Issued| -> Vec<String> {
            issued
                .secrets()
                .iter()
                .map(|secret| secret.expose().to_owned())
                .collect()
        };
        assert_eq!(exposed(&issued), ["at-1", "rt-1", "id-1"]);
        for n in 0..Issued::MAX {
            issued.keep(Secret::new(format!("more-{n}")), None);
        }
        let kept = exposed(&issued);
        assert_eq!(kept.len(), Issued::MAX);
        assert_eq!(kept[0], "more-0", "the oldest went first");
        // A lifetime the server claims is over still keeps the secret an hour.
        issued.keep(Secret::new("expired"), Some(Instant::now()));
        assert!(exposed(&issued).contains(&"expired".to_owned()));
    }

    fn client() -> OAuthHttp {
        OAuthHttp::new(
            crate::wire::http::Clients::new(&Default::default())
                .unwrap()
                .pooled,
        )
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
