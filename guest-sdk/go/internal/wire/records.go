package wire

// The records of wit/reconciler.wit, and their layout: each put/get pair writes or
// reads one record at an address, as the canonical ABI lays it out.

// Kind is `kind-ref`: 36 bytes, aligned to 4.
type Kind struct {
	Group, Version, Kind, Plural string
	Namespaced                   bool
}

const kindSize = 36

func putKind(m Memory, at uint32, k Kind) {
	putString(m, at, k.Group)
	putString(m, at+8, k.Version)
	putString(m, at+16, k.Kind)
	putString(m, at+24, k.Plural)
	putBool(m, at+32, k.Namespaced)
}

func getKind(m Memory, at uint32) Kind {
	return Kind{getString(m, at), getString(m, at+8), getString(m, at+16), getString(m, at+24), getBool(m, at+32)}
}

func putKinds(m Memory, at uint32, kinds []Kind) {
	putList(m, at, len(kinds), kindSize, 4, func(e uint32, i int) { putKind(m, e, kinds[i]) })
}

func getKinds(m Memory, at uint32) []Kind {
	var out []Kind
	getList(m, at, kindSize, func(e uint32) { out = append(out, getKind(m, e)) })
	return out
}

// Manifest is `manifest`: 88 bytes, aligned to 4. Limits are nil when unset.
type Manifest struct {
	Name                  string
	Parent                Kind
	Children, Related     []Kind
	Finalizer             bool
	CRDs                  []string
	DeadlineMs, MemoryMiB *uint32
}

// ManifestSize is the size of a lowered manifest.
const ManifestSize = 88

func putOptionU32(m Memory, at uint32, v *uint32) {
	if v == nil {
		putU8(m, at, 0)
		return
	}
	putU8(m, at, 1)
	putU32(m, at+4, *v)
}

func getOptionU32(m Memory, at uint32) *uint32 {
	if getU8(m, at) == 0 {
		return nil
	}
	v := getU32(m, at+4)
	return &v
}

// PutManifest lowers man at `at`.
func PutManifest(m Memory, at uint32, man Manifest) {
	putString(m, at, man.Name)
	putKind(m, at+8, man.Parent)
	putKinds(m, at+44, man.Children)
	putKinds(m, at+52, man.Related)
	putBool(m, at+60, man.Finalizer)
	putStrings(m, at+64, man.CRDs)
	putOptionU32(m, at+72, man.DeadlineMs)
	putOptionU32(m, at+80, man.MemoryMiB)
}

// GetManifest lifts the manifest at `at`.
func GetManifest(m Memory, at uint32) Manifest {
	return Manifest{
		Name:       getString(m, at),
		Parent:     getKind(m, at+8),
		Children:   getKinds(m, at+44),
		Related:    getKinds(m, at+52),
		Finalizer:  getBool(m, at+60),
		CRDs:       getStrings(m, at+64),
		DeadlineMs: getOptionU32(m, at+72),
		MemoryMiB:  getOptionU32(m, at+80),
	}
}

// Label operators, in the order of `label-operator`.
const (
	OpIn uint8 = iota
	OpNotIn
	OpExists
	OpDoesNotExist
)

// Requirement is `label-requirement`: 20 bytes, aligned to 4.
type Requirement struct {
	Key      string
	Operator uint8
	Values   []string
}

// Selector cases, in the order of `selector`.
const (
	SelectAll uint8 = iota
	SelectNames
	SelectLabels
)

// Query is `query`: 60 bytes, aligned to 4. Namespace "" is `none`.
type Query struct {
	Kind         Kind
	Namespace    *string
	Selector     uint8
	Names        []string
	Requirements []Requirement
}

const querySize = 60

func putQuery(m Memory, at uint32, q Query) {
	putKind(m, at, q.Kind)
	if q.Namespace == nil {
		putU8(m, at+36, 0)
	} else {
		putU8(m, at+36, 1)
		putString(m, at+40, *q.Namespace)
	}
	putU8(m, at+48, q.Selector)
	switch q.Selector {
	case SelectNames:
		putStrings(m, at+52, q.Names)
	case SelectLabels:
		putList(m, at+52, len(q.Requirements), 20, 4, func(e uint32, i int) {
			r := q.Requirements[i]
			putString(m, e, r.Key)
			putU8(m, e+8, r.Operator)
			putStrings(m, e+12, r.Values)
		})
	}
}

func getQuery(m Memory, at uint32) Query {
	q := Query{Kind: getKind(m, at), Selector: getU8(m, at+48)}
	if getU8(m, at+36) != 0 {
		ns := getString(m, at+40)
		q.Namespace = &ns
	}
	switch q.Selector {
	case SelectNames:
		q.Names = getStrings(m, at+52)
	case SelectLabels:
		getList(m, at+52, 20, func(e uint32) {
			q.Requirements = append(q.Requirements, Requirement{getString(m, e), getU8(m, e+8), getStrings(m, e+12)})
		})
	}
	return q
}

// PutQueries lowers a `list<query>` at `at` (8 bytes).
func PutQueries(m Memory, at uint32, qs []Query) {
	putList(m, at, len(qs), querySize, 4, func(e uint32, i int) { putQuery(m, e, qs[i]) })
}

// GetQueries lifts the `list<query>` at `at`.
func GetQueries(m Memory, at uint32) []Query {
	var out []Query
	getList(m, at, querySize, func(e uint32) { out = append(out, getQuery(m, e)) })
	return out
}

// Request is `request`, passed to `reconcile` as 11 flat parameters.
type Request struct {
	Parent            string
	Children, Related []string
	Finalizing        bool
	Now, Config       string
}

// RequestParams lowers r into the flat parameters of `reconcile`.
func RequestParams(m Memory, r Request) [11]uint32 {
	var p [11]uint32
	p[0], p[1] = NewString(m, r.Parent)
	scratch := m.Alloc(16, 4)
	putStrings(m, scratch, r.Children)
	putStrings(m, scratch+8, r.Related)
	p[2], p[3] = getU32(m, scratch), getU32(m, scratch+4)
	p[4], p[5] = getU32(m, scratch+8), getU32(m, scratch+12)
	if r.Finalizing {
		p[6] = 1
	}
	p[7], p[8] = NewString(m, r.Now)
	p[9], p[10] = NewString(m, r.Config)
	return p
}

// RequestFromParams lifts the flat parameters of `reconcile`.
func RequestFromParams(m Memory, p [11]uint32) Request {
	scratch := m.Alloc(16, 4)
	putU32(m, scratch, p[2])
	putU32(m, scratch+4, p[3])
	putU32(m, scratch+8, p[4])
	putU32(m, scratch+12, p[5])
	return Request{
		Parent:     String(m, p[0], p[1]),
		Children:   getStrings(m, scratch),
		Related:    getStrings(m, scratch+8),
		Finalizing: p[6] != 0,
		Now:        String(m, p[7], p[8]),
		Config:     String(m, p[9], p[10]),
	}
}

// Event is `event`: 20 bytes, aligned to 4. Type 0 is normal, 1 warning.
type Event struct {
	Type            uint8
	Reason, Message string
}

// Response is `response`: 72 bytes, aligned to 8.
type Response struct {
	Children            []string
	Status              *string
	Labels, Annotations [][2]string
	RequeueAfterMs      *uint64
	Events              []Event
	Finalized           bool
}

// Result is `result<response, reconcile-error>`: 80 bytes, aligned to 8. Err is nil
// for `ok`.
type Result struct {
	Ok  Response
	Err *ReconcileError
}

// ReconcileError is `reconcile-error`.
type ReconcileError struct {
	Message   string
	Retryable bool
}

// ResultSize and ResultAlign are the size and alignment of a lowered Result.
const (
	ResultSize  = 80
	ResultAlign = 8
)

// PutResult lowers r at `at`.
func PutResult(m Memory, at uint32, r Result) {
	if r.Err != nil {
		putU8(m, at, 1)
		putString(m, at+8, r.Err.Message)
		putBool(m, at+16, r.Err.Retryable)
		return
	}
	putU8(m, at, 0)
	at += 8
	resp := r.Ok
	putStrings(m, at, resp.Children)
	if resp.Status == nil {
		putU8(m, at+8, 0)
	} else {
		putU8(m, at+8, 1)
		putString(m, at+12, *resp.Status)
	}
	putPairs(m, at+20, resp.Labels)
	putPairs(m, at+28, resp.Annotations)
	if resp.RequeueAfterMs == nil {
		putU8(m, at+40, 0)
	} else {
		putU8(m, at+40, 1)
		putU64(m, at+48, *resp.RequeueAfterMs)
	}
	putList(m, at+56, len(resp.Events), 20, 4, func(e uint32, i int) {
		ev := resp.Events[i]
		putU8(m, e, ev.Type)
		putString(m, e+4, ev.Reason)
		putString(m, e+12, ev.Message)
	})
	putBool(m, at+64, resp.Finalized)
}

// GetResult lifts the result at `at`.
func GetResult(m Memory, at uint32) Result {
	if getU8(m, at) != 0 {
		return Result{Err: &ReconcileError{getString(m, at+8), getBool(m, at+16)}}
	}
	at += 8
	var resp Response
	resp.Children = getStrings(m, at)
	if getU8(m, at+8) != 0 {
		s := getString(m, at+12)
		resp.Status = &s
	}
	resp.Labels = getPairs(m, at+20)
	resp.Annotations = getPairs(m, at+28)
	if getU8(m, at+40) != 0 {
		v := getU64(m, at+48)
		resp.RequeueAfterMs = &v
	}
	getList(m, at+56, 20, func(e uint32) {
		resp.Events = append(resp.Events, Event{getU8(m, e), getString(m, e+4), getString(m, e+12)})
	})
	resp.Finalized = getBool(m, at+64)
	return Result{Ok: resp}
}

// Exports are the component's exports at the canonical ABI level, set by the SDK's
// root package: the test harness calls them with an Arena as the component's exports
// are called with the linear memory.
var Exports struct {
	// Use makes plugin (a kubewasm.Reconciler) the one the exports run.
	Use func(plugin any)
	// Describe returns the address of the lowered manifest.
	Describe func(m Memory) uint32
	// Related takes the parent's JSON and returns the address of a `list<query>`.
	Related func(m Memory, ptr, n uint32) uint32
	// Reconcile takes the flat request and returns the address of the result.
	Reconcile func(m Memory, params [11]uint32) uint32
}
