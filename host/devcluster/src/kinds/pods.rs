//! Pods and the kinds that hold a pod template: `SetDefaults_PodSpec` and the container
//! rules live here and are shared with the workload kinds.

use serde_json::{Value, json};

use crate::object;
use crate::printers::{
    Columns, age, age_column, column, condition_true, container_cells, container_columns, doc, format_labels, int,
    name, name_column, text,
};
use crate::selectors::{Refusal, SelectableFields, field_value};
use crate::status::go_quote;
use crate::status::{ApiError, Cause};
use crate::strategy::{Action, Objects, Strategy};

pub(crate) struct Pods;

impl Strategy for Pods {
    fn returns_deleted(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({ "phase": "Pending", "qosClass": "BestEffort" });
    }

    fn defaults(&self, obj: &mut Value) {
        if let Some(spec) = obj.get_mut("spec") {
            pod_spec(spec);
            // `SetDefaults_Pod`, not `SetDefaults_PodSpec`: pods only, never templates.
            if let Some(spec) = spec.as_object_mut() {
                spec.entry("enableServiceLinks").or_insert(json!(true));
            }
        }
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        containers(obj.get("spec"), "spec", &mut causes);
        causes
    }

    /// `ValidatePodUpdate`: a pod's spec is fixed but for its images, its active deadline, new
    /// tolerations, a grace period of 1 where it was negative, and scheduling gates removed.
    /// The real message goes on with a diff of the specs.
    fn validate_update(&self, old: &Value, new: &Value) -> Vec<Cause> {
        pod_update(old.get("spec"), new.get("spec"))
    }

    /// The subresources kube-apiserver serves for pods itself; `resize` and `proxy` are not
    /// served.
    fn subresources(&self) -> &'static [&'static str] {
        &["attach", "binding", "ephemeralcontainers", "eviction", "exec", "log", "portforward"]
    }

    fn subresource_fields(&self, subresource: &str) -> Option<&'static [&'static str]> {
        (subresource == "ephemeralcontainers").then_some(&["/spec/ephemeralContainers"][..])
    }

    /// `ValidatePodEphemeralContainersUpdate`: ephemeral containers are added, never changed
    /// or removed, and are valid ephemeral containers.
    fn validate_subresource(&self, _subresource: &str, old: &Value, new: &Value) -> Vec<Cause> {
        ephemeral_containers_update(old, new)
    }

    fn act(&self, action: &Action<'_>, objects: &mut dyn Objects) -> Option<Result<Value, ApiError>> {
        match action.subresource {
            "binding" => Some(bind(action, objects)),
            "eviction" => Some(super::eviction::evict(action, objects)),
            _ => None,
        }
    }

    fn connect(&self, stream: &Action<'_>, pod: &Value, objects: &dyn Objects) -> Option<Result<(), ApiError>> {
        matches!(stream.subresource, "log" | "exec" | "attach" | "portforward")
            .then(|| super::kubelet::connect(stream, pod, objects))
    }

    /// `pod.ToSelectableFields`; `spec.host` is the old name of `spec.nodeName`.
    fn selectable_fields(&self) -> SelectableFields {
        SelectableFields::new(
            &[
                "metadata.name",
                "metadata.namespace",
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.podIPs",
                "status.nominatedNodeName",
                "spec.host",
            ],
            Refusal::Unsupported,
            |pod, label| match label {
                "spec.host" => field_value(pod, "spec.nodeName"),
                "spec.hostNetwork" => bool_field(pod, "/spec/hostNetwork"),
                // The first of the pod's IPs, not `status.podIP`.
                "status.podIP" => text(pod, "/status/podIPs/0/ip").to_string(),
                // Accepted, but not in the field set: it reads empty.
                "status.podIPs" => String::new(),
                _ => field_value(pod, label),
            },
        )
    }

    fn columns(&self) -> Columns {
        let defs = vec![
            name_column(),
            column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic.", 0),
            column("Status", "string", "The aggregate status of the containers in this pod.", 0),
            column(
                "Restarts",
                "string",
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
                0,
            ),
            age_column(),
            column("IP", "string", &doc("io.k8s.api.core.v1.PodStatus", "podIP"), 1),
            column("Node", "string", &doc("io.k8s.api.core.v1.PodSpec", "nodeName"), 1),
            column("Nominated Node", "string", &doc("io.k8s.api.core.v1.PodStatus", "nominatedNodeName"), 1),
            column("Readiness Gates", "string", &doc("io.k8s.api.core.v1.PodSpec", "readinessGates"), 1),
        ];
        Columns {
            defs,
            cells: Box::new(|o| {
                let total = o.pointer("/spec/containers").and_then(Value::as_array).map_or(0, Vec::len);
                let statuses = o.pointer("/status/containerStatuses").and_then(Value::as_array);
                let ready = statuses
                    .into_iter()
                    .flatten()
                    .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
                    .count();
                let restarts: i64 =
                    statuses.into_iter().flatten().filter_map(|c| c.get("restartCount").and_then(Value::as_i64)).sum();
                let phase = text(o, "/status/phase");
                let phase = if object::is_deleting(o) {
                    "Terminating"
                } else if phase.is_empty() {
                    "Pending"
                } else {
                    phase
                };
                let or_none = |s: &str| if s.is_empty() { "<none>".to_string() } else { s.to_string() };
                let gates: Vec<&str> = o
                    .pointer("/spec/readinessGates")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|g| g.get("conditionType").and_then(Value::as_str))
                    .collect();
                let met = gates.iter().filter(|gate| condition_true(o, gate)).count();
                vec![
                    name(o),
                    json!(format!("{ready}/{total}")),
                    json!(phase),
                    json!(restarts.to_string()),
                    age(o),
                    json!(or_none(text(o, "/status/podIP"))),
                    json!(or_none(text(o, "/spec/nodeName"))),
                    json!(or_none(text(o, "/status/nominatedNodeName"))),
                    json!(if gates.is_empty() { "<none>".to_string() } else { format!("{met}/{}", gates.len()) }),
                ]
            }),
        }
    }
}

/// The fields of a pod's spec an update may change, as `ValidatePodUpdate` lists them.
const UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// The new spec with what an update may change taken from the old one (upstream's
/// `mungedPodSpec`), compared with the old spec.
fn pod_update(old: Option<&Value>, new: Option<&Value>) -> Vec<Cause> {
    let (Some(old), Some(new)) = (old, new) else {
        return Vec::new();
    };
    let mut causes = Vec::new();
    let mut munged = new.clone();
    for list in ["containers", "initContainers"] {
        let old_list = old.get(list).and_then(Value::as_array).cloned().unwrap_or_default();
        for (container, before) in
            munged.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten().zip(&old_list)
        {
            if let (Some(c), Some(image)) = (container.as_object_mut(), before.get("image")) {
                c.insert("image".into(), image.clone());
            }
        }
    }
    let old_tolerations = old.get("tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
    let new_tolerations = new.get("tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
    if old_tolerations.iter().any(|t| !new_tolerations.contains(t)) {
        causes.push(Cause::new(
            "FieldValueForbidden",
            "spec.tolerations",
            "Forbidden: existing toleration can not be modified except its tolerationSeconds",
        ));
    }
    let old_gates = old.get("schedulingGates").and_then(Value::as_array).cloned().unwrap_or_default();
    let new_gates = new.get("schedulingGates").and_then(Value::as_array).cloned().unwrap_or_default();
    let gates_removed_only = new_gates.iter().all(|g| old_gates.contains(g));
    if let Some(m) = munged.as_object_mut() {
        for field in ["activeDeadlineSeconds", "tolerations"] {
            match old.get(field) {
                Some(v) => m.insert(field.into(), v.clone()),
                None => m.remove(field),
            };
        }
        if gates_removed_only {
            match old.get("schedulingGates") {
                Some(v) => m.insert("schedulingGates".into(), v.clone()),
                None => m.remove("schedulingGates"),
            };
        }
        let grace = |s: &Value| s.get("terminationGracePeriodSeconds").and_then(Value::as_i64);
        if grace(old).is_some_and(|g| g < 0) && grace(new) == Some(1) {
            m.insert("terminationGracePeriodSeconds".into(), json!(grace(old)));
        }
    }
    if &munged != old {
        causes.push(Cause::new(
            "FieldValueForbidden",
            "spec",
            format!("Forbidden: pod updates may not change fields other than {UPDATABLE}"),
        ));
    }
    causes
}

pub(crate) struct PodTemplates;

impl Strategy for PodTemplates {
    fn defaults(&self, obj: &mut Value) {
        template(obj, "/template");
    }

    fn columns(&self) -> Columns {
        Columns {
            defs: vec![
                name_column(),
                column("Containers", "string", "Names of each container in the template.", 0),
                column("Images", "string", "Images referenced by each container in the template.", 0),
                column("Pod Labels", "string", "The labels for the pod template.", 0),
            ],
            cells: Box::new(|o| {
                let [names, images] = container_cells(o.pointer("/template/spec"));
                vec![name(o), names, images, json!(format_labels(o.pointer("/template/metadata/labels")))]
            }),
        }
    }
}

pub(crate) struct ReplicationControllers;

impl Strategy for ReplicationControllers {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({ "replicas": 0 });
    }

    fn defaults(&self, obj: &mut Value) {
        // `SetDefaults_ReplicationController`: selector and labels from the template's labels.
        let labels = obj.pointer("/spec/template/metadata/labels").cloned();
        if let Some(labels) = labels.filter(|l| l.as_object().is_some_and(|m| !m.is_empty())) {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                let empty = spec.get("selector").and_then(Value::as_object).is_none_or(serde_json::Map::is_empty);
                if empty {
                    spec.insert("selector".into(), labels.clone());
                }
            }
            let meta = object::meta_mut(obj);
            if meta.get("labels").and_then(Value::as_object).is_none_or(serde_json::Map::is_empty) {
                meta.insert("labels".into(), labels);
            }
        }
        super::default_at(obj, "/spec", "replicas", json!(1));
        template(obj, "/spec/template");
    }

    fn selectable_fields(&self) -> SelectableFields {
        SelectableFields::new(
            &["metadata.name", "metadata.namespace", "status.replicas"],
            Refusal::Unsupported,
            |rc, label| match label {
                "status.replicas" => int(rc, "/status/replicas").to_string(),
                _ => field_value(rc, label),
            },
        )
    }

    fn columns(&self) -> Columns {
        replica_columns(
            "io.k8s.api.core.v1.ReplicationControllerSpec",
            "io.k8s.api.core.v1.ReplicationControllerStatus",
            format_labels,
        )
    }
}

/// The printer of a controller that keeps a number of replicas of a pod template (replica sets
/// and replication controllers): its spec and status definitions give the descriptions,
/// `selector` prints the selector.
pub(crate) fn replica_columns(spec: &str, status: &str, selector: fn(Option<&Value>) -> String) -> Columns {
    let [containers, images] = container_columns();
    Columns {
        defs: vec![
            name_column(),
            column("Desired", "integer", &doc(spec, "replicas"), 0),
            column("Current", "integer", &doc(status, "replicas"), 0),
            column("Ready", "integer", &doc(status, "readyReplicas"), 0),
            age_column(),
            containers,
            images,
            column("Selector", "string", &doc(spec, "selector"), 1),
        ],
        cells: Box::new(move |o| {
            let [names, images] = container_cells(o.pointer("/spec/template/spec"));
            vec![
                name(o),
                json!(int(o, "/spec/replicas")),
                json!(int(o, "/status/replicas")),
                json!(int(o, "/status/readyReplicas")),
                age(o),
                names,
                images,
                json!(selector(o.pointer("/spec/selector"))),
            ]
        }),
    }
}

/// A pod's `binding` (`BindingREST`): the pod placed on the node the `Binding` targets, with
/// its annotations, and scheduled; stored as the binding storage stores it, past the pod's
/// update checks (`spec.nodeName` may change only this way).
fn bind(action: &Action<'_>, objects: &mut dyn Objects) -> Result<Value, ApiError> {
    let binding = action.body;
    let name = action.name;
    if object::name(binding) != name {
        return Err(ApiError::bad_request("name in URL does not match name in Binding object"));
    }
    let mut causes = Vec::new();
    let kind = text(binding, "/target/kind");
    if !kind.is_empty() && kind != "Node" {
        causes.push(Cause::new("FieldValueNotFound", "target.kind", format!("Not found: {}", go_quote(kind))));
    }
    let node = text(binding, "/target/name");
    if node.is_empty() {
        causes.push(Cause::new("FieldValueRequired", "target.name", "Required value"));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid_kind("", "Binding", name, &causes));
    }
    let pods = (String::new(), "pods".to_string());
    let pod = objects.get(&pods, action.namespace, name).ok_or_else(|| ApiError::not_found("", "pods", name))?;
    let refuse = |why: String| ApiError::conflict("", "pods/binding", name, &why);
    if object::is_deleting(&pod) {
        return Err(refuse(format!("pod {name} is being deleted, cannot be assigned to a host")));
    }
    match text(&pod, "/spec/nodeName") {
        "" => {}
        assigned => return Err(refuse(format!("pod {name} is already assigned to node {}", go_quote(assigned)))),
    }
    if pod.pointer("/spec/schedulingGates").and_then(Value::as_array).is_some_and(|g| !g.is_empty()) {
        return Err(refuse(format!("pod {name} has non-empty .spec.schedulingGates")));
    }
    let mut pod = (*pod).clone();
    pod["spec"]["nodeName"] = json!(node);
    for (key, value) in binding.pointer("/metadata/annotations").and_then(Value::as_object).into_iter().flatten() {
        let annotations = object::meta_mut(&mut pod).entry("annotations").or_insert_with(|| json!({}));
        annotations[key] = value.clone();
    }
    let scheduled =
        json!({ "type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": object::now() });
    let mut conditions = pod.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    match conditions.iter_mut().find(|c| text(c, "/type") == "PodScheduled") {
        Some(existing) if text(existing, "/status") == "True" => {}
        Some(existing) => *existing = scheduled,
        None => conditions.push(scheduled),
    }
    pod["status"]["conditions"] = json!(conditions);
    objects.put(&pods, pod);
    Ok(json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success" }))
}

/// `ValidatePodEphemeralContainersUpdate` (and the ephemeral container rules of
/// `validatePodSpec`): what a pod had stays as it was, and each container is one that may be
/// ephemeral.
fn ephemeral_containers_update(old: &Value, new: &Value) -> Vec<Cause> {
    let list =
        |pod: &Value| pod.pointer("/spec/ephemeralContainers").and_then(Value::as_array).cloned().unwrap_or_default();
    let (before, after) = (list(old), list(new));
    let mut causes = Vec::new();
    let mut names: Vec<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|l| new.pointer(&format!("/spec/{l}")).and_then(Value::as_array).into_iter().flatten())
        .map(|c| text(c, "/name"))
        .collect();
    for (i, c) in after.iter().enumerate() {
        let path = format!("spec.ephemeralContainers[{i}]");
        let name = text(c, "/name");
        if name.is_empty() {
            causes.push(Cause::new("FieldValueRequired", format!("{path}.name"), "Required value"));
        } else if names.contains(&name) {
            causes.push(Cause::new(
                "FieldValueDuplicate",
                format!("{path}.name"),
                format!("Duplicate value: {}", go_quote(name)),
            ));
        }
        names.push(name);
        if text(c, "/image").is_empty() {
            causes.push(Cause::new("FieldValueRequired", format!("{path}.image"), "Required value"));
        }
        for field in ["ports", "livenessProbe", "readinessProbe", "startupProbe", "lifecycle"] {
            if c.get(field).is_some_and(|v| !v.is_null()) {
                causes.push(Cause::new(
                    "FieldValueForbidden",
                    format!("{path}.{field}"),
                    "Forbidden: cannot be set for an Ephemeral Container",
                ));
            }
        }
    }
    for existing in &before {
        let name = text(existing, "/name");
        match after.iter().find(|c| text(c, "/name") == name) {
            None => causes.push(Cause::new(
                "FieldValueForbidden",
                "spec.ephemeralContainers",
                format!("Forbidden: existing ephemeral containers {} may not be removed\n", go_quote(name)),
            )),
            Some(now) if now != existing => causes.push(Cause::new(
                "FieldValueForbidden",
                format!("spec.ephemeralContainers[{name}]"),
                format!("Forbidden: existing ephemeral containers {} may not be changed\n", go_quote(name)),
            )),
            Some(_) => {}
        }
    }
    causes
}

/// A boolean field as a field selector reads it: `"true"` or `"false"`, false when not set.
pub(crate) fn bool_field(obj: &Value, pointer: &str) -> String {
    obj.pointer(pointer).and_then(Value::as_bool).unwrap_or(false).to_string()
}

/// Defaults of the pod template at `pointer` (`SetDefaults_PodSpec` on its spec).
pub(crate) fn template(obj: &mut Value, pointer: &str) {
    if let Some(spec) = obj.pointer_mut(&format!("{pointer}/spec")) {
        pod_spec(spec);
    }
}

/// `SetDefaults_PodSpec` and `SetDefaults_Container`, for pods and pod templates.
pub(crate) fn pod_spec(spec: &mut Value) {
    let Some(map) = spec.as_object_mut() else {
        return;
    };
    for (k, v) in [
        ("restartPolicy", json!("Always")),
        ("dnsPolicy", json!("ClusterFirst")),
        ("schedulerName", json!("default-scheduler")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("securityContext", json!({})),
    ] {
        map.entry(k).or_insert(v);
    }
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for container in map.get_mut(list).and_then(Value::as_array_mut).into_iter().flatten() {
            let Some(c) = container.as_object_mut() else {
                continue;
            };
            let image = c.get("image").and_then(Value::as_str).unwrap_or_default().to_string();
            let last = image.rsplit('/').next().unwrap_or_default();
            let untagged = !last.contains(':') && !image.contains('@');
            let pull = if untagged || image.ends_with(":latest") { "Always" } else { "IfNotPresent" };
            c.entry("imagePullPolicy").or_insert(json!(pull));
            c.entry("terminationMessagePath").or_insert(json!("/dev/termination-log"));
            c.entry("terminationMessagePolicy").or_insert(json!("File"));
            c.entry("resources").or_insert(json!({}));
            for port in c.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(port) = port.as_object_mut() {
                    port.entry("protocol").or_insert(json!("TCP"));
                }
            }
        }
    }
}

/// The container rules of a pod spec at `path`: at least one container, each named and
/// with an image.
pub(crate) fn containers(spec: Option<&Value>, path: &str, causes: &mut Vec<Cause>) {
    let list = spec.and_then(|s| s.get("containers")).and_then(Value::as_array);
    match list {
        None => causes.push(Cause::new("FieldValueRequired", format!("{path}.containers"), "Required value")),
        Some(list) if list.is_empty() => {
            causes.push(Cause::new("FieldValueRequired", format!("{path}.containers"), "Required value"));
        }
        Some(list) => {
            for (i, c) in list.iter().enumerate() {
                for field in ["name", "image"] {
                    if c.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
                        causes.push(Cause::new(
                            "FieldValueRequired",
                            format!("{path}.containers[{i}].{field}"),
                            "Required value",
                        ));
                    }
                }
            }
        }
    }
}
