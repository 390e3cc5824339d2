//! OAuth flows against a scripted authorization server and MCP resource server: every
//! grant, refresh and its failures, step-up, the checks that keep credentials with the
//! right authorization server, and tenants' tokens kept apart on the wire.

use std::{
    sync::{Arc, atomic::Ordering},
    time::{Duration, SystemTime},
};

use brain_mcp_transport::{
    Authorization, AuthorizationCodeGrant, CallError, CallOutcome, CallRequest,
    ClientAuthentication, ClientCredentialsGrant, ClientOptions, CredentialStore, Delivery,
    Endpoint, EraPreference, ErrorKind, Expected, Grant, GrantKey, GrantStatus, McpClient,
    MemoryCredentialStore, Secret, SecretMethod, StoredGrant,
};
use serde_json::{Value, json};

use crate::{
    oauth_servers::{FollowRedirect, Iss, RefreshAnswer, Servers, lock},
    support::client_with,
};

pub(crate) const CLIENT_SECRET: &str = "cs-SECRET-0123456789abcdef";

/// A throwaway P-256 key (PKCS#8), for `private_key_jwt`.
#[cfg_attr(
    not(feature = "oauth-jwt"),
    expect(dead_code, reason = "the private_key_jwt tests need `oauth-jwt`")
)]
pub(crate) const EC_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgwSKwCO6aqE4oL7EE
/INYy+9XuR6pP2yeQQduw0VfuxahRANCAARWf3w4OIB21ezSaL8UvqEEnQEjNfca
d5Qpo4oyG5NfHl9LwHDz2MusoQGQvbx2t01jHEk/on98AsPlv5HJYm2I
-----END PRIVATE KEY-----
";

pub(crate) fn client_credentials(method: Option<SecretMethod>) -> ClientCredentialsGrant {
    ClientCredentialsGrant::new(
        "host-client",
        ClientAuthentication::Secret {
            secret: Secret::new(CLIENT_SECRET),
            method,
        },
    )
}

pub(crate) fn delegated() -> Grant {
    Grant::OAuth(AuthorizationCodeGrant::new())
}

pub(crate) struct Setup {
    pub(crate) servers: Servers,
    pub(crate) store: Arc<MemoryCredentialStore>,
    pub(crate) authorizer: Arc<FollowRedirect>,
}

impl Setup {
    pub(crate) async fn start() -> Self {
        Self {
            servers: Servers::start().await,
            store: Arc::new(MemoryCredentialStore::new()),
            authorizer: Arc::new(FollowRedirect::default()),
        }
    }

    pub(crate) fn options(&self) -> ClientOptions {
        ClientOptions::default()
            .warm_contexts(false)
            .credential_store(self.store.clone())
    }

    /// A client with no authorizer: a tenant without a grant cannot get one at call time.
    pub(crate) fn client(&self) -> McpClient {
        client_with(self.options())
    }

    /// A client whose authorizer follows the authorization server's redirect.
    pub(crate) fn interactive_client(&self) -> McpClient {
        client_with(self.options().authorizer(self.authorizer.clone()))
    }

    pub(crate) fn url(&self) -> String {
        self.servers.url()
    }

    /// Stores a delegated grant for a tenant, as a login would have; its access token
    /// is accepted by the resource server and its refresh token known to the
    /// authorization server. `age` is how long ago it was issued (1 hour lifetime).
    pub(crate) async fn store_grant(&self, tenant: &str, access: &str, age: Duration) {
        let scopes = vec!["files:read".to_owned()];
        let refresh = format!("rt-{tenant}-stored-0123456789");
        let mut grant = StoredGrant::new("pre-registered-client");
        grant.access_token = Some(Secret::new(access));
        grant.refresh_token = Some(Secret::new(refresh.clone()));
        grant.set_lifetime(SystemTime::now() - age, Some(Duration::from_secs(3600)));
        grant.scopes = scopes.clone();
        let key = GrantKey::new(tenant, self.url(), self.servers.issuer());
        let _ = self.store.save(&key, &grant, Expected::Any).await.unwrap();
        self.servers.resource.state.accept(access, scopes.clone());
        self.servers
            .auth
            .state
            .knows_refresh_token(&refresh, scopes);
    }

    pub(crate) fn tool_calls_run(&self) -> usize {
        self.servers.resource.state.calls.load(Ordering::SeqCst)
    }
}

pub(crate) async fn call_as(
    client: &McpClient,
    url: &str,
    tenant: &str,
    grant: Grant,
    arguments: Value,
) -> Result<CallOutcome, CallError> {
    let request = CallRequest::new(
        Endpoint::http(url, None),
        "echo",
        "call-1",
        Duration::from_secs(20),
    )
    .arguments(arguments.as_object().cloned().unwrap_or_default())
    .authorization(Authorization::new(tenant, grant));
    client.call(request).await
}

fn an_hour() -> Duration {
    Duration::from_secs(3600)
}

#[tokio::test]
async fn client_credentials_with_basic_and_post() {
    // (methods the server offers, the grant's method, HTTP Basic expected)
    let cases: [(&[&'static str], Option<SecretMethod>, bool); 4] = [
        (&["client_secret_basic"], None, true),
        (&["client_secret_post"], None, false),
        (
            &["client_secret_basic", "client_secret_post"],
            Some(SecretMethod::Basic),
            true,
        ),
        (
            &["client_secret_basic", "client_secret_post"],
            Some(SecretMethod::Post),
            false,
        ),
    ];
    for (offered, method, basic) in cases {
        let setup = Setup::start().await;
        *lock(&setup.servers.auth.state.auth_methods) = offered.to_vec();
        let client = setup.client();
        let grant = Grant::ClientCredentials(client_credentials(method));
        for _ in 0..3 {
            let outcome = call_as(&client, &setup.url(), "acme", grant.clone(), json!({})).await;
            assert_eq!(outcome.unwrap().result["content"][0]["text"], "ok");
        }
        let tokens = setup
            .servers
            .auth
            .state
            .token_requests("client_credentials");
        assert_eq!(tokens.len(), 1, "{offered:?}: one token for three calls");
        let request = &tokens[0];
        if basic {
            assert_eq!(
                request.basic.as_deref(),
                Some(format!("host-client:{CLIENT_SECRET}").as_str()),
                "{offered:?} {method:?}"
            );
            assert!(!request.form.contains_key("client_secret"));
        } else {
            assert_eq!(request.basic, None, "{offered:?} {method:?}");
            assert_eq!(request.form["client_secret"], CLIENT_SECRET);
            assert_eq!(request.form["client_id"], "host-client");
        }
        assert_eq!(request.form["resource"], setup.url(), "RFC 8707 resource");
        assert_eq!(setup.tool_calls_run(), 3);
        let bearers: Vec<_> = setup
            .servers
            .resource
            .state
            .calls_seen()
            .into_iter()
            .map(|(bearer, _)| bearer)
            .collect();
        assert_eq!(bearers.len(), 3, "no call went out without its token");
        assert!(
            bearers
                .iter()
                .all(|bearer| bearer.as_deref() == Some("at-0-0123456789abcdef"))
        );
    }
}

#[tokio::test]
async fn a_method_the_server_does_not_offer_fails_before_the_secret_is_sent() {
    let setup = Setup::start().await;
    *lock(&setup.servers.auth.state.auth_methods) = vec!["client_secret_post"];
    let grant = Grant::ClientCredentials(client_credentials(Some(SecretMethod::Basic)));
    let error = call_as(&setup.client(), &setup.url(), "acme", grant, json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::AuthorizationFailed, Delivery::NotSent)
    );
    assert!(error.detail().contains("client_secret_basic"), "{error}");
    assert!(lock(&setup.servers.auth.state.tokens).is_empty());
}

#[tokio::test]
async fn client_credentials_step_up_to_the_union_of_scopes() {
    let setup = Setup::start().await;
    *lock(&setup.servers.resource.state.call_scope) = Some("mcp:write".into());
    let grant = Grant::ClientCredentials(client_credentials(None).scopes(["mcp:read"]));
    let outcome = call_as(&setup.client(), &setup.url(), "acme", grant, json!({})).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let tokens = setup
        .servers
        .auth
        .state
        .token_requests("client_credentials");
    let scopes: Vec<&str> = tokens.iter().map(|t| t.form["scope"].as_str()).collect();
    assert_eq!(scopes, ["mcp:read", "mcp:read mcp:write"]);
    assert_eq!(setup.tool_calls_run(), 1, "the call ran once");
}

/// The token expires during the call: the handshake (or, 2026-07-28, the discovery) went
/// with it, then the server refuses the `tools/call` with 401. That request was not run,
/// so it goes once more with a new token, and the tool runs once.
#[tokio::test]
async fn a_token_that_expires_during_the_call_is_renewed_and_the_call_sent_once_more() {
    for era in [EraPreference::Legacy, EraPreference::Modern] {
        let setup = Setup::start().await;
        let client = client_with(setup.options().era(era));
        let grant = Grant::ClientCredentials(client_credentials(None));
        call_as(&client, &setup.url(), "acme", grant.clone(), json!({}))
            .await
            .unwrap_or_else(|error| panic!("{era:?}: {error}"));
        let state = &setup.servers.resource.state;
        state.expire_at_call.store(true, Ordering::SeqCst);
        let outcome = call_as(&client, &setup.url(), "acme", grant, json!({})).await;
        assert!(outcome.is_ok(), "{era:?}: {outcome:?}");
        assert_eq!(setup.tool_calls_run(), 2, "{era:?}: each call ran once");
        let calls = state.calls_seen();
        assert_eq!(calls.len(), 3, "{era:?}: the refused call, then its resend");
        assert_eq!(
            calls[0].0, calls[1].0,
            "{era:?}: the refused call had the old token"
        );
        assert_ne!(calls[1].0, calls[2].0, "{era:?}: the resend had a new one");
        assert_eq!(
            setup
                .servers
                .auth
                .state
                .token_requests("client_credentials")
                .len(),
            2,
            "{era:?}: one new token"
        );
    }
}

/// A server that refuses the `tools/call` again after a step-up: the refused call went
/// once more with the new token, and is not sent a third time.
#[tokio::test]
async fn a_refused_call_is_sent_once_more_never_twice() {
    for era in [EraPreference::Legacy, EraPreference::Modern] {
        let setup = Setup::start().await;
        *lock(&setup.servers.resource.state.call_scope) = Some("mcp:admin".into());
        *lock(&setup.servers.auth.state.withheld) = vec!["mcp:admin".into()];
        let grant = Grant::ClientCredentials(client_credentials(None));
        let client = client_with(setup.options().era(era));
        let error = call_as(&client, &setup.url(), "acme", grant, json!({}))
            .await
            .unwrap_err();
        assert_eq!(
            (error.kind(), error.delivery()),
            (ErrorKind::AuthorizationFailed, Delivery::NotSent),
            "{era:?}"
        );
        assert!(error.detail().contains("mcp:admin"), "{era:?}: {error}");
        assert_eq!(
            setup.servers.resource.state.calls_seen().len(),
            2,
            "{era:?}: the call, then its one resend"
        );
        assert_eq!(
            lock(&setup.servers.auth.state.tokens).len(),
            2,
            "{era:?}: a token, then the step-up"
        );
        assert_eq!(setup.tool_calls_run(), 0, "{era:?}");
    }
}

#[tokio::test]
async fn a_delegated_grant_is_made_through_the_authorizer() {
    let setup = Setup::start().await;
    let client = setup.interactive_client();
    let outcome = call_as(&client, &setup.url(), "acme", delegated(), json!({})).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let state = &setup.servers.auth.state;
    assert_eq!(
        state.registrations.load(Ordering::SeqCst),
        1,
        "dynamic registration"
    );
    let authorizations = lock(&state.authorizations).clone();
    assert_eq!(authorizations.len(), 1);
    let query = &authorizations[0];
    assert_eq!(query["code_challenge_method"], "S256");
    assert!(!query["code_challenge"].is_empty());
    assert_eq!(query["resource"], setup.url());
    assert_eq!(query["client_id"], "dyn-client-0");
    assert_eq!(query["redirect_uri"], "http://127.0.0.1:3000/callback");
    let exchanges = state.token_requests("authorization_code");
    assert_eq!(exchanges.len(), 1);
    assert!(exchanges[0].form.contains_key("code_verifier"));
    assert_eq!(exchanges[0].form["resource"], setup.url());
    // Stored under (tenant, resource, issuer), with its refresh token.
    let key = GrantKey::new("acme", setup.url(), setup.servers.issuer());
    let stored = setup.store.load(&key).await.unwrap().unwrap().grant;
    assert!(stored.refresh_token.is_some());
    assert_eq!(stored.client_id, "dyn-client-0");
    // The next call takes the cached token: no more authorization traffic.
    call_as(&client, &setup.url(), "acme", delegated(), json!({}))
        .await
        .unwrap();
    assert_eq!(lock(&state.tokens).len(), 1);
    assert_eq!(setup.tool_calls_run(), 2);
    let prompts = lock(&setup.authorizer.prompts).clone();
    assert_eq!(prompts.len(), 1);
    assert_eq!(prompts[0].tenant, "acme");
}

#[tokio::test]
async fn login_status_and_logout() {
    let setup = Setup::start().await;
    let client = setup.client();
    let authorization = Authorization::new("acme", delegated());
    let url = setup.url();
    assert_eq!(
        client.grant_status(&url, &authorization).await.unwrap(),
        GrantStatus::Missing
    );
    let status = client
        .authorize(
            &url,
            &authorization,
            setup.authorizer.clone(),
            Duration::from_secs(20),
        )
        .await
        .unwrap();
    let GrantStatus::Stored(summary) = status else {
        panic!("{status:?}");
    };
    assert!(summary.usable && summary.refreshable);
    assert_eq!(summary.key.issuer, setup.servers.issuer());
    // A client with no authorizer uses the stored grant.
    call_as(&client, &url, "acme", delegated(), json!({}))
        .await
        .unwrap();
    // Logging in again makes a new grant, whatever is stored.
    client
        .authorize(
            &url,
            &authorization,
            setup.authorizer.clone(),
            Duration::from_secs(20),
        )
        .await
        .unwrap();
    assert_eq!(lock(&setup.servers.auth.state.authorizations).len(), 2);
    assert_eq!(client.forget_grant(&url, &authorization).await.unwrap(), 1);
    assert_eq!(
        client.grant_status(&url, &authorization).await.unwrap(),
        GrantStatus::Missing
    );
    let before = setup.tool_calls_run();
    let error = call_as(&client, &url, "acme", delegated(), json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::AuthorizationRequired, Delivery::NotSent)
    );
    assert_eq!(setup.tool_calls_run(), before);
}

#[tokio::test]
async fn a_tenant_without_a_grant_is_told_to_authorize() {
    let setup = Setup::start().await;
    let error = call_as(
        &setup.client(),
        &setup.url(),
        "acme",
        delegated(),
        json!({}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::AuthorizationRequired, Delivery::NotSent)
    );
    assert!(error.detail().contains("no usable grant"), "{error}");
    assert_eq!(setup.tool_calls_run(), 0);
    assert!(lock(&setup.servers.auth.state.authorizations).is_empty());
}

#[tokio::test]
async fn a_token_about_to_expire_is_refreshed_before_the_call() {
    let setup = Setup::start().await;
    // Issued 3590 s ago, for an hour: inside the renewal margin.
    setup
        .store_grant(
            "acme",
            "at-old-0123456789",
            an_hour() - Duration::from_secs(10),
        )
        .await;
    let client = setup.client();
    call_as(&client, &setup.url(), "acme", delegated(), json!({}))
        .await
        .unwrap();
    let refreshes = setup.servers.auth.state.token_requests("refresh_token");
    assert_eq!(refreshes.len(), 1);
    assert_eq!(
        refreshes[0].form["refresh_token"],
        "rt-acme-stored-0123456789"
    );
    assert_eq!(refreshes[0].form["resource"], setup.url());
    let seen = setup.servers.resource.state.calls_seen();
    assert_eq!(seen.len(), 1, "the call went once, with the new token");
    assert_eq!(seen[0].0.as_deref(), Some("at-0-0123456789abcdef"));
    // The refreshed grant is stored.
    let key = GrantKey::new("acme", setup.url(), setup.servers.issuer());
    let stored = setup.store.load(&key).await.unwrap().unwrap().grant;
    assert_eq!(
        stored.access_token.as_ref().map(Secret::expose),
        Some("at-0-0123456789abcdef")
    );
}

#[tokio::test]
async fn a_token_the_server_rejects_mid_life_is_refreshed_and_the_call_sent_once_more() {
    let setup = Setup::start().await;
    setup
        .store_grant("acme", "at-old-0123456789", Duration::from_secs(60))
        .await;
    let client = setup.client();
    call_as(&client, &setup.url(), "acme", delegated(), json!({}))
        .await
        .unwrap();
    // The server stops accepting the token (it expired on its clock).
    setup.servers.resource.state.revoke("at-old-0123456789");
    let outcome = call_as(&client, &setup.url(), "acme", delegated(), json!({})).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    assert_eq!(setup.tool_calls_run(), 2, "each call ran once");
    let seen = setup.servers.resource.state.calls_seen();
    let bearers: Vec<_> = seen.iter().map(|(bearer, _)| bearer.as_deref()).collect();
    // The refused request was not run; it went again with the refreshed token.
    assert_eq!(
        bearers,
        [
            Some("at-old-0123456789"),
            Some("at-old-0123456789"),
            Some("at-0-0123456789abcdef")
        ]
    );
    assert_eq!(
        setup
            .servers
            .auth
            .state
            .token_requests("refresh_token")
            .len(),
        1
    );
}

#[tokio::test]
async fn a_refresh_that_fails_fails_the_call_unsent_and_keeps_the_grant() {
    let setup = Setup::start().await;
    setup
        .store_grant("acme", "at-old-0123456789", an_hour() * 2)
        .await;
    *lock(&setup.servers.auth.state.refresh_answer) = RefreshAnswer::Fail;
    let error = call_as(
        &setup.client(),
        &setup.url(),
        "acme",
        delegated(),
        json!({}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::AuthorizationFailed, Delivery::NotSent)
    );
    assert!(error.detail().contains("server_error"), "{error}");
    assert_eq!(setup.tool_calls_run(), 0);
    assert!(setup.servers.resource.state.calls_seen().is_empty());
    let key = GrantKey::new("acme", setup.url(), setup.servers.issuer());
    assert!(
        setup.store.load(&key).await.unwrap().is_some(),
        "a transient failure keeps the grant"
    );
}

#[tokio::test]
async fn a_revoked_refresh_token_requires_a_new_authorization() {
    let setup = Setup::start().await;
    setup
        .store_grant("acme", "at-old-0123456789", an_hour() * 2)
        .await;
    *lock(&setup.servers.auth.state.refresh_answer) = RefreshAnswer::Revoked;
    let client = setup.client();
    let error = call_as(&client, &setup.url(), "acme", delegated(), json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::AuthorizationRequired, Delivery::NotSent)
    );
    assert_eq!(setup.tool_calls_run(), 0);
    // Marked revoked, never deleted: the client registration is kept for the next login.
    let authorization = Authorization::new("acme", delegated());
    let GrantStatus::Stored(summary) = client
        .grant_status(&setup.url(), &authorization)
        .await
        .unwrap()
    else {
        panic!("the revoked grant is kept")
    };
    assert!(summary.revoked && !summary.usable, "{summary:?}");
}

#[tokio::test]
async fn a_hundred_calls_with_an_expiring_token_cause_one_refresh() {
    let setup = Setup::start().await;
    setup
        .store_grant("acme", "at-old-0123456789", an_hour() * 2)
        .await;
    *lock(&setup.servers.auth.state.token_delay) = Duration::from_millis(200);
    let client = setup.client();
    let url = setup.url();
    let calls = (0..100).map(|i| {
        let client = client.clone();
        let url = url.clone();
        async move { call_as(&client, &url, "acme", delegated(), json!({"i": i})).await }
    });
    let outcomes = futures::future::join_all(calls).await;
    assert!(
        outcomes.iter().all(Result::is_ok),
        "{:?}",
        outcomes.iter().find(|o| o.is_err())
    );
    assert_eq!(
        setup
            .servers
            .auth
            .state
            .token_requests("refresh_token")
            .len(),
        1
    );
    assert_eq!(setup.tool_calls_run(), 100);
}

#[tokio::test]
async fn a_wrong_iss_in_the_redirect_stops_the_code_at_the_client() {
    let setup = Setup::start().await;
    *lock(&setup.servers.auth.state.iss) = Iss::Wrong;
    let error = call_as(
        &setup.interactive_client(),
        &setup.url(),
        "acme",
        delegated(),
        json!({}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::AuthorizationFailed, Delivery::NotSent)
    );
    // The issuer the response named is the server's text: not repeated.
    assert!(
        error.detail().contains("RFC 9207") && !error.detail().contains("attacker"),
        "{error}"
    );
    assert_eq!(lock(&setup.servers.auth.state.authorizations).len(), 1);
    assert!(
        setup
            .servers
            .auth
            .state
            .token_requests("authorization_code")
            .is_empty(),
        "the code never reached a token endpoint"
    );
}

#[tokio::test]
async fn metadata_for_another_resource_is_refused() {
    let setup = Setup::start().await;
    *lock(&setup.servers.resource.state.resource) = Some("https://evil.example.com/mcp".into());
    for (grant, client) in [
        (
            Grant::ClientCredentials(client_credentials(None)),
            setup.client(),
        ),
        (delegated(), setup.interactive_client()),
    ] {
        let error = call_as(&client, &setup.url(), "acme", grant, json!({}))
            .await
            .unwrap_err();
        assert_eq!(error.kind(), ErrorKind::AuthorizationFailed, "{error}");
        assert!(error.detail().contains("another resource"), "{error}");
    }
    let state = &setup.servers.auth.state;
    assert!(lock(&state.tokens).is_empty(), "no credential was sent");
    assert!(lock(&state.authorizations).is_empty());
}

#[tokio::test]
async fn the_pinned_issuer_is_enforced() {
    let setup = Setup::start().await;
    let pinned =
        Grant::ClientCredentials(client_credentials(None).issuer("https://auth.example.com"));
    let error = call_as(&setup.client(), &setup.url(), "acme", pinned, json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::AuthorizationFailed, Delivery::NotSent)
    );
    assert!(
        error
            .detail()
            .contains("pinned issuer https://auth.example.com"),
        "{error}"
    );
    assert!(
        lock(&setup.servers.auth.state.tokens).is_empty(),
        "the secret never left"
    );
    let delegated_pinned =
        Grant::OAuth(AuthorizationCodeGrant::new().issuer("https://auth.example.com"));
    let error = call_as(
        &setup.interactive_client(),
        &setup.url(),
        "acme",
        delegated_pinned,
        json!({}),
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::AuthorizationFailed);
    assert!(lock(&setup.servers.auth.state.authorizations).is_empty());
    // The right pin works.
    let right = Grant::ClientCredentials(client_credentials(None).issuer(setup.servers.issuer()));
    call_as(&setup.client(), &setup.url(), "acme", right, json!({}))
        .await
        .unwrap();
}

#[tokio::test]
async fn two_tenants_on_one_binding_each_send_their_own_token() {
    let setup = Setup::start().await;
    setup
        .store_grant("acme", "at-acme-0123456789", Duration::from_secs(60))
        .await;
    setup
        .store_grant(
            "umbrella",
            "at-umbrella-0123456789",
            Duration::from_secs(60),
        )
        .await;
    let client = setup.client();
    let url = setup.url();
    let calls = (0..20).map(|i| {
        let client = client.clone();
        let url = url.clone();
        let tenant = if i % 2 == 0 { "acme" } else { "umbrella" };
        async move {
            call_as(
                &client,
                &url,
                tenant,
                delegated(),
                json!({"tenant": tenant}),
            )
            .await
        }
    });
    for outcome in futures::future::join_all(calls).await {
        outcome.unwrap();
    }
    let seen = setup.servers.resource.state.calls_seen();
    assert_eq!(seen.len(), 20);
    for (bearer, arguments) in seen {
        let tenant = arguments["tenant"].as_str().unwrap();
        assert_eq!(bearer, Some(format!("at-{tenant}-0123456789")), "{tenant}");
    }
    // Client credentials: each tenant obtains, and sends, its own token.
    let grant = Grant::ClientCredentials(client_credentials(None));
    for tenant in ["acme", "umbrella", "acme"] {
        call_as(
            &client,
            &url,
            tenant,
            grant.clone(),
            json!({"tenant": tenant}),
        )
        .await
        .unwrap();
    }
    let tokens = setup
        .servers
        .auth
        .state
        .token_requests("client_credentials");
    assert_eq!(tokens.len(), 2, "one token per tenant");
    let seen = setup.servers.resource.state.calls_seen();
    let cc: Vec<_> = seen[20..]
        .iter()
        .map(|(bearer, _)| bearer.clone().unwrap())
        .collect();
    assert_eq!(cc[0], cc[2]);
    assert_ne!(cc[0], cc[1]);
}

#[tokio::test]
async fn a_legacy_session_gets_its_token_from_the_challenge_on_initialize() {
    let setup = Setup::start().await;
    let client = client_with(
        ClientOptions::default()
            .era(EraPreference::Legacy)
            .warm_contexts(false)
            .credential_store(setup.store.clone()),
    );
    let grant = Grant::ClientCredentials(client_credentials(None));
    call_as(&client, &setup.url(), "acme", grant, json!({}))
        .await
        .unwrap();
    let seen = lock(&setup.servers.resource.state.seen).clone();
    assert_eq!(seen[0].0, "initialize");
    assert_eq!(seen[0].1, None, "the first initialize went without a token");
    assert_eq!(setup.tool_calls_run(), 1);
}

#[tokio::test]
async fn discovery_carries_the_tenants_token() {
    let setup = Setup::start().await;
    let request = brain_mcp_transport::DiscoveryRequest::new(
        Endpoint::http(setup.url(), None),
        Duration::from_secs(20),
    )
    .authorization(Authorization::new(
        "acme",
        Grant::ClientCredentials(client_credentials(None)),
    ));
    let discovery = setup.client().discover(request).await.unwrap();
    assert_eq!(discovery.tools[0].name, "echo");
}

#[tokio::test]
async fn a_delegated_step_up_asks_for_the_union_on_the_same_grant() {
    let setup = Setup::start().await;
    *lock(&setup.servers.resource.state.challenge_scope) = Some("mcp:basic".into());
    *lock(&setup.servers.resource.state.call_scope) = Some("mcp:write".into());
    let client = setup.interactive_client();
    let outcome = call_as(&client, &setup.url(), "acme", delegated(), json!({})).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let scopes: Vec<String> = lock(&setup.servers.auth.state.authorizations)
        .iter()
        .map(|query| query["scope"].clone())
        .collect();
    // The first from the challenge; the second the union (SEP-2350).
    assert_eq!(scopes, ["mcp:basic", "mcp:basic mcp:write"]);
    assert_eq!(setup.tool_calls_run(), 1);
    // Without an authorizer, more scope on a delegated grant needs a new login.
    let setup = Setup::start().await;
    *lock(&setup.servers.resource.state.call_scope) = Some("mcp:write".into());
    setup
        .store_grant("acme", "at-acme-0123456789", Duration::from_secs(60))
        .await;
    let error = call_as(
        &setup.client(),
        &setup.url(),
        "acme",
        delegated(),
        json!({}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::AuthorizationRequired, Delivery::NotSent)
    );
    assert!(error.detail().contains("mcp:write"), "{error}");
}

/// Identity tokens per tenant, as a host's single sign-on would hand them over.
#[derive(Debug)]
pub(crate) struct IdentityTokens;

#[async_trait::async_trait]
impl brain_mcp_transport::IdentityTokenProvider for IdentityTokens {
    async fn identity_token(
        &self,
        tenant: &str,
        _idp_issuer: &str,
    ) -> Result<Option<Secret>, brain_mcp_transport::HostAuthError> {
        Ok((tenant != "stranger").then(|| Secret::new(format!("idtoken-{tenant}-0123456789"))))
    }
}

#[tokio::test]
async fn enterprise_managed_authorization_exchanges_the_identity_token() {
    let setup = Setup::start().await;
    let idp = crate::oauth_servers::IdentityProvider::start().await;
    let client = client_with(
        ClientOptions::default()
            .warm_contexts(false)
            .credential_store(setup.store.clone())
            .identity_tokens(Arc::new(IdentityTokens)),
    );
    let grant = Grant::Enterprise(
        brain_mcp_transport::EnterpriseGrant::new(
            "ema-client",
            idp.server.uri(),
            format!("{}/token", idp.server.uri()),
            "idp-client",
        )
        .client_secret(Some(Secret::new(CLIENT_SECRET))),
    );
    call_as(&client, &setup.url(), "acme", grant.clone(), json!({}))
        .await
        .unwrap();
    let exchanges = lock(&idp.exchanges).clone();
    assert_eq!(exchanges.len(), 1);
    assert_eq!(exchanges[0]["subject_token"], "idtoken-acme-0123456789");
    assert_eq!(exchanges[0]["audience"], setup.servers.issuer());
    assert_eq!(exchanges[0]["resource"], setup.url());
    let bearers = setup.servers.resource.state.calls_seen();
    assert!(bearers[0].0.as_deref().unwrap().starts_with("at-ema-"));
    let jwt = setup
        .servers
        .auth
        .state
        .token_requests("urn:ietf:params:oauth:grant-type:jwt-bearer");
    assert_eq!(jwt.len(), 1);
    assert_eq!(
        jwt[0].basic.as_deref(),
        Some(format!("ema-client:{CLIENT_SECRET}").as_str())
    );
    // A tenant the host has no identity token for must sign in.
    let error = call_as(&client, &setup.url(), "stranger", grant, json!({}))
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::AuthorizationRequired, "{error}");
}

/// A workload identity: the JWT bearer grant with the workload's token as the assertion,
/// the server as the resource, no client authentication; a refused assertion is final.
#[tokio::test]
async fn a_workload_identity_is_exchanged_with_the_jwt_bearer_grant() {
    let setup = Setup::start().await;
    let grant = |assertion: &str| {
        Grant::WorkloadIdentity(
            brain_mcp_transport::WorkloadIdentityGrant::new(Secret::new(assertion))
                .client_id("workload-1")
                .issuer(setup.servers.issuer()),
        )
    };
    let outcome = call_as(
        &setup.client(),
        &setup.url(),
        "acme",
        grant("eyJ.workload-token.sig"),
        json!({}),
    )
    .await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let requests = setup
        .servers
        .auth
        .state
        .token_requests("urn:ietf:params:oauth:grant-type:jwt-bearer");
    assert_eq!(requests.len(), 1);
    let form = &requests[0].form;
    assert_eq!(form["assertion"], "eyJ.workload-token.sig");
    assert_eq!(form["resource"], setup.url());
    assert_eq!(form["client_id"], "workload-1");
    assert_eq!(requests[0].basic, None, "no client authentication");
    let bearers = setup.servers.resource.state.calls_seen();
    assert!(bearers[0].0.as_deref().unwrap().starts_with("at-ema-"));
    // A refused assertion: the call fails, and the request is not made again.
    let fresh = Setup::start().await;
    let error = call_as(
        &fresh.client(),
        &fresh.url(),
        "acme",
        Grant::WorkloadIdentity(brain_mcp_transport::WorkloadIdentityGrant::new(
            Secret::new("invalid-expired"),
        )),
        json!({}),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::AuthorizationFailed, Delivery::NotSent),
        "{error}"
    );
    assert!(error.detail().contains("invalid_grant"), "{error}");
    assert!(!error.detail().contains("invalid-expired"), "{error}");
    assert_eq!(
        fresh
            .servers
            .auth
            .state
            .token_requests("urn:ietf:params:oauth:grant-type:jwt-bearer")
            .len(),
        1,
        "no retry after a refusal"
    );
    assert_eq!(fresh.tool_calls_run(), 0);
}

/// A server whose handshake is open and whose calls alone are protected: a grant's first
/// request is then the `tools/call` itself, without a token. Its refusal is the first step
/// of authorizing and does not use the call's one resend, which the step-up then takes.
#[tokio::test]
async fn a_refused_call_that_carried_no_token_keeps_its_one_resend() {
    let setup = Setup::start().await;
    let state = &setup.servers.resource.state;
    state.open_handshake.store(true, Ordering::SeqCst);
    *lock(&state.call_scope) = Some("mcp:write".into());
    let client = client_with(setup.options().era(EraPreference::Modern));
    let grant = Grant::ClientCredentials(client_credentials(None).scopes(["mcp:read"]));
    let outcome = call_as(&client, &setup.url(), "acme", grant, json!({})).await;
    assert!(outcome.is_ok(), "{outcome:?}");
    let calls = state.calls_seen();
    assert_eq!(
        calls.len(),
        3,
        "without a token, with one, with the stepped-up one"
    );
    assert_eq!(calls[0].0, None, "the first carried no token");
    assert_eq!(setup.tool_calls_run(), 1, "the tool ran once");
}
