//! Namespaces (with their lifecycle: admission, deletion by the namespace controller),
//! Nodes, Endpoints and `ComponentStatuses`.

use serde_json::{Value, json};

use crate::admission::{Attributes, Lookup, Mutating, Operation};
use crate::names::NameRule;
use crate::object;
use crate::printers::{Columns, age, age_column, column, doc, name, name_column, text, text_or};
use crate::selectors::{Refusal, SelectableFields, field_value};
use crate::status::ApiError;
use crate::store::Store;
use crate::strategy::{Contents, Finish, Holds, Strategy};

/// Where namespaces are stored.
const NAMESPACES: (&str, &str) = ("", "namespaces");

pub(crate) struct Namespaces;

impl Strategy for Namespaces {
    fn returns_deleted(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({ "phase": "Active" });
    }

    /// The `kubernetes.io/metadata.name` label and the `kubernetes` finalizer.
    fn defaults(&self, obj: &mut Value) {
        let name = object::name(obj).to_string();
        let labels = object::meta_mut(obj).entry("labels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert("kubernetes.io/metadata.name".into(), json!(name));
        }
        if obj.get("spec").is_none() {
            obj["spec"] = json!({ "finalizers": ["kubernetes"] });
        }
    }

    fn name_rule(&self) -> NameRule {
        NameRule::Label
    }

    fn selectable_fields(&self) -> SelectableFields {
        SelectableFields::new(&["metadata.name", "status.phase"], Refusal::Unsupported, field_value)
    }

    fn columns(&self) -> Columns {
        Columns::one(column("Status", "string", "The status of the namespace", 0), |o| json!(text(o, "/status/phase")))
    }

    /// The namespace controller empties a terminating namespace, then removes it.
    fn terminating_status(&self) -> Option<Value> {
        Some(json!({ "phase": "Terminating" }))
    }

    fn contents(&self, obj: &Value) -> Option<Contents> {
        Some(Contents { holds: Holds::Namespace(object::name(obj).to_string()), then: Finish::Remove })
    }
}

/// The namespaces that are active (not being deleted): where the namespace controllers of
/// other kinds keep their objects.
pub(super) fn active_namespaces(store: &Store) -> Vec<String> {
    let gr = (NAMESPACES.0.to_string(), NAMESPACES.1.to_string());
    store
        .list(&gr, None)
        .iter()
        .filter(|ns| {
            !object::is_deleting(ns) && ns.pointer("/status/phase").and_then(Value::as_str) != Some("Terminating")
        })
        .map(|ns| object::name(ns).to_string())
        .collect()
}

/// The `NamespaceLifecycle` admission plugin: nothing is created in a namespace that does not
/// exist or is being deleted.
pub(crate) struct NamespaceLifecycle;

impl Mutating for NamespaceLifecycle {
    fn admit(&self, a: &Attributes<'_>, _obj: &mut Value, lookup: &dyn Lookup) -> Result<(), ApiError> {
        if a.operation != Operation::Create || !a.resource.namespaced {
            return Ok(());
        }
        let gr = (NAMESPACES.0.to_string(), NAMESPACES.1.to_string());
        match lookup.object(&gr, "", a.namespace) {
            None => Err(ApiError::not_found(NAMESPACES.0, NAMESPACES.1, a.namespace)),
            Some(ns) if object::is_deleting(&ns) => Err(ApiError::forbidden(
                &a.resource.group,
                &a.resource.plural,
                a.name,
                &format!("unable to create new content in namespace {} because it is being terminated", a.namespace),
            )),
            Some(_) => Ok(()),
        }
    }
}

pub(crate) struct Nodes;

impl Strategy for Nodes {
    fn selectable_fields(&self) -> SelectableFields {
        SelectableFields::new(&["metadata.name", "spec.unschedulable"], Refusal::Unsupported, |node, label| match label
        {
            "spec.unschedulable" => super::pods::bool_field(node, "/spec/unschedulable"),
            _ => field_value(node, label),
        })
    }

    fn columns(&self) -> Columns {
        let info = |f: &str| doc("io.k8s.api.core.v1.NodeSystemInfo", f);
        let addresses = doc("io.k8s.api.core.v1.NodeStatus", "addresses");
        Columns {
            defs: vec![
                name_column(),
                column("Status", "string", "The status of the node", 0),
                column("Roles", "string", "The roles of the node", 0),
                age_column(),
                column("Version", "string", &info("kubeletVersion"), 0),
                column("Internal-IP", "string", &addresses, 1),
                column("External-IP", "string", &addresses, 1),
                column("OS-Image", "string", &info("osImage"), 1),
                column("Kernel-Version", "string", &info("kernelVersion"), 1),
                column("Container-Runtime", "string", &info("containerRuntimeVersion"), 1),
            ],
            cells: Box::new(|o| {
                let ready = o
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"));
                let mut status = match ready.and_then(|c| c.get("status")).and_then(Value::as_str) {
                    Some("True") => "Ready".to_string(),
                    Some(_) => "NotReady".to_string(),
                    None => "Unknown".to_string(),
                };
                if o.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
                    status.push_str(",SchedulingDisabled");
                }
                let mut roles: Vec<&str> = object::labels(o)
                    .into_iter()
                    .filter_map(|(k, _)| k.strip_prefix("node-role.kubernetes.io/"))
                    .filter(|r| !r.is_empty())
                    .collect();
                roles.sort_unstable();
                let address = |kind: &str| {
                    o.pointer("/status/addresses")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .find(|a| a.get("type").and_then(Value::as_str) == Some(kind))
                        .and_then(|a| a.get("address"))
                        .and_then(Value::as_str)
                        .unwrap_or("<none>")
                        .to_string()
                };
                let or_unknown = |p: &str| text_or(o, p, "<unknown>");
                vec![
                    name(o),
                    json!(status),
                    json!(if roles.is_empty() { "<none>".to_string() } else { roles.join(",") }),
                    age(o),
                    json!(text(o, "/status/nodeInfo/kubeletVersion")),
                    json!(address("InternalIP")),
                    json!(address("ExternalIP")),
                    json!(or_unknown("/status/nodeInfo/osImage")),
                    json!(or_unknown("/status/nodeInfo/kernelVersion")),
                    json!(or_unknown("/status/nodeInfo/containerRuntimeVersion")),
                ]
            }),
        }
    }
}

pub(crate) struct Endpoints;

impl Strategy for Endpoints {
    fn columns(&self) -> Columns {
        Columns::one(column("Endpoints", "string", &doc("io.k8s.api.core.v1.Endpoints", "subsets"), 0), |o| {
            json!(endpoints(o))
        })
    }
}

/// `formatEndpoints`: `ip:port` pairs, at most three, then `+ N more...`.
fn endpoints(obj: &Value) -> String {
    let mut pairs = Vec::new();
    for subset in obj.get("subsets").and_then(Value::as_array).into_iter().flatten() {
        let ports: Vec<i64> = subset
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("port").and_then(Value::as_i64))
            .collect();
        for address in subset.get("addresses").and_then(Value::as_array).into_iter().flatten() {
            let ip = address.get("ip").and_then(Value::as_str).unwrap_or_default();
            if ports.is_empty() {
                pairs.push(ip.to_string());
            }
            for port in &ports {
                pairs.push(format!("{ip}:{port}"));
            }
        }
    }
    match pairs.len() {
        0 => "<none>".to_string(),
        n if n > 3 => format!("{} + {} more...", pairs[..3].join(","), n - 3),
        _ => pairs.join(","),
    }
}

/// `ComponentStatuses` (deprecated since 1.19): the health of the control plane's parts,
/// made on each read (`componentstatus.REST`). Here the store is this server's own, the
/// controller manager's part that runs is garbage collection and the namespace controller,
/// and no scheduler runs: pods stay unscheduled.
pub(crate) struct ComponentStatuses;

impl Strategy for ComponentStatuses {
    fn computed(&self) -> Option<Vec<Value>> {
        let component = |name: &str, healthy: bool, text: &str| {
            let mut condition = json!({ "type": "Healthy", "status": if healthy { "True" } else { "False" } });
            condition[if healthy { "message" } else { "error" }] = json!(text);
            json!({ "apiVersion": "v1", "kind": "ComponentStatus", "metadata": { "name": name }, "conditions": [condition] })
        };
        Some(vec![
            component("controller-manager", true, "ok"),
            component("etcd-0", true, "ok"),
            component("scheduler", false, "no scheduler runs beside the embedded API server: pods stay unscheduled"),
        ])
    }

    fn warning(&self) -> Option<&'static str> {
        Some("v1 ComponentStatus is deprecated in v1.19+")
    }

    fn columns(&self) -> Columns {
        Columns {
            defs: vec![
                name_column(),
                column("Status", "string", "Status of the component conditions", 0),
                column("Message", "string", "Message of the component conditions", 0),
                column("Error", "string", "Error of the component conditions", 0),
            ],
            cells: Box::new(|o| {
                let healthy = o
                    .get("conditions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .find(|c| text(c, "/type") == "Healthy");
                let status = match healthy.map(|c| text(c, "/status")) {
                    Some("True") => "Healthy",
                    Some(_) => "Unhealthy",
                    None => "Unknown",
                };
                let field = |f: &str| healthy.map_or("", |c| text(c, f)).to_string();
                vec![name(o), json!(status), json!(field("/message")), json!(field("/error"))]
            }),
        }
    }
}
