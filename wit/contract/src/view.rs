//! What a plugin is shown of the cluster: the host's controllers, `kubewasm render`
//! and the SDK's tests all decide with these functions, so a render shows exactly
//! what a live reconcile would.

use serde_json::Value;

use crate::{Manifest, Query};

/// The annotation the host stamps on each child it applies: the hash of what the
/// plugin asked for, to skip writes of unchanged children.
pub const APPLIED_HASH: &str = "kubewasm.io/applied-hash";

/// The uid in `object`'s controller ownerReference (the one with `controller: true`).
pub fn controller_uid(object: &Value) -> Option<&str> {
    object["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"].as_bool() == Some(true))
        .and_then(|r| r["uid"].as_str())
}

/// `object` as a plugin sees it: without `managedFields`, the API server's bookkeeping.
pub fn shown(mut object: Value) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    object
}

/// The observed objects handed to a plugin for one parent, and why others were not.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    /// Objects of a declared child kind whose controller is the parent.
    pub children: Vec<Value>,
    /// Objects one of the plugin's related queries selects.
    pub related: Vec<Value>,
    /// One line per object left out, naming it and the reason.
    pub left_out: Vec<String>,
}

/// Picks from `observed` the parent's children and from `related` what `queries`
/// select, each [`shown`] as a plugin sees it.
pub fn select(
    manifest: &Manifest,
    parent: &Value,
    queries: &[Query],
    observed: impl IntoIterator<Item = Value>,
    related: impl IntoIterator<Item = Value>,
) -> Selection {
    let parent_uid = parent["metadata"]["uid"].as_str().filter(|uid| !uid.is_empty());
    let mut selection = Selection::default();
    for object in observed {
        let declared = manifest.children.iter().any(|k| k.matches(&object));
        if declared && parent_uid.is_some() && controller_uid(&object) == parent_uid {
            selection.children.push(shown(object));
        } else {
            selection.left_out.push(format!(
                "observed {} is not passed: only children of a declared kind whose controller ownerReference points to the parent's uid are",
                describe(&object)
            ));
        }
    }
    for object in related {
        if queries.iter().any(|q| q.matches(&object)) {
            selection.related.push(shown(object));
        } else {
            selection.left_out.push(format!(
                "related {} is not passed: no related query of the plugin selects it",
                describe(&object)
            ));
        }
    }
    selection
}

fn describe(object: &Value) -> String {
    format!(
        "{} {}",
        object["kind"].as_str().unwrap_or("<no kind>"),
        object["metadata"]["name"].as_str().unwrap_or("<no name>")
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::KindRef;

    #[test]
    fn only_controlled_children_of_declared_kinds_and_selected_related_objects_are_shown() {
        let manifest = Manifest::new("m", KindRef::namespaced("x.io", "v1", "X", "xs")).child(KindRef::namespaced(
            "apps",
            "v1",
            "Deployment",
            "deployments",
        ));
        let parent = json!({"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "p", "uid": "u1"}});
        let owned = |kind: &str, name: &str, uid: &str| {
            json!({"apiVersion": if kind == "Deployment" { "apps/v1" } else { "v1" }, "kind": kind,
                   "metadata": {"name": name, "managedFields": [{}],
                                "ownerReferences": [{"uid": uid, "controller": true}]}})
        };
        let queries = [Query::named(KindRef::namespaced("", "v1", "ConfigMap", "configmaps"), None, ["cfg"])];
        let selection = select(
            &manifest,
            &parent,
            &queries,
            [owned("Deployment", "mine", "u1"), owned("Deployment", "theirs", "u2"), owned("Service", "svc", "u1")],
            [owned("ConfigMap", "cfg", "zz"), owned("ConfigMap", "other", "zz")],
        );
        assert_eq!(selection.children.len(), 1);
        assert_eq!(selection.children[0]["metadata"]["name"], "mine");
        assert!(selection.children[0]["metadata"].get("managedFields").is_none(), "managedFields are not shown");
        assert_eq!(selection.related.len(), 1);
        assert_eq!(selection.left_out.len(), 3, "{:?}", selection.left_out);
        assert!(selection.left_out[0].contains("Deployment theirs"));
    }

    #[test]
    fn a_parent_without_uid_has_no_children() {
        let manifest = Manifest::new("m", KindRef::namespaced("x.io", "v1", "X", "xs")).child(KindRef::namespaced(
            "",
            "v1",
            "ConfigMap",
            "configmaps",
        ));
        let parent = json!({"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "p"}});
        let orphan = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "ownerReferences": [{"uid": "", "controller": true}]}});
        assert!(select(&manifest, &parent, &[], [orphan], []).children.is_empty());
    }
}
