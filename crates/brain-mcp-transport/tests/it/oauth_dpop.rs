//! DPoP (RFC 9449) against the scripted servers with DPoP on: they check every proof
//! (signature, `htm`, `htu`, `iat`, `ath`, the key a token is bound to), refuse a replayed
//! `jti`, and ask for nonces when told to. A grant's key is made with it, stored with it,
//! and proven on every token request and every request to the MCP server.

use std::{collections::HashSet, sync::atomic::Ordering};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use brain_mcp_transport::{
    AuthorizationCodeGrant, CredentialStore, Delivery, EraPreference, ErrorKind, Expected, Grant,
    GrantKey, StoredGrant,
};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::{
    oauth::{Setup, call_as, delegated},
    oauth_servers::{
        dpop::{At, SeenProof},
        lock,
    },
    support::client_with,
};

fn dpop_grant() -> Grant {
    Grant::OAuth(AuthorizationCodeGrant::new().dpop(true))
}

/// The scripted servers with DPoP on.
async fn dpop_setup() -> Setup {
    let setup = Setup::start().await;
    setup
        .servers
        .resource
        .state
        .dpop
        .on
        .store(true, Ordering::SeqCst);
    setup
}

async fn stored(setup: &Setup) -> StoredGrant {
    let key = GrantKey::new("acme", setup.url(), setup.servers.issuer());
    setup.store.load(&key).await.unwrap().unwrap().grant
}

fn proofs(setup: &Setup, at: At) -> Vec<SeenProof> {
    setup.servers.resource.state.dpop.proofs_at(at)
}

/// No `jti` was sent twice, to either server.
fn no_proof_reused(setup: &Setup) {
    let all = lock(&setup.servers.resource.state.dpop.proofs).clone();
    let jtis: HashSet<_> = all.iter().map(|proof| proof.jti.clone()).collect();
    assert_eq!(jtis.len(), all.len(), "a proof was reused: {all:?}");
}

/// A call that logs the tenant in (through the authorizer), with DPoP asked for.
async fn login(setup: &Setup) {
    let outcome = call_as(
        &setup.interactive_client(),
        &setup.url(),
        "acme",
        dpop_grant(),
        json!({}),
    )
    .await;
    assert!(outcome.is_ok(), "{outcome:?}");
}

fn ath(token: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(token.as_bytes()))
}

#[tokio::test]
async fn a_login_binds_the_grant_to_its_own_key_and_every_request_proves_it() {
    let setup = dpop_setup().await;
    let client = setup.interactive_client();
    for _ in 0..3 {
        let outcome = call_as(&client, &setup.url(), "acme", dpop_grant(), json!({})).await;
        assert!(outcome.is_ok(), "{outcome:?}");
    }
    assert_eq!(setup.tool_calls_run(), 3);
    let dpop = &setup.servers.resource.state.dpop;
    let grant = stored(&setup).await;
    let jkt = grant.dpop_thumbprint.clone().expect("stored with its key");
    let key = grant.dpop_key.clone().expect("stored with its key");
    let access = grant.access_token.clone().unwrap();
    // The code exchange proved the key, and the token is bound to it.
    let exchange = proofs(&setup, At::Token);
    assert_eq!(exchange.len(), 1, "{exchange:?}");
    assert_eq!(
        (exchange[0].jkt.as_str(), exchange[0].ath.as_deref()),
        (jkt.as_str(), None)
    );
    assert_eq!(exchange[0].refused, None);
    assert_eq!(
        dpop.bound_to(access.expose()).as_deref(),
        Some(jkt.as_str())
    );
    // Every request to the MCP server: `Authorization: DPoP` (the server refuses a bound
    // token under Bearer) and a good proof of that key for that token.
    let requests = lock(&setup.servers.resource.state.seen)
        .iter()
        .filter(|(_, token, _)| token.is_some())
        .count();
    let resource = proofs(&setup, At::Resource);
    assert_eq!(resource.len(), requests, "one proof per request");
    for proof in &resource {
        assert_eq!(proof.refused, None, "{proof:?}");
        assert_eq!(proof.jkt, jkt);
        assert_eq!(proof.ath.as_deref(), Some(ath(access.expose()).as_str()));
        assert_eq!(proof.htu, setup.url());
    }
    assert_eq!(dpop.unproved.load(Ordering::SeqCst), 0);
    no_proof_reused(&setup);
    // The key is a secret: not in the grant's Debug.
    assert!(!format!("{grant:?}").contains(key.expose()));
}

#[tokio::test]
async fn dpop_is_used_only_when_the_binding_asks_and_the_server_offers() {
    // The server offers; the binding does not ask: Bearer.
    let setup = dpop_setup().await;
    call_as(
        &setup.interactive_client(),
        &setup.url(),
        "acme",
        delegated(),
        json!({}),
    )
    .await
    .unwrap();
    assert!(lock(&setup.servers.resource.state.dpop.proofs).is_empty());
    assert_eq!(stored(&setup).await.dpop_key, None);
    // The binding asks; the server does not offer: Bearer.
    let setup = Setup::start().await;
    login(&setup).await;
    assert_eq!(stored(&setup).await.dpop_key, None);
    assert_eq!(setup.tool_calls_run(), 1);
}

#[tokio::test]
async fn nonces_from_both_servers_are_answered_once_each_and_followed_when_rotated() {
    let setup = dpop_setup().await;
    let dpop = &setup.servers.resource.state.dpop;
    *lock(&dpop.as_nonce) = Some("as-nonce-1".into());
    *lock(&dpop.rs_nonce) = Some("rs-nonce-1".into());
    let client = setup.interactive_client();
    let outcome = call_as(&client, &setup.url(), "acme", dpop_grant(), json!({})).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    // The token endpoint asked once; the code exchange went again with its nonce.
    let nonces = |proofs: &[SeenProof]| -> Vec<(Option<String>, Option<String>)> {
        proofs
            .iter()
            .map(|proof| (proof.nonce.clone(), proof.refused.clone()))
            .collect()
    };
    assert_eq!(
        nonces(&proofs(&setup, At::Token)),
        [
            (None, Some("use_dpop_nonce".into())),
            (Some("as-nonce-1".into()), None)
        ]
    );
    // The MCP server asked once; everything after carried its nonce.
    let resource = proofs(&setup, At::Resource);
    assert_eq!(
        nonces(&resource[..1]),
        [(None, Some("use_dpop_nonce".into()))]
    );
    assert!(
        resource[1..]
            .iter()
            .all(|proof| proof.nonce.as_deref() == Some("rs-nonce-1") && proof.refused.is_none()),
        "{resource:?}"
    );
    // The MCP server rotates its nonce: the next call is refused once, goes again with
    // the new one, and runs once.
    *lock(&dpop.rs_nonce) = Some("rs-nonce-2".into());
    let seen = resource.len();
    let outcome = call_as(&client, &setup.url(), "acme", dpop_grant(), json!({})).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let after = &proofs(&setup, At::Resource)[seen..];
    assert_eq!(
        nonces(&after[..1]),
        [(Some("rs-nonce-1".into()), Some("use_dpop_nonce".into()))]
    );
    assert!(
        after[1..]
            .iter()
            .all(|proof| proof.nonce.as_deref() == Some("rs-nonce-2") && proof.refused.is_none()),
        "{after:?}"
    );
    assert_eq!(setup.tool_calls_run(), 2);
    assert_eq!(proofs(&setup, At::Token).len(), 2, "no new token asked for");
    assert_eq!(lock(&setup.servers.auth.state.authorizations).len(), 1);
    no_proof_reused(&setup);
}

/// A server that refuses every call for want of a nonce, each time with a new one: the
/// call goes again once with the nonce (its one resend), never a third time, and was not
/// run.
#[tokio::test]
async fn a_call_refused_for_a_nonce_again_is_not_sent_a_third_time() {
    for era in [EraPreference::Legacy, EraPreference::Modern] {
        let setup = dpop_setup().await;
        let dpop = &setup.servers.resource.state.dpop;
        let client = client_with(
            setup
                .options()
                .era(era)
                .authorizer(setup.authorizer.clone()),
        );
        call_as(&client, &setup.url(), "acme", dpop_grant(), json!({}))
            .await
            .unwrap();
        dpop.refuse_calls_for_nonce.store(true, Ordering::SeqCst);
        let before = proofs(&setup, At::Resource).len();
        let error = call_as(&client, &setup.url(), "acme", dpop_grant(), json!({}))
            .await
            .unwrap_err();
        assert_eq!(
            (error.kind(), error.delivery()),
            (ErrorKind::AuthorizationFailed, Delivery::NotSent),
            "{era:?}: {error}"
        );
        assert!(error.detail().contains("DPoP nonce"), "{era:?}: {error}");
        let refused: Vec<_> = proofs(&setup, At::Resource)[before..]
            .iter()
            .filter(|proof| proof.refused.is_some())
            .cloned()
            .collect();
        assert_eq!(refused.len(), 2, "{era:?}: the call, then its one resend");
        assert_eq!(
            refused[1].nonce.as_deref(),
            Some("nonce-1"),
            "{era:?}: the resend carried the nonce the refusal gave"
        );
        assert_eq!(
            setup.tool_calls_run(),
            1,
            "{era:?}: the refused call never ran"
        );
        assert_eq!(lock(&setup.servers.auth.state.authorizations).len(), 1);
        no_proof_reused(&setup);
    }
}

#[tokio::test]
async fn a_refresh_from_another_client_proves_the_stored_key() {
    let setup = dpop_setup().await;
    login(&setup).await;
    let first = stored(&setup).await;
    let jkt = first.dpop_thumbprint.clone().unwrap();
    // The server stops accepting the token (it expired on its clock); another process,
    // with nobody to authorize, refreshes the grant from the store.
    setup
        .servers
        .resource
        .state
        .revoke(first.access_token.as_ref().unwrap().expose());
    let outcome = call_as(
        &setup.client(),
        &setup.url(),
        "acme",
        dpop_grant(),
        json!({}),
    )
    .await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let refreshes = setup.servers.auth.state.token_requests("refresh_token");
    assert_eq!(refreshes.len(), 1);
    // The authorization server refuses a bound refresh token proved with another key:
    // the refresh proved the stored one.
    let token_proofs = proofs(&setup, At::Token);
    let refresh = token_proofs.last().unwrap();
    assert_eq!(
        (refresh.jkt.as_str(), &refresh.refused),
        (jkt.as_str(), &None)
    );
    let after = stored(&setup).await;
    assert_eq!(
        after.dpop_key.as_ref().map(|key| key.expose().to_owned()),
        first.dpop_key.as_ref().map(|key| key.expose().to_owned()),
        "the same key is kept with the refreshed grant"
    );
    assert_eq!(after.dpop_thumbprint.as_deref(), Some(jkt.as_str()));
    let access = after.access_token.unwrap();
    assert_ne!(access.expose(), first.access_token.unwrap().expose());
    assert_eq!(
        setup
            .servers
            .resource
            .state
            .dpop
            .bound_to(access.expose())
            .as_deref(),
        Some(jkt.as_str())
    );
    assert_eq!(setup.tool_calls_run(), 2);
    assert_eq!(lock(&setup.servers.auth.state.authorizations).len(), 1);
    no_proof_reused(&setup);
}

#[tokio::test]
async fn a_grant_that_lost_its_key_says_so_and_a_login_makes_a_new_one() {
    let setup = dpop_setup().await;
    login(&setup).await;
    let mut grant = stored(&setup).await;
    let old = grant.dpop_thumbprint.clone().unwrap();
    // The key is lost from the store (its thumbprint stays with the grant).
    grant.dpop_key = None;
    let key = GrantKey::new("acme", setup.url(), setup.servers.issuer());
    let _ = setup.store.save(&key, &grant, Expected::Any).await.unwrap();
    // Nobody to authorize: a clear error, nothing sent.
    let error = call_as(
        &setup.client(),
        &setup.url(),
        "acme",
        dpop_grant(),
        json!({}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::AuthorizationRequired, Delivery::NotSent),
        "{error}"
    );
    assert!(error.detail().contains("DPoP key"), "{error}");
    assert_eq!(setup.tool_calls_run(), 1);
    // Someone to authorize: a fresh login, with a new key.
    login(&setup).await;
    assert_eq!(lock(&setup.servers.auth.state.authorizations).len(), 2);
    let renewed = stored(&setup).await;
    assert!(renewed.dpop_key.is_some());
    assert_ne!(renewed.dpop_thumbprint.as_deref(), Some(old.as_str()));
    assert_eq!(setup.tool_calls_run(), 2);
    no_proof_reused(&setup);
}
