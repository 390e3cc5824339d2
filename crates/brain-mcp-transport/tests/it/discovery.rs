//! Listing tools: every page, both eras, stdio, schemas verbatim.

use std::time::Duration;

use brain_mcp_testkit::{Era, ServerOptions, TestServer};
use brain_mcp_transport::{DiscoveryRequest, Endpoint, EraPreference, ErrorKind, StdioEndpoint};

use crate::support::{client, stdio_server};

#[tokio::test]
async fn a_thousand_tools_over_ten_pages_in_each_era() {
    for era in [Era::Legacy, Era::Modern] {
        let server = TestServer::start(ServerOptions {
            era,
            page_size: Some(100),
            extra_tools: 1000 - brain_mcp_testkit::tool_names().len(),
            ..ServerOptions::default()
        })
        .await
        .unwrap();
        let client = client(EraPreference::Auto);
        let found = client
            .discover(DiscoveryRequest::new(
                Endpoint::http(server.url(), None),
                Duration::from_secs(30),
            ))
            .await
            .unwrap();
        assert_eq!(found.tools.len(), 1000, "{era:?}");
        assert_eq!(found.pages, 10, "{era:?}");
        let structured = found.tools.iter().find(|t| t.name == "structured").unwrap();
        assert!(structured.output_schema.is_some());
        let seen = server
            .wait_for(|c| c.open_sessions() == 0, Duration::from_secs(5))
            .await;
        assert_eq!(seen.method("tools/list"), 10, "{era:?}");
        assert_eq!(seen.open_sessions(), 0, "{era:?}");
    }
}

#[tokio::test]
async fn the_page_cap_is_enforced() {
    let server = TestServer::start(ServerOptions {
        page_size: Some(1),
        ..ServerOptions::default()
    })
    .await
    .unwrap();
    let client = client(EraPreference::Auto);
    let error = client
        .discover(
            DiscoveryRequest::new(Endpoint::http(server.url(), None), Duration::from_secs(30))
                .max_pages(3),
        )
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Protocol);
    assert!(error.detail().contains("more than 3 pages"), "{error}");
}

#[tokio::test]
async fn discovery_over_stdio_keeps_schemas_verbatim() {
    let client = client(EraPreference::Auto);
    let endpoint = Endpoint::Stdio(StdioEndpoint::new(stdio_server(), ["--era", "legacy"]));
    let found = client
        .discover(DiscoveryRequest::new(endpoint, Duration::from_secs(30)))
        .await
        .unwrap();
    let echo = found.tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.input_schema["type"], "object");
    assert_eq!(echo.input_schema["properties"]["message"]["type"], "string");
    client.shutdown(Duration::from_secs(10)).await;
    assert_eq!(client.stats().child_processes, 0);
}
