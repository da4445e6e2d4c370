// Package nethttp lets net/http's Client send through the contract's `http.send` import:
//
//	client := &http.Client{Transport: nethttp.Transport{}}
//	resp, err := client.Post(url, "application/json", body)
//
// so that libraries written for net/http work in a plugin. The host follows redirects
// itself (within the grant), so the Client sees the final response. Errors are the
// [kubewasm.dev/sdk/http.Error] of the host's reason, wrapped by net/http in a
// *url.Error; errors.As finds both it and the kubewasm.Error the host receives.
//
// net/http makes a component several megabytes larger; package
// [kubewasm.dev/sdk/http] is the small client.
package nethttp

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	kwhttp "kubewasm.dev/sdk/http"
)

// Transport is a net/http RoundTripper over the contract's `http.send` import.
type Transport struct {
	// Client sends the requests; nil is kwhttp.DefaultClient.
	Client *kwhttp.Client
}

// RoundTrip implements http.RoundTripper.
func (t Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	out := kwhttp.NewRequest(req.Method, req.URL.String(), body)
	for name, values := range req.Header {
		for _, v := range values {
			out.Header.Add(name, v)
		}
	}
	if req.Host != "" && req.Host != req.URL.Host {
		out.Header.Set("Host", req.Host)
	}
	client := t.Client
	if client == nil {
		client = kwhttp.DefaultClient
	}
	resp, err := client.Do(out)
	if err != nil {
		return nil, err
	}
	header := http.Header{}
	for name, values := range resp.Header {
		for _, v := range values {
			header.Add(name, v)
		}
	}
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode)),
		StatusCode:    resp.StatusCode,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          io.NopCloser(bytes.NewReader(resp.Body)),
		ContentLength: int64(len(resp.Body)),
		Request:       req,
	}, nil
}
