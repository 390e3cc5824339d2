//! Bounded under load and abuse: a tenant past its request rate gets 429 with
//! `Retry-After` and the other tenant does not notice; a tenant past its calls in flight
//! gets an error result that says when to retry; a body over the limit is refused before
//! it is read whole; a drain lets a call in flight finish.

use std::time::Duration;

use brain_mcp_testkit::Era;
use brain_tools::{CallRequest, EraPreference};
use serde_json::json;

use crate::support::{call, client, endpoint, initialize, post, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_past_its_rate_waits_and_the_other_tenant_does_not() {
    let running = start(
        Era::Both,
        json!({"limits": {"requests_per_minute_per_tenant": 60}}),
    )
    .await;
    let acme = running.key("acme");
    // The burst is ten requests; the eleventh waits about a second.
    let mut statuses = Vec::new();
    for _ in 0..11 {
        statuses.push(post(&running.url, Some(&acme), &initialize()).await);
    }
    let last = statuses.pop().unwrap();
    assert!(statuses.iter().all(|r| r.status().is_success()));
    assert_eq!(last.status(), 429);
    assert_eq!(last.headers()["retry-after"], "1");
    let globex = post(&running.url, Some(&running.key("globex")), &initialize()).await;
    assert!(
        globex.status().is_success(),
        "globex has a bucket of its own"
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_past_its_calls_in_flight_is_told_to_retry_and_nothing_is_sent() {
    let running = start(
        Era::Both,
        json!({"limits": {"calls_in_flight_per_tenant": 1}}),
    )
    .await;
    let client = client(EraPreference::Auto);
    let acme = endpoint(&running, &running.key("acme"));
    let hanging = tokio::spawn({
        let (client, acme) = (client.clone(), acme.clone());
        async move {
            client
                .call(CallRequest::new(
                    acme,
                    "hang",
                    "c1",
                    Duration::from_secs(30),
                ))
                .await
        }
    });
    running
        .upstream
        .wait_for(|c| c.calls_in_flight == 1, Duration::from_secs(10))
        .await;
    let refused = call(&client, acme, "echo", json!({"message": "x"}))
        .await
        .unwrap();
    let error = &refused.result["_meta"][brain_mcp_gateway::ERROR_META_KEY];
    assert_eq!(error["kind"], "overloaded");
    assert_eq!(error["delivery"], "not_sent");
    assert_eq!(error["retryable"], true);
    assert_eq!(error["retry_after_seconds"], 1);
    // globex is not held up by acme's call.
    let globex = endpoint(&running, &running.key("globex"));
    let done = call(&client, globex, "shout", json!({"message": "x"}))
        .await
        .unwrap();
    assert_eq!(done.result["content"][0]["text"], "x");
    assert_eq!(running.upstream.counters().method("tools/call"), 2);
    hanging.abort();
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_is_refused_before_it_is_read_whole() {
    let running = start(Era::Both, json!({"limits": {"max_body_bytes": 65536}})).await;
    let key = running.key("acme");
    // 100 MB sent as a stream: refused once past the limit, not read to its end.
    let chunk = bytes::Bytes::from(vec![b' '; 1 << 20]);
    let body = futures::stream::iter((0..100).map(move |_| Ok::<_, std::io::Error>(chunk.clone())));
    let answer = crate::support::http()
        .post(&running.url)
        .bearer_auth(&key)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(reqwest::Body::wrap_stream(body))
        .send()
        .await;
    match answer {
        Ok(answer) => assert_eq!(answer.status(), 413),
        // The server may close the connection while the client still sends.
        Err(error) => assert!(error.is_request() || error.is_body(), "{error}"),
    }
    // The gateway serves on.
    let ok = post(&running.url, Some(&key), &initialize()).await;
    assert!(ok.status().is_success());
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drain_lets_a_call_in_flight_finish_and_takes_no_new_one() {
    let running = start(Era::Both, json!({"limits": {"drain_seconds": 30}})).await;
    let client = client(EraPreference::Auto);
    let acme = endpoint(&running, &running.key("acme"));
    let slow = tokio::spawn({
        let (client, acme) = (client.clone(), acme.clone());
        async move {
            client
                .call(
                    CallRequest::new(acme, "progress", "c1", Duration::from_secs(30)).arguments(
                        json!({"steps": 3, "delay_ms": 300})
                            .as_object()
                            .cloned()
                            .unwrap(),
                    ),
                )
                .await
        }
    });
    running
        .upstream
        .wait_for(|c| c.calls_in_flight == 1, Duration::from_secs(10))
        .await;
    let gateway = running.gateway.clone();
    running.stop_token().cancel();
    let base = running.url.trim_end_matches("/mcp").to_owned();
    // Draining: not ready (the load balancer stops sending work) while the call runs,
    // and a new call is refused, retryable.
    tokio::time::timeout(Duration::from_secs(10), async {
        while gateway.is_ready() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the drain starts");
    let ready = crate::support::get(&format!("{base}/readyz")).await;
    assert_eq!(ready.status(), 503);
    let refused = call(&client, acme, "echo", json!({"message": "x"}))
        .await
        .unwrap();
    let error = &refused.result["_meta"][brain_mcp_gateway::ERROR_META_KEY];
    assert_eq!(
        (error["kind"].as_str(), error["retryable"].as_bool()),
        (Some("overloaded"), Some(true))
    );
    let done = slow.await.unwrap().unwrap();
    assert_eq!(done.result["content"][0]["text"], "done");
    assert_eq!(gateway.calls_in_flight(), 0);
    running.stop().await;
}

/// With a drain notice, a stopping gateway says 503 on `/readyz` at once and goes on
/// serving calls until the notice ends, so a load balancer's check takes it out of
/// rotation before any call is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn during_the_drain_notice_readyz_says_503_and_calls_are_still_served() {
    let running = start(Era::Both, json!({"limits": {"drain_notice_seconds": 3}})).await;
    let client = client(EraPreference::Auto);
    let acme = endpoint(&running, &running.key("acme"));
    let gateway = running.gateway.clone();
    running.stop_token().cancel();
    tokio::time::timeout(Duration::from_secs(10), async {
        while gateway.is_ready() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("the notice starts");
    let base = running.url.trim_end_matches("/mcp").to_owned();
    let ready = crate::support::get(&format!("{base}/readyz")).await;
    assert_eq!(ready.status(), 503);
    let served = call(&client, acme, "echo", json!({"message": "still here"}))
        .await
        .unwrap();
    assert_eq!(
        served.result["content"][0]["text"], "still here",
        "{:?}",
        served.result
    );
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_on_this_machine_may_call_the_gateway_it_reached_on_loopback_and_no_other_page_may()
{
    // (Origin, Host, served?) with the credentials of acme: DNS rebinding protection.
    let running = start(Era::Both, json!({"allowed_hosts": ["gw.example.com"]})).await;
    let key = running.key("acme");
    let port = running
        .url
        .split(':')
        .nth(2)
        .unwrap()
        .trim_end_matches("/mcp")
        .to_owned();
    let loopback = format!("127.0.0.1:{port}");
    let cases = [
        (None, loopback.as_str(), true),
        (Some("http://127.0.0.1:3000"), loopback.as_str(), true),
        (Some("http://localhost:3000"), loopback.as_str(), true),
        (Some("http://[::1]:3000"), loopback.as_str(), true),
        (
            Some(&*format!("http://{loopback}")),
            loopback.as_str(),
            true,
        ),
        (Some("http://evil.example.com"), loopback.as_str(), false),
        (Some("http://evil.example.com"), "evil.example.com", false),
        (None, "evil.example.com", false),
        // A host the config allows, but a page of this machine: not a page of that host.
        (Some("http://localhost:3000"), "gw.example.com", false),
        (None, "gw.example.com", true),
    ];
    for (origin, host, served) in cases {
        let mut request = crate::support::http()
            .post(&running.url)
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("host", host)
            .body(initialize().to_string());
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        let status = request.send().await.unwrap().status();
        assert_eq!(
            status.is_success(),
            served,
            "Origin {origin:?}, Host {host}: {status}"
        );
        if !served {
            assert_eq!(status, 403, "Origin {origin:?}, Host {host}");
        }
    }
    running.stop().await;
}
