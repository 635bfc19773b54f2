//! When and how long to wait before trying a failed model request again.
//!
//! Model servers shed load with `429` and `5xx` and restart under their clients, so a short,
//! growing pause usually turns a failed request into a successful one. The policy is plain data
//! so tests can make every pause tiny.

use std::time::Duration;

/// Retries with exponential backoff: attempt `n` (from 0) waits `base_delay * 2^n`, or the
/// server's `Retry-After` when it sent one, never more than `max_delay`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (so `max_retries + 1` attempts in all).
    pub max_retries: u32,
    /// Pause before the first retry; it doubles for each further one.
    pub base_delay: Duration,
    /// Upper bound of any pause, including one a server asks for with `Retry-After`, so that a
    /// misbehaving server cannot park the agent for hours.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// No retries at all: the first failure is final.
    pub fn none() -> Self {
        RetryPolicy {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The pause before retry number `retry` (0 for the first), honouring the server's
    /// `Retry-After` when present.
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Duration {
        let wanted = retry_after.unwrap_or_else(|| {
            // 2^16 × any sane base is already far beyond any cap; stop there to avoid overflow.
            self.base_delay.saturating_mul(1u32 << retry.min(16))
        });
        wanted.min(self.max_delay)
    }
}

/// Parse a `Retry-After` header given in seconds. The HTTP-date form is rare from model
/// servers and is ignored, which falls back to the policy's own backoff.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let secs: f64 = value.trim().parse().ok()?;
    Duration::try_from_secs_f64(secs).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(base_ms: u64, max_ms: u64) -> RetryPolicy {
        RetryPolicy {
            max_retries: 5,
            base_delay: Duration::from_millis(base_ms),
            max_delay: Duration::from_millis(max_ms),
        }
    }

    #[test]
    fn backoff_doubles_and_is_capped() {
        let p = policy(100, 1_000);
        let delays: Vec<u64> = (0..6).map(|n| p.delay(n, None).as_millis() as u64).collect();
        assert_eq!(delays, [100, 200, 400, 800, 1_000, 1_000]);
    }

    #[test]
    fn retry_after_wins_but_is_capped() {
        let p = policy(100, 5_000);
        assert_eq!(p.delay(3, Some(Duration::from_secs(2))), Duration::from_secs(2));
        assert_eq!(p.delay(0, Some(Duration::ZERO)), Duration::ZERO);
        assert_eq!(
            p.delay(0, Some(Duration::from_secs(3_600))),
            Duration::from_secs(5)
        );
    }

    #[test]
    fn huge_retry_counts_do_not_overflow() {
        let p = RetryPolicy {
            max_delay: Duration::MAX,
            ..policy(500, 0)
        };
        assert!(p.delay(u32::MAX, None) >= Duration::from_secs(30));
    }

    #[test]
    fn parses_seconds_and_ignores_dates() {
        assert_eq!(parse_retry_after(" 7 "), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("0.25"), Some(Duration::from_millis(250)));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
    }
}
