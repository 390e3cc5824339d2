//! Where a call's events go.

use std::sync::Mutex;

use brain_tools_events::ToolEvent;
use tokio::sync::mpsc;

/// Receives a call's events: `tool.progress` as they happen, then one `tool.result`.
/// `emit` must not block (it runs on the call's task).
///
/// Implemented for `tokio::sync::mpsc::UnboundedSender<ToolEvent>`, for
/// `Mutex<Vec<ToolEvent>>` (tests) and for every `Fn(ToolEvent) + Send + Sync` closure; a
/// host gives each call its sink with [`ToolCall::sink`](crate::ToolCall::sink).
///
/// # Examples
///
/// A sink of a host's own: every event of a call goes, as a JSON line, to the channel of
/// the model session's connection (a task there writes them to the socket). `emit` only
/// queues, so it never blocks the call; a session that went away loses its events, and
/// the call still returns its result.
///
/// ```
/// use std::sync::Arc;
/// use brain_tools::{CallScope, ErrorKind, EventSink, ToolEvent, ToolHost, config::HostConfig};
/// use tokio::sync::mpsc;
///
/// /// Forwards a session's events to its connection.
/// struct SessionSink {
///     session: String,
///     lines: mpsc::UnboundedSender<(String, String)>,
/// }
///
/// impl EventSink for SessionSink {
///     fn emit(&self, event: ToolEvent) {
///         // Progress is live-only: shown, never persisted. The result is kept too.
///         let _ = self.lines.send((self.session.clone(), event.to_json_line()));
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let loaded = HostConfig::from_json_bytes(br#"{"tools": []}"#)?;
/// let host = ToolHost::new(&loaded.config)?;
/// let (lines, mut connection) = mpsc::unbounded_channel();
/// let sink = Arc::new(SessionSink { session: "s1".to_owned(), lines });
///
/// // No tool of that name: the call still ends with its one `tool.result`, in the sink.
/// let result = host
///     .call(CallScope::new("acme", "s1", "c1"), "search", serde_json::json!({}))
///     .sink(sink)
///     .await;
/// assert_eq!(result.error.map(|error| error.kind), Some(ErrorKind::UnknownTool));
/// let (session, line) = connection.recv().await.expect("one tool.result");
/// assert_eq!(session, "s1");
/// assert!(matches!(ToolEvent::from_json_line(&line)?, ToolEvent::Result(_)));
/// # Ok(())
/// # }
/// ```
pub trait EventSink: Send + Sync {
    /// Takes one event.
    fn emit(&self, event: ToolEvent);
}

impl EventSink for mpsc::UnboundedSender<ToolEvent> {
    fn emit(&self, event: ToolEvent) {
        let _ = self.send(event);
    }
}

impl EventSink for Mutex<Vec<ToolEvent>> {
    fn emit(&self, event: ToolEvent) {
        self.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(event);
    }
}

impl<F: Fn(ToolEvent) + Send + Sync> EventSink for F {
    fn emit(&self, event: ToolEvent) {
        self(event);
    }
}
