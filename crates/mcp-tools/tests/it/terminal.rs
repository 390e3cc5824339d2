//! What a person sees at a terminal: `mcp-tools` on a pseudo-terminal of 80 columns
//! (util-linux `script`), Ctrl-C typed while the spinner or the bar is drawn, and the
//! screen that is left, replayed by a small terminal of our own ([`Screen`]).

use std::time::Duration;

use brain_mcp_testkit::Era;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{config, discovered, require, server};

/// The terminal's size.
const COLUMNS: usize = 80;
const ROWS: usize = 24;

/// Runs `mcp-tools args` on a terminal of [`COLUMNS`] x [`ROWS`]; once the terminal shows
/// `shown`, types Ctrl-C; returns everything the terminal was sent, to the end.
async fn interrupted_once_shown(args: &[&str], shown: &str) -> Vec<u8> {
    require(
        "script",
        "these tests run mcp-tools on a pseudo-terminal with it",
        "apt-get install bsdutils",
    );
    let quoted: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_mcp-tools"))
        .chain(args.iter().copied())
        .map(|arg| format!("'{}'", arg.replace('\'', r"'\''")))
        .collect();
    let line = format!("stty cols {COLUMNS} rows {ROWS}; exec {}", quoted.join(" "));
    let mut child = tokio::process::Command::new("script")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .env_remove("NO_COLOR")
        .env("TERM", "xterm")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("script runs");
    let mut keys = child.stdin.take().unwrap();
    let mut screen = child.stdout.take().unwrap();
    let read = async {
        let mut sent = Vec::new();
        let mut typed = false;
        let mut buffer = [0u8; 4096];
        loop {
            let n = screen.read(&mut buffer).await.unwrap();
            if n == 0 {
                break sent;
            }
            sent.extend_from_slice(&buffer[..n]);
            if !typed && String::from_utf8_lossy(&sent).contains(shown) {
                keys.write_all(b"\x03").await.unwrap();
                keys.flush().await.unwrap();
                typed = true;
            }
        }
    };
    let sent = tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("mcp-tools ends after Ctrl-C");
    let _ = child.wait().await;
    assert!(
        String::from_utf8_lossy(&sent).contains(shown),
        "the terminal never showed {shown:?}: {}",
        String::from_utf8_lossy(&sent)
    );
    sent
}

/// A terminal as far as these tests need one: printable text with the wrap a terminal
/// does at its last column, carriage return, line feed, backspace, and the CSI sequences
/// that move the cursor and erase; other sequences are read and ignored.
struct Screen {
    lines: Vec<Vec<char>>,
    row: usize,
    /// `COLUMNS` when a character was written in the last column: the next one wraps.
    column: usize,
}

impl Screen {
    fn replay(bytes: &[u8]) -> Vec<String> {
        let mut screen = Screen {
            lines: vec![Vec::new()],
            row: 0,
            column: 0,
        };
        let text = String::from_utf8_lossy(bytes);
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' => screen.column = 0,
                '\n' => screen.down(1),
                '\x08' => screen.column = screen.column.min(COLUMNS - 1).saturating_sub(1),
                '\x1b' => match chars.next() {
                    Some('[') => {
                        let mut parameters = String::new();
                        let mut last = None;
                        for c in chars.by_ref() {
                            if ('\x40'..='\x7e').contains(&c) {
                                last = Some(c);
                                break;
                            }
                            parameters.push(c);
                        }
                        let n = parameters.trim_start_matches('?').parse().unwrap_or(0);
                        match last {
                            Some('A') => screen.row = screen.row.saturating_sub(n.max(1)),
                            Some('B') => screen.down(n.max(1)),
                            Some('C') => {
                                screen.column = (screen.column + n.max(1)).min(COLUMNS - 1)
                            }
                            Some('D') => screen.column = screen.column.saturating_sub(n.max(1)),
                            Some('G') => screen.column = n.saturating_sub(1),
                            Some('K') => screen.erase(n),
                            _ => {}
                        }
                    }
                    // OSC: up to BEL or ST.
                    Some(']') => {
                        while let Some(c) = chars.next() {
                            if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                                break;
                            }
                        }
                    }
                    _ => {}
                },
                c if c.is_control() => {}
                c => screen.put(c),
            }
        }
        let mut lines: Vec<String> = screen
            .lines
            .into_iter()
            .map(|line| line.into_iter().collect::<String>().trim_end().to_owned())
            .collect();
        while lines.last().is_some_and(String::is_empty) {
            lines.pop();
        }
        lines
    }

    fn down(&mut self, n: usize) {
        self.row += n;
        while self.lines.len() <= self.row {
            self.lines.push(Vec::new());
        }
        self.column = self.column.min(COLUMNS - 1);
    }

    fn put(&mut self, c: char) {
        if self.column >= COLUMNS {
            self.column = 0;
            self.down(1);
        }
        let line = &mut self.lines[self.row];
        if line.len() <= self.column {
            line.resize(self.column + 1, ' ');
        }
        line[self.column] = c;
        self.column += 1;
    }

    /// `ESC [ n K`: 0 to the end of the line, 1 to its start, 2 all of it.
    fn erase(&mut self, n: usize) {
        let column = self.column.min(COLUMNS - 1);
        let line = &mut self.lines[self.row];
        match n {
            0 => line.truncate(column),
            1 => line.iter_mut().take(column + 1).for_each(|c| *c = ' '),
            _ => line.clear(),
        }
    }
}

#[test]
fn the_screen_wraps_and_erases_as_a_terminal_does() {
    let full = "x".repeat(COLUMNS);
    // A full line, then `^C`: the echo wraps onto a line of its own; erasing the line the
    // cursor is on leaves the full one.
    let bytes = format!("{full}^C\r\x1b[2Kbye\r\n");
    assert_eq!(Screen::replay(bytes.as_bytes()), [full.as_str(), "bye"]);
    let bytes = "abc\x1b[1Gz\x1b[K\r\nline\x1b[1A\r\x1b[2Kover";
    assert_eq!(Screen::replay(bytes.as_bytes()), ["over", "line"]);
}

/// Ctrl-C while the tools of a server that never answers are being listed: the spinner's
/// line goes, whatever the terminal echoed for the key; what is left is the message.
#[tokio::test]
async fn ctrl_c_during_discovery_leaves_no_spinner_on_screen() {
    // Accepts connections and never answers.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut connections = Vec::new();
        while let Ok((connection, _)) = listener.accept().await {
            connections.push(connection);
        }
    });
    let sent =
        interrupted_once_shown(&["-url", &url, "-tenant", "local"], "listing the tools").await;
    held.abort();
    let screen = Screen::replay(&sent);
    assert_eq!(screen, ["mcp-tools: interrupted"], "{screen:#?}");
}

/// Ctrl-C while a call runs: the bar goes, and the call's result takes the screen.
#[tokio::test]
async fn ctrl_c_during_a_call_leaves_no_bar_on_screen() {
    let server = server(Era::Both).await;
    let dir = tempfile::tempdir().unwrap();
    let path = config(&dir, discovered(&server.url(), "hang").await);
    let sent = interrupted_once_shown(
        &[
            "call", "--config", &path, "--tenant", "local", "--tool", "hang", "--call", "c1",
        ],
        "waiting for the tool",
    )
    .await;
    let screen = Screen::replay(&sent);
    assert!(
        !screen
            .iter()
            .any(|line| line.contains("waiting for the tool")),
        "{screen:#?}"
    );
    assert_eq!(
        screen.first().map(String::as_str),
        Some("error: tool hang, call c1"),
        "{screen:#?}"
    );
    assert!(
        screen
            .iter()
            .any(|line| line.starts_with("kind: cancelled")),
        "{screen:#?}"
    );
}
