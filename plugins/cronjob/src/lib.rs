//! The Kubebuilder tutorial's `CronJob` (`batch.tutorial.kubebuilder.io`) as one plugin:
//! its controller, its defaulting and validating webhooks, and the conversion between
//! its two versions (`v1`, the storage version, with a `schedule` string; `v2` with a
//! schedule struct).
//!
//! The reconciler is the tutorial's, level-based: from the observed Jobs and the
//! request's `now` it decides the Job due (if any), the Jobs to delete (the finished ones
//! beyond the history limits, the running ones a `Replace` policy ends) and the status; the
//! host creates the new Job, deletes those named, keeps every other Job (the manifest keeps
//! Jobs unlisted) and requeues the CronJob at its next run.

pub mod admission;
pub mod conversion;
pub mod cron;
pub mod reconcile;

use kubewasm_sdk::k8s_openapi::api::batch::v1::Job;
use kubewasm_sdk::prelude::*;

/// The group of the kind, and of the Job annotation that records a run's time.
pub const GROUP: &str = "batch.tutorial.kubebuilder.io";

/// The `CronJob` of `version` (`v1`, `v2`).
pub fn kind(version: &str) -> KindRef {
    KindRef::namespaced(GROUP, version, "CronJob", "cronjobs")
}

/// The plugin: reconciler, webhooks and converter of `CronJob`s.
pub struct CronJobs;

impl Reconciler for CronJobs {
    fn describe() -> Manifest {
        // Jobs are kept unlisted: no branch of the decision deletes a running Job by
        // leaving it out; the history limits and `Replace` delete theirs by name
        // (`Response::delete`).
        Manifest::new("cronjob", kind("v1"))
            .child(KindRef::of::<Job>())
            .keep_unlisted(KindRef::of::<Job>())
            .defaults(AdmissionRule::new(kind("v1")))
            .validates(AdmissionRule::new(kind("v1")))
            .crd(include_str!("../crd.yaml"))
            .converts()
    }

    fn reconcile(req: &Request) -> Result<Response, Error> {
        reconcile::reconcile(req)
    }
}

impl Admission for CronJobs {
    fn default(request: &AdmissionRequest) -> Result<Defaulted, Denial> {
        admission::default(request)
    }

    fn validate(request: &AdmissionRequest) -> Verdict {
        admission::validate(request)
    }

    fn convert(object: &Object, desired_api_version: &str) -> Result<kubewasm_sdk::serde_json::Value, String> {
        conversion::convert(object, desired_api_version)
    }
}

#[cfg(feature = "export")]
kubewasm_sdk::export_plugin!(reconciler: CronJobs, admission: CronJobs);
