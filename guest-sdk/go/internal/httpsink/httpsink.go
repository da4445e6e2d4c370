// Package httpsink is where a plugin's HTTP requests go in a native test: the test
// harness answers them from canned responses and records them. In the component they go
// through the contract's `http.send` import instead.
package httpsink

import (
	"kubewasm.dev/sdk/internal/cabi"
	"kubewasm.dev/sdk/internal/wire"
)

// Send answers one request as the contract's import does; nil outside a harness, which
// denies every request.
var Send func(req wire.HttpRequest) cabi.Result[wire.HttpResponse, wire.HttpError]
