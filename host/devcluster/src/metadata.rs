//! Validation of the `metadata` every kind shares: labels, annotations, finalizers, owners.

use serde_json::Value;

use super::names::is_dns_subdomain;
use super::status::Cause;

const NAME_RULE: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const VALUE_RULE: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters.
fn is_name_part(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
}

/// Why `key` is not a qualified name (`prefix/name` or `name`), if it is not.
fn qualified_name_error(key: &str) -> Option<String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && !is_dns_subdomain(prefix)
    {
        return Some("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into());
    }
    (!is_name_part(name)).then(|| NAME_RULE.to_string())
}

/// Checks `metadata` of an object about to be stored.
pub(crate) fn validate(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(meta) = obj.get("metadata") else {
        return causes;
    };
    let invalid = |field: &str, value: &str, why: &str| {
        Cause::new("FieldValueInvalid", field, format!("Invalid value: {value:?}: {why}"))
    };
    for (key, value) in meta.get("labels").and_then(Value::as_object).into_iter().flatten() {
        if let Some(why) = qualified_name_error(key) {
            causes.push(invalid("metadata.labels", key, &why));
        }
        let text = value.as_str().unwrap_or_default();
        if !text.is_empty() && !is_name_part(text) {
            causes.push(invalid("metadata.labels", text, VALUE_RULE));
        }
    }
    let mut annotation_bytes = 0;
    for (key, value) in meta.get("annotations").and_then(Value::as_object).into_iter().flatten() {
        annotation_bytes += key.len() + value.as_str().map_or(0, str::len);
        if let Some(why) = qualified_name_error(&key.to_lowercase()) {
            causes.push(invalid("metadata.annotations", key, &why));
        }
    }
    if annotation_bytes > 256 * 1024 {
        causes.push(Cause::new(
            "FieldValueTooLong",
            "metadata.annotations",
            "Too long: may not be more than 262144 bytes",
        ));
    }
    for (i, finalizer) in meta.get("finalizers").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let text = finalizer.as_str().unwrap_or_default();
        if let Some(why) = qualified_name_error(text) {
            causes.push(invalid(&format!("metadata.finalizers[{i}]"), text, &why));
        }
    }
    for (i, owner) in meta.get("ownerReferences").and_then(Value::as_array).into_iter().flatten().enumerate() {
        for field in ["apiVersion", "kind", "name", "uid"] {
            if owner.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
                let why = match field {
                    "apiVersion" => "version must not be empty",
                    "kind" => "kind must not be empty",
                    "name" => "name must not be empty",
                    _ => "uid must not be empty",
                };
                causes.push(invalid(&format!("metadata.ownerReferences[{i}].{field}"), "", why));
            }
        }
    }
    let controllers = meta
        .get("ownerReferences")
        .and_then(Value::as_array)
        .map_or(0, |refs| refs.iter().filter(|r| r.get("controller").and_then(Value::as_bool) == Some(true)).count());
    if controllers > 1 {
        causes.push(Cause::new(
            "FieldValueInvalid",
            "metadata.ownerReferences",
            "Invalid value: \"array\": Only one reference can have Controller set to true",
        ));
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_finalizers_and_owner_references_are_checked() {
        let ok = json!({"metadata": {"labels": {"app.kubernetes.io/name": "web", "empty": ""},
            "finalizers": ["kubewasm.io/foo", "kubernetes"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "u", "controller": true}]}});
        assert!(validate(&ok).is_empty());
        let bad = json!({"metadata": {"labels": {"app": "has space", "Bad_Prefix/x": "y"},
            "finalizers": ["no spaces allowed"], "ownerReferences": [{"kind": "X", "name": "a", "uid": "u"}]}});
        let fields: Vec<String> = validate(&bad).into_iter().map(|c| c.field).collect();
        assert_eq!(
            fields,
            ["metadata.labels", "metadata.labels", "metadata.finalizers[0]", "metadata.ownerReferences[0].apiVersion"]
        );
    }
}
