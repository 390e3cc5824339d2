//! Per-tenant bounds: requests per minute (a token bucket; past it HTTP 429 with
//! `Retry-After`, before anything is read as MCP) and calls running at once (past it the
//! call is refused with an error result that says when to retry). One tenant's load never
//! holds up another's: each has its own bucket and its own count.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError},
    time::{Duration, Instant},
};

use brain_tools_config::GatewayLimits;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Debug)]
pub(crate) struct Limits {
    config: GatewayLimits,
    buckets: Mutex<HashMap<String, Bucket>>,
    running: Mutex<HashMap<String, Arc<Semaphore>>>,
}

#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Limits {
    pub(crate) fn new(config: GatewayLimits) -> Self {
        Self {
            config,
            buckets: Mutex::new(HashMap::new()),
            running: Mutex::new(HashMap::new()),
        }
    }

    /// Requests a tenant may make at once before the rate applies: ten seconds' worth,
    /// at least ten.
    fn burst(&self) -> f64 {
        (self.config.requests_per_minute_per_tenant as f64 / 6.0).max(10.0)
    }

    /// Takes one request from the tenant's bucket; `Err(wait)` when it is empty.
    pub(crate) fn admit(&self, tenant: &str) -> Result<(), Duration> {
        let per_second = self.config.requests_per_minute_per_tenant as f64 / 60.0;
        let burst = self.burst();
        let now = Instant::now();
        let mut buckets = lock(&self.buckets);
        let bucket = buckets.entry(tenant.to_owned()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        bucket.tokens =
            (bucket.tokens + now.duration_since(bucket.at).as_secs_f64() * per_second).min(burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - bucket.tokens) / per_second))
        }
    }

    /// A place for one more call of the tenant's, if it has one.
    pub(crate) fn start_call(&self, tenant: &str) -> Option<OwnedSemaphorePermit> {
        let semaphore = {
            let mut running = lock(&self.running);
            Arc::clone(running.entry(tenant.to_owned()).or_insert_with(|| {
                Arc::new(Semaphore::new(
                    usize::try_from(self.config.calls_in_flight_per_tenant).unwrap_or(usize::MAX),
                ))
            }))
        };
        semaphore.try_acquire_owned().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(per_minute: u64, in_flight: u64) -> Limits {
        let mut config = GatewayLimits::default();
        config.requests_per_minute_per_tenant = per_minute;
        config.calls_in_flight_per_tenant = in_flight;
        Limits::new(config)
    }

    #[test]
    fn a_tenant_past_its_burst_waits_and_another_does_not() {
        let limits = limits(60, 64);
        for _ in 0..10 {
            assert!(limits.admit("acme").is_ok());
        }
        let wait = limits.admit("acme").unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(1),
            "{wait:?}"
        );
        assert!(
            limits.admit("globex").is_ok(),
            "tenants have buckets of their own"
        );
    }

    #[test]
    fn calls_in_flight_are_counted_per_tenant() {
        let limits = limits(6000, 2);
        let first = limits.start_call("acme").unwrap();
        let _second = limits.start_call("acme").unwrap();
        assert!(limits.start_call("acme").is_none());
        assert!(limits.start_call("globex").is_some());
        drop(first);
        assert!(limits.start_call("acme").is_some());
    }
}
