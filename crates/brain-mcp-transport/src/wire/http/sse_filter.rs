//! Reading SSE events and JSON bodies without acting on them: which response answers
//! which request, whether an event is a progress notification, the ids a resumed stream
//! carries, the media type. Pure functions, tested here.

use rmcp::model::{JsonRpcMessage, RequestId, ServerJsonRpcMessage};

/// Event ids of a call's stream are given to rmcp as `brain:<key>:<server's id>`; rmcp
/// hands them back to resume the stream, and the prefix says which call it was.
const RESUME_PREFIX: &str = "brain:";

/// The phrase for a response that answers another request.
pub(super) const WRONG_ID: &str = "a response to another request id";
/// The phrase for an answer (a POST's or a stream's) whose media type is not one the
/// request accepts.
pub(super) const UNEXPECTED_CONTENT_TYPE: &str = "an unexpected content type";

/// The id rmcp keeps for an event of call `key`'s stream.
pub(super) fn resume_id(key: u64, server_id: &str) -> String {
    format!("{RESUME_PREFIX}{key}:{server_id}")
}

/// The call key and the server's id in an id made by [`resume_id`]; `None` for any other.
pub(super) fn parse_resume_id(id: &str) -> Option<(u64, &str)> {
    let (key, server_id) = id.strip_prefix(RESUME_PREFIX)?.split_once(':')?;
    Some((key.parse().ok()?, server_id))
}

/// Whether two request ids are the same request (rmcp matches a numeric id sent back as
/// a string too).
fn same_id(id: &RequestId, expected: &RequestId) -> bool {
    id.to_string() == expected.to_string()
}

/// What a JSON body is to the request it answers.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Reply {
    /// The response (or error) to the request.
    Answer,
    /// A response to another request.
    WrongId,
    /// A notification or a request: not an answer at all.
    NotAResponse,
}

/// What a message in a JSON body is to the request `expected`.
pub(super) fn reply_to(message: &ServerJsonRpcMessage, expected: &RequestId) -> Reply {
    let id = match message {
        JsonRpcMessage::Response(response) => Some(&response.id),
        JsonRpcMessage::Error(error) => error.id.as_ref(),
        JsonRpcMessage::Notification(_) | JsonRpcMessage::Request(_) => {
            return Reply::NotAResponse;
        }
    };
    match id {
        Some(id) if same_id(id, expected) => Reply::Answer,
        _ => Reply::WrongId,
    }
}

/// What an SSE event of a call's stream is to that call.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Event {
    /// Not a response (a notification, a request, a priming event).
    Other,
    /// The answer to the call.
    Ours,
    /// A response to another request.
    Wrong,
}

/// Reads only what is needed: events that look like responses, and only their id (serde
/// skips the rest without building it). `expected` is `None` on a resumed stream, where
/// any response is the answer.
pub(super) fn event_to(data: Option<&str>, expected: Option<&RequestId>) -> Event {
    let Some(data) = data else {
        return Event::Other;
    };
    let looks_like_response =
        (data.contains("\"result\"") || data.contains("\"error\"")) && !data.contains("\"method\"");
    if !looks_like_response {
        return Event::Other;
    }
    #[derive(serde::Deserialize)]
    struct Envelope {
        id: Option<RequestId>,
    }
    let Ok(envelope) = serde_json::from_str::<Envelope>(data) else {
        return Event::Other;
    };
    match (expected, envelope.id) {
        (None, _) => Event::Ours,
        (Some(expected), Some(id)) if same_id(&id, expected) => Event::Ours,
        (Some(_), _) => Event::Wrong,
    }
}

/// The message of an event that may be a progress notification (parsed only then).
pub(super) fn progress_message(data: Option<&str>) -> Option<ServerJsonRpcMessage> {
    let data = data?;
    if !data.contains("notifications/progress") {
        return None;
    }
    serde_json::from_str(data).ok()
}

/// The media type of a `Content-Type` value, lowercase, without parameters.
pub(super) fn media_type(content_type: Option<&str>) -> Option<String> {
    content_type.map(|value| {
        value
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn message(value: serde_json::Value) -> ServerJsonRpcMessage {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn replies_to_a_request() {
        let expected = RequestId::Number(3);
        let cases = [
            (
                json!({"jsonrpc": "2.0", "id": 3, "result": {"content": []}}),
                Reply::Answer,
            ),
            (
                json!({"jsonrpc": "2.0", "id": "3", "result": {}}),
                Reply::Answer,
            ),
            (
                json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -1, "message": "x"}}),
                Reply::Answer,
            ),
            (
                json!({"jsonrpc": "2.0", "id": 4, "result": {}}),
                Reply::WrongId,
            ),
            (
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "x"}}),
                Reply::WrongId,
            ),
            (
                json!({"jsonrpc": "2.0", "method": "notifications/message",
                       "params": {"level": "info", "data": "x"}}),
                Reply::NotAResponse,
            ),
            (
                json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
                Reply::NotAResponse,
            ),
        ];
        for (value, reply) in cases {
            assert_eq!(
                reply_to(&message(value.clone()), &expected),
                reply,
                "{value}"
            );
        }
    }

    #[test]
    fn events_of_a_call_stream() {
        let expected = RequestId::String("c-1".into());
        let cases: [(Option<&str>, Option<&RequestId>, Event); 8] = [
            (None, Some(&expected), Event::Other),
            (Some(""), Some(&expected), Event::Other),
            (
                Some(
                    r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"c","progress":1,"result":1}}"#,
                ),
                Some(&expected),
                Event::Other,
            ),
            (
                Some(r#"{"jsonrpc":"2.0","id":"c-1","result":{"content":[]}}"#),
                Some(&expected),
                Event::Ours,
            ),
            (
                Some(r#"{"jsonrpc":"2.0","id":"c-2","result":{"content":[]}}"#),
                Some(&expected),
                Event::Wrong,
            ),
            (
                Some(r#"{"jsonrpc":"2.0","error":{"code":1,"message":"m"}}"#),
                Some(&expected),
                Event::Wrong,
            ),
            (
                Some(r#"{"jsonrpc":"2.0","id":"anything","result":{}}"#),
                None,
                Event::Ours,
            ),
            (Some("not json \"result\""), Some(&expected), Event::Other),
        ];
        for (data, expected, event) in cases {
            assert_eq!(event_to(data, expected), event, "{data:?}");
        }
    }

    #[test]
    fn progress_is_parsed_only_when_it_may_be_progress() {
        let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"c1","progress":2}}"#;
        assert!(matches!(
            progress_message(Some(progress)),
            Some(JsonRpcMessage::Notification(_))
        ));
        assert!(progress_message(Some(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#)).is_none());
        assert!(progress_message(Some("notifications/progress but not json")).is_none());
        assert!(progress_message(None).is_none());
    }

    #[test]
    fn resume_ids_round_trip() {
        let cases = [
            ("brain:7:ev-1", Some((7, "ev-1"))),
            ("brain:7:a:b", Some((7, "a:b"))),
            ("brain:x:ev", None),
            ("brain:7", None),
            ("ev-1", None),
            ("", None),
        ];
        for (id, parsed) in cases {
            assert_eq!(parse_resume_id(id), parsed, "{id}");
        }
        assert_eq!(parse_resume_id(&resume_id(42, "s:1")), Some((42, "s:1")));
    }

    #[test]
    fn media_types() {
        let cases = [
            (Some("text/event-stream"), Some("text/event-stream")),
            (
                Some("Application/JSON; charset=utf-8"),
                Some("application/json"),
            ),
            (Some(" text/html ;x"), Some("text/html")),
            (None, None),
        ];
        for (value, media) in cases {
            assert_eq!(media_type(value).as_deref(), media, "{value:?}");
        }
    }
}
