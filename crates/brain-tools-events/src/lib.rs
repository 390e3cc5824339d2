//! The events a Brain tool call emits, and the conversion of MCP results into Brain
//! content blocks.
//!
//! A call emits zero or more `tool.progress` events (live-only: a host shows them and
//! must not persist them) and then exactly one `tool.result`. Events serialize to JSON
//! lines and back. [`McpResult::from_value`] turns an MCP `CallToolResult` into the
//! blocks a model reads: text, image and json; what cannot reach the model (audio,
//! resource links, other blobs, unknown content) becomes a short text block, in place,
//! that says what was left out and why.
//!
//! What this crate is not: it runs nothing and knows no transport; it works on plain
//! JSON, so it does not depend on an MCP library.
//!
//! ```
//! use brain_tools_events::{CallHeader, ContentBlock, McpResult, ToolEvent};
//! use serde_json::json;
//!
//! let converted = McpResult::from_value(&json!({
//!     "content": [{"type": "text", "text": "{\"hits\":3}"}],
//!     "structuredContent": {"hits": 3}
//! }));
//! assert_eq!(converted.content, vec![ContentBlock::json(json!({"hits": 3}))]);
//!
//! let header = CallHeader::new("local", "s1", "c1", "search");
//! let event = ToolEvent::result(header, converted.is_error, converted.content);
//! let line = event.to_json_line();
//! assert_eq!(ToolEvent::from_json_line(&line).unwrap(), event);
//! ```

mod convert;
mod event;

pub use convert::{McpResult, ResultContent};
pub use event::{
    CallHeader, ContentBlock, Delivery, ErrorKind, ProgressEvent, ResultEvent, ToolError, ToolEvent,
};
