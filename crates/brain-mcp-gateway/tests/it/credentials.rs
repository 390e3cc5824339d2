//! Who calls: JWT access tokens from a configured issuer (its metadata and keys served by
//! a mock authorization server) and API keys; the tenant from the credentials only.

use std::time::{SystemTime, UNIX_EPOCH};

use brain_mcp_testkit::Era;
use brain_tools::EraPreference;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path},
};

use crate::support::{call, client, endpoint, initialize, list, post, start};

/// An ES256 key pair: the signing key, and its public key as a JWK with `kid`.
fn key_pair(kid: &str) -> (EncodingKey, Value) {
    use base64::Engine as _;
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let point = pair.public_key_raw();
    assert_eq!(point.len(), 65, "an uncompressed P-256 point");
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
        "x": b64(&point[1..33]), "y": b64(&point[33..]),
    });
    (EncodingKey::from_ec_der(&pair.serialize_der()), jwk)
}

/// A mock authorization server: RFC 8414 metadata naming its JWKS.
async fn issuer(keys: &[Value]) -> MockServer {
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
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"keys": keys})))
        .mount(&server)
        .await;
    server
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn token(key: &EncodingKey, kid: &str, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.to_owned());
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwt_access_tokens_name_the_tenant_and_every_bad_one_is_refused() {
    let (signing, jwk) = key_pair("k1");
    let (forger, _) = key_pair("k1");
    let authority = issuer(&[jwk]).await;
    let iss = authority.uri();
    let resource = "http://127.0.0.1/mcp";
    let running = start(
        Era::Both,
        json!({
            "resource": resource,
            "issuers": [{"issuer": iss}],
            "tenant_claim": "org",
            "scopes": ["mcp:tools"],
        }),
    )
    .await;
    let claims = |org: &str, aud: &str, iss: &str, exp: u64, scope: &str| {
        json!({"iss": iss, "aud": aud, "sub": "user-1", "org": org, "exp": exp,
               "iat": now(), "scope": scope})
    };
    let good = token(
        &signing,
        "k1",
        &claims("acme", resource, &iss, now() + 600, "mcp:tools"),
    );

    // A valid token: its tenant's tools, in both eras.
    for era in [EraPreference::Legacy, EraPreference::Modern] {
        let client = client(era);
        let listed = list(&client, endpoint(&running, &good)).await;
        assert_eq!(listed.tools.len(), 8, "{era:?}: acme's tools");
        let done = call(
            &client,
            endpoint(&running, &good),
            "echo",
            json!({"message": "jwt"}),
        )
        .await
        .unwrap();
        assert_eq!(done.result["content"][0]["text"], "jwt");
    }
    // The caller's token never goes upstream.
    let headers = running.upstream.counters().call_headers;
    assert!(
        headers
            .iter()
            .all(|h| h.values().all(|v| !v.contains(&good)))
    );

    // Every bad token gets 401 invalid_token; a missing scope 403 insufficient_scope.
    let cases = [
        (
            "forged",
            token(
                &forger,
                "k1",
                &claims("acme", resource, &iss, now() + 600, "mcp:tools"),
            ),
            401,
        ),
        (
            "expired",
            token(
                &signing,
                "k1",
                &claims("acme", resource, &iss, now() - 600, "mcp:tools"),
            ),
            401,
        ),
        (
            "wrong audience",
            token(
                &signing,
                "k1",
                &claims(
                    "acme",
                    "http://elsewhere/mcp",
                    &iss,
                    now() + 600,
                    "mcp:tools",
                ),
            ),
            401,
        ),
        (
            "wrong issuer",
            token(
                &signing,
                "k1",
                &claims(
                    "acme",
                    resource,
                    "http://127.0.0.1:1",
                    now() + 600,
                    "mcp:tools",
                ),
            ),
            401,
        ),
        (
            "unknown key",
            token(
                &signing,
                "k9",
                &claims("acme", resource, &iss, now() + 600, "mcp:tools"),
            ),
            401,
        ),
        (
            "no tenant",
            token(
                &signing,
                "k1",
                &json!({"iss": iss, "aud": resource, "exp": now() + 600, "scope": "mcp:tools"}),
            ),
            401,
        ),
        (
            "without the scope",
            token(
                &signing,
                "k1",
                &claims("acme", resource, &iss, now() + 600, "other"),
            ),
            403,
        ),
    ];
    for (case, token, status) in cases {
        let answer = post(&running.url, Some(&token), &initialize()).await;
        assert_eq!(answer.status().as_u16(), status, "{case}");
        let challenge = answer
            .headers()
            .get("www-authenticate")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        assert!(
            challenge.starts_with("Bearer resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\""),
            "{case}: {challenge}"
        );
        let code = if status == 403 {
            "insufficient_scope"
        } else {
            "invalid_token"
        };
        assert!(
            challenge.contains(&format!("error=\"{code}\"")),
            "{case}: {challenge}"
        );
        if status == 403 {
            assert!(challenge.contains("scope=\"mcp:tools\""), "{challenge}");
        }
    }
    // No token at all: the challenge, without an error code.
    let answer = post(&running.url, None, &initialize()).await;
    assert_eq!(answer.status(), 401);
    let challenge = answer.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(!challenge.contains("error="), "{challenge}");

    // The protected resource metadata names the authorization server.
    let base = running.url.trim_end_matches("/mcp");
    let metadata: Value =
        crate::support::get(&format!("{base}/.well-known/oauth-protected-resource/mcp"))
            .await
            .json()
            .await
            .unwrap();
    assert_eq!(metadata["resource"], resource);
    assert_eq!(metadata["authorization_servers"], json!([iss]));
    assert_eq!(metadata["scopes_supported"], json!(["mcp:tools"]));
    // Keys were fetched once, and the unknown kid made one more fetch at most.
    let fetches = authority
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.url.path() == "/jwks")
        .count();
    assert!((1..=2).contains(&fetches), "{fetches} key fetches");
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_name_the_tenant_and_anything_else_is_refused() {
    let running = start(Era::Both, json!({})).await;
    let client = client(EraPreference::Auto);
    let listed = list(&client, endpoint(&running, &running.key("globex"))).await;
    assert_eq!(listed.tools.len(), 1);
    for bad in ["mgw_not-a-key", "", "x.y.z"] {
        let answer = post(
            &running.url,
            Some(bad).filter(|b| !b.is_empty()),
            &initialize(),
        )
        .await;
        assert_eq!(answer.status(), 401, "{bad:?}");
        assert!(
            answer.headers()["www-authenticate"]
                .to_str()
                .unwrap()
                .starts_with("Bearer realm="),
        );
    }
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_used_only_by_the_tenant_that_opened_it() {
    let running = start(Era::Both, json!({})).await;
    let opened = post(&running.url, Some(&running.key("acme")), &initialize()).await;
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    drop(opened);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let send = |key: String| {
        let (url, session, list) = (running.url.clone(), session.clone(), list.clone());
        async move {
            crate::support::http()
                .post(url)
                .bearer_auth(key)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-11-25")
                .header("mcp-session-id", session)
                .body(list.to_string())
                .send()
                .await
                .unwrap()
        }
    };
    assert_eq!(send(running.key("globex")).await.status(), 404);
    assert!(send(running.key("acme")).await.status().is_success());
    running.stop().await;
}
