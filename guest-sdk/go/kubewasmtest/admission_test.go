package kubewasmtest_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"kubewasm.dev/sdk"
	"kubewasm.dev/sdk/kubewasmtest"
)

var widgetKind = kubewasm.KindRef{Group: "x.io", Version: "v1", Kind: "Widget", Plural: "widgets", Namespaced: true}

func widget(spec map[string]any) map[string]any {
	return map[string]any{"apiVersion": "x.io/v1", "kind": "Widget", "metadata": map[string]any{"name": "w", "namespace": "shop", "uid": "u-1"}, "spec": spec}
}

// widgets defaults, validates and converts Widgets; seen records the requests.
type widgets struct{ seen *[]*kubewasm.AdmissionRequest }

func (widgets) Describe() kubewasm.Manifest {
	return kubewasm.Manifest{
		Name:      "widgets",
		Parent:    widgetKind,
		CRDs:      []string{"kind: CustomResourceDefinition"},
		Defaults:  []kubewasm.AdmissionRule{kubewasm.Admitting(widgetKind)},
		Validates: []kubewasm.AdmissionRule{kubewasm.Admitting(widgetKind, kubewasm.Create, kubewasm.Update, kubewasm.Delete)},
		Converts:  true,
	}
}

func (w widgets) Default(req *kubewasm.AdmissionRequest) (kubewasm.Defaulted, error) {
	*w.seen = append(*w.seen, req)
	spec := req.Object["spec"].(map[string]any)
	switch spec["mode"] {
	case "patch":
		return kubewasm.Defaulted{Patch: []any{map[string]any{"op": "add", "path": "/spec/size", "value": 3}}, Warnings: []string{"size defaulted"}}, nil
	case "refuse":
		return kubewasm.Defaulted{}, kubewasm.Invalid("spec.mode", "must not be refuse")
	case "error":
		return kubewasm.Defaulted{}, errors.New("no size")
	}
	if _, ok := spec["size"]; !ok {
		spec["size"] = 1
	}
	return kubewasm.Defaulted{}, nil
}

func (w widgets) Validate(req *kubewasm.AdmissionRequest) ([]string, error) {
	*w.seen = append(*w.seen, req)
	if req.Operation == kubewasm.Delete {
		return nil, kubewasm.Deny("widgets are forever")
	}
	size, err := req.Object.Int("spec.size")
	if err != nil {
		return nil, err
	}
	if size > 10 {
		return nil, kubewasm.Invalid("spec.size", "must be at most 10").Cause("spec.mode", "FieldValueRequired", "Required value")
	}
	if size > 5 {
		return []string{"a big widget"}, nil
	}
	return nil, nil
}

func (widgets) Convert(object kubewasm.Object, desired string) (kubewasm.Object, error) {
	if object.Spec()["broken"] == true {
		return nil, kubewasm.Permanent("spec.broken cannot be converted")
	}
	out := kubewasm.Object{}
	for k, v := range object {
		out[k] = v
	}
	out["apiVersion"] = desired
	out["metadata"] = map[string]any{"name": object.Name(), "namespace": object.Namespace(), "uid": object.UID(), "generation": 99,
		"labels": map[string]any{"converted": strings.Split(desired, "/")[1]}}
	return out, nil
}

func TestAdmissionRequestReachesDefaultWithEveryField(t *testing.T) {
	var seen []*kubewasm.AdmissionRequest
	_, err := kubewasmtest.Default(widgets{&seen}, kubewasmtest.Write{
		Object: widget(map[string]any{"size": 2}), UID: "review-1", SubResource: "status", DryRun: true,
		UserInfo: kubewasm.UserInfo{Username: "alice", Groups: []string{"dev"}, Extra: map[string][]string{"scopes": {"a"}}},
		Options:  map[string]any{"fieldManager": "kubectl"}, Now: "2026-03-04T05:06:07Z", Config: map[string]any{"strict": true},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := seen[0]
	if req.Operation != kubewasm.Create || req.Kind != widgetKind || req.Name != "w" || req.Namespace != "shop" || req.UID != "review-1" || req.SubResource != "status" || !req.DryRun {
		t.Errorf("request: %+v", req)
	}
	if req.UserInfo.Username != "alice" || !reflect.DeepEqual(req.UserInfo.Extra, map[string][]string{"scopes": {"a"}}) || req.OldObject != nil {
		t.Errorf("user info %+v, old object %v", req.UserInfo, req.OldObject)
	}
	if req.Now.Format("15:04:05") != "05:06:07" || req.Options.(map[string]any)["fieldManager"] != "kubectl" {
		t.Errorf("now %v, options %v", req.Now, req.Options)
	}
}

func TestDefaultChangesInPlaceOrPatchesOrRefuses(t *testing.T) {
	var seen []*kubewasm.AdmissionRequest
	plugin := widgets{&seen}
	inPlace, err := kubewasmtest.Default(plugin, kubewasmtest.Write{Object: widget(map[string]any{})})
	if err != nil || !inPlace.Changed || inPlace.Object.Spec()["size"] == nil {
		t.Fatalf("in place: %+v, %v", inPlace, err)
	}
	unchanged, _ := kubewasmtest.Default(plugin, kubewasmtest.Write{Object: widget(map[string]any{"size": 2})})
	if unchanged.Changed {
		t.Errorf("a set size is changed: %+v", unchanged)
	}
	patched, err := kubewasmtest.Default(plugin, kubewasmtest.Write{Object: widget(map[string]any{"mode": "patch"})})
	if err != nil || patched.Object.Spec()["size"] == nil || !reflect.DeepEqual(patched.Warnings, []string{"size defaulted"}) {
		t.Errorf("patched: %+v, %v", patched, err)
	}
	_, err = kubewasmtest.Default(plugin, kubewasmtest.Write{Object: widget(map[string]any{"mode": "refuse"})})
	var denial *kubewasm.Denial
	if !errors.As(err, &denial) || err.Error() != "spec.mode: must not be refuse" || denial.Causes[0].Reason != "FieldValueInvalid" {
		t.Errorf("refused: %v", err)
	}
	if _, err = kubewasmtest.Default(plugin, kubewasmtest.Write{Object: widget(map[string]any{"mode": "error"})}); err == nil || err.Error() != "no size" {
		t.Errorf("an error refuses with its message: %v", err)
	}
	_, err = kubewasmtest.Default(plugin, kubewasmtest.Write{Object: widget(nil), Operation: kubewasm.Delete})
	want := "the host asks about the writes the manifest's defaults select: CREATE/UPDATE of x.io/v1 Widget, not DELETE of x.io/v1 Widget"
	if err == nil || err.Error() != want {
		t.Errorf("an unselected write: %v", err)
	}
}

func TestValidateAllowsWarnsOrDenies(t *testing.T) {
	var seen []*kubewasm.AdmissionRequest
	plugin := widgets{&seen}
	ok, _ := kubewasmtest.Validate(plugin, kubewasmtest.Write{Object: widget(map[string]any{"size": 1})})
	big, _ := kubewasmtest.Validate(plugin, kubewasmtest.Write{Object: widget(map[string]any{"size": 6}), OldObject: widget(map[string]any{"size": 1})})
	if !ok.Allowed() || !big.Allowed() || !reflect.DeepEqual(big.Warnings, []string{"a big widget"}) {
		t.Errorf("allowed: %+v %+v", ok, big)
	}
	denied, _ := kubewasmtest.Validate(plugin, kubewasmtest.Write{Object: widget(map[string]any{"size": 11})})
	if denied.Allowed() || denied.Denied.Error() != "spec.size: must be at most 10, spec.mode: Required value" || denied.Denied.Causes[1].Reason != "FieldValueRequired" {
		t.Errorf("denied: %+v", denied.Denied)
	}
	seen = nil
	deleted, _ := kubewasmtest.Validate(plugin, kubewasmtest.Write{Object: widget(map[string]any{}), Operation: kubewasm.Delete})
	if deleted.Denied.Error() != "widgets are forever" || seen[0].Object != nil || seen[0].OldObject.Name() != "w" {
		t.Errorf("delete: %+v, %+v", deleted.Denied, seen[0])
	}
}

func TestConvertKeepsMetadataButLabelsAndNamesTheObjectThatFails(t *testing.T) {
	var seen []*kubewasm.AdmissionRequest
	stored := widget(map[string]any{"size": 2})
	stored["metadata"].(map[string]any)["generation"] = 4
	out, err := kubewasmtest.Convert(widgets{&seen}, []any{stored}, "x.io/v2")
	if err != nil {
		t.Fatal(err)
	}
	if out[0].APIVersion() != "x.io/v2" || out[0].Labels()["converted"] != "v2" || out[0].Generation() != 4 {
		t.Errorf("converted: %v", out[0])
	}
	_, err = kubewasmtest.Convert(widgets{&seen}, []any{widget(map[string]any{"broken": true})}, "x.io/v2")
	if err == nil || err.Error() != `object #0 (Widget "w"): spec.broken cannot be converted` {
		t.Errorf("a failed conversion: %v", err)
	}
}

func TestApplyPatchFollowsRFC6902(t *testing.T) {
	doc := map[string]any{"a": map[string]any{"b": []any{1, 2}}, "x/y": 1}
	out, err := kubewasmtest.ApplyPatch(doc, []any{
		map[string]any{"op": "add", "path": "/a/b/1", "value": 9},
		map[string]any{"op": "add", "path": "/a/b/-", "value": 3},
		map[string]any{"op": "replace", "path": "/x~1y", "value": 2},
		map[string]any{"op": "copy", "from": "/a/b", "path": "/c"},
		map[string]any{"op": "move", "from": "/c", "path": "/d"},
		map[string]any{"op": "remove", "path": "/a/b/0"},
		map[string]any{"op": "test", "path": "/d/1", "value": 9},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := kubewasm.ToJSON(out)
	if got != `{"a":{"b":[9,2,3]},"d":[1,9,2,3],"x/y":2}` {
		t.Errorf("patched: %s", got)
	}
	if _, err := kubewasmtest.ApplyPatch(doc, []any{map[string]any{"op": "replace", "path": "/nope", "value": 1}}); err == nil || err.Error() != "operation #0 (replace /nope): /nope does not exist" {
		t.Errorf("a path that does not exist: %v", err)
	}
}
