package kubewasm_test

// The conditions helper against the table every SDK's helper is held to
// (guest-sdk/tests/conditions_cases.json: apimachinery's SetStatusCondition and its
// siblings), and a plugin that keeps lastTransitionTime across reconciles with it.

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"kubewasm.dev/sdk"
	"kubewasm.dev/sdk/kubewasmtest"
)

func conditionCases(t *testing.T) map[string]any {
	return readJSON(t, "../tests/conditions_cases.json").(map[string]any)
}

// conditionList is a case's list as ConditionsFromStatus reads it from a status.
func conditionList(t *testing.T, v any) []kubewasm.Condition {
	conditions, err := kubewasm.ConditionsFromStatus(map[string]any{"conditions": v})
	if err != nil {
		t.Fatal(err)
	}
	return conditions
}

// newCondition is the case's condition as a plugin would write it.
func newCondition(t *testing.T, v any) kubewasm.Condition {
	return decodeCase[kubewasm.Condition](t, v)
}

func caseNow(t *testing.T, table map[string]any) time.Time {
	now, err := time.Parse(time.RFC3339, table["now"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return now
}

func TestSetStatusConditionDoesWhatApimachineryDoes(t *testing.T) {
	table := conditionCases(t)
	for _, v := range asList(table["set"]) {
		c := asMap(v)
		conditions := conditionList(t, c["before"])
		changed, err := kubewasm.SetStatusCondition(&conditions, newCondition(t, c["condition"]), caseNow(t, table))
		if err != nil {
			t.Fatalf("%s: %v", c["name"], err)
		}
		if got := normalized(t, conditions); !reflect.DeepEqual(got, c["after"]) {
			t.Errorf("%s: got %v, want %v", c["name"], got, c["after"])
		}
		if changed != c["changed"].(bool) {
			t.Errorf("%s: changed %v", c["name"], changed)
		}
	}
}

func TestRemoveStatusConditionDropsTheTypeAndKeepsTheOrder(t *testing.T) {
	for _, v := range asList(conditionCases(t)["remove"]) {
		c := asMap(v)
		conditions := conditionList(t, c["before"])
		if removed := kubewasm.RemoveStatusCondition(&conditions, c["type"].(string)); removed != c["removed"].(bool) {
			t.Errorf("%s: removed %v", c["name"], removed)
		}
		if got := normalized(t, conditions); !reflect.DeepEqual(got, c["after"]) {
			t.Errorf("%s: got %v, want %v", c["name"], got, c["after"])
		}
	}
}

func TestFindAndIsStatusConditionTrueOrFalseReadTheList(t *testing.T) {
	for _, v := range asList(conditionCases(t)["query"]) {
		c := asMap(v)
		conditions, type_ := conditionList(t, c["conditions"]), c["type"].(string)
		if found := kubewasm.FindStatusCondition(conditions, type_) != nil; found != c["found"].(bool) {
			t.Errorf("%s: found %v", c["name"], found)
		}
		if got := kubewasm.IsStatusConditionTrue(conditions, type_); got != c["isTrue"].(bool) {
			t.Errorf("%s: true %v", c["name"], got)
		}
		if got := kubewasm.IsStatusConditionFalse(conditions, type_); got != c["isFalse"].(bool) {
			t.Errorf("%s: false %v", c["name"], got)
		}
	}
}

func TestWhatTheAPIServerWouldRefuseIsAnErrorNamingItAndChangesNothing(t *testing.T) {
	table := conditionCases(t)
	for _, v := range asList(table["invalid"]) {
		c := asMap(v)
		var conditions []kubewasm.Condition
		_, err := kubewasm.SetStatusCondition(&conditions, newCondition(t, c["condition"]), caseNow(t, table))
		var e *kubewasm.Error
		if !errors.As(err, &e) || e.Retryable {
			t.Fatalf("%s: %v is not a permanent error", c["name"], err)
		}
		for _, part := range asList(c["error"]) {
			if !strings.Contains(e.Message, part.(string)) {
				t.Errorf("%s: %q lacks %q", c["name"], e.Message, part)
			}
		}
		if len(conditions) != 0 {
			t.Errorf("%s: %v", c["name"], conditions)
		}
	}
	for _, v := range asList(table["valid"]) {
		c := asMap(v)
		var conditions []kubewasm.Condition
		if changed, err := kubewasm.SetStatusCondition(&conditions, newCondition(t, c["condition"]), caseNow(t, table)); err != nil || !changed {
			t.Errorf("%s: %v %v", c["name"], changed, err)
		}
	}
}

func TestAZeroNowIsSaidNotWritten(t *testing.T) {
	var conditions []kubewasm.Condition
	_, err := kubewasm.SetStatusCondition(&conditions, kubewasm.Condition{Type: "Ready", Status: kubewasm.ConditionTrue, Reason: "Available"}, time.Time{})
	if err == nil || !strings.Contains(err.Error(), "now is the zero time") || len(conditions) != 0 {
		t.Errorf("%v %v", err, conditions)
	}
}

func TestConditionsFromStatusNamesWhatIsNotACondition(t *testing.T) {
	for status, want := range map[string]string{
		`{"conditions": [{"type": "Ready", "status": "True"}]}`:                              "status.conditions[0] is not a condition: missing field `lastTransitionTime`",
		`{"conditions": [{"type": "Ready", "lastTransitionTime": "yesterday"}]}`:             "status.conditions[0] is not a condition",
		`{"conditions": {"Ready": true}}`:                                                    "status.conditions is not a list",
		`{"conditions": [{"type": "A", "lastTransitionTime": "2026-01-01T00:00:00Z"}, "B"]}`: "status.conditions[1] is not a condition",
	} {
		parsed, _ := kubewasm.ParseJSON(status)
		_, err := kubewasm.ConditionsFromStatus(parsed.(map[string]any))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", status, err, want)
		}
	}
	if conditions, err := kubewasm.ConditionsFromStatus(nil); err != nil || len(conditions) != 0 {
		t.Errorf("no status: %v %v", conditions, err)
	}
}

// gauge is Ready when the spec says so: a status written from the observed one.
type gauge struct{}

func (gauge) Describe() kubewasm.Manifest {
	return kubewasm.Manifest{Name: "gauge", Parent: kubewasm.Namespaced("example.com", "v1", "Gauge", "gauges")}
}

func (gauge) Reconcile(req *kubewasm.Request) (*kubewasm.Response, error) {
	parent := req.Parent
	ready, err := parent.Bool("spec.ready")
	if err != nil {
		return nil, err
	}
	conditions, err := kubewasm.ConditionsFromStatus(parent.Status())
	if err != nil {
		return nil, err
	}
	reason := "Waiting"
	if ready {
		reason = "Available"
	}
	_, err = kubewasm.SetStatusCondition(&conditions, kubewasm.Condition{Type: "Ready", Status: kubewasm.ConditionStatusOf(ready),
		Reason: reason, ObservedGeneration: parent.Generation()}, req.Now)
	if err != nil {
		return nil, err
	}
	return kubewasm.NewResponse().WithStatus(map[string]any{"conditions": conditions}), nil
}

func TestAPluginKeepsTheTransitionTimeUntilTheStatusChanges(t *testing.T) {
	at := func(now string, ready bool, generation int, status map[string]any) map[string]any {
		parent := map[string]any{"apiVersion": "example.com/v1", "kind": "Gauge", "spec": map[string]any{"ready": ready},
			"metadata": map[string]any{"name": "g", "namespace": "default", "uid": "u1", "generation": generation}}
		if status != nil {
			parent["status"] = status
		}
		out, err := kubewasmtest.Reconcile(gauge{}, kubewasmtest.Input{Parent: parent, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return out.Status
	}
	condition := func(status map[string]any) map[string]any { return asMap(asList(status["conditions"])[0]) }

	first := at("2026-01-01T00:00:00Z", false, 1, nil)
	if got := condition(first)["lastTransitionTime"]; got != "2026-01-01T00:00:00Z" {
		t.Errorf("first: %v", got)
	}
	again := at("2026-01-02T00:00:00Z", false, 2, first)
	if got := condition(again); got["lastTransitionTime"] != "2026-01-01T00:00:00Z" || got["observedGeneration"] != json.Number("2") {
		t.Errorf("again: %v", got)
	}
	ready := at("2026-01-03T00:00:00Z", true, 3, again)
	want := map[string]any{"type": "Ready", "status": "True", "reason": "Available", "message": "",
		"observedGeneration": json.Number("3"), "lastTransitionTime": "2026-01-03T00:00:00Z"}
	if got := condition(ready); !reflect.DeepEqual(got, want) {
		t.Errorf("ready: %v", got)
	}
}
