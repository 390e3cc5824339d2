//! Choosing the era per server.

use std::time::Duration;

use brain_mcp_testkit::Era;
use brain_mcp_transport::{Era as Served, EraPreference, ErrorKind};
use serde_json::json;

use crate::support::{call, client, cold_client, started};

#[tokio::test]
async fn a_legacy_server_is_probed_once_then_served_per_session() {
    let (server, endpoint) = started(Era::Legacy).await;
    let client = cold_client(EraPreference::Auto);
    for _ in 0..3 {
        let ran = call(&client, &endpoint, "echo", json!({"message": "x"})).await;
        assert_eq!(ran.outcome.as_ref().unwrap().era, Served::Legacy);
    }
    let seen = server
        .wait_for(|c| c.sessions_closed == 3, Duration::from_secs(5))
        .await;
    assert_eq!(
        seen.method("server/discover"),
        1,
        "what the server speaks is remembered"
    );
    assert_eq!(seen.method("initialize"), 3);
}

#[tokio::test]
async fn a_server_of_both_eras_gets_the_modern_one() {
    let (server, endpoint) = started(Era::Both).await;
    let client = client(EraPreference::Auto);
    let ran = call(&client, &endpoint, "echo", json!({"message": "x"})).await;
    assert_eq!(ran.outcome.as_ref().unwrap().era, Served::Modern);
    assert_eq!(server.counters().method("initialize"), 0);
}

#[tokio::test]
async fn forcing_legacy_on_a_both_server_uses_sessions() {
    let (server, endpoint) = started(Era::Both).await;
    let client = client(EraPreference::Legacy);
    let ran = call(&client, &endpoint, "echo", json!({"message": "x"})).await;
    assert_eq!(ran.outcome.as_ref().unwrap().era, Served::Legacy);
    assert_eq!(server.counters().method("server/discover"), 0);
}

#[tokio::test]
async fn forcing_modern_on_a_legacy_server_is_an_error() {
    let (server, endpoint) = started(Era::Legacy).await;
    let client = client(EraPreference::Modern);
    let ran = call(&client, &endpoint, "echo", json!({"message": "x"})).await;
    assert_eq!(ran.error().kind(), ErrorKind::Protocol);
    assert_eq!(server.counters().method("tools/call"), 0);
}

/// A server from before 2026 that holds `server/discover` open (some never answer a
/// method they do not know), and answers `initialize` at once.
async fn holding_discover() -> (brain_mcp_testkit::TestServer, brain_mcp_transport::Endpoint) {
    let server = brain_mcp_testkit::TestServer::start(brain_mcp_testkit::ServerOptions {
        era: Era::Legacy,
        hold_discover: true,
        ..brain_mcp_testkit::ServerOptions::default()
    })
    .await
    .unwrap();
    let endpoint = brain_mcp_transport::Endpoint::http(server.url(), None);
    (server, endpoint)
}

#[tokio::test]
async fn a_server_that_never_answers_the_probe_falls_back_within_a_third_of_the_deadline() {
    let (server, endpoint) = holding_discover().await;
    let client = cold_client(EraPreference::Auto);
    // A 20 s call: the probe is given up after 3 s; a 1.5 s call: after 0.5 s.
    for (timeout, probe) in [(20.0, 3.0), (1.5, 0.5)] {
        client.forget_servers();
        let request = crate::support::request(
            &endpoint,
            "echo",
            json!({"message": "x"}),
            "c1",
            Duration::from_secs_f64(timeout),
        );
        let ran = crate::support::run(&client, request).await;
        assert_eq!(
            ran.outcome.as_ref().unwrap().era,
            Served::Legacy,
            "{timeout} s"
        );
        assert!(
            ran.elapsed >= Duration::from_secs_f64(probe)
                && ran.elapsed < Duration::from_secs_f64(timeout),
            "{timeout} s: the call waited for the probe's bound, then initialize: {:?}",
            ran.elapsed
        );
    }
    // Once known, the server is not probed again.
    let ran = call(&client, &endpoint, "echo", json!({"message": "x"})).await;
    assert_eq!(ran.outcome.as_ref().unwrap().era, Served::Legacy);
    let seen = server.counters();
    assert_eq!(
        seen.method("server/discover"),
        2,
        "one probe per forgetting"
    );
    assert_eq!(seen.method("initialize"), 3);
    assert_eq!(seen.method("tools/call"), 3);
}

#[tokio::test]
async fn a_binding_that_pins_its_era_never_probes() {
    let (server, endpoint) = holding_discover().await;
    let client = cold_client(EraPreference::Auto);
    for call_id in ["c1", "c2"] {
        let request = crate::support::request(
            &endpoint,
            "echo",
            json!({"message": "x"}),
            call_id,
            Duration::from_secs(10),
        )
        .era(Served::Legacy);
        let ran = crate::support::run(&client, request).await;
        assert_eq!(ran.outcome.as_ref().unwrap().era, Served::Legacy);
    }
    let seen = server.counters();
    assert_eq!(seen.method("server/discover"), 0);
    assert_eq!(seen.method("tools/call"), 2);
}

#[tokio::test]
async fn a_pinned_era_the_server_no_longer_speaks_fails_naming_the_field() {
    // (the server's era, the era the binding pins)
    for (speaks, pinned) in [(Era::Legacy, Served::Modern), (Era::Modern, Served::Legacy)] {
        let (server, endpoint) = started(speaks).await;
        let client = cold_client(EraPreference::Auto);
        let request = crate::support::request(
            &endpoint,
            "echo",
            json!({"message": "x"}),
            "c1",
            Duration::from_secs(10),
        )
        .era(pinned);
        let ran = crate::support::run(&client, request).await;
        let error = ran.error();
        assert_eq!(
            (error.kind(), error.delivery()),
            (ErrorKind::Protocol, brain_mcp_transport::Delivery::NotSent),
            "{speaks}: {error}"
        );
        assert!(
            error.detail().contains("the binding's \"era\" pins")
                && error.detail().contains(pinned.protocol_version()),
            "{speaks}: {}",
            error.detail()
        );
        let seen = server.counters();
        assert_eq!(seen.method("tools/call"), 0, "{speaks}");
        // Never a silent probe of the other era.
        let other = match pinned {
            Served::Modern => "initialize",
            _ => "server/discover",
        };
        assert_eq!(seen.method(other), 0, "{speaks}: {other}");
    }
}
