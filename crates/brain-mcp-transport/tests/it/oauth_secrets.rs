//! No secret of an OAuth grant (access token, refresh token, client secret, authorization
//! code) appears in a log line at any level, an error, a result or a `Debug` output, even
//! when the server sends them back.

use std::{
    io::Write,
    sync::{Arc, Mutex},
    time::Duration,
};

use brain_mcp_transport::{
    Authorization, CallRequest, ClientAuthentication, ClientCredentialsGrant, Endpoint, Grant,
    Secret, SigningAlgorithm,
};
use serde_json::json;

use crate::{
    oauth::{CLIENT_SECRET, EC_KEY, Setup, call_as, client_credentials, delegated},
    oauth_servers::lock,
};

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        lock(&self.0).extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn no_grant_secret_appears_in_logs_errors_results_or_debug() {
    let setup = Setup::start().await;
    // Tokens that expire as they are issued: every later call of a grant renews it (no
    // waiting for a clock), so the delegated grant is refreshed within the test.
    *lock(&setup.servers.auth.state.expires_in) = 0;
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let mut shown = Vec::new();
    let mut enterprise_secrets: Vec<String> = Vec::new();
    {
        let _guard = tracing::subscriber::set_default(subscriber);
        tracing::info!("capture works");
        let url = setup.url();
        // Client credentials, with a server that echoes secrets back.
        let cc = Grant::ClientCredentials(client_credentials(None));
        *lock(&setup.servers.resource.state.answer) =
            Some(format!("your secret is {CLIENT_SECRET}"));
        let outcome = call_as(&setup.client(), &url, "acme", cc.clone(), json!({})).await;
        shown.push(format!("{outcome:?}"));
        // (Another grant's server cannot know this client's secret.)
        *lock(&setup.servers.resource.state.answer) = None;
        // Client credentials with a signed assertion (private_key_jwt).
        lock(&setup.servers.auth.state.auth_methods).push("private_key_jwt");
        let jwt = Grant::ClientCredentials(ClientCredentialsGrant::new(
            "jwt-client",
            ClientAuthentication::PrivateKeyJwt {
                key: Secret::new(EC_KEY),
                algorithm: SigningAlgorithm::Es256,
            },
        ));
        let outcome = call_as(&setup.client(), &url, "acme", jwt.clone(), json!({})).await;
        assert!(outcome.is_ok(), "{outcome:?}");
        shown.push(format!("{outcome:?} {jwt:?}"));
        // A delegated grant made through the authorizer, then refreshed.
        let client = setup.interactive_client();
        let outcome = call_as(&client, &url, "umbrella", delegated(), json!({})).await;
        shown.push(format!("{outcome:?}"));
        *lock(&setup.servers.resource.state.answer) =
            Some(
            // The grant's tokens, the replaced ones (still valid a while) included.
            // (at-0 and at-1 went to the client credentials grants; the code was the
            // authorization server's third issue.)
            "tokens: at-3-0123456789abcdef at-4-0123456789abcdef rt-3-0123456789abcdef rt-4-0123456789abcdef".into(),
        );
        let outcome = call_as(&client, &url, "umbrella", delegated(), json!({})).await;
        shown.push(format!("{outcome:?}"));
        assert!(
            !setup
                .servers
                .auth
                .state
                .token_requests("refresh_token")
                .is_empty(),
            "the grant was refreshed"
        );
        // A failure: the refresh token revoked, the grant gone.
        *lock(&setup.servers.auth.state.refresh_answer) =
            crate::oauth_servers::RefreshAnswer::Revoked;
        let outcome = call_as(&setup.client(), &url, "umbrella", delegated(), json!({})).await;
        shown.push(format!("{outcome:?}"));
        // Enterprise-managed: the tenant's identity token exchanged for an ID-JAG, then
        // for an access token, with a server that echoes the identity token back.
        let idp = crate::oauth_servers::IdentityProvider::start().await;
        let enterprise_client = crate::support::client_with(
            brain_mcp_transport::ClientOptions::default()
                .credential_store(setup.store.clone())
                .identity_tokens(Arc::new(crate::oauth::IdentityTokens)),
        );
        let enterprise = Grant::Enterprise(
            brain_mcp_transport::EnterpriseGrant::new(
                "ema-client",
                idp.server.uri(),
                format!("{}/token", idp.server.uri()),
                "idp-client",
            )
            .client_secret(Some(Secret::new(CLIENT_SECRET))),
        );
        *lock(&setup.servers.auth.state.expires_in) = 3600;
        *lock(&setup.servers.resource.state.answer) =
            Some("your identity is idtoken-acme-0123456789".into());
        let outcome = call_as(
            &enterprise_client,
            &url,
            "acme",
            enterprise.clone(),
            json!({}),
        )
        .await;
        assert!(outcome.is_ok(), "{outcome:?}");
        shown.push(format!("{outcome:?} {enterprise:?} {enterprise_client:?}"));
        *lock(&setup.servers.resource.state.answer) = None;
        enterprise_secrets.push("idtoken-acme-0123456789".to_owned());
        enterprise_secrets.extend(
            setup
                .servers
                .auth
                .state
                .token_requests("urn:ietf:params:oauth:grant-type:jwt-bearer")
                .iter()
                .filter_map(|request| request.form.get("assertion").cloned()),
        );
        enterprise_secrets.extend(
            setup
                .servers
                .resource
                .state
                .calls_seen()
                .into_iter()
                .filter_map(|(bearer, _)| bearer)
                .filter(|bearer| bearer.starts_with("at-ema-")),
        );
        // A workload identity whose server echoes the assertion back.
        *lock(&setup.servers.resource.state.answer) =
            Some("your workload is eyJ.wif-secret-0123456789.sig".into());
        let workload = Grant::WorkloadIdentity(brain_mcp_transport::WorkloadIdentityGrant::new(
            Secret::new("eyJ.wif-secret-0123456789.sig"),
        ));
        let outcome = call_as(&setup.client(), &url, "acme", workload.clone(), json!({})).await;
        assert!(outcome.is_ok(), "{outcome:?}");
        shown.push(format!("{outcome:?} {workload:?}"));
        *lock(&setup.servers.resource.state.answer) = None;
        let request = CallRequest::new(
            Endpoint::http(&url, None),
            "echo",
            "c",
            Duration::from_secs(1),
        )
        .authorization(Authorization::new("acme", cc));
        shown.push(format!("{request:?}"));
        shown.push(format!("{:?}", setup.store));
    }
    let logs = String::from_utf8_lossy(&lock(&capture.0)).into_owned();
    assert!(logs.contains("capture works"), "the capture works");
    assert!(logs.contains(" TRACE "), "trace level was captured");
    let state = &setup.servers.auth.state;
    let mut secrets: Vec<String> = vec![CLIENT_SECRET.to_owned()];
    for n in 0..8 {
        secrets.push(format!("at-{n}-0123456789abcdef"));
        secrets.push(format!("rt-{n}-0123456789abcdef"));
    }
    secrets.push("authcode-".to_owned());
    secrets.push("wif-secret-0123456789".to_owned());
    // The private key, line by line (a PEM is never printed whole or in part), and the
    // assertion signed with it.
    secrets.extend(
        EC_KEY
            .lines()
            .filter(|line| !line.starts_with("-----"))
            .map(str::to_owned),
    );
    let assertions: Vec<String> = state
        .token_requests("client_credentials")
        .iter()
        .filter_map(|request| request.form.get("client_assertion").cloned())
        .collect();
    assert_eq!(assertions.len(), 1, "one assertion was signed");
    secrets.extend(assertions);
    assert_eq!(
        enterprise_secrets.len(),
        3,
        "the identity token, the ID-JAG and the access token: {}",
        enterprise_secrets.len()
    );
    secrets.extend(enterprise_secrets);
    assert!(!lock(&state.authorizations).is_empty(), "a code was issued");
    for secret in &secrets {
        if let Some(line) = logs.lines().find(|line| line.contains(secret.as_str())) {
            panic!("a log line holds {secret}: {line}");
        }
        for text in &shown {
            assert!(!text.contains(secret.as_str()), "{text} holds {secret}");
        }
    }
    assert!(
        shown[0].contains("your secret is <redacted>"),
        "{}",
        shown[0]
    );
    // The call whose server echoed the delegated grant's tokens.
    assert!(shown[3].contains("<redacted>"), "{}", shown[3]);
}
