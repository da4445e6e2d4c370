//! `DemoApplication`: one image, a replica count and some ports become a Deployment
//! and, when there are ports, a Service in front of it.
//!
//! The plugin only decides. The host applies both children, deletes the Service when
//! the ports go away, reverts hand edits and writes the status.

use std::collections::BTreeMap;

use kube::CustomResource;
use kubewasm_sdk::k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use kubewasm_sdk::k8s_openapi::api::core::v1::{
    Container, ContainerPort, PodSpec, PodTemplateSpec, Service, ServicePort, ServiceSpec,
};
use kubewasm_sdk::k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubewasm_sdk::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kubewasm_sdk::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The custom resource: kube's `CustomResource` derive makes the `DemoApplication` type
/// and its CustomResourceDefinition from this spec, validation included.
// Two integer columns repeat `type_ = "integer"`, which is no duplicate.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "paas.cmft.com", version = "v1beta1", kind = "DemoApplication", namespaced)]
#[kube(status = "DemoApplicationStatus", shortname = "demoapp")]
#[kube(printcolumn(name = "Image", type_ = "string", json_path = ".spec.image"))]
#[kube(printcolumn(name = "Replicas", type_ = "integer", json_path = ".spec.replica"))]
#[kube(printcolumn(name = "Available", type_ = "integer", json_path = ".status.availableReplicas"))]
#[serde(rename_all = "camelCase")]
pub struct DemoApplicationSpec {
    #[schemars(length(min = 1))]
    pub image: String,
    /// The CRD defaults it too; this covers objects stored before the default existed.
    #[serde(default = "one")]
    #[schemars(range(min = 0))]
    pub replica: i32,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<DemoPort>,
}

#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DemoPort {
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,
    /// Defaults to `port`, as a Service's targetPort does.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 65535))]
    pub target_port: Option<i32>,
    /// Setting it on any port turns the Service into a `NodePort` Service.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 30000, max = 32767))]
    pub node_port: Option<i32>,
}

impl DemoPort {
    fn target(&self) -> i32 {
        self.target_port.unwrap_or(self.port)
    }
}

#[derive(Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DemoApplicationStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
}

fn one() -> i32 {
    1
}

pub struct DemoApplicationReconciler;

impl Reconciler for DemoApplicationReconciler {
    fn describe() -> Manifest {
        Manifest::new("demo-application", KindRef::of_crd::<DemoApplication>())
            .child(KindRef::of::<Deployment>())
            .child(KindRef::of::<Service>())
            .crd_of::<DemoApplication>()
    }

    fn reconcile(req: &Request) -> Result<Response, Error> {
        let app: DemoApplication = req.parent_as()?;
        let name = req.parent().name();
        let labels = BTreeMap::from([("app".to_string(), name.to_string())]);

        let mut response = Response::new().child(&deployment(req.parent(), &app.spec, &labels))?;
        // No ports, no Service: leaving it out is what makes the host delete an old one.
        if !app.spec.ports.is_empty() {
            response = response.child(&service(req.parent(), &app.spec, &labels))?;
        }

        let available =
            req.child::<Deployment>(name)?.and_then(|d| d.status).and_then(|s| s.available_replicas).unwrap_or(0);
        response.status(&DemoApplicationStatus { available_replicas: Some(available) })
    }
}

/// Child metadata: the parent's labels, then `app: <name>`, which the selectors rely on.
fn meta(parent: &Object, labels: &BTreeMap<String, String>) -> ObjectMeta {
    let mut meta = parent.child_meta(parent.name());
    meta.labels.get_or_insert_default().extend(labels.clone());
    meta
}

fn deployment(parent: &Object, spec: &DemoApplicationSpec, labels: &BTreeMap<String, String>) -> Deployment {
    let ports = spec
        .ports
        .iter()
        .map(|p| ContainerPort { container_port: p.target(), protocol: Some("TCP".into()), ..ContainerPort::default() })
        .collect::<Vec<_>>();
    Deployment {
        metadata: meta(parent, labels),
        spec: Some(DeploymentSpec {
            replicas: Some(spec.replica),
            selector: LabelSelector { match_labels: Some(labels.clone()), ..LabelSelector::default() },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta { labels: Some(labels.clone()), ..ObjectMeta::default() }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "app".into(),
                        image: Some(spec.image.clone()),
                        ports: (!ports.is_empty()).then_some(ports),
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

fn service(parent: &Object, spec: &DemoApplicationSpec, labels: &BTreeMap<String, String>) -> Service {
    let node_port = spec.ports.iter().any(|p| p.node_port.is_some());
    let ports = spec
        .ports
        .iter()
        .map(|p| ServicePort {
            name: Some(format!("port-{}", p.port)),
            protocol: Some("TCP".into()),
            port: p.port,
            target_port: Some(IntOrString::Int(p.target())),
            node_port: p.node_port,
            ..ServicePort::default()
        })
        .collect();
    Service {
        metadata: meta(parent, labels),
        spec: Some(ServiceSpec {
            type_: Some(if node_port { "NodePort" } else { "ClusterIP" }.into()),
            selector: Some(labels.clone()),
            ports: Some(ports),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

#[cfg(feature = "export")]
kubewasm_sdk::export_reconciler!(DemoApplicationReconciler);

#[cfg(test)]
mod tests {
    use kubewasm_sdk::serde_json::{Value, json};
    use kubewasm_sdk::testing::{self, Outcome, TestRequest};

    use super::*;

    fn app(spec: Value) -> Value {
        let mut app = json!({
            "apiVersion": "paas.cmft.com/v1beta1",
            "kind": "DemoApplication",
            "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "labels": {"team": "a"}},
        });
        app["spec"] = spec;
        app
    }

    fn run(request: TestRequest) -> Outcome {
        testing::reconcile::<DemoApplicationReconciler>(request).expect("reconcile succeeds")
    }

    #[test]
    fn service_exposes_ports_with_target_port_defaulting_to_port() {
        let out = run(TestRequest::new(app(json!({
            "image": "nginx:1.27",
            "ports": [{"port": 80, "targetPort": 8080}, {"port": 443}],
        }))));
        let svc: Service = out.child("web");
        let spec = svc.spec.unwrap();
        assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
        assert_eq!(spec.selector, Some(BTreeMap::from([("app".into(), "web".into())])));
        let ports = spec.ports.unwrap();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0].name.as_deref(), Some("port-80"));
        assert_eq!(ports[0].protocol.as_deref(), Some("TCP"));
        assert_eq!(ports[0].port, 80);
        assert_eq!(ports[0].target_port, Some(IntOrString::Int(8080)));
        assert_eq!(ports[0].node_port, None);
        assert_eq!(ports[1].name.as_deref(), Some("port-443"));
        assert_eq!(ports[1].target_port, Some(IntOrString::Int(443)));
    }

    #[test]
    fn service_exposes_node_ports() {
        let out = run(TestRequest::new(app(json!({
            "image": "nginx",
            "ports": [{"port": 80, "nodePort": 30080}, {"port": 81}],
        }))));
        let spec = out.child::<Service>("web").spec.unwrap();
        assert_eq!(spec.type_.as_deref(), Some("NodePort"));
        let ports = spec.ports.unwrap();
        assert_eq!(ports[0].node_port, Some(30080));
        assert_eq!(ports[1].node_port, None);
    }

    #[test]
    fn deployment_runs_the_image_with_replicas_ports_and_labels() {
        let out = run(TestRequest::new(app(json!({
            "image": "nginx:1.27",
            "replica": 3,
            "ports": [{"port": 80, "targetPort": 8080}, {"port": 443}],
        }))));
        let deploy: Deployment = out.child("web");
        assert_eq!(deploy.metadata.namespace.as_deref(), Some("shop"));
        let labels = deploy.metadata.labels.unwrap();
        assert_eq!(labels.get("app").map(String::as_str), Some("web"));
        assert_eq!(labels.get("team").map(String::as_str), Some("a"));

        let spec = deploy.spec.unwrap();
        let app_label = BTreeMap::from([("app".to_string(), "web".to_string())]);
        assert_eq!(spec.replicas, Some(3));
        assert_eq!(spec.selector.match_labels.as_ref(), Some(&app_label));
        assert_eq!(spec.template.metadata.unwrap().labels, Some(app_label));
        let container = &spec.template.spec.unwrap().containers[0];
        assert_eq!(container.name, "app");
        assert_eq!(container.image.as_deref(), Some("nginx:1.27"));
        let ports: Vec<_> = container.ports.iter().flatten().map(|p| p.container_port).collect();
        assert_eq!(ports, [8080, 443]);
        assert!(container.ports.iter().flatten().all(|p| p.protocol.as_deref() == Some("TCP")));
    }

    #[test]
    fn replica_defaults_to_one() {
        let out = run(TestRequest::new(app(json!({"image": "nginx"}))));
        assert_eq!(out.child::<Deployment>("web").spec.unwrap().replicas, Some(1));
    }

    #[test]
    fn no_ports_means_no_service() {
        let out = run(TestRequest::new(app(json!({"image": "nginx", "ports": []}))));
        assert!(out.children_of::<Service>().is_empty());
        assert_eq!(out.children_of::<Deployment>().len(), 1);
    }

    #[test]
    fn status_reports_available_replicas_of_the_observed_deployment() {
        let observed = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "shop"},
            "status": {"availableReplicas": 2},
        });
        let out = run(TestRequest::new(app(json!({"image": "nginx", "replica": 2}))).child(observed));
        assert_eq!(out.status, Some(json!({"availableReplicas": 2})));
    }

    #[test]
    fn status_is_zero_before_the_deployment_exists() {
        let out = run(TestRequest::new(app(json!({"image": "nginx"}))));
        assert_eq!(out.status, Some(json!({"availableReplicas": 0})));
    }

    #[test]
    fn spec_without_image_is_a_permanent_error_naming_the_field() {
        let request = TestRequest::new(app(json!({"replica": 1})));
        let err = testing::reconcile::<DemoApplicationReconciler>(request).expect_err("a spec without image fails");
        assert!(!err.retryable);
        assert!(err.message.contains("image"), "{}", err.message);
    }

    #[test]
    fn manifest_declares_parent_children_and_crd() {
        let manifest = testing::describe::<DemoApplicationReconciler>();
        assert_eq!(manifest.name, "demo-application");
        assert_eq!(manifest.parent.map(|p| p.plural).as_deref(), Some("demoapplications"));
        assert_eq!(manifest.children, [KindRef::of::<Deployment>(), KindRef::of::<Service>()]);
        let crd: Value = kubewasm_sdk::serde_json::from_str(&manifest.crds[0]).expect("the CRD is JSON");
        assert_eq!(crd["metadata"]["name"], "demoapplications.paas.cmft.com");
    }

    /// The generated CRD is the hand-written one (crd.yaml), which each port's CRD equals
    /// exactly (tests/tests/crds): the same names, scope, version, columns and status
    /// subresource, and a schema that accepts and defaults the same objects. What kube
    /// adds is told apart:
    /// doc comments as descriptions, `nullable` on optional fields (the API server prunes
    /// a null where it is not allowed, so either way the object is accepted), a required
    /// `spec`, which the plugin needs anyway, and bounds written as floats (`1.0`); what
    /// it leaves out is `listKind`, which the API server defaults to the kind's + `List`.
    #[test]
    fn generated_crd_is_the_hand_written_one() {
        let manifest = testing::describe::<DemoApplicationReconciler>();
        let mut generated: Value = kubewasm_sdk::serde_json::from_str(&manifest.crds[0]).expect("the CRD is JSON");
        let mut written: Value = serde_yaml_ng::from_str(include_str!("../crd.yaml")).expect("crd.yaml parses");
        let names = written["spec"]["names"].as_object_mut().expect("names");
        assert_eq!(names.remove("listKind"), Some(json!("DemoApplicationList")));
        strip(&mut written);

        let schema = &mut generated["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
        assert_eq!(schema["required"], json!(["spec"]));
        schema.as_object_mut().expect("an object schema").remove("required");
        strip(schema);
        assert_eq!(generated, written);
    }

    /// Drops what kube's schema adds beyond crd.yaml's (`description`, `title`,
    /// `nullable`) and reads every number as a float.
    fn strip(schema: &mut Value) {
        match schema {
            Value::Number(n) => *schema = json!(n.as_f64()),
            Value::Object(map) => {
                for key in ["description", "title", "nullable"] {
                    map.remove(key);
                }
                map.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
}
