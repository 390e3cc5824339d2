//! Tools that run as tasks (the 2026-07-28 tasks extension, SEP-2663), on rmcp's
//! [`TaskManager`]: `task` always runs as one, `maybe_task` only when the client declares
//! the extension. Neither is listed (listings stay what other tests expect); a server of
//! the 2026-07-28 era declares the extension in `server/discover`. What a task does is scripted by the call's arguments, and when it ends
//! is counted in polls, so that a test knows how many requests a call takes:
//!
//! - `polls` (default 1): the `tasks/get` that sees the task end (or ask for input);
//!   `never` tasks never end, until cancelled;
//! - `outcome`: `ok` (text `done`, or `bytes` letters), `tool_error` (`isError: true`),
//!   `fail` (the task fails with JSON-RPC error -32603), `cancelled` (the server cancels it),
//!   `never`, `input` (it asks for input, `input_required`, then answers `answered: <action>`);
//! - `poll_ms` (default 10): the `pollIntervalMs` it suggests; `ttl_ms` (default 60000, 0
//!   for none): its `ttlMs`;
//! - `at_ttl`: what the server does once the task's `ttlMs` passed: `fail` (the default,
//!   rmcp's `TaskManager`: the next poll sees it `failed`, -32603 "task expired"),
//!   `forget` (it deletes the task: the next poll is refused with -32602 "unknown task"),
//!   or `nothing` (the time to live is only advertised: the task runs on);
//! - `flaky` (default 0): over HTTP, the first `flaky` polls fail on the wire, the odd ones
//!   with HTTP 503 and the even ones with the connection dropped before any answer; they
//!   do not count as polls;
//! - `answer` (over HTTP): the `tasks/get` that would see the task end is answered with
//!   what breaks the protocol instead, while the task keeps running on the server:
//!   `other_task` (a completed task with a result, under another `taskId`), `no_result`
//!   (`completed` without a `result`), `unknown_status` (a status no revision defines),
//!   `rpc_error` (JSON-RPC error -32602, as for a task the server does not know);
//! - `progress` (default 0): progress notifications sent on the `tools/call` itself, before
//!   the handle (the extension has no progress for tasks); `status` (default false): a
//!   status message on every poll, `poll <n> of <polls>` (the extension's way to say how a
//!   task is doing).
//!
//! The poll that sees a task end answers only once the task has ended: rmcp records a
//! task's end just after its work returns, so the handler waits for that (briefly) rather
//! than leave the count of polls to chance.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, CallToolResult, ContentBlock, CreateTaskResult, ElicitRequest, ErrorCode,
    GetTaskResult, InputRequest, JsonObject, ProgressNotificationParam, TaskStatus,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::counters::Stats;

/// How long a poll or an update waits for the task to settle (it takes microseconds).
const SETTLE: Duration = Duration::from_secs(2);

/// What the task tools share: the manager, and each running task's gate.
#[derive(Default)]
pub(crate) struct Tasks {
    manager: TaskManager,
    gates: Mutex<HashMap<String, Gate>>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks").finish_non_exhaustive()
    }
}

/// When a task may end.
struct Gate {
    /// `at_ttl: forget`: when the server deletes the task.
    forget_at: Option<std::time::Instant>,
    /// The `ttlMs` each answer about the task advertises (`at_ttl: nothing`, where the
    /// task manager knows none).
    advertised_ttl: Option<u64>,
    polls: u64,
    flaky: u64,
    flaked: u64,
    needed: Option<u64>,
    release: Option<oneshot::Sender<()>>,
    status: bool,
    lie: Option<Lie>,
    context: TaskContext,
}

/// How a scripted task ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Ok,
    ToolError,
    Fail,
    Cancelled,
    Never,
    Input,
}

/// An answer to `tasks/get` that breaks the protocol (script `answer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lie {
    /// A completed task, with a result, under another task id.
    OtherTask,
    /// `completed` without a `result`.
    NoResult,
    /// A status no revision of the extension defines.
    UnknownStatus,
    /// A JSON-RPC error, as for a task the server does not know.
    RpcError,
}

impl Lie {
    /// The JSON-RPC message answering the `tasks/get` of task `task_id` whose id is `id`.
    pub(crate) fn answer(self, id: &Value, task_id: &str) -> Value {
        let task = |status: &str| {
            serde_json::json!({
                "resultType": "complete",
                "taskId": task_id,
                "status": status,
                "createdAt": "2026-01-01T00:00:00Z",
                "lastUpdatedAt": "2026-01-01T00:00:01Z",
                "ttlMs": 60_000,
                "pollIntervalMs": 10,
            })
        };
        let result = match self {
            Lie::OtherTask => {
                let mut result = task("completed");
                result["taskId"] = Value::from(format!("{task_id}-other"));
                result["result"] = serde_json::json!({
                    "content": [{"type": "text", "text": "another task's result"}],
                    "isError": false,
                });
                result
            }
            Lie::NoResult => task("completed"),
            Lie::UnknownStatus => task("paused"),
            Lie::RpcError => {
                return serde_json::json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "error": {"code": -32602, "message": "unknown task"},
                });
            }
        };
        serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result})
    }
}

/// What the server does once a task's `ttlMs` passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AtTtl {
    Fail,
    Forget,
    Nothing,
}

/// The script of one task, from the call's arguments.
#[derive(Debug, Clone)]
pub(crate) struct Script {
    at_ttl: AtTtl,
    polls: u64,
    outcome: Outcome,
    bytes: Option<usize>,
    poll_ms: u64,
    ttl_ms: Option<u64>,
    progress: u64,
    status: bool,
    flaky: u64,
    lie: Option<Lie>,
}

impl Script {
    pub(crate) fn parse(args: &JsonObject) -> Result<Self, ErrorData> {
        let number = |key: &str, default: u64| match args.get(key) {
            None => Ok(default),
            Some(value) => value.as_u64().ok_or_else(|| {
                ErrorData::invalid_params(format!("{key} must be a non-negative integer"), None)
            }),
        };
        let outcome = match args.get("outcome").map(|v| v.as_str()) {
            None | Some(Some("ok")) => Outcome::Ok,
            Some(Some("tool_error")) => Outcome::ToolError,
            Some(Some("fail")) => Outcome::Fail,
            Some(Some("cancelled")) => Outcome::Cancelled,
            Some(Some("never")) => Outcome::Never,
            Some(Some("input")) => Outcome::Input,
            _ => {
                return Err(ErrorData::invalid_params(
                    "outcome must be ok, tool_error, fail, cancelled, never or input",
                    None,
                ));
            }
        };
        let lie = match args.get("answer").map(|v| v.as_str()) {
            None => None,
            Some(Some("other_task")) => Some(Lie::OtherTask),
            Some(Some("no_result")) => Some(Lie::NoResult),
            Some(Some("unknown_status")) => Some(Lie::UnknownStatus),
            Some(Some("rpc_error")) => Some(Lie::RpcError),
            _ => {
                return Err(ErrorData::invalid_params(
                    "answer must be other_task, no_result, unknown_status or rpc_error",
                    None,
                ));
            }
        };
        let at_ttl = match args.get("at_ttl").map(|v| v.as_str()) {
            None | Some(Some("fail")) => AtTtl::Fail,
            Some(Some("forget")) => AtTtl::Forget,
            Some(Some("nothing")) => AtTtl::Nothing,
            _ => {
                return Err(ErrorData::invalid_params(
                    "at_ttl must be fail, forget or nothing",
                    None,
                ));
            }
        };
        let bytes = match args.get("bytes") {
            None => None,
            Some(_) => Some(usize::try_from(number("bytes", 0)?.min(256 << 20)).unwrap_or(0)),
        };
        Ok(Self {
            at_ttl,
            polls: number("polls", 1)?.max(1),
            outcome,
            bytes,
            poll_ms: number("poll_ms", 10)?,
            ttl_ms: Some(number("ttl_ms", 60_000)?).filter(|&ttl| ttl > 0),
            progress: number("progress", 0)?.min(10_000),
            status: args.get("status").and_then(Value::as_bool).unwrap_or(false),
            flaky: number("flaky", 0)?,
            lie,
        })
    }
}

/// Counts a running task in `tasks_running` until its work ends.
struct Running(Arc<Stats>);

impl Running {
    fn new(stats: Arc<Stats>) -> Self {
        stats.update(|c| c.tasks_running += 1);
        Self(stats)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0
            .update(|c| c.tasks_running = c.tasks_running.saturating_sub(1));
    }
}

impl Tasks {
    /// Starts the task a call asked for, after its progress notifications, and answers the
    /// call with its handle.
    pub(crate) async fn start(
        &self,
        script: Script,
        stats: Arc<Stats>,
        cx: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if let Some(token) = cx.meta.get_progress_token() {
            for i in 1..=script.progress {
                let param = ProgressNotificationParam::new(token.clone(), i as f64)
                    .with_total(script.progress as f64)
                    .with_message(format!("preparing {i}"));
                let _ = cx.peer.notify_progress(param).await;
            }
        }
        let (release, released) = oneshot::channel();
        // Only `fail` leaves the time to live to the task manager, which fails the task
        // once it passed; the others keep it from the manager and play their own part.
        let managed_ttl = script.ttl_ms.filter(|_| script.at_ttl == AtTtl::Fail);
        let mut options = TaskOptions::new()
            .with_ttl_ms(managed_ttl)
            .with_poll_interval_ms(script.poll_ms);
        if script.status {
            options = options.with_status_message("started");
        }
        let mut context = None;
        let work_script = script.clone();
        let task = self.manager.spawn(options, |ctx| {
            context = Some(ctx.clone());
            Box::pin(work(ctx, work_script, released, Running::new(stats)))
        });
        let context = context.unwrap_or_else(|| unreachable!("spawn hands the context over"));
        let mut task = task;
        task.ttl_ms = script.ttl_ms;
        let forget_at = script
            .ttl_ms
            .filter(|_| script.at_ttl == AtTtl::Forget)
            .map(|ttl| std::time::Instant::now() + Duration::from_millis(ttl));
        self.lock().insert(
            task.task_id.clone(),
            Gate {
                forget_at,
                advertised_ttl: script.ttl_ms,
                polls: 0,
                flaky: script.flaky,
                flaked: 0,
                needed: (script.outcome != Outcome::Never).then_some(script.polls),
                release: Some(release),
                status: script.status,
                lie: script.lie,
                context,
            },
        );
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Gate>> {
        self.gates.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether this `tasks/get` of task `id` is to fail on the wire: the how-manieth
    /// failure it is (from 1), while the script's `flaky` lasts.
    pub(crate) fn flake(&self, id: &str) -> Option<u64> {
        let mut gates = self.lock();
        let gate = gates.get_mut(id)?;
        (gate.flaked < gate.flaky).then(|| {
            gate.flaked += 1;
            gate.flaked
        })
    }

    /// Whether this `tasks/get` of task `id` is to be answered with the script's lie:
    /// the poll that would see the task end, counted as a poll; the task keeps running.
    pub(crate) fn lie(&self, id: &str) -> Option<Lie> {
        let mut gates = self.lock();
        let gate = gates.get_mut(id)?;
        let lie = gate.lie?;
        if gate.needed.is_some_and(|needed| gate.polls + 1 >= needed) {
            gate.polls += 1;
            Some(lie)
        } else {
            None
        }
    }

    /// `tasks/get`: counts the poll; the poll the script names sees the task end.
    pub(crate) async fn get(&self, id: &str) -> Result<GetTaskResult, ErrorData> {
        let forgotten = self.lock().get(id).is_some_and(|gate| {
            gate.forget_at
                .is_some_and(|at| std::time::Instant::now() >= at)
        });
        if forgotten {
            // Deleted past its time to live, as the extension lets a server do: its work
            // stops, and the task is no longer known.
            let _ = self.manager.cancel_task(id);
            self.lock().remove(id);
            return Err(ErrorData::invalid_params(
                format!("unknown task: {id}"),
                None,
            ));
        }
        let mut advertised_ttl = None;
        let release = {
            let mut gates = self.lock();
            match gates.get_mut(id) {
                Some(gate) => {
                    advertised_ttl = gate.advertised_ttl;
                    gate.polls += 1;
                    if gate.status {
                        let of = gate
                            .needed
                            .map_or_else(|| "?".to_owned(), |n| n.to_string());
                        gate.context
                            .set_status_message(format!("poll {} of {of}", gate.polls));
                    }
                    gate.needed
                        .filter(|&needed| gate.polls >= needed)
                        .and_then(|_| gate.release.take())
                }
                None => None,
            }
        };
        if let Some(release) = release {
            let _ = release.send(());
            self.settle(id, |status| status != TaskStatus::Working)
                .await;
        }
        let mut task = self.manager.get_task(id)?;
        if task.status().is_terminal() {
            self.lock().remove(id);
        }
        if advertised_ttl.is_some() {
            task.task.ttl_ms = advertised_ttl;
        }
        Ok(GetTaskResult::new(task))
    }

    /// `tasks/update`: hands the answers to the task, which then ends (or asks again).
    pub(crate) async fn update(
        &self,
        id: &str,
        responses: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), ErrorData> {
        self.manager.update_task(id, responses)?;
        self.settle(id, |status| status != TaskStatus::Working)
            .await;
        Ok(())
    }

    /// `tasks/cancel`: the task's work stops (cooperatively) and settles as cancelled.
    pub(crate) async fn cancel(&self, id: &str) -> Result<(), ErrorData> {
        self.manager.cancel_task(id)?;
        self.lock().remove(id);
        Ok(())
    }

    /// Waits (briefly) until the task's status satisfies `done`.
    async fn settle(&self, id: &str, done: impl Fn(TaskStatus) -> bool) {
        let wait = async {
            loop {
                match self.manager.get_task(id) {
                    Ok(task) if !done(task.status()) => tokio::task::yield_now().await,
                    _ => return,
                }
            }
        };
        let _ = tokio::time::timeout(SETTLE, wait).await;
    }

    /// Ends every task (the server stops).
    pub(crate) fn shutdown(&self) {
        self.manager.shutdown();
        self.lock().clear();
    }
}

/// A scripted task's work: waits for its poll, then ends as the script says.
async fn work(
    ctx: TaskContext,
    script: Script,
    released: oneshot::Receiver<()>,
    _running: Running,
) -> Result<CallToolResult, TaskExit> {
    tokio::select! {
        released = released => {
            if released.is_err() {
                // The gate was dropped: the server stopped.
                return Err(TaskExit::Cancelled);
            }
        }
        () = ctx.cancelled() => return Err(TaskExit::Cancelled),
    }
    match script.outcome {
        Outcome::Ok => Ok(CallToolResult::success(vec![ContentBlock::text(
            script
                .bytes
                .map_or_else(|| "done".to_owned(), crate::tools::ascii_text),
        )])),
        Outcome::ToolError => Ok(CallToolResult::error(vec![ContentBlock::text(
            "the task's tool failed on purpose",
        )])),
        Outcome::Fail => Err(TaskExit::Error(ErrorData::new(
            ErrorCode::INTERNAL_ERROR,
            "the task failed on purpose",
            None,
        ))),
        Outcome::Cancelled => Err(TaskExit::Cancelled),
        Outcome::Never => {
            ctx.cancelled().await;
            Err(TaskExit::Cancelled)
        }
        Outcome::Input => {
            let request =
                InputRequest::Elicitation(ElicitRequest::new(crate::tools::elicit_params()));
            let answer = ctx.request_input("confirm", request).await?;
            let action = answer
                .get("action")
                .and_then(Value::as_str)
                .unwrap_or("none")
                .to_owned();
            Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                "answered: {action}"
            ))]))
        }
    }
}
