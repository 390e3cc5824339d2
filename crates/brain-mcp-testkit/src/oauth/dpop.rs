//! DPoP (RFC 9449) as the scripted servers check it: off until a test turns it on. Then
//! the authorization server advertises ES256, checks the proof of every token request,
//! binds what it issues to the proof's key (`token_type: DPoP`) and refuses a refresh
//! proved with another key; the resource server wants `Authorization: DPoP` and a valid,
//! never replayed proof for the token's key on every request. Either asks for a nonce
//! when a test sets one (`use_dpop_nonce`, RFC 9449 sections 8 and 9). Every proof seen
//! is recorded, checked or not, for the test to read.

use std::{
    collections::{HashMap, HashSet},
    sync::{
        Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    },
    time::{SystemTime, UNIX_EPOCH},
};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::{
    rand::SystemRandom,
    signature::{
        ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, UnparsedPublicKey,
    },
};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::lock;

/// Which server saw a proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// The authorization server's token endpoint.
    Token,
    /// The MCP resource server.
    Resource,
}

/// One proof as a server read it.
#[derive(Debug, Clone)]
pub struct SeenProof {
    /// Where it was sent.
    pub at: At,
    /// `jti`.
    pub jti: String,
    /// The thumbprint (RFC 7638) of its key.
    pub jkt: String,
    /// `htm` and `htu`.
    pub htm: String,
    /// `htu`.
    pub htu: String,
    /// `ath`, if any.
    pub ath: Option<String>,
    /// `nonce`, if any.
    pub nonce: Option<String>,
    /// Why the server refused it (a bad proof or a missing nonce), if it did.
    pub refused: Option<String>,
}

/// The DPoP settings of both servers and what they saw.
#[derive(Debug, Default)]
pub struct DpopState {
    /// On: both servers speak DPoP as described above.
    pub on: AtomicBool,
    /// The nonce the token endpoint wants (`use_dpop_nonce` without it).
    pub as_nonce: Mutex<Option<String>>,
    /// The nonce the resource server wants (`use_dpop_nonce` without it).
    pub rs_nonce: Mutex<Option<String>>,
    /// Set: every `tools/call` is refused for want of a nonce, with a new nonce each time
    /// (a server that never accepts one).
    pub refuse_calls_for_nonce: AtomicBool,
    /// Every proof seen, in order.
    pub proofs: Mutex<Vec<SeenProof>>,
    /// Requests that came with no proof (at a server that wanted one).
    pub unproved: AtomicUsize,
    /// Tokens (access and refresh) -> the thumbprint of the key they are bound to.
    bound: Mutex<HashMap<String, String>>,
    jtis: Mutex<HashSet<String>>,
    nonces_made: AtomicUsize,
}

/// A proof's refusal: an OAuth error code and what was wrong.
pub(super) struct Refusal {
    pub(super) error: &'static str,
    /// The nonce to hand out with a `use_dpop_nonce` refusal.
    pub(super) nonce: Option<String>,
}

impl DpopState {
    /// Whether DPoP is on.
    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::SeqCst)
    }

    /// The proofs one server saw.
    pub fn proofs_at(&self, at: At) -> Vec<SeenProof> {
        lock(&self.proofs)
            .iter()
            .filter(|proof| proof.at == at)
            .cloned()
            .collect()
    }

    /// The thumbprint a token is bound to, if any.
    pub fn bound_to(&self, token: &str) -> Option<String> {
        lock(&self.bound).get(token).cloned()
    }

    pub(super) fn bind(&self, token: &str, jkt: &str) {
        lock(&self.bound).insert(token.to_owned(), jkt.to_owned());
    }

    fn fresh_nonce(&self) -> String {
        format!(
            "nonce-{}",
            self.nonces_made.fetch_add(1, Ordering::SeqCst) + 1
        )
    }

    /// Checks the `DPoP` header of a request to `at` (`htm`, `htu`, presenting `token`):
    /// the proof's key thumbprint when it is good, else why not. `is_call`: a
    /// `tools/call` (see [`DpopState::refuse_calls_for_nonce`]).
    pub(super) fn check(
        &self,
        at: At,
        header: Option<&str>,
        htm: &str,
        htu: &str,
        token: Option<&str>,
        is_call: bool,
    ) -> Result<String, Refusal> {
        let invalid = |error| Refusal { error, nonce: None };
        let Some(header) = header else {
            self.unproved.fetch_add(1, Ordering::SeqCst);
            return Err(invalid("invalid_dpop_proof"));
        };
        let parsed = parse(header);
        let Ok((claims, jkt)) = parsed else {
            return Err(invalid("invalid_dpop_proof"));
        };
        let text = |name: &str| claims.get(name).and_then(Value::as_str).map(str::to_owned);
        let mut seen = SeenProof {
            at,
            jti: text("jti").unwrap_or_default(),
            jkt: jkt.clone(),
            htm: text("htm").unwrap_or_default(),
            htu: text("htu").unwrap_or_default(),
            ath: text("ath"),
            nonce: text("nonce"),
            refused: None,
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |now| now.as_secs());
        let iat = claims.get("iat").and_then(Value::as_u64).unwrap_or(0);
        let wanted_ath =
            token.map(|token| URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes())));
        let replayed = !seen.jti.is_empty() && !lock(&self.jtis).insert(seen.jti.clone());
        let wrong = if seen.jti.is_empty() || replayed {
            Some("invalid_dpop_proof: jti missing or replayed")
        } else if seen.htm != htm || seen.htu != htu || seen.htu.contains(['?', '#']) {
            Some("invalid_dpop_proof: htm or htu")
        } else if iat.abs_diff(now) > 300 {
            Some("invalid_dpop_proof: iat")
        } else if seen.ath != wanted_ath {
            Some("invalid_dpop_proof: ath")
        } else {
            None
        };
        let wanted_nonce = match at {
            At::Token => lock(&self.as_nonce).clone(),
            At::Resource if is_call && self.refuse_calls_for_nonce.load(Ordering::SeqCst) => {
                let nonce = self.fresh_nonce();
                *lock(&self.rs_nonce) = Some(nonce.clone());
                Some(format!("{nonce}-never"))
            }
            At::Resource => lock(&self.rs_nonce).clone(),
        };
        let result = match wrong {
            Some(why) => {
                seen.refused = Some(why.to_owned());
                Err(invalid("invalid_dpop_proof"))
            }
            None if wanted_nonce.is_some() && seen.nonce != wanted_nonce => {
                seen.refused = Some("use_dpop_nonce".to_owned());
                let nonce = match at {
                    At::Token => lock(&self.as_nonce).clone(),
                    At::Resource => lock(&self.rs_nonce).clone(),
                };
                Err(Refusal {
                    error: "use_dpop_nonce",
                    nonce,
                })
            }
            None => Ok(jkt),
        };
        lock(&self.proofs).push(seen);
        result
    }
}

/// A new ES256 key pair as a credential store keeps a grant's DPoP key (PKCS#8,
/// base64url): for a grant that a test or the benchmark stores itself.
///
/// # Panics
/// When the system's random source fails.
pub fn stored_key() -> String {
    let document =
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .expect("the system's random source works");
    URL_SAFE_NO_PAD.encode(document.as_ref())
}

/// A proof's claims and its key's thumbprint, when its form and signature are good.
fn parse(proof: &str) -> Result<(serde_json::Map<String, Value>, String), ()> {
    let parts: Vec<&str> = proof.split('.').collect();
    let [header, claims, signature] = parts[..] else {
        return Err(());
    };
    let decode = |part: &str| -> Result<Value, ()> {
        let bytes = URL_SAFE_NO_PAD.decode(part).map_err(|_| ())?;
        serde_json::from_slice(&bytes).map_err(|_| ())
    };
    let jose = decode(header)?;
    if jose["typ"] != "dpop+jwt" || jose["alg"] != "ES256" {
        return Err(());
    }
    let jwk = &jose["jwk"];
    if jwk.get("d").is_some() || jwk["kty"] != "EC" || jwk["crv"] != "P-256" {
        return Err(());
    }
    let (Some(x), Some(y)) = (jwk["x"].as_str(), jwk["y"].as_str()) else {
        return Err(());
    };
    let mut point = vec![4u8];
    point.extend(URL_SAFE_NO_PAD.decode(x).map_err(|_| ())?);
    point.extend(URL_SAFE_NO_PAD.decode(y).map_err(|_| ())?);
    let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|_| ())?;
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
        .verify(format!("{header}.{claims}").as_bytes(), &signature)
        .map_err(|_| ())?;
    let Value::Object(claims) = decode(claims)? else {
        return Err(());
    };
    let members = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    Ok((
        claims,
        URL_SAFE_NO_PAD.encode(Sha256::digest(members.as_bytes())),
    ))
}
