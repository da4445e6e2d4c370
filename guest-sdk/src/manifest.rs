//! The plugin's self-description: parent, owned children, related kinds, CRDs, limits.

use std::any::TypeId;

use k8s_openapi::{NamespaceResourceScope, Resource};

/// A Kubernetes kind and the REST resource that serves it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KindRef {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
}

impl KindRef {
    /// A namespaced kind, e.g. a custom resource the plugin defines.
    pub fn namespaced(group: &str, version: &str, kind: &str, plural: &str) -> Self {
        Self::new(group, version, kind, plural, true)
    }

    /// A cluster-scoped kind.
    pub fn cluster(group: &str, version: &str, kind: &str, plural: &str) -> Self {
        Self::new(group, version, kind, plural, false)
    }

    /// The kind of a k8s-openapi type, e.g. `KindRef::of::<Deployment>()`.
    pub fn of<K: Resource + 'static>() -> Self {
        let namespaced = TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>();
        Self::new(K::GROUP, K::VERSION, K::KIND, K::URL_PATH_SEGMENT, namespaced)
    }

    fn new(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        Self { group: group.into(), version: version.into(), kind: kind.into(), plural: plural.into(), namespaced }
    }

    /// `group/version`, or just `version` for the core group, as in `apiVersion`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }
}

/// Default sandbox limits; the operator's configuration may lower them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub deadline_ms: Option<u32>,
    pub memory_mib: Option<u32>,
}

/// What a plugin reconciles, owns and reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    pub name: String,
    pub parent: KindRef,
    pub children: Vec<KindRef>,
    pub related: Vec<KindRef>,
    pub finalizer: bool,
    pub crds: Vec<String>,
    pub limits: Limits,
}

impl Manifest {
    /// A plugin named `name` (a DNS label) reconciling objects of `parent`.
    pub fn new(name: &str, parent: KindRef) -> Self {
        Self {
            name: name.into(),
            parent,
            children: Vec::new(),
            related: Vec::new(),
            finalizer: false,
            crds: Vec::new(),
            limits: Limits::default(),
        }
    }

    /// Allow the plugin to create and own objects of this kind.
    #[must_use]
    pub fn child(mut self, kind: KindRef) -> Self {
        self.children.push(kind);
        self
    }

    /// Let the plugin read objects of this kind through [`Query`]s.
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
}

/// How a label requirement compares values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub operator: LabelOperator,
    pub values: Vec<String>,
}

/// Which objects of a kind a [`Query`] selects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    All,
    Names(Vec<String>),
    Labels(Vec<Requirement>),
}

/// Related objects wanted for one parent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    pub kind: KindRef,
    pub namespace: Option<String>,
    pub selector: Selector,
}

impl Query {
    /// Every object of `kind` in `namespace` (`None`: all namespaces).
    pub fn all(kind: KindRef, namespace: Option<&str>) -> Self {
        Self::new(kind, namespace, Selector::All)
    }

    /// The objects of `kind` named `names` in `namespace` (`&["a", "b"]`, a `Vec<String>`,
    /// or any iterator of names).
    pub fn named(kind: KindRef, namespace: Option<&str>, names: impl IntoIterator<Item = impl AsRef<str>>) -> Self {
        let names = names.into_iter().map(|n| n.as_ref().to_string()).collect();
        Self::new(kind, namespace, Selector::Names(names))
    }

    /// The objects of `kind` in `namespace` carrying every label of `labels`.
    pub fn labelled(kind: KindRef, namespace: Option<&str>, labels: &[(&str, &str)]) -> Self {
        let requirements = labels
            .iter()
            .map(|(k, v)| Requirement {
                key: (*k).to_string(),
                operator: LabelOperator::In,
                values: vec![(*v).to_string()],
            })
            .collect();
        Self::new(kind, namespace, Selector::Labels(requirements))
    }

    fn new(kind: KindRef, namespace: Option<&str>, selector: Selector) -> Self {
        Self { kind, namespace: namespace.map(str::to_string), selector }
    }
}
