// Package wire holds the contract's records as the WIT world declares them and their
// canonical ABI layout in linear memory: lowering and lifting in both directions, so
// that the component's exports and the native test harness share one codec.
package wire

import "encoding/binary"

// Memory is a linear memory as the canonical ABI sees it: 32-bit addresses.
type Memory interface {
	// Alloc returns the address of size fresh bytes aligned to align; they stay
	// valid until the memory is reset.
	Alloc(size, align uint32) uint32
	// Bytes is the n bytes at ptr, to read or write.
	Bytes(ptr, n uint32) []byte
}

func putU8(m Memory, at uint32, v uint8)   { m.Bytes(at, 1)[0] = v }
func getU8(m Memory, at uint32) uint8      { return m.Bytes(at, 1)[0] }
func putU32(m Memory, at uint32, v uint32) { binary.LittleEndian.PutUint32(m.Bytes(at, 4), v) }
func getU32(m Memory, at uint32) uint32    { return binary.LittleEndian.Uint32(m.Bytes(at, 4)) }
func putU64(m Memory, at uint32, v uint64) { binary.LittleEndian.PutUint64(m.Bytes(at, 8), v) }
func getU64(m Memory, at uint32) uint64    { return binary.LittleEndian.Uint64(m.Bytes(at, 8)) }

func putBool(m Memory, at uint32, v bool) {
	if v {
		putU8(m, at, 1)
	} else {
		putU8(m, at, 0)
	}
}

func getBool(m Memory, at uint32) bool { return getU8(m, at) != 0 }

// NewString copies s into fresh memory and returns its address and length.
func NewString(m Memory, s string) (uint32, uint32) {
	if len(s) == 0 {
		return 1, 0
	}
	ptr := m.Alloc(uint32(len(s)), 1)
	copy(m.Bytes(ptr, uint32(len(s))), s)
	return ptr, uint32(len(s))
}

// String reads the string of length n at ptr.
func String(m Memory, ptr, n uint32) string {
	if n == 0 {
		return ""
	}
	return string(m.Bytes(ptr, n))
}

func putString(m Memory, at uint32, s string) {
	ptr, n := NewString(m, s)
	putU32(m, at, ptr)
	putU32(m, at+4, n)
}

func getString(m Memory, at uint32) string { return String(m, getU32(m, at), getU32(m, at+4)) }

// putList writes a list of n elements of size bytes each (aligned to align) at `at`,
// filling each element with put.
func putList(m Memory, at uint32, n int, size, align uint32, put func(elem uint32, i int)) {
	ptr := align
	if n > 0 {
		ptr = m.Alloc(uint32(n)*size, align)
	}
	for i := 0; i < n; i++ {
		put(ptr+uint32(i)*size, i)
	}
	putU32(m, at, ptr)
	putU32(m, at+4, uint32(n))
}

// getList calls get for each element of the list at `at`.
func getList(m Memory, at uint32, size uint32, get func(elem uint32)) {
	ptr, n := getU32(m, at), getU32(m, at+4)
	for i := uint32(0); i < n; i++ {
		get(ptr + i*size)
	}
}

func putStrings(m Memory, at uint32, items []string) {
	putList(m, at, len(items), 8, 4, func(e uint32, i int) { putString(m, e, items[i]) })
}

func getStrings(m Memory, at uint32) []string {
	var out []string
	getList(m, at, 8, func(e uint32) { out = append(out, getString(m, e)) })
	return out
}

func putPairs(m Memory, at uint32, pairs [][2]string) {
	putList(m, at, len(pairs), 16, 4, func(e uint32, i int) {
		putString(m, e, pairs[i][0])
		putString(m, e+8, pairs[i][1])
	})
}

func getPairs(m Memory, at uint32) [][2]string {
	var out [][2]string
	getList(m, at, 16, func(e uint32) { out = append(out, [2]string{getString(m, e), getString(m, e+8)}) })
	return out
}

// Arena is a Memory in a Go byte slice, for native tests: addresses are offsets, 0 is
// never handed out.
type Arena struct{ buf []byte }

// Alloc implements Memory.
func (a *Arena) Alloc(size, align uint32) uint32 {
	if len(a.buf) == 0 {
		a.buf = make([]byte, 8, 1<<16)
	}
	if align == 0 {
		align = 1
	}
	start := (uint32(len(a.buf)) + align - 1) &^ (align - 1)
	need := int(start + size)
	for len(a.buf) < need {
		a.buf = append(a.buf, 0)
	}
	return start
}

// Bytes implements Memory.
func (a *Arena) Bytes(ptr, n uint32) []byte { return a.buf[ptr : ptr+n : ptr+n] }
