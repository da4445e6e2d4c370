//go:build wasip1

package log

import (
	"runtime"
	"unsafe"
)

//go:wasmimport kubewasm:reconciler/log@0.1.0 log
func hostLog(level uint32, msgPtr, msgLen, fieldsPtr, fieldsLen uint32)

func addr(s string) uint32 {
	if len(s) == 0 {
		return 1
	}
	return uint32(uintptr(unsafe.Pointer(unsafe.StringData(s))))
}

// write hands the line to the host in place: strings and the list of pairs are read
// from Go's memory during the call.
func write(level Level, message string, fields [][2]string) {
	pairs := make([]uint32, 0, 4*len(fields)+1)
	for _, f := range fields {
		pairs = append(pairs, addr(f[0]), uint32(len(f[0])), addr(f[1]), uint32(len(f[1])))
	}
	pairs = append(pairs, 0) // never empty: its address is valid for an empty list too
	hostLog(uint32(level), addr(message), uint32(len(message)), uint32(uintptr(unsafe.Pointer(&pairs[0]))), uint32(len(fields)))
	runtime.KeepAlive(pairs)
	runtime.KeepAlive(fields)
	runtime.KeepAlive(message)
}
