//go:build wasip1

package log

import "kubewasm.dev/sdk/internal/wire"

// write hands the line to the host through the contract's `log` import.
func write(level Level, message string, fields [][2]string) {
	wire.LogLog(wire.Level(level), message, fields)
}
