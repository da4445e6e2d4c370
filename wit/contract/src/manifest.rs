//! The plugin's self-description: parent, owned children, related kinds, CRDs, limits,
//! the kinds whose changes it handles and the URLs it needs.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::{AdmissionRule, KindRef};

/// Default sandbox limits; the operator's configuration may lower them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub deadline_ms: Option<u32>,
    pub memory_mib: Option<u32>,
}

impl Limits {
    pub fn deadline(&self) -> Option<Duration> {
        self.deadline_ms.map(|ms| Duration::from_millis(ms.into()))
    }

    pub fn memory_bytes(&self) -> Option<u64> {
        self.memory_mib.map(|mib| u64::from(mib) << 20)
    }
}

/// A kind whose changes a plugin's event handler receives, object by object.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Watch {
    pub kind: KindRef,
    /// A label selector in Kubernetes' text form (`app=web,tier notin (db)`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// A field selector in Kubernetes' text form (`metadata.name=web`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<String>,
}

impl Watch {
    /// Every object of `kind`.
    pub fn new(kind: KindRef) -> Self {
        Self { kind, label_selector: None, field_selector: None }
    }

    /// Only objects whose labels match `selector` (`app=web,tier notin (db)`).
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.into());
        self
    }

    /// Only objects whose fields match `selector` (`metadata.name=web`).
    #[must_use]
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.into());
        self
    }
}

/// What a plugin reconciles, owns, reads, handles and reaches.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Manifest {
    pub name: String,
    /// The kind it reconciles; `None` for a plugin that only handles events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent: Option<KindRef>,
    pub children: Vec<KindRef>,
    pub related: Vec<KindRef>,
    pub finalizer: bool,
    /// `CustomResourceDefinition`s, YAML or JSON text.
    #[serde(skip)]
    pub crds: Vec<String>,
    pub limits: Limits,
    /// Kinds whose added, updated and deleted objects the plugin's handler receives.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub watches: Vec<Watch>,
    /// URLs the plugin needs to reach, in Spin's `allowed_outbound_hosts` syntax; the
    /// operator grants them, or fewer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub outbound: Vec<String>,
    /// Child kinds whose observed children a response may leave out: those it omits are
    /// kept, not deleted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keep_unlisted: Vec<KindRef>,
    /// The writes the plugin's `default` may change (a mutating webhook).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub defaults: Vec<AdmissionRule>,
    /// The writes the plugin's `validate` may refuse (a validating webhook).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub validates: Vec<AdmissionRule>,
    /// Whether the plugin's `convert` converts the parent between its CRD's versions.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub converts: bool,
}

impl Manifest {
    /// A plugin named `name` (a DNS label) reconciling objects of `parent`.
    pub fn new(name: &str, parent: KindRef) -> Self {
        Self { parent: Some(parent), ..Self::handler(name) }
    }

    /// A plugin named `name` that reconciles nothing: it handles the changes of the
    /// kinds it [`watch`](Manifest::watch)es.
    pub fn handler(name: &str) -> Self {
        Self {
            name: name.into(),
            parent: None,
            children: Vec::new(),
            related: Vec::new(),
            finalizer: false,
            crds: Vec::new(),
            limits: Limits::default(),
            watches: Vec::new(),
            outbound: Vec::new(),
            keep_unlisted: Vec::new(),
            defaults: Vec::new(),
            validates: Vec::new(),
            converts: false,
        }
    }

    /// Allow the plugin to create and own objects of this kind.
    #[must_use]
    pub fn child(mut self, kind: KindRef) -> Self {
        self.children.push(kind);
        self
    }

    /// Let the plugin read objects of this kind through [`crate::Query`]s.
    #[must_use]
    pub fn related(mut self, kind: KindRef) -> Self {
        self.related.push(kind);
        self
    }

    /// Ask for a last reconcile (`finalizing`) before the parent is deleted.
    #[must_use]
    pub fn finalizer(mut self) -> Self {
        self.finalizer = true;
        self
    }

    /// A `CustomResourceDefinition` (YAML or JSON) the plugin defines.
    #[must_use]
    pub fn crd(mut self, text: &str) -> Self {
        self.crds.push(text.into());
        self
    }

    /// Default sandbox limits.
    #[must_use]
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Hand the plugin's handler every added, updated and deleted object `watch` selects.
    #[must_use]
    pub fn watch(mut self, watch: Watch) -> Self {
        self.watches.push(watch);
        self
    }

    /// Ask for the URLs `pattern` allows (`https://hooks.slack.com`,
    /// `http://*.svc.cluster.local:8080`): the operator must grant them too.
    #[must_use]
    pub fn outbound(mut self, pattern: &str) -> Self {
        self.outbound.push(pattern.into());
        self
    }

    /// Keep observed children of `kind` (one of the `child` kinds) that a response
    /// leaves out, rather than delete them: for children the plugin stops describing but
    /// that must run on, such as a `CronJob`'s Jobs. Declared once here, it holds for every
    /// branch of `reconcile`, where a `Response::keep` per child holds only in the branches
    /// that remember it. Such children still go when the parent is deleted: the API
    /// server's garbage collector follows their ownerReference.
    #[must_use]
    pub fn keep_unlisted(mut self, kind: KindRef) -> Self {
        self.keep_unlisted.push(kind);
        self
    }

    /// Complete the writes `rule` selects with the plugin's `default` before they are
    /// stored: a mutating webhook.
    #[must_use]
    pub fn defaults(mut self, rule: AdmissionRule) -> Self {
        self.defaults.push(rule);
        self
    }

    /// Let the plugin's `validate` refuse the writes `rule` selects: a validating webhook.
    #[must_use]
    pub fn validates(mut self, rule: AdmissionRule) -> Self {
        self.validates.push(rule);
        self
    }

    /// Convert the parent between the versions its CRD serves with the plugin's
    /// `convert`: a conversion webhook.
    #[must_use]
    pub fn converts(mut self) -> Self {
        self.converts = true;
        self
    }

    /// Whether the plugin answers any admission or conversion call.
    pub fn admits(&self) -> bool {
        !self.defaults.is_empty() || !self.validates.is_empty() || self.converts
    }

    /// The field manager the host applies this plugin's objects with.
    pub fn field_manager(&self) -> String {
        format!("kubewasm.{}", self.name)
    }

    /// The finalizer the host puts on parents when the plugin asks for one.
    pub fn finalizer_name(&self) -> String {
        format!("kubewasm.io/{}", self.name)
    }

    /// Whether `other` watches, owns and reads the same kinds, holds the same finalizer
    /// and handles the same watches: then a new version can take over a running
    /// controller and event handler; otherwise they must be restarted.
    pub fn same_contract(&self, other: &Manifest) -> bool {
        self.name == other.name
            && self.parent == other.parent
            && self.children == other.children
            && self.related == other.related
            && self.finalizer == other.finalizer
            && self.watches == other.watches
            && self.keep_unlisted == other.keep_unlisted
    }

    /// What the host checks at load, so that every later use can rely on it. (The
    /// host also parses the CRDs, which takes a YAML parser this crate does without.)
    ///
    /// # Errors
    ///
    /// A [`ManifestError`] naming the field.
    pub fn check(&self) -> Result<(), ManifestError> {
        if !is_dns_label(&self.name) {
            return Err(ManifestError(format!(
                "name {:?} must be a DNS label (lower-case letters, digits and '-', at most 63)",
                self.name
            )));
        }
        if self.parent.is_none() {
            if self.watches.is_empty() && self.defaults.is_empty() && self.validates.is_empty() {
                return Err(ManifestError(
                    "a plugin needs a parent to reconcile, watches to handle or writes to admit (defaults, validates)"
                        .into(),
                ));
            }
            if !self.children.is_empty() || !self.related.is_empty() || self.finalizer {
                return Err(ManifestError(
                    "children, related and finalizer belong to a reconciler: they need a parent".into(),
                ));
            }
            if self.converts {
                return Err(ManifestError("converts: only a parent the plugin defines can be converted".into()));
            }
        }
        let kinds = self
            .parent
            .iter()
            .map(|k| ("parent", k))
            .chain(self.children.iter().map(|k| ("children", k)))
            .chain(self.related.iter().map(|k| ("related", k)))
            .chain(self.watches.iter().map(|w| ("watches", &w.kind)))
            .chain(self.keep_unlisted.iter().map(|k| ("keepUnlisted", k)))
            .chain(self.defaults.iter().map(|r| ("defaults", &r.kind)))
            .chain(self.validates.iter().map(|r| ("validates", &r.kind)));
        for (field, k) in kinds {
            if k.version.is_empty() || k.kind.is_empty() || k.plural.is_empty() {
                return Err(ManifestError(format!("{field}: {k} needs a version, a kind and a plural")));
            }
        }
        if let Some(k) = self.keep_unlisted.iter().find(|k| !self.children.contains(k)) {
            return Err(ManifestError(format!("keepUnlisted: {k} is not among the plugin's children")));
        }
        if self.converts && self.crds.is_empty() {
            return Err(ManifestError(
                "converts: the plugin converts its parent between its CRD's versions, but defines no CRD".into(),
            ));
        }
        if let Some(pattern) = self.outbound.iter().find(|p| p.trim().is_empty()) {
            return Err(ManifestError(format!("outbound: {pattern:?} is empty; give scheme://host[:port]")));
        }
        if self.limits.deadline_ms == Some(0) || self.limits.memory_mib == Some(0) {
            return Err(ManifestError("limits: a deadline or memory limit of 0 leaves nothing to run".into()));
        }
        Ok(())
    }
}

/// A manifest the host would refuse to load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestError(pub String);

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ManifestError {}

pub(crate) fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_names_must_be_dns_labels() {
        assert!(is_dns_label("demo-application"));
        assert!(!is_dns_label("Demo"));
        assert!(!is_dns_label("-x"));
        assert!(!is_dns_label(""));
        assert!(!is_dns_label(&"a".repeat(64)));
        let bad = Manifest::new("Demo", KindRef::namespaced("x.io", "v1", "X", "xs"));
        assert!(bad.check().unwrap_err().0.contains("\"Demo\" must be a DNS label"));
    }

    #[test]
    fn kinds_need_a_version_kind_and_plural() {
        let m = Manifest::new("x", KindRef::namespaced("x.io", "v1", "X", "xs")).child(KindRef::namespaced(
            "apps",
            "v1",
            "Deployment",
            "",
        ));
        assert!(m.check().unwrap_err().0.starts_with("children: apps/v1 Deployment"), "{:?}", m.check());
    }

    #[test]
    fn a_plugin_without_parent_handles_events_and_owns_nothing() {
        let none = Manifest::handler("kw");
        assert!(none.check().unwrap_err().0.contains("a parent to reconcile, watches to handle or writes to admit"));
        let watcher = Manifest::handler("kw").watch(Watch::new(KindRef::namespaced("", "v1", "Pod", "pods")));
        assert_eq!(watcher.check(), Ok(()));
        let owner = watcher.clone().child(KindRef::namespaced("", "v1", "ConfigMap", "configmaps"));
        assert!(owner.check().unwrap_err().0.contains("need a parent"), "{:?}", owner.check());
        let bad_watch = Manifest::handler("kw").watch(Watch::new(KindRef::namespaced("", "v1", "Pod", "")));
        assert!(bad_watch.check().unwrap_err().0.starts_with("watches: v1 Pod"), "{:?}", bad_watch.check());
    }

    #[test]
    fn a_policy_admits_writes_without_a_parent_but_converts_only_its_own_kind() {
        let pods = KindRef::namespaced("", "v1", "Pod", "pods");
        let policy = Manifest::handler("policy").validates(AdmissionRule::new(pods.clone()));
        assert_eq!(policy.check(), Ok(()));
        assert!(policy.admits());
        let converter = Manifest::handler("c").defaults(AdmissionRule::new(pods)).converts();
        assert!(converter.check().unwrap_err().0.contains("converts: only a parent"), "{:?}", converter.check());
        let x = KindRef::namespaced("x.io", "v1", "X", "xs");
        let no_crd = Manifest::new("c", x.clone()).converts();
        assert!(no_crd.check().unwrap_err().0.contains("defines no CRD"), "{:?}", no_crd.check());
        assert_eq!(Manifest::new("c", x).crd("crd").converts().check(), Ok(()));
    }

    #[test]
    fn kept_kinds_must_be_children() {
        let x = KindRef::namespaced("x.io", "v1", "X", "xs");
        let jobs = KindRef::namespaced("batch", "v1", "Job", "jobs");
        let kept = Manifest::new("c", x.clone()).child(jobs.clone()).keep_unlisted(jobs.clone());
        assert_eq!(kept.check(), Ok(()));
        let stray = Manifest::new("c", x).keep_unlisted(jobs);
        assert!(
            stray.check().unwrap_err().0.starts_with("keepUnlisted: batch/v1 Job is not among"),
            "{:?}",
            stray.check()
        );
    }
}
