package fields

import "testing"

func TestOnlyFieldsOfTheSameNameAndTypeAreCopied(t *testing.T) {
	type wire struct {
		Parent     string
		Finalizing bool
		Host       string
		Extra      int
	}
	type request struct {
		Parent     map[string]any
		Finalizing bool
		Host       string
		kept       string
	}
	dst := request{kept: "kept"}
	Copy(&dst, wire{Parent: "{}", Finalizing: true, Host: "kubewasm/9", Extra: 1})
	if dst.Parent != nil || !dst.Finalizing || dst.Host != "kubewasm/9" || dst.kept != "kept" {
		t.Fatalf("%#v", dst)
	}
}
