"""Admission and conversion: writes and objects handed to a plugin's default, validate
and convert through the export glue, as the host sends them, and the answers as the API
server would take them."""

import pytest

import kubewasm
from kubewasm import (
    AdmissionRequest,
    AdmissionRule,
    Defaulted,
    Denial,
    KindRef,
    Manifest,
    Operation,
    PermanentError,
    UserInfo,
    Verdict,
    export,
    kinds,
    testing,
)

WIDGET = KindRef("x.io", "v1", "Widget", "widgets")


def widget(spec=None, name="w"):
    return {"apiVersion": "x.io/v1", "kind": "Widget", "metadata": {"name": name, "namespace": "shop", "uid": "u-1"}, "spec": spec or {}}


seen: list[AdmissionRequest] = []


@kubewasm.plugin
class Widgets:
    def describe(self):
        return Manifest(
            "widgets",
            WIDGET,
            crds=["kind: CustomResourceDefinition"],
            defaults=[AdmissionRule(WIDGET)],
            validates=[AdmissionRule(WIDGET, (Operation.CREATE, Operation.UPDATE, Operation.DELETE))],
            converts=True,
        )

    def reconcile(self, request):
        return kubewasm.Response()

    def default(self, request):
        seen.append(request)
        spec = request.object["spec"]
        mode = spec.get("mode")
        if mode == "patch":
            return Defaulted.with_patch([{"op": "add", "path": "/spec/size", "value": 3}]).warning("size defaulted")
        if mode == "whole":
            return Defaulted.with_object({**request.object, "spec": {"size": 5}})
        if mode == "refuse":
            raise Denial.invalid("spec.mode", "must not be refuse")
        if mode == "field":
            request.object.field("spec.missing", str)
        spec.setdefault("size", 1)
        return None

    def validate(self, request):
        seen.append(request)
        if request.operation is Operation.DELETE:
            raise Denial("widgets are forever")
        size = request.object["spec"]["size"]
        if size > 10:
            raise Denial.invalid("spec.size", "must be at most 10").cause("spec.mode", "FieldValueRequired", "Required value")
        return Verdict.allow().warning("a big widget") if size > 5 else None

    def convert(self, object, desired):
        if object["spec"].get("broken"):
            raise PermanentError("spec.broken cannot be converted")
        version = desired.split("/")[1]
        metadata = {**object["metadata"], "labels": {**object.labels, "converted": version}, "generation": 99}
        return {**object, "apiVersion": desired, "metadata": metadata, "spec": {**object["spec"], "version": version}}


def test_the_manifest_carries_the_admission_rules_kept_kinds_and_conversion():
    testing.bindings()
    m = Manifest(
        "c", WIDGET, children=[kinds.Job], keep_unlisted=[kinds.Job], validates=[AdmissionRule(kinds.Job, (Operation.DELETE,))]
    )
    wire = export.manifest_to_wit(m)
    assert [k.kind for k in wire.keep_unlisted] == ["Job"]
    assert [(r.kind.kind, [o.name for o in r.operations]) for r in wire.validates] == [("Job", ["DELETE"])]
    assert (wire.defaults, wire.converts) == ([], False)
    with pytest.raises(kubewasm.ManifestError, match=r"defaults\[0\]\.operations: 'create' is none of"):
        Manifest("c", WIDGET, defaults=[AdmissionRule(WIDGET, ("create",))]).check()


def test_the_request_reaches_default_typed_with_every_field_the_host_sent():
    seen.clear()
    testing.defaulted(
        Widgets,
        widget({"size": 2}),
        user_info=UserInfo("alice", groups=["dev"], extra={"scopes": ["a", "b"]}),
        dry_run=True,
        options={"fieldManager": "kubectl"},
        uid="review-1",
        sub_resource="status",
        now="2026-03-04T05:06:07Z",
        config={"strict": True},
    )
    (request,) = seen
    assert request.operation is Operation.CREATE and request.kind == WIDGET
    assert (request.name, request.namespace, request.uid, request.sub_resource) == ("w", "shop", "review-1", "status")
    assert request.user_info == UserInfo("alice", "", ["dev"], {"scopes": ["a", "b"]})
    assert (request.dry_run, request.options, request.config) == (True, {"fieldManager": "kubectl"}, {"strict": True})
    assert request.now.isoformat() == "2026-03-04T05:06:07+00:00"
    assert request.old_object is None


def test_default_may_change_the_object_in_place_return_an_object_or_a_patch_or_refuse():
    in_place = testing.defaulted(Widgets, widget({}))
    assert in_place.object["spec"]["size"] == 1 and in_place.mutation.object["spec"]["size"] == 1
    assert testing.defaulted(Widgets, widget({"size": 2})).mutation.is_unchanged
    patched = testing.defaulted(Widgets, widget({"mode": "patch"}))
    assert patched.object["spec"] == {"mode": "patch", "size": 3}
    assert patched.warnings == ["size defaulted"]
    assert testing.defaulted(Widgets, widget({"mode": "whole"})).object["spec"] == {"size": 5}
    with pytest.raises(Denial) as refused:
        testing.defaulted(Widgets, widget({"mode": "refuse"}))
    assert str(refused.value) == "spec.mode: must not be refuse"
    assert refused.value.causes == [kubewasm.FieldCause("spec.mode", "must not be refuse", "FieldValueInvalid")]
    # A field the plugin reads and does not find refuses the write, with the field named.
    with pytest.raises(Denial, match=r"spec\.missing"):
        testing.defaulted(Widgets, widget({"mode": "field"}))


def test_the_host_asks_only_about_the_writes_the_rules_select():
    with pytest.raises(testing.HostWouldRefuse) as refused:
        testing.defaulted(Widgets, widget({}), operation="DELETE")
    assert str(refused.value) == (
        "the host asks about the writes the manifest's defaults select: CREATE/UPDATE of x.io/v1 Widget, "
        "not DELETE of x.io/v1 Widget"
    )
    with pytest.raises(testing.HostWouldRefuse):
        testing.validated(Widgets, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})


def test_validate_allows_warns_or_denies_with_field_causes():
    assert testing.validated(Widgets, widget({"size": 1})).allowed
    big = testing.validated(Widgets, widget({"size": 6}), old_object=widget({"size": 1}))
    assert big.allowed and big.warnings == ["a big widget"]
    denied = testing.validated(Widgets, widget({"size": 11}))
    assert not denied.allowed
    assert str(denied.denied) == "spec.size: must be at most 10, spec.mode: Required value"
    assert [c.reason for c in denied.denied.causes] == ["FieldValueInvalid", "FieldValueRequired"]
    seen.clear()
    deleted = testing.validated(Widgets, widget({"size": 1}), operation=Operation.DELETE)
    assert str(deleted.denied) == "widgets are forever"
    assert seen[0].object is None and seen[0].old_object.name == "w"


def test_a_plugin_without_admission_changes_nothing_allows_everything_and_converts_nothing():
    @kubewasm.plugin
    class Plain:
        def describe(self):
            return Manifest("plain", WIDGET)

        def reconcile(self, request):
            return kubewasm.Response()

    testing.bindings()
    from componentize_py_types import Err

    request = export.admission_request_to_wit(AdmissionRequest(WIDGET, Operation.CREATE, kubewasm.Object(widget()), name="w"))
    answer = export.default(Plain(), request)
    assert type(answer.mutation).__name__ == "Mutation_Unchanged"
    assert export.validate(Plain(), request).denied is None
    wit, _ = export._wit()
    with pytest.raises(Err) as failed:
        export.convert(Plain(), wit.ConversionRequest(objects=[kubewasm.export.to_json("o", widget())], desired_api_version="x.io/v2", now="", config="null"))
    assert failed.value.value == 'object #0 (Widget "w"): this plugin converts no objects, and was asked to convert a Widget'
    # An object that is not JSON is refused, never let through unexamined.
    request.object = "{"
    assert export.validate(Plain(), request).denied.message.startswith("object is not JSON")


def test_convert_answers_each_object_in_the_desired_version_and_the_api_server_keeps_its_metadata():
    stored = widget({"size": 2})
    stored["metadata"].update(labels={"a": "1"}, generation=4)
    (v2,) = testing.converted(Widgets, [stored], "x.io/v2")
    assert v2["apiVersion"] == "x.io/v2" and v2["spec"] == {"size": 2, "version": "v2"}
    assert v2.labels == {"a": "1", "converted": "v2"}
    # Only labels and annotations of metadata may change; the rest is restored.
    assert v2.generation == 4
    with pytest.raises(PermanentError, match=r'^object #0 \(Widget "w"\): spec.broken cannot be converted$'):
        testing.converted(Widgets, [widget({"broken": True})], "x.io/v2")
