// Package log writes structured lines into the host's logs, where each line carries
// the plugin and the parent:
//
//	log.Info("scaled", "replicas", 3)
//
// In the component the lines go through the contract's `log` import (the host keeps at
// most 1000 lines a call). In native tests they go to stderr and the test harness
// keeps them (Outcome.Logs).
package log

import "fmt"

// Level is a log line's severity, in the order of the contract's `level`.
type Level uint8

// The levels.
const (
	LevelTrace Level = iota
	LevelDebug
	LevelInfo
	LevelWarn
	LevelError
)

func (l Level) String() string {
	return [...]string{"trace", "debug", "info", "warn", "error"}[l]
}

// Log writes message with key/value pairs (`"replicas", 3`); values are formatted
// with %v, and a key without a value gets "(missing)".
func Log(level Level, message string, keyValues ...any) {
	var fields [][2]string
	for i := 0; i < len(keyValues); i += 2 {
		key := fmt.Sprint(keyValues[i])
		value := "(missing)"
		if i+1 < len(keyValues) {
			value = fmt.Sprint(keyValues[i+1])
		}
		fields = append(fields, [2]string{key, value})
	}
	write(level, message, fields)
}

// Trace logs at trace level.
func Trace(message string, keyValues ...any) { Log(LevelTrace, message, keyValues...) }

// Debug logs at debug level.
func Debug(message string, keyValues ...any) { Log(LevelDebug, message, keyValues...) }

// Info logs at info level.
func Info(message string, keyValues ...any) { Log(LevelInfo, message, keyValues...) }

// Warn logs at warn level.
func Warn(message string, keyValues ...any) { Log(LevelWarn, message, keyValues...) }

// Error logs at error level.
func Error(message string, keyValues ...any) { Log(LevelError, message, keyValues...) }
