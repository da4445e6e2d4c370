//! "Which Services select this Pod?": annotates every Pod with the names of the
//! Services whose selector matches its labels.
//!
//! A decorator: it owns no children and only sets an annotation on its parent. The
//! host re-reconciles a Pod whenever a Service in its namespace changes, so the
//! annotation follows both Services and Pod labels.

use std::collections::BTreeMap;

use kubewasm_sdk::k8s_openapi::api::core::v1::{Pod, Service};
use kubewasm_sdk::prelude::*;

/// Comma-separated, sorted names of the Services that select the Pod.
pub const ANNOTATION: &str = "kubewasm.io/services";

pub struct PodServices;

impl Reconciler for PodServices {
    fn describe() -> Manifest {
        Manifest::new("pod-services", KindRef::of::<Pod>()).related(KindRef::of::<Service>())
    }

    /// A Service selects Pods of its own namespace only.
    fn related(parent: &Object) -> Vec<Query> {
        vec![Query::all(KindRef::of::<Service>(), parent.namespace())]
    }

    fn reconcile(req: &Request) -> Result<Response, Error> {
        let pod = req.parent();
        let labels = pod.labels();
        let mut names: Vec<String> = req
            .related_of::<Service>()?
            .into_iter()
            .filter(|s| s.metadata.namespace.as_deref() == pod.namespace())
            .filter(|s| selects(s, &labels))
            .filter_map(|s| s.metadata.name)
            .collect();
        names.sort();

        // No annotation rather than an empty one: the host removes what the plugin
        // stops setting.
        if names.is_empty() {
            return Ok(Response::new());
        }
        Ok(Response::new().annotation(ANNOTATION, &names.join(",")))
    }
}

/// Whether `service` sends traffic to a Pod with `labels`. An empty selector selects
/// nothing: such a Service has its endpoints managed by hand.
fn selects(service: &Service, labels: &BTreeMap<String, String>) -> bool {
    let selector = service.spec.as_ref().and_then(|s| s.selector.as_ref());
    selector.is_some_and(|sel| !sel.is_empty() && sel.iter().all(|(k, v)| labels.get(k) == Some(v)))
}

kubewasm_sdk::export_reconciler!(PodServices);

#[cfg(test)]
mod tests {
    use kubewasm_sdk::serde_json::{Value, json};
    use kubewasm_sdk::testing::{self, Outcome, TestRequest};

    use super::*;

    fn pod() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "web-0",
                "namespace": "shop",
                "uid": "pod-uid",
                "labels": {"app": "web", "tier": "frontend"},
            },
        })
    }

    fn service(namespace: &str, name: &str, selector: &Value) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": selector, "ports": [{"port": 80}]},
        })
    }

    fn run(request: TestRequest) -> Outcome {
        testing::reconcile::<PodServices>(request).expect("reconcile succeeds")
    }

    fn annotation(out: &Outcome) -> Option<&str> {
        out.annotations.get(ANNOTATION).map(String::as_str)
    }

    #[test]
    fn no_matching_service_means_no_annotation() {
        let out = run(TestRequest::new(pod()).related(service("shop", "db", &json!({"app": "db"}))));
        assert!(out.annotations.is_empty());
        assert!(out.children.is_empty());
        assert_eq!(out.status, None);
    }

    #[test]
    fn one_matching_service_is_named() {
        let out = run(TestRequest::new(pod()).related(service("shop", "web", &json!({"app": "web"}))));
        assert_eq!(annotation(&out), Some("web"));
    }

    #[test]
    fn several_matching_services_are_listed_sorted() {
        let out = run(TestRequest::new(pod())
            .related(service("shop", "web", &json!({"app": "web"})))
            .related(service("shop", "frontend", &json!({"tier": "frontend"})))
            .related(service("shop", "db", &json!({"app": "db"})))
            .related(service("shop", "all-web", &json!({"app": "web", "tier": "frontend"}))));
        assert_eq!(annotation(&out), Some("all-web,frontend,web"));
    }

    #[test]
    fn selector_must_be_a_subset_of_the_pod_labels() {
        let out =
            run(TestRequest::new(pod()).related(service("shop", "canary", &json!({"app": "web", "track": "canary"}))));
        assert!(out.annotations.is_empty());
    }

    #[test]
    fn service_with_empty_selector_never_matches() {
        let empty = service("shop", "manual", &json!({}));
        let absent = service("shop", "external", &Value::Null);
        let out = run(TestRequest::new(pod()).related(empty).related(absent));
        assert!(out.annotations.is_empty());
    }

    #[test]
    fn service_in_another_namespace_is_ignored() {
        let out = run(TestRequest::new(pod())
            .related(service("other", "web", &json!({"app": "web"})))
            .related(service("shop", "frontend", &json!({"tier": "frontend"}))));
        assert_eq!(annotation(&out), Some("frontend"));
    }

    #[test]
    fn related_asks_for_every_service_in_the_pod_namespace() {
        let queries = testing::related::<PodServices>(pod());
        assert_eq!(queries, [Query::all(KindRef::of::<Service>(), Some("shop"))]);
    }

    #[test]
    fn manifest_owns_no_children() {
        let manifest = testing::describe::<PodServices>();
        assert_eq!(manifest.name, "pod-services");
        assert_eq!(manifest.parent, Some(KindRef::of::<Pod>()));
        assert!(manifest.children.is_empty());
        assert!(manifest.crds.is_empty());
        assert_eq!(manifest.related, [KindRef::of::<Service>()]);
    }
}
