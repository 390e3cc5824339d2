//! The initialize era: a session per call, closed on every path.

use std::time::Duration;

use brain_mcp_testkit::{Era, HttpFault, ServerOptions, TestServer};
use brain_mcp_transport::{Delivery, Endpoint, EraPreference, ErrorKind};
use serde_json::json;

use crate::support::{GRACE, call, client, cold_client, request, run};

async fn server() -> (TestServer, Endpoint) {
    let server = TestServer::start(ServerOptions {
        era: Era::Legacy,
        ..ServerOptions::default()
    })
    .await
    .unwrap();
    let endpoint = Endpoint::http(server.url(), None);
    (server, endpoint)
}

#[tokio::test]
async fn one_session_per_call_four_requests_and_no_get_stream() {
    let (server, endpoint) = server().await;
    let client = cold_client(EraPreference::Legacy);
    for i in 0..3 {
        let ran = call(
            &client,
            &endpoint,
            "echo",
            json!({"message": format!("hi {i}")}),
        )
        .await;
        assert_eq!(ran.text(), format!("hi {i}"));
    }
    let seen = server
        .wait_for(|c| c.sessions_closed == 3, Duration::from_secs(5))
        .await;
    assert_eq!(seen.sessions_opened, 3);
    assert_eq!(seen.open_sessions(), 0);
    assert_eq!(seen.method("initialize"), 3);
    assert_eq!(seen.method("notifications/initialized"), 3);
    assert_eq!(seen.method("tools/call"), 3);
    assert_eq!(seen.deletes, 3);
    assert_eq!(
        seen.standalone_gets, 0,
        "no standalone GET for a one-call session"
    );
    assert_eq!(seen.http_posts + seen.deletes, 12, "4 requests per call");
    client.shutdown(Duration::from_secs(5)).await;
    assert_eq!(client.stats().background_tasks, 0);
}

#[tokio::test]
async fn the_call_id_is_the_progress_token_and_progress_comes_before_the_result() {
    let (server, endpoint) = server().await;
    let client = client(EraPreference::Legacy);
    let mut meta = serde_json::Map::new();
    meta.insert(
        "brain.dev/scope".into(),
        json!({"tenant_id": "t", "session_id": "s", "call_id": "call-7"}),
    );
    let ran = run(
        &client,
        request(
            &endpoint,
            "progress",
            json!({"steps": 5, "delay_ms": 5}),
            "call-7",
            Duration::from_secs(10),
        )
        .meta(meta),
    )
    .await;
    assert_eq!(ran.text(), "done");
    let steps: Vec<f64> = ran.progress.iter().map(|p| p.progress).collect();
    assert_eq!(steps, [1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(ran.progress[4].total, Some(5.0));
    assert_eq!(ran.progress[0].message.as_deref(), Some("step 1"));
    let meta = &server.counters().call_meta[0];
    assert_eq!(meta["progressToken"], "call-7");
    assert_eq!(meta["brain.dev/scope"]["call_id"], "call-7");
    assert!(
        meta.get("brain.dev/internal-call-key").is_none(),
        "the marker never reaches the wire: {meta}"
    );
}

#[tokio::test]
async fn timeout_cancels_the_call_and_still_deletes_the_session() {
    let (server, endpoint) = server().await;
    let client = client(EraPreference::Legacy);
    let ran = run(
        &client,
        request(
            &endpoint,
            "sleep",
            json!({"ms": 10_000}),
            "c1",
            // Long enough for the call to reach the tool on a loaded machine (its
            // `Unknown` delivery says it did); the tool sleeps for longer.
            Duration::from_secs(3),
        ),
    )
    .await;
    assert_eq!(ran.error().kind(), ErrorKind::Timeout);
    assert_eq!(ran.error().delivery(), Delivery::Unknown);
    assert!(
        ran.elapsed < Duration::from_secs(3) + GRACE,
        "{:?}",
        ran.elapsed
    );
    let seen = server
        .wait_for(
            |c| c.sessions_closed == 1 && c.cancellations == 1,
            Duration::from_secs(5),
        )
        .await;
    assert_eq!(
        seen.cancellations, 1,
        "notifications/cancelled reached the server"
    );
    assert_eq!(seen.deletes, 1);
    assert_eq!(seen.method("tools/call"), 1);
    let seen = server
        .wait_for(|c| c.handler_cancellations == 1, Duration::from_secs(5))
        .await;
    assert_eq!(seen.handler_cancellations, 1);
}

#[tokio::test]
async fn caller_cancel_sends_cancelled_then_delete() {
    let (server, endpoint) = server().await;
    let client = client(EraPreference::Legacy);
    let cancel = tokio_util::sync::CancellationToken::new();
    // Cancel once the server runs the tool: mid-call, whatever the machine's speed.
    let cancel_mid_call = async {
        let seen = server
            .wait_for(|c| c.calls_in_flight == 1, Duration::from_secs(5))
            .await;
        assert_eq!(seen.calls_in_flight, 1, "the call reached the tool");
        cancel.cancel();
    };
    let (ran, ()) = tokio::join!(
        run(
            &client,
            request(&endpoint, "hang", json!({}), "c1", Duration::from_secs(10))
                .cancel(cancel.clone()),
        ),
        cancel_mid_call,
    );
    assert_eq!(ran.error().kind(), ErrorKind::Cancelled);
    assert_eq!(ran.error().delivery(), Delivery::Unknown);
    let seen = server
        .wait_for(
            |c| c.sessions_closed == 1 && c.cancellations == 1,
            Duration::from_secs(5),
        )
        .await;
    assert_eq!((seen.cancellations, seen.deletes), (1, 1));
}

#[tokio::test]
async fn output_over_budget_stops_reading_and_closes() {
    let (server, endpoint) = server().await;
    let client = client(EraPreference::Legacy);
    let ran = run(
        &client,
        request(
            &endpoint,
            "big",
            json!({"bytes": 4_000_000}),
            "c1",
            Duration::from_secs(10),
        )
        .max_output_bytes(100_000),
    )
    .await;
    assert_eq!(ran.error().kind(), ErrorKind::OutputTooLarge);
    assert_eq!(ran.error().delivery(), Delivery::Unknown);
    let seen = server
        .wait_for(|c| c.sessions_closed == 1, Duration::from_secs(5))
        .await;
    assert_eq!(seen.open_sessions(), 0);
    // Within budget, the same tool is fine.
    let ran = run(
        &client,
        request(
            &endpoint,
            "big",
            json!({"bytes": 50_000}),
            "c2",
            Duration::from_secs(10),
        )
        .max_output_bytes(100_000),
    )
    .await;
    assert_eq!(ran.text().len(), 50_000);
}

#[tokio::test]
async fn tool_errors_images_and_structured_content_come_back_verbatim() {
    let (_server, endpoint) = server().await;
    let client = client(EraPreference::Legacy);
    let error = call(&client, &endpoint, "error", json!({})).await;
    assert_eq!(error.result()["isError"], true);
    assert_eq!(error.text(), "the tool failed on purpose");
    let image = call(&client, &endpoint, "image", json!({})).await;
    assert_eq!(image.result()["content"][0]["mimeType"], "image/png");
    let structured = call(&client, &endpoint, "structured", json!({"city": "Oslo"})).await;
    assert_eq!(structured.result()["structuredContent"]["city"], "Oslo");
}

#[tokio::test]
async fn a_server_request_mid_call_is_refused_and_the_call_goes_on() {
    let (_server, endpoint) = server().await;
    let client = client(EraPreference::Legacy);
    let ran = call(&client, &endpoint, "ask", json!({})).await;
    assert_eq!(ran.text(), "asked");
}

#[tokio::test]
async fn progress_after_the_result_is_dropped() {
    let (_server, endpoint) = server().await;
    let client = client(EraPreference::Legacy);
    let ran = call(&client, &endpoint, "progress_after_result", json!({})).await;
    assert_eq!(ran.text(), "done");
    assert!(ran.progress.is_empty());
}

#[tokio::test]
async fn a_dropped_stream_is_a_protocol_error_and_the_call_is_not_retried() {
    let (server, endpoint) = server().await;
    let client = client(EraPreference::Legacy);
    let ran = call(
        &client,
        &endpoint,
        "drop_mid_stream",
        json!({"after_progress": 2}),
    )
    .await;
    assert_eq!(ran.error().kind(), ErrorKind::Protocol, "{}", ran.error());
    assert_eq!(ran.error().delivery(), Delivery::Unknown);
    assert_eq!(ran.progress.len(), 2);
    let seen = server
        .wait_for(|c| c.sessions_closed == 1, Duration::from_secs(5))
        .await;
    assert_eq!(seen.method("tools/call"), 1, "never retried");
}

#[tokio::test]
async fn faults_before_the_call_are_not_sent() {
    let (server, _) = server().await;
    let client = client(EraPreference::Legacy);
    for (fault, kind, status) in [
        (HttpFault::Status401, ErrorKind::HttpStatus, Some(401)),
        (HttpFault::Status500Html, ErrorKind::HttpStatus, Some(500)),
        (HttpFault::WrongContentType, ErrorKind::Protocol, None),
        (HttpFault::MalformedJson, ErrorKind::Protocol, None),
        (HttpFault::WrongId, ErrorKind::Protocol, None),
        (HttpFault::JsonRpcError, ErrorKind::Protocol, None),
        (HttpFault::Status404, ErrorKind::HttpStatus, Some(404)),
    ] {
        let endpoint = Endpoint::http(server.fault_url(fault), None);
        let ran = call(&client, &endpoint, "echo", json!({"message": "x"})).await;
        assert_eq!(ran.error().kind(), kind, "{fault:?}: {}", ran.error());
        assert_eq!(ran.error().status(), status, "{fault:?}");
        assert_eq!(ran.error().delivery(), Delivery::NotSent, "{fault:?}");
    }
    assert_eq!(server.counters().method("tools/call"), 0);
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_within_the_deadline() {
    let (server, _) = server().await;
    // The unanswered initialize gets this long to reveal a session before it is dropped.
    let options = brain_mcp_transport::ClientOptions::default()
        .era(EraPreference::Legacy)
        .close_timeout(Duration::from_millis(500));
    let client = brain_mcp_transport::McpClient::new(options).expect("the client builds");
    let endpoint = Endpoint::http(server.fault_url(HttpFault::Hang), None);
    let ran = run(
        &client,
        request(
            &endpoint,
            "echo",
            json!({"message": "x"}),
            "c1",
            Duration::from_millis(300),
        ),
    )
    .await;
    assert_eq!(ran.error().kind(), ErrorKind::Timeout);
    assert_eq!(ran.error().delivery(), Delivery::NotSent);
    assert!(
        ran.elapsed < Duration::from_millis(300) + GRACE,
        "{:?}",
        ran.elapsed
    );
    client.shutdown(Duration::from_secs(5)).await;
    assert_eq!(
        client.stats().background_tasks,
        0,
        "the hung request was ended"
    );
}

#[tokio::test]
async fn connection_refused_is_connect_not_sent() {
    let refused = brain_mcp_testkit::RefusedPort::new().unwrap();
    let url = refused.url();
    let client = client(EraPreference::Legacy);
    let ran = call(&client, &Endpoint::http(url, None), "echo", json!({})).await;
    assert_eq!(ran.error().kind(), ErrorKind::Connect);
    assert_eq!(ran.error().delivery(), Delivery::NotSent);
}

#[tokio::test]
async fn the_bearer_is_sent_on_every_request() {
    let (server, _) = server().await;
    let client = client(EraPreference::Legacy);
    let endpoint = Endpoint::http(
        server.url(),
        Some(brain_mcp_transport::Secret::new("tok-123")),
    );
    let ran = call(&client, &endpoint, "echo", json!({"message": "x"})).await;
    assert_eq!(ran.text(), "x");
    assert_eq!(
        server.counters().call_headers[0]["authorization"],
        "Bearer tok-123"
    );
}

#[tokio::test]
async fn an_invalid_url_or_token_says_so_before_anything_is_sent() {
    let (server, endpoint) = server().await;
    let Endpoint::Http(http) = &endpoint else {
        unreachable!()
    };
    let with_user = http.url.replace("http://", "http://user:pw@");
    let cases = [
        (
            Endpoint::http("/mcp", None),
            ErrorKind::Connect,
            "the endpoint URL is not an absolute http or https URL",
        ),
        (
            Endpoint::http("ftp://127.0.0.1/mcp", None),
            ErrorKind::Connect,
            "the endpoint URL is not an absolute http or https URL",
        ),
        (
            Endpoint::http(with_user, None),
            ErrorKind::Connect,
            "the endpoint URL holds user info (user:password@), which this client does not send; use a bearer token instead",
        ),
        (
            Endpoint::http(
                http.url.clone(),
                Some(brain_mcp_transport::Secret::new("tok\nX-Injected: 1")),
            ),
            ErrorKind::MissingToken,
            "the bearer token is not a valid HTTP header value (it is empty, or holds a space, a newline or another control character)",
        ),
    ];
    for era in [EraPreference::Legacy, EraPreference::Auto] {
        let client = client(era);
        for (endpoint, kind, detail) in &cases {
            let ran = call(&client, endpoint, "echo", json!({})).await;
            assert_eq!(ran.error().kind(), *kind, "{era:?} {endpoint:?}");
            assert_eq!(ran.error().delivery(), Delivery::NotSent);
            assert_eq!(ran.error().detail(), *detail);
        }
    }
    assert_eq!(
        server.counters().http_posts,
        0,
        "nothing reached the server"
    );
}

#[tokio::test]
async fn a_dropped_call_still_closes_its_session() {
    let (server, endpoint) = server().await;
    let client = client(EraPreference::Legacy);
    let call = client.call(request(
        &endpoint,
        "hang",
        json!({}),
        "c1",
        Duration::from_secs(30),
    ));
    // The caller gives up on the future itself once the server runs the call: mid-call,
    // whatever the machine's speed.
    tokio::select! {
        _ = call => panic!("the hang tool never answers"),
        seen = server.wait_for(|c| c.calls_in_flight == 1, Duration::from_secs(30)) => {
            assert_eq!(seen.calls_in_flight, 1, "the call reached the tool");
        }
    }
    let seen = server
        .wait_for(
            |c| c.sessions_closed == 1 && c.calls_in_flight == 0 && c.cancellations == 1,
            Duration::from_secs(5),
        )
        .await;
    assert_eq!(seen.method("tools/call"), 1);
    assert_eq!(
        seen.cancellations, 1,
        "notifications/cancelled for the call"
    );
    assert_eq!(seen.open_sessions(), 0, "the session was deleted");
    assert_eq!(seen.calls_in_flight, 0, "the server's handler ended");
    client.shutdown(Duration::from_secs(5)).await;
    assert_eq!(client.stats().background_tasks, 0);
}

#[tokio::test]
async fn a_call_dropped_during_the_handshake_ends_its_requests() {
    let (server, _) = server().await;
    // The unanswered initialize gets this long to reveal a session before it is dropped.
    let options = brain_mcp_transport::ClientOptions::default()
        .era(EraPreference::Legacy)
        .close_timeout(Duration::from_millis(500));
    let client = brain_mcp_transport::McpClient::new(options).expect("the client builds");
    let endpoint = Endpoint::http(server.fault_url(HttpFault::Hang), None);
    let call = client.call(request(
        &endpoint,
        "echo",
        json!({}),
        "c1",
        Duration::from_secs(30),
    ));
    // Dropped once the initialize reached the server: mid-handshake, whatever the
    // machine's speed.
    tokio::select! {
        _ = call => panic!("the initialize is never answered"),
        seen = server.wait_for(|c| c.http_posts >= 1, Duration::from_secs(30)) => {
            assert!(seen.http_posts >= 1, "the initialize reached the server");
        }
    }
    // Dropping the open started its close (which ends the hung initialize after its
    // grace) on the client's tracker, and shutdown waits for it.
    assert_eq!(client.stats().background_tasks, 1);
    client.shutdown(Duration::from_secs(5)).await;
    assert_eq!(client.stats().background_tasks, 0);
    assert_eq!(server.counters().method("tools/call"), 0);
}

/// An answer in an SSE stream that is odd but legal (an unknown field, a line without a
/// colon, a repeated id, a retry that is not a number, invalid UTF-8 in a log event before
/// the result) is read as the HTML Standard says, not taken for a broken connection.
#[tokio::test]
async fn legal_but_unusual_sse_answers_are_read() {
    use serde_json::Value;
    use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::method};

    struct Odd;

    impl Respond for Odd {
        fn respond(&self, request: &Request) -> ResponseTemplate {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            let id = body["id"].clone();
            if id.is_null() {
                return ResponseTemplate::new(202);
            }
            let answer = ResponseTemplate::new(200).insert_header("mcp-session-id", "s-1");
            if body["method"] == "initialize" {
                return answer.set_body_json(json!({"jsonrpc": "2.0", "id": id, "result": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "odd", "version": "1"}
                }}));
            }
            let result = json!({"jsonrpc": "2.0", "id": id, "result": {
                "content": [{"type": "text", "text": "fine"}]
            }});
            let mut stream = Vec::new();
            stream.extend_from_slice(b": hello\r\nfoo: bar\r\ndata\r\n\r\n");
            stream.extend_from_slice(
                b"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"caf\xE9\"}}\n\n",
            );
            stream.extend_from_slice(b"event: message\nid: 1\nid: 2\nretry: soon\n");
            stream.extend_from_slice(format!("data: {result}\n\n").as_bytes());
            answer.set_body_raw(stream, "text/event-stream")
        }
    }

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(Odd)
        .mount(&server)
        .await;
    Mock::given(method("DELETE"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&server)
        .await;
    let endpoint = Endpoint::http(format!("{}/mcp", server.uri()), None);
    let client = cold_client(EraPreference::Legacy);
    let ran = call(&client, &endpoint, "echo", json!({})).await;
    assert_eq!(ran.text(), "fine", "{:?}", ran.outcome);
}

/// A server that answers `initialize` with a version no session speaks (unknown, or the
/// 2026-07-28 revision, which has no handshake) is left at once: `protocol`, `not_sent`,
/// no `tools/call`, and its session deleted.
#[tokio::test]
async fn an_unknown_protocol_version_ends_the_handshake() {
    use serde_json::Value;
    use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers::method};

    struct Answers(&'static str);

    impl Respond for Answers {
        fn respond(&self, request: &Request) -> ResponseTemplate {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
            if body["id"].is_null() {
                return ResponseTemplate::new(202);
            }
            ResponseTemplate::new(200)
                .insert_header("mcp-session-id", "s-1")
                .set_body_json(json!({"jsonrpc": "2.0", "id": body["id"], "result": {
                    "protocolVersion": self.0,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "odd", "version": "1"}
                }}))
        }
    }

    for version in ["banana", "2099-01-01", "2026-07-28"] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(Answers(version))
            .mount(&server)
            .await;
        Mock::given(method("DELETE"))
            .respond_with(ResponseTemplate::new(200))
            .mount(&server)
            .await;
        let endpoint = Endpoint::http(format!("{}/mcp", server.uri()), None);
        let client = cold_client(EraPreference::Legacy);
        let ran = call(&client, &endpoint, "echo", json!({})).await;
        let error = ran.outcome.expect_err("the call fails");
        assert_eq!(
            (error.kind(), error.delivery()),
            (ErrorKind::Protocol, Delivery::NotSent),
            "{version}: {error:?}"
        );
        assert!(error.detail().contains(version), "{version}: {error:?}");
        client.shutdown(Duration::from_secs(5)).await;
        let requests = server.received_requests().await.unwrap();
        let calls = requests
            .iter()
            .filter(|request| {
                serde_json::from_slice::<Value>(&request.body).unwrap_or_default()["method"]
                    == "tools/call"
            })
            .count();
        assert_eq!(calls, 0, "{version}: no tools/call");
        assert!(
            requests
                .iter()
                .any(|request| request.method.as_str() == "DELETE"),
            "{version}: the session is deleted"
        );
    }
}
