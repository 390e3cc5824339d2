//! What a tenant sees: its own bindings, as configured; another tenant's tool answers as
//! one that does not exist, in `tools/list` and in `tools/call`.

use brain_mcp_testkit::Era;
use brain_tools::EraPreference;
use serde_json::json;

use crate::support::{call, client, endpoint, list, post_modern, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tenant_lists_and_calls_only_its_own_tools_in_both_eras() {
    for (upstream, era) in [
        (Era::Legacy, EraPreference::Legacy),
        (Era::Modern, EraPreference::Modern),
        (Era::Both, EraPreference::Auto),
    ] {
        let running = start(upstream, json!({})).await;
        let client = client(era);
        let acme = endpoint(&running, &running.key("acme"));
        let globex = endpoint(&running, &running.key("globex"));

        let listed = list(&client, acme.clone()).await;
        let names: Vec<&str> = listed.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "echo",
                "progress",
                "hang",
                "error",
                "structured",
                "image",
                "resource_mix",
                "headed"
            ],
            "{era:?}"
        );
        // As configured: the description and the schema of the binding.
        let echo = &listed.tools[0];
        assert_eq!(echo.description.as_deref(), Some("echo on the testkit"));
        assert_eq!(
            serde_json::Value::Object(echo.input_schema.clone()),
            json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]})
        );
        let listed = list(&client, globex.clone()).await;
        let names: Vec<&str> = listed.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["shout"], "{era:?}");

        let done = call(&client, acme.clone(), "echo", json!({"message": "hi"}))
            .await
            .unwrap();
        assert_eq!(done.result["content"][0]["text"], "hi", "{era:?}");
        let done = call(&client, globex.clone(), "shout", json!({"message": "HI"}))
            .await
            .unwrap();
        assert_eq!(done.result["content"][0]["text"], "HI");

        // Another tenant's tool and no tool at all: the same answer, word for word but
        // the name.
        let theirs = call(&client, globex.clone(), "echo", json!({"message": "x"}))
            .await
            .unwrap_err();
        let none = call(&client, globex, "nothing", json!({"message": "x"}))
            .await
            .unwrap_err();
        assert_eq!(
            theirs.detail().replace("echo", "NAME"),
            none.detail().replace("nothing", "NAME"),
            "{era:?}"
        );
        assert!(theirs.detail().contains("-32602"), "{}", theirs.detail());
        // Upstream saw only acme's and globex's own calls.
        assert_eq!(
            running.upstream.counters().method("tools/call"),
            2,
            "{era:?}"
        );
        running.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_param_headers_are_checked_against_the_callers_own_binding() {
    // SEP-2243: a value the input schema marks `x-mcp-header` travels in a header too,
    // and a header that says otherwise than the body is refused (HTTP 400, -32020).
    let running = start(Era::Both, json!({})).await;
    let send = |key: String, tool: &'static str, header: Option<&'static str>| {
        let url = running.url.clone();
        async move {
            let headers: Vec<(&str, &str)> = header
                .map(|value| ("mcp-param-message", value))
                .into_iter()
                .collect();
            let params = json!({"name": tool, "arguments": {"message": "Hello"}});
            post_modern(&url, &key, "tools/call", params, &headers).await
        }
    };
    let acme = running.key("acme");
    let (status, message) = send(acme.clone(), "headed", Some("Hello")).await;
    assert_eq!(status, 200, "{message}");
    assert_eq!(message["result"]["content"][0]["text"], "Hello");
    let (status, message) = send(acme.clone(), "headed", Some("=?base64?SGVsbG8=?=")).await;
    assert_eq!(
        (status, &message["result"]["content"][0]["text"]),
        (200, &json!("Hello"))
    );
    for header in [Some("Goodbye"), Some("=?base64?SGVsbG8?="), None] {
        let (status, message) = send(acme.clone(), "headed", header).await;
        assert_eq!(
            (status, &message["error"]["code"]),
            (400, &json!(-32020)),
            "{header:?}: {message}"
        );
    }
    assert_eq!(
        running.upstream.counters().method("tools/call"),
        2,
        "a refused call is not sent"
    );
    // Another tenant's tool is no tool of globex's: its headers are not checked against
    // acme's binding, and the answer is the one for a tool that does not exist.
    let globex = running.key("globex");
    let (theirs_status, theirs) = send(globex.clone(), "headed", Some("Goodbye")).await;
    let (none_status, none) = send(globex, "nope", Some("Goodbye")).await;
    assert_eq!(theirs_status, none_status);
    assert_eq!(theirs["error"]["code"], none["error"]["code"]);
    assert_eq!(
        theirs["error"]["message"]
            .as_str()
            .unwrap()
            .replace("headed", "nope"),
        none["error"]["message"].as_str().unwrap()
    );
    running.stop().await;
}
