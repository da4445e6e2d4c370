// DemoApplication: one image, a replica count and some ports become a Deployment and,
// when there are ports, a Service in front of it. The same plugin as
// plugins/demo-application, in Go.
//
// The plugin only decides. The host applies both children, deletes the Service when the
// ports go away, reverts hand edits and writes the status.
package main

import (
	"fmt"

	"kubewasm.dev/sdk"
	"kubewasm.dev/sdk/kinds"
)

// DemoApplicationSpec is the spec the CRD's schema comes from: the API server validates
// and defaults it by the `kubewasm` tags.
type DemoApplicationSpec struct {
	Image   string     `json:"image" kubewasm:"minLength=1"`
	Replica int32      `json:"replica,omitempty" kubewasm:"minimum=0,default=1"`
	Ports   []DemoPort `json:"ports,omitempty"`
}

// DemoPort is one port of the spec.
type DemoPort struct {
	Port       int32  `json:"port" kubewasm:"minimum=1,maximum=65535"`
	TargetPort *int32 `json:"targetPort,omitempty" kubewasm:"minimum=1,maximum=65535"`
	NodePort   *int32 `json:"nodePort,omitempty" kubewasm:"minimum=30000,maximum=32767"`
}

// DemoApplicationStatus is what the plugin reports.
type DemoApplicationStatus struct {
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
}

// resource is the kind and its CRD.
var resource = kubewasm.CustomResource{
	Group: "paas.cmft.com", Version: "v1beta1", Kind: "DemoApplication",
	Spec: DemoApplicationSpec{}, Status: DemoApplicationStatus{},
	ShortNames: []string{"demoapp"},
	PrinterColumns: []kubewasm.PrinterColumn{
		{Name: "Image", Type: "string", JSONPath: ".spec.image"},
		{Name: "Replicas", Type: "integer", JSONPath: ".spec.replica"},
		{Name: "Available", Type: "integer", JSONPath: ".status.availableReplicas"},
	},
}

// DemoApplication is the plugin.
type DemoApplication struct{}

// Describe implements kubewasm.Reconciler.
func (DemoApplication) Describe() kubewasm.Manifest {
	return kubewasm.Manifest{
		Name:     "demo-application-go",
		Parent:   resource.KindRef(),
		Children: []kubewasm.KindRef{kinds.Deployment, kinds.Service},
		CRDs:     []string{resource.MustCRD()},
	}
}

// Reconcile implements kubewasm.Reconciler.
func (DemoApplication) Reconcile(req *kubewasm.Request) (*kubewasm.Response, error) {
	app := req.Parent
	s, err := readSpec(app)
	if err != nil {
		return nil, err
	}
	labels := map[string]any{"app": app.Name()}

	resp := kubewasm.NewResponse().Child(deployment(app, s, labels))
	// No ports, no Service: leaving it out is what makes the host delete an old one.
	if len(s.ports) > 0 {
		resp.Child(service(app, s, labels))
	}

	var available int64
	if observed := req.Child(kinds.Deployment, app.Name()); observed != nil {
		available, _ = observed.IntOr("status.availableReplicas", 0)
	}
	return resp.WithStatus(map[string]any{"availableReplicas": available}), nil
}

// spec is the parent's spec as this plugin reads it; a field that is missing or of the
// wrong type is a permanent error naming it.
type spec struct {
	image   string
	replica int64
	ports   []port
}

type port struct {
	port, target int64
	// nodePort, when set on any port, turns the Service into a NodePort Service.
	nodePort *int64
}

func readSpec(app kubewasm.Object) (spec, error) {
	var s spec
	var err error
	if s.image, err = app.String("spec.image"); err != nil {
		return s, err
	}
	// The CRD defaults it too; this covers objects stored before the default existed.
	if s.replica, err = app.IntOr("spec.replica", 1); err != nil {
		return s, err
	}
	ports, err := app.List("spec.ports")
	if err != nil {
		return s, err
	}
	for i := range ports {
		at := fmt.Sprintf("spec.ports[%d]", i)
		var p port
		if p.port, err = app.Int(at + ".port"); err != nil {
			return s, err
		}
		// Defaults to `port`, as a Service's targetPort does.
		if p.target, err = app.IntOr(at+".targetPort", p.port); err != nil {
			return s, err
		}
		if app.Has(at + ".nodePort") {
			n, err := app.Int(at + ".nodePort")
			if err != nil {
				return s, err
			}
			p.nodePort = &n
		}
		s.ports = append(s.ports, p)
	}
	return s, nil
}

// meta is child metadata: the parent's labels, then `app: <name>`, which the selectors rely on.
func meta(app kubewasm.Object, labels map[string]any) map[string]any {
	m := app.ChildMeta(app.Name())
	merged, _ := m["labels"].(map[string]any)
	if merged == nil {
		merged = map[string]any{}
	}
	for k, v := range labels {
		merged[k] = v
	}
	m["labels"] = merged
	return m
}

func deployment(app kubewasm.Object, s spec, labels map[string]any) map[string]any {
	container := map[string]any{"name": "app", "image": s.image}
	if len(s.ports) > 0 {
		var ports []any
		for _, p := range s.ports {
			ports = append(ports, map[string]any{"containerPort": p.target, "protocol": "TCP"})
		}
		container["ports"] = ports
	}
	return map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   meta(app, labels),
		"spec": map[string]any{
			"replicas": s.replica,
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec":     map[string]any{"containers": []any{container}},
			},
		},
	}
}

func service(app kubewasm.Object, s spec, labels map[string]any) map[string]any {
	serviceType := "ClusterIP"
	var ports []any
	for _, p := range s.ports {
		entry := map[string]any{"name": fmt.Sprintf("port-%d", p.port), "protocol": "TCP", "port": p.port, "targetPort": p.target}
		if p.nodePort != nil {
			entry["nodePort"] = *p.nodePort
			serviceType = "NodePort"
		}
		ports = append(ports, entry)
	}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata":   meta(app, labels),
		"spec":       map[string]any{"type": serviceType, "selector": labels, "ports": ports},
	}
}

func init() { kubewasm.Export(DemoApplication{}) }

func main() {}
