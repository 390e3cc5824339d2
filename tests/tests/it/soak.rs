//! The soak: many calls through one `ToolHost`, a few of them hitting faults and some
//! cancelled mid-call; every call ends with exactly one result of the expected kind,
//! nothing leaks, and memory does not grow. `BRAIN_SOAK_CALLS` sets the number of calls
//! (4,000 here; `cargo xtask soak` runs 10,000 in release). A few calls carry a tenant's
//! OAuth grant that a second host (its own client, its own handle on the same file store,
//! as another process would have) uses too, with access tokens living a second and refresh
//! tokens rotating: no call fails for authorization, no refresh token is used twice. A few
//! more carry a second grant whose authorization server answers a refresh after 1.5 s,
//! past the calls' 1 s timeout, some of them cancelled mid-refresh as a signal would: the
//! refreshes run on and are saved, and no refresh token is lost or used twice.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::{Duration, Instant},
};

use brain_mcp_testkit::HttpFault;
use brain_tools::{
    CallScope, ClientOptions, CredentialStore, EraPreference, Expected, FileCredentialStore,
    GrantKey, McpClient, Secret, StoredGrant, ToolHost,
};
use brain_tools_config::HostConfig;
use brain_tools_events::{ContentBlock, Delivery, ToolEvent};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::{
    leaks::{assert_fds_settle, children, rss_kib, settle, settled_fds},
    matrix::{Servers, build_testkit},
    scripted::Quiet,
};

const CONCURRENCY: usize = 64;
/// The token the echoing server sends back: it must reach no result.
const SOAK_TOKEN: &str = "sk-soak-secret-4d9e1b70";

/// A tiny deterministic generator (xorshift), so a failing run can be replayed.
struct Dice(AtomicU64);

impl Dice {
    fn roll(&self, sides: u64) -> u64 {
        let mut x = self.0.load(Ordering::Relaxed);
        loop {
            let mut next = x;
            next ^= next << 13;
            next ^= next >> 7;
            next ^= next << 17;
            match self
                .0
                .compare_exchange(x, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return next % sides,
                Err(seen) => x = seen,
            }
        }
    }
}

/// What a call of each binding must end with.
fn expected(tool: &str) -> &'static str {
    match tool {
        "echo_legacy" | "echo_modern" | "progress_legacy" | "progress_modern" | "echo_stdio" => {
            "ok"
        }
        "unauthorized" => "http_status",
        "garbled" => "protocol",
        "dropped" => "protocol",
        "failing" => "tool_error",
        "oversized" => "output_too_large",
        "refused" => "connect",
        "cancelled_legacy" | "cancelled_modern" => "cancelled",
        // Hostile servers: one echoes the token back (the result carries it hidden), one
        // answers with a notification, one with a result that is not one, one with only a
        // 202, one with an SSE event id that cannot be sent back before the stream ends,
        // one with more content blocks than a result may hold.
        "echoed" => "ok",
        "not_an_answer" | "not_a_result" | "accepted_only" | "bad_event_id" => "protocol",
        "many_blocks" => "output_too_large",
        // And: one refuses the call with a JSON-RPC error that proves it did not run (so
        // not_sent), one refuses it with a 403 whose reason echoes the token (quoted,
        // hidden), one asks for an SSE retry past every clock before its result, and a
        // stdio server exits before its handshake after saying why on stderr.
        "refused_rpc" => "protocol",
        "reason_403" => "http_status",
        "retry_forever" => "ok",
        "stderr_exit" => "connect",
        // Tools that run as tasks (2026-07-28): one done at its second poll, one the
        // server runs as a task because the call allows it, one whose task ends with
        // isError, one whose first poll fails on the wire; and one cancelled mid-task.
        "task" | "maybe_task" | "task_flaky" => "ok",
        "task_failing" => "tool_error",
        "cancelled_task" => "cancelled",
        // A grant two hosts share (see the module's docs).
        "shared_grant" => "ok",
        _ => "?",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak() {
    let _serial = crate::leaks::serial().await;
    build_testkit();
    let total: usize = std::env::var("BRAIN_SOAK_CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(4000);
    // The servers run as child processes: the memory measured here is the client's.
    let servers = Servers::out_of_process_with(&["--no-call-details"]);
    let (legacy_url, modern_url) = (servers.legacy_url.clone(), servers.modern_url.clone());
    let fault = |segment: &str| {
        format!(
            "{}/fault/{segment}/mcp",
            legacy_url.trim_end_matches("/mcp")
        )
    };
    let refused_port = brain_mcp_testkit::RefusedPort::new().unwrap();
    let refused = refused_port.url();
    let stdio = brain_mcp_testkit::stdio_binary_path();
    // In this process, on raw listeners that keep nothing per request: they do not grow
    // with the calls (wiremock would).
    let json_answer = |value: Value| (200, "application/json", value.to_string());
    let echoed = Quiet::start(Arc::new(move |request| {
        json_answer(json!({"jsonrpc": "2.0", "id": request["id"],
            "result": {"content": [{"type": "text", "text": format!("key {SOAK_TOKEN}")}]}}))
    }))
    .await;
    let not_an_answer = Quiet::start(Arc::new(move |_| {
        json_answer(json!({"jsonrpc": "2.0",
            "method": "notifications/message", "params": {"level": "info", "data": "x"}}))
    }))
    .await;
    let not_a_result = Quiet::start(Arc::new(move |request| {
        json_answer(json!({"jsonrpc": "2.0", "id": request["id"], "result": "x"}))
    }))
    .await;
    let accepted_only = Quiet::start(Arc::new(|_| (202, "text/plain", String::new()))).await;
    let bad_event_id = Quiet::start(Arc::new(|_| {
        (
            200,
            "text/event-stream",
            "id: ev\u{1}\u{7f}\u{1b}[31m\nretry: 10\ndata: \n\n".to_owned(),
        )
    }))
    .await;
    let many_blocks = Quiet::start(Arc::new(move |request| {
        let blocks: Vec<Value> = (0..2_000)
            .map(|_| json!({"type": "text", "text": "x"}))
            .collect();
        json_answer(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"content": blocks}}))
    }))
    .await;
    let refused_rpc = Quiet::start(Arc::new(move |request| {
        json_answer(json!({"jsonrpc": "2.0", "id": request["id"],
            "error": {"code": -32602, "message": "unknown tool: echo"}}))
    }))
    .await;
    let reason_403 = Quiet::start(Arc::new(|_| {
        (403, "text/plain", format!("denied for {SOAK_TOKEN}"))
    }))
    .await;
    let retry_forever = Quiet::start(Arc::new(|request| {
        let answer = json!({"jsonrpc": "2.0", "id": request["id"],
            "result": {"content": [{"type": "text", "text": "ok"}]}});
        (
            200,
            "text/event-stream",
            format!("id: 1\nretry: 99999999999999999999999999\ndata: \n\ndata: {answer}\n\n"),
        )
    }))
    .await;
    // The shared grant: its servers (tokens living a second, refresh tokens rotating,
    // a reused one revoking the grant) and the store both hosts hold it in.
    let grant = brain_mcp_testkit::oauth::Servers::start().await;
    grant.auth.state.rotation.store(true, Ordering::SeqCst);
    *brain_mcp_testkit::oauth::lock(&grant.auth.state.expires_in) = 1;
    let store_dir = tempfile::tempdir().unwrap();
    let grant_key = GrantKey::new("local", grant.url(), grant.issuer());
    {
        let scopes = vec!["files:read".to_owned()];
        let refresh = "rt-soak-first-0123456789";
        let mut stored = StoredGrant::new("pre-registered-client");
        stored.access_token = Some(Secret::new("at-soak-expired-0123456789"));
        stored.refresh_token = Some(Secret::new(refresh));
        let now = std::time::SystemTime::now();
        stored.set_lifetime(
            now - Duration::from_secs(120),
            Some(Duration::from_secs(60)),
        );
        stored.scopes = scopes.clone();
        grant.auth.state.knows_refresh_token(refresh, scopes);
        let _ = FileCredentialStore::new(store_dir.path())
            .save(&grant_key, &stored, Expected::Absent)
            .await
            .unwrap();
    }
    // The grant whose refreshes calls cut short: answered 1.5 s after asked (rotated at
    // once), the calls' timeout 1 s.
    let cut = brain_mcp_testkit::oauth::Servers::start().await;
    cut.auth.state.rotation.store(true, Ordering::SeqCst);
    *brain_mcp_testkit::oauth::lock(&cut.auth.state.expires_in) = 1;
    *brain_mcp_testkit::oauth::lock(&cut.auth.state.token_delay) = Duration::from_millis(1500);
    let cut_key = GrantKey::new("local", cut.url(), cut.issuer());
    {
        let scopes = vec!["files:read".to_owned()];
        let refresh = "rt-soak-cut-0123456789";
        let mut stored = StoredGrant::new("pre-registered-client");
        stored.access_token = Some(Secret::new("at-soak-cut-expired-0123456789"));
        stored.refresh_token = Some(Secret::new(refresh));
        stored.set_lifetime(
            std::time::SystemTime::now() - Duration::from_secs(120),
            Some(Duration::from_secs(60)),
        );
        stored.scopes = scopes.clone();
        cut.auth.state.knows_refresh_token(refresh, scopes);
        let _ = FileCredentialStore::new(store_dir.path())
            .save(&cut_key, &stored, Expected::Absent)
            .await
            .unwrap();
    }
    let binding = |name: &str, server: Value, tool: &str| {
        let mut binding = json!({"name": name, "input_schema": {"type": "object"}, "mcp_tool": tool,
                                 "tenants": ["local"], "timeout_seconds": 10});
        for (key, value) in server.as_object().unwrap() {
            binding[key] = value.clone();
        }
        binding
    };
    let url = |url: String| json!({"url": url});
    let tools = vec![
        binding("echo_legacy", url(legacy_url.clone()), "echo"),
        binding("echo_modern", url(modern_url.clone()), "echo"),
        binding("progress_legacy", url(legacy_url.clone()), "progress"),
        binding("progress_modern", url(modern_url.clone()), "progress"),
        binding(
            "echo_stdio",
            json!({"command": {"program": stdio, "args": ["--era", "legacy"]}}),
            "echo",
        ),
        binding(
            "unauthorized",
            url(fault(HttpFault::Status401.path_segment())),
            "echo",
        ),
        binding(
            "garbled",
            url(fault(HttpFault::MalformedJson.path_segment())),
            "echo",
        ),
        binding("dropped", url(legacy_url.clone()), "drop_mid_stream"),
        binding("failing", url(modern_url.clone()), "error"),
        {
            let mut b = binding("oversized", url(modern_url.clone()), "big");
            b["max_output_bytes"] = json!(10_000);
            b
        },
        binding("refused", url(refused), "echo"),
        binding(
            "echoed",
            json!({"url": echoed.url(), "token_env": "SOAK_TOKEN"}),
            "echo",
        ),
        binding("not_an_answer", url(not_an_answer.url()), "echo"),
        binding("not_a_result", url(not_a_result.url()), "echo"),
        binding("accepted_only", url(accepted_only.url()), "echo"),
        binding("bad_event_id", url(bad_event_id.url()), "echo"),
        binding("many_blocks", url(many_blocks.url()), "echo"),
        binding("refused_rpc", url(refused_rpc.url()), "echo"),
        binding(
            "reason_403",
            json!({"url": reason_403.url(), "token_env": "SOAK_TOKEN"}),
            "echo",
        ),
        binding("retry_forever", url(retry_forever.url()), "echo"),
        binding(
            "stderr_exit",
            json!({"command": {"program": stdio, "args": [
                "--stderr-line", "error: cannot open /srv/notes.sqlite (--db-path)",
                "--stderr-line", "exiting", "--exit-before-handshake"]}}),
            "echo",
        ),
        binding("cancelled_legacy", url(legacy_url.clone()), "sleep"),
        binding("cancelled_modern", url(modern_url.clone()), "sleep"),
        binding("task", url(modern_url.clone()), "task"),
        binding("maybe_task", url(modern_url.clone()), "maybe_task"),
        binding("task_flaky", url(modern_url.clone()), "task"),
        binding("task_failing", url(modern_url.clone()), "task"),
        binding("cancelled_task", url(modern_url.clone()), "task"),
        binding(
            "shared_grant",
            json!({"url": grant.url(), "auth": {"type": "oauth", "issuer": grant.issuer()}}),
            "echo",
        ),
        {
            let mut b = binding(
                "cut_grant",
                json!({"url": cut.url(), "auth": {"type": "oauth", "issuer": cut.issuer()}}),
                "echo",
            );
            b["timeout_seconds"] = json!(1);
            b
        },
    ];
    let loaded = HostConfig::from_json_value_with_env(&json!({"tools": tools}), |_| true).unwrap();
    // Two hosts, as two processes would be: each its client (tokens cached apart) and its
    // handle on the one store.
    let host_on = |client: &McpClient| {
        ToolHost::builder(loaded.config.clone())
            .client(client.clone())
            .token_source(|name| (name == "SOAK_TOKEN").then(|| SOAK_TOKEN.to_owned()))
            .build()
            .unwrap()
    };
    let options = || {
        let store: Arc<dyn CredentialStore> = Arc::new(FileCredentialStore::new(store_dir.path()));
        ClientOptions::default()
            .era(EraPreference::Auto)
            .credential_store(store)
    };
    let client = McpClient::new(options()).expect("the client builds");
    let host = host_on(&client);
    let other_client = McpClient::new(options()).expect("the client builds");
    let other_host = host_on(&other_client);

    let fds_before = settled_fds().await;
    let children_before = children();
    let next = Arc::new(AtomicUsize::new(0));
    let dice = Arc::new(Dice(AtomicU64::new(0x9e37_79b9_7f4a_7c15)));
    let counts = Arc::new(Mutex::new(
        std::collections::BTreeMap::<&'static str, usize>::new(),
    ));
    let warm_rss = Arc::new(AtomicU64::new(0));
    // Long enough for pools and allocator arenas to reach their working size. The
    // connection pools keep, per server, as many idle connections as calls once ran at
    // once (each with hyper's buffers, and so does the server side of the in-process
    // servers), so the process grows until every server has seen its peak: measured on
    // this soak (debug, 8,000 calls, 64 at a time), the resident memory rose 40% in the
    // first 500 calls, 14% in the next 1,500, 2.4% from 2,000 to 4,000; heaptrack found
    // the live heap 1 MB larger after 9,000 calls than after 3,000.
    let warm_up = (total / 5).max(2000).min(total / 2);
    let started = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..CONCURRENCY {
        let (host, other_host, next, dice, counts, warm_rss) = (
            host.clone(),
            other_host.clone(),
            next.clone(),
            dice.clone(),
            counts.clone(),
            warm_rss.clone(),
        );
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                if i == warm_up {
                    warm_rss.store(rss_kib(), Ordering::Relaxed);
                }
                let roll = dice.roll(100);
                let (tool, arguments, cancel_after) = match roll {
                    0..5 => {
                        const FAULTS: [&str; 16] = [
                            "unauthorized",
                            "garbled",
                            "dropped",
                            "failing",
                            "oversized",
                            "refused",
                            "echoed",
                            "not_an_answer",
                            "not_a_result",
                            "accepted_only",
                            "bad_event_id",
                            "many_blocks",
                            "refused_rpc",
                            "reason_403",
                            "retry_forever",
                            "stderr_exit",
                        ];
                        let tool = FAULTS[dice.roll(FAULTS.len() as u64) as usize];
                        let arguments = match tool {
                            "dropped" => json!({"after_progress": 1}),
                            "oversized" => json!({"bytes": 50_000}),
                            _ => json!({}),
                        };
                        (tool, arguments, None)
                    }
                    5..8 => {
                        let (tool, arguments) = match roll {
                            5 => ("cancelled_legacy", json!({"ms": 5_000})),
                            6 => ("cancelled_modern", json!({"ms": 5_000})),
                            // Its first poll would come after the cancel: the polls
                            // counted are the other tasks'.
                            _ => (
                                "cancelled_task",
                                json!({"outcome": "never", "poll_ms": 60_000}),
                            ),
                        };
                        // A task is cancelled later: most calls have their handle by then.
                        let after = if roll == 7 { 200 } else { 10 };
                        (
                            tool,
                            arguments,
                            Some(Duration::from_millis(after + dice.roll(90))),
                        )
                    }
                    8 => ("echo_stdio", json!({"message": format!("m{i}")}), None),
                    // Half a percent: the in-process OAuth servers (wiremock) keep every
                    // request, which the memory check would count as the client's.
                    13 if i % 2 == 0 => ("shared_grant", json!({}), None),
                    // And the other half the grant whose refreshes are cut short: by the
                    // call's timeout, or (one in three) by a cancel, as a signal does.
                    13 => {
                        let cancel = (i % 3 == 0).then(|| Duration::from_millis(300));
                        ("cut_grant", json!({}), cancel)
                    }
                    9..13 => {
                        let (tool, arguments) = match roll {
                            9 => ("task", json!({"polls": 2})),
                            10 => ("maybe_task", json!({})),
                            11 => ("task_flaky", json!({"flaky": 1})),
                            _ => ("task_failing", json!({"outcome": "tool_error"})),
                        };
                        (tool, arguments, None)
                    }
                    _ => {
                        let tool = [
                            "echo_legacy",
                            "echo_modern",
                            "progress_legacy",
                            "progress_modern",
                        ][i % 4];
                        let arguments = if tool.starts_with("echo") {
                            json!({"message": format!("m{i}")})
                        } else {
                            json!({"steps": 2, "delay_ms": 1})
                        };
                        (tool, arguments, None)
                    }
                };
                let cancel = CancellationToken::new();
                if let Some(after) = cancel_after {
                    let cancel = cancel.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(after).await;
                        cancel.cancel();
                    });
                }
                let sink = Arc::new(Mutex::new(Vec::new()));
                let scope = CallScope::new("local", "soak", format!("call-{i}"));
                // The shared grant's calls alternate between the two hosts.
                let on = if tool == "shared_grant" && i % 4 == 0 {
                    &other_host
                } else {
                    &host
                };
                let result = on
                    .call(scope.clone(), tool, arguments)
                    .cancel(cancel)
                    .sink(sink.clone())
                    .await;
                let kind = result
                    .error
                    .as_ref()
                    .map_or("ok", |error| error.kind.as_str());
                if tool == "cut_grant" {
                    // A fresh token, a refresh cut by the deadline, or by the cancel.
                    assert!(
                        matches!(kind, "ok" | "timeout" | "cancelled"),
                        "call {i} ({tool}): {:?}",
                        result.error
                    );
                } else {
                    assert_eq!(
                        kind,
                        expected(tool),
                        "call {i} ({tool}): {:?}",
                        result.error
                    );
                }
                let events = std::mem::take(&mut *sink.lock().unwrap());
                assert_eq!(
                    events
                        .iter()
                        .filter(|e| matches!(e, ToolEvent::Result(_)))
                        .count(),
                    1,
                    "call {i}"
                );
                assert_eq!(
                    events.last(),
                    Some(&ToolEvent::Result(result.clone())),
                    "call {i}"
                );
                if tool == "shared_grant" {
                    // The OAuth resource server answers every call so, once authorized.
                    assert_eq!(result.content, vec![ContentBlock::text("ok")], "call {i}");
                }
                if tool.starts_with("echo_") {
                    assert_eq!(
                        result.content,
                        vec![ContentBlock::text(format!("m{i}"))],
                        "call {i}"
                    );
                }
                if matches!(tool, "task" | "maybe_task" | "task_flaky") {
                    assert_eq!(result.content, vec![ContentBlock::text("done")], "call {i}");
                }
                if tool == "echoed" {
                    assert_eq!(
                        result.content,
                        vec![ContentBlock::text("key <redacted>")],
                        "call {i}"
                    );
                }
                let error = result.error.as_ref();
                let message = error.map_or("", |error| error.message.as_str());
                match tool {
                    "refused_rpc" => assert_eq!(
                        error.map(|error| error.delivery),
                        Some(Delivery::NotSent),
                        "call {i}: {message}"
                    ),
                    "reason_403" => assert!(
                        message.contains("saying \"denied for <redacted>\""),
                        "call {i}: {message}"
                    ),
                    "stderr_exit" => assert!(
                        message.contains("(--db-path) | exiting"),
                        "call {i}: {message}"
                    ),
                    _ => {}
                }
                *counts
                    .lock()
                    .unwrap()
                    .entry(match tool {
                        "echoed" | "not_an_answer" | "not_a_result" | "accepted_only"
                        | "bad_event_id" | "many_blocks" | "refused_rpc" | "reason_403"
                        | "retry_forever" | "stderr_exit" | "task" | "maybe_task"
                        | "task_flaky" | "task_failing" | "cancelled_task" | "shared_grant" => tool,
                        "cut_grant" => match kind {
                            "ok" => "cut_grant ok",
                            "timeout" => "cut_grant timeout",
                            _ => "cut_grant cancelled",
                        },
                        _ if kind == "ok" => "ok",
                        _ => expected(tool),
                    })
                    .or_default() += 1;
            }
        }));
    }
    for worker in workers {
        worker.await.unwrap();
    }
    let elapsed = started.elapsed();
    // Shutting down waits for the refreshes still running: none is lost.
    let unsaved = [
        other_client.shutdown(Duration::from_secs(30)).await,
        client.shutdown(Duration::from_secs(30)).await,
    ];
    assert!(
        unsaved
            .iter()
            .all(|shutdown| shutdown.unsaved_grants.is_empty()),
        "{unsaved:?}"
    );
    // The grant whose refreshes were cut: no refresh token came back (none was lost when a
    // call ended mid-refresh), and a usable grant is stored.
    assert_eq!(
        cut.auth.state.reuses.load(Ordering::SeqCst),
        0,
        "no cut refresh lost its rotated token"
    );
    let cut_refreshes = cut.auth.state.token_requests("refresh_token").len();
    eprintln!("soak: the cut grant had {cut_refreshes} refreshes, each saved");
    assert!(cut_refreshes > 0, "the cut grant was refreshed");
    let cut_stored = FileCredentialStore::new(store_dir.path())
        .load(&cut_key)
        .await
        .unwrap()
        .expect("the cut grant is still stored");
    assert!(
        cut_stored.grant.refresh_token.is_some() && !cut_stored.grant.is_revoked(),
        "the cut grant can still be refreshed"
    );
    // The shared grant: no refresh token came back to the authorization server (each
    // refresh ran once, under the store's lease, the other host reading what it saved: a
    // second refresh of one token would have been a reuse, which revokes the grant), no
    // more refreshes than the tokens' lifetimes allow (a token is renewed once half its
    // life has passed, so at most two a second), and a usable grant left in the store.
    let auth = &grant.auth.state;
    let refreshes = auth.token_requests("refresh_token").len();
    assert_eq!(
        auth.reuses.load(Ordering::SeqCst),
        0,
        "no refresh token reused"
    );
    assert!(
        refreshes as f64 <= 2.0 * elapsed.as_secs_f64().ceil() + 1.0,
        "{refreshes} refreshes in {elapsed:?} of one-second tokens"
    );
    let stored = FileCredentialStore::new(store_dir.path())
        .load(&grant_key)
        .await
        .unwrap()
        .expect("the grant is still stored");
    assert!(stored.grant.is_usable(), "the stored grant is usable");
    let stats = client.stats();
    assert!(stats.warm_served > 0, "calls ran on warm contexts too");
    assert_eq!(
        (
            stats.calls_in_flight,
            stats.background_tasks,
            stats.child_processes
        ),
        (0, 0, 0),
        "{stats:?}"
    );
    let children_after = settle(children, children_before, Duration::from_secs(5)).await;
    assert_eq!(children_after, children_before, "no child process left");
    let counted = servers.stop();
    let open_sessions: u64 = counted.iter().map(|c| c.open_sessions()).sum();
    assert_eq!(counted.len(), 2, "both servers reported");
    assert_eq!(open_sessions, 0, "every session closed");
    // Requests per task call, on the wire: each task that ran to its end took exactly the
    // polls its script asked for (2, 1, 1 + one that failed on the wire, 1: no busy
    // polling), and every task a call gave up got one tasks/cancel (a call cancelled
    // before its handle came has no task to cancel; its server's TTL ends it).
    let modern = &counted[1];
    let ran = |tool: &str| counts.lock().unwrap().get(tool).copied().unwrap_or(0) as u64;
    let task_calls = ran("task") + ran("maybe_task") + ran("task_flaky") + ran("task_failing");
    let polls = modern.method("tasks/get");
    let cancels = modern.method("tasks/cancel");
    assert_eq!(
        polls,
        2 * ran("task") + ran("maybe_task") + 2 * ran("task_flaky") + ran("task_failing"),
        "polls per task call"
    );
    assert!(cancels <= ran("cancelled_task"), "{cancels} tasks/cancel");
    let end_rss = rss_kib();
    let warm = warm_rss.load(Ordering::Relaxed);
    let counts = counts.lock().unwrap().clone();
    let faults: usize = counts
        .iter()
        .filter(|(k, _)| {
            !matches!(
                **k,
                "ok" | "cancelled"
                    | "cancelled_task"
                    | "task"
                    | "maybe_task"
                    | "shared_grant"
                    | "cut_grant"
            )
        })
        .map(|(_, n)| n)
        .sum();
    eprintln!(
        "soak: {total} calls in {:.1} s ({:.0}/s), {CONCURRENCY} at a time; outcomes {counts:?}; \
         faults {faults}, cancels {}; warm contexts served {} calls; rss after warm-up {warm} KiB, \
         at the end {end_rss} KiB; tasks: {task_calls} calls to their end with {} polls, \
         {cancels} given up with tasks/cancel; shared grant: {} calls on two hosts, \
         {refreshes} refreshes, 0 reuses; leaks: calls {}, tasks {}, children {}, sessions {}",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64(),
        counts.get("cancelled").copied().unwrap_or(0)
            + counts.get("cancelled_task").copied().unwrap_or(0),
        stats.warm_served,
        polls,
        counts.get("shared_grant").copied().unwrap_or(0),
        stats.calls_in_flight,
        stats.background_tasks,
        children_after - children_before,
        open_sessions,
    );
    drop((host, other_host));
    drop((client, other_client));
    assert_fds_settle(&fds_before, Duration::from_secs(5)).await;
    assert!(
        end_rss <= warm + warm / 10,
        "memory grew: {warm} KiB after warm-up, {end_rss} KiB at the end"
    );
}
