package kubewasm

import (
	"fmt"
	"time"

	"kubewasm.dev/sdk/internal/cabi"
	"kubewasm.dev/sdk/internal/fields"
	"kubewasm.dev/sdk/internal/wire"
)

// Plugin is what every plugin is: it says what it does. A plugin is a [Reconciler], a
// [Handler], or both; its manifest says which the host calls.
//
// Each call runs in a fresh component instance: nothing survives between calls.
type Plugin interface {
	// Describe says what the plugin reconciles, owns, reads, watches and reaches; the
	// host calls it once when it loads the plugin.
	Describe() Manifest
}

// Reconciler is a plugin that decides, for one parent, what should exist.
type Reconciler interface {
	Plugin
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

var exported Plugin

// Export makes plugin (a [Reconciler], a [Handler], or both) the component's
// implementation of the contract. Call it from an init function of package main: a
// reactor component runs package initialization, not main.
func Export(plugin Plugin) { exported = plugin }

// The contract's exports (package wire lowers and lifts them) run the exported plugin.
func init() {
	wire.Exports.PluginInfo.Describe = func() wire.Manifest { return manifestToWire(plugin().Describe()) }
	wire.Exports.Reconciler.Related = related
	wire.Exports.Reconciler.Reconcile = reconcile
	wire.Exports.Handler.Handle = handle
	wire.Exports.Admission.Default = admissionDefault
	wire.Exports.Admission.Validate = admissionValidate
	wire.Exports.Admission.Convert = admissionConvert
}

func plugin() Plugin {
	if exported == nil {
		panic("kubewasm: no plugin: call kubewasm.Export(yourPlugin) from an init function of package main")
	}
	return exported
}

// fail is the contract's error of err.
func fail(err error) *wire.ReconcileError {
	e := AsError(err)
	return &wire.ReconcileError{Message: e.Message, Retryable: e.Retryable}
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
	out := wire.Manifest{
		Name:      m.Name,
		Children:  kindsToWire(m.Children),
		Related:   kindsToWire(m.Related),
		Finalizer: m.Finalizer,
		Crds:      m.CRDs,
		Limits:    wire.Limits{DeadlineMs: m.Limits.DeadlineMs, MemoryMib: m.Limits.MemoryMiB},
		Outbound:  m.Outbound,
	}
	if m.HasParent() {
		parent := kindToWire(m.Parent)
		out.Parent = &parent
	}
	for _, w := range m.Watches {
		out.Watches = append(out.Watches, wire.Watch{Kind: kindToWire(w.Kind), LabelSelector: optional(w.LabelSelector), FieldSelector: optional(w.FieldSelector)})
	}
	out.KeepUnlisted = kindsToWire(m.KeepUnlisted)
	out.Defaults = rulesToWire(m.Defaults)
	out.Validates = rulesToWire(m.Validates)
	out.Converts = m.Converts
	return out
}

var operationsToWire = map[Operation]wire.Operation{Create: wire.OperationCreate, Update: wire.OperationUpdate, Delete: wire.OperationDelete, Connect: wire.OperationConnect}

func rulesToWire(rules []AdmissionRule) []wire.AdmissionRule {
	out := make([]wire.AdmissionRule, len(rules))
	for i, r := range rules {
		out[i] = wire.AdmissionRule{Kind: kindToWire(r.Kind)}
		for _, op := range r.Operations {
			out[i].Operations = append(out[i].Operations, operationsToWire[op])
		}
	}
	return out
}

// optional is nil for "", else a pointer to s.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ---- related -------------------------------------------------------------------

func related(text string) []wire.Query {
	var queries []wire.Query
	if _, reconciles := plugin().(Reconciler); !reconciles {
		return nil
	}
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
	type result = cabi.Result[wire.Response, wire.ReconcileError]
	reconciler, ok := plugin().(Reconciler)
	if !ok {
		return result{Err: fail(Permanent("this plugin reconciles nothing: its manifest names no parent"))}
	}
	req, err := requestFromWire(r)
	if err != nil {
		return result{Err: fail(err)}
	}
	resp, err := reconciler.Reconcile(req)
	if err != nil {
		return result{Err: fail(err)}
	}
	if resp == nil {
		resp = NewResponse()
	}
	out, err := responseToWire(resp)
	if err != nil {
		return result{Err: fail(err)}
	}
	return result{Ok: out}
}

// ---- handle --------------------------------------------------------------------

func handle(e wire.ObjectEvent) cabi.Result[struct{}, wire.ReconcileError] {
	type result = cabi.Result[struct{}, wire.ReconcileError]
	handler, ok := plugin().(Handler)
	if !ok {
		return result{Err: fail(Permanent("this plugin handles no events: its manifest declares no watches"))}
	}
	ev, err := eventFromWire(e)
	if err == nil {
		err = handler.Handle(ev)
	}
	if err != nil {
		return result{Err: fail(err)}
	}
	return result{}
}

var changes = map[wire.Change]Change{wire.ChangeAdded: Added, wire.ChangeUpdated: Updated, wire.ChangeDeleted: Deleted}

func eventFromWire(e wire.ObjectEvent) (*ObjectEvent, error) {
	object, err := parseObject("object", e.Object)
	if err != nil {
		return nil, err
	}
	// The fields that reach the plugin as they were sent; the others are converted below.
	ev := &ObjectEvent{Change: changes[e.Change], Kind: KindRef(e.Kind), Object: object, NowRFC3339: e.Now, Now: timeOf(e.Now)}
	fields.Copy(ev, e)
	ev.DeliveryID = e.DeliveryId
	if e.OldObject != nil {
		if ev.OldObject, err = parseObject("old object", *e.OldObject); err != nil {
			return nil, err
		}
	}
	if ev.Config, err = ParseJSON(e.Config); err != nil {
		return nil, Permanent("config is not JSON: %v", err)
	}
	return ev, nil
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
	req.Now = timeOf(r.Now)
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
		Delete:      r.Delete,
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
