// Package logsink keeps the lines a plugin logs in a native test, for the test harness.
package logsink

// Line is one logged line: level (trace, debug, info, warn, error), message, fields.
type Line struct {
	Level   string
	Message string
	Fields  [][2]string
}

// Captured is every line logged since the harness last took them.
var Captured []Line

// Take returns the captured lines and forgets them.
func Take() []Line {
	lines := Captured
	Captured = nil
	return lines
}
