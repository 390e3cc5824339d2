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

/// A 2026-07-28 server that rejects the first request's protocol version (400 with
/// -32022, as the conformance suite's `request-metadata` scenario does) and answers the
/// retry: the failure the client recovered from does not end the listing that follows.
#[tokio::test]
async fn a_rejected_version_that_the_retry_fixes_does_not_fail_discovery() {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::{Value, json};
    use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::method};

    struct FirstRejected(AtomicUsize);

    impl Respond for FirstRejected {
        fn respond(&self, request: &Request) -> ResponseTemplate {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            let id = body["id"].clone();
            if self.0.fetch_add(1, Ordering::SeqCst) == 0 {
                return ResponseTemplate::new(400).set_body_json(json!({
                    "jsonrpc": "2.0", "id": id,
                    "error": {"code": -32022, "message": "Unsupported protocol version",
                              "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}
                }));
            }
            if id.is_null() {
                return ResponseTemplate::new(202);
            }
            let result = match body["method"].as_str() {
                Some("server/discover") => json!({
                    "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}}, "serverInfo": {"name": "t", "version": "1"}
                }),
                Some("tools/list") => json!({
                    "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                    "tools": [{"name": "echo", "inputSchema": {"type": "object"}}]
                }),
                _ => json!({"resultType": "complete"}),
            };
            ResponseTemplate::new(200)
                .set_body_json(json!({"jsonrpc": "2.0", "id": id, "result": result}))
        }
    }

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(FirstRejected(AtomicUsize::new(0)))
        .mount(&server)
        .await;
    let found = client(EraPreference::Modern)
        .discover(DiscoveryRequest::new(
            Endpoint::http(format!("{}/mcp", server.uri()), None),
            Duration::from_secs(10),
        ))
        .await
        .expect("discovery succeeds after the retry");
    let names: Vec<&str> = found.tools.iter().map(|tool| tool.name.as_str()).collect();
    assert_eq!(names, ["echo"]);
}

/// A tool's `execution.taskSupport` reaches the discovery (rmcp's `Tool` has no field for
/// it), whether the listing comes as a JSON body or in an SSE event.
#[tokio::test]
async fn task_support_is_discovered_from_json_and_sse_listings() {
    use serde_json::{Value, json};
    use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::method};

    struct Listing {
        sse: bool,
    }

    impl Respond for Listing {
        fn respond(&self, request: &Request) -> ResponseTemplate {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            let id = body["id"].clone();
            if id.is_null() {
                return ResponseTemplate::new(202);
            }
            let result = match body["method"].as_str() {
                Some("initialize") => json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "tasks", "version": "1"}
                }),
                Some("tools/list") => json!({"tools": [
                    {"name": "report", "inputSchema": {"type": "object"},
                     "execution": {"taskSupport": "required"}},
                    {"name": "maybe", "inputSchema": {"type": "object"},
                     "execution": {"taskSupport": "optional"}, "_meta": {"kept": true}},
                    {"name": "echo", "inputSchema": {"type": "object"}}
                ]}),
                _ => json!({}),
            };
            let message = json!({"jsonrpc": "2.0", "id": id, "result": result});
            let answer = ResponseTemplate::new(200).insert_header("mcp-session-id", "s-1");
            if self.sse && body["method"] == "tools/list" {
                answer.set_body_raw(
                    format!("event: message\ndata: {message}\n\n"),
                    "text/event-stream",
                )
            } else {
                answer.set_body_json(message)
            }
        }
    }

    for sse in [false, true] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(Listing { sse })
            .mount(&server)
            .await;
        Mock::given(method("DELETE"))
            .respond_with(ResponseTemplate::new(200))
            .mount(&server)
            .await;
        let found = client(EraPreference::Legacy)
            .discover(DiscoveryRequest::new(
                Endpoint::http(format!("{}/mcp", server.uri()), None),
                Duration::from_secs(10),
            ))
            .await
            .unwrap_or_else(|error| panic!("sse {sse}: {error}"));
        let support: Vec<(&str, Option<&str>)> = found
            .tools
            .iter()
            .map(|tool| (tool.name.as_str(), tool.task_support.as_deref()))
            .collect();
        assert_eq!(
            support,
            [
                ("report", Some("required")),
                ("maybe", Some("optional")),
                ("echo", None)
            ],
            "sse {sse}"
        );
    }
}
