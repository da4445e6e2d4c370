//! The glue between the WIT bindings and a [`Reconciler`]: decode the request, call
//! the plugin, encode the answer. [`crate::export_reconciler!`] and
//! [`crate::testing`] both call these functions, so native tests exercise the exact
//! path a WebAssembly call takes.

use serde_json::Value;

use crate::bindings::kubewasm::reconciler::types as wit;
use crate::{
    Error, EventType, KindRef, LabelOperator, Manifest, Object, Query, Reconciler, Request, Response, Selector,
};

pub fn describe<R: Reconciler>() -> wit::Manifest {
    manifest_to_wit(R::describe())
}

#[allow(clippy::needless_pass_by_value)] // the signature of the generated export
pub fn related<R: Reconciler>(parent: String) -> Vec<wit::Query> {
    // A parent that is not JSON cannot match anything; the host never sends one.
    let Ok(parent) = serde_json::from_str::<Value>(&parent) else {
        return Vec::new();
    };
    R::related(&Object::new(parent)).into_iter().map(query_to_wit).collect()
}

pub fn reconcile<R: Reconciler>(request: wit::Request) -> Result<wit::Response, wit::ReconcileError> {
    let request = request_from_wit(request).map_err(error_to_wit)?;
    R::reconcile(&request).map(response_to_wit).map_err(error_to_wit)
}

fn parse(what: &str, text: &str) -> Result<Value, Error> {
    serde_json::from_str(text).map_err(|e| Error::permanent(format!("{what} is not JSON: {e}")))
}

fn request_from_wit(r: wit::Request) -> Result<Request, Error> {
    let objects = |what: &str, texts: Vec<String>| -> Result<Vec<Value>, Error> {
        texts.iter().map(|t| parse(what, t)).collect()
    };
    Ok(Request::new(
        parse("parent", &r.parent)?,
        objects("child", r.children)?,
        objects("related object", r.related)?,
        r.finalizing,
        r.now,
        parse("config", &r.config)?,
    ))
}

fn response_to_wit(r: Response) -> wit::Response {
    wit::Response {
        children: r.children.iter().map(Value::to_string).collect(),
        status: r.status.as_ref().map(Value::to_string),
        labels: r.labels.into_iter().collect(),
        annotations: r.annotations.into_iter().collect(),
        requeue_after_ms: r.requeue_after.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        events: r
            .events
            .into_iter()
            .map(|e| wit::Event {
                type_: match e.type_ {
                    EventType::Normal => wit::EventType::Normal,
                    EventType::Warning => wit::EventType::Warning,
                },
                reason: e.reason,
                message: e.message,
            })
            .collect(),
        finalized: r.finalized,
    }
}

fn error_to_wit(e: Error) -> wit::ReconcileError {
    wit::ReconcileError { message: e.message, retryable: e.retryable }
}

fn kind_to_wit(k: KindRef) -> wit::KindRef {
    wit::KindRef { group: k.group, version: k.version, kind: k.kind, plural: k.plural, namespaced: k.namespaced }
}

fn manifest_to_wit(m: Manifest) -> wit::Manifest {
    wit::Manifest {
        name: m.name,
        parent: kind_to_wit(m.parent),
        children: m.children.into_iter().map(kind_to_wit).collect(),
        related: m.related.into_iter().map(kind_to_wit).collect(),
        finalizer: m.finalizer,
        crds: m.crds,
        limits: wit::Limits { deadline_ms: m.limits.deadline_ms, memory_mib: m.limits.memory_mib },
    }
}

fn query_to_wit(q: Query) -> wit::Query {
    wit::Query {
        kind: kind_to_wit(q.kind),
        namespace: q.namespace,
        selector: match q.selector {
            Selector::All => wit::Selector::All,
            Selector::Names(names) => wit::Selector::Names(names),
            Selector::Labels(reqs) => wit::Selector::Labels(
                reqs.into_iter()
                    .map(|r| wit::LabelRequirement {
                        key: r.key,
                        operator: match r.operator {
                            LabelOperator::In => wit::LabelOperator::In,
                            LabelOperator::NotIn => wit::LabelOperator::NotIn,
                            LabelOperator::Exists => wit::LabelOperator::Exists,
                            LabelOperator::DoesNotExist => wit::LabelOperator::DoesNotExist,
                        },
                        values: r.values,
                    })
                    .collect(),
            ),
        },
    }
}
