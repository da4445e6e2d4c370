//go:build wasip1

package http

import (
	"kubewasm.dev/sdk/internal/cabi"
	"kubewasm.dev/sdk/internal/wire"
)

// send hands a request to the host through the contract's `http.send` import.
func send(req wire.HttpRequest) cabi.Result[wire.HttpResponse, wire.HttpError] {
	return wire.HttpSend(req)
}
