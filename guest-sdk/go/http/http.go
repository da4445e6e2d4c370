// Package http sends a plugin's outbound HTTP requests, within what the operator
// granted, through the contract's `http.send` import: a small client shaped like
// net/http's.
//
//	resp, err := http.PostJSON(url, map[string]any{"text": "hello"})
//	if err != nil {
//		return err // a *http.Error: the host's reason, retryable or not
//	}
//	if err := resp.CheckStatus(); err != nil {
//		return err // retryable for 408, 425, 429 and 5xx
//	}
//
// A request is sent only when its URL is allowed both by the manifest's Outbound and by
// the operator's grant (`[http] allow` in the plugin's settings); otherwise, and when the
// host has no response for it, the call fails with an [*Error] whose message is the
// host's reason (for a denied URL, the setting that would allow it). Its chain holds a
// [kubewasm.Error], retryable when sending again later may succeed, so that returning it
// from Reconcile or Handle tells the host whether to retry.
//
// Bodies are whole (no streaming); the host caps the response's size and each request's
// time, and counts the requests of a call against its budget. In native tests
// (package kubewasmtest) requests are answered from canned responses and recorded. For
// net/http's own Client, package [kubewasm.dev/sdk/http/nethttp] has a RoundTripper
// (at the price of net/http's size in the component).
package http

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"kubewasm.dev/sdk"
	"kubewasm.dev/sdk/internal/wire"
)

// Header holds header names (lower-case) and their values; its methods take a name in
// any case.
type Header map[string][]string

// Get is the first value of name, or "".
func (h Header) Get(name string) string {
	if v := h[strings.ToLower(name)]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Values is every value of name.
func (h Header) Values(name string) []string { return h[strings.ToLower(name)] }

// Set replaces the values of name with value.
func (h Header) Set(name, value string) { h[strings.ToLower(name)] = []string{value} }

// Add appends value to the values of name.
func (h Header) Add(name, value string) {
	key := strings.ToLower(name)
	h[key] = append(h[key], value)
}

// Del removes name.
func (h Header) Del(name string) { delete(h, strings.ToLower(name)) }

// pairs is h as the contract carries headers: names sorted, each value in order.
func (h Header) pairs() [][2]string {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	sort.Strings(names)
	var out [][2]string
	for _, name := range names {
		for _, v := range h[name] {
			out = append(out, [2]string{name, v})
		}
	}
	return out
}

func headerOf(pairs [][2]string) Header {
	h := Header{}
	for _, p := range pairs {
		h.Add(p[0], p[1])
	}
	return h
}

// Request is one request.
type Request struct {
	// Method is GET, POST, PUT, PATCH, DELETE, HEAD...; "" is GET.
	Method string
	// URL is an absolute http:// or https:// URL.
	URL    string
	Header Header
	Body   []byte
	// Timeout is the whole request's, lowered to the host's; 0 is the host's.
	Timeout time.Duration
}

// NewRequest is a request of method to url with body (nil for none).
func NewRequest(method, url string, body []byte) *Request {
	return &Request{Method: method, URL: url, Header: Header{}, Body: body}
}

// Response is the response to a request, whatever its status.
type Response struct {
	StatusCode int
	// Header holds the response's headers, names lower-case.
	Header Header
	// Body is the whole body (the host caps its size).
	Body []byte
	// Request is the request this answers (the host follows redirects itself).
	Request *Request
}

// JSON decodes the body into v; a body that does not decode is a permanent error naming
// the request.
func (r *Response) JSON(v any) error {
	if err := json.Unmarshal(r.Body, v); err != nil {
		return kubewasm.Permanent("%s %s: the response does not decode: %v", r.Request.Method, r.Request.URL, err)
	}
	return nil
}

// CheckStatus is nil for a status below 400, else a [*StatusError]: retryable for 408,
// 425, 429 and 5xx, permanent for the other 4xx.
func (r *Response) CheckStatus() error {
	if r.StatusCode < 400 {
		return nil
	}
	return &StatusError{Response: r}
}

// StatusError is a response whose status is an error (see [Response.CheckStatus]).
type StatusError struct{ Response *Response }

func (e *StatusError) Error() string {
	r := e.Response
	text := strings.TrimSpace(string(r.Body[:min(len(r.Body), 200)]))
	if text != "" {
		text = ": " + text
	}
	return fmt.Sprintf("%s %s: HTTP %d%s", r.Request.Method, r.Request.URL, r.StatusCode, text)
}

// Unwrap is the [kubewasm.Error] the host receives for e.
func (e *StatusError) Unwrap() error {
	s := e.Response.StatusCode
	return &kubewasm.Error{Message: e.Error(), Retryable: s == 408 || s == 425 || s == 429 || s >= 500}
}

// ErrorKind is why a request has no response, a case of the contract's `http-error`.
type ErrorKind string

// The kinds.
const (
	// Denied: the URL is outside the manifest's Outbound or the operator's grant (the
	// message names the setting that would allow it), resolves only to refused addresses,
	// or a redirect left the grant.
	Denied ErrorKind = "denied"
	// Timeout: no complete response within the timeout.
	Timeout ErrorKind = "timeout"
	// TooLarge: the response body exceeds the host's cap.
	TooLarge ErrorKind = "too-large"
	// TooManyRequests: the call has used up its request budget (`[http] max-requests`).
	TooManyRequests ErrorKind = "too-many-requests"
	// Failed: anything else: a malformed request, DNS, connection, TLS, protocol.
	Failed ErrorKind = "failed"
)

// Retryable says whether sending the same request later may succeed.
func (k ErrorKind) Retryable() bool { return k == Timeout || k == Failed }

// Error is a request without a response: Kind says why, Reason is the host's own words,
// naming the URL's origin (for a denied URL, the setting that would allow it).
type Error struct {
	Kind   ErrorKind
	Reason string
}

func (e *Error) Error() string { return "HTTP request " + string(e.Kind) + ": " + e.Reason }

// Unwrap is the [kubewasm.Error] the host receives for e: retryable for a timeout or a
// failure.
func (e *Error) Unwrap() error {
	return &kubewasm.Error{Message: e.Error(), Retryable: e.Kind.Retryable()}
}

func errorFromWire(e wire.HttpError) *Error {
	switch e.Tag {
	case wire.HttpErrorDenied:
		return &Error{Kind: Denied, Reason: e.Denied}
	case wire.HttpErrorTimeout:
		return &Error{Kind: Timeout, Reason: e.Timeout}
	case wire.HttpErrorTooLarge:
		return &Error{Kind: TooLarge, Reason: e.TooLarge}
	case wire.HttpErrorTooManyRequests:
		return &Error{Kind: TooManyRequests, Reason: e.TooManyRequests}
	default:
		return &Error{Kind: Failed, Reason: e.Failed}
	}
}

// Client sends requests with defaults of its own.
type Client struct {
	// Timeout applies to requests that set none; 0 is the host's.
	Timeout time.Duration
	// Header is added to every request that does not set the same name.
	Header Header
}

// DefaultClient is the client of the package's functions.
var DefaultClient = &Client{}

// Do sends req and returns its response, whatever its status; an [*Error] when there is
// none.
func (c *Client) Do(req *Request) (*Response, error) {
	header := Header{}
	for name, values := range c.Header {
		header[strings.ToLower(name)] = values
	}
	for name, values := range req.Header {
		header[strings.ToLower(name)] = values
	}
	method := strings.ToUpper(req.Method)
	if method == "" {
		method = "GET"
	}
	w := wire.HttpRequest{Method: method, Url: req.URL, Headers: header.pairs(), Body: req.Body}
	timeout := req.Timeout
	if timeout == 0 {
		timeout = c.Timeout
	}
	if timeout > 0 {
		ms := uint32(min(max(timeout.Milliseconds(), 1), int64(^uint32(0))))
		w.TimeoutMs = &ms
	}
	result := send(w)
	if result.Err != nil {
		return nil, errorFromWire(*result.Err)
	}
	return &Response{StatusCode: int(result.Ok.Status), Header: headerOf(result.Ok.Headers), Body: result.Ok.Body, Request: req}, nil
}

// Get sends a GET request to url.
func (c *Client) Get(url string) (*Response, error) { return c.Do(NewRequest("GET", url, nil)) }

// Post sends body to url with a POST request and its Content-Type.
func (c *Client) Post(url, contentType string, body []byte) (*Response, error) {
	req := NewRequest("POST", url, body)
	req.Header.Set("Content-Type", contentType)
	return c.Do(req)
}

// PostJSON sends v to url as JSON with a POST request.
func (c *Client) PostJSON(url string, v any) (*Response, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, kubewasm.Permanent("POST %s: the body does not encode to JSON: %v", url, err)
	}
	return c.Post(url, "application/json", body)
}

// Do sends req with [DefaultClient].
func Do(req *Request) (*Response, error) { return DefaultClient.Do(req) }

// Get sends a GET request to url with [DefaultClient].
func Get(url string) (*Response, error) { return DefaultClient.Get(url) }

// Post sends body to url with a POST request with [DefaultClient].
func Post(url, contentType string, body []byte) (*Response, error) {
	return DefaultClient.Post(url, contentType, body)
}

// PostJSON sends v to url as JSON with a POST request with [DefaultClient].
func PostJSON(url string, v any) (*Response, error) { return DefaultClient.PostJSON(url, v) }
