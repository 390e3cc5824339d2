//! JWT access tokens from the configured authorization servers (an OAuth 2.1 resource
//! server, as the MCP authorization spec describes it): the signature against the
//! issuer's keys (its JWKS, named by its metadata, RFC 8414 or OpenID discovery, or
//! configured), `iss`, `aud` equal to the gateway's resource (RFC 8707), `exp` and `nbf`
//! with a small leeway, the required scopes, and the tenant from a configured claim.
//!
//! Signatures are jsonwebtoken's (on aws-lc-rs); only asymmetric algorithms are accepted
//! (an `HS256` token signed with a public key as its secret, or `none`, never passes).
//! Keys are fetched once and cached; a token naming a key the cache lacks makes one
//! fetch at most every [`REFETCH_AFTER`] per issuer (a flood of forged `kid`s cannot turn
//! into a flood of requests to the issuer).

use std::{
    collections::HashSet,
    sync::Arc,
    time::{Duration, Instant},
};

use brain_tools_config::GatewayIssuer;
use jsonwebtoken::{
    Algorithm, DecodingKey, Validation,
    jwk::{AlgorithmParameters, Jwk, JwkSet},
};
use serde_json::Value;

/// The algorithms accepted: asymmetric ones only.
const ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];
/// Clock skew allowed on `exp` and `nbf`.
pub(crate) const LEEWAY_SECONDS: u64 = 30;
/// An unknown key id makes a fetch of the issuer's keys at most this often.
pub(crate) const REFETCH_AFTER: Duration = Duration::from_secs(30);
/// Keys are fetched again after this, whatever happens.
const KEYS_LIVE: Duration = Duration::from_secs(3600);
/// The largest metadata or key document read.
const MAX_DOCUMENT_BYTES: usize = 1 << 20;
/// How long a fetch of metadata or keys may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// Not a valid token for this gateway (401 `invalid_token`); the description is
    /// fixed text of ours, never the token's.
    Invalid(&'static str),
    /// Valid, without a scope it needs (403 `insufficient_scope`).
    Scope(Vec<String>),
}

/// Who a valid token says is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Claimed {
    pub(crate) tenant: String,
    pub(crate) subject: Option<String>,
}

/// The authorization servers whose tokens are accepted, with their cached keys.
#[derive(Debug)]
pub(crate) struct Issuers {
    http: reqwest::Client,
    resource: String,
    tenant_claim: String,
    scopes: Vec<String>,
    issuers: Vec<Issuer>,
}

#[derive(Debug)]
struct Issuer {
    config: GatewayIssuer,
    keys: tokio::sync::RwLock<Keys>,
    /// One fetch at a time.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Debug, Default)]
struct Keys {
    set: Option<Arc<JwkSet>>,
    fetched: Option<Instant>,
    attempted: Option<Instant>,
}

impl Issuers {
    pub(crate) fn new(
        http: reqwest::Client,
        resource: String,
        tenant_claim: String,
        scopes: Vec<String>,
        issuers: &[GatewayIssuer],
    ) -> Self {
        Self {
            http,
            resource,
            tenant_claim,
            scopes,
            issuers: issuers
                .iter()
                .map(|config| Issuer {
                    config: config.clone(),
                    keys: tokio::sync::RwLock::new(Keys::default()),
                    fetching: tokio::sync::Mutex::new(()),
                })
                .collect(),
        }
    }

    /// The scopes every token must carry.
    pub(crate) fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// The issuer identifiers.
    pub(crate) fn identifiers(&self) -> impl Iterator<Item = &str> {
        self.issuers
            .iter()
            .map(|issuer| issuer.config.issuer.as_str())
    }

    /// Checks a token: who calls, or why not.
    pub(crate) async fn check(&self, token: &str) -> Result<Claimed, Refusal> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| Refusal::Invalid("the access token is not a JWT"))?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(Refusal::Invalid(
                "the access token's algorithm is not accepted",
            ));
        }
        // Which issuer's keys to check it with: its `iss`, read before the signature
        // (the signature check then holds it to that issuer).
        let claims: serde_json::Map<String, Value> =
            jsonwebtoken::dangerous::insecure_decode_claims(token)
                .map_err(|_| Refusal::Invalid("the access token is not a JWT"))?;
        let issuer = claims
            .get("iss")
            .and_then(Value::as_str)
            .and_then(|iss| self.issuers.iter().find(|i| i.config.issuer == iss))
            .ok_or(Refusal::Invalid(
                "the access token is not from an accepted issuer",
            ))?;
        let key = issuer
            .key(&self.http, header.kid.as_deref(), header.alg)
            .await?;
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&[&issuer.config.issuer]);
        validation.set_audience(&[&self.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        validation.leeway = LEEWAY_SECONDS;
        let verified =
            jsonwebtoken::decode::<serde_json::Map<String, Value>>(token, &key, &validation)
                .map_err(|error| Refusal::Invalid(refusal(&error)))?
                .claims;
        let tenant = verified
            .get(&self.tenant_claim)
            .and_then(Value::as_str)
            .filter(|tenant| !tenant.is_empty())
            .ok_or(Refusal::Invalid("the access token names no tenant"))?
            .to_owned();
        let granted = granted_scopes(&verified);
        let missing: Vec<String> = self
            .scopes
            .iter()
            .filter(|scope| !granted.contains(scope.as_str()))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(Refusal::Scope(self.scopes.clone()));
        }
        Ok(Claimed {
            tenant,
            subject: verified
                .get("sub")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }
}

/// The scopes a token grants: `scope` (space-separated, RFC 9068) or `scp` (a list or a
/// string, as some authorization servers write it).
fn granted_scopes(claims: &serde_json::Map<String, Value>) -> HashSet<&str> {
    let mut granted = HashSet::new();
    for claim in ["scope", "scp"] {
        match claims.get(claim) {
            Some(Value::String(scopes)) => granted.extend(scopes.split_whitespace()),
            Some(Value::Array(scopes)) => granted.extend(scopes.iter().filter_map(Value::as_str)),
            _ => {}
        }
    }
    granted
}

/// What a failed check says, in words of ours.
fn refusal(error: &jsonwebtoken::errors::Error) -> &'static str {
    use jsonwebtoken::errors::ErrorKind;
    match error.kind() {
        ErrorKind::ExpiredSignature => "the access token has expired",
        ErrorKind::ImmatureSignature => "the access token is not valid yet",
        ErrorKind::InvalidAudience => "the access token is not for this gateway (aud)",
        ErrorKind::InvalidIssuer => "the access token is not from an accepted issuer",
        ErrorKind::MissingRequiredClaim(_) => "the access token lacks exp, iss or aud",
        ErrorKind::InvalidSignature => "the access token's signature does not verify",
        _ => "the access token is not valid",
    }
}

impl Issuer {
    /// The key that signed a token: from the cache, else after one fetch (at most every
    /// [`REFETCH_AFTER`]).
    async fn key(
        &self,
        http: &reqwest::Client,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<DecodingKey, Refusal> {
        let stale = {
            let keys = self.keys.read().await;
            if let Some(set) = &keys.set
                && let Some(key) = pick(set, kid, alg)
            {
                return key;
            }
            keys.fetched.is_none_or(|at| at.elapsed() > KEYS_LIVE)
                || keys.attempted.is_none_or(|at| at.elapsed() > REFETCH_AFTER)
        };
        if stale {
            let _one = self.fetching.lock().await;
            // Another request may have fetched meanwhile.
            let again = self
                .keys
                .read()
                .await
                .attempted
                .is_none_or(|at| at.elapsed() > REFETCH_AFTER);
            if again {
                let fetched = fetch_keys(http, &self.config).await;
                let mut keys = self.keys.write().await;
                keys.attempted = Some(Instant::now());
                match fetched {
                    Ok(set) => {
                        keys.set = Some(Arc::new(set));
                        keys.fetched = Some(Instant::now());
                    }
                    Err(why) => {
                        tracing::warn!(
                            issuer = %self.config.issuer,
                            "the issuer's signing keys could not be fetched: {why}"
                        );
                    }
                }
            }
        }
        let keys = self.keys.read().await;
        match &keys.set {
            Some(set) => pick(set, kid, alg).unwrap_or(Err(Refusal::Invalid(
                "the access token's signing key is unknown",
            ))),
            None => Err(Refusal::Invalid(
                "the issuer's signing keys are not available",
            )),
        }
    }
}

/// The key of a set a token names (its `kid`; without one, the set's only signing key),
/// if it can verify `alg`. Symmetric (`oct`) keys are never used.
fn pick(set: &JwkSet, kid: Option<&str>, alg: Algorithm) -> Option<Result<DecodingKey, Refusal>> {
    let usable = |jwk: &&Jwk| !matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_));
    let jwk = match kid {
        Some(kid) => set.find(kid).filter(usable)?,
        None => {
            let mut keys = set.keys.iter().filter(usable);
            let only = keys.next()?;
            if keys.next().is_some() {
                return Some(Err(Refusal::Invalid(
                    "the access token names no key (kid) and the issuer has several",
                )));
            }
            only
        }
    };
    if let Some(declared) = jwk.common.key_algorithm
        && Algorithm::try_from(declared).ok() != Some(alg)
    {
        return Some(Err(Refusal::Invalid(
            "the access token's algorithm is not its key's",
        )));
    }
    Some(
        DecodingKey::from_jwk(jwk).map_err(|_| Refusal::Invalid("the issuer's key cannot be used")),
    )
}

/// The issuer's JWKS: the configured `jwks_uri`, else the one its metadata names (RFC
/// 8414 first, then OpenID discovery), whose `issuer` must be the configured one.
async fn fetch_keys(http: &reqwest::Client, issuer: &GatewayIssuer) -> Result<JwkSet, String> {
    let jwks_uri = match &issuer.jwks_uri {
        Some(uri) => uri.clone(),
        None => jwks_uri_of(http, &issuer.issuer).await?,
    };
    let document = get_json(http, &jwks_uri).await?;
    serde_json::from_value(document).map_err(|_| "the JWKS is not a key set".to_owned())
}

async fn jwks_uri_of(http: &reqwest::Client, issuer: &str) -> Result<String, String> {
    let mut last = String::new();
    for url in metadata_urls(issuer) {
        match get_json(http, &url).await {
            Ok(metadata) => {
                if metadata.get("issuer").and_then(Value::as_str) != Some(issuer) {
                    last = format!("the metadata at {url} names another issuer");
                    continue;
                }
                return metadata
                    .get("jwks_uri")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .ok_or_else(|| format!("the metadata at {url} names no jwks_uri"));
            }
            Err(why) => last = why,
        }
    }
    Err(last)
}

/// Where an issuer's metadata may be: RFC 8414 (the well-known segment before the
/// issuer's path), then OpenID Connect Discovery (after it).
pub(crate) fn metadata_urls(issuer: &str) -> Vec<String> {
    let Ok(url) = url::Url::parse(issuer) else {
        return Vec::new();
    };
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}{path}/.well-known/openid-configuration"),
    ]
}

async fn get_json(http: &reqwest::Client, url: &str) -> Result<Value, String> {
    let fetch = async {
        let response = http
            .get(url)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|_| format!("{url} could not be reached"))?;
        if !response.status().is_success() {
            return Err(format!(
                "{url} answered HTTP {}",
                response.status().as_u16()
            ));
        }
        let mut body = Vec::new();
        let mut response = response;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|_| format!("{url} broke off its answer"))?
        {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(format!(
                    "{url} answered more than {MAX_DOCUMENT_BYTES} bytes"
                ));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|_| format!("{url} did not answer JSON"))
    };
    tokio::time::timeout(FETCH_TIMEOUT, fetch)
        .await
        .map_err(|_| format!("{url} did not answer within {} s", FETCH_TIMEOUT.as_secs()))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_rfc_8414_and_openid_say() {
        assert_eq!(
            metadata_urls("https://auth.example.com"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls("https://login.example.com/tenant/v2.0"),
            [
                "https://login.example.com/.well-known/oauth-authorization-server/tenant/v2.0",
                "https://login.example.com/tenant/v2.0/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn scopes_are_read_from_scope_and_scp() {
        let claims = |value: Value| value.as_object().unwrap().clone();
        let cases = [
            (serde_json::json!({"scope": "a b"}), vec!["a", "b"]),
            (serde_json::json!({"scp": ["a", "c"]}), vec!["a", "c"]),
            (serde_json::json!({"scp": "d"}), vec!["d"]),
            (serde_json::json!({}), vec![]),
        ];
        for (value, expected) in cases {
            let claims = claims(value);
            let mut granted: Vec<&str> = granted_scopes(&claims).into_iter().collect();
            granted.sort_unstable();
            assert_eq!(granted, expected);
        }
    }
}
