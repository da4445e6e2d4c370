package kubewasmtest

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"kubewasm.dev/sdk"
	"kubewasm.dev/sdk/internal/cabi"
	"kubewasm.dev/sdk/internal/logsink"
	"kubewasm.dev/sdk/internal/wire"
)

// Write is one write the API server asks a plugin's admission about.
type Write struct {
	// Operation is kubewasm.Create unless OldObject is set (then kubewasm.Update).
	Operation kubewasm.Operation
	// Object is the object written (a map, or anything that encodes to a JSON object);
	// for a delete, the stored object.
	Object any
	// OldObject is the stored object of an update.
	OldObject any
	// Kind is the manifest's rule that selects Object unless set: the host asks only
	// about the writes the rules select, so a write none selects fails.
	Kind        kubewasm.KindRef
	UID         string
	SubResource string
	UserInfo    kubewasm.UserInfo
	DryRun      bool
	// Options are the write's options (nil: none).
	Options any
	// Now is the host's time, RFC 3339; default [Now].
	Now string
	// Config is the plugin's settings (nil: none).
	Config any
}

// Defaulted is what Default did to a write.
type Defaulted struct {
	// Object is the object as the API server would store it.
	Object kubewasm.Object
	// Changed says whether the plugin changed the object (a whole object or a patch).
	Changed  bool
	Patch    []any
	Warnings []string
	Logs     []Line
}

// Verdict is what Validate decided about a write.
type Verdict struct {
	// Denied is the refusal; nil: allowed.
	Denied   *kubewasm.Denial
	Warnings []string
	Logs     []Line
}

// Allowed says the write was allowed.
func (v *Verdict) Allowed() bool { return v.Denied == nil }

var operationsToWire = map[kubewasm.Operation]wire.Operation{kubewasm.Create: wire.OperationCreate, kubewasm.Update: wire.OperationUpdate, kubewasm.Delete: wire.OperationDelete, kubewasm.Connect: wire.OperationConnect}

func rulesFromWire(rules []wire.AdmissionRule) []kubewasm.AdmissionRule {
	names := map[wire.Operation]kubewasm.Operation{}
	for op, w := range operationsToWire {
		names[w] = op
	}
	var out []kubewasm.AdmissionRule
	for _, r := range rules {
		rule := kubewasm.AdmissionRule{Kind: kubewasm.KindRef(r.Kind)}
		for _, op := range r.Operations {
			rule.Operations = append(rule.Operations, names[op])
		}
		out = append(out, rule)
	}
	return out
}

// request is the contract's record of w, for the rules of plugin's manifest's which
// (`defaults`, `validates`), as the host sends it; a *HostWouldRefuse when the host would
// not load the plugin or none of the rules selects w.
func request(plugin kubewasm.Plugin, which string, w Write) (wire.AdmissionRequest, error) {
	manifest, err := Describe(plugin)
	if err != nil {
		return wire.AdmissionRequest{}, err
	}
	op := w.Operation
	if op == "" {
		op = kubewasm.Create
		if w.OldObject != nil {
			op = kubewasm.Update
		}
	}
	text, err := kubewasm.ToJSON(w.Object)
	if err != nil {
		return wire.AdmissionRequest{}, fmt.Errorf("object: %w", err)
	}
	parsed, _ := kubewasm.ParseJSON(text)
	object, _ := parsed.(map[string]any)
	subject := kubewasm.Object(object)
	kind := w.Kind
	if kind == (kubewasm.KindRef{}) {
		rules := manifest.Validates
		if which == "defaults" {
			rules = manifest.Defaults
		}
		var shown []string
		for _, r := range rules {
			if r.Kind.Matches(subject) && r.Selects(r.Kind, op) {
				kind = r.Kind
				break
			}
			var ops []string
			for _, o := range r.EffectiveOperations() {
				ops = append(ops, string(o))
			}
			shown = append(shown, strings.Join(ops, "/")+" of "+r.Kind.String())
		}
		if kind == (kubewasm.KindRef{}) {
			if len(shown) == 0 {
				shown = []string{"nothing"}
			}
			return wire.AdmissionRequest{}, &HostWouldRefuse{fmt.Sprintf("the host asks about the writes the manifest's %s select: %s, not %s of %s %s",
				which, strings.Join(shown, ", "), op, subject.APIVersion(), subject.Kind())}
		}
	}
	now := w.Now
	if now == "" {
		now = Now
	}
	req := wire.AdmissionRequest{
		Uid:       w.UID,
		Kind:      wire.KindRef(kind),
		Operation: operationsToWire[op],
		Name:      subject.Name(),
		UserInfo:  wire.UserInfo{Username: w.UserInfo.Username, Uid: w.UserInfo.UID, Groups: w.UserInfo.Groups},
		DryRun:    w.DryRun,
		Now:       now,
	}
	for k, v := range w.UserInfo.Extra {
		req.UserInfo.Extra = append(req.UserInfo.Extra, wire.Tuple2[string, []string]{F0: k, F1: v})
	}
	if ns := subject.Namespace(); ns != "" {
		req.Namespace = &ns
	}
	if w.SubResource != "" {
		req.SubResource = &w.SubResource
	}
	if op == kubewasm.Delete {
		req.OldObject = &text
	} else {
		req.Object = &text
		if w.OldObject != nil {
			old, err := kubewasm.ToJSON(w.OldObject)
			if err != nil {
				return req, fmt.Errorf("old object: %w", err)
			}
			req.OldObject = &old
		}
	}
	if req.Options, err = kubewasm.ToJSON(w.Options); err != nil {
		return req, fmt.Errorf("options: %w", err)
	}
	if req.Config, err = kubewasm.ToJSON(w.Config); err != nil {
		return req, fmt.Errorf("config: %w", err)
	}
	return req, nil
}

func denialFromWire(d wire.Denial) *kubewasm.Denial {
	out := &kubewasm.Denial{Message: d.Message}
	for _, c := range d.Causes {
		out.Causes = append(out.Causes, kubewasm.FieldCause{Field: c.Field, Message: c.Message, Reason: c.Reason})
	}
	return out
}

// Default runs plugin's Default natively, through the export code, for a write the
// manifest's Defaults select, and returns the object as the API server would store it.
// The error is the plugin's *kubewasm.Denial when it refuses the write (Defaulted then
// holds the call's Logs), or a *HostWouldRefuse when the manifest does not select the
// write or the patch does not apply.
func Default(plugin kubewasm.Defaulter, w Write) (*Defaulted, error) {
	req, err := request(plugin, "defaults", w)
	if err != nil {
		return nil, err
	}
	logsink.Take()
	answer := wire.CallAdmissionDefault(&cabi.Arena{}, req)
	out := &Defaulted{Logs: logsink.Take()}
	if answer.Err != nil {
		return out, denialFromWire(*answer.Err)
	}
	out.Warnings = answer.Ok.Warnings
	written, _ := kubewasm.ParseJSON(*req.Object)
	stored := written
	switch answer.Ok.Mutation.Tag {
	case wire.MutationObject:
		stored, err = kubewasm.ParseJSON(answer.Ok.Mutation.Object)
		out.Changed = true
	case wire.MutationPatch:
		var patch any
		if patch, err = kubewasm.ParseJSON(answer.Ok.Mutation.Patch); err == nil {
			out.Patch, _ = patch.([]any)
			out.Changed = true
			if stored, err = ApplyPatch(written, out.Patch); err != nil {
				return out, &HostWouldRefuse{"the API server would refuse the defaulting patch: " + err.Error()}
			}
		}
	}
	if err != nil {
		return out, &HostWouldRefuse{"the host would refuse the answer: " + err.Error()}
	}
	out.Object, _ = stored.(map[string]any)
	return out, nil
}

// Validate runs plugin's Validate natively, through the export code, for a write the
// manifest's Validates select, and returns its verdict; the error is a
// *HostWouldRefuse when the manifest does not select the write.
func Validate(plugin kubewasm.Validator, w Write) (*Verdict, error) {
	req, err := request(plugin, "validates", w)
	if err != nil {
		return nil, err
	}
	logsink.Take()
	answer := wire.CallAdmissionValidate(&cabi.Arena{}, req)
	out := &Verdict{Warnings: answer.Warnings, Logs: logsink.Take()}
	if answer.Denied != nil {
		out.Denied = denialFromWire(*answer.Denied)
	}
	return out, nil
}

// Convert converts objects to desiredAPIVersion with plugin's Convert natively, through
// the export code, and returns them as the API server keeps them: checked as it checks
// a conversion webhook's answer (the desired apiVersion, the same kind, name, namespace
// and UID) and with every field of metadata but labels and annotations restored. The
// error is the plugin's (a *kubewasm.Error), or a *HostWouldRefuse when the manifest
// does not convert or the API server would refuse the answer.
func Convert(plugin kubewasm.Converter, objects []any, desiredAPIVersion string) ([]kubewasm.Object, error) {
	manifest, err := Describe(plugin)
	if err != nil {
		return nil, err
	}
	if !manifest.Converts {
		return nil, &HostWouldRefuse{"the host converts only for a plugin whose manifest says it converts"}
	}
	texts, err := texts("object", objects)
	if err != nil {
		return nil, err
	}
	answer := wire.CallAdmissionConvert(&cabi.Arena{}, wire.ConversionRequest{Objects: texts, DesiredApiVersion: desiredAPIVersion, Now: Now, Config: "null"})
	if answer.Err != nil {
		return nil, kubewasm.Permanent("%s", *answer.Err)
	}
	if len(answer.Ok) != len(texts) {
		return nil, &HostWouldRefuse{fmt.Sprintf("the API server would refuse the conversion: %d objects for %d", len(answer.Ok), len(texts))}
	}
	var out []kubewasm.Object
	for i, text := range answer.Ok {
		v, _ := kubewasm.ParseJSON(text)
		after, _ := v.(map[string]any)
		b, _ := kubewasm.ParseJSON(texts[i])
		before, _ := b.(map[string]any)
		in, converted := kubewasm.Object(before), kubewasm.Object(after)
		problem := ""
		if converted.APIVersion() != desiredAPIVersion {
			problem = fmt.Sprintf("invalid apiVersion: expected %q, got %q", desiredAPIVersion, converted.APIVersion())
		} else {
			for _, f := range []struct{ name, a, b string }{
				{"kind", in.Kind(), converted.Kind()},
				{"name", in.Name(), converted.Name()},
				{"namespace", in.Namespace(), converted.Namespace()},
				{"UID", in.UID(), converted.UID()},
			} {
				if f.a != f.b {
					problem = fmt.Sprintf("must have the same %s: %s != %s", f.name, f.a, f.b)
					break
				}
			}
		}
		if problem != "" {
			return nil, &HostWouldRefuse{fmt.Sprintf("the API server would refuse converted object #%d: %s", i, problem)}
		}
		metadata := map[string]any{}
		for k, v := range in.Metadata() {
			metadata[k] = v
		}
		for _, f := range []string{"labels", "annotations"} {
			if v, ok := converted.Metadata()[f]; ok && v != nil {
				metadata[f] = v
			} else {
				delete(metadata, f)
			}
		}
		after["metadata"] = metadata
		out = append(out, converted)
	}
	return out, nil
}

// ApplyPatch is document with the RFC 6902 JSON patch applied (a new value; document
// is not changed); the error names the operation that does not apply.
func ApplyPatch(document any, patch []any) (any, error) {
	text, err := kubewasm.ToJSON(document)
	if err != nil {
		return nil, err
	}
	doc, _ := kubewasm.ParseJSON(text)
	for i, o := range patch {
		op, _ := o.(map[string]any)
		name, _ := op["op"].(string)
		path, _ := op["path"].(string)
		fail := func(format string, args ...any) error {
			return fmt.Errorf("operation #%d (%s %s): %s", i, name, path, fmt.Sprintf(format, args...))
		}
		tokens := func(p any) ([]string, error) {
			s, ok := p.(string)
			if !ok || (s != "" && !strings.HasPrefix(s, "/")) {
				return nil, fail("%v is no JSON pointer", p)
			}
			if s == "" {
				return nil, nil
			}
			var out []string
			for _, t := range strings.Split(s[1:], "/") {
				out = append(out, strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~"))
			}
			return out, nil
		}
		// get is the value at t; set replaces it (or, with insert, adds it) through its parent.
		var get func(v any, t []string) (any, error)
		get = func(v any, t []string) (any, error) {
			if len(t) == 0 {
				return v, nil
			}
			switch c := v.(type) {
			case map[string]any:
				if next, ok := c[t[0]]; ok {
					return get(next, t[1:])
				}
			case []any:
				if n, err := strconv.Atoi(t[0]); err == nil && n >= 0 && n < len(c) {
					return get(c[n], t[1:])
				}
			}
			return nil, fail("%s does not exist", "/"+strings.Join(t, "/"))
		}
		var edit func(v any, t []string, f func(parent any, key string) (any, error)) (any, error)
		edit = func(v any, t []string, f func(parent any, key string) (any, error)) (any, error) {
			if len(t) == 1 {
				return f(v, t[0])
			}
			switch c := v.(type) {
			case map[string]any:
				if next, ok := c[t[0]]; ok {
					changed, err := edit(next, t[1:], f)
					c[t[0]] = changed
					return c, err
				}
			case []any:
				if n, err := strconv.Atoi(t[0]); err == nil && n >= 0 && n < len(c) {
					changed, err := edit(c[n], t[1:], f)
					c[n] = changed
					return c, err
				}
			}
			return v, fail("the parent of %s does not exist", path)
		}
		add := func(t []string, value any) error {
			if len(t) == 0 {
				doc = value
				return nil
			}
			doc, err = edit(doc, t, func(parent any, key string) (any, error) {
				switch c := parent.(type) {
				case map[string]any:
					c[key] = value
					return c, nil
				case []any:
					n, err := strconv.Atoi(key)
					if key == "-" {
						n, err = len(c), nil
					}
					if err != nil || n < 0 || n > len(c) {
						return c, fail("index %s out of range", key)
					}
					return append(c[:n], append([]any{value}, c[n:]...)...), nil
				}
				return parent, fail("the parent is no object or list")
			})
			return err
		}
		remove := func(t []string) (any, error) {
			value, err := get(doc, t)
			if err != nil || len(t) == 0 {
				return value, err
			}
			doc, err = edit(doc, t, func(parent any, key string) (any, error) {
				switch c := parent.(type) {
				case map[string]any:
					delete(c, key)
					return c, nil
				case []any:
					n, _ := strconv.Atoi(key)
					return append(c[:n:n], c[n+1:]...), nil
				}
				return parent, nil
			})
			return value, err
		}
		at, err := tokens(op["path"])
		if err != nil {
			return nil, err
		}
		switch name {
		case "add":
			err = add(at, op["value"])
		case "remove":
			_, err = remove(at)
		case "replace":
			if _, err = remove(at); err == nil {
				err = add(at, op["value"])
			}
		case "move", "copy":
			from, ferr := tokens(op["from"])
			if ferr != nil {
				return nil, ferr
			}
			var value any
			if name == "move" {
				value, err = remove(from)
			} else if value, err = get(doc, from); err == nil {
				text, _ := kubewasm.ToJSON(value)
				value, _ = kubewasm.ParseJSON(text)
			}
			if err == nil {
				err = add(at, value)
			}
		case "test":
			var value any
			if value, err = get(doc, at); err == nil {
				a, _ := kubewasm.ToJSON(value)
				b, _ := kubewasm.ToJSON(op["value"])
				if a != b && !reflect.DeepEqual(value, op["value"]) {
					err = fail("the value is %s, not %s", a, b)
				}
			}
		default:
			err = fmt.Errorf("operation #%d: %q is none of add, remove, replace, move, copy, test", i, name)
		}
		if err != nil {
			return nil, err
		}
	}
	return doc, nil
}
