//! Content, progress and the event sequence, on every transport.

use brain_tools_events::{ContentBlock, ToolEvent};
use serde_json::json;

use crate::support::{call, every_transport};

#[tokio::test]
async fn every_content_type_on_every_transport() {
    for (label, host, _server) in every_transport().await {
        let (result, _) = call(&host, "echo", json!({"message": "hello"})).await;
        assert_eq!(result.content, vec![ContentBlock::text("hello")], "{label}");
        assert!(!result.is_error && result.error.is_none(), "{label}");

        let (result, _) = call(&host, "image", json!({})).await;
        assert!(
            matches!(&result.content[0], ContentBlock::Image { mime_type, .. } if mime_type == "image/png"),
            "{label}"
        );

        let (result, _) = call(&host, "structured", json!({"city": "Oslo"})).await;
        assert_eq!(
            result.content,
            vec![ContentBlock::json(
                json!({"city": "Oslo", "temperature": 21.5, "conditions": "sunny"})
            )],
            "{label}: the serialized copy is dropped"
        );

        let (result, _) = call(&host, "resource_mix", json!({})).await;
        assert_eq!(result.content.len(), 4, "{label}");
        assert!(
            matches!(&result.content[1], ContentBlock::Image { .. }),
            "{label}"
        );
        assert!(
            matches!(&result.content[3], ContentBlock::Text { text } if text.starts_with("[audio")),
            "{label}"
        );
        host.client()
            .shutdown(std::time::Duration::from_secs(10))
            .await;
    }
}

#[tokio::test]
async fn progress_events_come_live_and_all_before_the_one_result() {
    for (label, host, server) in every_transport().await {
        let (result, events) = call(&host, "progress", json!({"steps": 4, "delay_ms": 5})).await;
        assert_eq!(result.content, vec![ContentBlock::text("done")], "{label}");
        assert_eq!(
            events.len(),
            5,
            "{label}: four progress events and one result"
        );
        for (i, event) in events[..4].iter().enumerate() {
            let ToolEvent::Progress(progress) = event else {
                panic!("{label}: progress first")
            };
            assert!(event.is_live_only());
            assert_eq!(progress.progress, (i + 1) as f64, "{label}");
            assert_eq!(progress.total, Some(4.0), "{label}");
            assert_eq!(progress.header.call_id, "c1");
        }
        assert_eq!(
            events[4],
            ToolEvent::Result(result),
            "{label}: the result is last"
        );
        if let Some(server) = server {
            let meta = &server.counters().call_meta[0];
            assert_eq!(meta["progressToken"], "c1", "{label}");
            assert_eq!(
                meta["brain.dev/scope"],
                json!({"tenant_id": "local", "session_id": "s1", "call_id": "c1"}),
                "{label}"
            );
        }
    }
}

#[tokio::test]
async fn tools_for_lists_what_a_tenant_sees() {
    let (_, host, _) = every_transport().await.remove(0);
    let tools = host.tools_for("local");
    assert_eq!(tools[0].name, "echo");
    assert_eq!(tools[0].input_schema["required"], json!(["message"]));
    assert!(host.tools_for("someone-else").is_empty());
}
