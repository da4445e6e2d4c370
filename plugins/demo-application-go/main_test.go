package main

// The behaviour of plugins/demo-application (its Rust unit tests), for the Go port.

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"kubewasm.dev/sdk"
	"kubewasm.dev/sdk/kinds"
	"kubewasm.dev/sdk/kubewasmtest"
)

func app(spec map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "paas.cmft.com/v1beta1",
		"kind":       "DemoApplication",
		"metadata":   map[string]any{"name": "web", "namespace": "shop", "uid": "u-1", "labels": map[string]any{"team": "a"}},
		"spec":       spec,
	}
}

func run(t *testing.T, spec map[string]any, children ...any) *kubewasmtest.Outcome {
	t.Helper()
	out, err := kubewasmtest.Reconcile(DemoApplication{}, kubewasmtest.Input{Parent: app(spec), Children: children})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// same compares v with want after both went through JSON, as the host sees them.
func same(t *testing.T, what string, v, want any) {
	t.Helper()
	got, _ := kubewasm.ToJSON(v)
	expected, _ := kubewasm.ToJSON(want)
	if got != expected {
		t.Fatalf("%s:\n got %s\nwant %s", what, got, expected)
	}
}

func ports(p ...map[string]any) []any {
	out := make([]any, len(p))
	for i := range p {
		out[i] = p[i]
	}
	return out
}

func TestServiceExposesPortsWithTargetPortDefaultingToPort(t *testing.T) {
	out := run(t, map[string]any{"image": "nginx:1.27", "ports": ports(map[string]any{"port": 80, "targetPort": 8080}, map[string]any{"port": 443})})
	spec := out.Child(kinds.Service, "web").Spec()
	same(t, "type", spec["type"], "ClusterIP")
	same(t, "selector", spec["selector"], map[string]any{"app": "web"})
	same(t, "ports", spec["ports"], []any{
		map[string]any{"name": "port-80", "protocol": "TCP", "port": 80, "targetPort": 8080},
		map[string]any{"name": "port-443", "protocol": "TCP", "port": 443, "targetPort": 443},
	})
}

func TestServiceExposesNodePorts(t *testing.T) {
	out := run(t, map[string]any{"image": "nginx", "ports": ports(map[string]any{"port": 80, "nodePort": 30080}, map[string]any{"port": 81})})
	spec := out.Child(kinds.Service, "web").Spec()
	same(t, "type", spec["type"], "NodePort")
	p := spec["ports"].([]any)
	same(t, "first nodePort", p[0].(map[string]any)["nodePort"], 30080)
	if _, ok := p[1].(map[string]any)["nodePort"]; ok {
		t.Fatal("the second port has a nodePort")
	}
}

func TestDeploymentRunsTheImageWithReplicasPortsAndLabels(t *testing.T) {
	out := run(t, map[string]any{"image": "nginx:1.27", "replica": 3, "ports": ports(map[string]any{"port": 80, "targetPort": 8080}, map[string]any{"port": 443})})
	d := out.Child(kinds.Deployment, "web")
	if d.Namespace() != "shop" || !reflect.DeepEqual(d.Labels(), map[string]string{"app": "web", "team": "a"}) {
		t.Fatalf("metadata %v", d.Metadata())
	}
	spec := d.Spec()
	same(t, "replicas", spec["replicas"], 3)
	same(t, "selector", spec["selector"], map[string]any{"matchLabels": map[string]any{"app": "web"}})
	same(t, "template", spec["template"], map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
		"spec": map[string]any{"containers": []any{map[string]any{
			"name": "app", "image": "nginx:1.27",
			"ports": []any{map[string]any{"containerPort": 8080, "protocol": "TCP"}, map[string]any{"containerPort": 443, "protocol": "TCP"}},
		}}},
	})
}

func TestReplicaDefaultsToOne(t *testing.T) {
	same(t, "replicas", run(t, map[string]any{"image": "nginx"}).Child(kinds.Deployment, "web").Spec()["replicas"], 1)
}

func TestNoPortsMeansNoServiceAndNoContainerPorts(t *testing.T) {
	out := run(t, map[string]any{"image": "nginx", "ports": []any{}})
	if len(out.ChildrenOf(kinds.Service)) != 0 || len(out.ChildrenOf(kinds.Deployment)) != 1 {
		t.Fatalf("children %v", out.Children)
	}
	text, _ := kubewasm.ToJSON(out.Child(kinds.Deployment, "web"))
	if strings.Contains(text, "ports") {
		t.Fatalf("container ports in %s", text)
	}
}

func TestStatusReportsAvailableReplicasOfTheObservedDeployment(t *testing.T) {
	observed := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop"}, "status": map[string]any{"availableReplicas": 2}}
	same(t, "status", run(t, map[string]any{"image": "nginx", "replica": 2}, observed).Status, map[string]any{"availableReplicas": 2})
}

func TestStatusIsZeroBeforeTheDeploymentExists(t *testing.T) {
	same(t, "status", run(t, map[string]any{"image": "nginx"}).Status, map[string]any{"availableReplicas": 0})
}

func TestSpecWithoutImageIsAPermanentErrorNamingTheField(t *testing.T) {
	_, err := kubewasmtest.Reconcile(DemoApplication{}, kubewasmtest.Input{Parent: app(map[string]any{"replica": 1})})
	var e *kubewasm.Error
	if !errors.As(err, &e) || e.Retryable || e.Message != "DemoApplication shop/web: spec.image: missing field" {
		t.Fatalf("%#v", err)
	}
}

func TestAPortOfTheWrongTypeIsAPermanentErrorNamingIt(t *testing.T) {
	_, err := kubewasmtest.Reconcile(DemoApplication{}, kubewasmtest.Input{Parent: app(map[string]any{"image": "nginx",
		"ports": ports(map[string]any{"port": 80}, map[string]any{"port": "http"})})})
	if err == nil || !strings.Contains(err.Error(), "spec.ports[1].port: expected an integer, found a string") {
		t.Fatalf("%v", err)
	}
}

func TestManifestDeclaresParentChildrenAndCRD(t *testing.T) {
	m, err := kubewasmtest.Describe(DemoApplication{})
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Metadata struct{ Name string }
	}
	if err := json.Unmarshal([]byte(m.CRDs[0]), &crd); err != nil {
		t.Fatal(err)
	}
	if m.Name != "demo-application-go" || m.Parent.Plural != "demoapplications" ||
		!reflect.DeepEqual(m.Children, []kubewasm.KindRef{kinds.Deployment, kinds.Service}) ||
		crd.Metadata.Name != "demoapplications.paas.cmft.com" {
		t.Fatalf("%+v", m)
	}
}
