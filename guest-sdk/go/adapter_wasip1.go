//go:build wasip1

package kubewasm

// The memory the WASI adapter needs before Go's runtime has started. The component's
// exports and imports are package wire's, generated from the contract.

// adapterArenaSize is the memory reserved for the WASI adapter's state and stack.
const adapterArenaSize = 256 << 10

// adapterArena is memory no Go code touches: `kubewasm componentize` finds it by the
// marker below and hands it to the WASI adapter, which needs memory before Go's
// runtime has started and must not take it from under Go's heap.
var adapterArena [adapterArenaSize]byte

type arenaMarker struct {
	magic [16]byte
	addr  *[adapterArenaSize]byte
	size  uint64
}

// The marker, its address and its length, in the module's data (statically
// initialized: the linker writes the address).
var adapterArenaMarker = arenaMarker{
	magic: [16]byte{'k', 'u', 'b', 'e', 'w', 'a', 's', 'm', ':', 'a', 'r', 'e', 'n', 'a', ':', '1'},
	addr:  &adapterArena,
	size:  adapterArenaSize,
}

// keepMarker makes the marker reachable, or the linker leaves it out.
var keepMarker *arenaMarker

func init() { keepMarker = &adapterArenaMarker }
