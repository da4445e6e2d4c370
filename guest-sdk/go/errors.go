package kubewasm

import (
	"errors"
	"fmt"
)

// Error is a reconcile that could not decide. Retryable says whether trying again
// later may succeed: the host retries a retryable error with backoff from 5 ms, and a
// permanent one after 5 minutes, or at once when the parent or its inputs change.
//
// Return one made by [Retryable] or [Permanent] (wrapped or not). Any other error is
// taken as retryable. A panic is a bug in the plugin: the call traps and the host
// reports the panic from the plugin's stderr.
type Error struct {
	Message   string
	Retryable bool
}

func (e *Error) Error() string { return e.Message }

// Retryable is a transient failure: the host retries with backoff.
func Retryable(format string, args ...any) error {
	return &Error{Message: fmt.Sprintf(format, args...), Retryable: true}
}

// Permanent says the parent (or the config) is wrong; retrying will not help until it
// changes.
func Permanent(format string, args ...any) error {
	return &Error{Message: fmt.Sprintf(format, args...), Retryable: false}
}

// AsError is err as the host receives it: the [Error] in its chain, or a retryable
// Error with its message.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		// The message of the whole chain: a wrapping error adds context to it.
		return &Error{Message: err.Error(), Retryable: e.Retryable}
	}
	return &Error{Message: err.Error(), Retryable: true}
}
