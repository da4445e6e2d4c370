//! The finalizer step, as kube-runtime's `finalizer`: a plugin that declares one gets
//! `kubewasm.io/<plugin>` on its parents before anything is written for them; a parent
//! being deleted that holds it is reconciled with `finalizing` until the plugin answers
//! `finalized`, and only then is the finalizer removed, letting the deletion go on.
//! Pure: which phase a parent is in, and which finalizer list to write.

use kube::ResourceExt;
use kube::api::DynamicObject;

use crate::plugin::Manifest;

/// Where a parent stands with the plugin's finalizer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Being deleted without the plugin's finalizer: not the plugin's to hold up; the
    /// API server and the garbage collector finish it.
    Released,
    /// Alive: reconciled. `add_finalizer`: the plugin declares a finalizer the parent
    /// does not hold yet, added before anything else is written.
    Apply { add_finalizer: bool },
    /// Being deleted and holding the plugin's finalizer: the plugin's last calls, with
    /// `finalizing`, until it answers `finalized`.
    Cleanup,
}

impl Phase {
    /// The phase of `parent` for the plugin of `manifest`.
    pub(crate) fn of(manifest: &Manifest, parent: &DynamicObject) -> Self {
        let holds = parent.finalizers().contains(&manifest.finalizer_name());
        match (parent.metadata.deletion_timestamp.is_some(), holds) {
            (true, false) => Self::Released,
            (true, true) => Self::Cleanup,
            (false, holds) => Self::Apply { add_finalizer: manifest.finalizer && !holds },
        }
    }
}

/// A change of the parent's finalizers: the whole list to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change {
    /// The plugin's finalizer added: written before the children.
    Add(Vec<String>),
    /// The plugin's finalizer removed: written last, once the plugin finalized.
    Remove(Vec<String>),
}

impl Change {
    /// The finalizers to write.
    pub(crate) fn finalizers(&self) -> &[String] {
        match self {
            Self::Add(list) | Self::Remove(list) => list,
        }
    }
}

/// What the finalizers become in `phase`, given whether the plugin answered `finalized`.
pub(crate) fn change(manifest: &Manifest, parent: &DynamicObject, phase: Phase, finalized: bool) -> Option<Change> {
    let ours = manifest.finalizer_name();
    match phase {
        Phase::Apply { add_finalizer: true } => {
            let mut list = parent.finalizers().to_vec();
            list.push(ours);
            Some(Change::Add(list))
        }
        Phase::Cleanup if finalized => {
            Some(Change::Remove(parent.finalizers().iter().filter(|f| **f != ours).cloned().collect()))
        }
        Phase::Apply { add_finalizer: false } | Phase::Cleanup | Phase::Released => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::KindRef;

    fn manifest(finalizer: bool) -> Manifest {
        let m = Manifest::new("app", KindRef::namespaced("x.io", "v1", "App", "apps"));
        if finalizer { m.finalizer() } else { m }
    }

    fn parent(finalizers: &[&str], deleting: bool) -> DynamicObject {
        let mut parent: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "x.io/v1", "kind": "App", "metadata": {"name": "a", "namespace": "default"},
        }))
        .unwrap();
        parent.metadata.finalizers = Some(finalizers.iter().map(|f| (*f).to_string()).collect());
        if deleting {
            parent.metadata.deletion_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::now()));
        }
        parent
    }

    #[test]
    fn a_plugin_with_a_finalizer_adds_it_before_anything_else_and_keeps_the_others() {
        let (m, p) = (manifest(true), parent(&["other"], false));
        let phase = Phase::of(&m, &p);
        assert_eq!(phase, Phase::Apply { add_finalizer: true });
        let added = change(&m, &p, phase, false);
        assert_eq!(added, Some(Change::Add(vec!["other".into(), m.finalizer_name()])));
        let held = parent(&["other", &m.finalizer_name()], false);
        assert_eq!(Phase::of(&m, &held), Phase::Apply { add_finalizer: false }, "held already");
        assert_eq!(Phase::of(&manifest(false), &p), Phase::Apply { add_finalizer: false }, "none declared");
    }

    #[test]
    fn a_deleted_parent_holding_the_finalizer_is_released_only_once_finalized() {
        let m = manifest(true);
        let p = parent(&["other", &m.finalizer_name()], true);
        let phase = Phase::of(&m, &p);
        assert_eq!(phase, Phase::Cleanup);
        assert_eq!(change(&m, &p, phase, false), None, "not finalized: the finalizer stays");
        assert_eq!(change(&m, &p, phase, true), Some(Change::Remove(vec!["other".into()])));
    }

    #[test]
    fn a_deleted_parent_without_the_finalizer_is_not_the_plugins() {
        let m = manifest(true);
        assert_eq!(Phase::of(&m, &parent(&["other"], true)), Phase::Released);
    }
}
