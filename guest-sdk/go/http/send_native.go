//go:build !wasip1

package http

import (
	"fmt"

	"kubewasm.dev/sdk/internal/cabi"
	"kubewasm.dev/sdk/internal/httpsink"
	"kubewasm.dev/sdk/internal/wire"
)

// send hands a request to the test harness (package kubewasmtest), or denies it outside
// one.
func send(req wire.HttpRequest) cabi.Result[wire.HttpResponse, wire.HttpError] {
	if httpsink.Send == nil {
		return noNetwork(req)
	}
	return httpsink.Send(req)
}

// noNetwork answers a request outside the component and outside a test harness.
func noNetwork(req wire.HttpRequest) cabi.Result[wire.HttpResponse, wire.HttpError] {
	e := wire.HttpError{Tag: wire.HttpErrorDenied, Denied: fmt.Sprintf(
		"%s %s: no network outside a component; kubewasmtest answers requests from canned responses (HTTP: ...)", req.Method, req.Url)}
	return cabi.Result[wire.HttpResponse, wire.HttpError]{Err: &e}
}
