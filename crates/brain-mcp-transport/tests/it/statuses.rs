//! What a refusing HTTP answer says, as a person reads it: the server's reason (bounded,
//! one line, secrets hidden), a 404 that is not an expired session, and a URL that serves
//! the old HTTP+SSE transport.

use std::time::Duration;

use brain_mcp_transport::{
    CallError, Delivery, DiscoveryRequest, Endpoint, EraPreference, ErrorKind, McpClient, Secret,
};
use serde_json::json;
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path},
};

use crate::support::{call, cold_client};

const TOKEN: &str = "tok-statuses-0123456789";

/// A server whose every POST to `at` gets `answer`.
async fn refusing(at: &str, answer: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(at))
        .respond_with(answer)
        .mount(&server)
        .await;
    server
}

async fn discover(client: &McpClient, url: &str) -> CallError {
    client
        .discover(DiscoveryRequest::new(
            Endpoint::http(url, Some(Secret::new(TOKEN))),
            Duration::from_secs(10),
        ))
        .await
        .unwrap_err()
}

#[tokio::test]
async fn a_refusal_says_why_in_the_servers_words_without_secrets() {
    let client = cold_client(EraPreference::Legacy);
    let cases = [
        (
            ResponseTemplate::new(403)
                .insert_header("content-type", "text/plain")
                .set_body_string("Access is only allowed at localhost:8080\nsecond line"),
            "HTTP 403 (forbidden), saying \"Access is only allowed at localhost:8080\"",
        ),
        (
            ResponseTemplate::new(401)
                .insert_header("www-authenticate", "Bearer")
                .set_body_json(json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32001, "message": format!("Invalid bearer token {TOKEN}")}})),
            "HTTP 401 (unauthorized: check the token), saying \"Invalid bearer token <redacted>\"",
        ),
        (
            ResponseTemplate::new(403)
                .insert_header("content-type", "text/plain")
                .set_body_string("evil\u{202e}txt\u{1b}[31m"),
            "saying \"evil txt [31m\"",
        ),
        (
            ResponseTemplate::new(403)
                .insert_header("content-type", "text/plain")
                .set_body_string("y".repeat(5000)),
            "saying \"yyyy",
        ),
        // An HTML page says nothing that fits a line.
        (
            ResponseTemplate::new(502)
                .insert_header("content-type", "text/html")
                .set_body_string("<html><h1>502 Bad Gateway</h1></html>"),
            "HTTP 502 (server error)",
        ),
    ];
    for (answer, phrase) in cases {
        let server = refusing("/mcp", answer).await;
        let error = discover(&client, &format!("{}/mcp", server.uri())).await;
        assert_eq!(error.kind(), ErrorKind::HttpStatus, "{error}");
        assert!(error.detail().contains(phrase), "{error}");
        assert!(!error.detail().contains(TOKEN), "{error}");
        assert!(!error.detail().contains("<html"), "{error}");
        assert!(error.detail().chars().count() < 400, "bounded: {error}");
    }
}

#[tokio::test]
async fn a_404_before_any_session_points_at_the_url() {
    let client = cold_client(EraPreference::Auto);
    let server = refusing("/mcp", ResponseTemplate::new(404)).await;
    let url = format!("{}/mcp", server.uri());
    let error = discover(&client, &url).await;
    assert!(
        error
            .detail()
            .contains("HTTP 404 (not found: check that the URL"),
        "{error}"
    );
    assert!(
        !error.detail().contains("session"),
        "no session exists yet: {error}"
    );
    let ran = call(&client, &Endpoint::http(&url, None), "echo", json!({})).await;
    assert_eq!(ran.error().delivery(), Delivery::NotSent);
    assert!(!ran.error().detail().contains("session"), "{}", ran.error());
}

#[tokio::test]
async fn the_old_http_sse_transport_is_named() {
    let client = cold_client(EraPreference::Auto);
    // A GET-only /sse endpoint, as servers of the 2024-11-05 transport have.
    for (at, answer) in [
        (
            "/sse",
            ResponseTemplate::new(405).insert_header("allow", "GET"),
        ),
        ("/sse", ResponseTemplate::new(404)),
        (
            "/events",
            ResponseTemplate::new(405).insert_header("allow", "GET, HEAD"),
        ),
    ] {
        let server = refusing(at, answer).await;
        let error = discover(&client, &format!("{}{at}", server.uri())).await;
        assert!(
            error.detail().contains("old HTTP+SSE transport")
                && error.detail().contains("Streamable HTTP endpoint"),
            "{at}: {error}"
        );
    }
    // A Streamable HTTP endpoint that refuses a method is not that.
    let server = refusing(
        "/mcp",
        ResponseTemplate::new(405).insert_header("allow", "GET, POST, DELETE"),
    )
    .await;
    let error = discover(&client, &format!("{}/mcp", server.uri())).await;
    assert!(!error.detail().contains("HTTP+SSE"), "{error}");
}
