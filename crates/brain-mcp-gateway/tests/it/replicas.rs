//! Replicas without affinity: a legacy-era session opened on one gateway is served by any
//! other holding the same key ring, for the tenant that opened it only; a replica with
//! another ring, another tenant, an altered id or an ended session get 404 (the client
//! starts a new session).

use std::{collections::HashMap, time::Duration};

use brain_mcp_gateway::Gateway;
use brain_mcp_testkit::{Era, ServerOptions, TestServer};
use brain_tools::{HostConfig, KeyRing, ToolHost};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::{bindings, http, initialize};

const RING: &str = "k2:ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8, k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

/// One gateway of a fleet, in front of a shared upstream, with the fleet's API keys.
struct Replica {
    url: String,
    stop: CancellationToken,
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn replica(upstream: &TestServer, keys: &std::path::Path, ring: Option<&str>) -> Replica {
    let config = json!({
        "tools": bindings(&upstream.url()),
        "gateway": {"api_keys": keys.to_string_lossy()},
    });
    let loaded = HostConfig::from_json_bytes(config.to_string().as_bytes()).unwrap();
    let host = ToolHost::new(&loaded.config).unwrap();
    let mut builder = Gateway::builder(host, &loaded.config);
    if let Some(ring) = ring {
        builder = builder.session_keys(KeyRing::parse(ring).unwrap());
    }
    let gateway = builder.build().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let stop = CancellationToken::new();
    let until = stop.clone();
    tokio::spawn(async move {
        gateway
            .serve(listener, async move { until.cancelled().await })
            .await
            .unwrap();
    });
    Replica { url, stop }
}

/// A POST (or DELETE, with no body) in a session; the status and the JSON-RPC messages of
/// the SSE answer.
async fn send(
    url: &str,
    key: &str,
    session: &str,
    method: reqwest::Method,
    body: Option<Value>,
) -> (u16, Vec<Value>) {
    let mut request = http()
        .request(method, url)
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", session);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = tokio::time::timeout(Duration::from_secs(10), response.text())
        .await
        .expect("the answer ends")
        .unwrap();
    let messages = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect();
    (status, messages)
}

async fn open_session(url: &str, key: &str) -> String {
    let opened = crate::support::post(url, Some(key), &initialize()).await;
    assert!(opened.status().is_success(), "{}", opened.status());
    opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

fn echo(id: u64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "echo", "arguments": {"message": message}}})
}

/// The testkit, and a key file with keys for acme and globex.
async fn upstream_and_keys() -> (TestServer, tempfile::TempDir, HashMap<&'static str, String>) {
    let upstream = TestServer::start(ServerOptions {
        era: Era::Both,
        ..ServerOptions::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut lines = String::new();
    let mut keys = HashMap::new();
    for tenant in ["acme", "globex"] {
        let (key, line) = brain_mcp_gateway::new_api_key(tenant).unwrap();
        keys.insert(tenant, key);
        lines.push_str(&line);
        lines.push('\n');
    }
    std::fs::write(dir.path().join("keys"), lines).unwrap();
    (upstream, dir, keys)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_opened_on_one_replica_is_served_by_any_other_with_the_same_keys() {
    let (upstream, dir, keys) = upstream_and_keys().await;
    let key_file = dir.path().join("keys");
    let a = replica(&upstream, &key_file, Some(RING)).await;
    let b = replica(&upstream, &key_file, Some(RING)).await;
    let stranger = replica(&upstream, &key_file, None).await;
    let (acme, globex) = (keys["acme"].as_str(), keys["globex"].as_str());
    let post = reqwest::Method::POST;

    let session = open_session(&a.url, acme).await;
    assert!(session.starts_with("s1.k2."), "{session}");
    let (status, _) = send(
        &b.url,
        acme,
        &session,
        post.clone(),
        Some(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
    )
    .await;
    assert_eq!(status, 202);
    // Calls alternate between the replicas, all in the one session.
    for (n, replica) in [&b, &a, &b].into_iter().enumerate() {
        let (status, messages) = send(
            &replica.url,
            acme,
            &session,
            post.clone(),
            Some(echo(n as u64 + 2, "hi")),
        )
        .await;
        assert_eq!(status, 200);
        let last = messages.last().expect("an answer");
        assert_eq!(last["result"]["content"][0]["text"], "hi", "{messages:?}");
    }
    assert_eq!(upstream.counters().method("tools/call"), 3);

    // Another tenant, a replica with other keys, an altered id: no such session.
    let (status, _) = send(&b.url, globex, &session, post.clone(), Some(echo(9, "x"))).await;
    assert_eq!(status, 404, "another tenant's session");
    let (status, _) = send(
        &stranger.url,
        acme,
        &session,
        post.clone(),
        Some(echo(9, "x")),
    )
    .await;
    assert_eq!(status, 404, "a replica with other keys");
    let mut altered = session.clone().into_bytes();
    let last = altered.len() - 2;
    altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    let (status, _) = send(&b.url, acme, &altered, post.clone(), Some(echo(9, "x"))).await;
    assert_eq!(status, 404, "an altered id");
    assert_eq!(
        upstream.counters().method("tools/call"),
        3,
        "none of them ran"
    );

    // A replica holding the older key only cannot open what the newer one sealed; after
    // a rotation (the new key first, the old one kept) ids sealed before still open.
    let older = replica(
        &upstream,
        &key_file,
        Some("k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="),
    )
    .await;
    let (status, _) = send(&older.url, acme, &session, post.clone(), Some(echo(9, "x"))).await;
    assert_eq!(status, 404, "the key it was sealed with is not in the ring");
    let old_session = open_session(&older.url, acme).await;
    let (status, messages) = send(
        &a.url,
        acme,
        &old_session,
        post.clone(),
        Some(echo(10, "rotated")),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        messages.last().unwrap()["result"]["content"][0]["text"],
        "rotated"
    );

    // DELETE ends the session on the replica that took it.
    let (status, _) = send(&b.url, acme, &session, reqwest::Method::DELETE, None).await;
    assert!((200..300).contains(&status), "{status}");
    let (status, _) = send(&b.url, acme, &session, post.clone(), Some(echo(11, "x"))).await;
    assert_eq!(status, 404, "ended");
}

/// A `notifications/cancelled` that lands on another replica than the call's does not
/// cancel it (no replica knows where another's calls run): the call runs to its end. The
/// caller's connection closing always cancels (`calls.rs`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_that_lands_on_another_replica_does_not_cancel_the_call() {
    let (upstream, dir, keys) = upstream_and_keys().await;
    let key_file = dir.path().join("keys");
    let a = replica(&upstream, &key_file, Some(RING)).await;
    let b = replica(&upstream, &key_file, Some(RING)).await;
    let acme = keys["acme"].as_str();
    let session = open_session(&a.url, acme).await;
    let (status, _) = send(
        &a.url,
        acme,
        &session,
        reqwest::Method::POST,
        Some(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
    )
    .await;
    assert_eq!(status, 202);
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "progress", "arguments": {"steps": 5, "delay_ms": 100},
        "_meta": {"progressToken": "p7"}}});
    let mut calling = http()
        .post(&a.url)
        .bearer_auth(acme)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", &session)
        .body(call.to_string())
        .send()
        .await
        .unwrap();
    // At the call's first progress, the cancel goes to the other replica.
    let mut seen = String::new();
    while !seen.contains("notifications/progress") {
        let chunk = tokio::time::timeout(Duration::from_secs(10), calling.chunk())
            .await
            .expect("progress comes")
            .unwrap()
            .expect("the stream goes on");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    let (status, _) = send(
        &b.url,
        acme,
        &session,
        reqwest::Method::POST,
        Some(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": 7, "reason": "the user gave up"}}),
        ),
    )
    .await;
    assert_eq!(status, 202, "the other replica takes the notification");
    let rest = tokio::time::timeout(Duration::from_secs(10), calling.text())
        .await
        .expect("the call ends")
        .unwrap();
    seen.push_str(&rest);
    let result: Value = seen
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message["id"] == 7)
        .expect("the call's answer");
    assert_eq!(result["result"]["content"][0]["text"], "done", "{result}");
    assert_eq!(upstream.counters().handler_cancellations, 0);
}
