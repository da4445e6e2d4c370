//! A `Plugin` resource's conditions after an attempt to take its module: `Pulled`,
//! `Verified`, `Loaded`, each `True`, `False` (the step that failed, with its reason) or
//! `Unknown` (not reached); and `Ready`, whether the generation asked for runs. With
//! apimachinery's rule that a condition's `lastTransitionTime` moves only when its status
//! changes.

use super::crd::Condition;
use super::source::{Failure, Step};

/// What an attempt that succeeded says in the conditions.
pub struct Succeeded<'a> {
    /// The reference as the spec gives it.
    pub reference: &'a str,
    /// The manifest digest it resolved to.
    pub digest: &'a str,
    /// Who signed it, when a signature was required.
    pub signed_by: Option<&'a str>,
    /// The plugin's name in its manifest.
    pub plugin: &'a str,
}

/// The conditions of an attempt at `generation`, at `now` (RFC 3339), keeping the
/// transition times of `previous` conditions whose status did not change.
pub fn conditions(
    attempt: Result<&Succeeded<'_>, &Failure>,
    generation: i64,
    now: &str,
    previous: &[Condition],
) -> Vec<Condition> {
    Step::ALL
        .iter()
        .map(|&step| {
            let (status, reason, message) = match attempt {
                Ok(done) => match step {
                    Step::Pulled => ("True", "Pulled", format!("{} is {}", done.reference, done.digest)),
                    Step::Verified => match done.signed_by {
                        Some(signer) => ("True", "SignatureVerified", format!("signed by {signer}")),
                        None => (
                            "True",
                            "VerificationNotRequired",
                            "spec.verification names no key and no keyless identity".to_owned(),
                        ),
                    },
                    Step::Loaded => ("True", "Loaded", format!("plugin {}", done.plugin)),
                },
                Err(failure) if failure.step == step => ("False", failure.reason, failure.message.clone()),
                Err(failure) if reached(failure, step) => ("True", step.as_str(), String::new()),
                Err(_) => ("Unknown", "NotAttempted", "an earlier step failed".to_owned()),
            };
            condition(step.as_str(), status, reason, message, generation, now, previous)
        })
        .collect()
}

/// What runs for a `Plugin` object, for its `Ready` condition.
pub struct Serving<'a> {
    /// Whether the generation last attempted was refused.
    pub refused: bool,
    pub enabled: bool,
    /// Whether its plugin's controller or handler runs.
    pub running: bool,
    /// The kind its plugin waits for, not served yet.
    pub waiting_for: Option<&'a str>,
    /// The manifest digest of the version that runs (or last ran).
    pub digest: Option<&'a str>,
}

/// The `Ready` condition: `True` only when the generation asked for runs.
pub fn ready(serving: &Serving<'_>, generation: i64, now: &str, previous: &[Condition]) -> Condition {
    let digest = serving.digest.unwrap_or("no version");
    let (status, reason, message) = if serving.refused {
        let runs = if serving.running { format!("{digest} keeps running") } else { "nothing runs".to_owned() };
        ("False", "GenerationRefused", format!("generation {generation} was refused; {runs}"))
    } else if !serving.enabled {
        ("False", "Disabled", "spec.enabled is false; its children stay".to_owned())
    } else if serving.running {
        ("True", "Running", format!("{digest} runs"))
    } else if let Some(kind) = serving.waiting_for {
        ("False", "WaitingForKind", format!("{kind} is not served yet"))
    } else {
        ("False", "NotRunning", format!("{digest} is loaded but does not run"))
    };
    condition("Ready", status, reason, message, generation, now, previous)
}

/// A condition, keeping the transition time of `previous`'s of its type when its status
/// did not change.
fn condition(
    kind: &str,
    status: &str,
    reason: &str,
    message: String,
    generation: i64,
    now: &str,
    previous: &[Condition],
) -> Condition {
    let last_transition_time = previous
        .iter()
        .find(|c| c.kind == kind && c.status == status)
        .map_or_else(|| now.to_owned(), |c| c.last_transition_time.clone());
    Condition {
        kind: kind.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message,
        last_transition_time,
        observed_generation: generation,
    }
}

/// Whether `step` was passed before `failure`: the manifest was pulled when the failure
/// is about its signature or its loading, not when the spec itself was refused.
fn reached(failure: &Failure, step: Step) -> bool {
    let after_pull =
        matches!(failure.reason, "NoSignatures" | "UntrustedSigner" | "SignatureForAnotherDigest" | "LoadFailed");
    let order = |s: Step| Step::ALL.iter().position(|&x| x == s);
    after_pull && order(step) < order(failure.step)
}

/// `status.manifest`: what the running version declares, so that what a Plugin object
/// may touch reads from the object itself.
pub fn manifest_summary(plugin: &crate::plugin::Plugin) -> serde_json::Value {
    let manifest = plugin.manifest();
    let kinds = |kinds: &[crate::plugin::KindRef]| kinds.iter().map(ToString::to_string).collect::<Vec<_>>();
    let rules =
        |rules: &[kubewasm_contract::AdmissionRule]| rules.iter().map(|r| r.kind.to_string()).collect::<Vec<_>>();
    serde_json::json!({
        "contract": plugin.contract().as_str(),
        "parent": manifest.parent.as_ref().map(ToString::to_string),
        "children": kinds(&manifest.children),
        "related": kinds(&manifest.related),
        "watches": manifest.watches.iter().map(|w| w.kind.to_string()).collect::<Vec<_>>(),
        "defaults": rules(&manifest.defaults),
        "validates": rules(&manifest.validates),
        "converts": manifest.converts,
        "finalizer": manifest.finalizer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statuses(conditions: &[Condition]) -> Vec<(&str, &str, &str)> {
        conditions.iter().map(|c| (c.kind.as_str(), c.status.as_str(), c.reason.as_str())).collect()
    }

    #[test]
    fn the_failed_step_says_why_and_the_steps_after_it_are_unknown() {
        let untrusted =
            Failure { step: Step::Verified, reason: "UntrustedSigner", message: "not signed by a trusted key".into() };
        let c = conditions(Err(&untrusted), 2, "2026-01-01T00:00:00Z", &[]);
        assert_eq!(
            statuses(&c),
            [
                ("Pulled", "True", "Pulled"),
                ("Verified", "False", "UntrustedSigner"),
                ("Loaded", "Unknown", "NotAttempted")
            ]
        );
        assert_eq!(c[1].message, "not signed by a trusted key");
        assert!(c.iter().all(|c| c.observed_generation == 2));

        let settings = Failure { step: Step::Loaded, reason: "SettingsInvalid", message: "spec.settings: …".into() };
        let c = conditions(Err(&settings), 3, "2026-01-01T00:00:00Z", &[]);
        assert_eq!(
            statuses(&c),
            [
                ("Pulled", "Unknown", "NotAttempted"),
                ("Verified", "Unknown", "NotAttempted"),
                ("Loaded", "False", "SettingsInvalid")
            ]
        );
    }

    #[test]
    fn ready_is_true_only_when_the_generation_asked_for_runs() {
        let serving = |refused, enabled, running, waiting_for| Serving {
            refused,
            enabled,
            running,
            waiting_for,
            digest: Some("sha256:d"),
        };
        let of = |s: &Serving<'_>| {
            let c = ready(s, 4, "2026-01-01T00:00:00Z", &[]);
            (c.status, c.reason, c.message)
        };
        assert_eq!(of(&serving(false, true, true, None)), ("True".into(), "Running".into(), "sha256:d runs".into()));
        assert_eq!(
            of(&serving(true, true, true, None)),
            ("False".into(), "GenerationRefused".into(), "generation 4 was refused; sha256:d keeps running".into())
        );
        assert_eq!(of(&serving(false, false, false, None)).1, "Disabled");
        assert_eq!(
            of(&serving(false, true, false, Some("example.com/v1/App"))),
            ("False".into(), "WaitingForKind".into(), "example.com/v1/App is not served yet".into())
        );
    }

    #[test]
    fn a_transition_time_moves_only_when_the_status_changes() {
        let done = Succeeded {
            reference: "r/p:1",
            digest: "sha256:d",
            signed_by: Some("the key spec.verification.keys[0]"),
            plugin: "foo",
        };
        let first = conditions(Ok(&done), 1, "2026-01-01T00:00:00Z", &[]);
        assert_eq!(
            statuses(&first),
            [("Pulled", "True", "Pulled"), ("Verified", "True", "SignatureVerified"), ("Loaded", "True", "Loaded")]
        );
        let failed = Failure { step: Step::Loaded, reason: "LoadFailed", message: "cannot be compiled".into() };
        let second = conditions(Err(&failed), 2, "2026-01-02T00:00:00Z", &first);
        let times: Vec<&str> = second.iter().map(|c| c.last_transition_time.as_str()).collect();
        assert_eq!(times, ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"]);
    }
}
