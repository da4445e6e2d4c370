// Package kubewasm writes kubewasm reconciler plugins in Go.
//
// A plugin is one type implementing [Reconciler] (and optionally [RelatedQuerier]),
// registered with [Export] from an init function of package main:
//
//	type Echo struct{}
//
//	func (Echo) Describe() kubewasm.Manifest {
//		return kubewasm.Manifest{
//			Name:     "echo",
//			Parent:   kubewasm.Namespaced("example.com", "v1", "Echo", "echoes"),
//			Children: []kubewasm.KindRef{kinds.ConfigMap},
//		}
//	}
//
//	func (Echo) Reconcile(req *kubewasm.Request) (*kubewasm.Response, error) {
//		parent := req.Parent
//		say, err := parent.String("spec.say")
//		if err != nil {
//			return nil, err // a PermanentError naming the field
//		}
//		configMap := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
//			"metadata": parent.ChildMeta(parent.Name()), "data": map[string]any{"said": say}}
//		// The FULL desired set: a child the parent controls that is not returned is deleted.
//		return kubewasm.NewResponse().Child(configMap), nil
//	}
//
//	func init() { kubewasm.Export(Echo{}) }
//
//	func main() {}
//
// Build it for WASI preview 1 as a reactor and make it a component:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o echo.core.wasm .
//	kubewasm componentize echo.core.wasm -o echo.wasm
//
// Test it natively with package [kubewasm.dev/sdk/kubewasmtest]: the request goes
// through the same canonical ABI code as in the component, and the answer is checked
// with the host's own rules. Log with package [kubewasm.dev/sdk/log].
package kubewasm
