package kubewasm

// KindRef is a Kubernetes kind and its REST resource (Plural, for RBAC and paths). It
// names the parent, the children a plugin may own and the kinds it reads; package
// [kubewasm.dev/sdk/kinds] has the built-in kinds plugins use most.
type KindRef struct {
	// Group is the API group; empty for the core group (Pods, Services, ConfigMaps...).
	Group   string
	Version string
	Kind    string
	Plural  string
	// Namespaced says whether objects of this kind live in a namespace.
	Namespaced bool
}

// Namespaced is a kind whose objects live in a namespace.
func Namespaced(group, version, kind, plural string) KindRef {
	return KindRef{group, version, kind, plural, true}
}

// ClusterScoped is a kind whose objects live outside namespaces.
func ClusterScoped(group, version, kind, plural string) KindRef {
	return KindRef{group, version, kind, plural, false}
}

// APIVersion is `group/version`, or the version alone for the core group.
func (k KindRef) APIVersion() string {
	if k.Group == "" {
		return k.Version
	}
	return k.Group + "/" + k.Version
}

// Matches says whether obj (a JSON object) is of this kind.
func (k KindRef) Matches(obj any) bool {
	m := asMap(obj)
	kind, hasKind := m["kind"].(string)
	apiVersion, hasVersion := m["apiVersion"].(string)
	return hasKind && hasVersion && kind == k.Kind && apiVersion == k.APIVersion()
}

// String is `apiVersion Kind`.
func (k KindRef) String() string { return k.APIVersion() + " " + k.Kind }
