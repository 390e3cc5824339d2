//! Authorization servers that lie or cut corners: a token endpoint or registration at a
//! plain-http address off this machine, metadata without PKCE, token types this client
//! cannot send, answers that hold no token, metadata that names another issuer. Each must
//! fail before a secret leaves, before a grant is stored, and with a message that points
//! the right way.

use std::{sync::atomic::Ordering, time::Duration};

use brain_mcp_transport::{
    Authorization, CallError, CredentialStore, Delivery, ErrorKind, Grant, GrantKey, GrantStatus,
};
use serde_json::{Value, json};

use crate::{
    oauth::{Setup, call_as, client_credentials, delegated},
    oauth_servers::lock,
};

/// A plain-http address that is not this machine (`.invalid` never resolves: a request
/// that went out anyway fails differently, at once).
const OFF_MACHINE: &str = "http://as.example.invalid";

fn patch(setup: &Setup, fields: Value) {
    let mut patch = lock(&setup.servers.auth.state.metadata_patch);
    for (field, value) in fields.as_object().unwrap() {
        patch.insert(field.clone(), value.clone());
    }
}

async fn login(setup: &Setup) -> Result<GrantStatus, CallError> {
    setup
        .client()
        .authorize(
            &setup.url(),
            &Authorization::new("acme", delegated()),
            setup.authorizer.clone(),
            Duration::from_secs(20),
        )
        .await
}

async fn nothing_stored(setup: &Setup) {
    let key = GrantKey::new("acme", setup.url(), setup.servers.issuer());
    assert_eq!(
        setup.store.load(&key).await.unwrap(),
        None,
        "a grant was stored"
    );
}

fn assert_failed(error: &CallError, phrase: &str) {
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::AuthorizationFailed, Delivery::NotSent),
        "{error}"
    );
    assert!(error.detail().contains(phrase), "{error}");
    assert!(
        !error.detail().contains("refused the request"),
        "not the token endpoint's refusal: {error}"
    );
}

#[tokio::test]
async fn no_secret_goes_to_plain_http_off_this_machine_pinned_or_not() {
    for pinned in [false, true] {
        // Client credentials: the secret would go to the token endpoint.
        let setup = Setup::start().await;
        patch(
            &setup,
            json!({"token_endpoint": format!("{OFF_MACHINE}/token")}),
        );
        let mut grant = client_credentials(None);
        if pinned {
            grant = grant.issuer(setup.servers.issuer());
        }
        let error = call_as(
            &setup.client(),
            &setup.url(),
            "acme",
            Grant::ClientCredentials(grant),
            json!({}),
        )
        .await
        .unwrap_err();
        assert_failed(&error, "plain http");
        assert_eq!(setup.tool_calls_run(), 0);
        // A delegated login: registration (which would issue a client secret) and the
        // code exchange (code and PKCE verifier) are both off the machine.
        let setup = Setup::start().await;
        patch(
            &setup,
            json!({
                "registration_endpoint": format!("{OFF_MACHINE}/register"),
                "token_endpoint": format!("{OFF_MACHINE}/token"),
            }),
        );
        let error = login(&setup).await.unwrap_err();
        assert_failed(&error, "plain http");
        let state = &setup.servers.auth.state;
        assert_eq!(state.registrations.load(Ordering::SeqCst), 0);
        assert!(
            lock(&state.authorizations).is_empty(),
            "no authorization began"
        );
        nothing_stored(&setup).await;
        // A pre-registered client: the code and its verifier would go there.
        let setup = Setup::start().await;
        patch(
            &setup,
            json!({"token_endpoint": format!("{OFF_MACHINE}/token")}),
        );
        let grant =
            brain_mcp_transport::AuthorizationCodeGrant::new().client("pre-registered", None);
        let error = setup
            .client()
            .authorize(
                &setup.url(),
                &Authorization::new("acme", Grant::OAuth(grant)),
                setup.authorizer.clone(),
                Duration::from_secs(20),
            )
            .await
            .unwrap_err();
        assert_failed(&error, "plain http");
        nothing_stored(&setup).await;
    }
}

#[tokio::test]
async fn metadata_without_pkce_stops_a_login_before_it_begins() {
    for methods in [Value::Null, json!(["plain"])] {
        let setup = Setup::start().await;
        patch(&setup, json!({"code_challenge_methods_supported": methods}));
        let error = login(&setup).await.unwrap_err();
        assert_failed(&error, "PKCE");
        let state = &setup.servers.auth.state;
        assert!(
            lock(&state.authorizations).is_empty(),
            "no authorization URL"
        );
        assert!(
            lock(&setup.authorizer.prompts).is_empty(),
            "nobody was sent anywhere"
        );
        assert_eq!(state.registrations.load(Ordering::SeqCst), 0);
        assert!(lock(&state.tokens).is_empty());
        nothing_stored(&setup).await;
    }
}

#[tokio::test]
async fn only_bearer_tokens_are_used_whatever_their_case() {
    for token_type in ["bearer", "BEARER", "Bearer"] {
        let setup = Setup::start().await;
        *lock(&setup.servers.auth.state.token_type) = token_type.to_owned();
        let grant = Grant::ClientCredentials(client_credentials(None));
        call_as(&setup.client(), &setup.url(), "acme", grant, json!({}))
            .await
            .unwrap();
        assert!(login(&setup).await.is_ok(), "{token_type}");
    }
    for token_type in ["mac", "DPoP", "N_A"] {
        let setup = Setup::start().await;
        *lock(&setup.servers.auth.state.token_type) = token_type.to_owned();
        let grant = Grant::ClientCredentials(client_credentials(None));
        let error = call_as(&setup.client(), &setup.url(), "acme", grant, json!({}))
            .await
            .unwrap_err();
        assert_failed(&error, "another type than Bearer");
        assert!(
            setup.servers.resource.state.calls_seen().is_empty(),
            "{token_type}: the token was never sent"
        );
        let error = login(&setup).await.unwrap_err();
        assert_failed(&error, "another type than Bearer");
        nothing_stored(&setup).await;
    }
}

#[tokio::test]
async fn a_token_answer_without_a_usable_token_is_named_as_such() {
    let oversized = format!(r#"{{"access_token":"{}"}}"#, "x".repeat(2 * 1024 * 1024));
    let cases = [
        ("<html>ok</html>", "no usable token"),
        (r#"{"token_type":"Bearer"}"#, "no usable token"),
        (r#"{"access_token":"at-1"}"#, "no usable token"),
        (oversized.as_str(), "larger than 1 MiB"),
    ];
    for (body, phrase) in cases {
        let setup = Setup::start().await;
        *lock(&setup.servers.auth.state.token_answer) = Some((200, body.to_owned()));
        let grant = Grant::ClientCredentials(client_credentials(None));
        let error = call_as(&setup.client(), &setup.url(), "acme", grant, json!({}))
            .await
            .unwrap_err();
        assert_failed(&error, phrase);
        let error = login(&setup).await.unwrap_err();
        assert_failed(&error, phrase);
        nothing_stored(&setup).await;
    }
    // A refusal is still named as one, with its OAuth error code.
    let setup = Setup::start().await;
    *lock(&setup.servers.auth.state.token_answer) =
        Some((400, r#"{"error":"invalid_client"}"#.to_owned()));
    let grant = Grant::ClientCredentials(client_credentials(None));
    let error = call_as(&setup.client(), &setup.url(), "acme", grant, json!({}))
        .await
        .unwrap_err();
    assert!(
        error.detail().contains("refused the request") && error.detail().contains("invalid_client"),
        "{error}"
    );
}

#[tokio::test]
async fn metadata_that_names_another_issuer_is_an_rfc_8414_mismatch() {
    let setup = Setup::start().await;
    patch(
        &setup,
        json!({"issuer": "https://other-issuer.example.com"}),
    );
    for error in [
        login(&setup).await.unwrap_err(),
        call_as(
            &setup.client(),
            &setup.url(),
            "acme",
            Grant::ClientCredentials(client_credentials(None)),
            json!({}),
        )
        .await
        .unwrap_err(),
    ] {
        assert_eq!(error.kind(), ErrorKind::AuthorizationFailed, "{error}");
        assert!(error.detail().contains("RFC 8414"), "{error}");
        assert!(!error.detail().contains("RFC 9207"), "{error}");
        assert!(
            !error.detail().contains("other-issuer"),
            "server text: {error}"
        );
    }
    assert!(lock(&setup.servers.auth.state.tokens).is_empty());
}
