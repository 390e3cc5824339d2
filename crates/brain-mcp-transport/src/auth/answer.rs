//! What an OAuth request may carry where, and which answers a token endpoint gives that
//! this client takes: pure checks, applied by [`super::http::OAuthHttp`] to every OAuth
//! request and answer of every grant (rmcp's and ours), before rmcp or a flow reads them.
//!
//! - A request that carries anything secret (a body: client secrets, assertions, codes,
//!   PKCE verifiers, refresh tokens, workload tokens; or an `Authorization` header) goes
//!   only to `https`, or to plain `http` on this machine (loopback).
//! - A token endpoint's success answer must hold an access token of a type this client
//!   knows how to send ([`token_scheme`]), else it is refused before anything stores or
//!   uses it.

use http::{HeaderMap, Method, header};
use reqwest::Url;

use crate::error::CallError;

use super::errors::failed;

/// Why the OAuth client refused a request or an answer. rmcp turns a failed request into
/// an error of its own that says only that the request failed, so the client records the
/// refusal for the flow to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// A request carrying a secret would have gone to plain `http` off this machine.
    PlainHttp,
    /// An answer went over the body bound; `token`: a token endpoint's.
    TooLarge { token: bool },
    /// A token endpoint's success answer held no usable access token (not a JSON object,
    /// no `access_token` string, or no `token_type`).
    Unusable,
    /// A token endpoint issued a token of a type this client does not send.
    TokenType,
}

impl Refused {
    /// The error a call or a login reports. Fixed phrases: nothing the server sent.
    pub(crate) fn error(self) -> CallError {
        failed(match self {
            Refused::PlainHttp => {
                "an authorization request that carries a secret would have gone to a plain \
                 http address that is not this machine, so nothing was sent; the server's \
                 authorization server must use https"
            }
            Refused::TooLarge { token: true } => {
                "the token endpoint's answer was larger than 1 MiB, so no token was taken from it"
            }
            Refused::TooLarge { token: false } => {
                "an authorization server's answer was larger than 1 MiB"
            }
            Refused::Unusable => {
                "the token endpoint answered with no usable token (not a JSON object with an \
                 access_token and a token_type)"
            }
            Refused::TokenType => {
                "the token endpoint issued a token of another type than Bearer (or DPoP, for a \
                 request that carried a DPoP proof), which this client cannot send"
            }
        })
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.error().detail())
    }
}

/// How an access token is presented to the resource server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenScheme {
    /// `Authorization: Bearer` (RFC 6750).
    Bearer,
    /// `Authorization: DPoP` with a proof of possession of the grant's key on every
    /// request (RFC 9449 section 7.1).
    Dpop,
}

/// The scheme for a token endpoint's `token_type` (RFC 6749 section 7.1: a client must not
/// use a token whose type it does not understand), case-insensitively (section 5.1).
/// The one place that decides which token types are usable. A DPoP token is usable only
/// when its request carried a proof (the caller checks: see [`check_token_answer`]).
pub(crate) fn token_scheme(token_type: &str) -> Option<TokenScheme> {
    if token_type.eq_ignore_ascii_case("bearer") {
        Some(TokenScheme::Bearer)
    } else if token_type.eq_ignore_ascii_case("dpop") {
        Some(TokenScheme::Dpop)
    } else {
        None
    }
}

/// Whether a request to `url` may carry a secret: `https`, or `http` to a loopback
/// address (`localhost`, `127.0.0.0/8`, `::1`), where nothing crosses a network.
pub(crate) fn may_carry_secrets(url: &Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => is_loopback(url),
        _ => false,
    }
}

/// Whether `url`'s host is this machine.
pub(crate) fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Whether a request carries anything secret: credentials in its headers, or a body
/// (every OAuth request with a body carries a grant, a secret, an assertion or a code,
/// or asks for a client secret to be issued).
pub(crate) fn carries_secret(headers: &HeaderMap, body: &[u8]) -> bool {
    !body.is_empty()
        || headers.contains_key(header::AUTHORIZATION)
        || headers.contains_key(header::COOKIE)
}

/// What a request to a token endpoint asks for, read from its form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenRequest {
    /// An access token for the resource (every grant but the one below).
    AccessToken,
    /// Another token (RFC 8693 with a `requested_token_type` other than an access token:
    /// an enterprise exchange's ID-JAG, whose `token_type` is `N_A`).
    OtherToken,
}

/// The token request a request is, if it is one: a form POST with a `grant_type`.
pub(crate) fn token_request(method: &Method, body: &[u8]) -> Option<TokenRequest> {
    if method != Method::POST {
        return None;
    }
    let mut grant = false;
    let mut other = false;
    for (key, value) in url::form_urlencoded::parse(body) {
        match key.as_ref() {
            "grant_type" => grant = true,
            "requested_token_type" => {
                other = value != "urn:ietf:params:oauth:token-type:access_token";
            }
            _ => {}
        }
    }
    match (grant, other) {
        (false, _) => None,
        (true, false) => Some(TokenRequest::AccessToken),
        (true, true) => Some(TokenRequest::OtherToken),
    }
}

/// Checks a token endpoint's success answer (RFC 6749 section 5.1) before anything reads
/// it: an object with a non-empty `access_token` string and a `token_type` string, of a
/// usable type when an access token was asked for (DPoP only when `proved`: the request
/// carried a DPoP proof, so the client holds the key the token is bound to).
pub(crate) fn check_token_answer(
    asked: TokenRequest,
    body: &[u8],
    proved: bool,
) -> Result<(), Refused> {
    let Ok(serde_json::Value::Object(answer)) = serde_json::from_slice(body) else {
        return Err(Refused::Unusable);
    };
    let text = |field: &str| answer.get(field).and_then(serde_json::Value::as_str);
    if text("access_token").is_none_or(str::is_empty) {
        return Err(Refused::Unusable);
    }
    let Some(token_type) = text("token_type") else {
        return Err(Refused::Unusable);
    };
    let usable = match token_scheme(token_type) {
        Some(TokenScheme::Bearer) => true,
        Some(TokenScheme::Dpop) => proved,
        None => false,
    };
    if asked == TokenRequest::AccessToken && !usable {
        Err(Refused::TokenType)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_and_dpop_are_the_schemes_whatever_their_case() {
        for token_type in ["Bearer", "bearer", "BEARER", "bEaReR"] {
            assert_eq!(token_scheme(token_type), Some(TokenScheme::Bearer));
        }
        for token_type in ["DPoP", "dpop", "DPOP"] {
            assert_eq!(token_scheme(token_type), Some(TokenScheme::Dpop));
        }
        for token_type in ["mac", "N_A", "", "Bearer ", "bearer\0", "dpop+jwt"] {
            assert_eq!(token_scheme(token_type), None, "{token_type:?}");
        }
    }

    #[test]
    fn secrets_go_to_https_or_this_machine() {
        let cases = [
            ("https://as.example.com/token", true),
            ("http://127.0.0.1:9/token", true),
            ("http://127.8.0.1/token", true),
            ("http://[::1]:9/token", true),
            ("http://localhost:9/token", true),
            ("http://LOCALHOST/token", true),
            ("http://as.example.com/token", false),
            ("http://10.0.0.1/token", false),
            ("http://localhost.example.com/token", false),
            ("http://127.0.0.1.nip.io/token", false),
            ("http://[::ffff:7f00:1]/token", false),
            ("ftp://127.0.0.1/token", false),
        ];
        for (url, allowed) in cases {
            assert_eq!(
                may_carry_secrets(&Url::parse(url).unwrap()),
                allowed,
                "{url}"
            );
        }
        let mut headers = HeaderMap::new();
        assert!(!carries_secret(&headers, b""));
        assert!(carries_secret(&headers, b"grant_type=client_credentials"));
        headers.insert(header::AUTHORIZATION, "Basic eDp5".parse().unwrap());
        assert!(carries_secret(&headers, b""));
    }

    #[test]
    fn token_requests_are_read_from_the_form() {
        let post = Method::POST;
        let cases: [(&Method, &[u8], Option<TokenRequest>); 6] = [
            (
                &post,
                b"grant_type=client_credentials&scope=a",
                Some(TokenRequest::AccessToken),
            ),
            (
                &post,
                b"grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange&requested_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aid-jag",
                Some(TokenRequest::OtherToken),
            ),
            (
                &post,
                b"grant_type=x&requested_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token",
                Some(TokenRequest::AccessToken),
            ),
            (&post, br#"{"redirect_uris": ["x"]}"#, None),
            (&post, b"", None),
            (&Method::GET, b"grant_type=x", None),
        ];
        for (method, body, expected) in cases {
            assert_eq!(
                token_request(method, body),
                expected,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn token_answers_that_are_not_usable_are_refused() {
        use TokenRequest::{AccessToken, OtherToken};
        let cases: [(TokenRequest, &str, Result<(), Refused>); 11] = [
            (
                AccessToken,
                r#"{"access_token":"a","token_type":"Bearer"}"#,
                Ok(()),
            ),
            (
                AccessToken,
                r#"{"access_token":"a","token_type":"bearer","expires_in":3600}"#,
                Ok(()),
            ),
            (
                AccessToken,
                r#"{"access_token":"a","token_type":"mac"}"#,
                Err(Refused::TokenType),
            ),
            // A DPoP token for a request that carried no proof: the client holds no key.
            (
                AccessToken,
                r#"{"access_token":"a","token_type":"DPoP"}"#,
                Err(Refused::TokenType),
            ),
            (
                AccessToken,
                r#"{"access_token":"a"}"#,
                Err(Refused::Unusable),
            ),
            (
                AccessToken,
                r#"{"access_token":"","token_type":"Bearer"}"#,
                Err(Refused::Unusable),
            ),
            (
                AccessToken,
                r#"{"access_token":5,"token_type":"Bearer"}"#,
                Err(Refused::Unusable),
            ),
            (
                AccessToken,
                r#"{"token_type":"Bearer"}"#,
                Err(Refused::Unusable),
            ),
            (AccessToken, "<html>ok</html>", Err(Refused::Unusable)),
            (AccessToken, r#"["a"]"#, Err(Refused::Unusable)),
            // An ID-JAG is no access token: its type is not one.
            (
                OtherToken,
                r#"{"access_token":"jag","token_type":"N_A"}"#,
                Ok(()),
            ),
        ];
        for (asked, body, expected) in cases {
            assert_eq!(
                check_token_answer(asked, body.as_bytes(), false),
                expected,
                "{body}"
            );
        }
        // A request that carried a DPoP proof: a DPoP token is usable, in any case, and
        // so is a Bearer one (the server bound nothing); other types still are not.
        let proved: [(&str, Result<(), Refused>); 4] = [
            (r#"{"access_token":"a","token_type":"DPoP"}"#, Ok(())),
            (r#"{"access_token":"a","token_type":"dpop"}"#, Ok(())),
            (r#"{"access_token":"a","token_type":"Bearer"}"#, Ok(())),
            (
                r#"{"access_token":"a","token_type":"mac"}"#,
                Err(Refused::TokenType),
            ),
        ];
        for (body, expected) in proved {
            assert_eq!(
                check_token_answer(AccessToken, body.as_bytes(), true),
                expected,
                "{body}"
            );
        }
    }

    #[test]
    fn refusals_are_fixed_phrases() {
        for refused in [
            Refused::PlainHttp,
            Refused::TooLarge { token: true },
            Refused::TooLarge { token: false },
            Refused::Unusable,
            Refused::TokenType,
        ] {
            let error = refused.error();
            assert_eq!(
                error.kind(),
                crate::error::ErrorKind::AuthorizationFailed,
                "{refused:?}"
            );
            assert!(!error.detail().contains("refused the request"), "{error}");
        }
    }
}
