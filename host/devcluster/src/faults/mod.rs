//! Faults injected on purpose, so that controllers meet what real clusters do to them (the
//! fault classes of Sieve and Acto): failed requests, cut, lagging and expired watches,
//! stale reads, and outages. Off unless configured; every random choice comes from one
//! seeded generator, so a run that fails can be replayed with its seed.
//!
//! The server meets faults in two places only: a request layer in front of its handler
//! (`layer`: refused requests, outages, frozen writes, stale reads, expired watches) and an
//! adapter around every watch stream (`stream`: cut, stalled, delayed events, dropped
//! bookmarks). A new fault class is a field here and a decision in one of the two.

mod injector;
mod layer;
mod stream;

use serde::{Deserialize, Serialize};

pub(crate) use self::injector::Injector;
pub(crate) use self::layer::{FaultLayer, StaleRead, Versions, layer};
pub(crate) use self::stream::{Frame, watch_stream};

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

#[cfg(test)]
mod tests {
    use super::*;

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
