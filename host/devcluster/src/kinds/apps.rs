//! `apps/v1`: Deployments, `ReplicaSets`, `StatefulSets` and `DaemonSets`, one [`Workload`]
//! strategy each: what they share (generation, a selector that matches the pod template and
//! never changes, valid containers) once, what each adds (status, defaults, printer) beside it.

use serde_json::{Value, json};

use super::go_value::{check_immutable, label_selector};
use super::pods::{containers, replica_columns, template};
use super::{default_at, ensure_object};
use crate::printers::{
    Columns, age, age_column, column, container_cells, container_columns, doc, format_labels, format_selector, int,
    name, name_column,
};
use crate::selectors::LabelSelector;
use crate::status::Cause;
use crate::strategy::Strategy;

/// The strategy of an `apps/v1` workload.
pub(crate) struct Workload {
    /// How validation messages name the kind.
    noun: &'static str,
    /// The status a new object starts with.
    status: fn() -> Value,
    /// The kind's `SetDefaults`.
    defaults: fn(&mut Value),
    columns: fn() -> Columns,
    /// What an update may not change (`ValidateDeploymentUpdate` and its siblings).
    update: fn(&Value, &Value) -> Vec<Cause>,
}

impl Strategy for Workload {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = (self.status)();
    }

    fn defaults(&self, obj: &mut Value) {
        (self.defaults)(obj);
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        workload(obj, self.noun)
    }

    fn validate_update(&self, old: &Value, new: &Value) -> Vec<Cause> {
        (self.update)(old, new)
    }

    fn columns(&self) -> Columns {
        (self.columns)()
    }
}

pub(crate) const DEPLOYMENTS: Workload = Workload {
    noun: "deployment",
    status: || json!({}),
    defaults: deployment_defaults,
    columns: deployment_columns,
    update: selector_immutable,
};

pub(crate) const REPLICA_SETS: Workload = Workload {
    // The real message names deployments for replica sets too.
    noun: "deployment",
    status: || json!({ "replicas": 0 }),
    defaults: |obj| {
        default_at(obj, "/spec", "replicas", json!(1));
        template(obj, "/spec/template");
    },
    columns: || {
        replica_columns("io.k8s.api.apps.v1.ReplicaSetSpec", "io.k8s.api.apps.v1.ReplicaSetStatus", format_selector)
    },
    update: selector_immutable,
};

pub(crate) const STATEFUL_SETS: Workload = Workload {
    noun: "statefulset",
    status: || json!({ "availableReplicas": 0, "replicas": 0 }),
    defaults: stateful_set_defaults,
    columns: stateful_set_columns,
    update: stateful_set_update,
};

pub(crate) const DAEMON_SETS: Workload = Workload {
    noun: "daemonset",
    status: || {
        json!({
            "currentNumberScheduled": 0,
            "desiredNumberScheduled": 0,
            "numberMisscheduled": 0,
            "numberReady": 0,
        })
    },
    defaults: daemon_set_defaults,
    columns: daemon_set_columns,
    update: selector_immutable,
};

/// The selector of a Deployment, `ReplicaSet` or `DaemonSet` may not change (their registry
/// strategies' `ValidateUpdate`).
fn selector_immutable(old: &Value, new: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    check_immutable(old, new, "/spec/selector", "spec.selector", label_selector, &mut causes);
    causes
}

/// `ValidateStatefulSetUpdate`: besides the fields listed in its message, nothing of a
/// `StatefulSet`'s spec may change (its selector, `serviceName`, `volumeClaimTemplates`,
/// `podManagementPolicy`, `revisionHistoryLimit`). Both objects are defaulted, so a field an
/// update leaves out is no change when its default is what is stored.
fn stateful_set_update(old: &Value, new: &Value) -> Vec<Cause> {
    const MUTABLE: [&str; 6] = [
        "replicas",
        "template",
        "updateStrategy",
        "minReadySeconds",
        "ordinals",
        "persistentVolumeClaimRetentionPolicy",
    ];
    let rest = |obj: &Value| {
        let mut spec = obj.get("spec").and_then(Value::as_object).cloned().unwrap_or_default();
        spec.retain(|k, v| !MUTABLE.contains(&k.as_str()) && !v.is_null());
        spec
    };
    if rest(old) == rest(new) {
        return Vec::new();
    }
    vec![Cause::new(
        "FieldValueForbidden",
        "spec",
        "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
    )]
}

/// `SetDefaults_Deployment`.
fn deployment_defaults(obj: &mut Value) {
    default_at(obj, "/spec", "replicas", json!(1));
    if ensure_object(obj, "/spec/strategy").is_some() {
        default_at(obj, "/spec/strategy", "type", json!("RollingUpdate"));
        if obj.pointer("/spec/strategy/type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(rolling) = ensure_object(obj, "/spec/strategy/rollingUpdate")
        {
            rolling.entry("maxUnavailable").or_insert(json!("25%"));
            rolling.entry("maxSurge").or_insert(json!("25%"));
        }
    }
    default_at(obj, "/spec", "revisionHistoryLimit", json!(10));
    default_at(obj, "/spec", "progressDeadlineSeconds", json!(600));
    template(obj, "/spec/template");
}

/// The printer of `kubectl get deployments`.
fn deployment_columns() -> Columns {
    let [containers, images] = container_columns();
    Columns {
        defs: vec![
            name_column(),
            column("Ready", "string", "Number of the pod with ready state", 0),
            column("Up-to-date", "string", &doc("io.k8s.api.apps.v1.DeploymentStatus", "updatedReplicas"), 0),
            column("Available", "string", &doc("io.k8s.api.apps.v1.DeploymentStatus", "availableReplicas"), 0),
            age_column(),
            containers,
            images,
            column("Selector", "string", &doc("io.k8s.api.apps.v1.DeploymentSpec", "selector"), 1),
        ],
        cells: Box::new(|o| {
            let [names, images] = container_cells(o.pointer("/spec/template/spec"));
            vec![
                name(o),
                json!(format!("{}/{}", int(o, "/status/readyReplicas"), int(o, "/spec/replicas"))),
                json!(int(o, "/status/updatedReplicas")),
                json!(int(o, "/status/availableReplicas")),
                age(o),
                names,
                images,
                json!(selector_string(o.pointer("/spec/selector"))),
            ]
        }),
    }
}

/// `SetDefaults_StatefulSet`, with the feature gates of a default 1.33 server.
fn stateful_set_defaults(obj: &mut Value) {
    default_at(obj, "/spec", "podManagementPolicy", json!("OrderedReady"));
    if let Some(strategy) = ensure_object(obj, "/spec/updateStrategy")
        && !strategy.contains_key("type")
    {
        strategy.insert("type".into(), json!("RollingUpdate"));
        strategy.entry("rollingUpdate").or_insert(json!({}));
    }
    if obj.pointer("/spec/updateStrategy/type").and_then(Value::as_str) == Some("RollingUpdate") {
        default_at(obj, "/spec/updateStrategy/rollingUpdate", "partition", json!(0));
    }
    if let Some(policy) = ensure_object(obj, "/spec/persistentVolumeClaimRetentionPolicy") {
        policy.entry("whenDeleted").or_insert(json!("Retain"));
        policy.entry("whenScaled").or_insert(json!("Retain"));
    }
    default_at(obj, "/spec", "replicas", json!(1));
    default_at(obj, "/spec", "revisionHistoryLimit", json!(10));
    template(obj, "/spec/template");
    for claim in obj.pointer_mut("/spec/volumeClaimTemplates").and_then(Value::as_array_mut).into_iter().flatten() {
        super::storage::claim_template(claim);
    }
}

/// The printer of `kubectl get statefulsets`.
fn stateful_set_columns() -> Columns {
    let [containers, images] = container_columns();
    Columns {
        defs: vec![
            name_column(),
            column("Ready", "string", "Number of the pod with ready state", 0),
            age_column(),
            containers,
            images,
        ],
        cells: Box::new(|o| {
            let [names, images] = container_cells(o.pointer("/spec/template/spec"));
            vec![
                name(o),
                json!(format!("{}/{}", int(o, "/status/readyReplicas"), int(o, "/spec/replicas"))),
                age(o),
                names,
                images,
            ]
        }),
    }
}

/// `SetDefaults_DaemonSet`.
fn daemon_set_defaults(obj: &mut Value) {
    if ensure_object(obj, "/spec/updateStrategy").is_some() {
        default_at(obj, "/spec/updateStrategy", "type", json!("RollingUpdate"));
        if obj.pointer("/spec/updateStrategy/type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(rolling) = ensure_object(obj, "/spec/updateStrategy/rollingUpdate")
        {
            rolling.entry("maxUnavailable").or_insert(json!(1));
            rolling.entry("maxSurge").or_insert(json!(0));
        }
    }
    default_at(obj, "/spec", "revisionHistoryLimit", json!(10));
    template(obj, "/spec/template");
}

/// The printer of `kubectl get daemonsets`.
fn daemon_set_columns() -> Columns {
    let status = |f: &str| doc("io.k8s.api.apps.v1.DaemonSetStatus", f);
    let [containers, images] = container_columns();
    Columns {
        defs: vec![
            name_column(),
            column("Desired", "integer", &status("desiredNumberScheduled"), 0),
            column("Current", "integer", &status("currentNumberScheduled"), 0),
            column("Ready", "integer", &status("numberReady"), 0),
            column("Up-to-date", "integer", &status("updatedNumberScheduled"), 0),
            column("Available", "integer", &status("numberAvailable"), 0),
            column("Node Selector", "string", &doc("io.k8s.api.core.v1.PodSpec", "nodeSelector"), 0),
            age_column(),
            containers,
            images,
            column("Selector", "string", &doc("io.k8s.api.apps.v1.DaemonSetSpec", "selector"), 1),
        ],
        cells: Box::new(|o| {
            let [names, images] = container_cells(o.pointer("/spec/template/spec"));
            vec![
                name(o),
                json!(int(o, "/status/desiredNumberScheduled")),
                json!(int(o, "/status/currentNumberScheduled")),
                json!(int(o, "/status/numberReady")),
                json!(int(o, "/status/updatedNumberScheduled")),
                json!(int(o, "/status/numberAvailable")),
                json!(format_labels(o.pointer("/spec/template/spec/nodeSelector"))),
                age(o),
                names,
                images,
                json!(format_selector(o.pointer("/spec/selector"))),
            ]
        }),
    }
}

/// A Deployment's selector column: `labels.Selector.String()`, empty for no selector.
fn selector_string(selector: Option<&Value>) -> String {
    match format_selector(selector).as_str() {
        "<none>" => String::new(),
        s => s.to_string(),
    }
}

/// The rules every workload with a selector and a pod template shares: a non-empty selector
/// that matches the template's labels, replicas not negative, valid containers.
fn workload(obj: &Value, kind: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    match obj.pointer("/spec/selector") {
        None | Some(Value::Null) => {
            causes.push(Cause::new("FieldValueRequired", "spec.selector", "Required value"));
        }
        Some(sel) => {
            let labels = obj.pointer("/spec/template/metadata/labels").cloned().unwrap_or_default();
            let pairs: Vec<(&str, &str)> = labels
                .as_object()
                .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v))).collect())
                .unwrap_or_default();
            let empty = sel.get("matchLabels").is_none_or(|m| m.as_object().is_none_or(serde_json::Map::is_empty))
                && sel.get("matchExpressions").is_none_or(|m| m.as_array().is_none_or(Vec::is_empty));
            if empty {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    "spec.selector",
                    format!("Invalid value: {sel}: empty selector is invalid for {kind}"),
                ));
            } else if !LabelSelector::from_object(sel).is_ok_and(|s| s.matches(&pairs)) {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    "spec.template.metadata.labels",
                    format!("Invalid value: {labels}: `selector` does not match template `labels`"),
                ));
            }
        }
    }
    if let Some(replicas) = obj.pointer("/spec/replicas").and_then(Value::as_i64)
        && replicas < 0
    {
        causes.push(Cause::new(
            "FieldValueInvalid",
            "spec.replicas",
            format!("Invalid value: {replicas}: must be greater than or equal to 0"),
        ));
    }
    containers(obj.pointer("/spec/template/spec"), "spec.template.spec", &mut causes);
    causes
}
