//! The CronJob plugin through the SDK's native harness: the reconcile the host would
//! run, the tutorial's defaulting and validation, and `v1` <-> `v2` conversion.

use std::path::Path;
use std::time::Duration;

use cronjob::CronJobs;
use kubewasm_sdk::Object;
use kubewasm_sdk::k8s_openapi::api::batch::v1::Job;
use kubewasm_sdk::prelude::{KindRef, Reconciler};
use kubewasm_sdk::serde_json::{Value, json};
use kubewasm_sdk::testing::{self, TestRequest, TestWrite};

fn example(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let value: Value = serde_yaml_ng::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    value
}

fn jobs() -> Vec<Value> {
    example("observed.yaml")["items"].as_array().cloned().unwrap()
}

fn with_spec(mut parent: Value, spec: Value) -> Value {
    for (k, v) in spec.as_object().unwrap() {
        parent["spec"][k] = v.clone();
    }
    parent
}

fn names(children: &[Object]) -> Vec<String> {
    children.iter().map(|c| c.name().to_string()).collect()
}

// ---- reconcile ---------------------------------------------------------------------

#[test]
fn jobs_are_kept_unlisted_so_that_no_branch_deletes_a_running_one_by_leaving_it_out() {
    assert_eq!(CronJobs::describe().keep_unlisted, [KindRef::of::<Job>()]);
}

#[test]
fn a_due_run_starts_its_job_keeps_the_running_one_and_deletes_beyond_the_history_limit() {
    let mut request = TestRequest::new(example("parent.yaml")).now("2026-01-01T00:00:30Z");
    for job in jobs() {
        request = request.child(job);
    }
    let outcome = testing::reconcile::<CronJobs>(request).unwrap();
    // 23:57 is the older of two complete Jobs with a limit of one: deleted by name. The
    // complete 23:58 and the running 23:59 are left out, so kept (Jobs are kept unlisted).
    assert_eq!(names(&outcome.children), ["cronjob-sample-1767225600"]);
    assert_eq!(names(&outcome.deleted), ["cronjob-sample-1767225420"]);
    let new = &outcome.children[0];
    assert_eq!(
        new.json()["metadata"]["annotations"]["batch.tutorial.kubebuilder.io/scheduled-at"],
        "2026-01-01T00:00:00Z"
    );
    assert_eq!(new.json()["metadata"]["labels"], json!({"app": "hello"}));
    assert_eq!(new.json()["spec"], example("parent.yaml")["spec"]["jobTemplate"]["spec"]);
    assert!(new.uid().is_empty(), "a new Job, not a kept one");
    let status = outcome.status.clone().unwrap();
    assert_eq!(status["lastScheduleTime"], "2026-01-01T00:00:00Z");
    assert_eq!(status["active"].as_array().unwrap().len(), 1);
    assert_eq!(status["active"][0]["name"], "cronjob-sample-1767225540");
    assert_eq!(status["conditions"][0]["reason"], "JobsActive");
    assert_eq!(outcome.requeue_after, Some(Duration::from_secs(30)));
}

#[test]
fn forbid_skips_a_run_while_a_job_is_active_and_replace_ends_the_active_one() {
    let run = |policy: &str| {
        let parent = with_spec(example("parent.yaml"), json!({"concurrencyPolicy": policy}));
        let mut request = TestRequest::new(parent).now("2026-01-01T00:00:30Z");
        for job in jobs() {
            request = request.child(job);
        }
        testing::reconcile::<CronJobs>(request).unwrap()
    };
    let forbid = run("Forbid");
    assert!(forbid.children.is_empty(), "{:?}", names(&forbid.children));
    assert_eq!(names(&forbid.deleted), ["cronjob-sample-1767225420"], "the running Job is not deleted");
    assert_eq!(forbid.status.as_ref().unwrap()["lastScheduleTime"], "2025-12-31T23:59:00Z");
    assert!(forbid.events.iter().any(|e| e.reason == "JobAlreadyActive"), "{:?}", forbid.events);
    let replace = run("Replace");
    assert_eq!(names(&replace.children), ["cronjob-sample-1767225600"]);
    assert_eq!(names(&replace.deleted), ["cronjob-sample-1767225420", "cronjob-sample-1767225540"]);
    assert!(replace.status.as_ref().unwrap().get("active").is_none());
}

#[test]
fn a_run_whose_job_the_history_limit_deleted_is_not_started_again() {
    let mut parent = with_spec(example("parent.yaml"), json!({"successfulJobsHistoryLimit": 0}));
    parent["status"] = json!({"lastScheduleTime": "2026-01-01T00:00:00Z"});
    let outcome = testing::reconcile::<CronJobs>(TestRequest::new(parent).now("2026-01-01T00:00:45Z")).unwrap();
    assert!(outcome.children.is_empty(), "{:?}", names(&outcome.children));
    assert_eq!(outcome.status.unwrap()["lastScheduleTime"], "2026-01-01T00:00:00Z");
    assert_eq!(outcome.requeue_after, Some(Duration::from_secs(15)));
}

#[test]
fn a_suspended_cronjob_starts_nothing_deletes_no_running_job_and_is_not_requeued() {
    let parent = with_spec(example("parent.yaml"), json!({"suspend": true}));
    let mut request = TestRequest::new(parent).now("2026-01-01T00:00:30Z");
    for job in jobs() {
        request = request.child(job);
    }
    let outcome = testing::reconcile::<CronJobs>(request).unwrap();
    assert!(outcome.children.is_empty());
    // The history limit still applies; the running 23:59 is left out, so kept.
    assert_eq!(names(&outcome.deleted), ["cronjob-sample-1767225420"]);
    assert_eq!(outcome.requeue_after, None);
    assert_eq!(outcome.status.unwrap()["conditions"][0]["reason"], "Suspended");
}

#[test]
fn a_run_missed_beyond_the_starting_deadline_is_skipped_and_the_next_one_awaited() {
    let parent = with_spec(example("parent.yaml"), json!({"schedule": "0 * * * *", "startingDeadlineSeconds": 10}));
    let outcome = testing::reconcile::<CronJobs>(TestRequest::new(parent).now("2026-01-01T00:00:30Z")).unwrap();
    assert!(outcome.children.is_empty());
    assert_eq!(outcome.requeue_after, Some(Duration::from_secs(3570)));
    let within = with_spec(example("parent.yaml"), json!({"schedule": "0 * * * *", "startingDeadlineSeconds": 60}));
    let outcome = testing::reconcile::<CronJobs>(TestRequest::new(within).now("2026-01-01T00:00:30Z")).unwrap();
    assert_eq!(names(&outcome.children), ["cronjob-sample-1767225600"]);
}

#[test]
fn more_than_a_hundred_missed_runs_fail_with_the_tutorials_advice() {
    let outcome = testing::reconcile::<CronJobs>(TestRequest::new(example("parent.yaml")).now("2026-01-02T00:00:00Z"));
    assert!(outcome.unwrap_err().message.starts_with("Too many missed start times (> 100)."));
}

// ---- defaulting and validation -------------------------------------------------------

#[test]
fn defaulting_fills_in_the_tutorials_four_fields_and_nothing_else() {
    let defaulted = testing::default::<CronJobs>(TestWrite::create(example("defaulted.yaml"))).unwrap();
    let spec = &defaulted.object["spec"];
    assert_eq!(
        (
            &spec["concurrencyPolicy"],
            &spec["suspend"],
            &spec["successfulJobsHistoryLimit"],
            &spec["failedJobsHistoryLimit"]
        ),
        (&json!("Allow"), &json!(false), &json!(3), &json!(1))
    );
    let mut unchanged = example("defaulted.yaml");
    unchanged["spec"].as_object_mut().unwrap().retain(|k, _| !["schedule", "jobTemplate"].contains(&k.as_str()));
    let mut rest = defaulted.object.clone();
    rest["spec"].as_object_mut().unwrap().retain(|k, _| !["schedule", "jobTemplate"].contains(&k.as_str()));
    assert_eq!(rest["spec"].as_object().unwrap().len(), 4);
    assert_eq!(rest["metadata"], unchanged["metadata"]);

    // Set fields stay as they are (the tutorial's "should not overwrite" case).
    let set = with_spec(
        example("defaulted.yaml"),
        json!({"concurrencyPolicy": "Forbid", "suspend": true, "successfulJobsHistoryLimit": 5, "failedJobsHistoryLimit": 2}),
    );
    let kept = testing::default::<CronJobs>(TestWrite::create(set.clone())).unwrap();
    assert!(!kept.changed());
    assert_eq!(kept.object, set);
    let updated = testing::default::<CronJobs>(TestWrite::update(set, example("defaulted.yaml"))).unwrap();
    assert_eq!(updated.object["spec"]["suspend"], false);
}

#[test]
fn validation_denies_a_long_name_and_a_bad_schedule_in_the_tutorials_words() {
    let verdict = testing::validate::<CronJobs>(TestWrite::create(example("invalid.yaml")));
    let denial = verdict.denied.expect("denied");
    let causes: Vec<(&str, &str)> = denial.causes.iter().map(|c| (c.field.as_str(), c.message.as_str())).collect();
    assert_eq!(
        causes,
        [
            (
                "metadata.name",
                "Invalid value: \"a-cronjob-whose-name-is-far-too-long-for-the-names-of-its-jobs\": must be no more than 52 characters"
            ),
            (
                "spec.schedule",
                "Invalid value: \"invalid-cron-schedule\": Expected exactly 5 fields, found 1: invalid-cron-schedule"
            ),
        ]
    );
    let status = denial.status(&cronjob::kind("v1"), "a-cronjob-whose-name-is-far-too-long-for-the-names-of-its-jobs");
    assert_eq!(status["code"], 422);
    assert!(status["message"].as_str().unwrap().starts_with("CronJob.batch.tutorial.kubebuilder.io \"a-cronjob-whose"));

    assert!(testing::validate::<CronJobs>(TestWrite::create(example("defaulted.yaml"))).allowed());
    let fifty_two = with_spec(example("defaulted.yaml"), json!({}));
    let mut named = fifty_two.clone();
    named["metadata"]["name"] = json!("a".repeat(52));
    assert!(testing::validate::<CronJobs>(TestWrite::update(fifty_two, named.clone())).allowed());
    named["metadata"]["name"] = json!("a".repeat(53));
    assert!(!testing::validate::<CronJobs>(TestWrite::create(named)).allowed());
}

#[test]
#[should_panic(expected = "the manifest's validates has no rule for DELETE")]
fn deletes_are_not_validated_as_the_tutorials_webhook_registers_create_and_update_only() {
    let _ = testing::validate::<CronJobs>(TestWrite::delete(example("invalid.yaml")));
}

#[test]
fn a_schedule_v2_cannot_hold_is_allowed_with_a_warning() {
    let daily = with_spec(example("defaulted.yaml"), json!({"schedule": "@daily"}));
    let verdict = testing::validate::<CronJobs>(TestWrite::create(daily));
    assert!(verdict.allowed());
    assert!(
        verdict.warnings[0].contains("cannot be read as batch.tutorial.kubebuilder.io/v2"),
        "{:?}",
        verdict.warnings
    );
}

// ---- conversion ----------------------------------------------------------------------

fn stored() -> Value {
    let mut parent =
        with_spec(example("parent.yaml"), json!({"schedule": "0 9 * * 1-5", "startingDeadlineSeconds": 30}));
    parent["metadata"]["labels"] = json!({"team": "a"});
    parent["status"] = json!({
        "active": [{"apiVersion": "batch/v1", "kind": "Job", "name": "cronjob-sample-1", "namespace": "default", "uid": "u"}],
        "lastScheduleTime": "2026-01-01T09:00:00Z",
        "conditions": [{"type": "Available", "status": "True", "reason": "JobsActive", "message": "1 job(s) are currently active",
                        "lastTransitionTime": "2026-01-01T09:00:00Z", "observedGeneration": 1}],
    });
    parent
}

#[test]
fn v1_reads_as_v2_and_back_without_loss() {
    let v2 = testing::convert::<CronJobs>([stored()], "batch.tutorial.kubebuilder.io/v2").unwrap();
    assert_eq!(v2[0]["apiVersion"], "batch.tutorial.kubebuilder.io/v2");
    assert_eq!(v2[0]["spec"]["schedule"], json!({"minute": "0", "hour": "9", "dayOfWeek": "1-5"}));
    assert_eq!(v2[0]["status"], stored()["status"], "conditions too, unlike the tutorial");
    let v1 = testing::convert::<CronJobs>(v2, "batch.tutorial.kubebuilder.io/v1").unwrap();
    assert_eq!(v1, [stored()]);
}

#[test]
fn a_v2_schedule_leaves_out_star_fields_and_a_descriptor_cannot_be_read_as_v2() {
    let mut v2 = stored();
    v2["apiVersion"] = json!("batch.tutorial.kubebuilder.io/v2");
    v2["spec"]["schedule"] = json!({"minute": "*/5"});
    let v1 = testing::convert::<CronJobs>([v2], "batch.tutorial.kubebuilder.io/v1").unwrap();
    assert_eq!(v1[0]["spec"]["schedule"], "*/5 * * * *");

    let daily = with_spec(stored(), json!({"schedule": "@daily"}));
    let error = testing::convert::<CronJobs>([daily], "batch.tutorial.kubebuilder.io/v2").unwrap_err();
    assert!(error.ends_with("invalid schedule: not a standard 5-field schedule"), "{error}");
    let error = testing::convert::<CronJobs>([stored()], "batch.tutorial.kubebuilder.io/v3").unwrap_err();
    assert!(error.contains("batch.tutorial.kubebuilder.io/v3 is not a version"), "{error}");
}
