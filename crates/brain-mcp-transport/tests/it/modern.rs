//! The 2026-07-28 era: one shared client per server, one POST per call.

use std::{collections::HashSet, time::Duration};

use brain_mcp_testkit::{Era, ServerOptions, TestServer};
use brain_mcp_transport::{Delivery, Endpoint, Era as Served, EraPreference, ErrorKind};
use serde_json::json;

use crate::support::{GRACE, call, client, request, run};

async fn server() -> (TestServer, Endpoint) {
    let server = TestServer::start(ServerOptions {
        era: Era::Modern,
        ..ServerOptions::default()
    })
    .await
    .unwrap();
    let endpoint = Endpoint::http(server.url(), None);
    (server, endpoint)
}

#[tokio::test]
async fn one_discover_then_one_post_per_call() {
    let (server, endpoint) = server().await;
    let client = client(EraPreference::Auto);
    for i in 0..5 {
        let ran = call(
            &client,
            &endpoint,
            "echo",
            json!({"message": format!("m{i}")}),
        )
        .await;
        assert_eq!(ran.text(), format!("m{i}"));
        assert_eq!(ran.outcome.as_ref().unwrap().era, Served::Modern);
    }
    let seen = server.counters();
    assert_eq!(seen.method("server/discover"), 1);
    assert_eq!(seen.method("tools/call"), 5);
    assert_eq!(seen.method("initialize"), 0);
    assert_eq!(seen.http_posts, 6, "one POST per call after discovery");
    assert_eq!(seen.deletes, 0);
}

#[tokio::test]
async fn requests_carry_the_2026_metadata_and_headers() {
    let (server, endpoint) = server().await;
    let client = client(EraPreference::Modern);
    let ran = call(&client, &endpoint, "echo", json!({"message": "x"})).await;
    assert_eq!(ran.text(), "x");
    let seen = server.counters();
    let meta = &seen.call_meta[0];
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    assert!(meta["io.modelcontextprotocol/clientCapabilities"].is_object());
    assert_eq!(
        meta["io.modelcontextprotocol/clientInfo"]["name"],
        "brain-mcp-tools"
    );
    assert_eq!(meta["progressToken"], "c1");
    let headers = &seen.call_headers[0];
    assert_eq!(headers["mcp-protocol-version"], "2026-07-28");
    assert_eq!(headers["mcp-method"], "tools/call");
    assert_eq!(headers["mcp-name"], "echo");
    assert!(!headers.contains_key("mcp-session-id"));
}

#[tokio::test]
async fn concurrent_calls_get_their_own_progress_even_with_the_same_call_id() {
    let (_server, endpoint) = server().await;
    let client = client(EraPreference::Modern);
    let mut calls = Vec::new();
    for i in 0..64 {
        let client = client.clone();
        let endpoint = endpoint.clone();
        // Half the calls share the call id "same": progress is routed by stream, not token.
        let id = if i % 2 == 0 {
            format!("c{i}")
        } else {
            "same".to_owned()
        };
        calls.push(tokio::spawn(async move {
            let steps = 1 + i % 5;
            let ran = run(
                &client,
                request(
                    &endpoint,
                    "progress",
                    json!({"steps": steps, "delay_ms": 2}),
                    &id,
                    Duration::from_secs(20),
                ),
            )
            .await;
            (steps, ran)
        }));
    }
    for handle in calls {
        let (steps, ran) = handle.await.unwrap();
        assert_eq!(ran.text(), "done");
        let seen: Vec<f64> = ran.progress.iter().map(|p| p.progress).collect();
        let want: Vec<f64> = (1..=steps).map(|s| s as f64).collect();
        assert_eq!(
            seen, want,
            "each call sees exactly its own progress, in order"
        );
    }
}

#[tokio::test]
async fn timeout_closes_the_stream_which_cancels_the_handler() {
    let (server, endpoint) = server().await;
    let client = client(EraPreference::Modern);
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
        .wait_for(|c| c.handler_cancellations == 1, Duration::from_secs(5))
        .await;
    assert_eq!(
        seen.handler_cancellations, 1,
        "closing the stream cancelled the work"
    );
    assert_eq!(seen.method("tools/call"), 1);
    // The shared client is still good.
    assert_eq!(
        call(&client, &endpoint, "echo", json!({"message": "after"}))
            .await
            .text(),
        "after"
    );
}

#[tokio::test]
async fn output_over_budget_fails_only_that_call() {
    let (_server, endpoint) = server().await;
    let client = client(EraPreference::Modern);
    let big = run(
        &client,
        request(
            &endpoint,
            "big",
            json!({"bytes": 3_000_000}),
            "big",
            Duration::from_secs(10),
        )
        .max_output_bytes(65_536),
    );
    let small = call(&client, &endpoint, "echo", json!({"message": "small"}));
    let (big, small) = tokio::join!(big, small);
    assert_eq!(big.error().kind(), ErrorKind::OutputTooLarge);
    assert_eq!(small.text(), "small");
}

#[tokio::test]
async fn a_thousand_calls_share_one_client_and_match_their_results() {
    let (server, endpoint) = server().await;
    server.record_call_details(false);
    let client = client(EraPreference::Auto);
    let mut calls = Vec::new();
    for i in 0..1000 {
        let client = client.clone();
        let endpoint = endpoint.clone();
        calls.push(tokio::spawn(async move {
            // What this checks is that each call gets its own answer over the one shared
            // client, not how fast a machine runs a thousand: the deadline is a day.
            let request = crate::support::request(
                &endpoint,
                "echo",
                json!({"message": format!("n{i}")}),
                "c1",
                Duration::from_secs(86_400),
            );
            let ran = crate::support::run(&client, request).await;
            (i, ran.text().to_owned())
        }));
    }
    let mut seen = HashSet::new();
    for handle in calls {
        let (i, text) = handle.await.unwrap();
        assert_eq!(text, format!("n{i}"));
        seen.insert(i);
    }
    assert_eq!(seen.len(), 1000);
    assert_eq!(server.counters().method("server/discover"), 1);
    assert_eq!(client.stats().modern_clients, 1);
}

#[tokio::test]
async fn a_dropped_call_ends_the_request_on_the_server() {
    let (server, endpoint) = server().await;
    let client = client(EraPreference::Auto);
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
            |c| c.calls_in_flight == 0 && c.handler_cancellations == 1,
            Duration::from_secs(5),
        )
        .await;
    assert_eq!(seen.method("tools/call"), 1);
    assert_eq!(
        seen.calls_in_flight, 0,
        "closing the stream ended the handler"
    );
    assert_eq!(
        seen.handler_cancellations, 1,
        "the handler saw it cancelled"
    );
    // The shared client is still usable.
    let ran = call_again(&client, &endpoint).await;
    assert_eq!(ran.text(), "again");
    client.shutdown(Duration::from_secs(5)).await;
    assert_eq!(client.stats().background_tasks, 0);
}

async fn call_again(
    client: &brain_mcp_transport::McpClient,
    endpoint: &Endpoint,
) -> crate::support::Ran {
    call(client, endpoint, "echo", json!({"message": "again"})).await
}

#[tokio::test]
async fn an_input_required_round_over_sse_gets_its_answer() {
    let (server, endpoint) = server().await;
    let options = brain_mcp_transport::ClientOptions::default()
        .era(EraPreference::Modern)
        .server_requests(brain_mcp_transport::ServerRequestPolicy::AcceptElicitationDefaults);
    let client = brain_mcp_transport::McpClient::new(options).expect("the client builds");
    // Two rounds of tools/call, each answered on its own SSE stream.
    let ran = run(
        &client,
        request(&endpoint, "ask", json!({}), "c1", Duration::from_secs(10)),
    )
    .await;
    assert_eq!(ran.text(), "asked");
    assert_eq!(server.counters().method("tools/call"), 2);
    assert_eq!(server.counters().handler_cancellations, 0);
    client.shutdown(Duration::from_secs(5)).await;
}
