//! `private_key_jwt` client authentication (the `oauth-jwt` feature): the client signs an
//! assertion with its key, and the authorization server checks it.

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use brain_mcp_transport::{
    ClientAuthentication, ClientCredentialsGrant, Grant, Secret, SigningAlgorithm,
};
use serde_json::{Value, json};

use crate::{
    oauth::{EC_KEY, Setup, call_as},
    oauth_servers::lock,
};

#[tokio::test]
async fn private_key_jwt_signs_a_client_assertion() {
    let setup = Setup::start().await;
    *lock(&setup.servers.auth.state.auth_methods) = vec!["private_key_jwt"];
    let grant = Grant::ClientCredentials(ClientCredentialsGrant::new(
        "jwt-client",
        ClientAuthentication::PrivateKeyJwt {
            key: Secret::new(EC_KEY),
            algorithm: SigningAlgorithm::Es256,
        },
    ));
    call_as(&setup.client(), &setup.url(), "acme", grant, json!({}))
        .await
        .unwrap();
    let tokens = setup
        .servers
        .auth
        .state
        .token_requests("client_credentials");
    assert_eq!(tokens.len(), 1);
    let form = &tokens[0].form;
    assert_eq!(
        form["client_assertion_type"],
        "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    );
    assert!(!form.contains_key("client_secret"));
    let claims: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(form["client_assertion"].split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["iss"], "jwt-client");
    assert_eq!(claims["sub"], "jwt-client");
    assert_eq!(claims["aud"], setup.servers.issuer());
}
