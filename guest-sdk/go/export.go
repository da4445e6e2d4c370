package kubewasm

import (
	"fmt"
	"time"

	"kubewasm.dev/sdk/internal/cabi"
	"kubewasm.dev/sdk/internal/fields"
	"kubewasm.dev/sdk/internal/wire"
)

// Reconciler is a plugin: what it is, and what it decides for one parent.
//
// Each call runs in a fresh component instance: nothing survives between calls.
type Reconciler interface {
	// Describe says what the plugin reconciles, owns and reads; the host calls it once
	// when it loads the plugin.
	Describe() Manifest
	// Reconcile decides what should exist for one parent. Return an error made by
	// [Retryable] or [Permanent] when no decision can be made.
	Reconcile(req *Request) (*Response, error)
}

// RelatedQuerier is a Reconciler that reads objects besides its parent and children.
type RelatedQuerier interface {
	// Related is the related objects to hand Reconcile for parent; the host reconciles
	// the parent again whenever one of them changes.
	Related(parent Object) []Query
}

var exported Reconciler

// Export makes plugin the component's implementation of the contract. Call it from an
// init function of package main: a reactor component runs package initialization, not
// main.
func Export(plugin Reconciler) { exported = plugin }

// The contract's exports (package wire lowers and lifts them) run the exported plugin.
func init() {
	wire.Exports.PluginInfo.Describe = func() wire.Manifest { return manifestToWire(plugin().Describe()) }
	wire.Exports.Reconciler.Related = related
	wire.Exports.Reconciler.Reconcile = reconcile
	wire.Exports.Handler.Handle = noHandler
}

// noHandler is the handle of a plugin without a handler: its manifest declares no
// watches, so the host never calls it.
func noHandler(wire.ObjectEvent) cabi.Result[struct{}, wire.ReconcileError] {
	return cabi.Result[struct{}, wire.ReconcileError]{Err: &wire.ReconcileError{
		Message: "this plugin handles no events: its manifest declares no watches",
	}}
}

func plugin() Reconciler {
	if exported == nil {
		panic("kubewasm: no plugin: call kubewasm.Export(yourReconciler) from an init function of package main")
	}
	return exported
}

// ---- describe ------------------------------------------------------------------

func kindToWire(k KindRef) wire.KindRef { return wire.KindRef(k) }

func kindsToWire(ks []KindRef) []wire.KindRef {
	out := make([]wire.KindRef, len(ks))
	for i, k := range ks {
		out[i] = kindToWire(k)
	}
	return out
}

func manifestToWire(m Manifest) wire.Manifest {
	parent := kindToWire(m.Parent)
	return wire.Manifest{
		Name:      m.Name,
		Parent:    &parent,
		Children:  kindsToWire(m.Children),
		Related:   kindsToWire(m.Related),
		Finalizer: m.Finalizer,
		Crds:      m.CRDs,
		Limits:    wire.Limits{DeadlineMs: m.Limits.DeadlineMs, MemoryMib: m.Limits.MemoryMiB},
	}
}

// ---- related -------------------------------------------------------------------

func related(text string) []wire.Query {
	var queries []wire.Query
	if querier, ok := plugin().(RelatedQuerier); ok {
		// A parent that is not a JSON object cannot match anything; the host never sends one.
		parent, _ := ParseJSON(text)
		for _, q := range querier.Related(Object(asMap(parent))) {
			queries = append(queries, queryToWire(q))
		}
	}
	return queries
}

func queryToWire(q Query) wire.Query {
	selector := wire.Selector{Tag: uint8(q.Selector.which), Names: q.Selector.names}
	for _, r := range q.Selector.requirements {
		selector.Labels = append(selector.Labels, wire.LabelRequirement{Key: r.Key, Operator: wire.LabelOperator(r.Operator), Values: r.Values})
	}
	out := wire.Query{Kind: kindToWire(q.Kind), Selector: selector}
	if q.Namespace != "" {
		ns := q.Namespace
		out.Namespace = &ns
	}
	return out
}

// ---- reconcile -----------------------------------------------------------------

func reconcile(r wire.Request) cabi.Result[wire.Response, wire.ReconcileError] {
	fail := func(err error) cabi.Result[wire.Response, wire.ReconcileError] {
		e := AsError(err)
		return cabi.Result[wire.Response, wire.ReconcileError]{Err: &wire.ReconcileError{Message: e.Message, Retryable: e.Retryable}}
	}
	req, err := requestFromWire(r)
	if err != nil {
		return fail(err)
	}
	resp, err := plugin().Reconcile(req)
	if err != nil {
		return fail(err)
	}
	if resp == nil {
		resp = NewResponse()
	}
	out, err := responseToWire(resp)
	if err != nil {
		return fail(err)
	}
	return cabi.Result[wire.Response, wire.ReconcileError]{Ok: out}
}

func parseObject(what, text string) (Object, error) {
	v, err := ParseJSON(text)
	if err != nil {
		return nil, Permanent("%s is not JSON: %v", what, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, Permanent("%s is not a JSON object", what)
	}
	return m, nil
}

func requestFromWire(r wire.Request) (*Request, error) {
	parent, err := parseObject("parent", r.Parent)
	if err != nil {
		return nil, err
	}
	// The fields that reach the plugin as they were sent; the others are parsed below.
	req := &Request{Parent: parent, NowRFC3339: r.Now}
	fields.Copy(req, r)
	for _, text := range r.Children {
		child, err := parseObject("child", text)
		if err != nil {
			return nil, err
		}
		req.Children = append(req.Children, child)
	}
	for _, text := range r.Related {
		obj, err := parseObject("related object", text)
		if err != nil {
			return nil, err
		}
		req.Related = append(req.Related, obj)
	}
	if req.Config, err = ParseJSON(r.Config); err != nil {
		return nil, Permanent("config is not JSON: %v", err)
	}
	// A time that does not parse (only a hand-made test sends one) reads as the epoch.
	if req.Now, err = time.Parse(time.RFC3339Nano, r.Now); err != nil {
		req.Now = time.Unix(0, 0).UTC()
	}
	return req, nil
}

func pairs(m map[string]string) [][2]string {
	var out [][2]string
	for _, k := range sortedKeys(m) {
		out = append(out, [2]string{k, m[k]})
	}
	return out
}

func responseToWire(r *Response) (wire.Response, error) {
	out := wire.Response{
		Labels:      pairs(r.Labels),
		Annotations: pairs(r.Annotations),
		Finalized:   r.Finalized,
	}
	for i, child := range r.Children {
		text, err := ToJSON(child)
		if err != nil {
			return out, Permanent("child #%d does not encode to JSON: %v", i, err)
		}
		out.Children = append(out.Children, text)
	}
	if r.Status != nil {
		text, err := ToJSON(r.Status)
		if err != nil {
			return out, Permanent("status does not encode to JSON: %v", err)
		}
		out.Status = &text
	}
	if r.RequeueAfter > 0 {
		ms := uint64(r.RequeueAfter / time.Millisecond)
		out.RequeueAfterMs = &ms
	}
	for i, e := range r.Events {
		var t wire.EventType
		switch e.Type {
		case Normal:
			t = wire.EventTypeNormal
		case Warning:
			t = wire.EventTypeWarning
		default:
			return out, Permanent("event #%d: type must be kubewasm.Normal or kubewasm.Warning, found %q", i, e.Type)
		}
		out.Events = append(out.Events, wire.Event{Type: t, Reason: e.Reason, Message: e.Message})
	}
	return out, nil
}

// String is a short form of the manifest, for messages.
func (m Manifest) String() string { return fmt.Sprintf("%s (parent %s)", m.Name, m.Parent) }
