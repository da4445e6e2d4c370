"""The behaviour of plugins/demo-application (its Rust unit tests), for the Python port."""

import json

import pytest

import kubewasm
from kubewasm import kinds, testing

from app import DemoApplication


def app(spec: dict) -> dict:
    return {
        "apiVersion": "paas.cmft.com/v1beta1",
        "kind": "DemoApplication",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "labels": {"team": "a"}},
        "spec": spec,
    }


def run(spec: dict, **inputs) -> testing.Outcome:
    return testing.reconcile(DemoApplication, app(spec), **inputs)


def test_service_exposes_ports_with_target_port_defaulting_to_port():
    out = run({"image": "nginx:1.27", "ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]})
    spec = out.child(kinds.Service, "web")["spec"]
    assert spec["type"] == "ClusterIP"
    assert spec["selector"] == {"app": "web"}
    assert spec["ports"] == [
        {"name": "port-80", "protocol": "TCP", "port": 80, "targetPort": 8080},
        {"name": "port-443", "protocol": "TCP", "port": 443, "targetPort": 443},
    ]


def test_service_exposes_node_ports():
    out = run({"image": "nginx", "ports": [{"port": 80, "nodePort": 30080}, {"port": 81}]})
    spec = out.child(kinds.Service, "web")["spec"]
    assert spec["type"] == "NodePort"
    assert spec["ports"][0]["nodePort"] == 30080
    assert "nodePort" not in spec["ports"][1]


def test_deployment_runs_the_image_with_replicas_ports_and_labels():
    out = run({"image": "nginx:1.27", "replica": 3, "ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]})
    deployment = out.child(kinds.Deployment, "web")
    assert deployment.namespace == "shop"
    assert deployment.labels == {"app": "web", "team": "a"}
    spec = deployment["spec"]
    assert spec["replicas"] == 3
    assert spec["selector"] == {"matchLabels": {"app": "web"}}
    assert spec["template"]["metadata"] == {"labels": {"app": "web"}}
    (container,) = spec["template"]["spec"]["containers"]
    assert container == {
        "name": "app",
        "image": "nginx:1.27",
        "ports": [{"containerPort": 8080, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP"}],
    }


def test_replica_defaults_to_one():
    assert run({"image": "nginx"}).child(kinds.Deployment, "web")["spec"]["replicas"] == 1


def test_no_ports_means_no_service_and_no_container_ports():
    out = run({"image": "nginx", "ports": []})
    assert out.children_of(kinds.Service) == []
    (deployment,) = out.children_of(kinds.Deployment)
    assert "ports" not in deployment["spec"]["template"]["spec"]["containers"][0]


def test_status_reports_available_replicas_of_the_observed_deployment():
    observed = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"},
        "status": {"availableReplicas": 2},
    }
    assert run({"image": "nginx", "replica": 2}, children=[observed]).status == {"availableReplicas": 2}


def test_status_is_zero_before_the_deployment_exists():
    assert run({"image": "nginx"}).status == {"availableReplicas": 0}


def test_spec_without_image_is_a_permanent_error_naming_the_field():
    with pytest.raises(kubewasm.PermanentError) as error:
        run({"replica": 1})
    assert error.value.message == "DemoApplication shop/web: spec.image: missing field"
    assert not error.value.retryable


def test_a_port_of_the_wrong_type_is_a_permanent_error_naming_it():
    with pytest.raises(kubewasm.PermanentError, match=r"spec\.ports\[1\]\.port: expected an integer, found a string"):
        run({"image": "nginx", "ports": [{"port": 80}, {"port": "http"}]})


def test_manifest_declares_parent_children_and_crd():
    manifest = testing.describe(DemoApplication)
    assert manifest.name == "demo-application-python"
    assert manifest.parent.plural == "demoapplications"
    assert manifest.children == [kinds.Deployment, kinds.Service]
    assert json.loads(manifest.crds[0])["metadata"]["name"] == "demoapplications.paas.cmft.com"
