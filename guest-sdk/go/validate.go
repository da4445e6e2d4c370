package kubewasm

import (
	"fmt"
	"strings"
)

// MaxObjectBytes is the largest object a plugin may return (the API server's own limit
// is 1.5 MiB); MaxResponseBytes the largest whole response.
const (
	MaxObjectBytes   = 1 << 20
	MaxResponseBytes = 16 << 20
)

// Refusal is a response the host refuses; Problems lists every reason, not only the first.
type Refusal struct {
	Plugin   string
	Problems []string
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("response of plugin %s refused: %s", r.Plugin, strings.Join(r.Problems, "; "))
}

type childKey struct{ kind, group, namespace, name string }

// Validate checks resp (its children and status as the host parses them from JSON)
// against what the plugin declared and the parent it answers for, as the host does
// before it writes anything, and returns it with each child as JSON values and each
// namespaced child's namespace filled in from a namespaced parent.
//
// Every child must be of a declared kind, named, in the parent's namespace (for a
// namespaced parent), unique and within size limits. Every uid in resp.Delete must be
// that of one of the observed children (those the request shows, as JSON values), and
// that child neither returned nor kept. The error is a [*Refusal] listing every problem,
// or an Error for a child or status that does not encode to JSON.
//
// It is a port of the host's check (kubewasm-contract), held to the same table of cases.
func Validate(m Manifest, parent any, resp *Response, observed ...any) (*Response, error) {
	var problems []string
	parentNS, hasParentNS := "", false
	if m.Parent.Namespaced {
		parentNS, hasParentNS = asMap(asMap(parent)["metadata"])["namespace"].(string)
	}
	seen := map[childKey]bool{}
	total := 0
	out := *resp
	out.Children = make([]any, len(resp.Children))

	for i, given := range resp.Children {
		text, child, err := normalize(given)
		if err != nil {
			return nil, Permanent("child #%d does not encode to JSON: %v", i, err)
		}
		out.Children[i] = child
		size := len(text)
		total += size
		obj := asMap(child)
		meta, ok := obj["metadata"].(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("child #%d has no metadata", i))
			continue
		}
		name := str(meta["name"])
		namespace, hasNS := meta["namespace"].(string)
		apiVersion, ok := obj["apiVersion"].(string)
		if !ok {
			apiVersion = "<no apiVersion>"
		}
		kindName, ok := obj["kind"].(string)
		if !ok {
			kindName = "<no kind>"
		}
		what := fmt.Sprintf("child #%d (%s %s %s)", i, apiVersion, kindName, debug(name))
		var kind *KindRef
		for k := range m.Children {
			if m.Children[k].Matches(obj) {
				kind = &m.Children[k]
				break
			}
		}
		if kind == nil {
			declared := "none"
			if len(m.Children) > 0 {
				names := make([]string, len(m.Children))
				for k, c := range m.Children {
					names[k] = c.String()
				}
				declared = strings.Join(names, ", ")
			}
			problems = append(problems, fmt.Sprintf("%s is of a kind the plugin did not declare in `children` (declared: %s)", what, declared))
			continue
		}
		if !isDNSSubdomain(name) {
			problems = append(problems, what+" needs metadata.name, a DNS subdomain")
		}
		switch {
		case kind.Namespaced && hasParentNS && !hasNS:
			meta["namespace"] = parentNS
		case kind.Namespaced && hasParentNS && namespace != parentNS:
			problems = append(problems, fmt.Sprintf("%s is in namespace %s, outside its parent's namespace %s", what, debug(namespace), debug(parentNS)))
		case kind.Namespaced && !hasParentNS && !hasNS:
			problems = append(problems, what+" needs metadata.namespace (the parent is cluster-scoped)")
		case !kind.Namespaced && hasParentNS:
			problems = append(problems, what+" is cluster-scoped and cannot be owned by a namespaced parent")
		case !kind.Namespaced && !hasParentNS && hasNS:
			problems = append(problems, what+" is cluster-scoped but sets metadata.namespace")
		}
		if size > MaxObjectBytes {
			problems = append(problems, fmt.Sprintf("%s is %d bytes, over the limit of %d", what, size, MaxObjectBytes))
		}
		key := childKey{kind.Kind, kind.Group, str(meta["namespace"]), name}
		if seen[key] {
			problems = append(problems, what+" appears more than once")
		}
		seen[key] = true
	}
	kept := map[string]bool{}
	for _, child := range out.Children {
		if uid, ok := asMap(asMap(child)["metadata"])["uid"].(string); ok {
			kept[uid] = true
		}
	}
	for i, uid := range resp.Delete {
		var child map[string]any
		for _, o := range observed {
			if got, ok := asMap(asMap(o)["metadata"])["uid"].(string); ok && uid != "" && got == uid {
				child = asMap(o)
				break
			}
		}
		if child == nil {
			problems = append(problems, fmt.Sprintf("delete #%d (%s) is not the metadata.uid of an observed child the parent controls", i, debug(uid)))
			continue
		}
		meta := asMap(child["metadata"])
		kindName, ok := child["kind"].(string)
		if !ok {
			kindName = "<no kind>"
		}
		name := str(meta["name"])
		returned := false
		for k := range m.Children {
			if m.Children[k].Matches(child) {
				returned = seen[childKey{m.Children[k].Kind, m.Children[k].Group, str(meta["namespace"]), name}]
				break
			}
		}
		if returned || kept[uid] {
			problems = append(problems, fmt.Sprintf("delete #%d (%s %s) is also among the children: an answer returns or deletes a child, not both", i, kindName, debug(name)))
		}
	}

	if resp.Status != nil {
		text, status, err := normalize(resp.Status)
		if err != nil {
			return nil, Permanent("status does not encode to JSON: %v", err)
		}
		out.Status = status
		size := len(text)
		total += size
		if _, ok := status.(map[string]any); !ok {
			problems = append(problems, "status must be a JSON object")
		}
		if size > MaxObjectBytes {
			problems = append(problems, fmt.Sprintf("status is %d bytes, over the limit of %d", size, MaxObjectBytes))
		}
	}
	for _, key := range sortedKeys(resp.Labels) {
		value := resp.Labels[key]
		if !isQualifiedName(key) || !isLabelValue(value) {
			problems = append(problems, fmt.Sprintf("label %s=%s is not a valid Kubernetes label", key, debug(value)))
		}
	}
	for _, key := range sortedKeys(resp.Annotations) {
		total += len(key) + len(resp.Annotations[key])
		if !isQualifiedName(key) {
			problems = append(problems, fmt.Sprintf("annotation key %s is not a valid Kubernetes key", debug(key)))
		}
	}
	for _, e := range resp.Events {
		if e.Reason == "" {
			problems = append(problems, fmt.Sprintf("event %s has no reason", debug(e.Message)))
		}
	}
	if total > MaxResponseBytes {
		problems = append(problems, fmt.Sprintf("response is %d bytes, over the limit of %d", total, MaxResponseBytes))
	}
	if len(problems) > 0 {
		return nil, &Refusal{Plugin: m.Name, Problems: problems}
	}
	return &out, nil
}

// normalize is v as compact JSON and as the JSON values that text decodes to.
func normalize(v any) (string, any, error) {
	text, err := ToJSON(v)
	if err != nil {
		return "", nil, err
	}
	value, err := ParseJSON(text)
	return text, value, err
}
