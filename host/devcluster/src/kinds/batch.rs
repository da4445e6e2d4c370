//! `batch/v1`: Jobs and `CronJobs`.

use serde_json::{Value, json};

use super::go_value::{abridged, check_immutable, label_selector, scalar};
use super::pods::{containers, template};
use super::{default_at, ensure_object};
use crate::object;
use crate::printers::{
    Columns, age, age_column, column, condition_true, container_cells, container_columns, doc, duration_between,
    format_selector, int, name, name_column, since, text, text_or,
};
use crate::selectors::{Refusal, SelectableFields, field_value};
use crate::status::Cause;
use crate::strategy::Strategy;

pub(crate) struct Jobs;

impl Strategy for Jobs {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({});
    }

    /// `SetDefaults_Job`, with the feature gates of a default 1.33 server.
    fn defaults(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        if !spec.contains_key("completions") && !spec.contains_key("parallelism") {
            spec.insert("completions".into(), json!(1));
        }
        spec.entry("parallelism").or_insert(json!(1));
        let backoff = if spec.contains_key("backoffLimitPerIndex") { i64::from(i32::MAX) } else { 6 };
        spec.entry("backoffLimit").or_insert(json!(backoff));
        spec.entry("completionMode").or_insert(json!("NonIndexed"));
        spec.entry("suspend").or_insert(json!(false));
        let replacement = if spec.contains_key("podFailurePolicy") { "Failed" } else { "TerminatingOrFailed" };
        spec.entry("podReplacementPolicy").or_insert(json!(replacement));
        let labels = obj.pointer("/spec/template/metadata/labels").cloned();
        if let Some(labels) = labels.filter(|l| l.as_object().is_some_and(|m| !m.is_empty())) {
            let meta = object::meta_mut(obj);
            if meta.get("labels").and_then(Value::as_object).is_none_or(serde_json::Map::is_empty) {
                meta.insert("labels".into(), labels);
            }
        }
        template(obj, "/spec/template");
    }

    /// `generateSelector`: unless `manualSelector` is set, the Job selects its pods by its
    /// uid, and its template carries that uid and the Job's name as labels.
    fn generate(&self, obj: &mut Value) {
        if obj.pointer("/spec/manualSelector").and_then(Value::as_bool) == Some(true) {
            return;
        }
        let (job, uid) = (object::name(obj).to_string(), object::uid(obj).to_string());
        if let Some(labels) = ensure_object(obj, "/spec/template/metadata")
            .and_then(|meta| {
                meta.entry("labels").or_insert_with(|| json!({}));
                meta.get_mut("labels")
            })
            .and_then(Value::as_object_mut)
        {
            for key in ["job-name", "batch.kubernetes.io/job-name"] {
                labels.entry(key).or_insert(json!(job));
            }
            for key in ["controller-uid", "batch.kubernetes.io/controller-uid"] {
                labels.insert(key.into(), json!(uid));
            }
        }
        if let Some(selector) = ensure_object(obj, "/spec/selector") {
            let labels = selector.entry("matchLabels").or_insert_with(|| json!({}));
            if let Some(labels) = labels.as_object_mut() {
                labels.entry("batch.kubernetes.io/controller-uid").or_insert(json!(uid));
            }
        }
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        job_template(obj.pointer("/spec/template/spec"), "spec.template.spec", &mut causes);
        causes
    }

    /// `ValidateJobSpecUpdate`: the selector, the pod template (but for the scheduling
    /// directives of a suspended Job that never started), the completions (but in tandem with
    /// the parallelism of an Indexed Job) and the failure and success policies are fixed.
    fn validate_update(&self, old: &Value, new: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        completions_update(old, new, &mut causes);
        check_immutable(old, new, "/spec/selector", "spec.selector", label_selector, &mut causes);
        let mut old_template = old.pointer("/spec/template").cloned().unwrap_or_default();
        if mutable_scheduling(old) {
            let new_template = new.pointer("/spec/template").cloned().unwrap_or_default();
            scheduling_directives_from(&new_template, &mut old_template);
        }
        let old_view = json!({ "spec": { "template": old_template } });
        check_immutable(
            &old_view,
            new,
            "/spec/template",
            "spec.template",
            abridged("core.PodTemplateSpec"),
            &mut causes,
        );
        for (field, show) in [
            ("completionMode", scalar as fn(Option<&Value>) -> String),
            ("podFailurePolicy", |v| abridged("batch.PodFailurePolicy")(v)),
            ("backoffLimitPerIndex", scalar),
            ("managedBy", scalar),
            ("successPolicy", |v| abridged("batch.SuccessPolicy")(v)),
        ] {
            check_immutable(old, new, &format!("/spec/{field}"), &format!("spec.{field}"), show, &mut causes);
        }
        causes
    }

    /// `batch/v1`'s field label conversion: `status.successful` is the count of succeeded pods.
    fn selectable_fields(&self) -> SelectableFields {
        SelectableFields::new(
            &["metadata.name", "metadata.namespace", "status.successful"],
            Refusal::UnsupportedFor("batchv1.Job"),
            |job, label| match label {
                "status.successful" => int(job, "/status/succeeded").to_string(),
                _ => field_value(job, label),
            },
        )
    }

    fn columns(&self) -> Columns {
        let [containers, images] = container_columns();
        Columns {
            defs: vec![
                name_column(),
                column("Status", "string", "Status of the job.", 0),
                column("Completions", "string", &doc("io.k8s.api.batch.v1.JobStatus", "succeeded"), 0),
                column("Duration", "string", "Time required to complete the job.", 0),
                age_column(),
                containers,
                images,
                column("Selector", "string", &doc("io.k8s.api.batch.v1.JobSpec", "selector"), 1),
            ],
            cells: Box::new(|o| {
                let succeeded = int(o, "/status/succeeded");
                let completions = match o.pointer("/spec/completions").and_then(Value::as_i64) {
                    Some(n) => format!("{succeeded}/{n}"),
                    None => match int(o, "/spec/parallelism") {
                        p if p > 1 => format!("{succeeded}/1 of {p}"),
                        _ => format!("{succeeded}/1"),
                    },
                };
                let start = text(o, "/status/startTime");
                let end = text(o, "/status/completionTime");
                let duration = match (start.is_empty(), end.is_empty()) {
                    (true, _) => String::new(),
                    (false, true) => since(start),
                    (false, false) => duration_between(start, end),
                };
                let [names, images] = container_cells(o.pointer("/spec/template/spec"));
                vec![
                    name(o),
                    json!(job_status(o)),
                    json!(completions),
                    json!(duration),
                    age(o),
                    names,
                    images,
                    json!(format_selector(o.pointer("/spec/selector"))),
                ]
            }),
        }
    }
}

/// `AllowMutableSchedulingDirectives` (the Job strategy's `validationOptionsForJob`): a Job
/// suspended that never started may change where its pods will run.
fn mutable_scheduling(old: &Value) -> bool {
    old.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) && old.pointer("/status/startTime").is_none()
}

/// `validatePodTemplateUpdate`: what a suspended Job that never started may change of its pod
/// template (labels, annotations, node selector, tolerations, scheduling gates and node
/// affinity), copied into the old template before the two are compared.
fn scheduling_directives_from(new: &Value, old: &mut Value) {
    let (Some(old_map), Some(new_map)) = (old.as_object_mut(), new.as_object()) else {
        return;
    };
    let old_meta = old_map.entry("metadata").or_insert_with(|| json!({}));
    for field in ["labels", "annotations"] {
        copy_field(new_map.get("metadata"), old_meta, field);
    }
    let old_spec = old_map.entry("spec").or_insert_with(|| json!({}));
    let new_spec = new_map.get("spec");
    for field in ["nodeSelector", "tolerations", "schedulingGates"] {
        copy_field(new_spec, old_spec, field);
    }
    let new_affinity = new_spec.and_then(|s| s.get("affinity")).filter(|a| !a.is_null());
    let Some(old_spec) = old_spec.as_object_mut() else {
        return;
    };
    match (new_affinity, old_spec.get_mut("affinity").filter(|a| !a.is_null())) {
        (None, Some(old_affinity)) => {
            if let Some(a) = old_affinity.as_object_mut() {
                a.remove("nodeAffinity");
            }
            if old_affinity.as_object().is_some_and(serde_json::Map::is_empty) {
                old_spec.remove("affinity");
            }
        }
        (Some(new_affinity), None) => {
            let mut affinity = json!({});
            copy_field(Some(new_affinity), &mut affinity, "nodeAffinity");
            old_spec.insert("affinity".into(), affinity);
        }
        (Some(new_affinity), Some(old_affinity)) => copy_field(Some(new_affinity), old_affinity, "nodeAffinity"),
        (None, None) => {}
    }
}

/// Sets `field` of `to` to what `from` holds (removed when `from` lacks it).
fn copy_field(from: Option<&Value>, to: &mut Value, field: &str) {
    let Some(to) = to.as_object_mut() else {
        return;
    };
    match from.and_then(|f| f.get(field)) {
        Some(v) => {
            to.insert(field.into(), v.clone());
        }
        None => {
            to.remove(field);
        }
    }
}

/// `validateCompletions`: fixed, except that an Indexed Job (`ElasticIndexedJob`) may change
/// them to its new parallelism.
fn completions_update(old: &Value, new: &Value, causes: &mut Vec<Cause>) {
    let indexed = new.pointer("/spec/completionMode").and_then(Value::as_str) == Some("Indexed");
    if !indexed {
        check_immutable(old, new, "/spec/completions", "spec.completions", scalar, causes);
        return;
    }
    let completions = new.pointer("/spec/completions").filter(|c| !c.is_null());
    if completions == old.pointer("/spec/completions") {
        return;
    }
    if let Some(completions) = completions
        && Some(completions) != new.pointer("/spec/parallelism")
    {
        causes.push(Cause::new(
            "FieldValueInvalid",
            "spec.completions",
            format!("Invalid value: {completions}: can only be modified in tandem with spec.parallelism"),
        ));
    }
}

/// The pod spec of a Job: it must end, so it may not restart always.
fn job_template(spec: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
    let policy = spec.and_then(|s| s.get("restartPolicy")).and_then(Value::as_str).unwrap_or_default();
    if !matches!(policy, "OnFailure" | "Never") {
        causes.push(Cause::new(
            "FieldValueNotSupported",
            format!("{path}.restartPolicy"),
            format!("Unsupported value: {policy:?}: supported values: \"OnFailure\", \"Never\""),
        ));
    }
    containers(spec, path, causes);
}

/// The Job's `Status` column: its first true terminal or notable condition.
fn job_status(job: &Value) -> &'static str {
    let has = |kind: &str| condition_true(job, kind);
    if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if object::is_deleting(job) {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    }
}

pub(crate) struct CronJobs;

impl Strategy for CronJobs {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({});
    }

    /// `SetDefaults_CronJob`; the job template gets pod template defaults only (Job
    /// defaults apply when the controller creates a Job from it).
    fn defaults(&self, obj: &mut Value) {
        default_at(obj, "/spec", "concurrencyPolicy", json!("Allow"));
        default_at(obj, "/spec", "suspend", json!(false));
        default_at(obj, "/spec", "successfulJobsHistoryLimit", json!(3));
        default_at(obj, "/spec", "failedJobsHistoryLimit", json!(1));
        template(obj, "/spec/jobTemplate/spec/template");
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        if text(obj, "/spec/schedule").is_empty() {
            causes.push(Cause::new("FieldValueRequired", "spec.schedule", "Required value"));
        }
        job_template(
            obj.pointer("/spec/jobTemplate/spec/template/spec"),
            "spec.jobTemplate.spec.template.spec",
            &mut causes,
        );
        causes
    }

    fn columns(&self) -> Columns {
        let spec = |f: &str| doc("io.k8s.api.batch.v1.CronJobSpec", f);
        let status = |f: &str| doc("io.k8s.api.batch.v1.CronJobStatus", f);
        let [containers, images] = container_columns();
        Columns {
            defs: vec![
                name_column(),
                column("Schedule", "string", &spec("schedule"), 0),
                column("Timezone", "string", &spec("timeZone"), 0),
                column("Suspend", "boolean", &spec("suspend"), 0),
                column("Active", "integer", &status("active"), 0),
                column("Last Schedule", "string", &status("lastScheduleTime"), 0),
                age_column(),
                containers,
                images,
                column("Selector", "string", &doc("io.k8s.api.batch.v1.JobSpec", "selector"), 1),
            ],
            cells: Box::new(|o| {
                let last = match text(o, "/status/lastScheduleTime") {
                    "" => "<none>".to_string(),
                    t => since(t),
                };
                let zone = text_or(o, "/spec/timeZone", "<none>");
                let suspend = match o.pointer("/spec/suspend").and_then(Value::as_bool) {
                    Some(true) => "True",
                    Some(false) => "False",
                    None => "<unset>",
                };
                let active = o.pointer("/status/active").and_then(Value::as_array).map_or(0, Vec::len);
                let [names, images] = container_cells(o.pointer("/spec/jobTemplate/spec/template/spec"));
                vec![
                    name(o),
                    json!(text(o, "/spec/schedule")),
                    json!(zone),
                    json!(suspend),
                    json!(active),
                    json!(last),
                    age(o),
                    names,
                    images,
                    json!(format_selector(o.pointer("/spec/jobTemplate/spec/selector"))),
                ]
            }),
        }
    }
}
