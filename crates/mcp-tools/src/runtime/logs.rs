//! The binary's logs: stderr, `-v` for more, `RUST_LOG` to choose; rmcp capped at `error`.
//!
//! rmcp logs whole protocol messages at DEBUG and TRACE under `rmcp::service` (a call's
//! arguments included), server notifications at INFO, and some server text at WARN. None
//! of that may reach a log, whatever `-v` or `RUST_LOG` say: a second filter, applied
//! after the chosen one, lets every `rmcp` target through at `error` at most. It can only
//! lower what `RUST_LOG` asks for, never raise it.

use std::io::IsTerminal;

use tracing_subscriber::{
    EnvFilter, Layer,
    filter::{FilterExt, LevelFilter, Targets},
    layer::SubscriberExt,
    util::SubscriberInitExt,
};

/// The most any `rmcp` target may log.
pub(crate) const RMCP_CAP: LevelFilter = LevelFilter::ERROR;

/// The filter for `-v` counts when `RUST_LOG` is not set.
fn level(verbose: u8) -> &'static str {
    match verbose {
        // rmcp's error lines repeat what the one-line error says: quiet unless asked.
        0 => "warn,rmcp=off",
        1 => "info",
        2 => "debug",
        _ => "trace",
    }
}

/// The cap applied on top of the chosen filter.
fn cap() -> Targets {
    Targets::new()
        .with_default(LevelFilter::TRACE)
        .with_target("rmcp", RMCP_CAP)
}

/// Whether output to a stream may use colour: a terminal, `NO_COLOR` unset or empty
/// (<https://no-color.org>), and a `TERM` other than `dumb`.
pub(crate) fn color_allowed(is_terminal: bool) -> bool {
    color_for(
        is_terminal,
        std::env::var_os("NO_COLOR").as_deref(),
        std::env::var_os("TERM").as_deref(),
    )
}

/// [`color_allowed`] for given values of `NO_COLOR` and `TERM`.
fn color_for(
    is_terminal: bool,
    no_color: Option<&std::ffi::OsStr>,
    term: Option<&std::ffi::OsStr>,
) -> bool {
    is_terminal
        && no_color.is_none_or(|value| value.is_empty())
        && term.is_none_or(|term| term != "dumb")
}

/// The log layer: `chosen` (from `RUST_LOG` or `-v`), then the rmcp cap.
fn layer<S, W>(chosen: EnvFilter, writer: W, color: bool) -> impl Layer<S>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    W: for<'writer> tracing_subscriber::fmt::MakeWriter<'writer> + 'static,
{
    tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(color)
        .with_target(false)
        .with_filter(chosen.and(cap()))
}

/// A layer beside the log lines (OpenTelemetry's, with the feature `otel`).
pub(crate) type BoxedLayer = Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync + 'static>;

/// Installs the subscriber: stderr, colour only at a terminal; and `extra` beside it,
/// with its own filter.
pub(crate) fn init(verbose: u8, extra: Option<BoxedLayer>) {
    let chosen =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level(verbose)));
    let color = color_allowed(std::io::stderr().is_terminal());
    let _ = tracing_subscriber::registry()
        .with(extra)
        .with(layer(chosen, std::io::stderr, color))
        .try_init();
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn colour_only_at_a_terminal_without_no_color() {
        use std::ffi::OsStr;
        let os = |value: &'static str| Some(OsStr::new(value));
        // (a terminal, NO_COLOR, TERM) -> colour
        let cases = [
            (true, None, os("xterm-256color"), true),
            (true, None, None, true),
            (false, None, os("xterm-256color"), false),
            (true, os("1"), os("xterm-256color"), false),
            (true, os("anything"), None, false),
            // An empty NO_COLOR does not count (no-color.org).
            (true, os(""), os("xterm"), true),
            (true, None, os("dumb"), false),
        ];
        for (terminal, no_color, term, colour) in cases {
            assert_eq!(
                color_for(terminal, no_color, term),
                colour,
                "terminal {terminal}, NO_COLOR {no_color:?}, TERM {term:?}"
            );
        }
    }

    /// What the subscriber prints for rmcp's lines at every level, and one of ours.
    fn logged(directives: &str) -> String {
        let captured = Captured::default();
        let sink = captured.clone();
        let subscriber = tracing_subscriber::registry().with(layer(
            EnvFilter::new(directives),
            move || sink.clone(),
            false,
        ));
        tracing::subscriber::with_default(subscriber, || {
            tracing::trace!(target: "rmcp::service", "rmcp-trace arguments=secret");
            tracing::debug!(target: "rmcp::service", "rmcp-debug arguments=secret");
            tracing::info!(target: "rmcp::service", "rmcp-info server notification");
            tracing::warn!(target: "rmcp::transport::worker", "rmcp-warn server text");
            tracing::error!(target: "rmcp::transport::worker", "rmcp-error worker quit");
            tracing::debug!(target: "brain_tools", "ours-debug");
        });
        let text = captured.0.lock().unwrap().clone();
        String::from_utf8(text).unwrap()
    }

    /// Whatever `RUST_LOG` or `-v` ask for, rmcp never logs below `error`; our own
    /// targets follow the filter.
    #[test]
    fn rmcp_is_capped_at_error_whatever_the_filter_says() {
        for directives in [
            "trace",
            "rmcp=trace",
            "rmcp::service=trace,rmcp::transport=trace",
            level(1),
            level(2),
            level(3),
        ] {
            let text = logged(directives);
            for line in [
                "rmcp-trace",
                "rmcp-debug",
                "rmcp-info",
                "rmcp-warn",
                "secret",
            ] {
                assert!(!text.contains(line), "{directives}: {text}");
            }
            assert!(text.contains("rmcp-error"), "{directives}: {text}");
        }
        assert!(logged("trace").contains("ours-debug"));
        assert!(!logged(level(0)).contains("rmcp-error"), "quiet by default");
        assert!(!logged(level(0)).contains("ours-debug"));
    }
}
