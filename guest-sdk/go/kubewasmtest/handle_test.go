package kubewasmtest_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"kubewasm.dev/sdk"
	"kubewasm.dev/sdk/http"
	"kubewasm.dev/sdk/kinds"
	"kubewasm.dev/sdk/kubewasmtest"
	"kubewasm.dev/sdk/log"
)

const hook = "https://hooks.example.com/pods"

// notify posts each change of a Pod or a Node to a webhook; run says what else it does.
type notify struct {
	seen *[]*kubewasm.ObjectEvent
	run  func(ev *kubewasm.ObjectEvent) error
}

func (notify) Describe() kubewasm.Manifest {
	return kubewasm.Manifest{
		Name:     "notify",
		Watches:  []kubewasm.Watch{kubewasm.Watching(kinds.Pod).Labels("app=web"), kubewasm.Watching(kinds.Node)},
		Outbound: []string{hook},
	}
}

func (n notify) Handle(ev *kubewasm.ObjectEvent) error {
	*n.seen = append(*n.seen, ev)
	if n.run != nil {
		return n.run(ev)
	}
	log.Info("notifying", "change", ev.Change, "attempt", ev.Attempt)
	resp, err := http.PostJSON(hook, map[string]any{"pod": ev.Object.Name(), "id": ev.DeliveryID})
	if err != nil {
		return err
	}
	return resp.CheckStatus()
}

func pod() map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web-0", "namespace": "shop", "uid": "u-1", "resourceVersion": "42"}}
}

func TestTheEventReachesTheHandlerTypedAndItsRequestIsRecorded(t *testing.T) {
	var seen []*kubewasm.ObjectEvent
	old := pod()
	old["metadata"].(map[string]any)["resourceVersion"] = "41"
	out, err := kubewasmtest.Handle(notify{seen: &seen}, kubewasmtest.Event{
		Change: kubewasm.Updated, Object: pod(), OldObject: old, Attempt: 2, Now: "2026-03-04T05:06:07Z",
		Config: map[string]any{"k": "v"}, HTTP: []kubewasmtest.Reply{{Status: 200}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ev := seen[0]
	if ev.Change != kubewasm.Updated || ev.Kind != kinds.Pod || ev.Object.Name() != "web-0" || ev.OldObject.Metadata()["resourceVersion"] != "41" {
		t.Errorf("event: %+v", ev)
	}
	if ev.Initial || ev.FinalStateUnknown || ev.Attempt != 2 || ev.DeliveryID != "u-1:42:updated" {
		t.Errorf("event: %+v", ev)
	}
	if got := ev.Now.Format("2006-01-02T15:04:05Z07:00"); got != "2026-03-04T05:06:07Z" {
		t.Errorf("now: %s", got)
	}
	if !reflect.DeepEqual(ev.Config, map[string]any{"k": "v"}) {
		t.Errorf("config: %v", ev.Config)
	}
	req := out.Requests[0]
	var body map[string]any
	if err := req.JSON(&body); err != nil || req.Method != "POST" || req.URL != hook || req.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request: %+v (%v)", req, err)
	}
	if !reflect.DeepEqual(body, map[string]any{"pod": "web-0", "id": "u-1:42:updated"}) {
		t.Errorf("body: %v", body)
	}
	if len(out.Logs) != 1 || out.Logs[0].Message != "notifying" || !reflect.DeepEqual(out.Logs[0].Fields, [][2]string{{"change", "updated"}, {"attempt", "2"}}) {
		t.Errorf("logs: %s", kubewasmtest.Lines(out.Logs))
	}
}

func TestEveryFieldOfTheEventSurvivesTheRecord(t *testing.T) {
	var seen []*kubewasm.ObjectEvent
	in := kubewasmtest.Event{Change: kubewasm.Deleted, Object: pod(), Initial: true, FinalStateUnknown: true, DeliveryID: "d-1", HTTP: []kubewasmtest.Reply{{}}}
	if _, err := kubewasmtest.Handle(notify{seen: &seen}, in); err != nil {
		t.Fatal(err)
	}
	ev := seen[0]
	if ev.Change != kubewasm.Deleted || !ev.Initial || !ev.FinalStateUnknown || ev.DeliveryID != "d-1" || ev.OldObject != nil || ev.Attempt != 1 {
		t.Errorf("event: %+v", ev)
	}
}

func TestAResponseWithAnErrorStatusIsRetriedOrNotByItsStatus(t *testing.T) {
	var seen []*kubewasm.ObjectEvent
	for status, retryable := range map[int]bool{503: true, 429: true, 404: false} {
		_, err := kubewasmtest.Handle(notify{seen: &seen}, kubewasmtest.Event{Change: kubewasm.Added, Object: pod(),
			HTTP: []kubewasmtest.Reply{{Status: status, Body: "busy"}}})
		var e *kubewasm.Error
		if !errors.As(err, &e) || e.Retryable != retryable || !strings.HasPrefix(e.Message, "POST "+hook+": HTTP ") || !strings.HasSuffix(e.Message, ": busy") {
			t.Errorf("%d: %v", status, err)
		}
	}
}

func TestTheHostsReasonsReachThePluginAndTheHost(t *testing.T) {
	var seen []*kubewasm.ObjectEvent
	_, err := kubewasmtest.Handle(notify{seen: &seen}, kubewasmtest.Event{Change: kubewasm.Added, Object: pod(),
		HTTP: []kubewasmtest.Reply{{URL: "https://elsewhere.example.com/*"}}})
	var e *kubewasm.Error
	if !errors.As(err, &e) || e.Retryable || e.Message != "HTTP request denied: POST "+hook+": no canned reply for this request" {
		t.Errorf("no reply: %v", err)
	}
	reason := "https://hooks.example.com:443: no response within 10s"
	_, err = kubewasmtest.Handle(notify{seen: &seen}, kubewasmtest.Event{Change: kubewasm.Added, Object: pod(),
		HTTP: []kubewasmtest.Reply{{Error: &http.Error{Kind: http.Timeout, Reason: reason}}}})
	if !errors.As(err, &e) || !e.Retryable || e.Message != "HTTP request timeout: "+reason {
		t.Errorf("timeout: %v", err)
	}
}

func TestEachReasonOfTheHostIsAnErrorRetryableOrNot(t *testing.T) {
	var seen []*kubewasm.ObjectEvent
	got := map[http.ErrorKind]bool{}
	run := func(ev *kubewasm.ObjectEvent) error {
		for _, kind := range []http.ErrorKind{http.Denied, http.Timeout, http.TooLarge, http.TooManyRequests, http.Failed} {
			_, err := http.Get("https://api.example.com/" + string(kind))
			var e *http.Error
			var host *kubewasm.Error
			if !errors.As(err, &e) || e.Kind != kind || e.Reason != "why "+string(kind) || !errors.As(err, &host) {
				t.Errorf("%s: %v", kind, err)
				continue
			}
			got[kind] = host.Retryable
		}
		return nil
	}
	var replies []kubewasmtest.Reply
	for _, kind := range []http.ErrorKind{http.Denied, http.Timeout, http.TooLarge, http.TooManyRequests, http.Failed} {
		replies = append(replies, kubewasmtest.Reply{URL: "*/" + string(kind), Error: &http.Error{Kind: kind, Reason: "why " + string(kind)}})
	}
	if _, err := kubewasmtest.Handle(notify{seen: &seen, run: run}, kubewasmtest.Event{Change: kubewasm.Added, Object: pod(), HTTP: replies}); err != nil {
		t.Fatal(err)
	}
	want := map[http.ErrorKind]bool{http.Denied: false, http.Timeout: true, http.TooLarge: false, http.TooManyRequests: false, http.Failed: true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("retryable: %v", got)
	}
}

func TestARequestReadsAsSentAndAResponseAsReceived(t *testing.T) {
	var seen []*kubewasm.ObjectEvent
	var resp *http.Response
	run := func(ev *kubewasm.ObjectEvent) error {
		client := &http.Client{Timeout: 2500 * time.Millisecond, Header: http.Header{"x-trace": {"1"}}}
		req := http.NewRequest("patch", "https://api.example.com/r", []byte("é"))
		req.Header.Add("Content-Type", "text/plain")
		var err error
		resp, err = client.Do(req)
		return err
	}
	reply := kubewasmtest.Reply{Status: 201, Header: map[string]string{"ETag": `"7"`}, Body: map[string]any{"ok": true}}
	out, err := kubewasmtest.Handle(notify{seen: &seen, run: run}, kubewasmtest.Event{Change: kubewasm.Added, Object: pod(), HTTP: []kubewasmtest.Reply{reply}})
	if err != nil {
		t.Fatal(err)
	}
	sent := out.Requests[0]
	if sent.Method != "PATCH" || string(sent.Body) != "é" || sent.Header.Get("x-trace") != "1" || sent.Header.Get("content-type") != "text/plain" || *sent.TimeoutMs != 2500 {
		t.Errorf("sent: %+v", sent)
	}
	var body map[string]bool
	if resp.StatusCode != 201 || resp.Header.Get("etag") != `"7"` || resp.JSON(&body) != nil || !body["ok"] || resp.CheckStatus() != nil {
		t.Errorf("response: %+v", resp)
	}
}

func TestAKindNoWatchSelectsIsNeverDelivered(t *testing.T) {
	var seen []*kubewasm.ObjectEvent
	deployment := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d"}}
	_, err := kubewasmtest.Handle(notify{seen: &seen}, kubewasmtest.Event{Change: kubewasm.Added, Object: deployment})
	var refused *kubewasmtest.HostWouldRefuse
	if !errors.As(err, &refused) || refused.Reason != "the host delivers changes of watched kinds only: the manifest watches v1 Pod, v1 Node, not apps/v1 Deployment" {
		t.Errorf("%v", err)
	}
}

func TestTheManifestCarriesWatchesAndOutbound(t *testing.T) {
	m, err := kubewasmtest.Describe(notify{})
	if err != nil {
		t.Fatal(err)
	}
	want := []kubewasm.Watch{{Kind: kinds.Pod, LabelSelector: "app=web"}, {Kind: kinds.Node}}
	if m.HasParent() || !reflect.DeepEqual(m.Watches, want) || !reflect.DeepEqual(m.Outbound, []string{hook}) {
		t.Errorf("manifest: %+v", m)
	}
}

// reconciles is a plugin without a handler.
type reconciles struct{}

func (reconciles) Describe() kubewasm.Manifest {
	return kubewasm.Manifest{Name: "r", Parent: kubewasm.Namespaced("x.io", "v1", "X", "xs")}
}

func (reconciles) Reconcile(*kubewasm.Request) (*kubewasm.Response, error) {
	resp, err := http.Get("https://api.example.com/")
	if err != nil {
		return nil, err
	}
	return kubewasm.NewResponse().Annotation("status", resp.Header.Get("x-status")), nil
}

func TestAReconcileSendsRequestsToo(t *testing.T) {
	parent := map[string]any{"apiVersion": "x.io/v1", "kind": "X", "metadata": map[string]any{"name": "x", "namespace": "d"}}
	out, err := kubewasmtest.Reconcile(reconciles{}, kubewasmtest.Input{Parent: parent,
		HTTP: []kubewasmtest.Reply{{Method: "GET", URL: "https://api.example.com/", Header: map[string]string{"X-Status": "up"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Annotations["status"] != "up" || len(out.Requests) != 1 || out.Requests[0].Method != "GET" {
		t.Errorf("outcome: %+v", out)
	}
	if _, err := http.Get("https://api.example.com/"); err == nil || !strings.Contains(err.Error(), "no network outside a component") {
		t.Errorf("outside a harness: %v", err)
	}
}

func TestAFailedCallStillReturnsWhatItSentAndLogged(t *testing.T) {
	var seen []*kubewasm.ObjectEvent
	out, err := kubewasmtest.Handle(notify{seen: &seen}, kubewasmtest.Event{Change: kubewasm.Added, Object: pod(),
		HTTP: []kubewasmtest.Reply{{Status: 503, Body: "busy"}}})
	var e *kubewasm.Error
	if !errors.As(err, &e) || !e.Retryable {
		t.Fatalf("error: %v", err)
	}
	if out == nil || len(out.Requests) != 1 || out.Requests[0].Method != "POST" || out.Requests[0].URL != hook {
		t.Errorf("requests: %+v", out)
	}
	if out == nil || len(out.Logs) != 1 || out.Logs[0].Message != "notifying" {
		t.Errorf("logs: %+v", out)
	}

	parent := map[string]any{"apiVersion": "x.io/v1", "kind": "X", "metadata": map[string]any{"name": "x", "namespace": "d"}}
	outcome, err := kubewasmtest.Reconcile(reconciles{}, kubewasmtest.Input{Parent: parent})
	if !errors.As(err, &e) || e.Retryable || !strings.HasPrefix(e.Message, "HTTP request denied: GET https://api.example.com/") {
		t.Fatalf("error: %v", err)
	}
	if outcome == nil || len(outcome.Requests) != 1 || outcome.Requests[0].URL != "https://api.example.com/" || outcome.Children != nil {
		t.Errorf("outcome: %+v", outcome)
	}
}
