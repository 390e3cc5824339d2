//! What the test server saw: [`Counters`] (the public snapshot) and [`Stats`] (the live, shared state).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::Notify;

/// A snapshot of everything a test server counted since it started.
///
/// HTTP servers count in a middleware in front of rmcp, so requests that rmcp rejects are counted too.
/// The stdio server counts every line it reads from stdin. Counts are of what *arrived*, not of what succeeded.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    /// Legacy sessions created (an `initialize` that rmcp accepted and gave a session id). HTTP only.
    pub sessions_opened: u64,
    /// Legacy sessions ended, by DELETE or expiry; each session is counted once. HTTP only.
    pub sessions_closed: u64,
    /// HTTP DELETE requests received.
    pub deletes: u64,
    /// HTTP GET requests without `Last-Event-ID` (standalone SSE streams).
    pub standalone_gets: u64,
    /// HTTP GET requests with `Last-Event-ID` (stream resumption).
    pub resume_gets: u64,
    /// HTTP POST requests received.
    pub http_posts: u64,
    /// JSON-RPC method -> count, for requests and notifications alike
    /// (e.g. `initialize`, `notifications/initialized`, `tools/call`, `server/discover`, `notifications/cancelled`).
    pub requests: BTreeMap<String, u64>,
    /// `tools/call` requests by tool name.
    pub tool_calls: BTreeMap<String, u64>,
    /// `params._meta` of every `tools/call` in arrival order (`null` when the call had none).
    pub call_meta: Vec<Value>,
    /// `params._meta` of every `initialize` in arrival order (`null` when it had none).
    #[serde(default)]
    pub initialize_meta: Vec<Value>,
    /// Selected headers of every `tools/call` POST, in arrival order, keys lowercase:
    /// `mcp-protocol-version`, `mcp-method`, `mcp-name`, `authorization`, `mcp-session-id` (those present).
    /// Empty on stdio.
    pub call_headers: Vec<BTreeMap<String, String>>,
    /// `notifications/cancelled` received, in any era and over any transport.
    pub cancellations: u64,
    /// Tool handlers that saw their cancellation token fire before they finished.
    pub handler_cancellations: u64,
    /// Tool handlers running now.
    pub calls_in_flight: u64,
    /// TCP connections accepted. HTTP only.
    pub connections_accepted: u64,
    /// Requests to `/mcp` refused 401 for want of an accepted bearer (protected servers only).
    #[serde(default)]
    pub unauthorized: u64,
    /// Access tokens the server's token endpoint issued (protected servers only).
    #[serde(default)]
    pub tokens_issued: u64,
    /// Tasks of the task tools whose work has not ended (2026-07-28 tasks extension).
    #[serde(default)]
    pub tasks_running: u64,
    /// Every `tasks/get`, `tasks/update` and `tasks/cancel`, in arrival order: `method`, the
    /// `task_id` it names, its `meta` (`params._meta` as JSON text) and, over HTTP, its
    /// `mcp-name` header (absent when not sent).
    #[serde(default)]
    pub task_requests: Vec<BTreeMap<String, String>>,
    /// HTTP requests that came over HTTP/2 (a server with `ServerOptions::tls` set to
    /// [`Tls::Http2`](crate::Tls::Http2), and a client that agreed to it).
    #[serde(default)]
    pub http2_requests: u64,
}

impl Counters {
    /// How many messages with JSON-RPC method `m` arrived (requests and notifications).
    pub fn method(&self, m: &str) -> u64 {
        self.requests.get(m).copied().unwrap_or(0)
    }

    /// Legacy sessions still open: opened minus closed.
    pub fn open_sessions(&self) -> u64 {
        self.sessions_opened.saturating_sub(self.sessions_closed)
    }
}

/// Reads the counters a stdio test server wrote to the file named by `TESTKIT_COUNTERS`.
///
/// The server replaces the file atomically (write, then rename), so a reader never sees half a file.
///
/// # Errors
/// The file cannot be read, or does not hold counters (an error of kind `Other` whose
/// source is the JSON error).
pub fn read_counters_file(path: impl AsRef<Path>) -> std::io::Result<Counters> {
    let bytes = std::fs::read(path)?;
    serde_json::from_slice(&bytes).map_err(std::io::Error::other)
}

/// Headers recorded for every `tools/call` POST.
pub(crate) const RECORDED_HEADERS: [&str; 5] = [
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
    "authorization",
    "mcp-session-id",
];

/// The live counters of one server, shared by the middleware, the session manager and the tool handlers.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    counters: Mutex<Counters>,
    changed: Notify,
    /// When set (stdio with `TESTKIT_COUNTERS`), every change rewrites this file.
    file: Option<PathBuf>,
    /// Off: `call_meta` and `call_headers` are not kept (long benchmark runs).
    skip_details: AtomicBool,
}

impl Stats {
    pub(crate) fn with_file(file: Option<PathBuf>) -> Self {
        Self {
            file,
            ..Self::default()
        }
    }

    pub(crate) fn snapshot(&self) -> Counters {
        self.lock().clone()
    }

    pub(crate) fn set_record_details(&self, on: bool) {
        self.skip_details.store(!on, Ordering::Relaxed);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counters> {
        // A panic while counting leaves plain numbers behind: keep going.
        self.counters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Applies `f` to the counters, persists them if configured, and wakes `wait_for` callers.
    pub(crate) fn update(&self, f: impl FnOnce(&mut Counters)) {
        {
            let mut counters = self.lock();
            f(&mut counters);
            // A process that has served no `tools/call` leaves the file alone: a client's
            // warm process, started after the last call and killed unused, must not
            // replace what the process that served the call wrote.
            if let Some(path) = self
                .file
                .as_ref()
                .filter(|_| !counters.tool_calls.is_empty())
            {
                // Written under the lock so that files are replaced in the order of the changes.
                if let Err(error) = write_atomically(path, &counters) {
                    tracing::warn!(%error, path = %path.display(), "cannot write the counters file");
                }
            }
        }
        self.changed.notify_waiters();
    }

    /// Counts one JSON-RPC message as it arrived (an HTTP POST body, or a stdio line) and, for HTTP, the POST.
    /// `headers` gives the recorded headers of a `tools/call` POST (empty on stdio); it runs only when needed.
    pub(crate) fn record_message(
        &self,
        message: Option<&Value>,
        http_post: bool,
        headers: impl FnOnce() -> BTreeMap<String, String>,
    ) {
        let method = message
            .and_then(|m| m.get("method"))
            .and_then(Value::as_str);
        let params = message.and_then(|m| m.get("params"));
        let is_call = method == Some("tools/call");
        let is_initialize = method == Some("initialize");
        let is_task = method.is_some_and(|m| m.starts_with("tasks/"));
        let details =
            (is_call || is_initialize || is_task) && !self.skip_details.load(Ordering::Relaxed);
        let tool = is_call
            .then(|| params.and_then(|p| p.get("name")).and_then(Value::as_str))
            .flatten();
        let meta = (details && (is_call || is_initialize)).then(|| {
            params
                .and_then(|p| p.get("_meta"))
                .cloned()
                .unwrap_or(Value::Null)
        });
        let headers = (details && (is_call || is_task)).then(headers);
        let task_request = (details && is_task).then(|| {
            let mut seen = BTreeMap::new();
            seen.insert("method".to_owned(), method.unwrap_or_default().to_owned());
            if let Some(id) = params.and_then(|p| p.get("taskId")).and_then(Value::as_str) {
                seen.insert("task_id".to_owned(), id.to_owned());
            }
            if let Some(name) = headers.as_ref().and_then(|h| h.get("mcp-name")) {
                seen.insert("mcp-name".to_owned(), name.clone());
            }
            if let Some(meta) = params.and_then(|p| p.get("_meta")) {
                seen.insert("meta".to_owned(), meta.to_string());
            }
            seen
        });
        let headers = headers.filter(|_| is_call);
        if method.is_none() && !http_post {
            return;
        }
        self.update(|c| {
            if http_post {
                c.http_posts += 1;
            }
            let Some(method) = method else {
                return;
            };
            bump(&mut c.requests, method);
            if method == "notifications/cancelled" {
                c.cancellations += 1;
            }
            if let Some(tool) = tool {
                bump(&mut c.tool_calls, tool);
            }
            match meta {
                Some(meta) if is_call => c.call_meta.push(meta),
                Some(meta) => c.initialize_meta.push(meta),
                None => {}
            }
            if let Some(headers) = headers {
                c.call_headers.push(headers);
            }
            if let Some(task_request) = task_request {
                c.task_requests.push(task_request);
            }
        });
    }

    /// Resolves the next time any counter changes. Create it before checking the condition you wait for.
    pub(crate) fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }
}

fn bump(map: &mut BTreeMap<String, u64>, key: &str) {
    match map.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            map.insert(key.to_owned(), 1);
        }
    }
}

fn write_atomically(path: &Path, counters: &Counters) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(counters).map_err(std::io::Error::other)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, json)?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn counts_methods_tools_meta_and_cancellations() {
        let stats = Stats::default();
        let call = json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
            "params":{"name":"echo","arguments":{"message":"hi"},"_meta":{"progressToken":"c1"}}});
        stats.record_message(Some(&call), true, || {
            BTreeMap::from([("mcp-name".to_owned(), "echo".to_owned())])
        });
        stats.record_message(
            Some(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})),
            false,
            BTreeMap::new,
        );
        stats.record_message(
            Some(&json!({"jsonrpc":"2.0","id":1,"result":{}})),
            true,
            BTreeMap::new,
        );
        stats.record_message(None, true, BTreeMap::new);
        let c = stats.snapshot();
        assert_eq!(c.method("tools/call"), 1);
        assert_eq!(c.method("notifications/cancelled"), 1);
        assert_eq!(c.method("initialize"), 0);
        assert_eq!(c.tool_calls.get("echo"), Some(&1));
        assert_eq!(c.call_meta, vec![json!({"progressToken":"c1"})]);
        assert_eq!(
            c.call_headers[0].get("mcp-name").map(String::as_str),
            Some("echo")
        );
        assert_eq!(c.cancellations, 1);
        assert_eq!(c.http_posts, 3);
    }

    #[test]
    fn details_can_be_switched_off() {
        let stats = Stats::default();
        stats.set_record_details(false);
        stats.record_message(
            Some(&json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}})),
            false,
            BTreeMap::new,
        );
        let c = stats.snapshot();
        assert_eq!(c.tool_calls.get("echo"), Some(&1));
        assert!(c.call_meta.is_empty() && c.call_headers.is_empty());
    }

    #[test]
    fn counters_file_round_trips() {
        let dir = std::env::temp_dir().join(format!("testkit-counters-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("counters.json");
        let stats = Stats::with_file(Some(path.clone()));
        // Nothing is written before a tools/call arrived (a warm process left unused).
        stats.update(|c| c.cancellations = 2);
        assert!(!path.exists());
        stats.update(|c| {
            c.tool_calls.insert("echo".into(), 1);
        });
        let read = read_counters_file(&path).unwrap();
        assert_eq!(read.cancellations, 2);
        assert_eq!(read, stats.snapshot());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn open_sessions_is_opened_minus_closed() {
        let c = Counters {
            sessions_opened: 3,
            sessions_closed: 1,
            ..Counters::default()
        };
        assert_eq!(c.open_sessions(), 2);
    }
}
