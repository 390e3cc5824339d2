//! What a test process holds: open file descriptors and child processes.

use std::time::{Duration, Instant};

/// What each open file descriptor refers to (`socket:[inode]`, `pipe:[inode]`, a path).
fn fd_targets() -> Vec<String> {
    std::fs::read_dir("/proc/self/fd")
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| std::fs::read_link(entry.path()).ok())
                .map(|target| target.to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// TCP sockets of this network namespace: (inode, local port, listening).
fn tcp_sockets() -> Vec<(String, u16, bool)> {
    ["/proc/self/net/tcp", "/proc/self/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1)
                .filter_map(|line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    let port = fields.get(1)?.rsplit(':').next()?;
                    Some((
                        (*fields.get(9)?).to_owned(),
                        u16::from_str_radix(port, 16).ok()?,
                        *fields.get(3)? == "0A",
                    ))
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Open file descriptors of this process, but the server side of connections accepted by
/// a listener of this process (the in-process test servers close those on their own
/// schedule, e.g. when a handler a client gave up on ends), as what each refers to.
pub(crate) fn client_fds() -> Vec<String> {
    let targets = fd_targets();
    let sockets = tcp_sockets();
    let ours = |inode: &str| targets.iter().any(|t| *t == format!("socket:[{inode}]"));
    let listening: Vec<u16> = sockets
        .iter()
        .filter(|(inode, _, listen)| *listen && ours(inode))
        .map(|(_, port, _)| *port)
        .collect();
    let accepted: Vec<String> = sockets
        .iter()
        .filter(|(_, port, listen)| !*listen && listening.contains(port))
        .map(|(inode, ..)| format!("socket:[{inode}]"))
        .collect();
    targets
        .into_iter()
        .filter(|target| !accepted.contains(target))
        .collect()
}

/// [`client_fds`] once the servers this process just started hold still: a wiremock
/// server opens its runtime (an epoll, an eventfd, a copy of its listener) on a thread of
/// its own after `MockServer::start` has returned, so a baseline taken at once can miss
/// them. Reads until the count has not changed for 250 ms (at most 5 s).
pub(crate) async fn settled_fds() -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut fds = client_fds();
    let mut still_since = Instant::now();
    while Instant::now() < deadline && still_since.elapsed() < Duration::from_millis(250) {
        tokio::time::sleep(Duration::from_millis(25)).await;
        let now = client_fds();
        if now.len() != fds.len() {
            still_since = Instant::now();
        }
        fds = now;
    }
    fds
}

/// Waits (up to `timeout`) until this process holds no more file descriptors than it did
/// when `before` was taken (by [`client_fds`]); panics naming what it holds in excess, by
/// what each descriptor refers to and how many more of it there are (names such as
/// `anon_inode:[eventfd]` or `/dev/null` repeat, so a set difference would miss them).
pub(crate) async fn assert_fds_settle(before: &[String], timeout: Duration) {
    let deadline = Instant::now() + timeout;
    let mut now = client_fds();
    while now.len() > before.len() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        now = client_fds();
    }
    if now.len() <= before.len() {
        return;
    }
    let mut excess: std::collections::BTreeMap<&str, isize> = std::collections::BTreeMap::new();
    for target in &now {
        *excess.entry(target.as_str()).or_default() += 1;
    }
    for target in before {
        *excess.entry(target.as_str()).or_default() -= 1;
    }
    excess.retain(|_, n| *n > 0);
    panic!(
        "file descriptors: {} before, {} after; in excess: {excess:?}; threads: {:?}",
        before.len(),
        now.len(),
        threads()
    );
}

/// The names of this process's threads, with how many have each name.
fn threads() -> std::collections::BTreeMap<String, usize> {
    let mut names = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir("/proc/self/task")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
    {
        if let Ok(name) = std::fs::read_to_string(entry.path().join("comm")) {
            *names.entry(name.trim().to_owned()).or_default() += 1;
        }
    }
    names
}

/// Children of this process (running or zombie).
pub(crate) fn children() -> usize {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|entry| {
            entry
                .file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
        .filter(|stat| {
            // pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1).map(|ppid| ppid == me))
                .unwrap_or(false)
        })
        .count()
}

/// Whether a process exists and is not a zombie.
pub(crate) fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z")
        })
        .unwrap_or(false)
}

/// Waits until `measure` is at most `target`, or `timeout`; returns the last measure.
pub(crate) async fn settle(measure: impl Fn() -> usize, target: usize, timeout: Duration) -> usize {
    let deadline = Instant::now() + timeout;
    loop {
        let now = measure();
        if now <= target || Instant::now() > deadline {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Resident memory of this process, in KiB.
pub(crate) fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with("VmRSS:"))
                .and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The tests of this binary measure process-wide things (fds, children, memory): they
/// run one at a time.
pub(crate) async fn serial() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::OnceLock<tokio::sync::Mutex<()>> = std::sync::OnceLock::new();
    LOCK.get_or_init(|| tokio::sync::Mutex::new(()))
        .lock()
        .await
}
