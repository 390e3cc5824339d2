//! Warm contexts: sessions and processes opened before a call needs one, each serving
//! exactly one call, closed when idle and at shutdown.

use std::{collections::BTreeSet, time::Duration};

use brain_mcp_testkit::{Era, ServerOptions, TestServer};
use brain_mcp_transport::{ClientOptions, Endpoint, EraPreference, McpClient, StdioEndpoint};
use serde_json::json;

use crate::support::{call, client_with, request, run};

async fn legacy_server() -> (TestServer, Endpoint) {
    let server = TestServer::start(ServerOptions {
        era: Era::Legacy,
        ..ServerOptions::default()
    })
    .await
    .unwrap();
    let endpoint = Endpoint::http(server.url(), None);
    (server, endpoint)
}

/// Waits (bounded) until the client holds `n` warm contexts: they are opened in the
/// background.
pub(crate) async fn until_warm(client: &McpClient, n: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while client.stats().warm_contexts < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no warm context came: {:?}",
            client.stats()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test]
async fn each_warm_session_serves_one_call_and_closes_at_shutdown() {
    let (server, endpoint) = legacy_server().await;
    let client = client_with(ClientOptions::default().era(EraPreference::Legacy));
    for i in 0..6 {
        if i >= 2 {
            until_warm(&client, 1).await;
        }
        let ran = call(
            &client,
            &endpoint,
            "echo",
            json!({"message": format!("m{i}")}),
        )
        .await;
        assert_eq!(ran.text(), format!("m{i}"));
    }
    assert_eq!(
        client.stats().warm_served,
        4,
        "calls 3 to 6 took a warm session"
    );
    let counters = server.counters();
    let sessions: BTreeSet<&String> = counters
        .call_headers
        .iter()
        .map(|headers| &headers["mcp-session-id"])
        .collect();
    assert_eq!(sessions.len(), 6, "every call had a session of its own");
    client.shutdown(Duration::from_secs(5)).await;
    let seen = server
        .wait_for(|c| c.open_sessions() == 0, Duration::from_secs(5))
        .await;
    assert_eq!(seen.open_sessions(), 0, "warm sessions closed at shutdown");
    let stats = client.stats();
    assert_eq!(
        (stats.warm_contexts, stats.background_tasks),
        (0, 0),
        "{stats:?}"
    );
}

#[tokio::test]
async fn an_expired_warm_session_moves_the_call_to_a_fresh_one() {
    let (server, endpoint) = legacy_server().await;
    let client = client_with(ClientOptions::default().era(EraPreference::Legacy));
    for _ in 0..2 {
        call(&client, &endpoint, "echo", json!({"message": "x"})).await;
    }
    until_warm(&client, 1).await;
    server.expire_sessions().await;
    let before = server.counters().method("tools/call");
    let ran = call(&client, &endpoint, "echo", json!({"message": "after"})).await;
    assert_eq!(ran.text(), "after", "{:?}", ran.outcome);
    let seen = server.counters();
    assert_eq!(
        seen.method("tools/call") - before,
        2,
        "the warm session's call was refused (404), the fresh one answered"
    );
    client.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn calls_further_apart_than_the_idle_bound_keep_nothing_warm() {
    let (server, endpoint) = legacy_server().await;
    let idle = Duration::from_millis(100);
    let client = client_with(
        ClientOptions::default()
            .era(EraPreference::Legacy)
            .warm_idle(idle),
    );
    for _ in 0..3 {
        call(&client, &endpoint, "echo", json!({"message": "x"})).await;
        // The scenario: a server called less often than the idle bound.
        tokio::time::sleep(idle * 2).await;
    }
    let stats = client.stats();
    assert_eq!(
        (stats.warm_contexts, stats.warm_served),
        (0, 0),
        "{stats:?}"
    );
    assert_eq!(
        server.counters().sessions_opened,
        3,
        "one session per call, no more"
    );
    client.shutdown(Duration::from_secs(5)).await;
}

/// A call cancelled before it starts sends nothing: it leaves the warm session for the
/// next call and opens no other.
#[tokio::test]
async fn a_call_cancelled_before_it_starts_takes_no_warm_session() {
    let (server, endpoint) = legacy_server().await;
    let client = client_with(ClientOptions::default().era(EraPreference::Legacy));
    for _ in 0..2 {
        call(&client, &endpoint, "echo", json!({"message": "x"})).await;
    }
    until_warm(&client, 1).await;
    let opened = server.counters().sessions_opened;
    let cancelled = request(
        &endpoint,
        "echo",
        json!({"message": "y"}),
        "c2",
        Duration::from_secs(10),
    );
    cancelled.cancel.cancel();
    let ran = run(&client, cancelled).await;
    let error = ran.outcome.expect_err("a cancelled call fails");
    assert_eq!(
        error.kind(),
        brain_mcp_transport::ErrorKind::Cancelled,
        "{error:?}"
    );
    let stats = client.stats();
    assert_eq!(
        (stats.warm_contexts, stats.warm_served),
        (1, 0),
        "{stats:?}"
    );
    assert_eq!(
        server.counters().sessions_opened,
        opened,
        "no session opened"
    );
    let ran = call(&client, &endpoint, "echo", json!({"message": "z"})).await;
    assert_eq!(ran.text(), "z");
    assert_eq!(client.stats().warm_served, 1, "the next call took it");
    client.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn idle_warm_sessions_are_closed() {
    let (server, endpoint) = legacy_server().await;
    let client = client_with(
        ClientOptions::default()
            .era(EraPreference::Legacy)
            // Long enough for the refill to open and be kept on a loaded machine.
            .warm_idle(Duration::from_secs(3)),
    );
    for _ in 0..2 {
        call(&client, &endpoint, "echo", json!({"message": "x"})).await;
    }
    // The warm session opened after the second call and was kept...
    until_warm(&client, 1).await;
    // ...then closed once idle (the server's counters only grow).
    let seen = server
        .wait_for(
            |c| c.open_sessions() == 0 && c.sessions_opened == 3,
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(
        (seen.sessions_opened, seen.open_sessions()),
        (3, 0),
        "the idle warm session was closed by the client"
    );
    assert_eq!(client.stats().warm_contexts, 0);
    client.shutdown(Duration::from_secs(5)).await;
}

#[tokio::test]
async fn warm_stdio_processes_serve_one_call_each_and_are_reaped() {
    brain_mcp_testkit::build_binaries();
    let endpoint = Endpoint::Stdio(StdioEndpoint::new(
        brain_mcp_testkit::stdio_binary_path().to_string_lossy(),
        Vec::<String>::new(),
    ));
    let client = client_with(ClientOptions::default().era(EraPreference::Legacy));
    for i in 0..4 {
        if i >= 2 {
            until_warm(&client, 1).await;
        }
        let ran = call(
            &client,
            &endpoint,
            "echo",
            json!({"message": format!("p{i}")}),
        )
        .await;
        assert_eq!(ran.text(), format!("p{i}"));
    }
    assert_eq!(client.stats().warm_served, 2);
    client.shutdown(Duration::from_secs(10)).await;
    let stats = client.stats();
    assert_eq!(
        (
            stats.child_processes,
            stats.warm_contexts,
            stats.background_tasks
        ),
        (0, 0, 0),
        "{stats:?}"
    );
}

/// A context opened with one token never serves a call with another (a rotated key): the
/// call with the new token opens a session of its own, with the new token, and the old
/// token's warm session still serves the old token's next call.
#[tokio::test]
async fn a_warm_session_serves_only_calls_with_its_token() {
    use brain_mcp_transport::Secret;
    let (server, endpoint) = legacy_server().await;
    let Endpoint::Http(http) = &endpoint else {
        unreachable!("an HTTP endpoint")
    };
    let with_token = |token: &str| Endpoint::http(http.url.clone(), Some(Secret::new(token)));
    let (old, new) = (
        with_token("tok-old-0123456789"),
        with_token("tok-new-0123456789"),
    );
    let client = client_with(ClientOptions::default().era(EraPreference::Legacy));
    for _ in 0..2 {
        call(&client, &old, "echo", json!({"message": "old"})).await;
    }
    until_warm(&client, 1).await;
    let ran = call(&client, &new, "echo", json!({"message": "new"})).await;
    assert_eq!(ran.text(), "new");
    assert_eq!(
        client.stats().warm_served,
        0,
        "the old token's session did not serve the new token's call"
    );
    let ran = call(&client, &old, "echo", json!({"message": "old again"})).await;
    assert_eq!(ran.text(), "old again");
    assert_eq!(
        client.stats().warm_served,
        1,
        "it served the old token's call"
    );
    let bearers: Vec<String> = server
        .counters()
        .call_headers
        .iter()
        .map(|headers| headers["authorization"].clone())
        .collect();
    assert_eq!(
        bearers,
        [
            "Bearer tok-old-0123456789",
            "Bearer tok-old-0123456789",
            "Bearer tok-new-0123456789",
            "Bearer tok-old-0123456789",
        ]
    );
    client.shutdown(Duration::from_secs(5)).await;
}

/// A warm stdio process that died while it waited is discarded, not used: the call gets a
/// fresh process and succeeds.
#[tokio::test]
async fn a_warm_process_that_died_is_not_used() {
    brain_mcp_testkit::build_binaries();
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let endpoint = Endpoint::Stdio(StdioEndpoint::new(
        brain_mcp_testkit::stdio_binary_path().to_string_lossy(),
        vec!["--pid-log".to_owned(), pids.to_string_lossy().into_owned()],
    ));
    let client = client_with(ClientOptions::default().era(EraPreference::Legacy));
    for _ in 0..2 {
        call(&client, &endpoint, "echo", json!({"message": "x"})).await;
    }
    until_warm(&client, 1).await;
    let started = |pids: &std::path::Path| -> Vec<u32> {
        std::fs::read_to_string(pids)
            .unwrap_or_default()
            .lines()
            .map(|line| line.parse().unwrap())
            .collect()
    };
    let before = started(&pids);
    assert_eq!(
        before.len(),
        3,
        "two calls and one warm process: {before:?}"
    );
    let warm = before[2];
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &warm.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    // The client's reaper waits for it: then it is gone from /proc.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while std::path::Path::new(&format!("/proc/{warm}")).exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "{warm} was not reaped"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let ran = call(&client, &endpoint, "echo", json!({"message": "after"})).await;
    assert_eq!(ran.text(), "after", "{:?}", ran.outcome);
    assert_eq!(
        client.stats().warm_served,
        0,
        "the dead process served nothing"
    );
    let after = started(&pids);
    assert!(after.len() >= 4, "a fresh process took the call: {after:?}");
    client.shutdown(Duration::from_secs(10)).await;
    assert_eq!(client.stats().child_processes, 0);
}

/// A call that finds no warm process ready, but one being started (a server slow to
/// start), waits for that one instead of starting its own beside it: it is served from the
/// pool, and no extra process was started for it.
#[tokio::test]
async fn a_call_takes_the_process_being_started_rather_than_starting_its_own() {
    brain_mcp_testkit::build_binaries();
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let endpoint = Endpoint::Stdio(StdioEndpoint::new(
        brain_mcp_testkit::stdio_binary_path().to_string_lossy(),
        vec![
            "--pid-log".to_owned(),
            pids.to_string_lossy().into_owned(),
            "--start-delay-ms".to_owned(),
            "1000".to_owned(),
        ],
    ));
    let started = || -> usize {
        std::fs::read_to_string(&pids)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let client = client_with(ClientOptions::default().era(EraPreference::Legacy));
    // Two cold calls; after the second the pool starts one process, and learns how long
    // starting one takes.
    for _ in 0..2 {
        call(&client, &endpoint, "echo", json!({"message": "x"})).await;
    }
    until_warm(&client, 1).await;
    // This call takes it; after its result the pool starts the next one, which the call
    // after it finds still starting (it sleeps a second before it reads stdin).
    call(&client, &endpoint, "echo", json!({"message": "warm"})).await;
    let ran = call(&client, &endpoint, "echo", json!({"message": "waited"})).await;
    assert_eq!(ran.text(), "waited");
    let stats = client.stats();
    assert_eq!(
        (stats.warm_served, stats.warm_waited),
        (2, 1),
        "the last call was served by the process being started: {stats:?}"
    );
    // Two cold calls, the process the third took, the one the fourth waited for, perhaps
    // the one started after the fourth (if it began before the shutdown) and one the
    // fourth asked for if the one it waited for was late (busy cores); no cold one.
    let processes = started();
    assert!(
        (4..=5 + stats.warm_hedged).contains(&processes),
        "{processes} processes: {stats:?}"
    );
    client.shutdown(Duration::from_secs(10)).await;
    let stats = client.stats();
    assert_eq!(
        (stats.child_processes, stats.warm_contexts),
        (0, 0),
        "{stats:?}"
    );
}
