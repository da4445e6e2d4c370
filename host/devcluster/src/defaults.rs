//! Defaults the real server fills in for built-in kinds, service IP/port allocation, name rules.

use serde_json::{Value, json};

use super::discovery::ResourceType;
use super::object;
use super::status::Cause;

/// Resets what a create may not set (status) and fills create-only fields of built-in kinds.
pub(crate) fn on_create(rt: &ResourceType, obj: &mut Value) {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "namespaces") => obj["status"] = json!({ "phase": "Active" }),
        ("", "pods") => obj["status"] = json!({ "phase": "Pending", "qosClass": "BestEffort" }),
        ("apps", "deployments" | "replicasets") => obj["status"] = json!({}),
        ("", "services") => obj["status"] = json!({ "loadBalancer": {} }),
        _ => {}
    }
}

/// Applies the defaults the real server fills in on every write of a built-in kind (the
/// object's `SetDefaults`), so fields a manager stops applying come back as defaults.
pub(crate) fn on_write(rt: &ResourceType, obj: &mut Value) {
    let spec_defaults = |obj: &mut Value, defaults: Value| {
        if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
            && let Some(defaults) = defaults.as_object()
        {
            for (k, v) in defaults {
                spec.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    };
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "namespaces") => {
            let name = object::name(obj).to_string();
            let meta = object::meta_mut(obj);
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(labels) = labels.as_object_mut() {
                labels.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
            if obj.get("spec").is_none() {
                obj["spec"] = json!({ "finalizers": ["kubernetes"] });
            }
        }
        ("", "pods") => {
            if let Some(spec) = obj.get_mut("spec") {
                pod_spec(spec);
            }
        }
        ("apps", "deployments" | "replicasets") => {
            let defaults = if rt.plural == "deployments" {
                json!({
                    "replicas": 1,
                    "revisionHistoryLimit": 10,
                    "progressDeadlineSeconds": 600,
                    "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxUnavailable": "25%", "maxSurge": "25%" } },
                })
            } else {
                json!({ "replicas": 1 })
            };
            spec_defaults(obj, defaults);
            if let Some(spec) = obj.pointer_mut("/spec/template/spec") {
                pod_spec(spec);
            }
        }
        ("", "services") => {
            spec_defaults(obj, json!({ "type": "ClusterIP", "sessionAffinity": "None" }));
            for port in obj.pointer_mut("/spec/ports").and_then(Value::as_array_mut).into_iter().flatten() {
                if let Some(port) = port.as_object_mut() {
                    port.entry("protocol").or_insert(json!("TCP"));
                    if let Some(number) = port.get("port").cloned() {
                        port.entry("targetPort").or_insert(number);
                    }
                }
            }
        }
        ("", "secrets") => secret_data(obj),
        _ => {}
    }
}

/// `SetDefaults_PodSpec` and `SetDefaults_Container`, for pods and pod templates.
fn pod_spec(spec: &mut Value) {
    let Some(map) = spec.as_object_mut() else {
        return;
    };
    for (k, v) in [
        ("restartPolicy", json!("Always")),
        ("dnsPolicy", json!("ClusterFirst")),
        ("schedulerName", json!("default-scheduler")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("securityContext", json!({})),
        ("enableServiceLinks", json!(true)),
    ] {
        map.entry(k).or_insert(v);
    }
    for list in ["containers", "initContainers"] {
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

/// Gives a Service the cluster IP and node ports the real allocators would: kept from the
/// stored object on update, otherwise the first free ones.
/// A node port given by hand must be in range and free.
pub(crate) fn allocate_service(
    existing: &[std::sync::Arc<Value>],
    old: Option<&Value>,
    svc: &mut Value,
) -> Result<(), Cause> {
    let kind = svc.pointer("/spec/type").and_then(Value::as_str).unwrap_or("ClusterIP").to_string();
    if kind == "ExternalName" {
        return Ok(());
    }
    let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let old_spec = old.and_then(|o| o.get("spec"));
    if !spec.contains_key("clusterIP") {
        let kept = old_spec.and_then(|s| s.get("clusterIP")).cloned();
        let ip = kept.unwrap_or_else(|| {
            let used: Vec<&str> =
                existing.iter().filter_map(|s| s.pointer("/spec/clusterIP").and_then(Value::as_str)).collect();
            let free = (10u32..65_000)
                .map(|n| format!("10.96.{}.{}", n / 256, n % 256))
                .find(|ip| !used.contains(&ip.as_str()))
                .unwrap_or_default();
            json!(free)
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
        let mut used: Vec<i64> = existing
            .iter()
            .flat_map(|s| s.pointer("/spec/ports").and_then(Value::as_array).cloned().unwrap_or_default())
            .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
            .collect();
        let old_ports = old_spec.and_then(|s| s.get("ports")).and_then(Value::as_array).cloned().unwrap_or_default();
        for (i, port) in spec.get_mut("ports").and_then(Value::as_array_mut).into_iter().flatten().enumerate() {
            if let Some(given) = port.get("nodePort").and_then(Value::as_i64) {
                let field = format!("spec.ports[{i}].nodePort");
                if !(30000..=32767).contains(&given) {
                    return Err(Cause::new(
                        "FieldValueInvalid",
                        field,
                        format!(
                            "Invalid value: {given}: provided port is not in the valid range. The range of valid ports is 30000-32767"
                        ),
                    ));
                }
                if used.contains(&given) {
                    return Err(Cause::new(
                        "FieldValueInvalid",
                        field,
                        format!("Invalid value: {given}: provided port is already allocated"),
                    ));
                }
                used.push(given);
                continue;
            }
            let kept = old_ports
                .iter()
                .find(|o| o.get("port") == port.get("port"))
                .and_then(|o| o.get("nodePort"))
                .and_then(Value::as_i64);
            let chosen = kept.or_else(|| (30000..=32767).find(|n| !used.contains(n)));
            if let Some(n) = chosen {
                used.push(n);
                port["nodePort"] = json!(n);
            }
        }
    }
    Ok(())
}

/// Folds `stringData` into base64 `data`, as the real server does.
fn secret_data(obj: &mut Value) {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::STANDARD;
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    map.entry("type").or_insert(json!("Opaque"));
    if let Some(Value::Object(plain)) = map.remove("stringData") {
        let data = map.entry("data").or_insert_with(|| json!({}));
        if let Some(data) = data.as_object_mut() {
            for (k, v) in plain {
                let text = v.as_str().map_or_else(|| v.to_string(), String::from);
                data.insert(k, json!(engine.encode(text)));
            }
        }
    }
}

/// Checks `metadata.name` with the rule the real server applies to this kind.
pub(crate) fn check_name(rt: &ResourceType, name: &str) -> Option<Cause> {
    if rt.group == "rbac.authorization.k8s.io" {
        if name == "." || name == ".." || name.contains('/') || name.contains('%') {
            return Some(Cause::new(
                "FieldValueInvalid",
                "metadata.name",
                format!("Invalid value: {name:?}: may not contain '/' or '%' and may not be '.' or '..'"),
            ));
        }
        return None;
    }
    let label_only = rt.group.is_empty() && matches!(rt.plural.as_str(), "namespaces" | "services");
    let ok = if label_only { is_dns_label(name) } else { is_dns_subdomain(name) };
    if ok {
        return None;
    }
    let message = if label_only {
        format!(
            "Invalid value: {name:?}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        )
    } else {
        format!(
            "Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    };
    Some(Cause::new("FieldValueInvalid", "metadata.name", message))
}

fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// `generateName` plus five random characters from the alphabet the real server uses.
pub(crate) fn generated_name(prefix: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let suffix: String = bytes[..5].iter().map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char).collect();
    format!("{prefix}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_dns_rules() {
        assert!(is_dns_subdomain("a.b-c"));
        assert!(!is_dns_subdomain("A"));
        assert!(!is_dns_subdomain("a..b"));
        assert!(!is_dns_label("a.b"));
        assert_eq!(generated_name("x-").len(), 7);
    }
}
