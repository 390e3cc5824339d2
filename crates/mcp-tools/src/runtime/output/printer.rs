//! Where `call` prints, without ever holding up the call.
//!
//! `EventSink::emit` runs on the call's task, so it must not wait for stdout: a slow
//! reader would stall the runtime, and with it the call's deadline. The sink here only
//! queues: progress goes into a small bounded queue (when the queue is full the oldest
//! update is dropped: progress is live-only), the result into its own slot, which never
//! drops it. A dedicated thread owns stdout (and the progress bar on stderr) and writes.
//!
//! At the end, [`Printer::finish`] waits for the result to be written and flushed. It
//! gives up only when the writer has been blocked in one write to stdout for [`STALL`]:
//! a reader that has stopped reading cannot hold the process forever. Time spent before a
//! write (encoding a large result, saving its images) is not a stall, however long: the
//! result is never dropped while the reader reads.

use std::{
    collections::VecDeque,
    io::Write,
    path::{Path, PathBuf},
    sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError},
    thread::JoinHandle,
    time::{Duration, Instant},
};

use brain_tools::{EventSink, ProgressEvent, ResultEvent, ToolEvent};

use crate::runtime::output::{
    escape::escape,
    human::{self, Paint, ProgressSeen, Saved},
    json,
    progress::CallBar,
};

/// An event as a JSON line (without its newline), as `ToolEvent::to_json_line` writes it
/// but for the characters a terminal obeys, which are JSON escapes here.
fn json_line(event: &ToolEvent) -> String {
    json::to_string(event).unwrap_or_else(|_| event.to_json_line())
}

/// Progress updates queued for the writer at most; past this the oldest is dropped.
pub(crate) const QUEUE: usize = 128;

/// How long one write to stdout may stay blocked before `finish` gives up on it.
pub(crate) const STALL: Duration = Duration::from_secs(2);
/// How often `finish` looks at the writer, at most.
const POLL: Duration = Duration::from_millis(100);

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
    /// Since when the writer has been blocked in its current write to stdout (one piece
    /// of at most [`CHUNK`] bytes); `None` while it is not writing.
    writing_since: Mutex<Option<Instant>>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_writing(&self, since: Option<Instant>) {
        *self
            .writing_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = since;
    }

    /// How long the writer has been blocked in its current write, at `now`.
    fn blocked_for(&self, now: Instant) -> Duration {
        self.writing_since
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map_or(Duration::ZERO, |since| now.saturating_duration_since(since))
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

    /// Waits until the result is written and flushed; gives up once one write to
    /// stdout has been blocked for `stall`.
    pub(crate) fn finish(self, stall: Duration) -> Result<(), String> {
        self.finish_at(stall, Instant::now)
    }

    /// [`Self::finish`], reading the time from `now`.
    fn finish_at(
        mut self,
        stall: Duration,
        mut now: impl FnMut() -> Instant,
    ) -> Result<(), String> {
        let (done, dropped) = loop {
            let mut state = self.shared.lock();
            if state.done.is_none() {
                state = self
                    .shared
                    .changed
                    .wait_timeout(state, stall.min(POLL))
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            if let Some(done) = state.done.take() {
                break (done, state.dropped);
            }
            drop(state);
            // A writer blocked in a write cannot be done meanwhile: it says so after.
            if self.shared.blocked_for(now()) >= stall {
                // The thread is stuck in a write; the process exits without it.
                self.thread.take();
                return Err(format!(
                    "stdout took nothing for {} s while the result was being written; gave up",
                    stall.as_secs()
                ));
            }
        };
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
                let mut line = json_line(&ToolEvent::Progress(progress));
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
            Some(dir) => save_media(dir, result),
            None => Vec::new(),
        };
        let text = match &self.style {
            Style::Json => {
                let payloads = human::payloads(result);
                for (payload, saved) in payloads.iter().zip(&saved) {
                    let what = match payload.nth {
                        0 => format!("block {}", payload.block + 1),
                        nth => format!(
                            "base64 {nth} in the structured content of block {}",
                            payload.block + 1
                        ),
                    };
                    match saved {
                        Some(Saved::To(path)) => {
                            eprintln!(
                                "mcp-tools: {what} saved to {}",
                                escape(&path.display().to_string(), false)
                            );
                        }
                        Some(Saved::Failed(why)) => {
                            eprintln!("mcp-tools: {what} not saved: {}", escape(why, false));
                        }
                        None => {}
                    }
                }
                let mut line = json_line(&ToolEvent::Result(result.clone()));
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

    /// Writes in pieces, each timed while it is blocked.
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let written = bytes.chunks(CHUNK).try_for_each(|chunk| {
            self.shared.set_writing(Some(Instant::now()));
            self.out.write_all(chunk)
        });
        self.shared.set_writing(None);
        written
    }
}

/// Writes each piece of base64 of `result` (its images, and the base64 in its structured
/// content: [`human::payloads`]) into `dir`, in that order.
fn save_media(dir: &Path, result: &ResultEvent) -> Vec<Option<Saved>> {
    let created = std::fs::create_dir_all(dir);
    human::payloads(result)
        .iter()
        .map(|payload| {
            if let Err(error) = &created {
                return Some(Saved::Failed(format!(
                    "cannot create {}: {error}",
                    dir.display()
                )));
            }
            let Some(bytes) = human::decode(payload.data) else {
                return Some(Saved::Failed("the data is not base64".into()));
            };
            let name = human::media_file_name(&result.header.call_id, payload);
            Some(match save_new(dir, &name, &bytes) {
                Ok(path) => Saved::To(path),
                Err(error) => Saved::Failed(format!(
                    "cannot write {}: {error}",
                    dir.join(&name).display()
                )),
            })
        })
        .collect()
}

/// How many names one image tries before giving up: `NAME`, then `STEM_2.EXT` to this.
const MAX_NAME_TRIES: usize = 1000;

/// Writes `bytes` to a new file in `dir`: `name`, or when that is taken `STEM_2.EXT`,
/// `STEM_3.EXT`, ... Each file is created exclusively (`O_CREAT | O_EXCL`): an existing
/// file is never replaced, and a symbolic link planted at the name is never followed
/// (exclusive creation fails on a link, dangling or not). A file whose write fails is
/// removed. Returns the path written.
fn save_new(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let (stem, extension) = name.rsplit_once('.').unwrap_or((name, ""));
    for attempt in 1..=MAX_NAME_TRIES {
        let candidate = match attempt {
            1 => name.to_owned(),
            n if extension.is_empty() => format!("{stem}_{n}"),
            n => format!("{stem}_{n}.{extension}"),
        };
        let path = dir.join(candidate);
        let mut file = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(error),
        };
        return match file.write_all(bytes).and_then(|()| file.sync_all()) {
            Ok(()) => Ok(path),
            Err(error) => {
                drop(file);
                let _ = std::fs::remove_file(&path);
                Err(error)
            }
        };
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::AlreadyExists,
        format!(
            "{name} and {} other names for it are taken",
            MAX_NAME_TRIES - 1
        ),
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use brain_tools::{CallHeader, ContentBlock};

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

    /// A name that is taken, by a file or by a symbolic link (to a file of the user's, or
    /// dangling), is never written through: the image gets the next free name, and that
    /// name is the one reported.
    #[cfg(unix)]
    #[test]
    fn saved_images_never_replace_a_file_or_follow_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let precious = dir.path().join("precious.txt");
        std::fs::write(&precious, "keep me").unwrap();
        std::os::unix::fs::symlink(&precious, dir.path().join("c1-1.png")).unwrap();
        std::fs::write(dir.path().join("c1-1_2.png"), "an older image").unwrap();
        std::os::unix::fs::symlink(dir.path().join("nowhere"), dir.path().join("c1-1_3.png"))
            .unwrap();
        let png = "iVBORw0KGgo=";
        let result = ResultEvent::new(header(), false, vec![ContentBlock::image("image/png", png)]);
        let saved = save_media(dir.path(), &result);
        let expected = dir.path().join("c1-1_4.png");
        assert_eq!(saved, [Some(Saved::To(expected.clone()))]);
        assert_eq!(
            std::fs::read(&expected).unwrap(),
            human::decode(png).unwrap()
        );
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "keep me");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("c1-1_2.png")).unwrap(),
            "an older image"
        );
        assert!(
            !dir.path().join("nowhere").exists(),
            "the dangling link made nothing"
        );
        // Saving again takes the next name.
        let again = save_media(dir.path(), &result);
        assert_eq!(again, [Some(Saved::To(dir.path().join("c1-1_5.png")))]);
    }

    /// Time before the result's first write (a large result being encoded or saved; here,
    /// a result that comes late) is not a stall, however long it lasts: `finish` waits,
    /// on a clock that runs ten seconds per look, and the result is written whole.
    #[test]
    fn only_time_blocked_in_a_write_counts_as_a_stall() {
        let taken = Arc::new(Mutex::new(Vec::new()));
        let (open, gate) = mpsc::channel();
        let out = Gate {
            open: gate,
            taken: taken.clone(),
            blocked: false,
        };
        drop(open);
        let printer = Printer::start(Style::Json, None, out).unwrap();
        let sink = printer.sink();
        let start = Instant::now();
        let mut looks = 0u32;
        let clock = move || {
            looks += 1;
            if looks == 20 {
                sink.emit(result());
            }
            start + Duration::from_secs(10) * looks
        };
        printer.finish_at(Duration::from_millis(1), clock).unwrap();
        let text = String::from_utf8(taken.lock().unwrap().clone()).unwrap();
        assert!(text.contains("\"tool.result\""), "{text}");
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
