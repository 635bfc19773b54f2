//! Time as the store sees it. Timestamps are Unix milliseconds (UTC) everywhere: in the
//! database, in [`MemoryEntry`](crate::MemoryEntry) and in exports. Inject a [`ManualClock`]
//! to simulate days passing in tests.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;

/// A source of the current time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now, in Unix milliseconds.
    fn now_ms(&self) -> i64;
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
}

/// A clock that moves only when told to; clones share the same time.
///
/// ```
/// use ctxkit_memory::{Clock, ManualClock};
/// let clock = ManualClock::new(0);
/// clock.advance_days(7.0);
/// assert_eq!(clock.now_ms(), 7 * 86_400_000);
/// ```
#[derive(Clone, Debug, Default)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    pub fn new(now_ms: i64) -> Self {
        ManualClock(Arc::new(AtomicI64::new(now_ms)))
    }

    pub fn set(&self, now_ms: i64) {
        self.0.store(now_ms, Ordering::SeqCst);
    }

    pub fn advance_ms(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }

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
pub fn days_between(from_ms: i64, to_ms: i64) -> f64 {
    (to_ms - from_ms) as f64 / DAY_MS as f64
}

/// A timestamp as RFC 3339 UTC with second precision, e.g. `2024-05-01T12:00:00Z`.
pub fn format_rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_dates() {
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(format_rfc3339(1_714_564_800_000), "2024-05-01T12:00:00Z");
    }

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
