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
