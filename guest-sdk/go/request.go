package kubewasm

import "time"

// Request is everything a plugin needs to decide, for one parent.
type Request struct {
	// Parent is the object being reconciled.
	Parent Object
	// Children are the children that exist now and are controlled by the parent, all kinds.
	Children []Object
	// Related are the objects the plugin's related queries selected.
	Related []Object
	// Finalizing says the parent is being deleted and waits on this plugin's finalizer:
	// clean up, then answer with Finalized set.
	Finalizing bool
	// Now is the host's current time (the same for the whole reconcile; the sandbox has
	// no clock). NowRFC3339 is the text it was sent as.
	Now        time.Time
	NowRFC3339 string
	// Config is the plugin's settings from the operator's configuration, JSON decoded
	// (nil if none); DecodeConfig decodes them into a struct.
	Config any
}

// DecodeConfig decodes the plugin's settings into v (a pointer); no settings leave v
// as it is.
func (r *Request) DecodeConfig(v any) error { return decodeConfig(r.Config, v) }

// ChildrenOf is the observed children of kind.
func (r *Request) ChildrenOf(kind KindRef) []Object { return filter(r.Children, kind) }

// Child is the observed child of kind named name, or nil.
func (r *Request) Child(kind KindRef, name string) Object {
	for _, o := range r.Children {
		if kind.Matches(o) && o.Name() == name {
			return o
		}
	}
	return nil
}

// RelatedOf is the related objects of kind.
func (r *Request) RelatedOf(kind KindRef) []Object { return filter(r.Related, kind) }

// FindRelated is the related object of kind named name in namespace ("" for a
// cluster-scoped kind), or nil.
func (r *Request) FindRelated(kind KindRef, namespace, name string) Object {
	for _, o := range r.Related {
		if kind.Matches(o) && o.Name() == name && o.Namespace() == namespace {
			return o
		}
	}
	return nil
}

func filter(objects []Object, kind KindRef) []Object {
	var out []Object
	for _, o := range objects {
		if kind.Matches(o) {
			out = append(out, o)
		}
	}
	return out
}
