//! DPoP (RFC 9449): sender-constrained access tokens. A grant that asks for DPoP has a
//! key pair of its own ([`DpopKey`], ES256 on `ring`), created with the grant and stored
//! with it; every request that uses the grant (a token request, every request to the MCP
//! server) carries a fresh proof signed with it ([`Dpop::proof`]): a JWS whose header
//! holds the public key and whose claims bind it to the request (`htm`, `htu`, `iat`, a
//! unique `jti`, the token's hash `ath`, and the server's `nonce` once it gave one).
//!
//! The cryptography is `ring`'s (key generation, ECDSA P-256 signatures in the fixed
//! `R||S` form JWS wants); only the JWS compact framing is ours. Nonces (RFC 9449
//! sections 8 and 9) are kept per server and origin ([`Nonces`]), shared by every grant
//! of a client. The pure readings (`htu`, `ath`, the thumbprint, a nonce challenge, what
//! metadata offers) are tested here; the key never leaves [`DpopKey`] but as its stored
//! form, a [`Secret`], and neither a key nor a proof is in any `Debug`.

use std::{
    collections::HashMap,
    fmt,
    sync::{Arc, Mutex, PoisonError},
    time::{SystemTime, UNIX_EPOCH},
};

use base64::{Engine as _, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::{
    rand::{SecureRandom, SystemRandom},
    signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _},
};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::secret::Secret;

/// The one algorithm this client signs proofs with.
pub(crate) const ALGORITHM: &str = "ES256";
/// The authorization server metadata that lists the algorithms it accepts (RFC 9449
/// section 5.1).
pub(crate) const METADATA_FIELD: &str = "dpop_signing_alg_values_supported";
/// The header a proof goes in, and the one a server's nonce comes in.
pub(crate) const PROOF_HEADER: &str = "dpop";
pub(crate) const NONCE_HEADER: &str = "dpop-nonce";
/// The error a server answers when it wants a (new) nonce.
pub(crate) const USE_NONCE: &str = "use_dpop_nonce";
/// The longest nonce kept: a real one is a few dozen characters.
const MAX_NONCE_LEN: usize = 1024;
/// Origins whose nonces are kept, at most (then the oldest learned goes).
const MAX_NONCES: usize = 256;

/// Whether an authorization server's metadata offers DPoP with an algorithm this client
/// signs with.
pub(crate) fn offered(metadata: &HashMap<String, serde_json::Value>) -> bool {
    metadata
        .get(METADATA_FIELD)
        .and_then(serde_json::Value::as_array)
        .is_some_and(|algorithms| algorithms.iter().any(|a| a.as_str() == Some(ALGORITHM)))
}

/// A key that could not be made or read. Fixed phrases: never the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum KeyError {
    #[error("no DPoP key could be generated")]
    Generate,
    #[error("the stored DPoP key is not an ES256 key this client can read")]
    Unreadable,
}

/// A grant's DPoP key pair. `Debug` shows its thumbprint only.
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    /// The PKCS#8 document, base64url: what a store keeps.
    stored: Secret,
    /// The first part of every proof: the JOSE header with the public key, encoded.
    header: String,
    /// The key's JWK thumbprint (RFC 7638): what a bound token names as `cnf.jkt`.
    thumbprint: String,
}

impl fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DpopKey")
            .field("thumbprint", &self.thumbprint)
            .finish_non_exhaustive()
    }
}

impl DpopKey {
    /// A new key pair.
    pub(crate) fn generate() -> Result<Self, KeyError> {
        let rng = SystemRandom::new();
        let document = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(|_| KeyError::Generate)?;
        Self::from_pkcs8(document.as_ref(), &rng).map_err(|_| KeyError::Generate)
    }

    /// The key a store kept ([`DpopKey::stored`]).
    pub(crate) fn from_stored(stored: &Secret) -> Result<Self, KeyError> {
        let document = URL_SAFE_NO_PAD
            .decode(stored.expose())
            .map_err(|_| KeyError::Unreadable)?;
        Self::from_pkcs8(&document, &SystemRandom::new())
    }

    fn from_pkcs8(document: &[u8], rng: &SystemRandom) -> Result<Self, KeyError> {
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, document, rng)
            .map_err(|_| KeyError::Unreadable)?;
        let (x, y) = coordinates(pair.public_key().as_ref()).ok_or(KeyError::Unreadable)?;
        // RFC 7638: the required members, in lexicographic order, no whitespace.
        let members = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
        let thumbprint = URL_SAFE_NO_PAD.encode(Sha256::digest(members.as_bytes()));
        let header = serde_json::json!({
            "typ": "dpop+jwt",
            "alg": ALGORITHM,
            "jwk": {"kty": "EC", "crv": "P-256", "x": x, "y": y},
        });
        Ok(Self {
            pair,
            stored: Secret::new(URL_SAFE_NO_PAD.encode(document)),
            header: URL_SAFE_NO_PAD.encode(header.to_string()),
            thumbprint,
        })
    }

    /// What a store keeps: the PKCS#8 document, base64url.
    pub(crate) fn stored(&self) -> &Secret {
        &self.stored
    }

    /// The key's JWK thumbprint (RFC 7638, SHA-256, base64url).
    pub(crate) fn thumbprint(&self) -> &str {
        &self.thumbprint
    }

    /// The encoded header every proof of this key starts with: hidden in what servers
    /// send back, so that an echoed proof is never shown whole.
    pub(crate) fn proof_prefix(&self) -> &str {
        &self.header
    }

    /// A proof with these claims; `None` when the system's random source fails.
    fn sign(&self, claims: &Claims<'_>) -> Option<String> {
        let claims = serde_json::to_vec(claims).ok()?;
        let mut jws = format!("{}.{}", self.header, URL_SAFE_NO_PAD.encode(claims));
        let signature = self.pair.sign(&SystemRandom::new(), jws.as_bytes()).ok()?;
        jws.push('.');
        jws.push_str(&URL_SAFE_NO_PAD.encode(signature.as_ref()));
        Some(jws)
    }
}

/// The x and y coordinates of an uncompressed P-256 point (`04 || x || y`), base64url.
fn coordinates(point: &[u8]) -> Option<(String, String)> {
    match point {
        [4, rest @ ..] if rest.len() == 64 => Some((
            URL_SAFE_NO_PAD.encode(&rest[..32]),
            URL_SAFE_NO_PAD.encode(&rest[32..]),
        )),
        _ => None,
    }
}

/// A proof's claims (RFC 9449 section 4.2).
#[derive(Serialize)]
struct Claims<'a> {
    jti: String,
    htm: &'a str,
    htu: String,
    iat: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    ath: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nonce: Option<String>,
}

/// `htu`: the request's URL without its query and fragment (RFC 9449 section 4.2);
/// `url` already holds the scheme and host in their normal form.
pub(crate) fn htu(url: &url::Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.into()
}

/// `ath`: the base64url SHA-256 of the access token's ASCII (RFC 9449 section 4.2).
pub(crate) fn ath(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
}

/// A `jti`: 128 random bits.
fn jti() -> Option<String> {
    let mut bytes = [0u8; 16];
    SystemRandom::new().fill(&mut bytes).ok()?;
    Some(URL_SAFE_NO_PAD.encode(bytes))
}

/// Which kind of server a nonce is for: an authorization server's token endpoint (RFC
/// 9449 section 8) or a resource server, the MCP server (section 9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Server {
    Authorization,
    Resource,
}

/// The latest nonce each server gave, per kind and origin: shared by every grant of one
/// client, bounded.
#[derive(Debug, Default)]
pub(crate) struct Nonces {
    known: Mutex<Vec<((Server, String), String)>>,
}

impl Nonces {
    fn origin(url: &url::Url) -> String {
        url.origin().ascii_serialization()
    }

    /// The nonce to send to `url`, if its server gave one.
    pub(crate) fn get(&self, server: Server, url: &url::Url) -> Option<String> {
        let key = (server, Self::origin(url));
        let known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        known
            .iter()
            .find(|(at, _)| *at == key)
            .map(|(_, nonce)| nonce.clone())
    }

    /// Keeps the nonce a server at `url` gave (a `DPoP-Nonce` header); one that is not a
    /// nonce (RFC 9449's `NQCHAR`, 1 to 1,024 of them) is ignored. Returns whether it is
    /// kept and differs from the one known.
    pub(crate) fn learn(&self, server: Server, url: &url::Url, nonce: &str) -> bool {
        if !is_nonce(nonce) {
            return false;
        }
        let key = (server, Self::origin(url));
        let mut known = self.known.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(at) = known.iter().position(|(at, _)| *at == key) {
            let (_, old) = known.remove(at);
            known.push((key, nonce.to_owned()));
            return old != nonce;
        }
        if known.len() == MAX_NONCES {
            known.remove(0);
        }
        known.push((key, nonce.to_owned()));
        true
    }
}

/// RFC 9449's `nonce = 1*NQCHAR` (`%x21 / %x23-5B / %x5D-7E`), bounded.
fn is_nonce(value: &str) -> bool {
    (1..=MAX_NONCE_LEN).contains(&value.len())
        && value
            .bytes()
            .all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

/// Whether a resource server's refusal asks for a nonce: a 401 whose `WWW-Authenticate`
/// challenge says `error="use_dpop_nonce"` (RFC 9449 section 9).
pub(crate) fn resource_wants_nonce(status: u16, challenge: Option<&str>) -> bool {
    status == 401
        && challenge.is_some_and(|challenge| {
            challenge.split(',').any(|part| {
                let Some((name, value)) = part.split_once('=') else {
                    return false;
                };
                let name = name.trim().rsplit(' ').next().unwrap_or_default();
                name.eq_ignore_ascii_case("error") && value.trim().trim_matches('"') == USE_NONCE
            })
        })
}

/// Whether a token endpoint's refusal asks for a nonce: a 400 whose JSON body's `error`
/// is `use_dpop_nonce` (RFC 9449 section 8).
pub(crate) fn authorization_wants_nonce(status: u16, body: &[u8]) -> bool {
    status == 400
        && serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|body| body.get("error")?.as_str().map(|e| e == USE_NONCE))
            .unwrap_or(false)
}

/// A grant's DPoP binding: its key, and the client's nonces. What a DPoP-bound token
/// carries to every request that presents it. Equal (and hashed) by the key's
/// thumbprint; `Debug` shows only that.
#[derive(Clone)]
pub(crate) struct Dpop {
    key: Arc<DpopKey>,
    nonces: Arc<Nonces>,
}

impl fmt::Debug for Dpop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Dpop").field(&self.key.thumbprint).finish()
    }
}

impl PartialEq for Dpop {
    fn eq(&self, other: &Self) -> bool {
        self.key.thumbprint == other.key.thumbprint
    }
}

impl Eq for Dpop {}

impl std::hash::Hash for Dpop {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.thumbprint.hash(state);
    }
}

impl Dpop {
    pub(crate) fn new(key: Arc<DpopKey>, nonces: Arc<Nonces>) -> Self {
        Self { key, nonces }
    }

    pub(crate) fn key(&self) -> &Arc<DpopKey> {
        &self.key
    }

    /// The encoded header every proof of this key starts with (see
    /// [`DpopKey::proof_prefix`]).
    pub(crate) fn proof_prefix(&self) -> &str {
        self.key.proof_prefix()
    }

    /// A fresh proof for one request: `method` to `url` (a server of kind `server`),
    /// presenting `token` if any (its hash becomes `ath`), with the nonce the server gave
    /// last. `None` when the system's random source fails.
    pub(crate) fn proof(
        &self,
        server: Server,
        method: &str,
        url: &url::Url,
        token: Option<&str>,
    ) -> Option<String> {
        let claims = Claims {
            jti: jti()?,
            htm: method,
            htu: htu(url),
            iat: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |now| now.as_secs()),
            ath: token.map(ath),
            nonce: self.nonces.get(server, url),
        };
        self.key.sign(&claims)
    }

    /// The nonce the next proof for `url` carries, if its server gave one.
    pub(crate) fn nonce(&self, server: Server, url: &url::Url) -> Option<String> {
        self.nonces.get(server, url)
    }

    /// Keeps a nonce a server at `url` gave; whether it is new.
    pub(crate) fn learn(&self, server: Server, url: &url::Url, nonce: &str) -> bool {
        self.nonces.learn(server, url, nonce)
    }
}

#[cfg(test)]
mod tests {
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
    use serde_json::Value;

    use super::*;

    fn decode(part: &str) -> Value {
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
    }

    /// Checks a proof as a server would (signature with the header's key, `typ`, `alg`,
    /// no private part) and returns its header and claims.
    fn verified(proof: &str) -> (Value, Value) {
        let parts: Vec<&str> = proof.split('.').collect();
        assert_eq!(parts.len(), 3, "{proof}");
        let header = decode(parts[0]);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none(), "no private key: {header}");
        let coordinate = |name: &str| {
            URL_SAFE_NO_PAD
                .decode(header["jwk"][name].as_str().unwrap())
                .unwrap()
        };
        let mut point = vec![4];
        point.extend(coordinate("x"));
        point.extend(coordinate("y"));
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        assert_eq!(signature.len(), 64, "R||S, not DER");
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .expect("the signature verifies with the header's key");
        (header, decode(parts[1]))
    }

    #[test]
    fn a_proof_verifies_and_binds_the_request() {
        let dpop = Dpop::new(
            Arc::new(DpopKey::generate().unwrap()),
            Arc::new(Nonces::default()),
        );
        let url = url::Url::parse("HTTPS://MCP.Example.com:443/a/mcp?x=1#frag").unwrap();
        let proof = dpop
            .proof(Server::Resource, "POST", &url, Some("at-1"))
            .unwrap();
        let (header, claims) = verified(&proof);
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example.com/a/mcp");
        assert_eq!(claims["ath"], ath("at-1"));
        assert!(claims.get("nonce").is_none());
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        assert!(claims["iat"].as_u64().unwrap().abs_diff(now) <= 1);
        // RFC 7638: the thumbprint of the header's key.
        let jwk = &header["jwk"];
        let members = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            jwk["x"].as_str().unwrap(),
            jwk["y"].as_str().unwrap()
        );
        assert_eq!(
            dpop.key().thumbprint(),
            URL_SAFE_NO_PAD.encode(Sha256::digest(members))
        );
        assert!(proof.starts_with(dpop.key().proof_prefix()));
        // A token request presents no token: no ath.
        let token_request = dpop
            .proof(Server::Authorization, "POST", &url, None)
            .unwrap();
        assert!(verified(&token_request).1.get("ath").is_none());
    }

    #[test]
    fn every_proof_is_fresh() {
        let dpop = Dpop::new(
            Arc::new(DpopKey::generate().unwrap()),
            Arc::new(Nonces::default()),
        );
        let url = url::Url::parse("http://127.0.0.1:9/mcp").unwrap();
        let mut jtis = std::collections::HashSet::new();
        for _ in 0..200 {
            let proof = dpop
                .proof(Server::Resource, "POST", &url, Some("t"))
                .unwrap();
            let jti = verified(&proof).1["jti"].as_str().unwrap().to_owned();
            assert_eq!(URL_SAFE_NO_PAD.decode(&jti).unwrap().len(), 16);
            assert!(jtis.insert(jti), "a jti was reused");
        }
    }

    #[test]
    fn a_stored_key_is_the_same_key_and_shows_nowhere() {
        let key = DpopKey::generate().unwrap();
        let again = DpopKey::from_stored(key.stored()).unwrap();
        assert_eq!(again.thumbprint(), key.thumbprint());
        assert_eq!(again.proof_prefix(), key.proof_prefix());
        let other = DpopKey::generate().unwrap();
        assert_ne!(other.thumbprint(), key.thumbprint());
        for bad in ["", "not base64!", "AAAA", &other.stored().expose()[..40]] {
            assert_eq!(
                DpopKey::from_stored(&Secret::new(bad)).unwrap_err(),
                KeyError::Unreadable,
                "{bad}"
            );
        }
        let dpop = Dpop::new(Arc::new(key), Arc::new(Nonces::default()));
        let debug = format!("{dpop:?} {:?}", dpop.key());
        assert!(!debug.contains(dpop.key().stored().expose()), "{debug}");
        assert!(debug.contains(dpop.key().thumbprint()), "{debug}");
    }

    #[test]
    fn nonces_are_kept_per_server_kind_and_origin() {
        let nonces = Arc::new(Nonces::default());
        let dpop = Dpop::new(Arc::new(DpopKey::generate().unwrap()), Arc::clone(&nonces));
        let rs = url::Url::parse("https://mcp.example.com/mcp?q=1").unwrap();
        let same_origin = url::Url::parse("https://mcp.example.com:443/other").unwrap();
        let other = url::Url::parse("https://mcp.example.com:8443/mcp").unwrap();
        assert!(dpop.learn(Server::Resource, &rs, "n-1"));
        assert!(
            !dpop.learn(Server::Resource, &same_origin, "n-1"),
            "not new"
        );
        assert_eq!(
            nonces.get(Server::Resource, &same_origin).as_deref(),
            Some("n-1")
        );
        assert_eq!(nonces.get(Server::Resource, &other), None);
        assert_eq!(nonces.get(Server::Authorization, &rs), None);
        let proof = dpop.proof(Server::Resource, "GET", &rs, Some("t")).unwrap();
        assert_eq!(verified(&proof).1["nonce"], "n-1");
        // Rotated: the newest is sent.
        assert!(dpop.learn(Server::Resource, &rs, "n-2"));
        let proof = dpop.proof(Server::Resource, "GET", &rs, Some("t")).unwrap();
        assert_eq!(verified(&proof).1["nonce"], "n-2");
        // What is not a nonce is ignored.
        for bad in ["", "a b", "quote\"", "back\\slash", "é", &"x".repeat(1025)] {
            assert!(!dpop.learn(Server::Resource, &rs, bad), "{bad:?}");
        }
        // Bounded: the oldest origin goes.
        for port in 0..MAX_NONCES {
            let url = url::Url::parse(&format!("https://h.example:{}/", port + 1)).unwrap();
            nonces.learn(Server::Resource, &url, "n");
        }
        assert_eq!(nonces.get(Server::Resource, &rs), None);
    }

    #[test]
    fn nonce_challenges_are_read_from_either_server() {
        let cases: [(u16, Option<&str>, bool); 7] = [
            (
                401,
                Some(r#"DPoP error="use_dpop_nonce", error_description="x""#),
                true,
            ),
            (401, Some(r#"DPoP realm="r", error="use_dpop_nonce""#), true),
            (401, Some("DPoP error=use_dpop_nonce"), true),
            (401, Some(r#"DPoP error="invalid_token""#), false),
            (
                401,
                Some(r#"DPoP resource_metadata="https://x/use_dpop_nonce""#),
                false,
            ),
            (403, Some(r#"DPoP error="use_dpop_nonce""#), false),
            (401, None, false),
        ];
        for (status, challenge, wants) in cases {
            assert_eq!(
                resource_wants_nonce(status, challenge),
                wants,
                "{status} {challenge:?}"
            );
        }
        let cases: [(u16, &str, bool); 4] = [
            (400, r#"{"error":"use_dpop_nonce"}"#, true),
            (400, r#"{"error":"invalid_dpop_proof"}"#, false),
            (401, r#"{"error":"use_dpop_nonce"}"#, false),
            (400, "use_dpop_nonce", false),
        ];
        for (status, body, wants) in cases {
            assert_eq!(
                authorization_wants_nonce(status, body.as_bytes()),
                wants,
                "{body}"
            );
        }
    }

    #[test]
    fn metadata_offers_dpop_only_with_es256() {
        let metadata = |value: Value| HashMap::from([(METADATA_FIELD.to_owned(), value)]);
        assert!(offered(&metadata(serde_json::json!(["RS256", "ES256"]))));
        assert!(!offered(&metadata(serde_json::json!(["RS256"]))));
        assert!(!offered(&metadata(serde_json::json!("ES256"))));
        assert!(!offered(&HashMap::new()));
    }
}
