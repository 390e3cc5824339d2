//! A JSON-RPC error to `tools/call` is the server's answer. The codes that reject the
//! request before it is processed prove the tool did not run (`not_sent`); any other code
//! may come from a tool that ran (`delivered`). Neither is sent again, not even from a warm
//! context to a fresh one.

use brain_mcp_testkit::Era;
use brain_mcp_transport::{
    ClientOptions, Delivery, Endpoint, EraPreference, ErrorKind, StdioEndpoint,
};
use serde_json::json;

use crate::{
    support::{call, client_with, started, stdio_server},
    warm::until_warm,
};

/// (code, delivery): the refusals, then codes a tool that ran may answer with.
const CODES: [(i64, Delivery); 10] = [
    (-32700, Delivery::NotSent),
    (-32600, Delivery::NotSent),
    (-32601, Delivery::NotSent),
    (-32602, Delivery::NotSent),
    (-32020, Delivery::NotSent),
    (-32021, Delivery::NotSent),
    (-32022, Delivery::NotSent),
    (-32042, Delivery::NotSent),
    (-32603, Delivery::Delivered),
    (-32000, Delivery::Delivered),
];

#[tokio::test]
async fn json_rpc_errors_say_whether_the_tool_ran_in_every_era_and_transport() {
    for era in [Era::Legacy, Era::Modern] {
        let (server, endpoint) = started(era).await;
        let preference = match era {
            Era::Legacy => EraPreference::Legacy,
            _ => EraPreference::Modern,
        };
        let client = client_with(ClientOptions::default().era(preference));
        for (code, delivery) in CODES {
            // Legacy calls take warm sessions (calls that reached the server, close
            // together, open the next one).
            if era == Era::Legacy {
                for _ in 0..2 {
                    call(&client, &endpoint, "echo", json!({"message": "hi"})).await;
                }
                until_warm(&client, 1).await;
            }
            let before = server.counters().method("tools/call");
            let ran = call(
                &client,
                &endpoint,
                "rpc_error",
                json!({"code": code, "message": "no such thing"}),
            )
            .await;
            let error = ran.error();
            assert_eq!(
                (error.kind(), error.delivery()),
                (ErrorKind::Protocol, delivery),
                "{era:?} {code}: {error}"
            );
            let phrase = match delivery {
                Delivery::NotSent => {
                    format!("refused the call before running it with JSON-RPC error {code} (")
                }
                _ => format!("answered with JSON-RPC error {code}: no such thing"),
            };
            assert!(error.detail().contains(&phrase), "{error}");
            assert_eq!(
                server.counters().method("tools/call") - before,
                1,
                "{era:?} {code}: the call went once, and was not moved to another context"
            );
        }
        if era == Era::Legacy {
            assert!(
                client.stats().warm_served > 0,
                "warm sessions served refused calls"
            );
        }
    }
    // An unknown tool, over stdio, from a warm process: refused, and not sent again to a
    // fresh process (each process logs its pid).
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let endpoint = Endpoint::Stdio(StdioEndpoint::new(
        stdio_server(),
        ["--era", "legacy", "--pid-log", &pids.to_string_lossy()],
    ));
    let client = client_with(ClientOptions::default());
    for _ in 0..2 {
        call(&client, &endpoint, "echo", json!({"message": "hi"})).await;
    }
    until_warm(&client, 1).await;
    let processes = || std::fs::read_to_string(&pids).unwrap().lines().count();
    let before = processes();
    let ran = call(&client, &endpoint, "no_such_tool", json!({})).await;
    let error = ran.error();
    assert_eq!(
        (error.kind(), error.delivery()),
        (ErrorKind::Protocol, Delivery::NotSent),
        "{error}"
    );
    assert!(
        error.detail().contains("-32602 (invalid params)"),
        "{error}"
    );
    assert_eq!(client.stats().warm_served, 1);
    assert_eq!(
        processes(),
        before,
        "the refused call took the warm process and no fresh one"
    );
}
