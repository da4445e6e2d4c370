//! The Kubernetes sample-controller's `Foo`, as a kubewasm plugin: each Foo runs an
//! nginx Deployment named `spec.deploymentName` with `spec.replicas` replicas.
//!
//! Like the original, it refuses to take over a Deployment of that name that someone
//! else owns. The host only hands a plugin the children it controls, so such a
//! Deployment is asked for as a related object.

use std::collections::BTreeMap;

use kubewasm_sdk::k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use kubewasm_sdk::k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use kubewasm_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubewasm_sdk::prelude::*;
use serde::{Deserialize, Serialize};

/// The custom resource, as far as this plugin reads it.
#[derive(Deserialize, Serialize)]
pub struct Foo {
    pub spec: FooSpec,
}

/// The bounds on `replicas` (1 to 10) live in the CRD schema, so the API server
/// rejects a bad Foo before it ever reaches the plugin.
#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    pub deployment_name: String,
    pub replicas: i32,
}

#[derive(Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FooStatus {
    pub available_replicas: i32,
}

pub struct FooReconciler;

impl Reconciler for FooReconciler {
    fn describe() -> Manifest {
        Manifest::new("foo", KindRef::namespaced("samplecontroller.k8s.io", "v1alpha1", "Foo", "foos"))
            .child(KindRef::of::<Deployment>())
            .related(KindRef::of::<Deployment>())
            .crd(include_str!("../crd.yaml"))
    }

    /// The Deployment the Foo names, whoever owns it: children only show what is ours.
    fn related(parent: &Object) -> Vec<Query> {
        // A Foo that does not parse fails in `reconcile`, with a message; nothing to read.
        let Ok(Foo { spec }) = parent.parse() else {
            return Vec::new();
        };
        let deployment = KindRef::of::<Deployment>();
        vec![Query::named(deployment, parent.namespace(), [&spec.deployment_name])]
    }

    fn reconcile(req: &Request) -> Result<Response, Error> {
        let Foo { spec } = req.parent_as()?;
        let name = &spec.deployment_name;

        let available =
            req.child::<Deployment>(name)?.and_then(|d| d.status).and_then(|s| s.available_replicas).unwrap_or(0);
        let response = Response::new().status(&FooStatus { available_replicas: available })?;

        let taken = req.find_related::<Deployment>(name).is_some_and(|d| !d.is_controlled_by(req.parent()));
        if taken {
            let message = format!("Resource \"{name}\" already exists and is not managed by Foo");
            return Ok(response.event(Event::warning("ErrResourceExists", message)));
        }
        response.child(&deployment(req.parent(), &spec))
    }
}

fn deployment(parent: &Object, spec: &FooSpec) -> Deployment {
    let labels = BTreeMap::from([
        ("app".to_string(), "nginx".to_string()),
        ("controller".to_string(), parent.name().to_string()),
    ]);
    let mut metadata = parent.child_meta(&spec.deployment_name);
    metadata.labels.get_or_insert_default().extend(labels.clone());
    Deployment {
        metadata,
        spec: Some(DeploymentSpec {
            replicas: Some(spec.replicas),
            selector: LabelSelector { match_labels: Some(labels.clone()), ..LabelSelector::default() },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels), ..ObjectMeta::default() }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".into(),
                        image: Some("nginx:latest".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    }
}

kubewasm_sdk::export_reconciler!(FooReconciler);

#[cfg(test)]
mod tests {
    use kubewasm_sdk::serde_json::{Value, json};
    use kubewasm_sdk::testing::{self, Outcome, TestRequest};

    use super::*;

    fn foo() -> Value {
        json!({
            "apiVersion": "samplecontroller.k8s.io/v1alpha1",
            "kind": "Foo",
            "metadata": {"name": "example-foo", "namespace": "default", "uid": "foo-uid"},
            "spec": {"deploymentName": "example-foo", "replicas": 3},
        })
    }

    fn existing(owner_uid: Option<&str>, available: i32) -> Value {
        let mut d = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "example-foo", "namespace": "default"},
            "status": {"availableReplicas": available},
        });
        if let Some(uid) = owner_uid {
            d["metadata"]["ownerReferences"] = json!([{
                "apiVersion": "samplecontroller.k8s.io/v1alpha1",
                "kind": "Foo",
                "name": "example-foo",
                "uid": uid,
                "controller": true,
            }]);
        }
        d
    }

    fn run(request: TestRequest) -> Outcome {
        testing::reconcile::<FooReconciler>(request).expect("reconcile succeeds")
    }

    #[test]
    fn deployment_is_named_by_the_spec_and_runs_its_replicas_of_nginx() {
        let mut parent = foo();
        parent["spec"]["deploymentName"] = json!("nginx-for-foo");
        let out = run(TestRequest::new(parent));

        let deploy: Deployment = out.child("nginx-for-foo");
        assert_eq!(deploy.metadata.namespace.as_deref(), Some("default"));
        let labels = BTreeMap::from([
            ("app".to_string(), "nginx".to_string()),
            ("controller".to_string(), "example-foo".to_string()),
        ]);
        assert_eq!(deploy.metadata.labels.as_ref(), Some(&labels));
        let spec = deploy.spec.unwrap();
        assert_eq!(spec.replicas, Some(3));
        assert_eq!(spec.selector.match_labels.as_ref(), Some(&labels));
        assert_eq!(spec.template.metadata.unwrap().labels, Some(labels));
        let container = &spec.template.spec.unwrap().containers[0];
        assert_eq!(container.name, "nginx");
        assert_eq!(container.image.as_deref(), Some("nginx:latest"));
        assert!(out.events.is_empty());
    }

    #[test]
    fn deployment_not_owned_is_left_alone_with_warning() {
        let out = run(TestRequest::new(foo()).related(existing(Some("someone-else"), 5)));
        assert!(out.children.is_empty());
        let warnings = out.warnings();
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].reason, "ErrResourceExists");
        assert_eq!(warnings[0].message, r#"Resource "example-foo" already exists and is not managed by Foo"#);
        assert_eq!(out.status, Some(json!({"availableReplicas": 0})));
    }

    #[test]
    fn deployment_without_owner_is_not_taken_over() {
        let out = run(TestRequest::new(foo()).related(existing(None, 1)));
        assert!(out.children.is_empty());
        assert_eq!(out.warnings().len(), 1);
    }

    #[test]
    fn deployment_we_control_is_kept_up_to_date() {
        let ours = existing(Some("foo-uid"), 2);
        let out = run(TestRequest::new(foo()).child(ours.clone()).related(ours));
        assert!(out.events.is_empty());
        assert_eq!(out.child::<Deployment>("example-foo").spec.unwrap().replicas, Some(3));
        assert_eq!(out.status, Some(json!({"availableReplicas": 2})));
    }

    #[test]
    fn status_reports_available_replicas_of_the_observed_deployment() {
        let out = run(TestRequest::new(foo()).child(existing(Some("foo-uid"), 3)));
        assert_eq!(out.status, Some(json!({"availableReplicas": 3})));
    }

    #[test]
    fn status_is_zero_before_the_deployment_exists() {
        let out = run(TestRequest::new(foo()));
        assert_eq!(out.status, Some(json!({"availableReplicas": 0})));
    }

    #[test]
    fn related_asks_for_the_named_deployment_in_the_foo_namespace() {
        let queries = testing::related::<FooReconciler>(foo());
        assert_eq!(queries, [Query::named(KindRef::of::<Deployment>(), Some("default"), ["example-foo"])]);
    }

    #[test]
    fn related_asks_for_nothing_when_the_spec_does_not_parse() {
        let mut parent = foo();
        parent["spec"] = json!({"replicas": 1});
        assert!(testing::related::<FooReconciler>(parent).is_empty());
    }

    #[test]
    fn spec_without_deployment_name_is_a_permanent_error_naming_the_field() {
        let mut parent = foo();
        parent["spec"] = json!({"replicas": 1});
        let err = testing::reconcile::<FooReconciler>(TestRequest::new(parent))
            .expect_err("a spec without deploymentName fails");
        assert!(!err.retryable);
        assert!(err.message.contains("deploymentName"), "{}", err.message);
    }
}
