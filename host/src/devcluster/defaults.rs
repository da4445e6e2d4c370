//! What the real server fills in for built-in kinds on create (status reset, a few defaults),
//! and the name rules it checks.

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
pub(crate) fn on_write(rt: &ResourceType, obj: &mut Value) -> Result<(), Cause> {
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
        ("", "pods") => spec_defaults(obj, json!({
            "restartPolicy": "Always",
            "dnsPolicy": "ClusterFirst",
            "schedulerName": "default-scheduler",
            "terminationGracePeriodSeconds": 30,
        })),
        ("apps", "deployments") => {
            spec_defaults(obj, json!({
                "replicas": 1,
                "revisionHistoryLimit": 10,
                "progressDeadlineSeconds": 600,
                "strategy": { "type": "RollingUpdate", "rollingUpdate": { "maxUnavailable": "25%", "maxSurge": "25%" } },
            }));
        }
        ("", "services") => spec_defaults(obj, json!({ "type": "ClusterIP", "sessionAffinity": "None" })),
        ("", "secrets") => return secret_data(obj),
        _ => {}
    }
    Ok(())
}

/// Folds `stringData` into base64 `data` and checks that `data` is base64, as the real server does.
fn secret_data(obj: &mut Value) -> Result<(), Cause> {
    use base64::Engine as _;
    let engine = base64::engine::general_purpose::STANDARD;
    let Some(map) = obj.as_object_mut() else { return Ok(()) };
    map.entry("type").or_insert(json!("Opaque"));
    if let Some(Value::Object(plain)) = map.remove("stringData") {
        let data = map.entry("data").or_insert_with(|| json!({}));
        if let Some(data) = data.as_object_mut() {
            for (k, v) in plain {
                let text = v.as_str().map(String::from).unwrap_or_else(|| v.to_string());
                data.insert(k, json!(engine.encode(text)));
            }
        }
    }
    for (k, v) in map.get("data").and_then(Value::as_object).into_iter().flatten() {
        let ok = v.as_str().is_some_and(|s| engine.decode(s).is_ok());
        if !ok {
            return Err(Cause::new(
                "FieldValueInvalid",
                format!("data[{k}]"),
                format!("Invalid value: {v}: must be a base64-encoded string"),
            ));
        }
    }
    Ok(())
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
