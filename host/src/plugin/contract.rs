//! The `kubewasm:reconciler` contract as seen by the host: generated bindings, the
//! supported version, and conversion of the WIT types into the host's own.

use std::time::Duration;

use kubewasm_contract::{
    Event, EventType, KindRef, LabelOperator, Limits, Manifest, Query, Requirement, Response, Selector,
};
use serde_json::Value;

/// Generated from `wit/`: the `Plugin` world and its `PluginPre`.
pub mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "plugin",
    });
}

pub use bindings::kubewasm::reconciler::types as wit;

/// The contract version this host implements; components built against another
/// version are refused at load.
pub const CONTRACT_VERSION: &str = "0.1.0";

/// The name of the export every plugin must provide, without its version.
pub const EXPORT_PREFIX: &str = "kubewasm:reconciler/reconciler@";

pub fn kind_from_wit(k: wit::KindRef) -> KindRef {
    KindRef { group: k.group, version: k.version, kind: k.kind, plural: k.plural, namespaced: k.namespaced }
}

/// The manifest as the plugin described itself; [`Manifest::check`] validates it.
pub fn manifest_from_wit(m: wit::Manifest) -> Manifest {
    Manifest {
        name: m.name,
        parent: kind_from_wit(m.parent),
        children: m.children.into_iter().map(kind_from_wit).collect(),
        related: m.related.into_iter().map(kind_from_wit).collect(),
        finalizer: m.finalizer,
        crds: m.crds,
        limits: Limits { deadline_ms: m.limits.deadline_ms, memory_mib: m.limits.memory_mib },
    }
}

pub fn query_from_wit(q: wit::Query) -> Query {
    Query {
        kind: kind_from_wit(q.kind),
        namespace: q.namespace,
        selector: match q.selector {
            wit::Selector::All => Selector::All,
            wit::Selector::Names(names) => Selector::Names(names),
            wit::Selector::Labels(reqs) => Selector::Labels(
                reqs.into_iter()
                    .map(|r| Requirement {
                        key: r.key,
                        operator: match r.operator {
                            wit::LabelOperator::In => LabelOperator::In,
                            wit::LabelOperator::NotIn => LabelOperator::NotIn,
                            wit::LabelOperator::Exists => LabelOperator::Exists,
                            wit::LabelOperator::DoesNotExist => LabelOperator::DoesNotExist,
                        },
                        values: r.values,
                    })
                    .collect(),
            ),
        },
    }
}

/// What is wrong with an answer that cannot be decoded.
#[derive(Debug, thiserror::Error)]
pub enum MalformedAnswer {
    /// One of the JSON texts (`what`: a child or the status) does not parse.
    #[error("{what} is not JSON: {source}")]
    NotJson { what: String, source: serde_json::Error },
    /// `related` asked for a kind outside the manifest's `related` list.
    #[error("related query for {kind} which the manifest does not declare in `related`")]
    UndeclaredRelated { kind: String },
}

/// Decodes the plugin's answer; the JSON texts are the only part that can be malformed.
pub fn response_from_wit(r: wit::Response) -> Result<Response, MalformedAnswer> {
    let json = |what: String, text: &str| {
        serde_json::from_str::<Value>(text).map_err(|source| MalformedAnswer::NotJson { what, source })
    };
    let children =
        r.children.iter().enumerate().map(|(i, t)| json(format!("child #{i}"), t)).collect::<Result<Vec<_>, _>>()?;
    let status = r.status.as_deref().map(|t| json("status".into(), t)).transpose()?;
    Ok(Response {
        children,
        status,
        labels: r.labels.into_iter().collect(),
        annotations: r.annotations.into_iter().collect(),
        requeue_after: r.requeue_after_ms.map(Duration::from_millis),
        events: r
            .events
            .into_iter()
            .map(|e| Event {
                type_: match e.type_ {
                    wit::EventType::Normal => EventType::Normal,
                    wit::EventType::Warning => EventType::Warning,
                },
                reason: e.reason,
                message: e.message,
            })
            .collect(),
        finalized: r.finalized,
    })
}
