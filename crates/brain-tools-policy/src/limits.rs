//! The limits a call runs under: one deadline for the whole call, and a byte budget for
//! its response.

use std::time::{Duration, Instant};

use brain_tools_config::ToolBinding;

/// A binding's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Bound on steps 2 to 5 together (open, call, stream, return).
    pub timeout: Duration,
    /// Bound on the response's bytes as received.
    pub max_output_bytes: u64,
}

impl Limits {
    /// The limits of a binding.
    pub fn of(binding: &ToolBinding) -> Self {
        Self {
            timeout: Duration::from_secs(binding.timeout_seconds),
            max_output_bytes: binding.max_output_bytes,
        }
    }

    /// The call's deadline when it starts now.
    pub fn deadline_from_now(&self) -> Deadline {
        Deadline::after(self.timeout)
    }

    /// A fresh budget for the call's response.
    pub fn byte_budget(&self) -> ByteBudget {
        ByteBudget::new(self.max_output_bytes)
    }
}

/// A point in time computed once when the call starts; every step checks against it
/// (never a sum of per-step timeouts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Deadline {
    at: Instant,
}

impl Deadline {
    /// `timeout` from now.
    pub fn after(timeout: Duration) -> Self {
        Self {
            at: Instant::now() + timeout,
        }
    }

    /// The instant itself.
    pub fn instant(&self) -> Instant {
        self.at
    }

    /// Time left, zero once passed.
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// Whether it has passed.
    pub fn has_passed(&self) -> bool {
        Instant::now() >= self.at
    }
}

/// Counts the bytes of a response against `max_output_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteBudget {
    limit: u64,
    used: u64,
}

/// A response went over its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the output exceeded {limit} bytes")]
pub struct BudgetExceeded {
    /// The budget.
    pub limit: u64,
}

impl ByteBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: u64) -> Self {
        Self { limit, used: 0 }
    }

    /// Counts `bytes` more; past the limit, an error (and every later call errs too).
    pub fn consume(&mut self, bytes: u64) -> Result<(), BudgetExceeded> {
        self.used = self.used.saturating_add(bytes);
        if self.used > self.limit {
            Err(BudgetExceeded { limit: self.limit })
        } else {
            Ok(())
        }
    }

    /// The limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes counted so far.
    pub fn used(&self) -> u64 {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_allows_exactly_the_limit() {
        let mut budget = ByteBudget::new(10);
        assert!(budget.consume(4).is_ok());
        assert!(budget.consume(6).is_ok());
        assert_eq!(budget.consume(1), Err(BudgetExceeded { limit: 10 }));
        assert!(budget.consume(0).is_err(), "stays exceeded");
    }

    #[test]
    fn deadline_is_computed_once() {
        let deadline = Deadline::after(Duration::from_millis(20));
        assert!(!deadline.has_passed());
        assert!(deadline.remaining() <= Duration::from_millis(20));
        std::thread::sleep(Duration::from_millis(25));
        assert!(deadline.has_passed());
        assert_eq!(deadline.remaining(), Duration::ZERO);
    }
}
