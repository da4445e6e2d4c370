package kubewasm

import (
	"fmt"
	"slices"
	"strings"
)

// Limits are default sandbox limits; the operator's configuration may lower them,
// never raise them. Nil leaves the host's default (1000 ms, 64 MiB).
type Limits struct {
	// DeadlineMs is the CPU deadline of one call, in milliseconds.
	DeadlineMs *uint32
	// MemoryMiB is the largest memory the plugin may grow to, in MiB.
	MemoryMiB *uint32
}

// Uint32 is a pointer to v, for [Limits].
func Uint32(v uint32) *uint32 { return &v }

// Watch is a kind whose changes the plugin's Handle receives, object by object: every
// object of Kind, or those the selectors (Kubernetes' text form) select.
type Watch struct {
	Kind KindRef
	// LabelSelector selects objects by their labels (`app=web,tier notin (db)`); "" all.
	LabelSelector string
	// FieldSelector selects objects by their fields (`metadata.name=web`); "" all.
	FieldSelector string
}

// Watching is a watch of every object of kind.
func Watching(kind KindRef) Watch { return Watch{Kind: kind} }

// Labels is w selecting only objects whose labels match selector.
func (w Watch) Labels(selector string) Watch {
	w.LabelSelector = selector
	return w
}

// Fields is w selecting only objects whose fields match selector.
func (w Watch) Fields(selector string) Watch {
	w.FieldSelector = selector
	return w
}

// Manifest is what a plugin reconciles, owns, reads, handles and reaches: returned by
// Describe.
//
// A reconciler names its Parent; an event handler its Watches (each change of an object
// they select goes to Handle); a plugin may be both, and one that only handles events
// leaves Parent zero. Children is an allow-list: an answer holding any other kind is
// refused and nothing is written. Outbound lists the URLs the plugin needs to reach
// (Spin's `allowed_outbound_hosts` syntax: `https://hooks.slack.com`,
// `http://*.svc.cluster.local:8080`); the operator grants them, or fewer. CRDs holds
// CustomResourceDefinitions as YAML or JSON text; embed them with `//go:embed crd.yaml`:
// the component has no filesystem when it runs.
type Manifest struct {
	// Name is a DNS label; the host's field manager is `kubewasm.<name>`.
	Name string
	// Parent is the kind the plugin reconciles; zero for a plugin that only handles
	// events.
	Parent   KindRef
	Children []KindRef
	Related  []KindRef
	// Finalizer asks for a last reconcile (Request.Finalizing) before the parent is deleted.
	Finalizer bool
	CRDs      []string
	Limits    Limits
	// Watches are the kinds whose added, updated and deleted objects Handle receives.
	Watches []Watch
	// Outbound are the URLs the plugin needs to reach; the operator must grant them too.
	Outbound []string
	// KeepUnlisted are child kinds whose observed children an answer may leave out:
	// those it omits are kept, not deleted (a CronJob's running Jobs). Each must be
	// among Children.
	KeepUnlisted []KindRef
	// Defaults are the writes the plugin's [Defaulter] may change before they are
	// stored (a mutating webhook).
	Defaults []AdmissionRule
	// Validates are the writes the plugin's [Validator] may refuse (a validating webhook).
	Validates []AdmissionRule
	// Converts says the plugin's [Converter] converts the parent between the versions
	// its CRD serves (a conversion webhook).
	Converts bool
}

// HasParent says whether the plugin reconciles a kind.
func (m Manifest) HasParent() bool { return m.Parent != KindRef{} }

// FieldManager is the host's server-side apply field manager for this plugin.
func (m Manifest) FieldManager() string { return "kubewasm." + m.Name }

// FinalizerName is the finalizer the host puts on parents when Finalizer is set.
func (m Manifest) FinalizerName() string { return "kubewasm.io/" + m.Name }

// ManifestError is a manifest the host would refuse to load; the message names the field.
type ManifestError struct{ Message string }

func (e *ManifestError) Error() string { return e.Message }

// Check is what the host checks at load (but parsing the CRDs).
func (m Manifest) Check() error {
	if !isDNSLabel(m.Name) {
		return &ManifestError{fmt.Sprintf("name %s must be a DNS label (lower-case letters, digits and '-', at most 63)", debug(m.Name))}
	}
	if !m.HasParent() {
		if len(m.Watches) == 0 && len(m.Defaults) == 0 && len(m.Validates) == 0 {
			return &ManifestError{"a plugin needs a parent to reconcile, watches to handle or writes to admit (defaults, validates)"}
		}
		if len(m.Children) > 0 || len(m.Related) > 0 || m.Finalizer {
			return &ManifestError{"children, related and finalizer belong to a reconciler: they need a parent"}
		}
		if m.Converts {
			return &ManifestError{"converts: only a parent the plugin defines can be converted"}
		}
	}
	type named struct {
		where string
		kind  KindRef
	}
	var kinds []named
	if m.HasParent() {
		kinds = append(kinds, named{"parent", m.Parent})
	}
	for _, k := range m.Children {
		kinds = append(kinds, named{"children", k})
	}
	for _, k := range m.Related {
		kinds = append(kinds, named{"related", k})
	}
	for _, w := range m.Watches {
		kinds = append(kinds, named{"watches", w.Kind})
	}
	for _, k := range m.KeepUnlisted {
		kinds = append(kinds, named{"keepUnlisted", k})
	}
	for _, r := range m.Defaults {
		kinds = append(kinds, named{"defaults", r.Kind})
	}
	for _, r := range m.Validates {
		kinds = append(kinds, named{"validates", r.Kind})
	}
	for _, k := range kinds {
		if k.kind.Version == "" || k.kind.Kind == "" || k.kind.Plural == "" {
			return &ManifestError{fmt.Sprintf("%s: %s needs a version, a kind and a plural", k.where, k.kind)}
		}
	}
	for _, k := range m.KeepUnlisted {
		if !slices.Contains(m.Children, k) {
			return &ManifestError{fmt.Sprintf("keepUnlisted: %s is not among the plugin's children", k)}
		}
	}
	for _, rules := range []struct {
		where string
		rules []AdmissionRule
	}{{"defaults", m.Defaults}, {"validates", m.Validates}} {
		for i, r := range rules.rules {
			for _, op := range r.Operations {
				if !slices.Contains(operations, op) {
					return &ManifestError{fmt.Sprintf("%s[%d].operations: %q is none of CREATE, UPDATE, DELETE, CONNECT", rules.where, i, op)}
				}
			}
		}
	}
	if m.Converts && len(m.CRDs) == 0 {
		return &ManifestError{"converts: the plugin converts its parent between its CRD's versions, but defines no CRD"}
	}
	for _, pattern := range m.Outbound {
		if strings.TrimSpace(pattern) == "" {
			return &ManifestError{fmt.Sprintf("outbound: %s is empty; give scheme://host[:port]", debug(pattern))}
		}
	}
	zero := func(v *uint32) bool { return v != nil && *v == 0 }
	if zero(m.Limits.DeadlineMs) || zero(m.Limits.MemoryMiB) {
		return &ManifestError{"limits: a deadline or memory limit of 0 leaves nothing to run"}
	}
	return nil
}
