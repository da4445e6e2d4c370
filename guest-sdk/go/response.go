package kubewasm

import (
	"sort"
	"time"
)

// AppliedHash is the annotation the host stamps on each child it applies.
const AppliedHash = "kubewasm.io/applied-hash"

// What the API server and the host set on an object, and a kept child does without.
var serverMetadata = []string{
	"resourceVersion", "managedFields", "creationTimestamp", "deletionTimestamp",
	"deletionGracePeriodSeconds", "generation", "selfLink", "ownerReferences",
}

// EventType says whether an event is routine or calls for attention.
type EventType string

// The event types.
const (
	Normal  EventType = "Normal"
	Warning EventType = "Warning"
)

// Event is a Kubernetes Event the host records on the parent.
type Event struct {
	Type EventType
	// Reason is an UpperCamelCase machine-readable cause, e.g. `DeploymentExists`.
	Reason  string
	Message string
}

// NormalEvent is a routine event.
func NormalEvent(reason, message string) Event { return Event{Normal, reason, message} }

// WarningEvent is an event that calls for attention.
func WarningEvent(reason, message string) Event { return Event{Warning, reason, message} }

// Response is the plugin's decision for one parent.
//
// Children is the FULL desired set: an observed child the parent controls that is
// missing from it is deleted by the host. Likewise labels and annotations set by an
// earlier response and missing from this one are removed from the parent. Set the
// fields, or add with the methods, which return the response so that they chain.
type Response struct {
	// Children are the desired children: anything that encodes to a JSON object with
	// apiVersion, kind and metadata.name (a map, or a struct with json tags).
	Children []any
	// Status is the desired `.status` of the parent; nil leaves it alone.
	Status      any
	Labels      map[string]string
	Annotations map[string]string
	// RequeueAfter asks for another reconcile after this long, even if nothing
	// changes; 0 asks for none.
	RequeueAfter time.Duration
	Events       []Event
	// Finalized, when finalizing, says the cleanup is done: the parent may go.
	Finalized bool
	// Delete holds the metadata.uids of observed children to delete, of any kind.
	Delete []string
}

// NewResponse is an empty response: no children, status left alone.
func NewResponse() *Response { return &Response{} }

// Child adds a desired child (see [Object.ChildMeta] for its metadata).
func (r *Response) Child(obj any) *Response {
	r.Children = append(r.Children, obj)
	return r
}

// DeleteChild deletes an observed child, whatever its kind: how a plugin whose manifest
// keeps a kind unlisted still deletes the children it means to (a CronJob's finished Jobs
// beyond its history limit). The child goes by its metadata.uid; one also returned or
// kept is refused.
func (r *Response) DeleteChild(observed Object) *Response {
	r.Delete = append(r.Delete, observed.UID())
	return r
}

// Keep keeps an observed child as it is: the host neither prunes nor writes it, so
// what others changed in it stays. The child is returned with its metadata.uid, which
// marks it as kept, and without what the API server and the host set.
func (r *Response) Keep(observed Object) *Response {
	child, _ := deepCopy(map[string]any(observed)).(map[string]any)
	if meta := asMap(child["metadata"]); meta != nil {
		for _, name := range serverMetadata {
			delete(meta, name)
		}
		if annotations := asMap(meta["annotations"]); annotations != nil {
			delete(annotations, AppliedHash)
			if len(annotations) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	delete(child, "status")
	r.Children = append(r.Children, child)
	return r
}

// WithStatus sets the desired `.status` of the parent.
func (r *Response) WithStatus(status any) *Response {
	r.Status = status
	return r
}

// Label sets a label on the parent.
func (r *Response) Label(key, value string) *Response {
	if r.Labels == nil {
		r.Labels = map[string]string{}
	}
	r.Labels[key] = value
	return r
}

// Annotation sets an annotation on the parent.
func (r *Response) Annotation(key, value string) *Response {
	if r.Annotations == nil {
		r.Annotations = map[string]string{}
	}
	r.Annotations[key] = value
	return r
}

// Event records an event on the parent.
func (r *Response) Event(e Event) *Response {
	r.Events = append(r.Events, e)
	return r
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, v := range t {
			out[k] = deepCopy(v)
		}
		return out
	case Object:
		return deepCopy(map[string]any(t))
	case []any:
		out := make([]any, len(t))
		for i, v := range t {
			out[i] = deepCopy(v)
		}
		return out
	}
	return v
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
