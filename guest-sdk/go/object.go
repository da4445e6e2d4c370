package kubewasm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Object is a Kubernetes object as the host hands it over: JSON decoded into a map
// (numbers as [json.Number], so that integers keep every digit), with accessors for
// what plugins read most.
//
// Every accessor tolerates a missing field (Name is then "", Labels empty), as the host
// always sends whole objects but a hand-made test input may not.
type Object map[string]any

// asMap is v as a JSON object, or nil.
func asMap(v any) map[string]any {
	switch m := v.(type) {
	case map[string]any:
		return m
	case Object:
		return m
	}
	return nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// APIVersion is `apiVersion`.
func (o Object) APIVersion() string { return str(o["apiVersion"]) }

// Kind is `kind`.
func (o Object) Kind() string { return str(o["kind"]) }

// Metadata is `metadata`, or nil.
func (o Object) Metadata() map[string]any { return asMap(o["metadata"]) }

// Name is `metadata.name`.
func (o Object) Name() string { return str(o.Metadata()["name"]) }

// Namespace is `metadata.namespace`; "" for a cluster-scoped object.
func (o Object) Namespace() string { return str(o.Metadata()["namespace"]) }

// UID is `metadata.uid`.
func (o Object) UID() string { return str(o.Metadata()["uid"]) }

// Labels is a copy of `metadata.labels` (its string values).
func (o Object) Labels() map[string]string { return stringMap(o.Metadata()["labels"]) }

// Annotations is a copy of `metadata.annotations` (its string values).
func (o Object) Annotations() map[string]string { return stringMap(o.Metadata()["annotations"]) }

// Spec is `.spec`, or nil.
func (o Object) Spec() map[string]any { return asMap(o["spec"]) }

// Status is `.status`, or nil.
func (o Object) Status() map[string]any { return asMap(o["status"]) }

// Generation is `metadata.generation`, or 0.
func (o Object) Generation() int64 {
	n, _ := toInt(o.Metadata()["generation"])
	return n
}

// DeletionTimestamp is when the object's deletion was asked for; zero when it is not
// being deleted.
func (o Object) DeletionTimestamp() time.Time {
	t, _ := time.Parse(time.RFC3339, str(o.Metadata()["deletionTimestamp"]))
	return t
}

// Describe is "Kind namespace/name", for messages.
func (o Object) Describe() string {
	if ns := o.Namespace(); ns != "" {
		return o.Kind() + " " + ns + "/" + o.Name()
	}
	return o.Kind() + " " + o.Name()
}

// ControllerUID is the uid in the ownerReference with `controller: true`, or "".
func (o Object) ControllerUID() string {
	refs, _ := o.Metadata()["ownerReferences"].([]any)
	for _, ref := range refs {
		if r := asMap(ref); r["controller"] == true {
			return str(r["uid"])
		}
	}
	return ""
}

// IsControlledBy says whether owner is this object's controller.
func (o Object) IsControlledBy(owner Object) bool {
	return owner.UID() != "" && o.ControllerUID() == owner.UID()
}

// ChildMeta is metadata for a child of this object: name, this object's namespace and
// a copy of its labels. The host adds the controller ownerReference when it applies the
// child; the plugin need not.
func (o Object) ChildMeta(name string) map[string]any {
	meta := map[string]any{"name": name}
	if labels := o.Labels(); len(labels) > 0 {
		copied := make(map[string]any, len(labels))
		for k, v := range labels {
			copied[k] = v
		}
		meta["labels"] = copied
	}
	if ns := o.Namespace(); ns != "" {
		meta["namespace"] = ns
	}
	return meta
}

// ChildMetaIn is ChildMeta with another namespace: what a cluster-scoped parent needs
// for its namespaced children.
func (o Object) ChildMetaIn(name, namespace string) map[string]any {
	meta := o.ChildMeta(name)
	meta["namespace"] = namespace
	return meta
}

// Field is the value at path (`spec.ports[0].port`), or a [Permanent] error naming the
// object and the path when it is missing (JSON null counts as missing): the parent is
// wrong, and retrying will not help until it changes.
func (o Object) Field(path string) (any, error) {
	value, walked, ok := o.lookup(path)
	if !ok {
		return nil, Permanent("%s: %s: missing field", o.Describe(), walked)
	}
	return value, nil
}

// Has says whether path holds a value (not null).
func (o Object) Has(path string) bool {
	_, _, ok := o.lookup(path)
	return ok
}

// String is the string at path; a missing field or another type is a [Permanent]
// error naming both.
func (o Object) String(path string) (string, error) {
	v, err := o.Field(path)
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", o.wrongType(path, "a string", v)
	}
	return s, nil
}

// Int is the integer at path; a missing field or another type is a [Permanent] error
// naming both.
func (o Object) Int(path string) (int64, error) {
	v, err := o.Field(path)
	if err != nil {
		return 0, err
	}
	n, ok := toInt(v)
	if !ok {
		return 0, o.wrongType(path, "an integer", v)
	}
	return n, nil
}

// IntOr is the integer at path, or def when it is missing; another type is a
// [Permanent] error.
func (o Object) IntOr(path string, def int64) (int64, error) {
	if !o.Has(path) {
		return def, nil
	}
	return o.Int(path)
}

// StringOr is the string at path, or def when it is missing.
func (o Object) StringOr(path string, def string) (string, error) {
	if !o.Has(path) {
		return def, nil
	}
	return o.String(path)
}

// Bool is the boolean at path.
func (o Object) Bool(path string) (bool, error) {
	v, err := o.Field(path)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, o.wrongType(path, "a boolean", v)
	}
	return b, nil
}

// List is the list at path, or nil when it is missing; another type is a [Permanent]
// error.
func (o Object) List(path string) ([]any, error) {
	if !o.Has(path) {
		return nil, nil
	}
	v, _ := o.Field(path)
	l, ok := v.([]any)
	if !ok {
		return nil, o.wrongType(path, "a list", v)
	}
	return l, nil
}

// Decode decodes the value at path into v (a pointer, as json.Unmarshal takes); a
// missing field or a value that does not fit is a [Permanent] error naming the path.
func (o Object) Decode(path string, v any) error {
	value, err := o.Field(path)
	if err != nil {
		return err
	}
	text, err := json.Marshal(value)
	if err == nil {
		err = json.Unmarshal(text, v)
	}
	if err != nil {
		return Permanent("%s: %s: %v", o.Describe(), path, err)
	}
	return nil
}

func (o Object) wrongType(path, want string, found any) error {
	return Permanent("%s: %s: expected %s, found %s", o.Describe(), path, want, jsonType(found))
}

// lookup walks path; walked is the part of it that was found, up to the missing step.
func (o Object) lookup(path string) (value any, walked string, ok bool) {
	value = map[string]any(o)
	for _, part := range strings.Split(path, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if name != "" {
			if walked != "" {
				walked += "."
			}
			walked += name
			value = asMap(value)[name]
			if value == nil {
				return nil, walked, false
			}
		}
		for rest != "" {
			index, after, _ := strings.Cut(rest, "]")
			rest = strings.TrimPrefix(after, "[")
			walked += "[" + index + "]"
			i, err := strconv.Atoi(index)
			list, isList := value.([]any)
			if err != nil || !isList || i < 0 || i >= len(list) {
				return nil, walked, false
			}
			value = list[i]
			if value == nil {
				return nil, walked, false
			}
		}
	}
	return value, walked, true
}

func toInt(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case int:
		return int64(n), true
	case int64:
		return n, true
	case float64:
		return int64(n), float64(int64(n)) == n
	}
	return 0, false
}

func jsonType(v any) string {
	switch n := v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any, Object:
		return "an object"
	case json.Number:
		if _, err := n.Int64(); err == nil {
			return "an integer"
		}
		return "a number"
	case int, int64:
		return "an integer"
	case float64:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

func stringMap(v any) map[string]string {
	out := map[string]string{}
	for k, v := range asMap(v) {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// ParseJSON decodes JSON text as the SDK hands objects over: numbers as json.Number.
func ParseJSON(text string) (any, error) {
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// ToJSON is v as compact JSON with object keys sorted (as the host's render prints
// them) and without Go's HTML escaping (as the host measures sizes).
func ToJSON(v any) (string, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}
