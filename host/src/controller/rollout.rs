//! A candidate version of a plugin beside the active one, as a `Plugin`'s `spec.rollout`
//! asks. In shadow the candidate is called after the active on every reconcile, with the
//! same request, and writes nothing: where its answer differs, the difference is counted
//! and the latest one kept for the status and `kubewasm diff`. As a canary it reconciles a
//! stable share of the parents, chosen by a hash of each parent's uid, so that a parent
//! changes version only when the rollout does. When too many of the candidate's reconciles
//! fail over a window, the rollout is rolled back: every parent returns to the active.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::coordination::shard;
use crate::plugin::{Plugin, Response};

/// A candidate version and how it is rolled out. Shared by the controller, which routes
/// and records, and the runtime, which reports.
pub struct Rollout {
    candidate: Arc<Plugin>,
    progress: Progress,
}

impl std::ops::Deref for Rollout {
    type Target = Progress;

    fn deref(&self) -> &Progress {
        &self.progress
    }
}

/// Where the candidate takes part and how it fares, whatever it is.
pub struct Progress {
    strategy: Strategy,
    rollback: Rollback,
    record: Mutex<Record>,
}

/// How the candidate takes part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Called after the active on every reconcile; writes nothing.
    Shadow,
    /// Reconciles this percentage of the parents (0 to 100) in the active's place.
    Canary { percent: u8 },
}

/// When the candidate is rolled back: more than `error_percent` of its reconciles in the
/// last `window` failed, counting only once it has made `min_reconciles` of them there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rollback {
    pub error_percent: u8,
    pub min_reconciles: u32,
    pub window: Duration,
}

impl Default for Rollback {
    fn default() -> Self {
        Self { error_percent: 50, min_reconciles: 10, window: Duration::from_mins(5) }
    }
}

/// Which version reconciles a parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    Active,
    Candidate,
}

impl Version {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Version::Active => "active",
            Version::Candidate => "candidate",
        }
    }
}

/// What the rollout has seen so far, as the `Plugin`'s `status.rollout` shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Reconciles whose answers were compared (shadow).
    pub compared: u64,
    /// Of those, the ones whose answers differed.
    pub differing: u64,
    /// Reconciles the candidate made or answered (shadow), and how many failed.
    pub candidate_reconciles: u64,
    pub candidate_errors: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_difference: Option<Difference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_candidate_error: Option<String>,
    /// Why the candidate was rolled back; it no longer runs until the rollout changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rolled_back: Option<String>,
}

/// One parent on which the candidate answered otherwise than the active.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// `NAMESPACE/NAME` of the parent.
    pub parent: String,
    /// When it was seen (RFC 3339).
    pub at: String,
    /// One line per differing field: `PATH: ACTIVE → CANDIDATE`.
    pub lines: Vec<String>,
}

#[derive(Default)]
struct Record {
    report: Report,
    /// The candidate's recent reconciles: when, and whether they failed.
    window: VecDeque<(Instant, bool)>,
}

impl Rollout {
    pub fn new(candidate: Arc<Plugin>, strategy: Strategy, rollback: Rollback) -> Self {
        Self { candidate, progress: Progress::new(strategy, rollback) }
    }

    pub fn candidate(&self) -> &Arc<Plugin> {
        &self.candidate
    }
}

impl Progress {
    fn new(strategy: Strategy, rollback: Rollback) -> Self {
        Self { strategy, rollback, record: Mutex::default() }
    }

    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// What the rollout has seen so far.
    pub fn report(&self) -> Report {
        self.record().report.clone()
    }

    fn record(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn rolled_back(&self) -> bool {
        self.record().report.rolled_back.is_some()
    }

    /// The version that reconciles the parent of `uid`: a canary's share of the parents,
    /// stable for as long as the rollout is, or the active.
    pub(crate) fn version_for(&self, plugin: &str, uid: &str) -> Version {
        match self.strategy {
            Strategy::Canary { percent } if !self.rolled_back() && in_canary(plugin, uid, percent) => {
                Version::Candidate
            }
            _ => Version::Active,
        }
    }

    /// Whether the candidate is to be called after the active.
    pub(crate) fn shadows(&self) -> bool {
        self.strategy == Strategy::Shadow && !self.rolled_back()
    }

    /// Records one of the candidate's reconciles (or shadow answers); true when this one
    /// rolled the candidate back.
    pub(crate) fn outcome(&self, error: Option<&str>) -> bool {
        let now = Instant::now();
        let mut record = self.record();
        let Record { report, window } = &mut *record;
        report.candidate_reconciles += 1;
        if let Some(error) = error {
            report.candidate_errors += 1;
            report.last_candidate_error = Some(error.to_string());
        }
        window.push_back((now, error.is_some()));
        while window.front().is_some_and(|(at, _)| now.duration_since(*at) > self.rollback.window) {
            window.pop_front();
        }
        if report.rolled_back.is_some() {
            return false;
        }
        let total = window.len();
        let failed = window.iter().filter(|(_, failed)| *failed).count();
        let Rollback { error_percent, min_reconciles, window: span } = self.rollback;
        if total < usize::try_from(min_reconciles).unwrap_or(usize::MAX)
            || failed * 100 <= total * usize::from(error_percent)
        {
            return false;
        }
        report.rolled_back = Some(format!(
            "{failed} of the candidate's {total} reconciles in the last {}s failed, more than {error_percent}%; \
             the last: {}",
            span.as_secs(),
            report.last_candidate_error.as_deref().unwrap_or_default()
        ));
        true
    }

    /// Compares the candidate's answer for `parent` with the active's; true when they differ.
    pub(crate) fn compare(&self, parent: &str, active: &Response, candidate: &Response) -> bool {
        let lines = differences(active, candidate);
        let mut record = self.record();
        record.report.compared += 1;
        if lines.is_empty() {
            return false;
        }
        record.report.differing += 1;
        let at = jiff::Timestamp::now().to_string();
        record.report.last_difference = Some(Difference { parent: parent.to_string(), at, lines });
        true
    }
}

/// Whether the parent of `uid` is in a canary's `percent` of `plugin`'s parents. A
/// threshold on a hash every replica computes alike: raising the percentage only adds
/// parents, lowering it only returns some to the active.
pub fn in_canary(plugin: &str, uid: &str, percent: u8) -> bool {
    let threshold = u128::from(percent.min(100)) * (1u128 << 64) / 100;
    u128::from(shard::weight(&format!("canary/{plugin}"), uid)) < threshold
}

/// The most lines a difference keeps.
const MOST_LINES: usize = 20;

/// How the candidate's answer differs from the active's, field by field; empty when it
/// does not. Children are matched by kind, namespace and name, not by position.
pub fn differences(active: &Response, candidate: &Response) -> Vec<String> {
    let mut lines = Vec::new();
    diff("", &comparable(active), &comparable(candidate), &mut lines);
    if lines.len() > MOST_LINES {
        let more = lines.len() - MOST_LINES;
        lines.truncate(MOST_LINES);
        lines.push(format!("… and {more} more"));
    }
    lines
}

/// What of an answer takes effect, keyed so that a field's path reads as what it is.
fn comparable(response: &Response) -> Value {
    let children: Map<String, Value> = response.children.iter().map(|c| (child_key(c), c.clone())).collect();
    json!({
        "children": children,
        "status": response.status,
        "labels": response.labels,
        "annotations": response.annotations,
        "events": response.events,
        "delete": response.delete,
        "finalized": response.finalized,
        "requeueAfter": response.requeue_after.map(|d| format!("{}s", d.as_secs_f64())),
    })
}

fn child_key(child: &Value) -> String {
    let field = |pointer: &str| child.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
    let namespace = field("/metadata/namespace");
    let name = field("/metadata/name");
    let object = if namespace.is_empty() { name.to_string() } else { format!("{namespace}/{name}") };
    format!("{} {} {object}", field("/apiVersion"), field("/kind"))
}

fn diff(path: &str, active: &Value, candidate: &Value, lines: &mut Vec<String>) {
    if active == candidate {
        return;
    }
    match (active, candidate) {
        (Value::Object(a), Value::Object(c)) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(c.keys()).collect();
            for key in keys {
                let at = if path.is_empty() {
                    key.clone()
                } else if key.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_') {
                    format!("{path}.{key}")
                } else {
                    format!("{path}[{key:?}]")
                };
                match (a.get(key), c.get(key)) {
                    (Some(a), Some(c)) => diff(&at, a, c, lines),
                    (Some(a), None) => lines.push(format!("{at}: only the active: {}", shown(a))),
                    (None, Some(c)) => lines.push(format!("{at}: only the candidate: {}", shown(c))),
                    (None, None) => {}
                }
            }
        }
        (Value::Array(a), Value::Array(c)) if a.len() == c.len() => {
            for (i, (a, c)) in a.iter().zip(c).enumerate() {
                diff(&format!("{path}[{i}]"), a, c, lines);
            }
        }
        _ => lines.push(format!("{path}: {} → {}", shown(active), shown(candidate))),
    }
}

/// A value on one line, cut short.
fn shown(value: &Value) -> String {
    const LONGEST: usize = 160;
    let text = value.to_string();
    if text.chars().count() <= LONGEST {
        return text;
    }
    let mut cut: String = text.chars().take(LONGEST).collect();
    let _ = write!(cut, "… ({} characters)", text.chars().count());
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::Event;

    fn deployment(name: &str, replicas: u32) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": name, "namespace": "default"}, "spec": {"replicas": replicas}})
    }

    #[test]
    fn equal_answers_have_no_difference() {
        let response = Response { children: vec![deployment("web", 2)], ..Response::default() };
        assert!(differences(&response, &response.clone()).is_empty());
    }

    #[test]
    fn children_are_matched_by_name_not_position() {
        let active = Response { children: vec![deployment("a", 1), deployment("b", 2)], ..Response::default() };
        let candidate = Response { children: vec![deployment("b", 3), deployment("a", 1)], ..Response::default() };
        assert_eq!(
            differences(&active, &candidate),
            vec![r#"children["apps/v1 Deployment default/b"].spec.replicas: 2 → 3"#]
        );
    }

    #[test]
    fn added_and_missing_children_status_and_events_are_named() {
        let active = Response {
            children: vec![deployment("a", 1)],
            status: Some(json!({"phase": "Ready"})),
            ..Response::default()
        };
        let candidate = Response {
            children: vec![deployment("b", 1)],
            status: Some(json!({"phase": "Ready", "replicas": 1})),
            events: vec![Event::normal("Scaled", "to 1")],
            ..Response::default()
        };
        let lines = differences(&active, &candidate);
        assert_eq!(
            lines,
            vec![
                r#"children["apps/v1 Deployment default/a"]: only the active: {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a","namespace":"default"},"spec":{"replicas":1}}"#,
                r#"children["apps/v1 Deployment default/b"]: only the candidate: {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"b","namespace":"default"},"spec":{"replicas":1}}"#,
                r#"events: [] → [{"type":"Normal","reason":"Scaled","message":"to 1"}]"#,
                "status.replicas: only the candidate: 1",
            ]
        );
    }

    #[test]
    fn a_canary_share_is_about_its_percentage_and_grows_monotonically() {
        let uids: Vec<String> = (0..2000).map(|i| format!("0000-{i:08}")).collect();
        let share = |percent| uids.iter().filter(|u| in_canary("web", u, percent)).count();
        let thirty = share(30);
        assert!((500..700).contains(&thirty), "30% of 2000 parents chose {thirty}");
        assert_eq!(share(0), 0);
        assert_eq!(share(100), 2000);
        // Raising the share only adds parents.
        assert!(uids.iter().all(|u| !in_canary("web", u, 30) || in_canary("web", u, 31)));
    }

    #[test]
    fn too_many_failures_in_the_window_roll_back() {
        let rollback = Rollback { error_percent: 50, min_reconciles: 4, window: Duration::from_mins(1) };
        let rollout = Progress::new(Strategy::Canary { percent: 100 }, rollback);
        assert_eq!(rollout.version_for("web", "uid"), Version::Candidate);
        // Three failures of three: not enough reconciles yet to judge.
        for _ in 0..3 {
            assert!(!rollout.outcome(Some("boom")));
        }
        assert_eq!(rollout.version_for("web", "uid"), Version::Candidate);
        assert!(rollout.outcome(None), "3 of 4 failed, more than 50%");
        assert_eq!(rollout.version_for("web", "uid"), Version::Active);
        let report = rollout.report();
        assert_eq!((report.candidate_reconciles, report.candidate_errors), (4, 3));
        assert!(report.rolled_back.as_deref().is_some_and(|why| why.contains("3 of the candidate's 4")), "{report:?}");
        // Once rolled back, it stays so: nothing flips a parent back.
        assert!(!rollout.outcome(None));
    }

    #[test]
    fn half_failing_is_not_more_than_half() {
        let rollback = Rollback { error_percent: 50, min_reconciles: 2, window: Duration::from_mins(1) };
        let rollout = Progress::new(Strategy::Shadow, rollback);
        assert!(!rollout.outcome(Some("boom")));
        assert!(!rollout.outcome(None));
        assert!(rollout.shadows());
    }
}
