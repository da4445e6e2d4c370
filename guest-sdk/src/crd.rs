//! `CustomResourceDefinition`s generated from the plugin's types, as kube-rs does it.
//!
//! A plugin derives kube's `CustomResource` and schemars' `JsonSchema` on its spec, with
//! the validation Kubebuilder's markers give (`#[schemars(range(min = 1))]`,
//! `#[schemars(length(min = 1))]`, `#[schemars(regex(pattern = ...))]`, a Rust `enum` for
//! an enum, `#[serde(default)]` plus `#[schemars(default = ...)]` for a default) and the
//! CRD's own settings on the type (`#[kube(status = ..., shortname = ..., printcolumn =
//! ...)]`). kube's schema settings keep the schema structural, as the API server demands.
//! Then one line puts the CRD in the manifest, where a YAML file was before:
//!
//! ```ignore
//! Manifest::new("apps", KindRef::of_crd::<App>()).crd_of::<App>()
//! ```
//!
//! A CRD of several versions is kube's `merge_crds` of each version's, handed to
//! [`CrdManifest::crd_from`].

use std::any::TypeId;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_core::{CustomResourceExt, Resource};

use crate::{KindRef, Manifest};

/// A manifest's CRD from a type rather than from text.
pub trait CrdManifest {
    /// Define the CRD `K` generates (`K` derives kube's `CustomResource`).
    #[must_use]
    fn crd_of<K: CustomResourceExt>(self) -> Self;

    /// Define `crd`, e.g. kube's `merge_crds` of several versions' CRDs.
    #[must_use]
    fn crd_from(self, crd: &CustomResourceDefinition) -> Self;
}

impl CrdManifest for Manifest {
    fn crd_of<K: CustomResourceExt>(self) -> Self {
        self.crd_from(&K::crd())
    }

    fn crd_from(self, crd: &CustomResourceDefinition) -> Self {
        self.crd(&to_json(crd))
    }
}

/// The kind a type deriving kube's `CustomResource` declares.
pub trait CrdKind {
    /// Its group, version, kind, plural and scope, e.g. `KindRef::of_crd::<App>()`.
    fn of_crd<K: Resource<DynamicType = ()>>() -> KindRef
    where
        K::Scope: 'static;
}

impl CrdKind for KindRef {
    fn of_crd<K: Resource<DynamicType = ()>>() -> KindRef
    where
        K::Scope: 'static,
    {
        let (group, version, kind, plural) = (K::group(&()), K::version(&()), K::kind(&()), K::plural(&()));
        if TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>() {
            KindRef::namespaced(&group, &version, &kind, &plural)
        } else {
            KindRef::cluster(&group, &version, &kind, &plural)
        }
    }
}

/// The CRD as JSON text, what a manifest's `crds` hold.
pub fn to_json(crd: &CustomResourceDefinition) -> String {
    // A CRD is plain data with string keys: serializing it cannot fail.
    serde_json::to_string(crd).expect("a CustomResourceDefinition serializes to JSON")
}
