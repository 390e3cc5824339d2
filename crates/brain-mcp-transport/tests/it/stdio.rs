//! stdio servers: a process per call, its group killed after.

use std::time::Duration;

use brain_mcp_transport::{
    Delivery, Endpoint, Era as Served, EraPreference, ErrorKind, StdioEndpoint,
};
use serde_json::json;

use crate::support::{GRACE, call, client, request, run, stdio_server};

fn server(args: &[&str]) -> Endpoint {
    Endpoint::Stdio(StdioEndpoint::new(stdio_server(), args.iter().copied()))
}

fn alive(pid: i32) -> bool {
    nix_alive(pid)
}

fn nix_alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

#[tokio::test]
async fn echo_progress_and_errors_over_stdio_in_both_eras() {
    for (args, era) in [
        (vec!["--era", "legacy"], Served::Legacy),
        (vec!["--era", "modern"], Served::Modern),
        (vec!["--era", "both"], Served::Legacy),
    ] {
        let client = client(EraPreference::Auto);
        let endpoint = server(&args);
        let ran = call(&client, &endpoint, "echo", json!({"message": "hi"})).await;
        assert_eq!(ran.text(), "hi", "{args:?}");
        assert_eq!(ran.outcome.as_ref().unwrap().era, era, "{args:?}");
        let ran = call(
            &client,
            &endpoint,
            "progress",
            json!({"steps": 3, "delay_ms": 1}),
        )
        .await;
        assert_eq!(ran.progress.len(), 3, "{args:?}");
        let ran = call(&client, &endpoint, "error", json!({})).await;
        assert_eq!(ran.result()["isError"], true);
        client.shutdown(Duration::from_secs(10)).await;
        assert_eq!(
            client.stats().child_processes,
            0,
            "every child reaped ({args:?})"
        );
    }
}

#[tokio::test]
async fn a_missing_command_is_connect_not_sent() {
    let client = client(EraPreference::Auto);
    let endpoint = Endpoint::stdio("/nonexistent/brain-no-such-server", Vec::<String>::new());
    let ran = call(&client, &endpoint, "echo", json!({})).await;
    assert_eq!(ran.error().kind(), ErrorKind::Connect);
    assert_eq!(ran.error().delivery(), Delivery::NotSent);
    assert!(
        ran.error().detail().contains("not found"),
        "{}",
        ran.error()
    );
}

#[tokio::test]
async fn a_server_that_exits_before_its_handshake_says_how() {
    let client = client(EraPreference::Legacy);
    let ran = call(
        &client,
        &server(&["--exit-before-handshake"]),
        "echo",
        json!({}),
    )
    .await;
    assert_eq!(ran.error().kind(), ErrorKind::Connect);
    assert_eq!(ran.error().delivery(), Delivery::NotSent);
    assert!(
        ran.error().detail().contains("exit status: 3"),
        "{}",
        ran.error()
    );
    // It did not run, and the same command fails the same way on the next start.
    assert!(!ran.error().may_have_run() && !ran.error().retryable());
}

/// A server that says why it fails a few lines above its last: those lines are quoted,
/// arguments readable (`--db-path` and its value), the binding's secret env value not.
#[tokio::test]
async fn a_server_that_exits_before_its_handshake_is_quoted_readably() {
    let client = client(EraPreference::Legacy);
    let endpoint = Endpoint::Stdio(
        StdioEndpoint::new(
            stdio_server(),
            [
                "--stderr-line",
                "notes-server 1.2 starting",
                "--stderr-env",
                "NOTES_API_KEY",
                "--stderr-line",
                "error: cannot open the database at /srv/notes.sqlite (--db-path): permission denied",
                "--stderr-line",
                "    at open (db.js:12)",
                "--stderr-line",
                "exiting",
                "--exit-before-handshake",
            ],
        )
        .env("NOTES_API_KEY", "sk-notes-0123456789"),
    );
    let ran = call(&client, &endpoint, "echo", json!({})).await;
    let error = ran.error();
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::Connect, Delivery::NotSent)
    );
    assert!(
        error.detail().contains(
            "NOTES_API_KEY=<redacted> | error: cannot open the database at /srv/notes.sqlite \
             (--db-path): permission denied | at open (db.js:12) | exiting)"
        ),
        "{error}"
    );
    assert!(!error.detail().contains("sk-notes"), "{error}");
}

#[tokio::test]
async fn timeout_kills_the_process_group_including_grandchildren() {
    let dir = tempdir();
    let pidfile = dir.join("grandchild.pid");
    let client = client(EraPreference::Legacy);
    let endpoint = server(&[
        "--ignore-stdin-close",
        "--spawn-grandchild",
        pidfile.to_str().unwrap(),
    ]);
    let ran = run(
        &client,
        request(
            &endpoint,
            "hang",
            json!({}),
            "c1",
            // Long enough for the server to start its grandchild on a loaded machine.
            Duration::from_secs(3),
        ),
    )
    .await;
    assert_eq!(ran.error().kind(), ErrorKind::Timeout);
    assert!(
        ran.elapsed < Duration::from_secs(3) + GRACE,
        "{:?}",
        ran.elapsed
    );
    client.shutdown(Duration::from_secs(10)).await;
    assert_eq!(client.stats().child_processes, 0);
    let grandchild: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Killed with its group at the call's end; reaped by whoever adopted it, which a
    // loaded machine may take a while to do.
    for _ in 0..500 {
        if !alive(grandchild) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("grandchild {grandchild} outlived the call");
}

#[tokio::test]
async fn a_flood_of_stderr_does_not_block_the_call() {
    let client = client(EraPreference::Legacy);
    let ran = call(
        &client,
        &server(&["--flood-stderr"]),
        "echo",
        json!({"message": "through"}),
    )
    .await;
    assert_eq!(ran.text(), "through");
}

#[tokio::test]
async fn output_over_budget_over_stdio() {
    let client = client(EraPreference::Legacy);
    let ran = run(
        &client,
        request(
            &server(&[]),
            "big",
            json!({"bytes": 2_000_000}),
            "c1",
            Duration::from_secs(10),
        )
        .max_output_bytes(50_000),
    )
    .await;
    assert_eq!(ran.error().kind(), ErrorKind::OutputTooLarge);
}

/// A server whose process ends while it has the call: `server_exited`, `unknown` (the
/// call was written), with how it ended; another try may succeed (a new process).
#[tokio::test]
async fn a_server_that_dies_mid_call_says_how_it_ended() {
    let client = client(EraPreference::Legacy);
    let cases = [
        (&["--exit-mid-call"][..], "exit status: 1"),
        (
            &["--crash-mid-call", "139"][..],
            "exit status: 139, as a shell reports a command killed by signal 11 (SIGSEGV): \
             it crashed",
        ),
        (
            &["--crash-mid-call", "segv"][..],
            "killed by signal 11 (SIGSEGV): it crashed",
        ),
    ];
    for (flags, how) in cases {
        let ran = call(&client, &server(flags), "echo", json!({"message": "x"})).await;
        let error = ran.error();
        assert_eq!(
            (error.kind(), error.delivery()),
            (ErrorKind::ServerExited, Delivery::Unknown),
            "{flags:?}: {error}"
        );
        assert!(
            error
                .detail()
                .starts_with("the server's process ended before it answered ("),
            "{error}"
        );
        assert!(error.detail().contains(how), "{flags:?}: {error}");
        assert!(error.may_have_run() && error.retryable(), "{flags:?}");
    }
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("brain-transport-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn a_line_over_16_mib_is_delivered_within_its_budget_and_refused_past_it() {
    let client = client(EraPreference::Legacy);
    let bytes = 20 * 1024 * 1024;
    let ran = run(
        &client,
        request(
            &server(&[]),
            "big",
            json!({"bytes": bytes}),
            "c1",
            Duration::from_secs(30),
        )
        .max_output_bytes(64 * 1024 * 1024),
    )
    .await;
    assert_eq!(
        ran.text().len(),
        bytes,
        "rmcp's 16 MiB line bound does not drop it"
    );
    let ran = run(
        &client,
        request(
            &server(&[]),
            "big",
            json!({"bytes": bytes}),
            "c2",
            Duration::from_secs(30),
        )
        .max_output_bytes(16 * 1024 * 1024),
    )
    .await;
    assert_eq!(
        ran.error().kind(),
        ErrorKind::OutputTooLarge,
        "not a timeout"
    );
}

#[tokio::test]
async fn a_dropped_call_still_ends_its_process() {
    for era in ["legacy", "modern"] {
        let client = client(EraPreference::Auto);
        let endpoint = server(&["--era", era]);
        let call = client.call(request(
            &endpoint,
            "hang",
            json!({}),
            "c1",
            Duration::from_secs(30),
        ));
        // Dropped once its process runs, whatever the machine's speed.
        let started = async {
            while client.stats().child_processes == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        };
        tokio::select! {
            _ = call => panic!("the hang tool never answers ({era})"),
            () = started => {}
            () = tokio::time::sleep(Duration::from_secs(30)) => panic!("no process started ({era})"),
        }
        client.shutdown(Duration::from_secs(10)).await;
        assert_eq!(
            client.stats().child_processes,
            0,
            "the child reaped ({era})"
        );
        assert_eq!(client.stats().background_tasks, 0, "{era}");
    }
}

#[tokio::test]
async fn over_stdio_the_probe_is_initialize_which_servers_of_both_eras_answer() {
    // A 2025-era server that would hold server/discover open is never sent it: the
    // automatic era starts a process with initialize; a 2026-only one refuses that at
    // once, and is started again in its era.
    for (args, era) in [
        (vec!["--era", "legacy", "--hold-discover"], Served::Legacy),
        (vec!["--era", "modern"], Served::Modern),
    ] {
        let client = client(EraPreference::Auto);
        let ran = run(
            &client,
            request(
                &server(&args),
                "echo",
                json!({"message": "hi"}),
                "c1",
                Duration::from_secs(3),
            ),
        )
        .await;
        assert_eq!(ran.text(), "hi", "{args:?}");
        assert_eq!(ran.outcome.as_ref().unwrap().era, era, "{args:?}");
        client.shutdown(Duration::from_secs(10)).await;
    }
}

#[tokio::test]
async fn over_stdio_a_pinned_era_the_server_does_not_speak_names_the_field() {
    for (args, pinned) in [
        (vec!["--era", "modern"], Served::Legacy),
        (vec!["--era", "legacy"], Served::Modern),
    ] {
        let client = client(EraPreference::Auto);
        let ran = run(
            &client,
            request(
                &server(&args),
                "echo",
                json!({}),
                "c1",
                Duration::from_secs(5),
            )
            .era(pinned),
        )
        .await;
        let error = ran.error();
        assert_eq!(error.delivery(), Delivery::NotSent, "{args:?}: {error}");
        assert!(
            error.detail().contains("the binding's \"era\" pins"),
            "{args:?}: {}",
            error.detail()
        );
        client.shutdown(Duration::from_secs(10)).await;
    }
}
