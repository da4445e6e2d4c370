package kubewasmtest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	kwhttp "kubewasm.dev/sdk/http"
	"kubewasm.dev/sdk/internal/cabi"
	"kubewasm.dev/sdk/internal/httpsink"
	"kubewasm.dev/sdk/internal/wire"
)

// Reply is a canned answer to one of the plugin's HTTP requests: the first request whose
// method and URL match, among those no earlier reply answered.
type Reply struct {
	// URL is the URL, where `*` stands for any text (`https://hooks.slack.com/*`); ""
	// matches any URL.
	URL string
	// Method is the method; "" matches any.
	Method string
	// Status is the response's status; 0 is 200.
	Status int
	Header map[string]string
	// Body is the response's body: a []byte or string as it is, any other value as JSON.
	Body any
	// Error, when set, is the host's reason for having no response instead
	// (`&http.Error{Kind: http.Timeout, Reason: "..."}`).
	Error *kwhttp.Error
}

// SentRequest is one request the plugin sent, as the host would receive it.
type SentRequest struct {
	Method string
	URL    string
	// Header is the request's headers, names lower-case.
	Header kwhttp.Header
	Body   []byte
	// TimeoutMs is the timeout the request asked for; nil for the host's.
	TimeoutMs *uint32
}

// JSON decodes the body into v.
func (r SentRequest) JSON(v any) error { return json.Unmarshal(r.Body, v) }

func (r Reply) matches(req wire.HttpRequest) bool {
	if r.Method != "" && !strings.EqualFold(r.Method, req.Method) {
		return false
	}
	if r.URL == "" {
		return true
	}
	parts := strings.Split(r.URL, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("(?s)^" + strings.Join(parts, ".*") + "$").MatchString(req.Url)
}

func (r Reply) answer() (cabi.Result[wire.HttpResponse, wire.HttpError], error) {
	if r.Error != nil {
		e := errorToWire(r.Error)
		return cabi.Result[wire.HttpResponse, wire.HttpError]{Err: &e}, nil
	}
	var body []byte
	switch b := r.Body.(type) {
	case nil:
	case []byte:
		body = b
	case string:
		body = []byte(b)
	default:
		var err error
		if body, err = json.Marshal(b); err != nil {
			return cabi.Result[wire.HttpResponse, wire.HttpError]{}, fmt.Errorf("reply to %s: the body does not encode to JSON: %w", r.URL, err)
		}
	}
	status := r.Status
	if status == 0 {
		status = 200
	}
	out := wire.HttpResponse{Status: uint16(status), Body: body}
	for k, v := range r.Header {
		out.Headers = append(out.Headers, [2]string{strings.ToLower(k), v})
	}
	return cabi.Result[wire.HttpResponse, wire.HttpError]{Ok: out}, nil
}

func errorToWire(e *kwhttp.Error) wire.HttpError {
	switch e.Kind {
	case kwhttp.Denied:
		return wire.HttpError{Tag: wire.HttpErrorDenied, Denied: e.Reason}
	case kwhttp.Timeout:
		return wire.HttpError{Tag: wire.HttpErrorTimeout, Timeout: e.Reason}
	case kwhttp.TooLarge:
		return wire.HttpError{Tag: wire.HttpErrorTooLarge, TooLarge: e.Reason}
	case kwhttp.TooManyRequests:
		return wire.HttpError{Tag: wire.HttpErrorTooManyRequests, TooManyRequests: e.Reason}
	default:
		return wire.HttpError{Tag: wire.HttpErrorFailed, Failed: e.Reason}
	}
}

// canned answers the plugin's requests during one call from replies and records them.
type canned struct {
	unused   []Reply
	requests []SentRequest
	err      error
}

func (c *canned) send(req wire.HttpRequest) cabi.Result[wire.HttpResponse, wire.HttpError] {
	header := kwhttp.Header{}
	for _, h := range req.Headers {
		header.Add(h[0], h[1])
	}
	c.requests = append(c.requests, SentRequest{Method: req.Method, URL: req.Url, Header: header, Body: req.Body, TimeoutMs: req.TimeoutMs})
	for i, r := range c.unused {
		if r.matches(req) {
			c.unused = append(c.unused[:i:i], c.unused[i+1:]...)
			out, err := r.answer()
			if err != nil && c.err == nil {
				c.err = err
			}
			return out
		}
	}
	e := wire.HttpError{Tag: wire.HttpErrorDenied, Denied: fmt.Sprintf("%s %s: no canned reply for this request", req.Method, req.Url)}
	return cabi.Result[wire.HttpResponse, wire.HttpError]{Err: &e}
}

// withReplies runs call with the plugin's requests answered from replies; the requests
// made, and an error in a reply itself.
func withReplies(replies []Reply, call func()) ([]SentRequest, error) {
	c := &canned{unused: append([]Reply(nil), replies...)}
	httpsink.Send = c.send
	defer func() { httpsink.Send = nil }()
	call()
	return c.requests, c.err
}
