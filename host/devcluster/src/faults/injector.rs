//! The faults in force and the one seeded generator that decides each of them, with the count
//! of what was injected; outages and frozen writes as switches the layer and streams read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use super::{ErrorFault, Faults};
use crate::status::ApiError;

/// The faults in force, the generator, and what was injected.
pub(crate) struct Injector {
    faults: RwLock<Option<Faults>>,
    rng: Mutex<fastrand::Rng>,
    injected: AtomicU64,
    outage_until: Mutex<Option<Instant>>,
    /// Successful writes left before writes freeze (`None`: not armed).
    freeze_after: Mutex<Option<u64>>,
    /// Whether writes are frozen: held, unanswered, until thawed.
    frozen: tokio::sync::watch::Sender<bool>,
    /// Bumped to end every open watch at once (an outage).
    epoch: tokio::sync::watch::Sender<u64>,
}

impl Injector {
    pub(crate) fn new(faults: Option<Faults>) -> Injector {
        let seed = faults.as_ref().map_or(0, |f| f.seed);
        Injector {
            faults: RwLock::new(faults),
            rng: Mutex::new(fastrand::Rng::with_seed(seed)),
            injected: AtomicU64::new(0),
            outage_until: Mutex::new(None),
            epoch: tokio::sync::watch::Sender::new(0),
            freeze_after: Mutex::new(None),
            frozen: tokio::sync::watch::Sender::new(false),
        }
    }

    /// Replaces the faults in force (`None`: none) and reseeds the generator.
    pub(crate) fn set(&self, faults: Option<Faults>) {
        let seed = faults.as_ref().map_or(0, |f| f.seed);
        *self.rng.lock().unwrap_or_else(PoisonError::into_inner) = fastrand::Rng::with_seed(seed);
        *self.faults.write().unwrap_or_else(PoisonError::into_inner) = faults;
    }

    /// How many faults have been injected since the server started.
    pub(crate) fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }

    /// Freezes writes after the next `k` successful ones; resolves once they are frozen.
    pub(crate) fn freeze_after(&self, k: u64) -> impl Future<Output = ()> + use<> {
        *self.freeze_after.lock().unwrap_or_else(PoisonError::into_inner) = Some(k.max(1));
        let mut frozen = self.frozen.subscribe();
        async move {
            let _ = frozen.wait_for(|f| *f).await;
        }
    }

    pub(crate) fn thaw(&self) {
        *self.freeze_after.lock().unwrap_or_else(PoisonError::into_inner) = None;
        self.frozen.send_replace(false);
    }

    /// Holds a write while writes are frozen.
    pub(crate) async fn until_thawed(&self) {
        let _ = self.frozen.subscribe().wait_for(|f| !*f).await;
    }

    /// Counts a successful write; the one that freezes writes is answered only once they thaw.
    pub(crate) async fn wrote(&self) {
        let freezes = {
            let mut left = self.freeze_after.lock().unwrap_or_else(PoisonError::into_inner);
            match left.as_mut() {
                Some(1) => {
                    *left = None;
                    true
                }
                Some(n) => {
                    *n -= 1;
                    false
                }
                None => false,
            }
        };
        if freezes {
            self.injected.fetch_add(1, Ordering::SeqCst);
            self.frozen.send_replace(true);
            self.until_thawed().await;
        }
    }

    /// Ends every open watch and answers 503 to every request for `duration`, as while an
    /// API server restarts; the stored state is kept.
    pub(crate) fn outage(&self, duration: Duration) {
        *self.outage_until.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now() + duration);
        self.epoch.send_modify(|e| *e += 1);
        self.injected.fetch_add(1, Ordering::SeqCst);
    }

    fn with<T>(&self, f: impl FnOnce(&Faults) -> T) -> Option<T> {
        self.faults.read().unwrap_or_else(PoisonError::into_inner).as_ref().map(f)
    }

    /// True with probability `p`, counted as an injected fault.
    fn roll(&self, p: f64) -> bool {
        let hit = p > 0.0 && self.rng.lock().unwrap_or_else(PoisonError::into_inner).f64() < p;
        if hit {
            self.injected.fetch_add(1, Ordering::SeqCst);
        }
        hit
    }

    /// Changes at every outage, which ends every open watch.
    pub(super) fn outages(&self) -> tokio::sync::watch::Receiver<u64> {
        self.epoch.subscribe()
    }

    /// The answer to every request during an outage.
    pub(crate) fn outage_error(&self) -> Option<ApiError> {
        let until = *self.outage_until.lock().unwrap_or_else(PoisonError::into_inner);
        until.is_some_and(|t| Instant::now() < t).then(unavailable)
    }

    /// The fault a request meets instead of being served, if any: `verb` is the Kubernetes
    /// verb, `resource` the plural.
    pub(crate) fn request_fault(&self, verb: &str, resource: &str) -> Option<ErrorFault> {
        let candidates = self.with(|f| {
            f.errors
                .iter()
                .filter(|e| e.verbs.is_empty() || e.verbs.iter().any(|v| v == verb))
                .filter(|e| e.resource.as_deref().is_none_or(|r| r == resource))
                .cloned()
                .collect::<Vec<_>>()
        })?;
        candidates.into_iter().find(|e| self.roll(e.rate))
    }

    /// Whether a watch resuming from a resourceVersion gets `410 Gone`.
    pub(crate) fn watch_gone(&self) -> bool {
        self.with(|f| f.watch.gone_rate).is_some_and(|p| self.roll(p))
    }

    /// What happens before an event is sent on a watch stream.
    pub(crate) fn before_event(&self) -> EventFate {
        let Some(watch) = self.with(|f| f.watch.clone()) else {
            return EventFate::Send(Duration::ZERO);
        };
        if self.roll(watch.cut_rate) {
            EventFate::Cut
        } else if self.roll(watch.stall_rate) {
            EventFate::Stall
        } else if watch.delay_ms > 0 {
            self.injected.fetch_add(1, Ordering::SeqCst);
            EventFate::Send(Duration::from_millis(watch.delay_ms))
        } else {
            EventFate::Send(Duration::ZERO)
        }
    }

    pub(crate) fn drop_bookmarks(&self) -> bool {
        self.with(|f| f.watch.drop_bookmarks).unwrap_or(false)
    }

    /// How far behind reads of `resource` may be served.
    pub(crate) fn stale_behind(&self, resource: &str) -> Option<u64> {
        self.with(|f| f.stale_reads.iter().find(|s| s.resource == resource).map(|s| s.behind))?
    }

    /// Counts a read served at the older version `at`, and returns it.
    pub(crate) fn count_stale(&self, at: u64) -> u64 {
        self.injected.fetch_add(1, Ordering::SeqCst);
        at
    }
}

/// What a watch does with its next event.
pub(crate) enum EventFate {
    /// Send it after this delay.
    Send(Duration),
    /// End the stream instead.
    Cut,
    /// Stop sending but keep the connection open.
    Stall,
}

pub(super) fn unavailable() -> ApiError {
    ApiError::new(503, "ServiceUnavailable", "the server is currently unable to handle the request")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_injects_the_same_faults() {
        let faults = Faults {
            seed: 7,
            errors: vec![ErrorFault { code: 500, rate: 0.5, verbs: vec![], resource: None, retry_after_seconds: 1 }],
            ..Faults::default()
        };
        let run = || {
            let injector = Injector::new(Some(faults.clone()));
            (0..64).map(|_| injector.request_fault("get", "pods").is_some()).collect::<Vec<_>>()
        };
        let first = run();
        assert_eq!(first, run());
        assert!(first.iter().any(|f| *f) && first.iter().any(|f| !*f));
    }
}
