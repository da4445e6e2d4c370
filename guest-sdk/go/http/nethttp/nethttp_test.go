package nethttp_test

import (
	"errors"
	"io"
	stdhttp "net/http"
	"strings"
	"testing"

	"kubewasm.dev/sdk"
	"kubewasm.dev/sdk/http"
	"kubewasm.dev/sdk/http/nethttp"
	"kubewasm.dev/sdk/kinds"
	"kubewasm.dev/sdk/kubewasmtest"
)

// poster posts through net/http's Client and keeps what came back.
type poster struct{ got *string }

func (poster) Describe() kubewasm.Manifest {
	return kubewasm.Manifest{Name: "poster", Watches: []kubewasm.Watch{kubewasm.Watching(kinds.Pod)}, Outbound: []string{"https://api.example.com"}}
}

func (p poster) Handle(*kubewasm.ObjectEvent) error {
	client := &stdhttp.Client{Transport: nethttp.Transport{}}
	req, _ := stdhttp.NewRequest("PUT", "https://api.example.com/x?y=1", strings.NewReader("hello"))
	req.Header.Set("X-Trace", "1")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	*p.got = resp.Status + " " + resp.Header.Get("Etag") + " " + string(body)
	return nil
}

var pod = map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "uid": "u"}}

func TestNetHTTPsClientSendsThroughTheContract(t *testing.T) {
	var got string
	reply := kubewasmtest.Reply{Status: 201, Header: map[string]string{"ETag": `"1"`}, Body: "made"}
	out, err := kubewasmtest.Handle(poster{&got}, kubewasmtest.Event{Change: kubewasm.Added, Object: pod, HTTP: []kubewasmtest.Reply{reply}})
	if err != nil {
		t.Fatal(err)
	}
	sent := out.Requests[0]
	if sent.Method != "PUT" || sent.URL != "https://api.example.com/x?y=1" || string(sent.Body) != "hello" || sent.Header.Get("x-trace") != "1" {
		t.Errorf("sent: %+v", sent)
	}
	if got != `201 Created "1" made` {
		t.Errorf("got %q", got)
	}
}

func TestTheHostsReasonSurvivesNetHTTPsWrapping(t *testing.T) {
	var got string
	reply := kubewasmtest.Reply{Error: &http.Error{Kind: http.Denied, Reason: "https://api.example.com:443 is not granted"}}
	_, err := kubewasmtest.Handle(poster{&got}, kubewasmtest.Event{Change: kubewasm.Added, Object: pod, HTTP: []kubewasmtest.Reply{reply}})
	var e *kubewasm.Error
	if !errors.As(err, &e) || e.Retryable || !strings.Contains(e.Message, "HTTP request denied: https://api.example.com:443 is not granted") {
		t.Errorf("%v", err)
	}
}
