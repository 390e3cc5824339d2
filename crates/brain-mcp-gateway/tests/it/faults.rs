//! What goes wrong upstream reaches the caller as an error result whose `_meta` says what
//! happened, whether the tool may have run, and whether a retry may help: one row per
//! fault, each through the gateway (docs/reliability.md, "The gateway's rows").

use brain_mcp_testkit::{Era, HttpFault, RefusedPort};
use brain_tools::EraPreference;
use serde_json::{Value, json};

use crate::support::{call, client, endpoint, start_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_upstream_failure_reaches_the_caller_with_its_kind_delivery_and_retry_advice() {
    let refused = RefusedPort::new().unwrap();
    let down = format!("http://{}/mcp", refused.addr());
    let running = start_with(Era::Both, json!({}), move |upstream| {
        let binding = |name: &str, url: &str, tool: &str, more: Value| {
            let mut binding = json!({
                "name": name, "description": name, "input_schema": {"type": "object"},
                "url": url, "mcp_tool": tool, "tenants": ["acme"], "timeout_seconds": 10,
            });
            if let (Value::Object(binding), Value::Object(more)) = (&mut binding, more) {
                binding.extend(more);
            }
            binding
        };
        vec![
            binding("f_down", &down, "echo", json!({})),
            binding("f_slow", &upstream.url(), "hang", json!({"timeout_seconds": 1})),
            binding("f_big", &upstream.url(), "big", json!({"max_output_bytes": 1000})),
            binding(
                "f_schema",
                &upstream.url(),
                "bad_structured",
                json!({"output_schema": {"type": "object", "properties": {"temperature": {"type": "number"}}}}),
            ),
            binding("f_500", &upstream.fault_url(HttpFault::Status500Html), "echo", json!({})),
            binding("f_token", &upstream.url(), "echo", json!({"token_env": "GATEWAY_TEST_UNSET_VARIABLE"})),
        ]
    })
    .await;
    let client = client(EraPreference::Auto);
    let acme = endpoint(&running, &running.key("acme"));
    // (binding, arguments, kind, delivery, retryable)
    let rows = [
        ("f_down", json!({}), "connect", "not_sent", true),
        ("f_slow", json!({}), "timeout", "unknown", true),
        (
            "f_big",
            json!({"bytes": 20000}),
            "output_too_large",
            "unknown",
            false,
        ),
        ("f_schema", json!({}), "output_schema", "delivered", false),
        ("f_500", json!({}), "http_status", "not_sent", true),
        ("f_token", json!({}), "missing_token", "not_sent", false),
    ];
    for (tool, arguments, kind, delivery, retryable) in rows {
        let done = call(&client, acme.clone(), tool, arguments).await.unwrap();
        assert_eq!(done.result["isError"], true, "{tool}");
        let error = &done.result["_meta"][brain_mcp_gateway::ERROR_META_KEY];
        assert_eq!(
            (
                error["kind"].as_str(),
                error["delivery"].as_str(),
                error["retryable"].as_bool()
            ),
            (Some(kind), Some(delivery), Some(retryable)),
            "{tool}: {error}"
        );
        let text = done.result["content"][0]["text"].as_str().unwrap();
        assert!(
            text.starts_with(tool),
            "{tool}: the message names the tool: {text}"
        );
        assert!(
            !text.contains("GATEWAY_TEST") || tool == "f_token",
            "{text}"
        );
    }
    running.stop().await;
}
