package kubewasm

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Admission and conversion of the plugin's kinds: what Kubebuilder's defaulting,
// validating and conversion webhooks do, for the writes the manifest names in Defaults
// and Validates and the versions of its parent when it Converts. A plugin implements
// what its manifest declares: [Defaulter], [Validator], [Converter].

// Defaulter is a plugin that completes writes before they are stored (a mutating
// webhook, Kubebuilder's CustomDefaulter).
type Defaulter interface {
	Plugin
	// Default changes req.Object in place (the object is stored as it leaves it), or
	// returns a [Defaulted] with a whole object or a JSON patch, and warnings for the
	// client. An error refuses the write: a [*Denial] as it is, any other with its
	// message.
	Default(req *AdmissionRequest) (Defaulted, error)
}

// Validator is a plugin that may refuse writes (a validating webhook, Kubebuilder's
// CustomValidator).
type Validator interface {
	Plugin
	// Validate allows the write (a nil error) or refuses it (a [*Denial], or any other
	// error with its message); the warnings are shown to the client either way.
	Validate(req *AdmissionRequest) (warnings []string, err error)
}

// Converter is a plugin that converts its parent between the versions its CRD serves
// (a conversion webhook, Kubebuilder's Convertible).
type Converter interface {
	Plugin
	// Convert is object in desiredAPIVersion (`group/version`). Only labels and
	// annotations of its metadata may change. An error fails the read or write that
	// needed the conversion.
	Convert(object Object, desiredAPIVersion string) (Object, error)
}

// Operation is a write the API server asks about, as AdmissionReview spells it.
type Operation string

// The operations of an [AdmissionRule].
const (
	Create Operation = "CREATE"
	Update Operation = "UPDATE"
	Delete Operation = "DELETE"
	// Connect is `kubectl exec`, `attach`, `port-forward` and proxy requests.
	Connect Operation = "CONNECT"
)

var operations = []Operation{Create, Update, Delete, Connect}

// AdmissionRule is the writes of one kind an admission export is asked about.
type AdmissionRule struct {
	Kind KindRef
	// Operations are the operations asked about; none: Create and Update.
	Operations []Operation
}

// Admitting is the rule of operations of kind (none: creates and updates).
func Admitting(kind KindRef, ops ...Operation) AdmissionRule {
	return AdmissionRule{Kind: kind, Operations: ops}
}

// EffectiveOperations is the operations the rule asks about, the default filled in.
func (r AdmissionRule) EffectiveOperations() []Operation {
	if len(r.Operations) == 0 {
		return []Operation{Create, Update}
	}
	return r.Operations
}

// Selects says whether the rule asks about op of an object of kind.
func (r AdmissionRule) Selects(kind KindRef, op Operation) bool {
	if r.Kind.Group != kind.Group || r.Kind.Version != kind.Version || r.Kind.Kind != kind.Kind {
		return false
	}
	for _, o := range r.EffectiveOperations() {
		if o == op {
			return true
		}
	}
	return false
}

// UserInfo is who asks for a write, as the API server authenticated them.
type UserInfo struct {
	Username string
	UID      string
	Groups   []string
	// Extra holds the authenticator's extra attributes (scopes...).
	Extra map[string][]string
}

// AdmissionRequest is one write the API server asks about.
type AdmissionRequest struct {
	// UID is the AdmissionReview's: the same for every webhook one write calls.
	UID string
	// Kind is the object's kind, in the version the rule names.
	Kind      KindRef
	Operation Operation
	// SubResource is `status`, `scale`...; "" for the object itself.
	SubResource string
	// Namespace is "" for a cluster-scoped object.
	Namespace string
	// Name is "" on a create whose name the server generates.
	Name string
	// Object is the object as it would be stored; nil on delete.
	Object Object
	// OldObject is the stored object: update and delete.
	OldObject Object
	UserInfo  UserInfo
	DryRun    bool
	// Options are the write's CreateOptions, UpdateOptions or DeleteOptions, JSON decoded.
	Options any
	// Now is the host's current time; NowRFC3339 the text it was sent as.
	Now        time.Time
	NowRFC3339 string
	// Config is the plugin's settings, JSON decoded (nil if none).
	Config any
}

// DecodeConfig decodes the plugin's settings into v (a pointer).
func (r *AdmissionRequest) DecodeConfig(v any) error { return decodeConfig(r.Config, v) }

// FieldCause is one field a denial blames, as the API server's Invalid errors list them.
type FieldCause struct {
	// Field is the field's path: `spec.schedule`, `metadata.name`.
	Field   string
	Message string
	// Reason is Kubernetes' cause type: FieldValueInvalid, FieldValueRequired...
	Reason string
}

// Denial is why a write is refused: with causes, the API server answers 422 Invalid
// naming the fields (as for a schema violation); without, 403 Forbidden.
type Denial struct {
	Message string
	Causes  []FieldCause
}

// Deny is a refusal with a message (403 Forbidden unless a field is blamed).
func Deny(format string, args ...any) *Denial {
	return &Denial{Message: fmt.Sprintf(format, args...)}
}

// Invalid is a refusal blaming field (`spec.schedule`): message says why (422 Invalid).
func Invalid(field, message string) *Denial { return (&Denial{}).Field(field, message) }

// Field blames field too (FieldValueInvalid).
func (d *Denial) Field(field, message string) *Denial {
	return d.Cause(field, "FieldValueInvalid", message)
}

// Cause blames field with Kubernetes' cause type reason (FieldValueRequired...).
func (d *Denial) Cause(field, reason, message string) *Denial {
	d.Causes = append(d.Causes, FieldCause{Field: field, Message: message, Reason: reason})
	return d
}

// Error is the denial as the API server lists it: the message, then `field: message`
// per cause.
func (d *Denial) Error() string {
	parts := []string{}
	if d.Message != "" {
		parts = append(parts, d.Message)
	}
	for _, c := range d.Causes {
		parts = append(parts, c.Field+": "+c.Message)
	}
	return strings.Join(parts, ", ")
}

// AsDenial is err as a denial: the [*Denial] in its chain, or one with err's message.
func AsDenial(err error) *Denial {
	var d *Denial
	if errors.As(err, &d) {
		return d
	}
	return &Denial{Message: err.Error()}
}

// Defaulted is what defaulting did to a written object: the zero value leaves it as
// Default left req.Object; Object stores a whole object instead (the host sends the API
// server the patch to it); Patch applies an RFC 6902 JSON patch (a list of operations).
type Defaulted struct {
	Object Object
	Patch  []any
	// Warnings are shown to the client (`kubectl` prints them as `Warning: ...`).
	Warnings []string
}
