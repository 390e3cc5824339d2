//! What a person at a terminal sees while waiting: a spinner while a server's tools are
//! listed, a live bar while a call runs. Both draw on stderr, and only when stderr is a
//! terminal; neither uses colour.

use std::{io::IsTerminal, time::Duration};

use brain_tools::ProgressEvent;
use console::Term;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle, TermLike};

use crate::runtime::output::human;

/// How often a spinner turns.
const TICK: Duration = Duration::from_millis(100);

/// The columns at the right of the terminal that a bar or spinner leaves empty.
const MARGIN: u16 = 4;

/// The bar's length: progress/total is drawn in thousandths.
const SCALE: u64 = 1000;

fn stderr_target() -> ProgressDrawTarget {
    if std::io::stderr().is_terminal() {
        ProgressDrawTarget::term_like_with_hz(Box::new(Narrow(Term::buffered_stderr())), 10)
    } else {
        ProgressDrawTarget::hidden()
    }
}

/// stderr as the bar and the spinner draw on it: [`MARGIN`] columns narrower than the
/// terminal. A line that fills the terminal leaves the cursor in its last column, where
/// the `^C` the terminal echoes for Ctrl-C (or a key typed meanwhile) wraps onto a line of
/// its own; clearing then cleared that line, and left the spinner's on screen above it.
#[derive(Debug)]
struct Narrow(Term);

impl TermLike for Narrow {
    fn width(&self) -> u16 {
        self.0.size().1.saturating_sub(MARGIN).max(1)
    }

    fn height(&self) -> u16 {
        self.0.size().0
    }

    fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_up(n)
    }

    fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_down(n)
    }

    fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_right(n)
    }

    fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
        self.0.move_cursor_left(n)
    }

    fn write_line(&self, line: &str) -> std::io::Result<()> {
        self.0.write_line(line)
    }

    fn write_str(&self, text: &str) -> std::io::Result<()> {
        self.0.write_str(text)
    }

    fn clear_line(&self) -> std::io::Result<()> {
        self.0.clear_line()
    }

    fn flush(&self) -> std::io::Result<()> {
        self.0.flush()
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .progress_chars("=> ")
}

/// A spinner with a message on stderr until dropped; nothing when stderr is not a
/// terminal.
#[derive(Debug)]
pub(crate) struct Spinner(Option<ProgressBar>);

impl Spinner {
    /// Starts spinning with `message`.
    pub(crate) fn start(message: String) -> Self {
        if !std::io::stderr().is_terminal() {
            return Self(None);
        }
        let bar = ProgressBar::with_draw_target(None, stderr_target())
            .with_style(style("{spinner} {wide_msg} {elapsed}"))
            .with_message(crate::runtime::output::escape::escape(&message, false));
        bar.enable_steady_tick(TICK);
        Self(Some(bar))
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.finish_and_clear();
        }
    }
}

/// The live bar of a call: `progress/total` and the server's message; a spinner until
/// the server sends a total.
#[derive(Debug)]
pub(crate) struct CallBar {
    bar: ProgressBar,
    with_total: bool,
}

impl CallBar {
    /// Starts the bar on stderr.
    pub(crate) fn start() -> Self {
        let bar = ProgressBar::with_draw_target(Some(SCALE), stderr_target())
            .with_style(style("{spinner} {elapsed:>3} {wide_msg}"))
            .with_message("waiting for the tool");
        bar.enable_steady_tick(TICK);
        Self {
            bar,
            with_total: false,
        }
    }

    /// Shows one progress update.
    pub(crate) fn update(&mut self, event: &ProgressEvent) {
        match event.total.filter(|total| *total > 0.0) {
            Some(total) => {
                if !self.with_total {
                    self.bar
                        .set_style(style("{spinner} {elapsed:>3} [{bar:30}] {wide_msg}"));
                    self.with_total = true;
                }
                let done = (event.progress / total).clamp(0.0, 1.0);
                self.bar.set_position((done * SCALE as f64) as u64);
            }
            None => {
                if self.with_total {
                    self.bar
                        .set_style(style("{spinner} {elapsed:>3} {wide_msg}"));
                    self.with_total = false;
                }
            }
        }
        self.bar.set_message(human::progress_text(event));
    }

    /// Removes the bar (the result follows on stdout).
    pub(crate) fn clear(self) {
        self.bar.finish_and_clear();
    }
}
