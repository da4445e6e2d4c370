//go:build !wasip1

package log

import (
	"fmt"
	"os"
	"strings"

	"kubewasm.dev/sdk/internal/logsink"
)

func write(level Level, message string, fields [][2]string) {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s", strings.ToUpper(level.String()), message)
	for _, f := range fields {
		fmt.Fprintf(&b, " %s=%q", f[0], f[1])
	}
	fmt.Fprintln(os.Stderr, b.String())
	logsink.Captured = append(logsink.Captured, logsink.Line{Level: level.String(), Message: message, Fields: fields})
}
