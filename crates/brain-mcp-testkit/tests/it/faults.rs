use std::time::{Duration, Instant};

use brain_mcp_testkit::{HttpFault, ServerOptions, TestServer};
use serde_json::json;

use crate::client::*;

fn initialize() -> serde_json::Value {
    request(
        1,
        "initialize",
        json!({"protocolVersion": V2025, "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}}),
    )
}

#[tokio::test]
async fn fault_401_challenges_and_counts_the_request() {
    let server = TestServer::start(ServerOptions::default()).await.unwrap();
    let url = server.fault_url(HttpFault::Status401);
    assert!(url.ends_with("/fault/401/mcp"), "{url}");
    let reply = post(&url, &[("Authorization", "Bearer nope")], &initialize()).await;
    assert_eq!(reply.status, 401);
    assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&reply.body).unwrap(),
        json!({"error": "unauthorized"})
    );
    let c = server.counters();
    assert_eq!(
        (c.method("initialize"), c.http_posts, c.sessions_opened),
        (1, 1, 0)
    );

    let plain = post(
        &server.fault_url(HttpFault::Status401Plain),
        &[],
        &initialize(),
    )
    .await;
    assert_eq!(
        (
            plain.status,
            plain.header("www-authenticate"),
            plain.body.len()
        ),
        (401, None, 0)
    );
}

#[tokio::test]
async fn body_faults_answer_as_documented() {
    let server = TestServer::start(ServerOptions::default()).await.unwrap();
    let html = post(
        &server.fault_url(HttpFault::Status500Html),
        &[],
        &initialize(),
    )
    .await;
    assert_eq!(html.status, 500);
    assert!(
        html.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert!(html.text().contains("Internal Server Error"));

    let status = |f| {
        let url = server.fault_url(f);
        async move { post(&url, &[], &initialize()).await.status }
    };
    assert_eq!(status(HttpFault::Status403).await, 403);
    assert_eq!(status(HttpFault::Status404).await, 404);
    assert_eq!(status(HttpFault::Status405).await, 405);
    assert_eq!(status(HttpFault::Status406).await, 406);
    assert_eq!(status(HttpFault::Status502Html).await, 502);

    let wrong_type = post(
        &server.fault_url(HttpFault::WrongContentType),
        &[],
        &initialize(),
    )
    .await;
    assert_eq!(
        (wrong_type.status, wrong_type.text().as_str()),
        (200, "hello")
    );
    let malformed = post(
        &server.fault_url(HttpFault::MalformedJson),
        &[],
        &initialize(),
    )
    .await;
    assert_eq!(malformed.text(), "{not json");
    let error = post(
        &server.fault_url(HttpFault::JsonRpcError),
        &[],
        &initialize(),
    )
    .await;
    assert_eq!(
        error.answer(),
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "boom"}})
    );
    let wrong_id = post(&server.fault_url(HttpFault::WrongId), &[], &initialize()).await;
    let answer = wrong_id.answer();
    assert_ne!(answer["id"], 1);
    assert_eq!(answer["result"]["protocolVersion"], V2025);

    let reset = send(
        "POST",
        &server.fault_url(HttpFault::ResetBeforeResponse),
        &[("Content-Type", "application/json")],
        Some(&initialize()),
    )
    .await;
    assert!(reset.is_err(), "no response at all: {reset:?}");
    assert_eq!(server.counters().method("initialize"), 11);
}

#[tokio::test]
async fn hang_and_drip_do_not_block_shutdown() {
    let server = TestServer::start(ServerOptions::default()).await.unwrap();
    let hang = server.fault_url(HttpFault::Hang);
    let drip = server.fault_url(HttpFault::DripOneBytePerSecond);
    let hung =
        tokio::time::timeout(Duration::from_millis(300), post(&hang, &[], &initialize())).await;
    assert!(hung.is_err(), "a hung request gets no answer");
    let drip_task =
        tokio::spawn(async move { send("POST", &drip, &[], Some(&initialize())).await });
    let hang_task =
        tokio::spawn(async move { send("POST", &hang, &[], Some(&initialize())).await });
    server
        .wait_for(|c| c.http_posts == 3, Duration::from_secs(5))
        .await;
    let started = Instant::now();
    server.shutdown().await;
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let drip = drip_task.await.unwrap().unwrap();
    assert_eq!(drip.status, 200);
    assert!(drip.text().starts_with(':'));
    let _ = hang_task.await.unwrap();
}
