package kubewasm

// CustomResourceDefinitions generated from the plugin's Go types by reflection, with
// Kubebuilder's validation markers written as struct tags: a plugin has no code
// generator to read `// +kubebuilder:` comments, and the component keeps no source.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// CustomResource is one version of a custom kind: its schema comes from the Spec and
// Status types, whose fields carry Kubebuilder's markers as a `kubewasm` tag:
//
//	type AppSpec struct {
//		Image    string `json:"image" kubewasm:"minLength=1"`
//		Replicas int32  `json:"replicas,omitempty" kubewasm:"minimum=0,default=1"`
//		Tier     string `json:"tier,omitempty" kubewasm:"enum=gold|silver"`
//		Name     string `json:"name" kubewasm:"maxLength=63,pattern=^[a-z][a-z0-9-]*$"`
//	}
//
// The tag's markers, comma-separated: minimum, maximum, exclusiveMinimum,
// exclusiveMaximum, multipleOf, minLength, maxLength, minItems, maxItems, format,
// enum (values split by |), default (JSON, or a bare string), optional, required,
// preserveUnknownFields, and pattern, which is last and takes the rest of the tag (a
// regular expression may hold commas). A `description` tag is the field's description.
//
// A field is required unless its json tag says omitempty or omitzero, it is a pointer,
// or it has a default or the optional marker, as controller-gen decides. Types map as
// controller-gen maps them: int32 and int64 to integers of that format, floats to
// number, []byte to a base64 string, time.Time to a date-time string, maps with string
// keys to objects of their values, `any` and json.RawMessage to a field the API server
// keeps whatever it holds; embedded structs lend their fields.
type CustomResource struct {
	Group   string
	Version string
	Kind    string
	// Plural is the lower-cased Kind plus "s" unless set.
	Plural string
	// ClusterScoped makes a kind whose objects live outside namespaces.
	ClusterScoped bool
	// Spec is a value of the spec's struct type, e.g. AppSpec{}.
	Spec any
	// Status is a value of the status's struct type, which also turns the status
	// subresource on; nil for none.
	Status         any
	ShortNames     []string
	Categories     []string
	PrinterColumns []PrinterColumn
	// NotServed stops the API server serving this version (still convertible).
	NotServed  bool
	Deprecated bool
}

// PrinterColumn is `+kubebuilder:printcolumn`: a column `kubectl get` shows.
type PrinterColumn struct {
	Name string `json:"name"`
	// Type is string, integer, number, boolean or date.
	Type        string `json:"type"`
	JSONPath    string `json:"jsonPath"`
	Description string `json:"description,omitempty"`
	Priority    int32  `json:"priority,omitempty"`
	Format      string `json:"format,omitempty"`
}

// CRDError is a type or tag the generator cannot express; it names the field.
type CRDError struct {
	Path    string
	Message string
}

func (e *CRDError) Error() string { return e.Path + ": " + e.Message }

func (r CustomResource) plural() string {
	if r.Plural != "" {
		return r.Plural
	}
	return strings.ToLower(r.Kind) + "s"
}

// KindRef is the kind, for a manifest's Parent.
func (r CustomResource) KindRef() KindRef {
	return KindRef{r.Group, r.Version, r.Kind, r.plural(), !r.ClusterScoped}
}

// Schema is the version's openAPIV3Schema.
func (r CustomResource) Schema() (map[string]any, error) {
	if r.Spec == nil {
		return nil, &CRDError{r.Kind, "no Spec type"}
	}
	spec, err := schemaOf(reflect.TypeOf(r.Spec), r.Kind+".spec")
	if err != nil {
		return nil, err
	}
	properties := map[string]any{"spec": spec}
	if r.Status != nil {
		status, err := schemaOf(reflect.TypeOf(r.Status), r.Kind+".status")
		if err != nil {
			return nil, err
		}
		properties["status"] = status
	}
	return map[string]any{"type": "object", "properties": properties}, nil
}

// CRD is the CRD of this one version, as JSON text for a manifest's CRDs.
func (r CustomResource) CRD() (string, error) { return CRD(r.Version, r) }

// MustCRD is CRD for a Describe that cannot return an error: it panics on a type the
// generator cannot express, which the host reports as the plugin's load failure.
func (r CustomResource) MustCRD() string {
	text, err := r.CRD()
	if err != nil {
		panic(err)
	}
	return text
}

// CRD is the CRD of one kind in several versions, storage naming the stored one, as
// JSON text for a manifest's CRDs.
func CRD(storage string, versions ...CustomResource) (string, error) {
	if len(versions) == 0 {
		return "", &CRDError{"crd", "no version given"}
	}
	first := versions[0]
	var names, shortNames, categories []string
	var out []any
	for _, v := range versions {
		if v.Group != first.Group || v.Kind != first.Kind || v.plural() != first.plural() || v.ClusterScoped != first.ClusterScoped {
			return "", &CRDError{"crd", fmt.Sprintf("version %s is not of %s.%s", v.Version, first.Kind, first.Group)}
		}
		if slices.Contains(names, v.Version) {
			return "", &CRDError{"crd", fmt.Sprintf("version %s is given twice", v.Version)}
		}
		names = append(names, v.Version)
		shortNames = appendNew(shortNames, v.ShortNames)
		categories = appendNew(categories, v.Categories)
		schema, err := v.Schema()
		if err != nil {
			return "", err
		}
		version := map[string]any{
			"name": v.Version, "served": !v.NotServed, "storage": v.Version == storage,
			"schema": map[string]any{"openAPIV3Schema": schema},
		}
		if v.Deprecated {
			version["deprecated"] = true
		}
		if v.Status != nil {
			version["subresources"] = map[string]any{"status": map[string]any{}}
		}
		if len(v.PrinterColumns) > 0 {
			version["additionalPrinterColumns"] = v.PrinterColumns
		}
		out = append(out, version)
	}
	if !slices.Contains(names, storage) {
		return "", &CRDError{"crd", fmt.Sprintf("the storage version %q is not among %s", storage, strings.Join(names, ", "))}
	}
	specNames := map[string]any{
		"kind": first.Kind, "listKind": first.Kind + "List", "plural": first.plural(), "singular": strings.ToLower(first.Kind),
	}
	if len(shortNames) > 0 {
		specNames["shortNames"] = shortNames
	}
	if len(categories) > 0 {
		specNames["categories"] = categories
	}
	scope := "Namespaced"
	if first.ClusterScoped {
		scope = "Cluster"
	}
	text, err := json.Marshal(map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": first.plural() + "." + first.Group},
		"spec":       map[string]any{"group": first.Group, "names": specNames, "scope": scope, "versions": out},
	})
	return string(text), err
}

func appendNew(to, from []string) []string {
	for _, s := range from {
		if !slices.Contains(to, s) {
			to = append(to, s)
		}
	}
	return to
}

var (
	timeType = reflect.TypeFor[time.Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

// schemaOf is the schema of a type, without the markers of the field holding it.
func schemaOf(t reflect.Type, path string) (map[string]any, error) {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}, nil
	case t == rawType || t.Kind() == reflect.Interface:
		return map[string]any{"x-kubernetes-preserve-unknown-fields": true}, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem(), path)
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Int32, reflect.Uint32, reflect.Int16, reflect.Uint16, reflect.Int8, reflect.Uint8:
		return map[string]any{"type": "integer", "format": "int32"}, nil
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64:
		return map[string]any{"type": "integer", "format": "int64"}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}, nil
		}
		items, err := schemaOf(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, &CRDError{path, "an object's keys are strings, not " + t.Key().String()}
		}
		values, err := schemaOf(t.Elem(), path+"[*]")
		if err != nil {
			return nil, err
		}
		if _, keepAll := values["x-kubernetes-preserve-unknown-fields"]; keepAll {
			return map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}, nil
		}
		return map[string]any{"type": "object", "additionalProperties": values}, nil
	case reflect.Struct:
		return structSchema(t, path)
	}
	return nil, &CRDError{path, "no schema for the type " + t.String()}
}

func structSchema(t reflect.Type, path string) (map[string]any, error) {
	properties := map[string]any{}
	required := []string{}
	if err := addFields(t, path, properties, &required); err != nil {
		return nil, err
	}
	schema := map[string]any{"type": "object", "properties": properties}
	if len(required) > 0 {
		schema["required"] = required
	}
	return schema, nil
}

// addFields adds a struct's exported fields, and those of its embedded structs, as
// encoding/json reads them.
func addFields(t reflect.Type, path string, properties map[string]any, required *[]string) error {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, options, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && options == "" {
			continue
		}
		if f.Anonymous && name == "" {
			embedded := f.Type
			if embedded.Kind() == reflect.Pointer {
				embedded = embedded.Elem()
			}
			if embedded.Kind() == reflect.Struct {
				if err := addFields(embedded, path, properties, required); err != nil {
					return err
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		fieldPath := path + "." + name
		schema, err := schemaOf(f.Type, fieldPath)
		if err != nil {
			return err
		}
		optional := f.Type.Kind() == reflect.Pointer || slices.ContainsFunc(strings.Split(options, ","), func(o string) bool {
			return o == "omitempty" || o == "omitzero"
		})
		markers, err := applyMarkers(schema, f.Type, f.Tag.Get("kubewasm"), fieldPath)
		if err != nil {
			return err
		}
		if description := f.Tag.Get("description"); description != "" {
			schema["description"] = description
		}
		_, defaulted := schema["default"]
		switch {
		case markers.required:
			optional = false
		case markers.optional || defaulted:
			optional = true
		}
		properties[name] = schema
		if !optional {
			*required = append(*required, name)
		}
	}
	return nil
}

type fieldMarkers struct{ optional, required bool }

var numberMarkers = []string{"minimum", "maximum", "multipleOf"}
var countMarkers = []string{"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"}

// applyMarkers sets the schema keywords a `kubewasm` tag names.
func applyMarkers(schema map[string]any, t reflect.Type, tag, path string) (fieldMarkers, error) {
	var m fieldMarkers
	for tag != "" {
		var item string
		if strings.HasPrefix(tag, "pattern=") {
			item, tag = tag, ""
		} else {
			item, tag, _ = strings.Cut(tag, ",")
		}
		key, value, hasValue := strings.Cut(item, "=")
		bad := func(why string) (fieldMarkers, error) {
			return m, &CRDError{path, fmt.Sprintf("marker %q: %s", item, why)}
		}
		switch {
		case key == "optional" && !hasValue:
			m.optional = true
		case key == "required" && !hasValue:
			m.required = true
		case key == "preserveUnknownFields" && !hasValue:
			schema["x-kubernetes-preserve-unknown-fields"] = true
		case !hasValue:
			return bad("unknown marker, or a value is missing")
		case slices.Contains(numberMarkers, key):
			n, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return bad("not a number")
			}
			schema[key] = n
		case key == "exclusiveMinimum" || key == "exclusiveMaximum":
			n, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return bad("not a number")
			}
			schema[strings.ToLower(key[9:10])+key[10:]] = n
			schema[key] = true
		case slices.Contains(countMarkers, key):
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil || n < 0 {
				return bad("not a count")
			}
			schema[key] = n
		case key == "pattern" || key == "format":
			schema[key] = value
		case key == "enum":
			var values []any
			for _, v := range strings.Split(value, "|") {
				values = append(values, typedValue(v, schema))
			}
			schema["enum"] = values
		case key == "default":
			schema["default"] = typedValue(value, schema)
		default:
			return bad("unknown marker")
		}
	}
	return m, nil
}

// typedValue reads a marker's value as JSON when it parses (1, true, ["a"]), and as a
// string otherwise or when the field is a string: `default=1` on a string is "1".
func typedValue(text string, schema map[string]any) any {
	if schema["type"] == "string" {
		return text
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return text
	}
	return v
}
