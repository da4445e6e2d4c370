package kubewasmtest_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"kubewasm.dev/sdk"
	"kubewasm.dev/sdk/kinds"
	"kubewasm.dev/sdk/kubewasmtest"
	"kubewasm.dev/sdk/log"
)

// echo copies spec.say into a ConfigMap and exercises every part of an answer.
type echo struct {
	answer func(req *kubewasm.Request) (*kubewasm.Response, error)
}

func (echo) Describe() kubewasm.Manifest {
	return kubewasm.Manifest{
		Name:     "echo",
		Parent:   kubewasm.Namespaced("example.com", "v1", "Echo", "echoes"),
		Children: []kubewasm.KindRef{kinds.ConfigMap},
		Related:  []kubewasm.KindRef{kinds.Secret},
		CRDs:     []string{"kind: CustomResourceDefinition"},
		Limits:   kubewasm.Limits{DeadlineMs: kubewasm.Uint32(500)},
	}
}

func (e echo) Reconcile(req *kubewasm.Request) (*kubewasm.Response, error) { return e.answer(req) }

func (echo) Related(parent kubewasm.Object) []kubewasm.Query {
	return []kubewasm.Query{
		{Kind: kinds.Secret, Namespace: parent.Namespace(), Selector: kubewasm.Labels(map[string]string{"app": parent.Name()})},
		{Kind: kinds.Secret, Selector: kubewasm.Names("shared")},
	}
}

func parent() map[string]any {
	return map[string]any{
		"apiVersion": "example.com/v1", "kind": "Echo",
		"metadata": map[string]any{"name": "hello", "namespace": "team", "uid": "u-1", "labels": map[string]any{"tier": "web"}},
		"spec":     map[string]any{"say": "hi <there> & é", "count": 3},
	}
}

func TestAnAnswerCrossesTheCanonicalABIWhole(t *testing.T) {
	plugin := echo{func(req *kubewasm.Request) (*kubewasm.Response, error) {
		say, err := req.Parent.String("spec.say")
		if err != nil {
			return nil, err
		}
		count, _ := req.Parent.Int("spec.count")
		var config struct{ Prefix string }
		if err := req.DecodeConfig(&config); err != nil {
			return nil, err
		}
		log.Info("echoing", "count", count)
		cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": req.Parent.ChildMeta(req.Parent.Name()),
			"data": map[string]any{"said": config.Prefix + say, "now": req.Now.Format(time.RFC3339), "secrets": fmt.Sprint(len(req.Related))}}
		return kubewasm.NewResponse().Child(cm).
			WithStatus(map[string]any{"count": count}).
			Label("tier", "web").Annotation("example.com/said", say).
			Event(kubewasm.WarningEvent("Echoed", "said "+say)).
			Keep(req.Children[0]), nil
	}}
	observed := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "status": map[string]any{"x": 1},
		"metadata": map[string]any{"name": "kept", "uid": "c-1", "resourceVersion": "7", "annotations": map[string]any{kubewasm.AppliedHash: "h"}}}
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s", "namespace": "team"}}
	out, err := kubewasmtest.Reconcile(plugin, kubewasmtest.Input{Parent: parent(), Children: []any{observed},
		Related: []any{secret}, Config: map[string]any{"prefix": "> "}, Now: "2026-03-04T05:06:07Z"})
	if err != nil {
		t.Fatal(err)
	}
	cm := out.Child(kinds.ConfigMap, "hello")
	if cm == nil {
		t.Fatalf("no ConfigMap hello in %v", out.Children)
	}
	data := cm["data"].(map[string]any)
	if data["said"] != "> hi <there> & é" || data["now"] != "2026-03-04T05:06:07Z" || data["secrets"] != "1" {
		t.Fatalf("data %v", data)
	}
	if cm.Namespace() != "team" || !reflect.DeepEqual(cm.Labels(), map[string]string{"tier": "web"}) {
		t.Fatalf("metadata %v", cm.Metadata())
	}
	kept := out.Child(kinds.ConfigMap, "kept")
	if !reflect.DeepEqual(map[string]any(kept), map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "kept", "uid": "c-1", "namespace": "team"}}) {
		t.Fatalf("kept child %v", kept)
	}
	if fmt.Sprint(out.Status["count"]) != "3" || out.Labels["tier"] != "web" || out.Annotations["example.com/said"] != "hi <there> & é" {
		t.Fatalf("status %v labels %v annotations %v", out.Status, out.Labels, out.Annotations)
	}
	if len(out.Warnings()) != 1 || out.Warnings()[0].Reason != "Echoed" {
		t.Fatalf("events %v", out.Events)
	}
	if len(out.Logs) != 1 || out.Logs[0].Level != "info" || !reflect.DeepEqual(out.Logs[0].Fields, [][2]string{{"count", "3"}}) {
		t.Fatalf("logs %v", out.Logs)
	}
}

func TestRequeueAndFinalizedCrossTheABI(t *testing.T) {
	plugin := echo{func(req *kubewasm.Request) (*kubewasm.Response, error) {
		return &kubewasm.Response{RequeueAfter: 90 * time.Second, Finalized: req.Finalizing}, nil
	}}
	out, err := kubewasmtest.Reconcile(plugin, kubewasmtest.Input{Parent: parent(), Finalizing: true})
	if err != nil {
		t.Fatal(err)
	}
	if out.RequeueAfter != 90*time.Second || !out.Finalized || out.Status != nil {
		t.Fatalf("%+v", out)
	}
}

func TestAFieldOfTheWrongTypeIsAPermanentErrorNamingIt(t *testing.T) {
	plugin := echo{func(req *kubewasm.Request) (*kubewasm.Response, error) {
		_, err := req.Parent.Int("spec.say")
		return nil, err
	}}
	_, err := kubewasmtest.Reconcile(plugin, kubewasmtest.Input{Parent: parent()})
	var e *kubewasm.Error
	if !errors.As(err, &e) || e.Retryable || e.Message != "Echo team/hello: spec.say: expected an integer, found a string" {
		t.Fatalf("%#v", err)
	}
	plugin.answer = func(req *kubewasm.Request) (*kubewasm.Response, error) {
		_, err := req.Parent.String("spec.ports[2].name")
		return nil, err
	}
	_, err = kubewasmtest.Reconcile(plugin, kubewasmtest.Input{Parent: parent()})
	if err == nil || err.Error() != "Echo team/hello: spec.ports: missing field" {
		t.Fatalf("%v", err)
	}
}

func TestPlainErrorsAreRetryableAndWrappedOnesKeepTheirKind(t *testing.T) {
	for _, c := range []struct {
		err       error
		retryable bool
		message   string
	}{
		{errors.New("the API is down"), true, "the API is down"},
		{kubewasm.Retryable("busy %d", 1), true, "busy 1"},
		{fmt.Errorf("reading spec: %w", kubewasm.Permanent("bad")), false, "reading spec: bad"},
	} {
		plugin := echo{func(*kubewasm.Request) (*kubewasm.Response, error) { return nil, c.err }}
		_, err := kubewasmtest.Reconcile(plugin, kubewasmtest.Input{Parent: parent()})
		var e *kubewasm.Error
		if !errors.As(err, &e) || e.Retryable != c.retryable || e.Message != c.message {
			t.Fatalf("%v: got %#v", c.err, err)
		}
	}
}

func TestAnAnswerTheHostWouldRefuseFailsWithItsReasons(t *testing.T) {
	plugin := echo{func(*kubewasm.Request) (*kubewasm.Response, error) {
		return kubewasm.NewResponse().
			Child(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"}}).
			Child(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "other"}}), nil
	}}
	_, err := kubewasmtest.Reconcile(plugin, kubewasmtest.Input{Parent: parent()})
	want := "the host would refuse this answer: response of plugin echo refused: " +
		"child #0 (apps/v1 Deployment \"web\") is of a kind the plugin did not declare in `children` (declared: v1 ConfigMap); " +
		"child #1 (v1 ConfigMap \"c\") is in namespace \"other\", outside its parent's namespace \"team\""
	var refused *kubewasmtest.HostWouldRefuse
	if !errors.As(err, &refused) || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}

func TestTheManifestCrossesTheABI(t *testing.T) {
	m, err := kubewasmtest.Describe(echo{})
	if err != nil {
		t.Fatal(err)
	}
	want := echo{}.Describe()
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("got %+v\nwant %+v", m, want)
	}
}

type badName struct{ echo }

func (badName) Describe() kubewasm.Manifest {
	return kubewasm.Manifest{Name: "Echo", Parent: kubewasm.Namespaced("example.com", "v1", "Echo", "echoes")}
}

func TestAManifestTheHostWouldRefuseIsNamed(t *testing.T) {
	_, err := kubewasmtest.Describe(badName{})
	if err == nil || err.Error() != `the host would refuse to load this plugin: name "Echo" must be a DNS label (lower-case letters, digits and '-', at most 63)` {
		t.Fatalf("%v", err)
	}
}

func TestRelatedQueriesCrossTheABIAndSelectAsTheHostDoes(t *testing.T) {
	queries, err := kubewasmtest.Related(echo{}, parent())
	if err != nil {
		t.Fatal(err)
	}
	if len(queries) != 2 || queries[0].Namespace != "team" || queries[1].Namespace != "" {
		t.Fatalf("%+v", queries)
	}
	mine := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "a", "namespace": "team", "labels": map[string]any{"app": "hello"}}}
	theirs := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "b", "namespace": "team", "labels": map[string]any{"app": "other"}}}
	shared := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "shared", "namespace": "x"}}
	if !queries[0].Matches(mine) || queries[0].Matches(theirs) || !queries[1].Matches(shared) || queries[1].Matches(mine) {
		t.Fatal("the queries select the wrong objects")
	}
}

func TestObservedChildrenDeletedByUIDComeBackAndAnUnobservedOneIsRefused(t *testing.T) {
	plugin := echo{func(req *kubewasm.Request) (*kubewasm.Response, error) {
		resp := kubewasm.NewResponse()
		for _, child := range req.Children {
			resp.DeleteChild(child)
		}
		return resp, nil
	}}
	configMap := func(name, uid string) any {
		meta := map[string]any{"name": name, "namespace": "team"}
		if uid != "" {
			meta["uid"] = uid
		}
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
	}
	out, err := kubewasmtest.Reconcile(plugin, kubewasmtest.Input{Parent: parent(),
		Children: []any{configMap("old", "u-old"), configMap("older", "u-older")}})
	if err != nil {
		t.Fatal(err)
	}
	var deleted []string
	for _, c := range out.Deleted {
		deleted = append(deleted, c.Name())
	}
	if !reflect.DeepEqual(deleted, []string{"old", "older"}) || len(out.Children) != 0 {
		t.Fatalf("deleted %v, children %v", deleted, out.Children)
	}
	_, err = kubewasmtest.Reconcile(plugin, kubewasmtest.Input{Parent: parent(), Children: []any{configMap("x", "")}})
	var refused *kubewasmtest.HostWouldRefuse
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), `delete #0 ("") is not the metadata.uid of an observed child`) {
		t.Fatalf("not refused by name: %v", err)
	}
}
