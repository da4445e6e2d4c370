"""Event handlers: a change delivered through the export glue with the generated WIT
records, the plugin's HTTP requests answered from canned replies and recorded."""

import pytest

import kubewasm
from kubewasm import Change, KindRef, Manifest, ObjectEvent, Watch, http, kinds, log, testing
from kubewasm.testing import HostWouldRefuse, Reply

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-0", "namespace": "shop", "uid": "u-1", "resourceVersion": "42"},
}
HOOK = "https://hooks.example.com/pods"

seen: list[ObjectEvent] = []


@kubewasm.plugin
class Notify:
    def describe(self) -> Manifest:
        return Manifest.handler(
            "notify", watches=[Watch(kinds.Pod, label_selector="app=web"), Watch(kinds.Node)], outbound=[HOOK]
        )

    def handle(self, event: ObjectEvent) -> None:
        seen.append(event)
        mode = (event.config or {}).get("mode", "post")
        if mode == "retry":
            raise kubewasm.RetryableError("the receiver is down")
        if mode == "crash":
            raise KeyError("a bug")
        log.info("notifying", change=event.change.value, attempt=event.attempt)
        response = http.post(HOOK, json={"pod": event.object.name, "change": event.change.value, "id": event.delivery_id})
        response.raise_for_status()


@pytest.fixture(autouse=True)
def forget():
    seen.clear()


def test_the_event_reaches_the_handler_typed_and_its_request_is_recorded():
    out = testing.handle(Notify, "updated", POD, old_object={**POD, "metadata": {**POD["metadata"], "resourceVersion": "41"}},
                         attempt=2, now="2026-03-04T05:06:07Z", config={"mode": "post"}, http=[Reply(200)])
    [event] = seen
    assert event.change is Change.UPDATED
    assert event.kind == kinds.Pod
    assert event.object.name == "web-0" and event.object.namespace == "shop"
    assert event.old_object["metadata"]["resourceVersion"] == "41"
    assert (event.initial, event.final_state_unknown, event.attempt) == (False, False, 2)
    assert event.delivery_id == "u-1:42:updated"
    assert event.now.isoformat() == "2026-03-04T05:06:07+00:00"
    assert event.config == {"mode": "post"}
    [request] = out.requests
    assert (request.method, request.url, request.header("Content-Type")) == ("POST", HOOK, "application/json")
    assert request.json() == {"pod": "web-0", "change": "updated", "id": "u-1:42:updated"}
    assert out.logs == [(log.Level.INFO, "notifying", [("change", "updated"), ("attempt", "2")])]


def test_every_field_of_the_event_survives_the_wit_record():
    testing.handle(Notify, Change.DELETED, POD, initial=True, final_state_unknown=True, delivery_id="d-1", http=[Reply()])
    [event] = seen
    assert (event.change, event.initial, event.final_state_unknown, event.delivery_id) == (Change.DELETED, True, True, "d-1")
    assert event.old_object is None


def test_errors_reach_the_test_as_the_host_receives_them():
    with pytest.raises(kubewasm.RetryableError, match="the receiver is down"):
        testing.handle(Notify, "added", POD, config={"mode": "retry"})
    with pytest.raises(KeyError, match="a bug"):
        testing.handle(Notify, "added", POD, config={"mode": "crash"})


def test_a_response_with_an_error_status_is_retried_or_not_by_its_status():
    with pytest.raises(kubewasm.RetryableError, match=rf"POST {HOOK}: HTTP 503: busy"):
        testing.handle(Notify, "added", POD, http=[Reply(503, body="busy")])
    with pytest.raises(kubewasm.PermanentError, match=rf"POST {HOOK}: HTTP 404"):
        testing.handle(Notify, "added", POD, http=[Reply(404)])


def test_a_failed_calls_error_carries_what_the_call_sent_and_logged():
    with pytest.raises(kubewasm.RetryableError) as down:
        testing.handle(Notify, "added", POD, http=[Reply(503, body="busy")])
    assert [(r.method, r.url, r.json()["pod"]) for r in down.value.requests] == [("POST", HOOK, "web-0")]
    assert down.value.logs == [(log.Level.INFO, "notifying", [("change", "added"), ("attempt", "1")])]

    @kubewasm.plugin
    class Fetching:
        def describe(self):
            return Manifest("fetching", KindRef("x.io", "v1", "X", "xs"), outbound=[HOOK])

        def reconcile(self, request):
            log.warn("fetching")
            http.get(HOOK)
            raise kubewasm.PermanentError("refused")

    parent = {"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "x", "namespace": "d", "uid": "u"}}
    with pytest.raises(kubewasm.PermanentError) as refused:
        testing.reconcile(Fetching, parent, http=[Reply()])
    assert [(r.method, r.url) for r in refused.value.requests] == [("GET", HOOK)]
    assert [message for _, message, _ in refused.value.logs] == ["fetching"]


def test_a_request_no_reply_answers_is_denied():
    with pytest.raises(kubewasm.PermanentError, match=rf"HTTP request denied: POST {HOOK}: no canned reply"):
        testing.handle(Notify, "added", POD, http=[Reply(200, url="https://elsewhere.example.com/*")])


def test_the_host_reason_for_no_response_reaches_the_plugin_and_the_host():
    reason = "https://hooks.example.com:443: no response within 10s"
    with pytest.raises(kubewasm.RetryableError) as timeout:
        testing.handle(Notify, "added", POD, http=[Reply(error=http.Timeout(reason))])
    assert timeout.value.message == f"HTTP request timeout: {reason}"


def test_a_kind_no_watch_selects_is_never_delivered():
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
    with pytest.raises(HostWouldRefuse, match=r"the manifest watches v1 Pod, v1 Node, not apps/v1 Deployment"):
        testing.handle(Notify, "added", deployment)


def test_the_manifest_carries_watches_and_outbound_through_the_wit_record():
    from kubewasm import export

    wire = export.describe(Notify())
    assert wire.parent is None
    assert [(w.kind.kind, w.label_selector, w.field_selector) for w in wire.watches] == [("Pod", "app=web", None), ("Node", None, None)]
    assert wire.outbound == [HOOK]


def test_a_plugin_calls_only_what_it_implements():
    from componentize_py_types import Err

    from kubewasm import export

    testing.bindings()
    with pytest.raises(Err) as reconcile:
        export.reconcile(Notify(), None)
    assert reconcile.value.value.message == "this plugin reconciles nothing: its manifest names no parent"
    assert export.related(Notify(), "{}") == []

    @kubewasm.plugin
    class Reconciles:
        def describe(self):
            return Manifest("r", KindRef("x.io", "v1", "X", "xs"))

        def reconcile(self, request):
            return kubewasm.Response()

    event = export.event_to_wit(ObjectEvent(Change.ADDED, kinds.Pod, kubewasm.Object(POD)))
    with pytest.raises(Err) as handle:
        export.handle(Reconciles(), event)
    assert handle.value.value.message == "this plugin handles no events: its manifest declares no watches"


def test_a_class_that_implements_nothing_is_refused():
    with pytest.raises(TypeError, match="needs a method `reconcile`, `handle`, `default`, `validate` or `convert`"):

        @kubewasm.plugin
        class Idle:
            def describe(self): ...


def test_a_handler_that_returns_a_value_is_told_to_return_nothing():
    @kubewasm.plugin
    class Answers:
        def describe(self):
            return Manifest.handler("answers", watches=[Watch(kinds.Pod)])

        def handle(self, event):
            return True

    with pytest.raises(TypeError, match="handle returned bool; return nothing, or raise to fail"):
        testing.handle(Answers, "added", POD)
