//! What differs between kinds, one module per API family, as kube-apiserver's registry
//! has one strategy per resource. The write pipeline, the store and the server ask a
//! resource's [`Strategy`] and never name a kind; what is the same for every kind
//! (decoding, pruning and list semantics) comes from the upstream schemas instead.

use serde_json::{Value, json};

use super::allocator::{Allocations, Range};
use super::builtins;
use super::object;
use super::status::Cause;
use super::store::Store;

mod apps;
mod autoscaling;
mod batch;
mod config;
mod coordination;
mod core;
mod crds;
mod events;
mod networking;
mod pods;
mod rbac;
mod services;
mod storage;

/// Turns one object into the cells of its table row.
pub(crate) type Cells = Box<dyn Fn(&Value) -> Vec<Value>>;

/// Server-side printing of a kind: column definitions and the cells of one object.
pub(crate) struct Columns {
    pub defs: Vec<Value>,
    pub cells: Cells,
}

/// Which name rule `metadata.name` follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// An RFC 1123 subdomain: most kinds.
    Subdomain,
    /// An RFC 1123 label: namespaces and services (their names become DNS labels).
    Label,
    /// Any name usable as a path segment: RBAC kinds.
    PathSegment,
}

/// The kind-specific behaviour of a resource. Every method has the behaviour of a kind
/// that adds nothing, so a strategy states only what its kinds do.
pub(crate) trait Strategy: Sync {
    /// The status a new object starts with: a create may not set status.
    fn initial_status(&self, _obj: &Value) -> Option<Value> {
        None
    }

    /// The kind's `SetDefaults`, applied on every write (so fields a manager stops applying
    /// come back as defaults), before validation.
    fn defaults(&self, _obj: &mut Value) {}

    /// What the server generates for a new object once defaults are applied and its uid is
    /// known (a Job's selector and labels).
    fn generate(&self, _obj: &mut Value) {}

    /// The kind's validation, with the real server's field paths and messages.
    fn validate(&self, _obj: &Value) -> Vec<Cause> {
        Vec::new()
    }

    fn name_rule(&self) -> NameRule {
        NameRule::Subdomain
    }

    /// Fields a field selector may use besides `metadata.name` and `metadata.namespace`.
    fn selectable_fields(&self) -> &'static [&'static str] {
        &[]
    }

    /// Server-side table columns; `None` prints name and age.
    fn columns(&self) -> Option<Columns> {
        None
    }

    /// The numbers of ranges shared by the kind that `obj` holds (a Service's cluster IP and
    /// node ports). The store indexes them on every write, so [`Strategy::allocate`] looks them
    /// up instead of scanning the kind.
    fn allocated(&self, _obj: &Value) -> Vec<(&'static Range, u32)> {
        Vec::new()
    }

    /// Gives a written object what is allocated among all objects of its kind; `taken` is what
    /// the stored objects hold, `old` (the object as stored) among them.
    fn allocate(&self, _taken: &Allocations, _old: Option<&Value>, _obj: &mut Value) -> Result<(), Cause> {
        Ok(())
    }

    /// Whether a delete only marks the object terminating, leaving its removal to a
    /// controller (a namespace is emptied first).
    fn deleted_by_controller(&self) -> bool {
        false
    }

    /// Whether a cleanup controller has work on this object while it is being deleted.
    fn swept_while_deleting(&self, _obj: &Value) -> bool {
        false
    }

    /// What removing an object for good takes with it.
    fn removed(&self, _store: &mut Store, _gone: &Value) {}
}

/// A kind that adds nothing to the generic pipeline (and every custom resource).
pub(crate) struct Plain;

impl Strategy for Plain {}

/// The strategy of a built-in resource.
pub(crate) fn strategy(group: &str, plural: &str) -> &'static dyn Strategy {
    match (group, plural) {
        ("", "pods") => &pods::Pods,
        ("", "podtemplates") => &pods::PodTemplates,
        ("", "replicationcontrollers") => &pods::ReplicationControllers,
        ("", "services") => &services::Services,
        ("", "namespaces") => &core::Namespaces,
        ("", "nodes") => &core::Nodes,
        ("", "serviceaccounts") => &core::ServiceAccounts,
        ("", "endpoints") => &core::Endpoints,
        ("", "configmaps") => &config::ConfigMaps,
        ("", "secrets") => &config::Secrets,
        ("", "events") => &events::CoreEvents,
        ("events.k8s.io", "events") => &events::Events,
        ("", "persistentvolumeclaims") => &storage::Claims,
        ("", "persistentvolumes") => &storage::Volumes,
        ("apps", "deployments") => &apps::Deployments,
        ("apps", "replicasets") => &apps::ReplicaSets,
        ("apps", "statefulsets") => &apps::StatefulSets,
        ("apps", "daemonsets") => &apps::DaemonSets,
        ("batch", "jobs") => &batch::Jobs,
        ("batch", "cronjobs") => &batch::CronJobs,
        ("networking.k8s.io", "ingresses") => &networking::Ingresses,
        ("networking.k8s.io", "networkpolicies") => &networking::NetworkPolicies,
        ("autoscaling", "horizontalpodautoscalers") => &autoscaling::HorizontalPodAutoscalers,
        ("policy", "poddisruptionbudgets") => &autoscaling::PodDisruptionBudgets,
        ("coordination.k8s.io", "leases") => &coordination::Leases,
        ("apiextensions.k8s.io", "customresourcedefinitions") => &crds::Crds,
        ("rbac.authorization.k8s.io", "roles" | "clusterroles") => &rbac::Roles,
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => &rbac::Bindings,
        ("rbac.authorization.k8s.io", _) => &rbac::Other,
        _ => &Plain,
    }
}

/// Resources whose objects keep `metadata.generation` (their registry strategy sets it).
pub(crate) fn tracks_generation(group: &str, plural: &str) -> bool {
    const WITH_GENERATION: &[(&str, &str)] = &[
        ("", "replicationcontrollers"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("apps", "daemonsets"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("autoscaling", "horizontalpodautoscalers"),
        ("batch", "cronjobs"),
        ("batch", "jobs"),
        ("flowcontrol.apiserver.k8s.io", "flowschemas"),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"),
        ("networking.k8s.io", "ingresses"),
        ("networking.k8s.io", "networkpolicies"),
        ("policy", "poddisruptionbudgets"),
    ];
    WITH_GENERATION.contains(&(group, plural))
}

/// Resources whose DELETE answers with the object rather than a `Status`.
pub(crate) fn returns_deleted(group: &str, plural: &str) -> bool {
    const RETURN_DELETED: &[(&str, &str)] = &[
        ("", "namespaces"),
        ("", "pods"),
        ("", "services"),
        ("", "serviceaccounts"),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
    ];
    RETURN_DELETED.contains(&(group, plural))
}

// Helpers the strategies share.

/// A column definition of a server-side table.
pub(crate) fn column(name: &str, kind: &str, description: &str, priority: i64) -> Value {
    let format = if name == "Name" { "name" } else { "" };
    json!({ "name": name, "type": kind, "format": format, "description": description, "priority": priority })
}

/// The description of `field` of the upstream definition `definition` (what the real
/// printers take from `SwaggerDoc()`).
pub(crate) fn doc(definition: &str, field: &str) -> String {
    builtins::definitions()
        .get(definition)
        .and_then(|d| d.pointer(&format!("/properties/{field}/description")))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

pub(crate) fn name_column() -> Value {
    column("Name", "string", &doc(OBJECT_META, "name"), 0)
}

pub(crate) fn age_column() -> Value {
    column("Age", "string", &doc(OBJECT_META, "creationTimestamp"), 0)
}

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The `Containers` and `Images` columns of kinds with a pod template.
pub(crate) fn container_columns() -> [Value; 2] {
    [
        column("Containers", "string", "Names of each container in the template.", 1),
        column("Images", "string", "Images referenced by each container in the template.", 1),
    ]
}

/// The cells of `Name` and `Age`.
pub(crate) fn name(obj: &Value) -> Value {
    json!(object::name(obj))
}

pub(crate) fn age(obj: &Value) -> Value {
    json!(super::table::age(object::meta_str(obj, "creationTimestamp")))
}

/// An integer at `pointer`, 0 when absent (Go's zero value).
pub(crate) fn int(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// A string at `pointer`, empty when absent.
pub(crate) fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

/// `layoutContainerCells`: container names and images, comma separated.
pub(crate) fn container_cells(pod_spec: Option<&Value>) -> [Value; 2] {
    let containers = pod_spec.and_then(|s| s.get("containers")).and_then(Value::as_array);
    let field = |f: &str| {
        containers
            .into_iter()
            .flatten()
            .map(|c| c.get(f).and_then(Value::as_str).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",")
    };
    [json!(field("name")), json!(field("image"))]
}

/// `labels.FormatLabels`: `k=v,...` sorted by key, `<none>` when empty.
pub(crate) fn format_labels(map: Option<&Value>) -> String {
    let mut pairs: Vec<String> = map
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    if pairs.is_empty() { "<none>".to_string() } else { pairs.join(",") }
}

/// `metav1.FormatLabelSelector`: the selector in label selector syntax, `<none>` when empty.
pub(crate) fn format_selector(selector: Option<&Value>) -> String {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return "<none>".to_string();
    };
    let mut parts: Vec<String> = Vec::new();
    let mut labels: Vec<(&String, &Value)> =
        selector.get("matchLabels").and_then(Value::as_object).into_iter().flatten().collect();
    labels.sort_by_key(|(k, _)| *k);
    for (k, v) in labels {
        parts.push(format!("{k}={}", v.as_str().unwrap_or_default()));
    }
    for expr in selector.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let key = expr.get("key").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<&str> =
            expr.get("values").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        parts.push(match expr.get("operator").and_then(Value::as_str).unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({})", values.join(",")),
        });
    }
    if parts.is_empty() { "<none>".to_string() } else { parts.join(",") }
}

/// Inserts `value` at `key` of the object at `pointer` when the key is absent, creating
/// the object itself when `create` is set. Defaults work field by field, as Go's
/// `SetDefaults` functions do on nil fields, so `strategy: {}` is filled in too.
pub(crate) fn default_at(obj: &mut Value, pointer: &str, key: &str, value: Value) {
    if let Some(map) = obj.pointer_mut(pointer).and_then(Value::as_object_mut) {
        map.entry(key).or_insert(value);
    }
}

/// The object at `pointer`, created empty under its parent when absent.
pub(crate) fn ensure_object<'a>(obj: &'a mut Value, pointer: &str) -> Option<&'a mut serde_json::Map<String, Value>> {
    let (parent, key) = pointer.rsplit_once('/')?;
    let parent = obj.pointer_mut(parent)?.as_object_mut()?;
    let entry = parent.entry(key).or_insert_with(|| json!({}));
    if entry.is_null() {
        *entry = json!({});
    }
    entry.as_object_mut()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_print_as_kubectl_does() {
        let sel = json!({ "matchLabels": { "b": "2", "a": "1" }, "matchExpressions": [
            { "key": "tier", "operator": "In", "values": ["x", "y"] },
            { "key": "legacy", "operator": "DoesNotExist" },
        ]});
        assert_eq!(format_selector(Some(&sel)), "a=1,b=2,tier in (x,y),!legacy");
        assert_eq!(format_selector(Some(&json!({}))), "<none>");
        assert_eq!(format_labels(Some(&json!({ "z": "1", "a": "2" }))), "a=2,z=1");
    }

    #[test]
    fn nested_defaults_fill_an_empty_object() {
        let mut obj = json!({ "spec": { "strategy": {} } });
        default_at(&mut obj, "/spec/strategy", "type", json!("RollingUpdate"));
        let rolling = ensure_object(&mut obj, "/spec/strategy/rollingUpdate").unwrap();
        rolling.entry("maxSurge").or_insert(json!("25%"));
        assert_eq!(
            obj,
            json!({ "spec": { "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxSurge": "25%" } } } })
        );
    }
}
