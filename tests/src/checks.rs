//! Named checks and their report, and the tool checks every peer gets: echo, progress,
//! image, structured and error, each called through `ToolHost`.

use std::future::Future;

use brain_tools_events::{ContentBlock, Delivery, ErrorKind, ToolEvent};
use serde_json::{Value, json};

use crate::bindings::{Bound, Called};

/// One check's outcome.
#[derive(Debug)]
pub(crate) struct Check {
    name: String,
    ok: bool,
    note: String,
}

/// Every check of a run, printed as one JSON line.
#[derive(Debug, Default)]
pub(crate) struct Report {
    checks: Vec<Check>,
    /// The protocol revision the server was spoken to in.
    pub(crate) revision: Option<String>,
}

impl Report {
    /// Records a check: `Ok(note)` passes, `Err` fails with its message.
    pub(crate) fn record(&mut self, name: &str, outcome: anyhow::Result<String>) {
        let (ok, note) = match outcome {
            Ok(note) => (true, note),
            Err(error) => (false, format!("{error:#}")),
        };
        eprintln!("{} {name}: {note}", if ok { "ok  " } else { "FAIL" });
        self.checks.push(Check {
            name: name.to_owned(),
            ok,
            note,
        });
    }

    /// Runs and records a check.
    pub(crate) async fn check<F>(&mut self, name: &str, check: F)
    where
        F: Future<Output = anyhow::Result<String>>,
    {
        let outcome = check.await;
        self.record(name, outcome);
    }

    pub(crate) fn passed(&self) -> bool {
        !self.checks.is_empty() && self.checks.iter().all(|check| check.ok)
    }

    /// The JSON line xtask reads.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "ok": self.passed(),
            "revision": self.revision,
            "checks": self.checks.iter().map(|check| json!({
                "name": check.name, "ok": check.ok, "note": check.note,
            })).collect::<Vec<_>>(),
        })
    }
}

/// What to call on a peer for each standard check: (server tool, arguments).
#[derive(Debug, Clone)]
pub(crate) struct Profile {
    pub(crate) echo: (&'static str, Value, &'static str),
    pub(crate) progress: (&'static str, Value, usize),
    pub(crate) image: (&'static str, Value),
    pub(crate) structured: (&'static str, Value),
    /// The server tool to call for a tool error; `None` calls a tool the server does not
    /// have, through a binding that names it.
    pub(crate) error: Option<(&'static str, Value)>,
    /// A tool the server runs only as a task (2026-07-28 tasks extension, or the
    /// 2025-11-25 form's `execution.taskSupport` "required"), with the text it returns and
    /// the status messages its polls carry (a 2025-11-25 session only checks the refusal);
    /// `None`: the peer has none.
    pub(crate) task: Option<(&'static str, Value, &'static str, &'static [&'static str])>,
}

/// The binding that names a tool the server does not have.
pub(crate) const MISSING_TOOL: &str = "no-such-tool";

/// Runs the standard checks.
pub(crate) async fn standard(report: &mut Report, bound: &Bound, profile: &Profile) {
    let (tool, arguments, expected) = profile.echo.clone();
    report
        .check("echo", async {
            let called = bound.call("echo-1", tool, arguments).await;
            let result = called.ok()?;
            let text = texts(&result.content);
            anyhow::ensure!(
                text.contains(expected),
                "the text {text:?} does not contain {expected:?}"
            );
            Ok(format!("text {text:?}"))
        })
        .await;
    let (tool, arguments, steps) = profile.progress.clone();
    report
        .check("progress", async {
            let called = bound.call("progress-1", tool, arguments).await;
            called.ok()?;
            progress_in_order(&called, steps)
        })
        .await;
    let (tool, arguments) = profile.image.clone();
    report
        .check("image", async {
            let called = bound.call("image-1", tool, arguments).await;
            let result = called.ok()?;
            let image = result.content.iter().find_map(|block| match block {
                ContentBlock::Image { mime_type, data } => Some((mime_type, data)),
                _ => None,
            });
            let (mime_type, data) = image
                .ok_or_else(|| anyhow::anyhow!("no image block in {}", blocks(&result.content)))?;
            anyhow::ensure!(
                mime_type.starts_with("image/") && !data.is_empty(),
                "image block {mime_type} of {} base64 chars",
                data.len()
            );
            Ok(format!("{mime_type}, {} base64 chars", data.len()))
        })
        .await;
    let (tool, arguments) = profile.structured.clone();
    report
        .check("structured", async {
            let called = bound.call("structured-1", tool, arguments).await;
            let result = called.ok()?;
            match result.content.first() {
                Some(ContentBlock::Json { value }) if value.is_object() => {
                    Ok(format!("json {value}"))
                }
                _ => anyhow::bail!("the first block is not json: {}", blocks(&result.content)),
            }
        })
        .await;
    let (tool, arguments) = profile.error.clone().unwrap_or((MISSING_TOOL, json!({})));
    report
        .check("error", async {
            let called = bound.call("error-1", tool, arguments).await;
            let error = called.result.error.as_ref().ok_or_else(|| {
                anyhow::anyhow!("the call did not fail: {}", blocks(&called.result.content))
            })?;
            anyhow::ensure!(
                called.result.is_error
                    && error.kind == ErrorKind::ToolError
                    && error.delivery == Delivery::Delivered,
                "expected a delivered tool_error, got {} ({}): {}",
                error.kind.as_str(),
                error.delivery.as_str(),
                error.message
            );
            anyhow::ensure!(
                !called.result.content.is_empty(),
                "the server's error content was not kept"
            );
            Ok(format!("tool_error: {}", texts(&called.result.content)))
        })
        .await;
}

/// The tool that runs as a task: in the 2026-07-28 era its result comes through the
/// task, with the status messages of its polls as progress; in the 2025-11-25 era
/// (where the extension is not defined, and this host runs no task of the older form)
/// the server refuses it before running it, and the error says the tool needs tasks.
pub(crate) async fn task(report: &mut Report, bound: &Bound, profile: &Profile, revision: &str) {
    let Some((tool, arguments, expected, statuses)) = profile.task.clone() else {
        return;
    };
    report
        .check("task", async {
            let called = bound.call("task-1", tool, arguments).await;
            if revision != "2026-07-28" {
                let error = called
                    .result
                    .error
                    .as_ref()
                    .ok_or_else(|| anyhow::anyhow!("a 2025-11-25 session ran the task tool"))?;
                anyhow::ensure!(
                    error.kind == ErrorKind::Protocol && error.delivery == Delivery::NotSent,
                    "expected a refusal (protocol, not_sent), got {} ({}): {}",
                    error.kind.as_str(),
                    error.delivery.as_str(),
                    error.message
                );
                // The refusal says why, in words a person can act on.
                anyhow::ensure!(
                    error
                        .message
                        .contains("which this host supports in the 2026-07-28 era"),
                    "the refusal does not say the tool needs tasks: {}",
                    error.message
                );
                return Ok(format!("refused in {revision}: {}", error.message));
            }
            let result = called.ok()?;
            let text = texts(&result.content);
            anyhow::ensure!(text == expected, "the text {text:?} is not {expected:?}");
            let messages: Vec<&str> = called
                .events
                .iter()
                .filter_map(|event| match event {
                    ToolEvent::Progress(progress) => progress.message.as_deref(),
                    _ => None,
                })
                .collect();
            anyhow::ensure!(
                messages == statuses,
                "the polls' status messages were {messages:?}, not {statuses:?}"
            );
            Ok(format!("text {text:?} after the polls {messages:?}"))
        })
        .await;
}

/// Progress events came before the result, at least `steps` of them, never decreasing.
pub(crate) fn progress_in_order(called: &Called, steps: usize) -> anyhow::Result<String> {
    let mut values = Vec::new();
    let mut after_result = false;
    for event in &called.events {
        match event {
            ToolEvent::Progress(progress) => {
                anyhow::ensure!(!after_result, "a progress event came after the result");
                values.push(progress.progress);
            }
            ToolEvent::Result(_) => after_result = true,
            _ => {}
        }
    }
    anyhow::ensure!(after_result, "no tool.result event");
    anyhow::ensure!(
        values.len() >= steps,
        "{} progress event(s) before the result, expected {steps}",
        values.len()
    );
    anyhow::ensure!(
        values.windows(2).all(|pair| pair[0] <= pair[1]),
        "progress went backwards: {values:?}"
    );
    Ok(format!(
        "{} progress event(s) {values:?}, then the result",
        values.len()
    ))
}

/// The text blocks, joined.
pub(crate) fn texts(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The blocks, briefly.
pub(crate) fn blocks(content: &[ContentBlock]) -> String {
    let mut text = serde_json::to_string(content).unwrap_or_default();
    if text.len() > 300 {
        text.truncate(300);
        text.push('…');
    }
    text
}
