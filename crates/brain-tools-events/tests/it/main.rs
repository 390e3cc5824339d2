//! Events as JSON lines: the shapes of DESIGN.md, and round trips.

mod results;

use brain_tools_events::{
    CallHeader, ContentBlock, Delivery, ErrorKind, McpResult, ToolError, ToolEvent,
};
use serde_json::json;

fn header() -> CallHeader {
    CallHeader::new("local", "s1", "c1", "search")
}

fn events() -> Vec<ToolEvent> {
    vec![
        ToolEvent::progress(header(), 2.0, Some(5.0), Some("indexing".into())),
        ToolEvent::progress(header(), 0.5, None, None),
        ToolEvent::result(header(), false, vec![ContentBlock::text("...")]),
        ToolEvent::failure(
            header(),
            ToolError::new(
                ErrorKind::Timeout,
                Delivery::Unknown,
                "search timed out after 300 s",
            ),
        ),
        ToolEvent::result(
            header(),
            false,
            McpResult::from_value(&json!({
                "content": [{"type": "image", "data": "iVBORw==", "mimeType": "image/png"}],
                "structuredContent": {"hits": [1, 2]}
            }))
            .content,
        ),
    ]
}

#[test]
fn json_lines_have_the_documented_shape() {
    let lines: Vec<String> = events().iter().map(ToolEvent::to_json_line).collect();
    insta::assert_snapshot!(lines.join("\n"));
}

#[test]
fn json_lines_round_trip() {
    for event in events() {
        let line = event.to_json_line();
        assert!(!line.contains('\n'));
        assert_eq!(ToolEvent::from_json_line(&line).unwrap(), event, "{line}");
    }
}

#[test]
fn only_progress_is_live_only() {
    let events = events();
    assert!(events[0].is_live_only());
    assert!(!events[2].is_live_only());
    assert!(!events[3].is_live_only());
}

#[test]
fn every_error_kind_has_its_documented_name() {
    let kinds = [
        ErrorKind::UnknownTool,
        ErrorKind::InvalidArguments,
        ErrorKind::MissingToken,
        ErrorKind::Connect,
        ErrorKind::HttpStatus,
        ErrorKind::Protocol,
        ErrorKind::Timeout,
        ErrorKind::Cancelled,
        ErrorKind::OutputTooLarge,
        ErrorKind::ToolError,
        ErrorKind::OutputSchema,
        ErrorKind::Executor,
        ErrorKind::AuthorizationRequired,
        ErrorKind::AuthorizationFailed,
    ];
    for kind in kinds {
        assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.as_str()));
    }
    for delivery in [Delivery::NotSent, Delivery::Unknown, Delivery::Delivered] {
        assert_eq!(
            serde_json::to_value(delivery).unwrap(),
            json!(delivery.as_str())
        );
    }
}
