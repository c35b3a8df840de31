//! Rate-limited logging of what outsiders cause: a peer that sends a
//! thousand bad requests a second must not write a thousand log lines a
//! second. Pure bookkeeping; the caller logs.
//!
//! Owns: [`LogLimiter`], per key (a peer id, or `()` for one kind of line)
//! a window of at most N lines, and the count of lines suppressed since.
//! Does not own: the log itself, or escaping (format untrusted text with
//! `{:?}`).

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

struct Window {
    started: Instant,
    lines: u32,
    suppressed: u64,
}

/// At most `per_window` lines per key per `window`.
pub struct LogLimiter<K> {
    per_window: u32,
    window: Duration,
    keys: HashMap<K, Window>,
}

impl<K: Hash + Eq> LogLimiter<K> {
    /// A limiter allowing `per_window` lines per key every `window`.
    pub fn new(per_window: u32, window: Duration) -> Self {
        Self {
            per_window,
            window,
            keys: HashMap::new(),
        }
    }

    /// Whether a line about `key` may be logged now: `Some(n)` with the
    /// number of lines about it suppressed since the last one logged
    /// (say so in the line), `None` to stay silent.
    pub fn allow(&mut self, key: K, now: Instant) -> Option<u64> {
        let window = self.keys.entry(key).or_insert(Window {
            started: now,
            lines: 0,
            suppressed: 0,
        });
        if now.saturating_duration_since(window.started) >= self.window {
            window.started = now;
            window.lines = 0;
        }
        if window.lines >= self.per_window {
            window.suppressed += 1;
            return None;
        }
        window.lines += 1;
        Some(std::mem::take(&mut window.suppressed))
    }

    /// Forgets a key (a peer that left), so the table stays as small as the
    /// set of keys in use.
    pub fn forget(&mut self, key: &K) {
        self.keys.remove(key);
    }
}

/// " (N similar lines suppressed)" when N > 0, for the end of a line.
pub fn suppressed_note(suppressed: u64) -> String {
    if suppressed == 0 {
        String::new()
    } else {
        format!(" ({suppressed} similar lines suppressed)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_past_the_window_are_counted_not_logged() {
        let mut limiter = LogLimiter::new(3, Duration::from_secs(10));
        let now = Instant::now();
        for _ in 0..3 {
            assert_eq!(limiter.allow(7u64, now), Some(0));
        }
        for _ in 0..100 {
            assert_eq!(limiter.allow(7, now), None);
        }
        assert_eq!(limiter.allow(8, now), Some(0), "another key has its own");
        let later = now + Duration::from_secs(10);
        assert_eq!(limiter.allow(7, later), Some(100), "the next says how many");
        assert_eq!(limiter.allow(7, later), Some(0));
        limiter.forget(&7);
        assert!(limiter.keys.len() == 1);
        assert_eq!(suppressed_note(0), "");
        assert!(suppressed_note(5).contains("5 similar"));
    }
}
