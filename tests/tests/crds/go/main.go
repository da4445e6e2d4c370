// DemoApplication's CRD (plugins/demo-application/crd.yaml) from Go struct tags: prints
// it for the end-to-end test.
package main

import (
	"fmt"

	kubewasm "kubewasm.dev/sdk"
)

type Port struct {
	Port       int32  `json:"port" kubewasm:"minimum=1,maximum=65535"`
	TargetPort *int32 `json:"targetPort,omitempty" kubewasm:"minimum=1,maximum=65535"`
	NodePort   *int32 `json:"nodePort,omitempty" kubewasm:"minimum=30000,maximum=32767"`
}

type DemoApplicationSpec struct {
	Image   string `json:"image" kubewasm:"minLength=1"`
	Replica int32  `json:"replica,omitempty" kubewasm:"minimum=0,default=1"`
	Ports   []Port `json:"ports,omitempty"`
}

type DemoApplicationStatus struct {
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`
}

func main() {
	fmt.Println(kubewasm.CustomResource{
		Group: "paas.cmft.com", Version: "v1beta1", Kind: "DemoApplication",
		Spec: DemoApplicationSpec{}, Status: DemoApplicationStatus{},
		ShortNames: []string{"demoapp"},
		PrinterColumns: []kubewasm.PrinterColumn{
			{Name: "Image", Type: "string", JSONPath: ".spec.image"},
			{Name: "Replicas", Type: "integer", JSONPath: ".spec.replica"},
			{Name: "Available", Type: "integer", JSONPath: ".status.availableReplicas"},
		},
	}.MustCRD())
}
