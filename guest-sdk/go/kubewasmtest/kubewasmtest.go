// Package kubewasmtest runs a plugin natively under `go test`: no WebAssembly, no host.
//
// [Reconcile] encodes the request as the host does, lowers it into a memory with the
// canonical ABI, calls the same export code the component runs, lifts the answer back
// and checks it with the host's own validation: an answer the host would refuse fails
// with the host's reasons.
//
//	out, err := kubewasmtest.Reconcile(Echo{}, kubewasmtest.Input{Parent: parent})
//	cm := out.Child(kinds.ConfigMap, "hello")
//
// [Handle] delivers one change of a watched object to the plugin's handler the same
// way. Both answer the plugin's HTTP requests from canned [Reply]s, in the order given,
// and record every request made (Requests). With the plugin's error they still return
// what the call sent and logged before it failed (Requests, Logs):
//
//	out, err := kubewasmtest.Handle(Notify{}, kubewasmtest.Event{Change: kubewasm.Added, Object: pod,
//		HTTP: []kubewasmtest.Reply{{Status: 200}}})
//	body := out.Requests[0].Body
package kubewasmtest

import (
	"fmt"
	"strings"
	"time"

	"kubewasm.dev/sdk"
	"kubewasm.dev/sdk/internal/cabi"
	"kubewasm.dev/sdk/internal/fields"
	"kubewasm.dev/sdk/internal/logsink"
	"kubewasm.dev/sdk/internal/wire"
)

// Now is the time a test request carries unless it says otherwise.
const Now = "2026-01-01T00:00:00Z"

// HostWouldRefuse is a manifest or answer the host would refuse; the message says why.
type HostWouldRefuse struct{ Reason string }

func (e *HostWouldRefuse) Error() string { return e.Reason }

// Input is what the host hands the plugin for one parent.
type Input struct {
	// Parent is the object being reconciled (a map, or anything that encodes to a JSON object).
	Parent any
	// Children are observed children (the host only sends those the parent controls).
	Children []any
	// Related are the objects the plugin's queries selected.
	Related    []any
	Finalizing bool
	// Now is the host's time, RFC 3339; default [Now].
	Now string
	// Config is the plugin's settings (nil: none).
	Config any
	// HTTP answers the plugin's HTTP requests (see [Reply]).
	HTTP []Reply
}

// Line is one logged line.
type Line = logsink.Line

// Outcome is what the plugin answered, decoded from the wire form and checked.
type Outcome struct {
	Children     []kubewasm.Object
	Status       map[string]any
	Labels       map[string]string
	Annotations  map[string]string
	RequeueAfter time.Duration
	Events       []kubewasm.Event
	Finalized    bool
	// Deleted are the observed children the answer deletes by uid
	// ([kubewasm.Response.DeleteChild]).
	Deleted []kubewasm.Object
	// Logs are the lines the plugin logged during the call.
	Logs []Line
	// Requests are the HTTP requests the plugin sent, in order, as the host would
	// receive them.
	Requests []SentRequest
}

// ChildrenOf is the desired children of kind.
func (o *Outcome) ChildrenOf(kind kubewasm.KindRef) []kubewasm.Object {
	var out []kubewasm.Object
	for _, c := range o.Children {
		if kind.Matches(c) {
			out = append(out, c)
		}
	}
	return out
}

// Child is the desired child of kind named name, or nil.
func (o *Outcome) Child(kind kubewasm.KindRef, name string) kubewasm.Object {
	for _, c := range o.Children {
		if kind.Matches(c) && c.Name() == name {
			return c
		}
	}
	return nil
}

// Warnings is the Warning events.
func (o *Outcome) Warnings() []kubewasm.Event {
	var out []kubewasm.Event
	for _, e := range o.Events {
		if e.Type == kubewasm.Warning {
			out = append(out, e)
		}
	}
	return out
}

// Describe is the plugin's manifest, through the export code, checked as the host
// checks it at load; a *HostWouldRefuse when the host would not load the plugin.
func Describe(plugin kubewasm.Plugin) (kubewasm.Manifest, error) {
	kubewasm.Export(plugin)
	w := wire.CallPluginInfoDescribe(&cabi.Arena{})
	man := kubewasm.Manifest{
		Name:      w.Name,
		Finalizer: w.Finalizer,
		CRDs:      w.Crds,
		Limits:    kubewasm.Limits{DeadlineMs: w.Limits.DeadlineMs, MemoryMiB: w.Limits.MemoryMib},
		Outbound:  w.Outbound,
	}
	if w.Parent != nil {
		man.Parent = kubewasm.KindRef(*w.Parent)
	}
	for _, k := range w.Children {
		man.Children = append(man.Children, kubewasm.KindRef(k))
	}
	for _, k := range w.Related {
		man.Related = append(man.Related, kubewasm.KindRef(k))
	}
	for _, watch := range w.Watches {
		man.Watches = append(man.Watches, kubewasm.Watch{Kind: kubewasm.KindRef(watch.Kind), LabelSelector: deref(watch.LabelSelector), FieldSelector: deref(watch.FieldSelector)})
	}
	for _, k := range w.KeepUnlisted {
		man.KeepUnlisted = append(man.KeepUnlisted, kubewasm.KindRef(k))
	}
	man.Defaults = rulesFromWire(w.Defaults)
	man.Validates = rulesFromWire(w.Validates)
	man.Converts = w.Converts
	if err := man.Check(); err != nil {
		return man, &HostWouldRefuse{"the host would refuse to load this plugin: " + err.Error()}
	}
	return man, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Related is the plugin's related queries for parent, through the export code, as the
// host receives them; each query selects what [kubewasm.Query.Matches] says.
func Related(plugin kubewasm.Reconciler, parent any) ([]kubewasm.Query, error) {
	text, err := kubewasm.ToJSON(parent)
	if err != nil {
		return nil, fmt.Errorf("parent: %w", err)
	}
	kubewasm.Export(plugin)
	var out []kubewasm.Query
	for _, q := range wire.CallReconcilerRelated(&cabi.Arena{}, text) {
		query := kubewasm.Query{Kind: kubewasm.KindRef(q.Kind)}
		if q.Namespace != nil {
			query.Namespace = *q.Namespace
		}
		switch q.Selector.Tag {
		case wire.SelectorNames:
			query.Selector = kubewasm.Names(q.Selector.Names...)
		case wire.SelectorLabels:
			var reqs []kubewasm.Requirement
			for _, r := range q.Selector.Labels {
				reqs = append(reqs, kubewasm.Requirement{Key: r.Key, Operator: kubewasm.LabelOperator(r.Operator), Values: r.Values})
			}
			query.Selector = kubewasm.Requirements(reqs...)
		}
		out = append(out, query)
	}
	return out, nil
}

func texts(what string, values []any) ([]string, error) {
	out := make([]string, len(values))
	for i, v := range values {
		text, err := kubewasm.ToJSON(v)
		if err != nil {
			return nil, fmt.Errorf("%s #%d: %w", what, i, err)
		}
		out[i] = text
	}
	return out, nil
}

// Reconcile runs one reconcile of plugin natively, through the export code, and checks
// the answer exactly as the host does before it writes anything.
//
// The error is the plugin's own *kubewasm.Error as the host would receive it (the
// Outcome then holds only the Requests and Logs of the call), or a *HostWouldRefuse
// when the host would refuse the answer, listing every problem as the host's
// ResponseRefused event does.
func Reconcile(plugin kubewasm.Reconciler, in Input) (*Outcome, error) {
	manifest, err := Describe(plugin)
	if err != nil {
		return nil, err
	}
	// The fields sent as they are; the objects and the settings are encoded below.
	var req wire.Request
	fields.Copy(&req, in)
	if req.Now == "" {
		req.Now = Now
	}
	if req.Parent, err = kubewasm.ToJSON(in.Parent); err != nil {
		return nil, fmt.Errorf("parent: %w", err)
	}
	if req.Children, err = texts("child", in.Children); err != nil {
		return nil, err
	}
	if req.Related, err = texts("related object", in.Related); err != nil {
		return nil, err
	}
	if req.Config, err = kubewasm.ToJSON(in.Config); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}

	var result cabi.Result[wire.Response, wire.ReconcileError]
	logsink.Take()
	requests, err := withReplies(in.HTTP, func() { result = wire.CallReconcilerReconcile(&cabi.Arena{}, req) })
	logs := logsink.Take()
	if err != nil {
		return nil, err
	}
	if result.Err != nil {
		return &Outcome{Logs: logs, Requests: requests}, &kubewasm.Error{Message: result.Err.Message, Retryable: result.Err.Retryable}
	}
	answer := result.Ok
	resp := &kubewasm.Response{Finalized: answer.Finalized}
	for i, text := range answer.Children {
		child, err := kubewasm.ParseJSON(text)
		if err != nil {
			return nil, &HostWouldRefuse{fmt.Sprintf("the host would refuse this answer: child #%d is not JSON: %v", i, err)}
		}
		resp.Children = append(resp.Children, child)
	}
	if answer.Status != nil {
		if resp.Status, err = kubewasm.ParseJSON(*answer.Status); err != nil {
			return nil, &HostWouldRefuse{fmt.Sprintf("the host would refuse this answer: status is not JSON: %v", err)}
		}
	}
	resp.Labels = toMap(answer.Labels)
	resp.Annotations = toMap(answer.Annotations)
	if answer.RequeueAfterMs != nil {
		resp.RequeueAfter = time.Duration(*answer.RequeueAfterMs) * time.Millisecond
	}
	for _, e := range answer.Events {
		t := kubewasm.Normal
		if e.Type == wire.EventTypeWarning {
			t = kubewasm.Warning
		}
		resp.Events = append(resp.Events, kubewasm.Event{Type: t, Reason: e.Reason, Message: e.Message})
	}
	resp.Delete = answer.Delete
	parent, _ := kubewasm.ParseJSON(req.Parent)
	var observed []any
	for _, text := range req.Children {
		child, _ := kubewasm.ParseJSON(text)
		observed = append(observed, child)
	}
	checked, err := kubewasm.Validate(manifest, parent, resp, observed...)
	if err != nil {
		return nil, &HostWouldRefuse{"the host would refuse this answer: " + err.Error()}
	}
	out := &Outcome{
		Labels:       checked.Labels,
		Annotations:  checked.Annotations,
		RequeueAfter: checked.RequeueAfter,
		Events:       checked.Events,
		Finalized:    checked.Finalized,
		Logs:         logs,
		Requests:     requests,
	}
	for _, c := range checked.Children {
		out.Children = append(out.Children, kubewasm.Object(c.(map[string]any)))
	}
	// Validation found each uid among the observed children.
	for _, c := range observed {
		child := kubewasm.Object(c.(map[string]any))
		for _, uid := range checked.Delete {
			if child.UID() == uid {
				out.Deleted = append(out.Deleted, child)
			}
		}
	}
	if checked.Status != nil {
		out.Status, _ = checked.Status.(map[string]any)
	}
	return out, nil
}

func toMap(pairs [][2]string) map[string]string {
	out := map[string]string{}
	for _, p := range pairs {
		out[p[0]] = p[1]
	}
	return out
}

// Lines formats logged lines one per line, for failure messages.
func Lines(lines []Line) string {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "[%s] %s %v\n", l.Level, l.Message, l.Fields)
	}
	return b.String()
}
