package kubewasm

// LabelOperator is how a label requirement compares a label's value.
type LabelOperator uint8

// The operators of a label requirement.
const (
	// In: the label's value is one of Values.
	In LabelOperator = iota
	// NotIn: the label is absent or its value is none of Values.
	NotIn
	// Exists: the label is present, whatever its value.
	Exists
	// DoesNotExist: the label is absent.
	DoesNotExist
)

// Requirement is one requirement of a label selector.
type Requirement struct {
	Key      string
	Operator LabelOperator
	// Values is for In and NotIn; empty otherwise.
	Values []string
}

// Matches says whether labels meet the requirement.
func (r Requirement) Matches(labels map[string]string) bool {
	value, present := labels[r.Key]
	listed := false
	for _, v := range r.Values {
		listed = listed || (present && v == value)
	}
	switch r.Operator {
	case In:
		return listed
	case NotIn:
		return !listed
	case Exists:
		return present
	default:
		return !present
	}
}

type selectorCase uint8

const (
	selectAll selectorCase = iota
	selectNames
	selectLabels
)

// Selector is which objects of a kind a [Query] selects: all of them ([All]), those
// with given names ([Names]), or those whose labels meet every requirement ([Labels],
// [Requirements]). The zero Selector selects all.
type Selector struct {
	which        selectorCase
	names        []string
	requirements []Requirement
}

// All selects every object.
func All() Selector { return Selector{} }

// Names selects the objects with these names.
func Names(names ...string) Selector { return Selector{which: selectNames, names: names} }

// Labels selects the objects carrying every label of labels.
func Labels(labels map[string]string) Selector {
	var reqs []Requirement
	for _, k := range sortedKeys(labels) {
		reqs = append(reqs, Requirement{Key: k, Operator: In, Values: []string{labels[k]}})
	}
	return Requirements(reqs...)
}

// Requirements selects the objects whose labels meet every requirement.
func Requirements(reqs ...Requirement) Selector {
	return Selector{which: selectLabels, requirements: reqs}
}

// Query is the related objects wanted for one parent: objects of Kind in Namespace
// ("" for all namespaces, or a cluster-scoped kind) that Selector selects.
type Query struct {
	Kind      KindRef
	Namespace string
	Selector  Selector
}

// Matches says whether obj (JSON) is one this query selects, as the host decides it.
func (q Query) Matches(obj any) bool {
	if !q.Kind.Matches(obj) {
		return false
	}
	o := Object(asMap(obj))
	if q.Namespace != "" && o.Namespace() != q.Namespace {
		return false
	}
	switch q.Selector.which {
	case selectNames:
		for _, n := range q.Selector.names {
			if n == o.Name() {
				return true
			}
		}
		return false
	case selectLabels:
		labels := o.Labels()
		for _, r := range q.Selector.requirements {
			if !r.Matches(labels) {
				return false
			}
		}
	}
	return true
}
