//! The tutorial's controller as a level-based decision: classify the observed Jobs,
//! delete the finished ones beyond the history limits (the others stay: the manifest
//! keeps Jobs unlisted), start the Job of
//! the latest missed run (unless suspended, too late, or forbidden by the concurrency
//! policy), report `active` and `lastScheduleTime`, and come back at the next run.

use std::time::Duration;

use kubewasm_sdk::conditions::{Conditions, NewCondition};
use kubewasm_sdk::k8s_openapi::jiff::{SignedDuration, Timestamp};
use kubewasm_sdk::prelude::*;
use kubewasm_sdk::serde_json::{Value, json};
use serde::Deserialize;

use crate::cron;

/// The annotation on each Job with the time of the run it is for (RFC 3339).
pub const SCHEDULED_AT: &str = "batch.tutorial.kubebuilder.io/scheduled-at";

/// More missed runs than this since the last one: the tutorial gives up and asks for a
/// starting deadline.
const MAX_MISSED: usize = 100;

/// The `v1` spec, as far as the controller reads it.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct CronJobSpec {
    #[serde(default)]
    pub schedule: String,
    pub starting_deadline_seconds: Option<i64>,
    #[serde(default)]
    pub concurrency_policy: Option<String>,
    pub suspend: Option<bool>,
    #[serde(default)]
    pub job_template: Value,
    pub successful_jobs_history_limit: Option<i32>,
    pub failed_jobs_history_limit: Option<i32>,
}

#[derive(Deserialize)]
struct CronJob {
    spec: CronJobSpec,
}

/// One observed Job and what the controller reads of it.
struct Observed<'a> {
    job: &'a Object,
    scheduled: Option<Timestamp>,
    started: Option<Timestamp>,
}

/// `Complete` or `Failed` if the Job has finished (that condition `True`).
fn finished(job: &Object) -> Option<&'static str> {
    let conditions = job.status()["conditions"].as_array()?;
    ["Complete", "Failed"].into_iter().find(|t| conditions.iter().any(|c| c["type"] == *t && c["status"] == "True"))
}

fn time(value: &Value) -> Option<Timestamp> {
    value.as_str().and_then(|t| t.parse().ok())
}

/// The decision for one CronJob.
///
/// # Errors
///
/// A permanent [`Error`] when the spec does not parse or more than a hundred runs were
/// missed (the tutorial's message).
pub fn reconcile(req: &Request) -> Result<Response, Error> {
    let parent = req.parent();
    let CronJob { spec } = req.parent_as()?;
    let now = req.now();
    let jobs: Vec<Observed<'_>> = req
        .children()
        .iter()
        .filter(|o| o.kind() == "Job")
        .map(|job| Observed {
            job,
            scheduled: time(&job.json()["metadata"]["annotations"][SCHEDULED_AT]),
            started: time(&job.status()["startTime"]),
        })
        .collect();
    let (mut active, mut succeeded, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    for observed in &jobs {
        match finished(observed.job) {
            None => active.push(observed),
            Some("Complete") => succeeded.push(observed),
            Some(_) => failed.push(observed),
        }
    }
    // The latest run of a Job still there, or the one the status records: a Job the
    // history limits already deleted must not make its run look missed (the tutorial's
    // controller, which reads only the Jobs, starts such a run again when a limit is 0).
    let recorded = time(&parent.status()["lastScheduleTime"]);
    let mut last_schedule = jobs.iter().filter_map(|j| j.scheduled).chain(recorded).max();

    // History: the oldest finished Jobs beyond the limits are deleted; every other Job
    // stays without being named, Jobs being kept unlisted.
    let mut deleted: Vec<&Object> = Vec::new();
    for (finished, limit) in
        [(&mut succeeded, spec.successful_jobs_history_limit), (&mut failed, spec.failed_jobs_history_limit)]
    {
        finished.sort_by_key(|j| j.started);
        let over = limit.map_or(0, |l| finished.len().saturating_sub(usize::try_from(l).unwrap_or(0)));
        deleted.extend(finished.iter().take(over).map(|j| j.job));
    }

    let mut response = Response::new();
    let mut events = Vec::new();
    let mut requeue = None;
    let mut replace_active = false;
    let suspended = spec.suspend.unwrap_or(false);
    if !suspended {
        let schedule = cron::parse(&spec.schedule)
            .map_err(|e| Error::permanent(format!("unparseable schedule {:?}: {e}", spec.schedule)))?;
        let (missed, next) = runs(&schedule, parent, &spec, last_schedule, now)?;
        requeue = next.map(|next| now.duration_until(next));
        if let Some(missed) = missed {
            let too_late = spec
                .starting_deadline_seconds
                .is_some_and(|d| missed.checked_add(SignedDuration::from_secs(d)).is_ok_and(|end| end < now));
            let policy = spec.concurrency_policy.as_deref().unwrap_or("Allow");
            if too_late {
                events.push(Event::warning("MissedSchedule", format!("Missed starting deadline for run at {missed}")));
            } else if policy == "Forbid" && !active.is_empty() {
                events.push(Event::normal(
                    "JobAlreadyActive",
                    format!("Not starting the run at {missed}: concurrency policy Forbid and {} active", active.len()),
                ));
            } else {
                replace_active = policy == "Replace";
                let job = job_for(parent, &spec.job_template, missed);
                let name = job["metadata"]["name"].as_str().unwrap_or_default().to_string();
                if !jobs.iter().any(|j| j.job.name() == name) {
                    response = response.child(&job)?;
                    events.push(Event::normal("SuccessfulCreate", format!("Created job {name}")));
                }
                last_schedule = last_schedule.max(Some(missed));
            }
        }
    }
    if replace_active {
        deleted.extend(active.iter().map(|j| j.job));
    }
    response = deleted.into_iter().fold(response, Response::delete);
    let still_active: Vec<&&Observed<'_>> = if replace_active { Vec::new() } else { active.iter().collect() };
    let mut status = json!({});
    if !still_active.is_empty() {
        status["active"] = json!(still_active.iter().map(|j| j.job.object_reference()).collect::<Vec<_>>());
    }
    if let Some(last) = last_schedule {
        status["lastScheduleTime"] = json!(last.to_string());
    }
    status["conditions"] = json!(conditions(parent, suspended, still_active.len(), failed.len(), now)?);
    response = response.status(&status)?;
    if let Some(after) = requeue.and_then(|d| Duration::try_from(d).ok()) {
        response = response.requeue_after(after);
    }
    Ok(events.into_iter().fold(response, Response::event))
}

/// The latest run missed since the last one (or since the CronJob was created, bounded by
/// the starting deadline) and the next run after `now`: the tutorial's `getNextSchedule`.
fn runs(
    schedule: &cron::Schedule,
    parent: &Object,
    spec: &CronJobSpec,
    last_schedule: Option<Timestamp>,
    now: Timestamp,
) -> Result<(Option<Timestamp>, Option<Timestamp>), Error> {
    let mut earliest = last_schedule.or_else(|| parent.creation_timestamp()).unwrap_or(now);
    if let Some(deadline) = spec.starting_deadline_seconds
        && let Ok(bound) = now.checked_sub(SignedDuration::from_secs(deadline))
        && bound > earliest
    {
        earliest = bound;
    }
    let next = schedule.next(now);
    if earliest > now {
        return Ok((None, next));
    }
    let (mut missed, mut count) = (None, 0);
    let mut t = schedule.next(earliest);
    while let Some(run) = t.filter(|run| *run <= now) {
        missed = Some(run);
        count += 1;
        if count > MAX_MISSED {
            return Err(Error::permanent(
                "Too many missed start times (> 100). Set or decrease .spec.startingDeadlineSeconds or check clock skew.",
            ));
        }
        t = schedule.next(run);
    }
    Ok((missed, next))
}

/// The Job of the run at `scheduled`: named after the CronJob and the run's Unix time
/// (the same name on every reconcile, so never twice), the template's labels,
/// annotations and spec, and the run's time.
fn job_for(parent: &Object, template: &Value, scheduled: Timestamp) -> Value {
    let mut annotations = template["metadata"]["annotations"].as_object().cloned().unwrap_or_default();
    annotations.insert(SCHEDULED_AT.into(), json!(scheduled.to_string()));
    let mut metadata = json!({
        "name": format!("{}-{}", parent.name(), scheduled.as_second()),
        "annotations": annotations,
    });
    if let Some(namespace) = parent.namespace() {
        metadata["namespace"] = json!(namespace);
    }
    if let Some(labels) = template["metadata"]["labels"].as_object().filter(|l| !l.is_empty()) {
        metadata["labels"] = json!(labels);
    }
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": template["spec"].clone()})
}

/// `Available` and `Degraded`, kept as apimachinery keeps conditions.
fn conditions(
    parent: &Object,
    suspended: bool,
    active: usize,
    failed: usize,
    now: Timestamp,
) -> Result<Conditions, Error> {
    let mut conditions = Conditions::from_status(parent.status())?;
    let generation = parent.generation();
    let available = if suspended {
        NewCondition::new("Available", false).reason("Suspended").message("CronJob is suspended")
    } else if active > 0 {
        NewCondition::new("Available", true)
            .reason("JobsActive")
            .message(format!("{active} job(s) are currently active"))
    } else {
        NewCondition::new("Available", true).reason("NoJobsActive").message("No jobs are currently active")
    };
    conditions.set(available.observed_generation(generation), now)?;
    let degraded = if failed > 0 {
        NewCondition::new("Degraded", true).reason("JobsFailed").message(format!("{failed} job(s) have failed"))
    } else {
        NewCondition::new("Degraded", false).reason("NoJobsFailed").message("No job has failed")
    };
    conditions.set(degraded.observed_generation(generation), now)?;
    Ok(conditions)
}
