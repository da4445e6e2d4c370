"""The HTTP client: what it sends for each way of giving a body, what it reads of a
response, and how the host's reasons for no response become errors."""

import pytest

import kubewasm
from kubewasm import Manifest, Watch, http, kinds, testing
from kubewasm.testing import Reply

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d", "uid": "u"}}
results: dict = {}


@kubewasm.plugin
class Client:
    """Runs the requests its settings name, keeping what came back."""

    def describe(self) -> Manifest:
        return Manifest.handler("client", watches=[Watch(kinds.Pod)], outbound=["https://api.example.com"])

    def handle(self, event) -> None:
        results.clear()
        for name, call in CALLS[event.config].items():
            try:
                results[name] = call()
            except http.RequestError as e:
                results[name] = e


CALLS = {
    "bodies": {
        "json": lambda: http.post("https://api.example.com/j", json={"a": "é"}, headers={"X-Trace": "1"}),
        "form": lambda: http.put("https://api.example.com/f", data={"q": ["a b", "c"]}),
        "text": lambda: http.patch("https://api.example.com/t", data="hé", timeout=2.5),
        "bytes": lambda: http.delete("https://api.example.com/b?x=1", data=b"\x00\x01", params={"y": "2"}),
        "typed": lambda: http.post("https://api.example.com/c", data="{}", headers={"content-type": "application/merge-patch+json"}),
    },
    "responses": {"get": lambda: http.get("https://api.example.com/r")},
    "errors": {kind: (lambda k=kind: http.get(f"https://api.example.com/{k}")) for kind in http.ERRORS},
}


def test_each_body_goes_with_its_content_type():
    out = testing.handle(Client, "added", POD, config="bodies", http=[Reply()] * 5)
    sent = {r.url: r for r in out.requests}
    j = sent["https://api.example.com/j"]
    assert (j.method, j.body, j.header("content-type"), j.header("x-trace")) == ("POST", '{"a":"é"}'.encode(), "application/json", "1")
    f = sent["https://api.example.com/f"]
    assert (f.method, f.text, f.header("Content-Type")) == ("PUT", "q=a+b&q=c", "application/x-www-form-urlencoded")
    t = sent["https://api.example.com/t"]
    assert (t.method, t.body, t.header("content-type"), t.timeout_ms) == ("PATCH", "hé".encode(), "text/plain; charset=utf-8", 2500)
    b = sent["https://api.example.com/b?x=1&y=2"]
    assert (b.method, b.body, b.headers, b.timeout_ms) == ("DELETE", b"\x00\x01", [], None)
    c = sent["https://api.example.com/c"]
    assert c.headers == [("content-type", "application/merge-patch+json")]


def test_a_response_reads_as_requests_reads_one():
    reply = Reply(201, body={"ok": True}, headers=[("Set-Cookie", "a=1"), ("set-cookie", "b=2"), ("Content-Type", "application/json")])
    testing.handle(Client, "added", POD, config="responses", http=[reply])
    response = results["get"]
    assert (response.status_code, response.ok, response.json(), response.text) == (201, True, {"ok": True}, '{"ok": true}')
    assert response.headers["content-type"] == "application/json"
    assert response.headers["SET-COOKIE"] == "a=1, b=2"
    assert response.headers.get_all("set-cookie") == ["a=1", "b=2"]
    assert response.raise_for_status() is response


def test_a_body_that_is_not_json_is_a_permanent_error_naming_the_request():
    testing.handle(Client, "added", POD, config="responses", http=[Reply(200, body="<html>")])
    with pytest.raises(kubewasm.PermanentError, match=r"GET https://api.example.com/r: the response is not JSON"):
        results["get"].json()


def test_each_reason_of_the_host_is_its_own_error_retryable_or_not():
    replies = [Reply(error=cls(f"https://api.example.com:443: {kind}"), url=f"*/{kind}") for kind, cls in http.ERRORS.items()]
    testing.handle(Client, "added", POD, config="errors", http=replies)
    assert {k: (type(e), e.retryable) for k, e in results.items()} == {
        "denied": (http.Denied, False),
        "timeout": (http.Timeout, True),
        "too-large": (http.TooLarge, False),
        "too-many-requests": (http.TooManyRequests, False),
        "failed": (http.Failed, True),
    }
    assert results["denied"].reason == "https://api.example.com:443: denied"
    assert results["denied"].message == "HTTP request denied: https://api.example.com:443: denied"


def test_replies_answer_in_order_each_once():
    replies = [Reply(500, url="*/r"), Reply(200, url="*/r")]
    testing.handle(Client, "added", POD, config="responses", http=replies)
    assert results["get"].status_code == 500


def test_without_a_harness_nothing_leaves_the_process():
    testing.bindings()
    with pytest.raises(http.Denied, match="no network outside a component"):
        http.get("https://api.example.com/")
