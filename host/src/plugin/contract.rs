//! The `kubewasm:reconciler` contract as seen by the host: generated bindings of the
//! versions it runs, and what is wrong with an answer that cannot be decoded. The
//! conversions between the WIT records and the contract's types are the contract
//! crate's own table (`kubewasm_contract::wit_conversions!`), shared with the SDK.
//!
//! The host runs components of the current version (0.2.0) and of 0.1.0, whose records
//! are the same but for the manifest (no `watches` or `outbound`, a `parent` always) and
//! the response (no `delete`), and whose `describe` is in its `reconciler` interface.

use kubewasm_contract::wit::{Lift, NotJson};
use kubewasm_contract::{KindRef, Limits, Manifest, Response};

/// Generated from `wit/`: the `Plugin` world of the current contract and its `PluginPre`.
pub mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "plugin",
    });
}

/// Generated from `wit/0.1.0/`: the `Plugin` world of contract 0.1.0.
pub mod bindings_0_1_0 {
    wasmtime::component::bindgen!({
        path: "../wit/0.1.0",
        world: "plugin",
    });
}

pub use bindings::kubewasm::reconciler::types as wit;
pub use bindings_0_1_0::kubewasm::reconciler::types as wit_0_1_0;

kubewasm_contract::wit_conversions!(bindings::kubewasm::reconciler);
kubewasm_contract::wit_conversions!(v0_1_0 bindings_0_1_0::kubewasm::reconciler);

/// A 0.1.0 manifest is a 0.2.0 one that reconciles its parent and handles nothing.
impl From<wit_0_1_0::Manifest> for Manifest {
    fn from(wire: wit_0_1_0::Manifest) -> Self {
        let kind = |k: &wit_0_1_0::KindRef| KindRef::from(k.clone());
        let limits = Limits::from(wire.limits);
        Manifest {
            children: wire.children.iter().map(kind).collect(),
            related: wire.related.iter().map(kind).collect(),
            finalizer: wire.finalizer,
            crds: wire.crds,
            limits,
            ..Manifest::new(&wire.name, kind(&wire.parent))
        }
    }
}

/// A 0.1.0 response is a 0.2.0 one that deletes no child by uid.
impl TryFrom<wit_0_1_0::Response> for Response {
    type Error = NotJson;
    fn try_from(wire: wit_0_1_0::Response) -> Result<Self, NotJson> {
        Ok(Response {
            children: Lift::lift(&wire.children, "child")?,
            status: Lift::lift(&wire.status, "status")?,
            labels: Lift::lift(&wire.labels, "labels")?,
            annotations: Lift::lift(&wire.annotations, "annotations")?,
            requeue_after: Lift::lift(&wire.requeue_after_ms, "requeue_after")?,
            events: Lift::lift(&wire.events, "events")?,
            finalized: wire.finalized,
            delete: Vec::new(),
        })
    }
}

/// The contract version components are built against now, and the versions this host
/// runs, newest first; components built against another version are refused at load.
pub const CONTRACT_VERSION: &str = "0.2.0";
pub const SUPPORTED_VERSIONS: &[&str] = &[CONTRACT_VERSION, "0.1.0"];

/// The contract's package, the prefix of every interface a plugin exports.
pub const PACKAGE: &str = "kubewasm:reconciler";

/// The contract version a component was built against, from its exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// 0.2.0: `describe` in `plugin-info`, `reconciler` and `handler` beside it.
    Current,
    /// 0.1.0: `describe`, `related` and `reconcile` in `reconciler`.
    V0_1_0,
}

impl Version {
    /// `0.2.0`, `0.1.0`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Current => CONTRACT_VERSION,
            Self::V0_1_0 => "0.1.0",
        }
    }

    /// The version whose identifying export is among `exports`: `plugin-info` of the
    /// current version, else `reconciler` of 0.1.0.
    pub(crate) fn of_exports(exports: &[&str]) -> Option<Self> {
        let has = |interface: &str, version: &str| {
            let name = format!("{PACKAGE}/{interface}@{version}");
            exports.contains(&name.as_str())
        };
        if has("plugin-info", CONTRACT_VERSION) {
            Some(Self::Current)
        } else if has("reconciler", "0.1.0") {
            Some(Self::V0_1_0)
        } else {
            None
        }
    }
}

/// What is wrong with an answer that cannot be decoded.
#[derive(Debug, thiserror::Error)]
pub enum MalformedAnswer {
    /// One of the JSON texts (a child or the status) does not parse.
    #[error(transparent)]
    NotJson(#[from] kubewasm_contract::wit::NotJson),
    /// `related` asked for a kind outside the manifest's `related` list.
    #[error("related query for {kind} which the manifest does not declare in `related`")]
    UndeclaredRelated { kind: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_read_from_the_identifying_export() {
        let current = ["kubewasm:reconciler/plugin-info@0.2.0", "kubewasm:reconciler/reconciler@0.2.0"];
        assert_eq!(Version::of_exports(&current), Some(Version::Current));
        assert_eq!(Version::of_exports(&["kubewasm:reconciler/reconciler@0.1.0"]), Some(Version::V0_1_0));
        assert_eq!(Version::of_exports(&["kubewasm:reconciler/reconciler@0.3.0"]), None);
    }

    #[test]
    fn a_manifest_of_0_1_0_reconciles_its_parent_and_handles_nothing() {
        let parent = wit_0_1_0::KindRef {
            group: "x.io".into(),
            version: "v1".into(),
            kind: "X".into(),
            plural: "xs".into(),
            namespaced: true,
        };
        let wire = wit_0_1_0::Manifest {
            name: "old".into(),
            parent: parent.clone(),
            children: vec![parent],
            related: Vec::new(),
            finalizer: true,
            crds: vec!["crd".into()],
            limits: wit_0_1_0::Limits { deadline_ms: Some(5), memory_mib: None },
        };
        let manifest = Manifest::from(wire);
        let x = KindRef::namespaced("x.io", "v1", "X", "xs");
        assert_eq!(
            manifest,
            Manifest::new("old", x.clone())
                .child(x)
                .finalizer()
                .crd("crd")
                .limits(Limits { deadline_ms: Some(5), memory_mib: None })
        );
    }
}
