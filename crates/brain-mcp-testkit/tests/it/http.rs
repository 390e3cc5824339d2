use std::time::Duration;

use brain_mcp_testkit::{Era, ServerOptions, TestServer, tool_names};
use serde_json::{Value, json};

use crate::client::*;

const WAIT: Duration = Duration::from_secs(10);

async fn server(era: Era) -> TestServer {
    TestServer::start(ServerOptions {
        era,
        ..ServerOptions::default()
    })
    .await
    .expect("the server starts")
}

#[tokio::test]
async fn legacy_handshake_echo_and_delete_are_counted() {
    let server = server(Era::Legacy).await;
    let url = server.url();
    let session = open_session(&url).await;
    let reply = post_in_session(
        &url,
        &session,
        &call(2, "echo", json!({"message": "hi"}), "c1"),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(texts(&reply.answer()), ["hi"]);

    let deleted = send(
        "DELETE",
        &url,
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", V2025),
        ],
        None,
    )
    .await
    .unwrap();
    assert!(deleted.status < 300, "{deleted:?}");
    let c = server.wait_for(|c| c.sessions_closed == 1, WAIT).await;
    assert_eq!(
        (c.sessions_opened, c.sessions_closed, c.open_sessions()),
        (1, 1, 0)
    );
    assert_eq!(c.deletes, 1);
    assert_eq!(c.http_posts, 3);
    assert_eq!(c.method("initialize"), 1);
    assert_eq!(c.method("notifications/initialized"), 1);
    assert_eq!(c.method("tools/call"), 1);
    assert_eq!(c.tool_calls.get("echo"), Some(&1));
    assert_eq!(c.call_meta, vec![json!({"progressToken": "c1"})]);
    assert_eq!(c.call_headers[0].get("mcp-session-id"), Some(&session));
    assert_eq!(c.calls_in_flight, 0);
    assert_eq!(c.connections_accepted, 4);
    assert_eq!(c.standalone_gets, 0);
}

#[tokio::test]
async fn modern_discover_and_call_carry_the_2026_headers_and_meta() {
    let server = server(Era::Modern).await;
    let url = server.url();
    let discover = post_modern(&url, 1, "server/discover", json!({}), &[]).await;
    assert_eq!(discover.status, 200, "{}", discover.text());
    assert_eq!(
        discover.answer()["result"]["supportedVersions"],
        json!([V2026])
    );

    let scope = json!({"tenant_id": "t1", "session_id": "s1", "call_id": "c1"});
    let params = json!({"name": "echo", "arguments": {"message": "hello"},
        "_meta": {"progressToken": "c1", "brain.dev/scope": scope}});
    let reply = post_modern(
        &url,
        2,
        "tools/call",
        params,
        &[("Authorization", "Bearer t0ken")],
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.header("mcp-session-id").is_none());
    assert_eq!(texts(&reply.answer()), ["hello"]);

    let c = server.counters();
    assert_eq!(c.method("server/discover"), 1);
    assert_eq!(c.sessions_opened, 0);
    let meta = &c.call_meta[0];
    assert_eq!(meta["progressToken"], "c1");
    assert_eq!(meta["brain.dev/scope"], scope);
    assert_eq!(meta["io.modelcontextprotocol/protocolVersion"], V2026);
    let headers = &c.call_headers[0];
    assert_eq!(
        headers.get("authorization").map(String::as_str),
        Some("Bearer t0ken")
    );
    assert_eq!(
        headers.get("mcp-method").map(String::as_str),
        Some("tools/call")
    );
    assert_eq!(headers.get("mcp-name").map(String::as_str), Some("echo"));
    assert_eq!(
        headers.get("mcp-protocol-version").map(String::as_str),
        Some(V2026)
    );
}

#[tokio::test]
async fn modern_server_rejects_initialize() {
    let server = server(Era::Modern).await;
    let init = post(
        &server.url(),
        &[],
        &request(1, "initialize", json!({"protocolVersion": V2025, "capabilities": {}, "clientInfo": {"name": "x", "version": "0"}})),
    )
    .await;
    assert_eq!(init.answer()["error"]["code"], -32022, "{}", init.text());
    assert!(init.header("mcp-session-id").is_none());
    assert_eq!(server.counters().sessions_opened, 0);
}

#[tokio::test]
async fn legacy_server_answers_discover_like_a_pre_2026_server() {
    let server = server(Era::Legacy).await;
    let discover = post_modern(&server.url(), 7, "server/discover", json!({}), &[]).await;
    assert_eq!(discover.status, 200);
    let answer = discover.answer();
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    // ... and the fallback works.
    open_session(&server.url()).await;
    let c = server.counters();
    assert_eq!(
        (
            c.method("server/discover"),
            c.method("initialize"),
            c.sessions_opened
        ),
        (1, 1, 1)
    );
}

#[tokio::test]
async fn both_era_server_serves_discover_and_sessions() {
    let server = server(Era::Both).await;
    let discover = post_modern(&server.url(), 1, "server/discover", json!({}), &[]).await;
    let versions = discover.answer()["result"]["supportedVersions"].clone();
    assert!(
        versions.as_array().unwrap().contains(&json!(V2026)),
        "{versions}"
    );
    assert!(
        versions.as_array().unwrap().contains(&json!(V2025)),
        "{versions}"
    );
    open_session(&server.url()).await;
    assert_eq!(server.counters().sessions_opened, 1);
}

fn assert_progress_then_done(messages: &[Value], steps: usize) {
    let progress = progress(messages);
    let expected: Vec<_> = (1..=steps)
        .map(|i| {
            (
                json!("c1"),
                i as f64,
                Some(steps as f64),
                Some(format!("step {i}")),
            )
        })
        .collect();
    assert_eq!(progress, expected);
    let last = messages.last().expect("messages");
    assert_eq!(texts(last), ["done"], "the result comes last: {messages:?}");
}

#[tokio::test]
async fn progress_echoes_the_string_token_in_both_eras() {
    let server = server(Era::Both).await;
    let url = server.url();
    let args = json!({"steps": 3, "delay_ms": 1});

    let params = json!({"name": "progress", "arguments": args, "_meta": {"progressToken": "c1"}});
    let reply = post_modern(&url, 1, "tools/call", params, &[]).await;
    assert_progress_then_done(&reply.messages(), 3);

    let session = open_session(&url).await;
    let reply = post_in_session(&url, &session, &call(2, "progress", args, "c1")).await;
    assert_progress_then_done(&reply.messages(), 3);
}

#[tokio::test]
async fn tools_list_pages_through_every_tool() {
    let server = TestServer::start(ServerOptions {
        era: Era::Modern,
        page_size: Some(5),
        extra_tools: 20,
        ..ServerOptions::default()
    })
    .await
    .unwrap();
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let reply = post_modern(&server.url(), pages + 1, "tools/list", params, &[]).await;
        let result = reply.answer()["result"].clone();
        let tools = result["tools"].as_array().expect("tools").clone();
        assert!(tools.len() <= 5);
        for tool in &tools {
            assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
            names.push(tool["name"].as_str().unwrap().to_owned());
        }
        pages += 1;
        match result["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    let expected: Vec<String> = tool_names()
        .iter()
        .map(|s| (*s).to_owned())
        .chain((0..20).map(|i| format!("gen_{i:04}")))
        .collect();
    assert_eq!(names, expected);
    assert_eq!(pages, expected.len().div_ceil(5) as u64);
    assert_eq!(server.counters().method("tools/list"), pages);
}

#[tokio::test]
async fn cancelling_a_legacy_call_is_counted_and_reaches_the_handler() {
    let server = server(Era::Legacy).await;
    let url = server.url();
    let session = open_session(&url).await;
    let call_url = url.clone();
    let call_session = session.clone();
    let pending = tokio::spawn(async move {
        post_in_session(
            &call_url,
            &call_session,
            &call(5, "sleep", json!({"ms": 60_000}), "c5"),
        )
        .await
    });
    server.wait_for(|c| c.calls_in_flight == 1, WAIT).await;
    let cancel = notification(
        "notifications/cancelled",
        json!({"requestId": 5, "reason": "test"}),
    );
    assert_eq!(post_in_session(&url, &session, &cancel).await.status, 202);
    let c = server
        .wait_for(
            |c| c.handler_cancellations == 1 && c.calls_in_flight == 0,
            WAIT,
        )
        .await;
    assert_eq!(
        (c.cancellations, c.handler_cancellations, c.calls_in_flight),
        (1, 1, 0)
    );
    pending.abort();
}

#[tokio::test]
async fn content_tools_return_what_they_promise() {
    let server = server(Era::Modern).await;
    let url = server.url();
    let call = |id, name: &'static str, args: Value| {
        let url = url.clone();
        async move {
            post_modern(
                &url,
                id,
                "tools/call",
                json!({"name": name, "arguments": args}),
                &[],
            )
            .await
            .answer()
        }
    };
    let structured = call(1, "structured", json!({"city": "Oslo"})).await;
    let content = &structured["result"]["structuredContent"];
    assert_eq!(
        *content,
        json!({"city": "Oslo", "temperature": 21.5, "conditions": "sunny"})
    );
    assert_eq!(texts(&structured), [content.to_string()]);

    let bad = call(2, "bad_structured", json!({})).await;
    assert_eq!(
        bad["result"]["structuredContent"],
        json!({"temperature": "hot"})
    );

    let error = call(3, "error", json!({})).await;
    assert_eq!(error["result"]["isError"], true);
    assert_eq!(texts(&error), ["the tool failed on purpose"]);

    let big = call(4, "big", json!({"bytes": 100_000})).await;
    assert_eq!(texts(&big)[0].len(), 100_000);

    let image = call(5, "image", json!({})).await;
    assert_eq!(image["result"]["content"][0]["mimeType"], "image/png");

    let mix = call(6, "resource_mix", json!({})).await;
    let kinds: Vec<_> = mix["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].clone())
        .collect();
    assert_eq!(
        kinds,
        [
            json!("resource"),
            json!("resource"),
            json!("resource_link"),
            json!("audio")
        ]
    );

    let ask = call(8, "ask", json!({})).await;
    assert_eq!(ask["result"]["resultType"], "input_required", "{ask}");
    assert!(
        ask["result"]["inputRequests"]["confirm"].is_object(),
        "{ask}"
    );

    let generated = TestServer::start(ServerOptions {
        extra_tools: 2,
        ..ServerOptions::default()
    })
    .await
    .unwrap();
    let reply = post_modern(
        &generated.url(),
        7,
        "tools/call",
        json!({"name": "gen_0001", "arguments": {"field_0001": 3}}),
        &[],
    )
    .await;
    assert_eq!(texts(&reply.answer()), [r#"{"field_0001":3}"#]);
}

#[tokio::test]
async fn progress_after_result_and_drop_mid_stream() {
    for json_response in [false, true] {
        let server = TestServer::start(ServerOptions {
            era: Era::Both,
            json_response,
            ..ServerOptions::default()
        })
        .await
        .unwrap();
        let url = server.url();
        let params = json!({"name": "progress_after_result", "arguments": {}, "_meta": {"progressToken": "c9"}});
        let reply = post_modern(&url, 1, "tools/call", params, &[]).await;
        let messages = reply.messages();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert_eq!(texts(&messages[0]), ["done"]);
        assert_eq!(progress(&messages[1..])[0].0, json!("c9"));

        let params = json!({"name": "drop_mid_stream", "arguments": {"after_progress": 2}, "_meta": {"progressToken": "c8"}});
        let reply = post_modern(&url, 2, "tools/call", params, &[]).await;
        assert!(!reply.complete, "the stream must break: {reply:?}");
        let messages = reply.messages();
        assert_eq!(progress(&messages).len(), 2, "{messages:?}");
        assert!(messages.iter().all(|m| m.get("result").is_none()));

        let session = open_session(&url).await;
        let reply = post_in_session(
            &url,
            &session,
            &call(3, "drop_mid_stream", json!({"after_progress": 1}), "c7"),
        )
        .await;
        assert!(!reply.complete);
        assert_eq!(progress(&reply.messages()).len(), 1);

        let params = json!({"name": "drop_mid_stream", "arguments": {"after_progress": 0}, "_meta": {"progressToken": "c6"}});
        let dropped = tokio::time::timeout(
            WAIT,
            send(
                "POST",
                &url,
                &[
                    ("Content-Type", "application/json"),
                    ("Accept", "application/json, text/event-stream"),
                    ("MCP-Protocol-Version", V2026),
                    ("Mcp-Method", "tools/call"),
                    ("Mcp-Name", "drop_mid_stream"),
                ],
                Some(&request(
                    4,
                    "tools/call",
                    json!({"name": params["name"], "arguments": params["arguments"],
                "_meta": modern_meta(params["_meta"].clone())}),
                )),
            ),
        )
        .await
        .expect("the drop comes quickly");
        assert!(dropped.map_or(true, |r| !r.complete));
    }
}
