//! A call's progress, and the channel it travels on.
//!
//! Progress is live-only: a host shows it and never stores it. The channel is bounded and
//! never blocks the sender: when the receiver falls behind, the oldest update still
//! queued is dropped for the newest (progress is monotonic, so the newest says the most),
//! and the count of updates dropped that way is kept. So a server that floods progress, or
//! a host that reads it slowly, costs neither memory nor the call's deadline.

use std::{
    collections::VecDeque,
    sync::{
        Arc, Mutex, MutexGuard, PoisonError,
        atomic::{AtomicUsize, Ordering},
    },
};

use tokio::sync::Notify;

/// One progress notification of a call.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// Progress so far.
    pub progress: f64,
    /// The total, when the server knows it.
    pub total: Option<f64>,
    /// What the server says it is doing.
    pub message: Option<String>,
}

impl Progress {
    /// A progress update (for hosts' own executors).
    pub fn new(progress: f64, total: Option<f64>, message: Option<String>) -> Self {
        Self {
            progress,
            total,
            message,
        }
    }
}

/// How many updates wait for the receiver before the oldest is dropped for the newest.
pub const PROGRESS_QUEUE: usize = 64;

#[derive(Debug)]
struct Queue {
    updates: Mutex<VecDeque<Progress>>,
    capacity: usize,
    coalesced: AtomicUsize,
    senders: AtomicUsize,
    notify: Notify,
}

impl Queue {
    fn lock(&self) -> MutexGuard<'_, VecDeque<Progress>> {
        self.updates.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The sending half; cheap to clone. Sending never blocks and never fails.
#[derive(Debug)]
pub struct ProgressSender {
    queue: Arc<Queue>,
}

/// The receiving half.
#[derive(Debug)]
pub struct ProgressReceiver {
    queue: Arc<Queue>,
}

/// A progress channel that holds at most `capacity` updates (at least one).
pub fn progress_channel(capacity: usize) -> (ProgressSender, ProgressReceiver) {
    let queue = Arc::new(Queue {
        updates: Mutex::new(VecDeque::new()),
        capacity: capacity.max(1),
        coalesced: AtomicUsize::new(0),
        senders: AtomicUsize::new(1),
        notify: Notify::new(),
    });
    (
        ProgressSender {
            queue: Arc::clone(&queue),
        },
        ProgressReceiver { queue },
    )
}

impl ProgressSender {
    /// Queues an update; when the queue is full, the oldest queued is dropped.
    pub fn send(&self, update: Progress) {
        {
            let mut updates = self.queue.lock();
            if updates.len() >= self.queue.capacity {
                updates.pop_front();
                self.queue.coalesced.fetch_add(1, Ordering::Relaxed);
            }
            updates.push_back(update);
        }
        self.queue.notify.notify_one();
    }
}

impl Clone for ProgressSender {
    fn clone(&self) -> Self {
        self.queue.senders.fetch_add(1, Ordering::AcqRel);
        Self {
            queue: Arc::clone(&self.queue),
        }
    }
}

impl Drop for ProgressSender {
    fn drop(&mut self) {
        if self.queue.senders.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.queue.notify.notify_one();
        }
    }
}

impl ProgressReceiver {
    /// The next update, in order; `None` once every sender is gone and the queue is empty.
    pub async fn recv(&mut self) -> Option<Progress> {
        let queue = Arc::clone(&self.queue);
        loop {
            let notified = queue.notify.notified();
            if let Some(update) = queue.lock().pop_front() {
                return Some(update);
            }
            if queue.senders.load(Ordering::Acquire) == 0 {
                return queue.lock().pop_front();
            }
            notified.await;
        }
    }

    /// The next update if one is queued.
    pub fn try_recv(&mut self) -> Option<Progress> {
        self.queue.lock().pop_front()
    }

    /// How many updates were dropped for newer ones because the receiver fell behind.
    pub fn coalesced(&self) -> usize {
        self.queue.coalesced.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(n: u32) -> Progress {
        Progress::new(f64::from(n), Some(100.0), None)
    }

    #[tokio::test]
    async fn updates_arrive_in_order_and_the_end_is_seen() {
        let (sender, mut receiver) = progress_channel(8);
        for n in 1..=3 {
            sender.send(update(n));
        }
        drop(sender);
        let mut seen = Vec::new();
        while let Some(progress) = receiver.recv().await {
            seen.push(progress.progress);
        }
        assert_eq!(seen, [1.0, 2.0, 3.0]);
        assert_eq!(receiver.coalesced(), 0);
    }

    #[tokio::test]
    async fn a_slow_receiver_gets_the_newest_and_memory_stays_bounded() {
        let (sender, mut receiver) = progress_channel(4);
        for n in 1..=100_000 {
            sender.send(update(n));
        }
        drop(sender);
        let mut seen = Vec::new();
        while let Some(progress) = receiver.recv().await {
            seen.push(progress.progress);
        }
        assert_eq!(
            seen,
            [99_997.0, 99_998.0, 99_999.0, 100_000.0],
            "the newest, in order"
        );
        assert_eq!(receiver.coalesced(), 100_000 - 4);
    }

    #[tokio::test]
    async fn a_waiting_receiver_wakes_for_an_update_and_for_the_end() {
        let (sender, mut receiver) = progress_channel(2);
        let clone = sender.clone();
        let waiting = tokio::spawn(async move {
            let first = receiver.recv().await;
            let end = receiver.recv().await;
            (first, end)
        });
        tokio::task::yield_now().await;
        clone.send(update(7));
        drop(clone);
        drop(sender);
        let (first, end) = waiting.await.unwrap();
        assert_eq!(first, Some(update(7)));
        assert_eq!(end, None);
    }
}
