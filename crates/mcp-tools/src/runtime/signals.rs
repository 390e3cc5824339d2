//! The signals that ask a run to stop: Ctrl-C (SIGINT) and, on Unix, SIGTERM and SIGHUP
//! (what `timeout`, systemd, container runtimes and a closed terminal send).
//!
//! They are watched for the whole run, so none of them kills the process outright: the
//! first stops the command (a call is cancelled and its result printed; another command
//! ends with exit 130), and the run still finishes what must not be cut short (a
//! refreshed grant on its way to the store, see `client::settle`); a second one stops
//! that wait too.

use tokio::sync::watch;

/// The signals received so far in this run.
#[derive(Debug, Clone)]
pub(crate) struct Signals {
    received: watch::Receiver<usize>,
}

impl Signals {
    /// Starts watching (on the current runtime), for the rest of the run.
    pub(crate) fn watch() -> Self {
        let (count, received) = watch::channel(0usize);
        tokio::spawn(async move {
            #[cfg(unix)]
            {
                use tokio::signal::unix::{SignalKind, signal};
                if let (Ok(mut interrupt), Ok(mut term), Ok(mut hangup)) = (
                    signal(SignalKind::interrupt()),
                    signal(SignalKind::terminate()),
                    signal(SignalKind::hangup()),
                ) {
                    loop {
                        tokio::select! {
                            _ = interrupt.recv() => {}
                            _ = term.recv() => {}
                            _ = hangup.recv() => {}
                        }
                        count.send_modify(|count| *count += 1);
                    }
                }
            }
            while tokio::signal::ctrl_c().await.is_ok() {
                count.send_modify(|count| *count += 1);
            }
        });
        Self { received }
    }

    /// How many signals came so far.
    pub(crate) fn count(&self) -> usize {
        *self.received.borrow()
    }

    /// Resolves once `n` signals in all have come (at once if they have); never if
    /// signals cannot be watched.
    pub(crate) async fn at_least(&self, n: usize) {
        let mut received = self.received.clone();
        if received.wait_for(|count| *count >= n).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}
