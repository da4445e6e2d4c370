//! Faults injected on purpose, so that controllers meet what real clusters do to them (the
//! fault classes of Sieve and Acto): failed requests, cut, lagging and expired watches,
//! stale reads, and outages. Off unless configured; every random choice comes from one
//! seeded generator, so a run that fails can be replayed with its seed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::status::ApiError;

/// The faults to inject, as tests set them or `kubewasm dev --faults FILE` reads them (YAML
/// or JSON, camelCase fields). Every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Faults {
    /// Seeds every random choice.
    pub seed: u64,
    /// Requests answered with an error instead of being served; nothing is written.
    pub errors: Vec<ErrorFault>,
    pub watch: WatchFaults,
    /// Resources whose lists and gets are served from an older state.
    pub stale_reads: Vec<StaleReads>,
}

impl Faults {
    /// Reads faults from a YAML or JSON file, as `kubewasm dev --faults FILE` does.
    ///
    /// # Errors
    ///
    /// When the file cannot be read, does not parse, or asks for what cannot be injected; the
    /// error names the file and the field at fault.
    pub fn read(path: &std::path::Path) -> Result<Faults, FaultsError> {
        let at = |message: String| FaultsError { path: path.to_owned(), message };
        let text = std::fs::read_to_string(path).map_err(|e| at(e.to_string()))?;
        let faults: Faults = serde_yaml_ng::from_str(&text).map_err(|e| at(e.to_string()))?;
        faults.check().map_err(at)?;
        Ok(faults)
    }

    /// Refuses what cannot be injected: an unknown status code, a rate outside 0..=1.
    fn check(&self) -> Result<(), String> {
        let rate = |field: String, p: f64| {
            if (0.0..=1.0).contains(&p) { Ok(()) } else { Err(format!("{field}: {p} is not between 0 and 1")) }
        };
        for (i, e) in self.errors.iter().enumerate() {
            if ![409, 429, 500, 503].contains(&e.code) {
                return Err(format!("errors[{i}].code: {} is not one of 409, 429, 500, 503", e.code));
            }
            rate(format!("errors[{i}].rate"), e.rate)?;
        }
        rate("watch.cutRate".into(), self.watch.cut_rate)?;
        rate("watch.stallRate".into(), self.watch.stall_rate)?;
        rate("watch.goneRate".into(), self.watch.gone_rate)
    }
}

/// A faults file that could not be read or is not valid.
#[derive(Debug, thiserror::Error)]
#[error("faults file {}: {message}", path.display())]
pub struct FaultsError {
    pub path: std::path::PathBuf,
    pub message: String,
}

/// Matching requests fail with `code` at `rate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ErrorFault {
    /// 409 (`Conflict`, or `AlreadyExists` for a create), 429, 500 or 503.
    pub code: u16,
    /// The share of matching requests that fail, from 0 to 1.
    pub rate: f64,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`; every verb when empty.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// A resource's plural (`deployments`); every resource when absent.
    #[serde(default)]
    pub resource: Option<String>,
    /// The `Retry-After` of a 429, in seconds.
    #[serde(default = "one")]
    pub retry_after_seconds: u32,
}

fn one() -> u32 {
    1
}

/// What happens to watch streams.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct WatchFaults {
    /// Each event ends its stream first with this probability; the client must watch again.
    pub cut_rate: f64,
    /// Each event leaves its stream half-open with this probability: it stays connected and
    /// sends nothing more until its timeout.
    pub stall_rate: f64,
    /// A watch that resumes from a resourceVersion gets `410 Gone` with this probability.
    pub gone_rate: f64,
    /// No bookmarks are sent.
    pub drop_bookmarks: bool,
    /// Every event is held back this long, in order.
    pub delay_ms: u64,
}

/// Reads of `resource` lag `behind` resourceVersions (within the watch history kept), where
/// the request allows it: `resourceVersion=0` or a `resourceVersion` not older than the lagging
/// one. Reads without a resourceVersion are consistent reads, as on a real server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StaleReads {
    pub resource: String,
    pub behind: u64,
}

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
    pub epoch: tokio::sync::watch::Sender<u64>,
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

    /// The answer to every request during an outage.
    pub(crate) fn outage_error(&self) -> Option<ApiError> {
        let until = *self.outage_until.lock().unwrap_or_else(PoisonError::into_inner);
        until.is_some_and(|t| Instant::now() < t).then(unavailable)
    }

    /// The error a request gets instead of being served, if any. `verb` is the Kubernetes
    /// verb, `resource` the plural, `name` gives the object's name.
    pub(crate) fn request_error(&self, verb: &str, resource: &str, name: impl FnOnce() -> String) -> Option<ApiError> {
        let candidates = self.with(|f| {
            f.errors
                .iter()
                .filter(|e| e.verbs.is_empty() || e.verbs.iter().any(|v| v == verb))
                .filter(|e| e.resource.as_deref().is_none_or(|r| r == resource))
                .cloned()
                .collect::<Vec<_>>()
        })?;
        let fault = candidates.into_iter().find(|e| self.roll(e.rate))?;
        let name = name();
        Some(match fault.code {
            409 if verb == "create" => {
                ApiError::new(409, "AlreadyExists", format!("{resource} {name:?} already exists"))
            }
            409 => ApiError::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {resource} {name:?}: the object has been modified; please apply your changes to the latest version and try again"
                ),
            ),
            429 => ApiError::new(429, "TooManyRequests", "Too many requests, please try again later.")
                .with_details(json!({ "retryAfterSeconds": fault.retry_after_seconds })),
            503 => unavailable(),
            _ => ApiError::new(500, "InternalError", "Internal error occurred: injected fault"),
        })
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

fn unavailable() -> ApiError {
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
            (0..64).map(|_| injector.request_error("get", "pods", String::new).is_some()).collect::<Vec<_>>()
        };
        let first = run();
        assert_eq!(first, run());
        assert!(first.iter().any(|f| *f) && first.iter().any(|f| !*f));
    }

    #[test]
    fn a_faults_file_is_read_and_its_errors_name_the_file_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("faults.yaml");
        std::fs::write(
            &path,
            "seed: 3\nerrors:\n- {code: 429, rate: 0.1, verbs: [patch], retryAfterSeconds: 2}\nwatch: {delayMs: 300}\n",
        )
        .unwrap();
        let faults = Faults::read(&path).unwrap();
        assert_eq!(faults.seed, 3);
        assert_eq!(faults.errors[0].code, 429);
        assert_eq!(faults.errors[0].retry_after_seconds, 2);
        assert_eq!(faults.watch.delay_ms, 300);

        std::fs::write(&path, "errors:\n- {code: 418, rate: 0.1}\n").unwrap();
        let e = Faults::read(&path).unwrap_err().to_string();
        assert!(e.contains("faults.yaml") && e.contains("errors[0].code: 418"), "{e}");

        std::fs::write(&path, "watch: {cutRate: 2}\n").unwrap();
        let e = Faults::read(&path).unwrap_err().to_string();
        assert!(e.contains("watch.cutRate: 2 is not between 0 and 1"), "{e}");

        std::fs::write(&path, "watch: {cutrate: 0.5}\n").unwrap();
        let e = Faults::read(&path).unwrap_err().to_string();
        assert!(e.contains("unknown field `cutrate`"), "{e}");
    }
}
