//! Where `call` prints, without ever holding up the call.
//!
//! `EventSink::emit` runs on the call's task, so it must not wait for stdout: a slow
//! reader would stall the runtime, and with it the call's deadline. The sink here only
//! queues: progress goes into a small bounded queue (when the queue is full the oldest
//! update is dropped: progress is live-only), the result into its own slot, which never
//! drops it. A dedicated thread owns stdout (and the progress bar on stderr) and writes.
//!
//! At the end, [`Printer::finish`] waits for the result to be written and flushed. It
//! waits as long as stdout keeps taking bytes, and gives up when stdout has taken none
//! for [`STALL`]: a reader that has stopped reading cannot hold the process forever.

use std::{
    collections::VecDeque,
    io::Write,
    path::{Path, PathBuf},
    sync::{
        Arc, Condvar, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use brain_tools::{ContentBlock, EventSink, ProgressEvent, ResultEvent, ToolEvent};

use crate::{
    escape::escape,
    human::{self, Paint, ProgressSeen, Saved},
    progress::CallBar,
};

/// Progress updates queued for the writer at most; past this the oldest is dropped.
pub(crate) const QUEUE: usize = 128;

/// How long stdout may take no byte at all before `finish` gives up on it.
pub(crate) const STALL: Duration = Duration::from_secs(2);

/// Writes go to stdout in pieces of at most this many bytes, so that a slow reader's
/// progress is seen.
const CHUNK: usize = 16 * 1024;

/// How `call` prints.
#[derive(Debug)]
pub(crate) enum Style {
    /// JSON lines, one per event.
    Json,
    /// A progress bar on stderr (at a terminal), then the result for a person.
    Human {
        /// Colour on stdout.
        paint: Paint,
        /// Whether stderr is a terminal (the bar is shown only there).
        bar: bool,
    },
}

/// What the writer reports when it is done.
type Done = Result<(), String>;

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<ProgressEvent>,
    result: Option<ResultEvent>,
    /// Progress events received, and dropped because the writer was behind.
    received: u64,
    dropped: u64,
    done: Option<Done>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    /// Bytes stdout has taken.
    written: AtomicU64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The sink a call emits into; never blocks for longer than a queue push.
#[derive(Debug, Clone)]
pub(crate) struct Sink(Arc<Shared>);

impl EventSink for Sink {
    fn emit(&self, event: ToolEvent) {
        let mut state = self.0.lock();
        match event {
            ToolEvent::Progress(progress) => {
                state.received += 1;
                if state.queue.len() >= QUEUE {
                    state.queue.pop_front();
                    state.dropped += 1;
                }
                state.queue.push_back(progress);
            }
            ToolEvent::Result(result) => state.result = Some(result),
            _ => return,
        }
        drop(state);
        self.0.changed.notify_all();
    }
}

/// The writer thread and its sink.
#[derive(Debug)]
pub(crate) struct Printer {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Printer {
    /// Starts the writer: `out` is stdout (a buffer in tests); images go to `save_dir`.
    pub(crate) fn start(
        style: Style,
        save_dir: Option<PathBuf>,
        out: impl Write + Send + 'static,
    ) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let writer = Writer {
            shared: shared.clone(),
            out,
            style,
            save_dir,
            last: None,
            bar: None,
        };
        let thread = std::thread::Builder::new()
            .name("mcp-tools-stdout".into())
            .spawn(move || writer.run())?;
        Ok(Self {
            shared,
            thread: Some(thread),
        })
    }

    /// The sink for `ToolHost::call`.
    pub(crate) fn sink(&self) -> Sink {
        Sink(self.shared.clone())
    }

    /// Waits until the result is written and flushed, as long as stdout keeps taking
    /// bytes; gives up once it has taken none for `stall`.
    pub(crate) fn finish(mut self, stall: Duration) -> Result<(), String> {
        let mut state = self.shared.lock();
        let mut seen = self.shared.written.load(Ordering::Relaxed);
        let mut moved = Instant::now();
        let done = loop {
            if let Some(done) = state.done.take() {
                break done;
            }
            let wait = stall
                .saturating_sub(moved.elapsed())
                .min(Duration::from_millis(100));
            state = self
                .shared
                .changed
                .wait_timeout(state, wait)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            let written = self.shared.written.load(Ordering::Relaxed);
            if written != seen {
                seen = written;
                moved = Instant::now();
            } else if moved.elapsed() >= stall && state.done.is_none() {
                // The thread is stuck in a write; the process exits without it.
                self.thread.take();
                return Err(format!(
                    "stdout took nothing for {} s; gave up before the result was written",
                    stall.as_secs()
                ));
            }
        };
        let dropped = state.dropped;
        drop(state);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if dropped > 0 {
            tracing::info!(
                dropped,
                "progress updates dropped: stdout was slower than the server"
            );
        }
        done
    }
}

struct Writer<W> {
    shared: Arc<Shared>,
    out: W,
    style: Style,
    save_dir: Option<PathBuf>,
    last: Option<ProgressEvent>,
    bar: Option<CallBar>,
}

enum Next {
    Progress(ProgressEvent, bool),
    Result(ResultEvent, u64),
}

impl<W: Write> Writer<W> {
    fn run(mut self) {
        if let Style::Human { bar: true, .. } = self.style {
            self.bar = Some(CallBar::start());
        }
        loop {
            let next = {
                let mut state = self.shared.lock();
                loop {
                    if let Some(progress) = state.queue.pop_front() {
                        break Next::Progress(progress, state.queue.is_empty());
                    }
                    if let Some(result) = state.result.take() {
                        break Next::Result(result, state.received);
                    }
                    state = self
                        .shared
                        .changed
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            };
            match next {
                Next::Progress(progress, idle) => self.progress(progress, idle),
                Next::Result(result, received) => {
                    let done = self.result(&result, received);
                    self.shared.lock().done = Some(done);
                    self.shared.changed.notify_all();
                    return;
                }
            }
        }
    }

    fn progress(&mut self, progress: ProgressEvent, idle: bool) {
        match &self.style {
            Style::Json => {
                let mut line = ToolEvent::Progress(progress).to_json_line();
                line.push('\n');
                // A reader that went away is not an error of the call: keep going.
                let _ = self.write(line.as_bytes());
                if idle {
                    let _ = self.out.flush();
                }
            }
            Style::Human { .. } => {
                if let Some(bar) = &mut self.bar {
                    bar.update(&progress);
                }
                self.last = Some(progress);
            }
        }
    }

    fn result(&mut self, result: &ResultEvent, received: u64) -> Done {
        let saved = match &self.save_dir {
            Some(dir) => save_images(dir, result),
            None => Vec::new(),
        };
        let text = match &self.style {
            Style::Json => {
                for (index, saved) in saved.iter().enumerate() {
                    match saved {
                        Some(Saved::To(path)) => {
                            eprintln!(
                                "mcp-tools: block {} saved to {}",
                                index + 1,
                                escape(&path.display().to_string(), false)
                            );
                        }
                        Some(Saved::Failed(why)) => {
                            eprintln!(
                                "mcp-tools: block {} not saved: {}",
                                index + 1,
                                escape(why, false)
                            );
                        }
                        None => {}
                    }
                }
                let mut line = ToolEvent::Result(result.clone()).to_json_line();
                line.push('\n');
                line
            }
            Style::Human { paint, .. } => {
                if let Some(bar) = self.bar.take() {
                    bar.clear();
                }
                let seen = self.last.take().map(|last| ProgressSeen {
                    updates: received,
                    last,
                });
                human::render(seen.as_ref(), result, &saved, *paint)
            }
        };
        self.write(text.as_bytes())
            .and_then(|()| self.out.flush())
            .map_err(|error| format!("cannot write the result to stdout: {error}"))
    }

    /// Writes in pieces, counting what stdout has taken.
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        for chunk in bytes.chunks(CHUNK) {
            self.out.write_all(chunk)?;
            self.shared
                .written
                .fetch_add(chunk.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    }
}

/// Writes each image block of `result` into `dir`; `None` for other blocks.
fn save_images(dir: &Path, result: &ResultEvent) -> Vec<Option<Saved>> {
    let created = std::fs::create_dir_all(dir);
    result
        .content
        .iter()
        .enumerate()
        .map(|(index, block)| {
            let ContentBlock::Image { mime_type, data } = block else {
                return None;
            };
            if let Err(error) = &created {
                return Some(Saved::Failed(format!(
                    "cannot create {}: {error}",
                    dir.display()
                )));
            }
            let Some(bytes) = human::decode(data) else {
                return Some(Saved::Failed("the data is not base64".into()));
            };
            let path = dir.join(human::image_file_name(
                &result.header.call_id,
                index,
                mime_type,
            ));
            Some(match std::fs::write(&path, bytes) {
                Ok(()) => Saved::To(path),
                Err(error) => Saved::Failed(format!("cannot write {}: {error}", path.display())),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use brain_tools::CallHeader;

    use super::*;

    fn header() -> CallHeader {
        CallHeader::new("t", "s", "c1", "progress")
    }

    fn progress(i: u64) -> ToolEvent {
        ToolEvent::progress(header(), i as f64, Some(1000.0), Some(format!("step {i}")))
    }

    fn result() -> ToolEvent {
        ToolEvent::result(header(), false, vec![ContentBlock::text("done")])
    }

    /// A stdout whose reader does not read until told to.
    struct Gate {
        open: mpsc::Receiver<()>,
        taken: Arc<Mutex<Vec<u8>>>,
        blocked: bool,
    }

    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.blocked {
                let _ = self.open.recv();
                self.blocked = false;
            }
            self.taken.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Emitting never waits for stdout: with stdout blocked, a flood of progress is
    /// queued (the oldest dropped past the bound) and the result is kept.
    #[test]
    fn a_blocked_stdout_never_blocks_the_sink_nor_loses_the_result() {
        let (open, gate) = mpsc::channel();
        let taken = Arc::new(Mutex::new(Vec::new()));
        let out = Gate {
            open: gate,
            taken: taken.clone(),
            blocked: true,
        };
        let printer = Printer::start(Style::Json, None, out).unwrap();
        let sink = printer.sink();
        let started = Instant::now();
        for i in 1..=100_000 {
            sink.emit(progress(i));
        }
        sink.emit(result());
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "emit never waits on stdout"
        );
        open.send(()).unwrap();
        printer.finish(STALL).unwrap();
        let text = String::from_utf8(taken.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.len() <= QUEUE + 2, "{} lines", lines.len());
        assert!(lines.last().unwrap().contains("\"tool.result\""));
        assert!(
            lines[lines.len() - 2].contains("\"step 100000\""),
            "the newest progress is kept"
        );
    }

    #[test]
    fn finish_gives_up_on_a_stdout_that_takes_nothing() {
        let (_open, gate) = mpsc::channel();
        let out = Gate {
            open: gate,
            taken: Arc::default(),
            blocked: true,
        };
        let printer = Printer::start(Style::Json, None, out).unwrap();
        printer.sink().emit(result());
        let started = Instant::now();
        let error = printer.finish(Duration::from_millis(300)).unwrap_err();
        assert!(error.starts_with("stdout took nothing for"), "{error}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[test]
    fn json_lines_in_order_when_stdout_keeps_up() {
        let taken = Arc::new(Mutex::new(Vec::new()));
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let printer = Printer::start(Style::Json, None, Shared(taken.clone())).unwrap();
        let sink = printer.sink();
        for i in 1..=3 {
            sink.emit(progress(i));
        }
        sink.emit(result());
        printer.finish(STALL).unwrap();
        let text = String::from_utf8(taken.lock().unwrap().clone()).unwrap();
        let kinds: Vec<ToolEvent> = text
            .lines()
            .map(|l| ToolEvent::from_json_line(l).unwrap())
            .collect();
        assert_eq!(kinds, [progress(1), progress(2), progress(3), result()]);
    }
}
