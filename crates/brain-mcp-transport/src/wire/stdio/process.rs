//! A stdio server's process: started in its own process group with a minimal
//! environment, its stderr drained into a bounded tail, its exit watched, and its group
//! killed when the call is over.
//!
//! What is reaped: the child (always, by a task that waits for it from the start) and
//! every process still in its group (SIGKILL when the call ends, or at once when the call
//! is dropped), which covers `npx`/`uvx` launchers and what they start. What is not: a
//! descendant that left the group (`setsid`, `setpgid`, a daemon): reaping those would take
//! a subreaper or a cgroup, which a library cannot impose on its host. Such a process may keep the
//! stdout or stderr pipe open; that no longer holds the call: the call ends when the
//! child has answered or exited, the stderr drain stops when the process is closed, and
//! our ends of the pipes are dropped.

use std::{
    collections::VecDeque,
    io,
    process::{ExitStatus, Stdio},
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
    time::Duration,
};

use tokio::{
    io::AsyncReadExt,
    process::{ChildStdin, ChildStdout},
    sync::watch,
};
use tokio_util::{sync::CancellationToken, task::TaskTracker};

use crate::endpoint::{Endpoint, StdioEndpoint};

/// How much of the child's stderr is kept for error messages.
const STDERR_TAIL: usize = 8 * 1024;
/// How many of its last non-empty stderr lines an error message quotes: the line that
/// says what is wrong is often a few lines above the last (a usage line, a stack frame).
const STDERR_LINES: usize = 5;
/// How many characters of each quoted line.
const STDERR_LINE_CHARS: usize = 200;
/// How long an error message waits for a dying child's exit, then for the rest of its
/// stderr.
const DETAIL_WAIT: Duration = Duration::from_millis(200);

/// Sends `true` when dropped.
struct SetOnDrop(watch::Sender<bool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        let _ = self.0.send(true);
    }
}

/// The variables a stdio server inherits from the host by default.
pub(crate) const INHERITED_ENV: &[&str] = StdioEndpoint::INHERITED_ENV;

/// A child process, its process group, its stderr tail and its exit. Dropping it kills
/// the group.
#[derive(Debug)]
pub(crate) struct Process {
    pid: Option<u32>,
    stdout: Option<ChildStdout>,
    stdin: Option<ChildStdin>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    /// Turns true when the stderr drain has ended (the pipe's end, or the close).
    drained: watch::Receiver<bool>,
    exit: watch::Receiver<Exit>,
    /// Ends the stderr drain: a descendant that left the group may hold the pipe.
    closed: CancellationToken,
    /// Tells the reaper, which owns the child, to kill it (where there are no process
    /// groups, this is the only kill; on Unix the group's SIGKILL comes first).
    kill: CancellationToken,
    killed: bool,
}

/// Whether the child has exited, and its status when `wait` could read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Exit {
    Running,
    Exited(Option<ExitStatus>),
}

impl Process {
    /// Starts the server. `alive` counts children not yet reaped; the reaper and the
    /// stderr drain run on `tasks`.
    pub(crate) fn spawn(
        endpoint: &StdioEndpoint,
        alive: &Arc<AtomicUsize>,
        tasks: &TaskTracker,
    ) -> io::Result<Self> {
        let mut command = tokio::process::Command::new(&endpoint.program);
        if !endpoint.inherit_env {
            command.env_clear();
            for name in INHERITED_ENV {
                if let Some(value) = std::env::var_os(name) {
                    command.env(name, value);
                }
            }
        }
        command
            .args(&endpoint.args)
            .envs(endpoint.env.iter().map(|(key, value)| (key, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        if let Some(cwd) = &endpoint.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn()?;
        alive.fetch_add(1, Ordering::Relaxed);
        let pid = child.id();
        let closed = CancellationToken::new();
        let stderr = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL)));
        let (drain_ended, drained) = watch::channel(false);
        if let Some(mut pipe) = child.stderr.take() {
            let tail = Arc::clone(&stderr);
            let closed = closed.clone();
            tasks.spawn(async move {
                // Whatever ends the drain, the tail is then as full as it gets.
                let _ended = SetOnDrop(drain_ended);
                let mut buffer = [0u8; 4096];
                loop {
                    let read = tokio::select! {
                        read = pipe.read(&mut buffer) => read,
                        () = closed.cancelled() => break,
                    };
                    let Ok(read @ 1..) = read else { break };
                    let mut tail = tail.lock().unwrap_or_else(PoisonError::into_inner);
                    tail.extend(&buffer[..read]);
                    let excess = tail.len().saturating_sub(STDERR_TAIL);
                    tail.drain(..excess);
                }
            });
        }
        let stdout = child.stdout.take();
        let stdin = child.stdin.take();
        // The reaper owns the child from the start: its exit is known as soon as it
        // happens, whatever holds the pipes.
        let (exited, exit) = watch::channel(Exit::Running);
        let reaped = Arc::clone(alive);
        let kill = CancellationToken::new();
        let killing = kill.clone();
        tasks.spawn(async move {
            let status = tokio::select! {
                status = child.wait() => status.ok(),
                () = killing.cancelled() => {
                    let _ = child.start_kill();
                    child.wait().await.ok()
                }
            };
            reaped.fetch_sub(1, Ordering::Relaxed);
            let _ = exited.send(Exit::Exited(status));
        });
        Ok(Self {
            pid,
            stdout,
            stdin,
            stderr,
            drained,
            exit,
            closed,
            kill,
            killed: false,
        })
    }

    /// The child's stdout and stdin, once.
    pub(crate) fn pipes(&mut self) -> (ChildStdout, ChildStdin) {
        (
            self.stdout.take().expect("stdout is piped"),
            self.stdin.take().expect("stdin is piped"),
        )
    }

    /// Whether the child has exited (and was reaped).
    pub(crate) fn has_exited(&self) -> bool {
        *self.exit.borrow() != Exit::Running
    }

    /// Resolves once the child has exited (and was reaped).
    pub(crate) fn exited(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut exit = self.exit.clone();
        async move {
            let _ = exit.wait_for(|exit| *exit != Exit::Running).await;
        }
    }

    /// `" (exit status 3; stderr: line | ... | last line)"`, or only the stderr lines
    /// while it runs: the last few non-empty lines, each one line of at most
    /// [`STDERR_LINE_CHARS`], the endpoint's secrets hidden (see [`Endpoint::quote`]).
    pub(crate) async fn stopped_detail(&self, endpoint: &Endpoint) -> String {
        // Give a dying child a moment to be reaped, so its status can be reported.
        let mut exit = self.exit.clone();
        let status =
            tokio::time::timeout(DETAIL_WAIT, exit.wait_for(|exit| *exit != Exit::Running))
                .await
                .ok()
                .and_then(|exit| match exit.ok().as_deref() {
                    Some(Exit::Exited(status)) => *status,
                    _ => None,
                });
        if status.is_some() {
            // The child is gone, but what it wrote last may still be in the pipe: the
            // drain reads it to the pipe's end (a descendant that holds the pipe is
            // waited for only briefly).
            let mut drained = self.drained.clone();
            let _ = tokio::time::timeout(DETAIL_WAIT, drained.wait_for(|ended| *ended)).await;
        }
        let tail = {
            let tail = self.stderr.lock().unwrap_or_else(PoisonError::into_inner);
            let bytes: Vec<u8> = tail.iter().copied().collect();
            // A full tail starts inside a line: that part is not quoted.
            let cut = tail.len() == STDERR_TAIL;
            drop(tail);
            last_lines(&String::from_utf8_lossy(&bytes), cut, endpoint)
        };
        match (status.map(ended), tail) {
            (Some(status), Some(line)) => format!(" ({status}; stderr: {line})"),
            (Some(status), None) => format!(" ({status})"),
            (None, Some(line)) => format!(" (stderr: {line})"),
            (None, None) => String::new(),
        }
    }

    /// SIGKILL to the whole process group (the child and what it started in its group);
    /// without process groups (not Unix), the child alone is killed.
    fn kill_group(&mut self) {
        self.killed = true;
        #[cfg(unix)]
        if let Some(pgid) = self
            .pid
            .and_then(|pid| i32::try_from(pid).ok())
            .map(nix::unistd::Pid::from_raw)
        {
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        }
        self.kill.cancel();
    }

    /// Closes stdin (the server sees EOF), waits up to `grace` for the child, then kills
    /// its process group and waits for the reaper.
    pub(crate) async fn close(mut self, grace: Duration) {
        drop(self.stdin.take());
        let exited = self.exited();
        let _ = tokio::time::timeout(grace, self.exited()).await;
        // Always: the child may be gone while its grandchildren live on.
        self.kill_group();
        exited.await;
        self.closed.cancel();
    }
}

/// How a process ended, for a person: `exit status: 1`; `killed by signal 11
/// (SIGSEGV): it crashed`; `exit status: 139, as a shell reports a command killed by
/// signal 11 (SIGSEGV): it crashed` (a launcher such as `sh -c` or `npx` between us and
/// the server passes its child's death on so).
fn ended(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt as _;
        ended_as(status.code(), status.signal(), status.core_dumped())
    }
    #[cfg(not(unix))]
    status.to_string()
}

/// [`ended`], from the status's parts.
#[cfg(unix)]
fn ended_as(code: Option<i32>, signal: Option<i32>, core_dumped: bool) -> String {
    let core = if core_dumped { ", core dumped" } else { "" };
    match (code, signal) {
        (_, Some(signal)) => format!("killed by {}{core}", signal_name(signal)),
        (Some(code), None) => match code
            .checked_sub(128)
            .filter(|_| code > 128)
            .and_then(|signal| signal_meaning(signal).map(|_| signal))
        {
            Some(signal) => format!(
                "exit status: {code}, as a shell reports a command killed by {}",
                signal_name(signal)
            ),
            None => format!("exit status: {code}"),
        },
        (None, None) => "an unknown status".to_owned(),
    }
}

/// `signal 11 (SIGSEGV): it crashed`, or as much of it as is known.
#[cfg(unix)]
fn signal_name(signal: i32) -> String {
    let name = nix::sys::signal::Signal::try_from(signal)
        .map(|known| format!(" ({})", known.as_str()))
        .unwrap_or_default();
    match signal_meaning(signal) {
        Some(meaning) => format!("signal {signal}{name}: {meaning}"),
        None => format!("signal {signal}{name}"),
    }
}

/// What a signal that ends a process usually means.
#[cfg(unix)]
fn signal_meaning(signal: i32) -> Option<&'static str> {
    use nix::sys::signal::Signal;
    Some(match Signal::try_from(signal).ok()? {
        Signal::SIGSEGV | Signal::SIGBUS | Signal::SIGILL | Signal::SIGFPE => "it crashed",
        Signal::SIGABRT => "it aborted",
        Signal::SIGKILL => "something killed it, often the system for want of memory",
        Signal::SIGTERM | Signal::SIGINT | Signal::SIGHUP | Signal::SIGQUIT => {
            "something stopped it"
        }
        Signal::SIGPIPE => "it wrote to a pipe that was closed",
        _ => return None,
    })
}

/// The last [`STDERR_LINES`] non-empty lines of `text`, quoted, oldest first, joined
/// with ` | `; `cut`: the first line is a fragment and is left out.
fn last_lines(text: &str, cut: bool, endpoint: &Endpoint) -> Option<String> {
    let mut lines: Vec<&str> = text.lines().skip(usize::from(cut)).collect();
    lines.retain(|line| !line.trim().is_empty());
    let from = lines.len().saturating_sub(STDERR_LINES);
    let quoted: Vec<String> = lines[from..]
        .iter()
        .map(|line| endpoint.quote(line.trim(), STDERR_LINE_CHARS))
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(" | "))
}

impl Drop for Process {
    fn drop(&mut self) {
        // The call was dropped (or its close ran): kill now; the reaper reaps.
        if !self.killed {
            self.kill_group();
        }
        self.closed.cancel();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How a process ended, as a person reads it.
    #[cfg(unix)]
    #[test]
    fn how_a_process_ended() {
        // (code, signal, core dumped, text)
        let cases = [
            (Some(1), None, false, "exit status: 1"),
            (Some(0), None, false, "exit status: 0"),
            (
                Some(139),
                None,
                false,
                "exit status: 139, as a shell reports a command killed by signal 11 (SIGSEGV): it crashed",
            ),
            (
                Some(137),
                None,
                false,
                "exit status: 137, as a shell reports a command killed by signal 9 (SIGKILL): \
                 something killed it, often the system for want of memory",
            ),
            // Not a signal's: a status of the program's own.
            (Some(200), None, false, "exit status: 200"),
            (Some(128), None, false, "exit status: 128"),
            (
                None,
                Some(11),
                true,
                "killed by signal 11 (SIGSEGV): it crashed, core dumped",
            ),
            (
                None,
                Some(6),
                false,
                "killed by signal 6 (SIGABRT): it aborted",
            ),
            (None, Some(10), false, "killed by signal 10 (SIGUSR1)"),
            (None, Some(99), false, "killed by signal 99"),
        ];
        for (code, signal, core, text) in cases {
            assert_eq!(ended_as(code, signal, core), text, "{code:?} {signal:?}");
        }
    }

    #[test]
    fn the_last_lines_are_quoted_with_real_secrets_hidden() {
        let endpoint = Endpoint::Stdio(
            StdioEndpoint::new("server", ["--db-path", "/srv/notes.sqlite"])
                .env("API_KEY", "sk-live-0123456789"),
        );
        let text = "starting\n\nusing key sk-live-0123456789\nerror: cannot open \
                    /srv/notes.sqlite\n  at open (db.js:1)\n  at main (index.js:9)\n\n\
                    exiting\x1b[31m\n";
        assert_eq!(
            last_lines(text, false, &endpoint).as_deref(),
            Some(
                "using key <redacted> | error: cannot open /srv/notes.sqlite | at open \
                 (db.js:1) | at main (index.js:9) | exiting [31m"
            )
        );
        assert_eq!(
            last_lines("ial line\nwhole line\n", true, &endpoint).as_deref(),
            Some("whole line")
        );
        assert_eq!(last_lines(" \n\n", false, &endpoint), None);
        let long = "x".repeat(10 * STDERR_LINE_CHARS);
        let quoted = last_lines(&format!("{long}\n{long}"), false, &endpoint).unwrap();
        assert!(
            quoted.chars().count() <= 2 * (STDERR_LINE_CHARS + 1) + 3,
            "{quoted}"
        );
    }
}
