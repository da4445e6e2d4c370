"""The native test harness: a plugin runs through the export glue with the generated
WIT records, and its answer is checked as the host checks it."""

import logging
from datetime import timedelta

import pytest

import kubewasm
from kubewasm import Event, KindRef, Manifest, Query, Request, Response, kinds, log, testing
from kubewasm.testing import HostWouldRefuse

PARENT = {
    "apiVersion": "example.com/v1",
    "kind": "Echo",
    "metadata": {"name": "hello", "namespace": "default", "uid": "u-1"},
    "spec": {"say": "hi", "mode": "ok"},
}


@kubewasm.plugin
class Echo:
    def describe(self) -> Manifest:
        return Manifest(
            "echo",
            KindRef("example.com", "v1", "Echo", "echoes"),
            children=[kinds.ConfigMap],
            related=[kinds.Secret],
        )

    def related(self, parent):
        return [Query.named(kinds.Secret, parent.namespace, [parent.name])]

    def reconcile(self, request: Request) -> Response:
        parent = request.parent
        mode = parent.field("spec.mode", str)
        log.info("reconciling", mode=mode, children=len(request.children))
        if mode == "retry":
            raise kubewasm.RetryableError("the secret is not there yet")
        if mode == "foreign":
            return Response().child({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}})
        if mode == "crash":
            raise KeyError("a bug")
        if mode == "delete":
            response = Response()
            for child in request.children:
                response.delete_child(child)
            return response
        secret = request.find_related(kinds.Secret, parent.name)
        data = {"said": parent.field("spec.say", str), "secret": "yes" if secret else "no"}
        response = Response(status={"said": True}, requeue_after=timedelta(seconds=30))
        response.child({"apiVersion": "v1", "kind": "ConfigMap", "metadata": parent.child_meta(parent.name), "data": data})
        response.label("echo.example.com/said", "hi").annotation("echo.example.com/at", request.now_rfc3339)
        return response.event(Event.normal("Echoed", f"said {data['said']}"))


def test_the_plugin_class_is_exported_as_the_modules_reconciler():
    assert Reconciler.plugin is Echo  # noqa: F821 - defined by @kubewasm.plugin
    assert Reconciler._kubewasm_export  # noqa: F821


def test_an_answer_comes_back_decoded_and_with_its_namespace():
    out = testing.reconcile(Echo, PARENT, related=[{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hello"}}])
    cm = out.child(kinds.ConfigMap, "hello")
    assert cm["data"] == {"said": "hi", "secret": "yes"}
    assert cm.namespace == "default"
    assert out.status == {"said": True}
    assert out.labels == {"echo.example.com/said": "hi"}
    assert out.annotations == {"echo.example.com/at": "2026-01-01T00:00:00Z"}
    assert out.requeue_after == timedelta(seconds=30)
    assert [(e.type, e.reason, e.message) for e in out.events] == [(kubewasm.EventType.NORMAL, "Echoed", "said hi")]
    assert out.warnings() == []
    assert out.logs == [(log.Level.INFO, "reconciling", [("mode", "ok"), ("children", "0")])]


def test_observed_children_deleted_by_uid_come_back_and_an_unobserved_one_is_refused():
    def config_map(name: str) -> dict:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}}

    deleting = {**PARENT, "spec": {"mode": "delete"}}
    out = testing.reconcile(Echo, deleting, children=[config_map("old"), config_map("older")])
    assert [c.name for c in out.deleted] == ["old", "older"]
    assert out.children == []
    unnamed = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}
    with pytest.raises(HostWouldRefuse, match=r'delete #0 \(""\) is not the metadata.uid of an observed child'):
        testing.reconcile(Echo, deleting, children=[unnamed])


def test_a_missing_child_fails_with_what_was_desired():
    out = testing.reconcile(Echo, PARENT)
    with pytest.raises(AssertionError, match=r"no desired v1 ConfigMap named 'other' \(desired: ConfigMap default/hello\)"):
        out.child(kinds.ConfigMap, "other")


def test_errors_reach_the_test_as_the_host_receives_them():
    with pytest.raises(kubewasm.RetryableError, match="not there yet") as retry:
        testing.reconcile(Echo, {**PARENT, "spec": {"mode": "retry"}})
    assert retry.value.retryable
    with pytest.raises(kubewasm.PermanentError, match=r"Echo default/hello: spec\.mode: missing field") as bad:
        testing.reconcile(Echo, {**PARENT, "spec": {}})
    assert not bad.value.retryable


def test_an_unexpected_exception_is_a_bug_and_propagates():
    with pytest.raises(KeyError, match="a bug"):
        testing.reconcile(Echo, {**PARENT, "spec": {"mode": "crash"}})


def test_an_answer_the_host_would_refuse_fails_with_its_reasons():
    with pytest.raises(HostWouldRefuse) as refused:
        testing.reconcile(Echo, {**PARENT, "spec": {"mode": "foreign"}})
    assert str(refused.value) == (
        "the host would refuse this answer: response of plugin echo refused: child #0 (v1 Secret \"s\") "
        "is of a kind the plugin did not declare in `children` (declared: v1 ConfigMap)"
    )


def test_related_queries_go_through_the_glue():
    assert testing.related(Echo, PARENT) == [Query.named(kinds.Secret, "default", ["hello"])]


def test_a_manifest_the_host_would_not_load_fails_describe():
    @kubewasm.plugin
    class Shouting:
        def describe(self):
            return Manifest("SHOUT", KindRef("x.io", "v1", "X", "xs"))

        def reconcile(self, request):
            return Response()

    with pytest.raises(HostWouldRefuse, match=r'name "SHOUT" must be a DNS label'):
        testing.describe(Shouting)


def test_a_class_named_reconciler_is_refused_with_the_reason():
    with pytest.raises(TypeError, match="the name `Reconciler` is taken"):

        @kubewasm.plugin
        class Reconciler:  # noqa: F811
            def describe(self): ...

            def reconcile(self, request): ...


def test_a_class_without_reconcile_is_refused():
    with pytest.raises(TypeError, match="needs a method `reconcile`"):

        @kubewasm.plugin
        class Half:
            def describe(self): ...


def test_values_that_are_not_json_are_a_permanent_error_naming_the_child():
    @kubewasm.plugin
    class Sets:
        def describe(self):
            return Manifest("sets", KindRef("x.io", "v1", "X", "xs"), children=[kinds.ConfigMap])

        def reconcile(self, request):
            return Response().child({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {1, 2}})

    with pytest.raises(kubewasm.PermanentError, match="child #0 does not serialize to JSON"):
        testing.reconcile(Sets, {"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "x", "namespace": "d"}})


def test_request_now_is_parsed_and_children_are_found_by_kind():
    seen = {}

    @kubewasm.plugin
    class Look:
        def describe(self):
            return Manifest("look", KindRef("x.io", "v1", "X", "xs"), children=[kinds.Deployment, kinds.Service])

        def reconcile(self, request: Request):
            seen["now"] = request.now
            seen["deployment"] = request.child(kinds.Deployment, "web")
            seen["services"] = request.children_of(kinds.Service)
            seen["config"] = request.config
            return Response()

    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "status": {"availableReplicas": 1}}
    parent = {"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "x", "namespace": "d"}}
    testing.reconcile(Look, parent, children=[deployment], now="2026-03-04T05:06:07Z", config={"k": "v"})
    assert seen["now"].isoformat() == "2026-03-04T05:06:07+00:00"
    assert seen["deployment"]["status"]["availableReplicas"] == 1
    assert seen["services"] == []
    assert seen["config"] == {"k": "v"}
    logging.getLogger(__name__).debug("the harness leaves logging alone")
