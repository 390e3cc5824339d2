//! Every config that loads prints back (the way `mcp-tools` prints bindings) to JSON that
//! loads to the same bindings and prints the same again: `auth`, `command` and defaults
//! included.

use brain_tools_config::{
    ClientAuthentication, ClientCredentialsAuth, HostConfig, McpAuth, McpServer, SigningAlgorithm,
    Target,
};

fn load(bytes: &[u8]) -> HostConfig {
    HostConfig::from_json_bytes_with_env(bytes, crate::is_set)
        .expect("loads")
        .config
}

#[test]
fn every_loading_corpus_case_round_trips() {
    let mut checked = 0;
    insta::glob!("../corpus", "{ok,warn}_*.json", |path| {
        let config = load(&std::fs::read(path).unwrap());
        let printed = serde_json::to_vec_pretty(&config).unwrap();
        let again = load(&printed);
        assert_eq!(again, config, "{}", path.display());
        assert_eq!(serde_json::to_vec_pretty(&again).unwrap(), printed);
        checked += 1;
    });
    assert!(checked >= 20, "only {checked} cases");
}

#[test]
fn auth_prints_right_after_token_env_in_document_order() {
    let config = load(
        br#"{"tools": [{
            "name": "search", "input_schema": {"type": "object"},
            "url": "https://mcp.example.com/mcp", "mcp_tool": "search", "tenants": ["local"],
            "auth": {"issuer": "https://auth.example.com", "signing_algorithm": "RS384",
                     "scopes": ["a", "b"], "private_key_env": "MCP_PRIVATE_KEY",
                     "token_endpoint_auth_method": "private_key_jwt",
                     "client_id": "brain-host", "type": "client_credentials"}
        }]}"#,
    );
    let Target::Mcp(mcp) = &config.tools[0].target else {
        panic!("an MCP binding")
    };
    let McpServer::Http {
        auth: Some(McpAuth::ClientCredentials(auth)),
        ..
    } = &mcp.server
    else {
        panic!("client credentials")
    };
    let expected = ClientCredentialsAuth::new(
        "brain-host",
        ClientAuthentication::PrivateKeyJwt {
            key: "MCP_PRIVATE_KEY".into(),
            algorithm: SigningAlgorithm::Rs384,
        },
    )
    .scopes(["a", "b"])
    .issuer("https://auth.example.com");
    assert_eq!(auth, &expected);

    let printed = serde_json::to_string(&config.tools[0]).unwrap();
    assert_eq!(
        printed,
        concat!(
            r#"{"name":"search","description":"","input_schema":{"type":"object"},"#,
            r#""url":"https://mcp.example.com/mcp","mcp_tool":"search","#,
            r#""auth":{"type":"client_credentials","client_id":"brain-host","#,
            r#""token_endpoint_auth_method":"private_key_jwt","private_key_env":"MCP_PRIVATE_KEY","#,
            r#""signing_algorithm":"RS384","scopes":["a","b"],"issuer":"https://auth.example.com"},"#,
            r#""tenants":["local"],"timeout_seconds":300,"max_output_bytes":1048576}"#
        )
    );
}

#[test]
fn a_host_config_inside_a_hosts_own_serde_config() {
    #[derive(serde::Deserialize)]
    struct Settings {
        #[allow(dead_code)]
        port: u16,
        brain: brain_tools_config::Loaded,
        tools: HostConfig,
    }
    let document = serde_json::json!({
        "port": 8080,
        "brain": {"tools": [{"name": "search", "input_schema": {"type": "object"},
            "url": "http://mcp.example.com/mcp", "mcp_tool": "search", "tenants": ["local"],
            "token_env": "BRAIN_TEST_UNSET_VARIABLE_0"}]},
        "tools": {"tools": []},
    });
    let settings: Settings = serde_json::from_value(document).unwrap();
    assert_eq!(settings.brain.config.tools.len(), 1);
    assert_eq!(settings.tools.tools.len(), 0);
    assert!(
        !settings.brain.warnings.is_empty(),
        "the warnings are kept: a token over plain http, an unset variable"
    );
    // Every problem, each with its path inside the value.
    let bad = serde_json::json!({"port": 1, "brain": {"tools": [{"name": "bad name"}]}, "tools": {"tools": []}});
    let error = serde_json::from_value::<Settings>(bad)
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.contains("tools[0]") && error.contains("name"),
        "{error}"
    );
    assert!(error.contains("input_schema"), "every problem: {error}");
}
