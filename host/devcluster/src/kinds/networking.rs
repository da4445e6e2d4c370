//! `networking.k8s.io/v1`: Ingresses and `NetworkPolicies`.

use serde_json::{Value, json};

use super::go_value::{check_immutable, scalar};
use crate::printers::{
    Columns, age, age_column, column, doc, format_selector, load_balancer_addresses, name, name_column, text_or,
};
use crate::status::Cause;
use crate::strategy::Strategy;

pub(crate) struct Ingresses;

impl Strategy for Ingresses {
    fn tracks_generation(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({ "loadBalancer": {} });
    }

    fn columns(&self) -> Columns {
        Columns {
            defs: vec![
                name_column(),
                column(
                    "Class",
                    "string",
                    "The name of the IngressClass resource that should be used for additional configuration",
                    0,
                ),
                column(
                    "Hosts",
                    "string",
                    "Hosts that incoming requests are matched against before the ingress rule",
                    0,
                ),
                column("Address", "string", "Address is a list containing ingress points for the load-balancer", 0),
                column("Ports", "string", "Ports of TLS configurations that open", 0),
                age_column(),
            ],
            cells: Box::new(|o| {
                let class = text_or(o, "/spec/ingressClassName", "<none>");
                let tls = o.pointer("/spec/tls").and_then(Value::as_array).is_some_and(|t| !t.is_empty());
                vec![
                    name(o),
                    json!(class),
                    json!(hosts(o)),
                    json!(load_balancer_addresses(o).join(",")),
                    json!(if tls { "80, 443" } else { "80" }),
                    age(o),
                ]
            }),
        }
    }
}

/// `formatHosts`: up to three hosts, `*` for none.
fn hosts(ingress: &Value) -> String {
    let rules = ingress.pointer("/spec/rules").and_then(Value::as_array).cloned().unwrap_or_default();
    let list: Vec<&str> =
        rules.iter().filter_map(|r| r.get("host").and_then(Value::as_str)).filter(|h| !h.is_empty()).take(3).collect();
    if list.is_empty() {
        return "*".to_string();
    }
    if rules.len() > 3 && list.len() == 3 {
        format!("{} + {} more...", list.join(","), rules.len() - 3)
    } else {
        list.join(",")
    }
}

pub(crate) struct IngressClasses;

impl Strategy for IngressClasses {
    /// `ValidateIngressClassUpdate`: a class keeps its controller.
    fn validate_update(&self, old: &Value, new: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        check_immutable(old, new, "/spec/controller", "spec.controller", scalar, &mut causes);
        causes
    }
}

pub(crate) struct NetworkPolicies;

impl Strategy for NetworkPolicies {
    fn tracks_generation(&self) -> bool {
        true
    }

    /// `SetDefaults_NetworkPolicy` and `SetDefaults_NetworkPolicyPort`.
    fn defaults(&self, obj: &mut Value) {
        let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
            return;
        };
        for direction in ["ingress", "egress"] {
            for rule in spec.get_mut(direction).and_then(Value::as_array_mut).into_iter().flatten() {
                for port in rule.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten() {
                    if let Some(port) = port.as_object_mut() {
                        port.entry("protocol").or_insert(json!("TCP"));
                    }
                }
            }
        }
        if spec.get("policyTypes").and_then(Value::as_array).is_none_or(Vec::is_empty) {
            let egress = spec.get("egress").and_then(Value::as_array).is_some_and(|e| !e.is_empty());
            let types = if egress { json!(["Ingress", "Egress"]) } else { json!(["Ingress"]) };
            spec.insert("policyTypes".into(), types);
        }
    }

    fn columns(&self) -> Columns {
        let pod_selector =
            column("Pod-Selector", "string", &doc("io.k8s.api.networking.v1.NetworkPolicySpec", "podSelector"), 0);
        Columns::one(pod_selector, |o| json!(format_selector(o.pointer("/spec/podSelector"))))
    }
}
