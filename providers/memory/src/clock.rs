//! Time as the store sees it. Timestamps are Unix milliseconds (UTC) everywhere: in the
//! database, in [`MemoryEntry`](crate::types::MemoryEntry) and in exports. Give the store a
//! [`ManualClock`] (through [`OpenOptions::clock`](crate::options::OpenOptions::clock)) to simulate days
//! passing in tests; otherwise it reads the system clock.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Milliseconds in a day.
pub(crate) const DAY_MS: i64 = 86_400_000;

/// A source of the current time.
pub(crate) trait Clock: Send + Sync + std::fmt::Debug {
    /// Now, in Unix milliseconds.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to, so tests can watch memories decay and age without
/// waiting; clones share the same time (keep one, give a clone to the store).
///
/// ```
/// use ctxkit_memory::{ManualClock, OpenOptions, SqliteMemoryStore};
/// let clock = ManualClock::new(0);
/// let dir = tempfile::tempdir()?;
/// let options = OpenOptions::default().clock(clock.clone());
/// let store = SqliteMemoryStore::open_with(dir.path().join("memory.db"), options)?;
/// clock.advance_days(7.0); // the store's "now" is a week later
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock standing at `now_ms` (Unix milliseconds).
    pub fn new(now_ms: i64) -> Self {
        ManualClock(Arc::new(AtomicI64::new(now_ms)))
    }

    /// Move to `now_ms`, forwards or back.
    pub fn set(&self, now_ms: i64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }

    /// Move forward by `ms` milliseconds.
    pub fn advance_ms(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

    /// Move forward by `days` (fractions allowed).
    pub fn advance_days(&self, days: f64) {
        self.advance_ms((days * DAY_MS as f64).round() as i64);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Days between two timestamps (fractional; negative when `to` is earlier).
pub(crate) fn days_between(from_ms: i64, to_ms: i64) -> f64 {
    (to_ms - from_ms) as f64 / DAY_MS as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_when_told() {
        let c = ManualClock::new(1000);
        let shared = c.clone();
        c.advance_days(0.5);
        assert_eq!(shared.now_ms(), 1000 + DAY_MS / 2);
        assert!((days_between(1000, shared.now_ms()) - 0.5).abs() < 1e-6);
        assert!(SystemClock.now_ms() > 1_600_000_000_000);
    }
}
