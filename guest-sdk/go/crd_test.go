package kubewasm_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	kubewasm "kubewasm.dev/sdk"
)

// Port is a list item with bounds and an enum defaulted.
type Port struct {
	Port     int32  `json:"port" kubewasm:"minimum=1,maximum=65535"`
	Protocol string `json:"protocol,omitempty" kubewasm:"enum=TCP|UDP,default=TCP"`
	NodePort *int32 `json:"nodePort,omitempty" kubewasm:"minimum=30000,maximum=32767"`
}

type Meta struct {
	Labels map[string]string `json:"labels,omitempty"`
}

type DatabaseSpec struct {
	Meta     `json:",inline"`
	Owner    string          `json:"owner" kubewasm:"minLength=1,maxLength=63,pattern=^[a-z]{1,3}[a-z0-9-]*$" description:"Who runs it."`
	Engine   string          `json:"engine" kubewasm:"enum=postgres|mysql"`
	Replicas int64           `json:"replicas,omitempty" kubewasm:"minimum=1,maximum=9,default=1"`
	Ratio    float64         `json:"ratio" kubewasm:"exclusiveMinimum=0,exclusiveMaximum=1,optional"`
	Ports    []Port          `json:"ports,omitempty" kubewasm:"maxItems=4"`
	Raw      json.RawMessage `json:"raw,omitempty"`
	Since    time.Time       `json:"since,omitzero"`
	Secret   []byte          `json:"secret,omitempty"`
	internal string
	Skipped  string `json:"-"`
}

type DatabaseStatus struct {
	Ready         bool  `json:"ready,omitempty"`
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
}

var database = kubewasm.CustomResource{
	Group: "example.com", Version: "v1", Kind: "Database",
	Spec: DatabaseSpec{}, Status: DatabaseStatus{},
	ShortNames: []string{"db"}, Categories: []string{"all"},
	PrinterColumns: []kubewasm.PrinterColumn{{Name: "Engine", Type: "string", JSONPath: ".spec.engine"}},
}

func parse(t *testing.T, text string, err error) map[string]any {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func at(doc any, path ...string) any {
	for _, p := range path {
		switch v := doc.(type) {
		case map[string]any:
			doc = v[p]
		case []any:
			doc = v[0]
		}
	}
	return doc
}

func same(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func TestCRDKindIsTheResources(t *testing.T) {
	same(t, "kind", database.KindRef(), kubewasm.Namespaced("example.com", "v1", "Database", "databases"))
	zone := kubewasm.CustomResource{Group: "example.com", Version: "v1", Kind: "Zone", Plural: "zonez", ClusterScoped: true, Spec: struct{}{}}
	same(t, "zone", zone.KindRef(), kubewasm.ClusterScoped("example.com", "v1", "Zone", "zonez"))
	text, err := zone.CRD()
	same(t, "scope", at(parse(t, text, err), "spec", "scope"), "Cluster")
}

func TestCRDNamesColumnsAndStatusSubresource(t *testing.T) {
	text, err := database.CRD()
	doc := parse(t, text, err)
	same(t, "apiVersion", doc["apiVersion"], "apiextensions.k8s.io/v1")
	same(t, "kind", doc["kind"], "CustomResourceDefinition")
	same(t, "name", at(doc, "metadata", "name"), "databases.example.com")
	same(t, "scope", at(doc, "spec", "scope"), "Namespaced")
	same(t, "names", at(doc, "spec", "names"), map[string]any{
		"kind": "Database", "listKind": "DatabaseList", "plural": "databases", "singular": "database",
		"shortNames": []string{"db"}, "categories": []string{"all"},
	})
	version := at(doc, "spec", "versions", "0").(map[string]any)
	same(t, "version", []any{version["name"], version["served"], version["storage"]}, []any{"v1", true, true})
	same(t, "subresources", version["subresources"], map[string]any{"status": map[string]any{}})
	same(t, "columns", version["additionalPrinterColumns"], []any{map[string]any{"name": "Engine", "type": "string", "jsonPath": ".spec.engine"}})
}

func TestCRDTagsBecomeTheSchemaTheAPIServerValidates(t *testing.T) {
	text, err := database.CRD()
	root := at(parse(t, text, err), "spec", "versions", "0", "schema", "openAPIV3Schema")
	spec := at(root, "properties", "spec")
	same(t, "required", at(spec, "required"), []string{"owner", "engine"})
	fields := at(spec, "properties").(map[string]any)
	same(t, "labels (embedded)", fields["labels"], map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}})
	same(t, "owner", fields["owner"], map[string]any{"type": "string", "minLength": 1, "maxLength": 63, "pattern": "^[a-z]{1,3}[a-z0-9-]*$", "description": "Who runs it."})
	same(t, "engine", fields["engine"], map[string]any{"type": "string", "enum": []string{"postgres", "mysql"}})
	same(t, "replicas", fields["replicas"], map[string]any{"type": "integer", "format": "int64", "minimum": 1, "maximum": 9, "default": 1})
	same(t, "ratio", fields["ratio"], map[string]any{"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1, "exclusiveMaximum": true})
	same(t, "ports", fields["ports"], map[string]any{"type": "array", "maxItems": 4, "items": map[string]any{
		"type": "object", "required": []string{"port"}, "properties": map[string]any{
			"port":     map[string]any{"type": "integer", "format": "int32", "minimum": 1, "maximum": 65535},
			"protocol": map[string]any{"type": "string", "enum": []string{"TCP", "UDP"}, "default": "TCP"},
			"nodePort": map[string]any{"type": "integer", "format": "int32", "minimum": 30000, "maximum": 32767},
		},
	}})
	same(t, "raw", fields["raw"], map[string]any{"x-kubernetes-preserve-unknown-fields": true})
	same(t, "since", fields["since"], map[string]any{"type": "string", "format": "date-time"})
	same(t, "secret", fields["secret"], map[string]any{"type": "string", "format": "byte"})
	for _, absent := range []string{"internal", "Skipped", "Meta"} {
		if _, ok := fields[absent]; ok {
			t.Errorf("%s is not a field of the object", absent)
		}
	}
	same(t, "status", at(root, "properties", "status"), map[string]any{"type": "object", "properties": map[string]any{
		"ready": map[string]any{"type": "boolean"}, "readyReplicas": map[string]any{"type": "integer", "format": "int32"},
	}})
}

func TestCRDSeveralVersionsOneStorageVersion(t *testing.T) {
	v2 := kubewasm.CustomResource{Group: "example.com", Version: "v2", Kind: "Database", ShortNames: []string{"db"}, Spec: struct {
		Instances int32 `json:"instances"`
	}{}}
	text, err := kubewasm.CRD("v2", database, v2)
	doc := parse(t, text, err)
	var got [][]any
	for _, v := range at(doc, "spec", "versions").([]any) {
		got = append(got, []any{v.(map[string]any)["name"], v.(map[string]any)["storage"]})
	}
	same(t, "versions", got, [][]any{{"v1", false}, {"v2", true}})
	same(t, "short names", at(doc, "spec", "names", "shortNames"), []string{"db"})
}

func TestCRDWhatDoesNotFitIsRefusedNamingIt(t *testing.T) {
	cases := []struct {
		name string
		crd  func() (string, error)
		want string
	}{
		{"storage", func() (string, error) { return kubewasm.CRD("v3", database) }, `crd: the storage version "v3" is not among v1`},
		{"kinds", func() (string, error) {
			return kubewasm.CRD("v1", database, kubewasm.CustomResource{Group: "example.com", Version: "v2", Kind: "Table", Spec: struct{}{}})
		}, "crd: version v2 is not of Database.example.com"},
		{"marker", func() (string, error) {
			return kubewasm.CustomResource{Group: "g", Version: "v1", Kind: "Bad", Spec: struct {
				N int `json:"n" kubewasm:"minimum=one"`
			}{}}.CRD()
		}, `Bad.spec.n: marker "minimum=one": not a number`},
		{"unknown marker", func() (string, error) {
			return kubewasm.CustomResource{Group: "g", Version: "v1", Kind: "Bad", Spec: struct {
				N int `json:"n" kubewasm:"minimun=1"`
			}{}}.CRD()
		}, `Bad.spec.n: marker "minimun=1": unknown marker`},
		{"keys", func() (string, error) {
			return kubewasm.CustomResource{Group: "g", Version: "v1", Kind: "Bad", Spec: struct {
				M map[int]string `json:"byNumber"`
			}{}}.CRD()
		}, "Bad.spec.byNumber: an object's keys are strings, not int"},
		{"chan", func() (string, error) {
			return kubewasm.CustomResource{Group: "g", Version: "v1", Kind: "Bad", Spec: struct {
				C chan int `json:"c"`
			}{}}.CRD()
		}, "Bad.spec.c: no schema for the type chan int"},
	}
	for _, c := range cases {
		_, err := c.crd()
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: got %v, want %s", c.name, err, c.want)
		}
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(error).Error(), "Bad.spec.c") {
			t.Errorf("MustCRD panics with the error, got %v", r)
		}
	}()
	kubewasm.CustomResource{Group: "g", Version: "v1", Kind: "Bad", Spec: struct {
		C chan int `json:"c"`
	}{}}.MustCRD()
}
