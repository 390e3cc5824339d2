//! Where a call's events go.

use std::sync::Mutex;

use brain_tools_events::ToolEvent;
use tokio::sync::mpsc;

/// Receives a call's events: `tool.progress` as they happen, then one `tool.result`.
/// `emit` must not block (it runs on the call's task).
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
