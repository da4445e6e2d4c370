//! Services: `SetDefaults_Service`, validation, and the cluster IP and node port
//! allocators.

use serde_json::{Value, json};

use super::default_at;
use super::go_value::{scalar, strings};
use crate::allocator::{Allocations, Range};
use crate::names::NameRule;
use crate::printers::{
    Columns, age, age_column, column, doc, format_labels, load_balancer_addresses, name, name_column, text,
};
use crate::selectors::{Refusal, SelectableFields, field_value};
use crate::status::Cause;
use crate::strategy::Strategy;

pub(crate) struct Services;

impl Strategy for Services {
    fn returns_deleted(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        obj["status"] = json!({ "loadBalancer": {} });
    }

    fn defaults(&self, obj: &mut Value) {
        default_at(obj, "/spec", "type", json!("ClusterIP"));
        default_at(obj, "/spec", "sessionAffinity", json!("None"));
        for port in obj.pointer_mut("/spec/ports").and_then(Value::as_array_mut).into_iter().flatten() {
            if let Some(port) = port.as_object_mut() {
                port.entry("protocol").or_insert(json!("TCP"));
                if let Some(number) = port.get("port").cloned() {
                    port.entry("targetPort").or_insert(number);
                }
            }
        }
    }

    fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut causes = Vec::new();
        let kind = obj.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP");
        let ports = obj.pointer("/spec/ports").and_then(Value::as_array).map_or(0, Vec::len);
        let headless = text(obj, "/spec/clusterIP") == "None";
        if kind != "ExternalName" && ports == 0 && !headless {
            causes.push(Cause::new("FieldValueRequired", "spec.ports", "Required value"));
        }
        for (i, port) in obj.pointer("/spec/ports").and_then(Value::as_array).into_iter().flatten().enumerate() {
            let number = port.get("port").and_then(Value::as_i64).unwrap_or(0);
            if !(1..=65535).contains(&number) {
                causes.push(Cause::new(
                    "FieldValueInvalid",
                    format!("spec.ports[{i}].port"),
                    format!("Invalid value: {number}: must be between 1 and 65535, inclusive"),
                ));
            }
        }
        causes
    }

    /// `ValidateServiceUpdate`: an allocated cluster IP, the primary IP family and a load
    /// balancer class stay as they are.
    fn validate_update(&self, old: &Value, new: &Value) -> Vec<Cause> {
        service_update(old, new)
    }

    fn name_rule(&self) -> NameRule {
        NameRule::Label
    }

    fn selectable_fields(&self) -> SelectableFields {
        SelectableFields::new(
            &["metadata.namespace", "metadata.name", "spec.clusterIP", "spec.type"],
            Refusal::Unsupported,
            field_value,
        )
    }

    fn columns(&self) -> Columns {
        let spec = |f: &str| doc("io.k8s.api.core.v1.ServiceSpec", f);
        Columns {
            defs: vec![
                name_column(),
                column("Type", "string", &spec("type"), 0),
                column("Cluster-IP", "string", &spec("clusterIP"), 0),
                column("External-IP", "string", &spec("externalIPs"), 0),
                column("Port(s)", "string", &spec("ports"), 0),
                age_column(),
                column("Selector", "string", &spec("selector"), 1),
            ],
            cells: Box::new(|o| {
                let ip = o
                    .pointer("/spec/clusterIPs/0")
                    .and_then(Value::as_str)
                    .map_or_else(|| "<none>".to_string(), String::from);
                let ports = port_string(o);
                vec![
                    name(o),
                    json!(text(o, "/spec/type")),
                    json!(ip),
                    json!(external_ip(o)),
                    json!(if ports.is_empty() { "<none>".to_string() } else { ports }),
                    age(o),
                    json!(format_labels(o.pointer("/spec/selector"))),
                ]
            }),
        }
    }

    fn allocated(&self, obj: &Value) -> Vec<(&'static Range, u32)> {
        let ip = obj.pointer("/spec/clusterIP").and_then(Value::as_str).and_then(ip_number);
        let ports = obj.pointer("/spec/ports").and_then(Value::as_array).into_iter().flatten();
        let node_ports = ports.filter_map(|p| p.get("nodePort").and_then(Value::as_i64)?.try_into().ok());
        ip.map(|n| (&CLUSTER_IPS, n)).into_iter().chain(node_ports.map(|n| (&NODE_PORTS, n))).collect()
    }

    fn allocate(&self, taken: &Allocations, old: Option<&Value>, obj: &mut Value) -> Result<(), Cause> {
        allocate(taken, old, obj)
    }
}

/// `validateUpgradeDowngradeClusterIPs` and its neighbours. What an update leaves out is kept
/// (the service storage's `patchAllocatedValues` copies it before validation), so only a value
/// given, and different, is a change; a `clusterIP` changed alone moves `clusterIPs[0]` with it.
fn service_update(old: &Value, new: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let kind = |o: &Value| text(o, "/spec/type").to_string();
    let ips = |o: &Value| -> Vec<String> {
        let listed: Vec<String> = o
            .pointer("/spec/clusterIPs")
            .and_then(Value::as_array)
            .map(|l| l.iter().filter_map(Value::as_str).map(String::from).collect())
            .unwrap_or_default();
        let single = text(o, "/spec/clusterIP");
        match listed.split_first() {
            Some((first, rest)) if !single.is_empty() && single != first => {
                std::iter::once(single.to_string()).chain(rest.iter().cloned()).collect()
            }
            None if !single.is_empty() => vec![single.to_string()],
            _ => listed,
        }
    };
    let (old_ips, new_ips) = (ips(old), ips(new));
    let external = kind(old) == "ExternalName" || kind(new) == "ExternalName";
    let headless = old_ips.first().is_some_and(|ip| ip == "None") && new_ips.first().is_some_and(|ip| ip == "None");
    if !external && !headless && !new_ips.is_empty() && !old_ips.is_empty() && new_ips[0] != old_ips[0] {
        let shown: Vec<Value> = new_ips.iter().map(|ip| json!(ip)).collect();
        causes.push(Cause::new(
            "FieldValueInvalid",
            "spec.clusterIPs[0]",
            format!("Invalid value: {}: may not change once set", strings(Some(&Value::Array(shown)))),
        ));
    }
    if let (Some(before), Some(after)) = (
        old.pointer("/spec/ipFamilies/0").and_then(Value::as_str),
        new.pointer("/spec/ipFamilies/0").and_then(Value::as_str),
    ) && before != after
        && !external
    {
        causes.push(Cause::new(
            "FieldValueInvalid",
            "spec.ipFamilies[0]",
            format!("Invalid value: {after:?}: may not change once set"),
        ));
    }
    let class = |o: &Value| o.pointer("/spec/loadBalancerClass").and_then(Value::as_str).map(String::from);
    if kind(old) == "LoadBalancer" && kind(new) == "LoadBalancer" && class(old) != class(new) {
        causes.push(Cause::new(
            "FieldValueInvalid",
            "spec.loadBalancerClass",
            format!("Invalid value: {}: may not change once set", scalar(new.pointer("/spec/loadBalancerClass"))),
        ));
    }
    causes
}

/// The cluster IPs handed out, `10.96.0.10` to `10.96.253.231` by their number (`10.96.x.y` is
/// `256 x + y`).
static CLUSTER_IPS: Range = Range { name: "clusterIP", first: 10, last: 64_999 };

/// The default node port range of the real server.
static NODE_PORTS: Range = Range { name: "nodePort", first: 30_000, last: 32_767 };

/// The number of a cluster IP written as the allocator writes them (`10.96.x.y`).
fn ip_number(ip: &str) -> Option<u32> {
    let (x, y) = ip.strip_prefix("10.96.")?.split_once('.')?;
    let (x, y): (u32, u32) = (x.parse().ok()?, y.parse().ok()?);
    (x < 256 && y < 256 && ip_text(256 * x + y) == ip).then_some(256 * x + y)
}

fn ip_text(n: u32) -> String {
    format!("10.96.{}.{}", n / 256, n % 256)
}

/// `makePortString`: `port/protocol`, or `port:nodePort/protocol` where a node port is set.
fn port_string(svc: &Value) -> String {
    let ports = svc.pointer("/spec/ports").and_then(Value::as_array);
    let pieces: Vec<String> = ports
        .into_iter()
        .flatten()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let protocol = p.get("protocol").and_then(Value::as_str).unwrap_or_default();
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(node) if node > 0 => format!("{port}:{node}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    pieces.join(",")
}

/// `getServiceExternalIP`.
fn external_ip(svc: &Value) -> String {
    let external: Vec<&str> = svc
        .pointer("/spec/externalIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match text(svc, "/spec/type") {
        "ClusterIP" | "NodePort" if !external.is_empty() => external.join(","),
        "ClusterIP" | "NodePort" => "<none>".to_string(),
        "LoadBalancer" => {
            let mut ips = load_balancer_addresses(svc);
            ips.extend(external);
            if ips.is_empty() { "<pending>".to_string() } else { ips.join(",") }
        }
        "ExternalName" => text(svc, "/spec/externalName").to_string(),
        _ => "<unknown>".to_string(),
    }
}

/// Gives a Service the cluster IP and node ports the real allocators would: kept from the
/// stored object on update, otherwise the lowest free ones (the real allocators pick at
/// random). A node port given by hand must be in range and free.
fn allocate(taken: &Allocations, old: Option<&Value>, svc: &mut Value) -> Result<(), Cause> {
    let kind = svc.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP").to_string();
    if kind == "ExternalName" {
        return Ok(());
    }
    // What the stored object holds is free to it: only other objects' numbers are taken.
    let own = |range: &Range| -> Vec<u32> {
        old.map(|o| Services.allocated(o))
            .unwrap_or_default()
            .into_iter()
            .filter(|(r, _)| *r == range)
            .map(|(_, n)| n)
            .collect()
    };
    let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let old_spec = old.and_then(|o| o.get("spec"));
    if !spec.contains_key("clusterIP") {
        let kept = old_spec.and_then(|s| s.get("clusterIP")).cloned();
        let ip = kept.unwrap_or_else(|| {
            json!(taken.lowest_free(&CLUSTER_IPS, &own(&CLUSTER_IPS), |_| true).map(ip_text).unwrap_or_default())
        });
        spec.insert("clusterIP".into(), ip);
    }
    if let Some(ip) = spec.get("clusterIP").cloned() {
        spec.entry("clusterIPs").or_insert_with(|| json!([ip]));
    }
    spec.entry("ipFamilies").or_insert(json!(["IPv4"]));
    spec.entry("ipFamilyPolicy").or_insert(json!("SingleStack"));
    spec.entry("internalTrafficPolicy").or_insert(json!("Cluster"));
    if kind == "NodePort" || kind == "LoadBalancer" {
        spec.entry("externalTrafficPolicy").or_insert(json!("Cluster"));
        if kind == "LoadBalancer" {
            spec.entry("allocateLoadBalancerNodePorts").or_insert(json!(true));
        }
        let own_ports = own(&NODE_PORTS);
        let own_count = |n: u32| u32::try_from(own_ports.iter().filter(|&&o| o == n).count()).unwrap_or(u32::MAX);
        // The node ports this Service gets, in the order of its ports.
        let mut mine: Vec<u32> = Vec::new();
        let old_ports = old_spec.and_then(|s| s.get("ports")).and_then(Value::as_array).cloned().unwrap_or_default();
        for (i, port) in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten().enumerate() {
            if let Some(given) = port.get("nodePort").and_then(Value::as_i64) {
                let field = format!("spec.ports[{i}].nodePort");
                let in_range = u32::try_from(given).ok().filter(|n| (NODE_PORTS.first..=NODE_PORTS.last).contains(n));
                let Some(given) = in_range else {
                    return Err(Cause::new(
                        "FieldValueInvalid",
                        field,
                        format!(
                            "Invalid value: {given}: provided port is not in the valid range. The range of valid ports is 30000-32767"
                        ),
                    ));
                };
                if taken.holders(&NODE_PORTS, given) > own_count(given) || mine.contains(&given) {
                    return Err(Cause::new(
                        "FieldValueInvalid",
                        field,
                        format!("Invalid value: {given}: provided port is already allocated"),
                    ));
                }
                mine.push(given);
                continue;
            }
            let kept = old_ports
                .iter()
                .find(|o| o.get("port") == port.get("port"))
                .and_then(|o| o.get("nodePort"))
                .and_then(Value::as_i64)
                .and_then(|n| u32::try_from(n).ok());
            let chosen = kept.or_else(|| taken.lowest_free(&NODE_PORTS, &own_ports, |n| !mine.contains(&n)));
            if let Some(n) = chosen {
                mine.push(n);
                port["nodePort"] = json!(n);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_ports_print_beside_the_port() {
        let svc = json!({ "spec": { "type": "NodePort", "ports": [
            { "port": 80, "protocol": "TCP", "nodePort": 30002 },
            { "port": 53, "protocol": "UDP" },
        ]}});
        assert_eq!(port_string(&svc), "80:30002/TCP,53/UDP");
        assert_eq!(external_ip(&svc), "<none>");
        let lb = json!({ "spec": { "type": "LoadBalancer" }, "status": { "loadBalancer": {} } });
        assert_eq!(external_ip(&lb), "<pending>");
    }
}
