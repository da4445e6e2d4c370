package kubewasm

import "fmt"

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

// Manifest is what a plugin reconciles, owns and reads: returned by Describe.
//
// Children is an allow-list: an answer holding any other kind is refused and nothing
// is written. CRDs holds CustomResourceDefinitions as YAML or JSON text; embed them
// with `//go:embed crd.yaml`: the component has no filesystem when it runs.
type Manifest struct {
	// Name is a DNS label; the host's field manager is `kubewasm.<name>`.
	Name     string
	Parent   KindRef
	Children []KindRef
	Related  []KindRef
	// Finalizer asks for a last reconcile (Request.Finalizing) before the parent is deleted.
	Finalizer bool
	CRDs      []string
	Limits    Limits
}

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
	type named struct {
		where string
		kind  KindRef
	}
	kinds := []named{{"parent", m.Parent}}
	for _, k := range m.Children {
		kinds = append(kinds, named{"children", k})
	}
	for _, k := range m.Related {
		kinds = append(kinds, named{"related", k})
	}
	for _, k := range kinds {
		if k.kind.Version == "" || k.kind.Kind == "" || k.kind.Plural == "" {
			return &ManifestError{fmt.Sprintf("%s: %s needs a version, a kind and a plural", k.where, k.kind)}
		}
	}
	zero := func(v *uint32) bool { return v != nil && *v == 0 }
	if zero(m.Limits.DeadlineMs) || zero(m.Limits.MemoryMiB) {
		return &ManifestError{"limits: a deadline or memory limit of 0 leaves nothing to run"}
	}
	return nil
}
