//go:build wasip1

package cabi

// The component's own linear memory: Go's heap.

import "unsafe"

// LinearMemory is the component's linear memory. Go's collector does not move
// objects, so an address stays valid while its buffer is reachable: the memory keeps
// every buffer it handed out until it is dropped or, for the exports' memory, until
// the export has lifted its arguments.
type LinearMemory struct{ pinned [][]byte }

// Alloc implements Memory.
func (l *LinearMemory) Alloc(size, align uint32) uint32 {
	if align == 0 {
		align = 1
	}
	buf := make([]byte, size+align)
	l.pinned = append(l.pinned, buf)
	addr := uint32(uintptr(unsafe.Pointer(&buf[0])))
	return (addr + align - 1) &^ (align - 1)
}

// Bytes implements Memory.
func (*LinearMemory) Bytes(ptr, n uint32) []byte {
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), uintptr(ptr))), n)
}

// Lifted implements Memory: the arguments are Go values now, their buffers may go.
func (l *LinearMemory) Lifted() { l.pinned = nil }

// ExportMemory holds what the host allocates for an export's arguments (through
// cabi_realloc) and what an export allocates for its result, which the host reads after
// the export returns: kept until the next call. Each call runs in a fresh instance, so
// nothing accumulates.
var ExportMemory LinearMemory

//go:wasmexport cabi_realloc
func cabiRealloc(oldPtr, oldSize, align, newSize uint32) uint32 {
	ptr := ExportMemory.Alloc(newSize, align)
	if oldPtr != 0 && oldSize > 0 {
		copy(ExportMemory.Bytes(ptr, newSize), ExportMemory.Bytes(oldPtr, min(oldSize, newSize)))
	}
	return ptr
}
