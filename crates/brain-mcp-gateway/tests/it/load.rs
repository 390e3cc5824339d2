//! Abuse: a client that sends its headers a byte at a time is cut off, and the other
//! callers go through meanwhile (10,000 calls at once: `mcp-tools`' serve tests, which
//! measure the gateway process's memory).

use std::time::Duration;

use brain_mcp_testkit::Era;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{call, client, endpoint, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_sends_its_headers_a_byte_at_a_time_is_cut_off_and_others_go_on() {
    let running = start(Era::Both, json!({"limits": {"header_timeout_seconds": 1}})).await;
    let address = running
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    let mut slow = tokio::net::TcpStream::connect(&address).await.unwrap();
    slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    // Meanwhile a call goes through.
    let client = client(brain_tools::EraPreference::Auto);
    let done = call(
        &client,
        endpoint(&running, &running.key("acme")),
        "echo",
        json!({"message": "not held up"}),
    )
    .await
    .unwrap();
    assert_eq!(done.result["content"][0]["text"], "not held up");
    // The slow client's connection is closed by the gateway (within its header timeout);
    // it never got a response to a request it never finished.
    let mut rest = Vec::new();
    // Closed, with or without a reset: either way the read ends.
    let _ = tokio::time::timeout(Duration::from_secs(30), slow.read_to_end(&mut rest))
        .await
        .expect("the gateway closes the connection");
    assert!(
        !String::from_utf8_lossy(&rest).contains("200 OK"),
        "{}",
        String::from_utf8_lossy(&rest)
    );
    running.stop().await;
}
