//! Paths and process helpers shared by the subcommands.

use std::{
    io::{BufRead, BufReader, Write},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::mpsc,
    time::Duration,
};

use anyhow::Context as _;

/// The workspace root (the parent of this crate).
pub(crate) fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// The cargo target directory.
pub(crate) fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                workspace_root().join(dir)
            }
        }
        None => workspace_root().join("target"),
    }
}

/// The cargo that runs us (or `cargo`).
pub(crate) fn cargo() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.current_dir(workspace_root());
    command
}

/// Runs a command to completion with inherited output; fails on a non-zero exit.
pub(crate) fn run(command: &mut Command) -> anyhow::Result<()> {
    let shown = show(command);
    eprintln!("$ {shown}");
    let status = command
        .status()
        .with_context(|| format!("cannot run {shown}"))?;
    anyhow::ensure!(status.success(), "{shown} failed ({status})");
    Ok(())
}

/// Runs a command and returns its stdout; fails on a non-zero exit (with its stderr).
pub(crate) fn output(command: &mut Command) -> anyhow::Result<String> {
    let shown = show(command);
    let output = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {shown}"))?;
    anyhow::ensure!(
        output.status.success(),
        "{shown} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Whether a program can be started (`PROGRAM --version` exits 0).
pub(crate) fn works(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// A command line for messages.
pub(crate) fn show(command: &Command) -> String {
    let mut shown = command.get_program().to_string_lossy().into_owned();
    for arg in command.get_args() {
        shown.push(' ');
        shown.push_str(&arg.to_string_lossy());
    }
    shown
}

/// A server process, killed (and reaped) when dropped.
#[derive(Debug)]
pub(crate) struct Server {
    child: Child,
    /// What it printed after `LISTENING `: its URL.
    pub(crate) url: String,
}

impl Server {
    /// Starts a server that prints `LISTENING <url>` on stdout once it accepts
    /// connections; its stderr goes to `log`, and the rest of its stdout to
    /// `<log>.stdout` (drained as it comes, so the server never blocks on a full pipe).
    pub(crate) fn start(command: Command, log: &Path, within: Duration) -> anyhow::Result<Self> {
        Self::start_until(command, "LISTENING ", log, within)
    }

    /// [`start`](Self::start) for a server whose ready line starts with `ready` (its URL
    /// follows).
    pub(crate) fn start_until(
        mut command: Command,
        ready: &'static str,
        log: &Path,
        within: Duration,
    ) -> anyhow::Result<Self> {
        let shown = show(&command);
        let stderr = std::fs::File::create(log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .with_context(|| format!("cannot start {shown}"))?;
        let stdout = child.stdout.take().context("no stdout pipe")?;
        let (tx, rx) = mpsc::channel();
        let mut rest = std::fs::File::create(stdout_log(log))
            .with_context(|| format!("cannot create {}", stdout_log(log).display()))?;
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if !sent && let Some(url) = line.strip_prefix(ready) {
                    let _ = tx.send(url.trim().to_owned());
                    sent = true;
                } else {
                    let _ = writeln!(rest, "{line}");
                }
            }
        });
        match rx.recv_timeout(within) {
            Ok(url) => Ok(Self { child, url }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                let tail = std::fs::read_to_string(log).unwrap_or_default();
                let tail: String = tail
                    .lines()
                    .rev()
                    .take(15)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join("\n");
                anyhow::bail!(
                    "{shown} did not print {:?} within {} s; its stderr ({}):\n{tail}",
                    ready.trim(),
                    within.as_secs(),
                    log.display()
                )
            }
        }
    }
}

impl Server {
    /// The server's process id (the root of its process tree).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

/// Where [`Server::start`] keeps a server's stdout after its LISTENING line.
pub(crate) fn stdout_log(log: &Path) -> PathBuf {
    let mut name = log.as_os_str().to_owned();
    name.push(".stdout");
    PathBuf::from(name)
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
