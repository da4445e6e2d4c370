package kubewasm_test

// The host's checks, ported to Go, against the table of cases the Rust contract crate
// is tested with (wit/contract/tests/validate_cases.json).

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"kubewasm.dev/sdk"
)

// expand replaces each {"$repeat": [[text, n], ...]} with the string it stands for.
func expand(v any) any {
	switch t := v.(type) {
	case map[string]any:
		if parts, ok := t["$repeat"].([]any); ok && len(t) == 1 {
			var b strings.Builder
			for _, p := range parts {
				pair := p.([]any)
				n, _ := pair[1].(json.Number).Int64()
				b.WriteString(strings.Repeat(pair[0].(string), int(n)))
			}
			return b.String()
		}
		for k, v := range t {
			t[k] = expand(v)
		}
	case []any:
		for i, v := range t {
			t[i] = expand(v)
		}
	}
	return v
}

func table(t *testing.T) map[string]any {
	return expand(readJSON(t, "../../wit/contract/tests/validate_cases.json")).(map[string]any)
}

// readJSON is the JSON file at path, parsed as the SDK parses.
func readJSON(t *testing.T, path string) any {
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := kubewasm.ParseJSON(string(text))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// manifest decodes a case's manifest: its names are those of kubewasm.Manifest's fields
// (encoding/json matches them whatever their case).
func manifest(t *testing.T, v any) kubewasm.Manifest {
	return decodeCase[kubewasm.Manifest](t, v)
}

// decodeCase is a case's value v decoded into a T, as json.Unmarshal decodes.
func decodeCase[T any](t *testing.T, v any) T {
	var out T
	text, err := kubewasm.ToJSON(v)
	if err == nil {
		err = json.Unmarshal([]byte(text), &out)
	}
	if err != nil {
		t.Fatalf("%T %v: %v", out, v, err)
	}
	return out
}

func strs(v any) map[string]string {
	out := map[string]string{}
	for k, v := range asMap(v) {
		out[k] = v.(string)
	}
	return out
}

func response(v any) *kubewasm.Response {
	m := asMap(v)
	r := &kubewasm.Response{Children: asList(m["children"]), Status: m["status"],
		Labels: strs(m["labels"]), Annotations: strs(m["annotations"])}
	if n, ok := m["requeueAfterMs"].(json.Number); ok {
		ms, _ := n.Int64()
		r.RequeueAfter = time.Duration(ms) * time.Millisecond
	}
	for _, e := range asList(m["events"]) {
		e := asMap(e)
		r.Events = append(r.Events, kubewasm.Event{Type: kubewasm.EventType(e["type"].(string)),
			Reason: e["reason"].(string), Message: e["message"].(string)})
	}
	r.Finalized, _ = m["finalized"].(bool)
	for _, uid := range asList(m["delete"]) {
		r.Delete = append(r.Delete, uid.(string))
	}
	return r
}

// wire is the wire form of a response, as the cases write it: only what is set.
func wire(r *kubewasm.Response) map[string]any {
	out := map[string]any{}
	if len(r.Children) > 0 {
		out["children"] = r.Children
	}
	if r.Status != nil {
		out["status"] = r.Status
	}
	if len(r.Labels) > 0 {
		out["labels"] = r.Labels
	}
	if len(r.Annotations) > 0 {
		out["annotations"] = r.Annotations
	}
	var events []any
	for _, e := range r.Events {
		events = append(events, map[string]any{"type": string(e.Type), "reason": e.Reason, "message": e.Message})
	}
	if events != nil {
		out["events"] = events
	}
	if r.RequeueAfter > 0 {
		out["requeueAfterMs"] = r.RequeueAfter.Milliseconds()
	}
	if r.Finalized {
		out["finalized"] = true
	}
	if len(r.Delete) > 0 {
		out["delete"] = r.Delete
	}
	return out
}

// normalized is v through JSON, so that values built in Go compare with parsed ones.
func normalized(t *testing.T, v any) any {
	text, err := kubewasm.ToJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := kubewasm.ParseJSON(text)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTheTableHasCases(t *testing.T) {
	tab := table(t)
	if len(asList(tab["manifests"])) <= 5 || len(asList(tab["responses"])) <= 20 {
		t.Fatal("the table of cases is nearly empty")
	}
}

func TestManifestsAreCheckedAsTheCasesSay(t *testing.T) {
	for _, c := range asList(table(t)["manifests"]) {
		c := asMap(c)
		t.Run(c["name"].(string), func(t *testing.T) {
			err := manifest(t, c["manifest"]).Check()
			want, _ := c["error"].(string)
			got := ""
			if err != nil {
				var manifestErr *kubewasm.ManifestError
				if !errors.As(err, &manifestErr) {
					t.Fatalf("not a ManifestError: %v", err)
				}
				got = err.Error()
			}
			if got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}

func TestResponsesAreValidatedAsTheCasesSay(t *testing.T) {
	tab := table(t)
	defaults := asMap(tab["defaults"])
	for _, c := range asList(tab["responses"]) {
		c := asMap(c)
		t.Run(c["name"].(string), func(t *testing.T) {
			m := defaults["manifest"]
			if given, ok := c["manifest"]; ok {
				m = given
			}
			parent := defaults["parent"]
			if given, ok := c["parent"]; ok {
				parent = given
			}
			man := manifest(t, m)
			accepted, err := kubewasm.Validate(man, parent, response(c["response"]), asList(c["observed"])...)
			if want, ok := c["accepted"]; ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got := normalized(t, wire(accepted)); !reflect.DeepEqual(got, normalized(t, want)) {
					t.Fatalf("accepted as\n%v\nwant\n%v", got, want)
				}
				return
			}
			var refusal *kubewasm.Refusal
			if !errors.As(err, &refusal) {
				t.Fatalf("not refused: %v", err)
			}
			var want []string
			for _, p := range asList(c["problems"]) {
				want = append(want, p.(string))
			}
			if !reflect.DeepEqual(refusal.Problems, want) {
				t.Fatalf("problems\n%q\nwant\n%q", refusal.Problems, want)
			}
			if refusal.Plugin != man.Name {
				t.Fatalf("plugin %q, want %q", refusal.Plugin, man.Name)
			}
		})
	}
}
