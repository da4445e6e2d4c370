// Package cabi holds the primitives of the component model's canonical ABI in Go: a
// linear memory, scalars, strings, lists, options and results in memory, and the flat
// form of function parameters and results. The bindings kubewasm-codegen generates from
// wit/ (package wire) are written over them; the component's exports and the native
// test harness share both, so `go test` runs the same lowering and lifting as the
// component.
package cabi

import "encoding/binary"

// Memory is a linear memory as the canonical ABI sees it: 32-bit addresses.
type Memory interface {
	// Alloc returns the address of size fresh bytes aligned to align; they stay
	// valid until the memory is reset.
	Alloc(size, align uint32) uint32
	// Bytes is the n bytes at ptr, to read or write.
	Bytes(ptr, n uint32) []byte
	// Lifted says that an export has copied its arguments out of the memory: what
	// was allocated for them may go.
	Lifted()
}

// Scalars are little-endian at their address.

// PutU8 writes v at `at`.
func PutU8(m Memory, at uint32, v uint8) { m.Bytes(at, 1)[0] = v }

// GetU8 reads the byte at `at`.
func GetU8(m Memory, at uint32) uint8 { return m.Bytes(at, 1)[0] }

// PutU16 writes v at `at`.
func PutU16(m Memory, at uint32, v uint16) { binary.LittleEndian.PutUint16(m.Bytes(at, 2), v) }

// GetU16 reads the 16 bits at `at`.
func GetU16(m Memory, at uint32) uint16 { return binary.LittleEndian.Uint16(m.Bytes(at, 2)) }

// PutU32 writes v at `at`.
func PutU32(m Memory, at uint32, v uint32) { binary.LittleEndian.PutUint32(m.Bytes(at, 4), v) }

// GetU32 reads the 32 bits at `at`.
func GetU32(m Memory, at uint32) uint32 { return binary.LittleEndian.Uint32(m.Bytes(at, 4)) }

// PutU64 writes v at `at`.
func PutU64(m Memory, at uint32, v uint64) { binary.LittleEndian.PutUint64(m.Bytes(at, 8), v) }

// GetU64 reads the 64 bits at `at`.
func GetU64(m Memory, at uint32) uint64 { return binary.LittleEndian.Uint64(m.Bytes(at, 8)) }

// PutBool writes v as a byte at `at`.
func PutBool(m Memory, at uint32, v bool) {
	if v {
		PutU8(m, at, 1)
	} else {
		PutU8(m, at, 0)
	}
}

// GetBool reads the byte at `at` as a bool.
func GetBool(m Memory, at uint32) bool { return GetU8(m, at) != 0 }

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

// PutString copies s into fresh memory and writes its address and length at `at`.
func PutString(m Memory, at uint32, s string) {
	ptr, n := NewString(m, s)
	PutU32(m, at, ptr)
	PutU32(m, at+4, n)
}

// GetString reads the string whose address and length are at `at`.
func GetString(m Memory, at uint32) string { return String(m, GetU32(m, at), GetU32(m, at+4)) }

// NewList copies items into fresh memory, each element size bytes (aligned to align)
// written by put, and returns its address and length.
func NewList[T any](m Memory, items []T, size, align uint32, put func(at uint32, v T)) (uint32, uint32) {
	ptr := align
	if len(items) > 0 {
		ptr = m.Alloc(uint32(len(items))*size, align)
	}
	for i, v := range items {
		put(ptr+uint32(i)*size, v)
	}
	return ptr, uint32(len(items))
}

// list reads the n elements of size bytes at ptr with get.
func list[T any](ptr, n, size uint32, get func(at uint32) T) []T {
	if n == 0 {
		return nil
	}
	out := make([]T, n)
	for i := range out {
		out[i] = get(ptr + uint32(i)*size)
	}
	return out
}

// PutList copies items into fresh memory (see NewList) and writes its address and
// length at `at`.
func PutList[T any](m Memory, at uint32, items []T, size, align uint32, put func(at uint32, v T)) {
	ptr, n := NewList(m, items, size, align, put)
	PutU32(m, at, ptr)
	PutU32(m, at+4, n)
}

// GetList reads the list whose address and length are at `at`, each element of size
// bytes with get.
func GetList[T any](m Memory, at uint32, size uint32, get func(at uint32) T) []T {
	return list(GetU32(m, at), GetU32(m, at+4), size, get)
}

// PutOption writes an option at `at`: a discriminant byte (0 for nil, `none`), and the
// value at `at+payload` written by put.
func PutOption[T any](m Memory, at, payload uint32, v *T, put func(at uint32, v T)) {
	if v == nil {
		PutU8(m, at, 0)
		return
	}
	PutU8(m, at, 1)
	put(at+payload, *v)
}

// GetOption reads the option at `at` (see PutOption).
func GetOption[T any](m Memory, at, payload uint32, get func(at uint32) T) *T {
	if GetU8(m, at) == 0 {
		return nil
	}
	v := get(at + payload)
	return &v
}

// Result is a WIT `result<T, E>`: Err is nil for `ok`. A result without an ok or an
// error type has struct{} in its place.
type Result[T, E any] struct {
	Ok  T
	Err *E
}

// PutResult writes a result at `at`: a discriminant byte (0 ok, 1 error) and the value
// at `at+payload`; a nil put stands for a case without a value.
func PutResult[T, E any](m Memory, at, payload uint32, v Result[T, E], ok func(at uint32, v T), err func(at uint32, v E)) {
	if v.Err != nil {
		PutU8(m, at, 1)
		if err != nil {
			err(at+payload, *v.Err)
		}
		return
	}
	PutU8(m, at, 0)
	if ok != nil {
		ok(at+payload, v.Ok)
	}
}

// GetResult reads the result at `at` (see PutResult).
func GetResult[T, E any](m Memory, at, payload uint32, ok func(at uint32) T, err func(at uint32) E) Result[T, E] {
	var v Result[T, E]
	if GetU8(m, at) != 0 {
		var e E
		if err != nil {
			e = err(at + payload)
		}
		v.Err = &e
	} else if ok != nil {
		v.Ok = ok(at + payload)
	}
	return v
}

// Flat is the flat form of a function's parameters or result, as core WebAssembly
// passes them: each value the bits of its core type, zero-extended to 64 bits, so that
// the joined slots of a variant hold any of its cases.
type Flat struct{ values []uint64 }

// NewFlat reads values in order.
func NewFlat(values ...uint64) *Flat { return &Flat{values} }

// Values is what was pushed, in order.
func (f *Flat) Values() []uint64 { return f.values }

// Push appends v.
func (f *Flat) Push(v uint64) { f.values = append(f.values, v) }

// PushBool appends v as 0 or 1.
func (f *Flat) PushBool(v bool) {
	if v {
		f.Push(1)
	} else {
		f.Push(0)
	}
}

// Pad fills the slots of a variant's payload that its case left empty: the values
// from start make width.
func (f *Flat) Pad(start, width int) {
	for len(f.values) < start+width {
		f.Push(0)
	}
}

// Next reads the next value.
func (f *Flat) Next() uint64 {
	v := f.values[0]
	f.values = f.values[1:]
	return v
}

// Take reads the next n values, for a variant's payload.
func (f *Flat) Take(n int) *Flat {
	p := &Flat{f.values[:n]}
	f.values = f.values[n:]
	return p
}

// LowerFlatString copies s into fresh memory and appends its address and length.
func LowerFlatString(m Memory, f *Flat, s string) {
	ptr, n := NewString(m, s)
	f.Push(uint64(ptr))
	f.Push(uint64(n))
}

// LiftFlatString reads a string's address and length and the string there.
func LiftFlatString(m Memory, f *Flat) string { return String(m, uint32(f.Next()), uint32(f.Next())) }

// LowerFlatList copies items into fresh memory (see NewList) and appends its address
// and length.
func LowerFlatList[T any](m Memory, f *Flat, items []T, size, align uint32, put func(at uint32, v T)) {
	ptr, n := NewList(m, items, size, align, put)
	f.Push(uint64(ptr))
	f.Push(uint64(n))
}

// LiftFlatList reads a list's address and length and its elements there.
func LiftFlatList[T any](f *Flat, size uint32, get func(at uint32) T) []T {
	return list(uint32(f.Next()), uint32(f.Next()), size, get)
}

// LowerFlatOption appends an option: its discriminant, then width payload values.
func LowerFlatOption[T any](f *Flat, width int, v *T, lower func(f *Flat, v T)) {
	start := len(f.values)
	if v == nil {
		f.Push(0)
	} else {
		f.Push(1)
		lower(f, *v)
	}
	f.Pad(start, 1+width)
}

// LiftFlatOption reads an option (see LowerFlatOption).
func LiftFlatOption[T any](f *Flat, width int, lift func(f *Flat) T) *T {
	some := f.Next() != 0
	payload := f.Take(width)
	if !some {
		return nil
	}
	v := lift(payload)
	return &v
}

// LowerFlatResult appends a result: its discriminant, then width payload values; a nil
// lower stands for a case without a value.
func LowerFlatResult[T, E any](f *Flat, width int, v Result[T, E], ok func(f *Flat, v T), err func(f *Flat, v E)) {
	start := len(f.values)
	if v.Err != nil {
		f.Push(1)
		if err != nil {
			err(f, *v.Err)
		}
	} else {
		f.Push(0)
		if ok != nil {
			ok(f, v.Ok)
		}
	}
	f.Pad(start, 1+width)
}

// LiftFlatResult reads a result (see LowerFlatResult).
func LiftFlatResult[T, E any](f *Flat, width int, ok func(f *Flat) T, err func(f *Flat) E) Result[T, E] {
	isErr := f.Next() != 0
	payload := f.Take(width)
	var v Result[T, E]
	if isErr {
		var e E
		if err != nil {
			e = err(payload)
		}
		v.Err = &e
	} else if ok != nil {
		v.Ok = ok(payload)
	}
	return v
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

// Lifted implements Memory: an arena keeps everything until it is dropped.
func (a *Arena) Lifted() {}
