//! A JWT issuer for the gateway's resource-server side: an authorization server that only
//! publishes RFC 8414 metadata and its JWKS (one ES256 key), and signs access tokens with
//! that key ([`JwtIssuer::mint`]). The gateway fetches the keys once and caches them; the
//! benchmark mints one token for its load generator.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use ring::{
    rand::SystemRandom,
    signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _},
};
use serde_json::{Value, json};
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path},
};

/// The key id the issuer's one key carries.
const KID: &str = "bench-1";

/// An authorization server on `127.0.0.1:0` that publishes its metadata and JWKS, and the
/// ES256 key that signs its tokens; stops when dropped.
#[derive(Debug)]
pub struct JwtIssuer {
    server: MockServer,
    key: EcdsaKeyPair,
}

impl JwtIssuer {
    /// Starts the issuer (its URI is its `iss`).
    ///
    /// # Panics
    /// When the system's random source fails.
    pub async fn start() -> Self {
        let rng = SystemRandom::new();
        let document = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .expect("the system's random source works");
        let key =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, document.as_ref(), &rng)
                .expect("a key just generated parses");
        // An uncompressed P-256 point: 0x04, x, y.
        let point = key.public_key().as_ref();
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "kid": KID, "alg": "ES256", "use": "sig",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..]),
        });
        let server = MockServer::start().await;
        let issuer = server.uri();
        Mock::given(method("GET"))
            .and(path("/.well-known/oauth-authorization-server"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "issuer": issuer,
                "jwks_uri": format!("{issuer}/jwks"),
                "token_endpoint": format!("{issuer}/token"),
            })))
            .mount(&server)
            .await;
        Mock::given(method("GET"))
            .and(path("/jwks"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({"keys": [jwk]})))
            .mount(&server)
            .await;
        Self { server, key }
    }

    /// The issuer (`iss`), which is also the server's URI.
    pub fn issuer(&self) -> String {
        self.server.uri()
    }

    /// How many times the JWKS was fetched.
    pub async fn jwks_fetches(&self) -> usize {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .filter(|request| request.url.path() == "/jwks")
            .count()
    }

    /// A signed access token (ES256, `kid` of the published key) with these claims.
    ///
    /// # Panics
    /// When the system's random source fails.
    pub fn mint(&self, claims: &Value) -> String {
        let part = |value: &Value| URL_SAFE_NO_PAD.encode(value.to_string());
        let signed = format!(
            "{}.{}",
            part(&json!({"alg": "ES256", "typ": "at+jwt", "kid": KID})),
            part(claims)
        );
        let signature = self
            .key
            .sign(&SystemRandom::new(), signed.as_bytes())
            .expect("the system's random source works");
        format!("{signed}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }
}
