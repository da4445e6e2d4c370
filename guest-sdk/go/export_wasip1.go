//go:build wasip1

package kubewasm

// The component's exports and the memory they lift from and lower into: Go's heap.
// `kubewasm componentize` wraps them with the contract and the WASI adapter.

import (
	"unsafe"

	"kubewasm.dev/sdk/internal/wire"
)

// pinned keeps every buffer handed to the host reachable (Go's collector does not
// move objects, so an address stays valid while the buffer is reachable): arguments
// until the export has read them, results until the next call. Each call runs in a
// fresh instance, so nothing accumulates.
var pinned [][]byte

type linearMemory struct{}

func (linearMemory) Alloc(size, align uint32) uint32 {
	if align == 0 {
		align = 1
	}
	buf := make([]byte, size+align)
	pinned = append(pinned, buf)
	addr := uint32(uintptr(unsafe.Pointer(&buf[0])))
	return (addr + align - 1) &^ (align - 1)
}

func (linearMemory) Bytes(ptr, n uint32) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), uintptr(ptr))), n)
}

//go:wasmexport cabi_realloc
func cabiRealloc(oldPtr, oldSize, align, newSize uint32) uint32 {
	m := linearMemory{}
	ptr := m.Alloc(newSize, align)
	if oldPtr != 0 && oldSize > 0 {
		copy(m.Bytes(ptr, newSize), m.Bytes(oldPtr, min(oldSize, newSize)))
	}
	return ptr
}

//go:wasmexport kubewasm:reconciler/reconciler@0.1.0#describe
func wasmDescribe() uint32 { return exportDescribe(linearMemory{}) }

//go:wasmexport kubewasm:reconciler/reconciler@0.1.0#related
func wasmRelated(ptr, n uint32) uint32 { return exportRelated(linearMemory{}, ptr, n) }

//go:wasmexport kubewasm:reconciler/reconciler@0.1.0#reconcile
func wasmReconcile(p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10 uint32) uint32 {
	m := linearMemory{}
	req := wire.RequestFromParams(m, [11]uint32{p0, p1, p2, p3, p4, p5, p6, p7, p8, p9, p10})
	// The request is copied into Go strings: its buffers may go.
	pinned = nil
	result := reconcileWire(req)
	at := m.Alloc(wire.ResultSize, wire.ResultAlign)
	wire.PutResult(m, at, result)
	return at
}

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
