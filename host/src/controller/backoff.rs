//! Per-parent exponential backoff: 5 ms doubling to 5 min on consecutive failures,
//! forgotten on success; 5 min at once for a failure that retrying cannot fix (a change
//! to the parent or its inputs reconciles it at once anyway).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

const FIRST: Duration = Duration::from_millis(5);
const MAX: Duration = Duration::from_mins(5);

/// Failure counts per key (a parent).
pub(crate) struct Backoff<K> {
    failures: Mutex<HashMap<K, u32>>,
}

impl<K: Eq + Hash> Backoff<K> {
    pub(crate) fn new() -> Self {
        Self { failures: Mutex::new(HashMap::new()) }
    }

    /// Records a failure of `key` and returns how long to wait before retrying.
    pub(crate) fn fail(&self, key: K) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let n = failures.entry(key).or_insert(0);
        let delay = FIRST.saturating_mul(1 << (*n).min(31)).min(MAX);
        *n = n.saturating_add(1);
        delay
    }

    /// Records a failure that only a change can fix, and returns the longest delay.
    pub(crate) fn fail_permanently(&self, key: K) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        failures.insert(key, 31);
        MAX
    }

    /// Records a success: the next failure starts from the shortest delay again.
    pub(crate) fn succeed(&self, key: &K) {
        self.failures.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap_and_reset_on_success() {
        let b = Backoff::new();
        assert_eq!(b.fail("a"), Duration::from_millis(5));
        assert_eq!(b.fail("a"), Duration::from_millis(10));
        assert_eq!(b.fail("a"), Duration::from_millis(20));
        assert_eq!(b.fail("b"), Duration::from_millis(5), "parents back off independently");
        for _ in 0..40 {
            b.fail("a");
        }
        assert_eq!(b.fail("a"), MAX);
        b.succeed(&"a");
        assert_eq!(b.fail("a"), Duration::from_millis(5));
        assert_eq!(b.fail_permanently("c"), MAX, "no retry soon for what only a change fixes");
        assert_eq!(b.fail("c"), MAX, "nor after it");
    }
}
