//! The retry policy both adapters share, as data: how many retries, the backoff curve, the jitter, and how long a provider may ask us to wait.
//!
//! The defaults are the official SDKs' (anthropic-sdk-python and
//! openai-python, research §2.4): two retries, 0.5 s doubling to at most
//! 8 s, each wait shortened by up to 25% at random; a provider's own wait
//! (`retry-after-ms`, then `retry-after` in seconds or as an HTTP date) is
//! used when it is above zero and at most 60 s. A provider that asks for
//! longer is not retried at all: the error carries the wait it asked for,
//! so the caller can decide (docs/adr/0151).

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::{Duration, SystemTime};

use burrow_runtime::model::ModelError;
use reqwest::header::HeaderMap;

/// When and how often a failed request is sent again.
///
/// A request is retried only while no part of its answer has reached the
/// caller, and only for failures that may go away (rate limits, overload,
/// server errors, broken connections, a stream cut short).
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Most retries after the first attempt (0: never retry).
    pub max_retries: u32,
    /// The wait before the first retry, before jitter.
    pub initial_backoff: Duration,
    /// The longest wait between two attempts, before jitter.
    pub max_backoff: Duration,
    /// How much each wait grows over the one before.
    pub multiplier: f64,
    /// The fraction of each backoff taken off at random (0.25: each wait is
    /// between 75% and 100% of the curve); 0 for exact waits.
    pub jitter: f64,
    /// The longest wait a provider may ask for; asking for longer ends the retries.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            multiplier: 2.0,
            jitter: 0.25,
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The backoff before retry number `retry` (0 for the first), before jitter:
    /// `initial_backoff * multiplier^retry`, at most `max_backoff`.
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = self
            .multiplier
            .max(1.0)
            .powi(i32::try_from(retry).unwrap_or(i32::MAX));
        let secs = self.initial_backoff.as_secs_f64() * factor;
        let max = self.max_backoff.as_secs_f64();
        if !secs.is_finite() || secs >= max {
            return self.max_backoff;
        }
        Duration::from_secs_f64(secs.max(0.0))
    }

    /// How long to wait before retry number `retry` (0 for the first) after
    /// `error`, or `None` when it must not be retried: the retries are spent,
    /// or the provider asked for a wait longer than `max_retry_after`.
    ///
    /// # Behavior
    /// A provider's wait in `error.retry_after` is used as it is when it is
    /// above zero and at most `max_retry_after`; otherwise the wait is
    /// [`backoff`](Self::backoff) with jitter. Whether the failure is of a
    /// kind worth retrying is the caller's to decide before asking.
    pub fn delay(&self, retry: u32, error: &ModelError) -> Option<Duration> {
        if retry >= self.max_retries {
            return None;
        }
        match error.retry_after {
            Some(wait) if wait > self.max_retry_after => None,
            Some(wait) if !wait.is_zero() => Some(wait),
            _ => Some(self.jittered(self.backoff(retry))),
        }
    }

    fn jittered(&self, wait: Duration) -> Duration {
        let jitter = self.jitter.clamp(0.0, 1.0);
        if jitter == 0.0 {
            return wait;
        }
        wait.mul_f64(1.0 - jitter * random_unit())
    }
}

/// A number in `[0, 1)`, different on each call (std's per-instance hash
/// keys; no need for a random-number crate to spread retries).
fn random_unit() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u8(0);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// The wait a response asks for: `retry-after-ms` (milliseconds), else
/// `retry-after` as seconds or as an HTTP date. `None` when neither is there
/// or parses.
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    parse_retry_after(
        text("retry-after-ms"),
        text("retry-after"),
        SystemTime::now(),
    )
}

/// [`retry_after`] over the two header values, with `now` for HTTP dates
/// (a date in the past is a wait of zero).
pub fn parse_retry_after(
    retry_after_ms: Option<&str>,
    retry_after: Option<&str>,
    now: SystemTime,
) -> Option<Duration> {
    if let Some(ms) = retry_after_ms.and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = retry_after?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use burrow_runtime::model::ModelErrorKind;

    #[test]
    fn backoff_doubles_to_its_cap() {
        let p = RetryPolicy::default();
        let waits: Vec<u128> = (0..7).map(|n| p.backoff(n).as_millis()).collect();
        assert_eq!(waits, [500, 1000, 2000, 4000, 8000, 8000, 8000]);
    }

    #[test]
    fn jitter_shortens_by_at_most_its_fraction() {
        let p = RetryPolicy {
            max_retries: 10,
            ..RetryPolicy::default()
        };
        let e = ModelError::new(ModelErrorKind::Server, "x");
        for _ in 0..200 {
            let wait = p.delay(1, &e).map(|d| d.as_secs_f64());
            assert!(wait.is_some_and(|w| (0.75..=1.0).contains(&w)), "{wait:?}");
        }
    }

    #[test]
    fn provider_waits_are_honoured_up_to_the_cap() {
        let p = RetryPolicy::default();
        let e = |s: u64| {
            ModelError::new(ModelErrorKind::RateLimited, "x")
                .with_retry_after(Duration::from_secs(s))
        };
        assert_eq!(p.delay(0, &e(3)), Some(Duration::from_secs(3)));
        assert_eq!(p.delay(0, &e(61)), None);
        assert_eq!(p.delay(2, &e(3)), None, "two retries are the budget");
        let zero = p.delay(0, &e(0));
        assert!(zero.is_some_and(|w| w >= Duration::from_millis(375)));
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_445_412_480);
        assert_eq!(
            parse_retry_after(Some("1500"), Some("9"), now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after(None, Some("2"), now),
            Some(Duration::from_secs(2))
        );
        // 1445412480 is Wed, 21 Oct 2015 07:28:00 GMT.
        assert_eq!(
            parse_retry_after(None, Some("Wed, 21 Oct 2015 07:28:30 GMT"), now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(
            parse_retry_after(None, Some("Wed, 21 Oct 2015 07:00:00 GMT"), now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after(Some("soon"), Some("later"), now), None);
    }
}
