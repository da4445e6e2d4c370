"""Export a plugin class as the component's implementation of the contract.

``@kubewasm.plugin`` on a class with ``describe`` and ``reconcile`` (and optionally
``related``), or ``handle``, or both, and any of ``default``, ``validate`` and ``convert``,
is all a plugin module needs: it defines the module's ``PluginInfo``, ``Reconciler``,
``Handler`` and ``Admission``, the classes componentize-py exports for the WIT
interfaces ``plugin-info``, ``reconciler``, ``handler`` and ``admission``. The functions below
are the glue between the WIT records and the SDK's types: decode the request, call the
plugin, encode the answer (or the event, for ``handle``). ``kubewasm.testing`` calls the same functions natively, with
the same generated WIT records, so tests exercise the path a WebAssembly call takes.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from datetime import timedelta
from typing import Any, Optional, TypeVar

from .admission import AdmissionRequest, AdmissionRule, Defaulted, Denial, Operation, UserInfo, Verdict
from .errors import Error, PermanentError
from .event import Change, ObjectEvent
from .kind import KindRef
from .manifest import Manifest
from .objects import Object
from .query import LabelOperator, Query
from .request import Request
from .response import EventType, Response

EXPORT_NAMES = ("PluginInfo", "Reconciler", "Handler", "Admission")
"""The module attributes componentize-py looks for: the WIT interfaces' names."""

T = TypeVar("T", bound=type)

_METHODS = ("reconcile", "handle", "default", "validate", "convert")


def plugin(cls: T) -> T:
    """Export ``cls`` as the plugin of the module that defines it.

    ``cls`` needs ``describe(self) -> Manifest``, and ``reconcile(self, request) ->
    Response`` (a reconciler, which may have ``related(self, parent) -> list[Query]``;
    default: no related objects), or ``handle(self, event: ObjectEvent) -> None`` (an
    event handler), or both; the manifest says which the host calls. Each call gets a
    fresh instance, as the host runs each call in a fresh component instance: nothing
    survives between calls.
    """
    if not callable(getattr(cls, "describe", None)):
        raise TypeError(f"{cls.__qualname__} needs a method `describe` to be a kubewasm plugin")
    if not any(callable(getattr(cls, m, None)) for m in _METHODS):
        raise TypeError(
            f"{cls.__qualname__} needs a method `reconcile`, `handle`, `default`, `validate` or `convert` "
            f"to be a kubewasm plugin"
        )
    module = sys.modules[cls.__module__]
    for name in EXPORT_NAMES:
        taken = getattr(module, name, None)
        if cls.__name__ == name or (taken is not None and not getattr(taken, "_kubewasm_export", False)):
            raise TypeError(
                f"{module.__name__}: the name `{name}` is taken; @kubewasm.plugin defines it "
                f"(componentize-py exports the class of that name), so name the plugin class otherwise"
            )
    for name, exported in export_classes(cls).items():
        setattr(module, name, exported)
    return cls


def export_classes(cls: type) -> dict[str, type]:
    """The classes componentize-py exports for ``cls``, by the names it looks for."""

    class PluginInfo:
        _kubewasm_export = True
        plugin = cls

        def describe(self) -> Any:
            return describe(cls())

    class Reconciler:
        _kubewasm_export = True
        plugin = cls

        def related(self, parent: str) -> Any:
            return related(cls(), parent)

        def reconcile(self, request: Any) -> Any:
            return reconcile(cls(), request)

    class Handler:
        _kubewasm_export = True
        plugin = cls

        def handle(self, event: Any) -> Any:
            return handle(cls(), event)

    class Admission:
        _kubewasm_export = True
        plugin = cls

        def default(self, request: Any) -> Any:
            return default(cls(), request)

        def validate(self, request: Any) -> Any:
            return validate(cls(), request)

        def convert(self, request: Any) -> Any:
            return convert(cls(), request)

    classes = {"PluginInfo": PluginInfo, "Reconciler": Reconciler, "Handler": Handler, "Admission": Admission}
    for name, exported in classes.items():
        exported.__qualname__ = f"{cls.__qualname__}.{name}"
    return classes


def _wit() -> tuple[Any, type]:
    """The generated bindings: built into the component by componentize-py, or
    generated for native tests by ``kubewasm.testing``."""
    from componentize_py_types import Err
    from wit_world.imports import types

    return types, Err


# ---- describe ------------------------------------------------------------------


def describe(plugin: Any) -> Any:
    manifest = plugin.describe()
    if not isinstance(manifest, Manifest):
        raise TypeError(f"describe returned {type(manifest).__name__}, not a kubewasm.Manifest")
    manifest._check_types()
    return manifest_to_wit(manifest)


def manifest_to_wit(m: Manifest) -> Any:
    wit, _ = _wit()
    return wit.Manifest(
        name=m.name,
        parent=None if m.parent is None else _kind(m.parent),
        children=[_kind(k) for k in m.children],
        related=[_kind(k) for k in m.related],
        finalizer=bool(m.finalizer),
        crds=list(m.crds),
        limits=wit.Limits(deadline_ms=m.limits.deadline_ms, memory_mib=m.limits.memory_mib),
        watches=[
            wit.Watch(kind=_kind(w.kind), label_selector=w.label_selector, field_selector=w.field_selector)
            for w in m.watches
        ],
        outbound=list(m.outbound),
        keep_unlisted=[_kind(k) for k in m.keep_unlisted],
        defaults=[_rule(r) for r in m.defaults],
        validates=[_rule(r) for r in m.validates],
        converts=bool(m.converts),
    )


def _rule(r: AdmissionRule) -> Any:
    wit, _ = _wit()
    return wit.AdmissionRule(kind=_kind(r.kind), operations=[wit.Operation[Operation(o).name] for o in r.operations])


def _kind(k: KindRef) -> Any:
    wit, _ = _wit()
    return wit.KindRef(group=k.group, version=k.version, kind=k.kind, plural=k.plural, namespaced=k.namespaced)


# ---- related -------------------------------------------------------------------


def related(plugin: Any, parent: str) -> list[Any]:
    if not callable(getattr(plugin, "related", None)) or not callable(getattr(plugin, "reconcile", None)):
        return []
    try:
        value = json.loads(parent)
    except ValueError:
        # A parent that is not JSON cannot match anything; the host never sends one.
        return []
    queries = plugin.related(Object(value) if isinstance(value, dict) else Object())
    out = []
    for i, q in enumerate(queries or []):
        if not isinstance(q, Query):
            raise TypeError(f"related returned {type(q).__name__} at #{i}, not a kubewasm.Query")
        out.append(query_to_wit(q))
    return out


_OPERATORS = {
    LabelOperator.IN: "IN",
    LabelOperator.NOT_IN: "NOT_IN",
    LabelOperator.EXISTS: "EXISTS",
    LabelOperator.DOES_NOT_EXIST: "DOES_NOT_EXIST",
}


def query_to_wit(q: Query) -> Any:
    wit, _ = _wit()
    if q.selector.names is not None:
        selector = wit.Selector_Names(list(q.selector.names))
    elif q.selector.requirements is not None:
        selector = wit.Selector_Labels(
            [
                wit.LabelRequirement(key=r.key, operator=wit.LabelOperator[_OPERATORS[r.operator]], values=list(r.values))
                for r in q.selector.requirements
            ]
        )
    else:
        selector = wit.Selector_All()
    return wit.Query(kind=_kind(q.kind), namespace=q.namespace, selector=selector)


# ---- handle --------------------------------------------------------------------


def _fail(message: str) -> Any:
    wit, err = _wit()
    raise err(wit.ReconcileError(message=message, retryable=False))


def handle(plugin: Any, event: Any) -> None:
    """Hands the plugin one change of a watched object; raises ``Err(ReconcileError)`` for
    an error the plugin raised (or an event that is not JSON). Any other exception
    propagates: the call traps, and the host shows the traceback."""
    wit, err = _wit()
    if not callable(getattr(plugin, "handle", None)):
        _fail("this plugin handles no events: its manifest declares no watches")
    try:
        result = plugin.handle(event_from_wit(event))
        if result is not None:
            raise TypeError(f"handle returned {type(result).__name__}; return nothing, or raise to fail")
    except Error as e:
        raise err(wit.ReconcileError(message=e.message, retryable=e.retryable)) from None


def _kind_from_wit(k: Any) -> KindRef:
    return KindRef(k.group, k.version, k.kind, k.plural, k.namespaced)


def event_from_wit(e: Any) -> ObjectEvent:
    """The event as a plugin sees it: the objects and the settings parsed from JSON, the
    kind a :class:`KindRef`, the time as ``now_rfc3339``, every other field of the
    contract's record as it was sent."""
    fields = {f.name: getattr(e, f.name) for f in dataclasses.fields(e)}
    fields["now_rfc3339"] = fields.pop("now")
    fields.update(
        change=Change[e.change.name],
        kind=_kind_from_wit(e.kind),
        object=_object("object", e.object),
        old_object=None if e.old_object is None else _object("old object", e.old_object),
        config=_parse("config", e.config),
    )
    return ObjectEvent(**fields)


def event_to_wit(e: ObjectEvent) -> Any:
    """The contract's record of ``e``, as the host sends it (for :mod:`kubewasm.testing`):
    the inverse of :func:`event_from_wit`."""
    wit, _ = _wit()
    fields = {f.name: getattr(e, f.name) for f in dataclasses.fields(e)}
    fields["now"] = fields.pop("now_rfc3339")
    fields.update(
        change=wit.Change[e.change.name],
        kind=_kind(e.kind),
        object=json.dumps(e.object),
        old_object=None if e.old_object is None else json.dumps(e.old_object),
        config=json.dumps(e.config),
    )
    return wit.ObjectEvent(**fields)


# ---- reconcile -----------------------------------------------------------------


def reconcile(plugin: Any, request: Any) -> Any:
    """The plugin's answer as WIT records; raises ``Err(ReconcileError)`` for an error
    the plugin raised (or a request or answer that is not JSON). Any other exception
    propagates: the call traps, and the host shows the traceback."""
    wit, err = _wit()
    if not callable(getattr(plugin, "reconcile", None)):
        _fail("this plugin reconciles nothing: its manifest names no parent")
    try:
        response = plugin.reconcile(request_from_wit(request))
        if not isinstance(response, Response):
            raise TypeError(f"reconcile returned {type(response).__name__}, not a kubewasm.Response")
        return response_to_wit(response)
    except Error as e:
        raise err(wit.ReconcileError(message=e.message, retryable=e.retryable)) from None


def _parse(what: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as e:
        raise PermanentError(f"{what} is not JSON: {e}") from None


def _object(what: str, text: str) -> Object:
    value = _parse(what, text)
    if not isinstance(value, dict):
        raise PermanentError(f"{what} is not a JSON object")
    return Object(value)


def request_from_wit(r: Any) -> Request:
    """The request as a plugin sees it: the objects and the settings parsed from JSON, the
    time as ``now_rfc3339``, every other field of the contract's record as it was sent."""
    fields = {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}
    fields["now_rfc3339"] = fields.pop("now")
    fields.update(
        parent=_object("parent", r.parent),
        children=[_object("child", t) for t in r.children],
        related=[_object("related object", t) for t in r.related],
        config=_parse("config", r.config),
    )
    return Request(**fields)


def request_to_wit(r: Request) -> Any:
    """The contract's record of ``r``, as the host sends it (for :mod:`kubewasm.testing`):
    the inverse of :func:`request_from_wit`."""
    wit, _ = _wit()
    fields = {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}
    fields["now"] = fields.pop("now_rfc3339")
    fields.update(
        parent=json.dumps(r.parent),
        children=[json.dumps(c) for c in r.children],
        related=[json.dumps(o) for o in r.related],
        config=json.dumps(r.config),
    )
    return wit.Request(**fields)


def to_json(what: str, value: Any) -> str:
    """JSON text of ``value``, keys sorted (as Go's unstructured objects and k8s-openapi
    write them), so that a render does not depend on the order a dict was built in."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise PermanentError(f"{what} does not serialize to JSON: {e}") from None


def _pairs(what: str, mapping: Any) -> list[tuple[str, str]]:
    pairs = []
    for key, value in dict(mapping).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise PermanentError(f"{what} {key!r}: keys and values must be strings, found {value!r}")
        pairs.append((key, value))
    return pairs


def _millis(after: Any) -> int | None:
    if after is None:
        return None
    if not isinstance(after, timedelta):
        raise PermanentError(f"requeue_after must be a datetime.timedelta, found {after!r}")
    return max(0, min(2**64 - 1, after // timedelta(milliseconds=1)))


def response_to_wit(r: Response) -> Any:
    wit, _ = _wit()
    events = []
    for i, e in enumerate(r.events):
        if not isinstance(e.type, EventType):
            raise PermanentError(f"event #{i}: type must be a kubewasm.EventType, found {e.type!r}")
        events.append(wit.Event(type=wit.EventType[e.type.name], reason=str(e.reason), message=str(e.message)))
    return wit.Response(
        children=[to_json(f"child #{i}", c) for i, c in enumerate(r.children)],
        status=None if r.status is None else to_json("status", r.status),
        labels=_pairs("label", r.labels),
        annotations=_pairs("annotation", r.annotations),
        requeue_after_ms=_millis(r.requeue_after),
        events=events,
        finalized=bool(r.finalized),
        delete=[str(uid) for uid in r.delete],
    )



# ---- admission -----------------------------------------------------------------


def _denial_to_wit(d: Denial) -> Any:
    wit, _ = _wit()
    causes = [wit.FieldCause(field=str(c.field), message=str(c.message), reason=str(c.reason)) for c in d.causes]
    return wit.Denial(message=str(d.message), causes=causes)


def _denied(e: Denial | Error) -> Denial:
    """What a plugin raised, as a denial: its :class:`Denial`, or the message of an
    :class:`Error` (a field ``Object.field`` found missing). Anything else is a bug and
    traps the call."""
    return e if isinstance(e, Denial) else Denial(e.message)


def _admission_object(what: str, text: Optional[str]) -> Optional[Object]:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as e:
        raise Denial(f"{what} is not JSON: {e}") from None
    if not isinstance(value, dict):
        raise Denial(f"{what} is not a JSON object")
    return Object(value)


def _admission_json(what: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as e:
        raise Denial(f"{what} is not JSON: {e}") from None


def admission_request_from_wit(r: Any) -> AdmissionRequest:
    """The request as a plugin sees it; a request the plugin cannot read is a
    :class:`Denial` (a write it cannot examine is refused, never let through)."""
    u = r.user_info
    return AdmissionRequest(
        kind=_kind_from_wit(r.kind),
        operation=Operation[r.operation.name],
        object=_admission_object("object", r.object),
        old_object=_admission_object("old object", r.old_object),
        uid=r.uid,
        sub_resource=r.sub_resource,
        namespace=r.namespace,
        name=r.name,
        user_info=UserInfo(u.username, u.uid, list(u.groups), {k: list(v) for k, v in u.extra}),
        dry_run=r.dry_run,
        options=_admission_json("options", r.options),
        now_rfc3339=r.now,
        config=_admission_json("config", r.config),
    )


def admission_request_to_wit(r: AdmissionRequest) -> Any:
    """The contract's record of ``r``, as the host sends it (for :mod:`kubewasm.testing`):
    the inverse of :func:`admission_request_from_wit`."""
    wit, _ = _wit()
    u = r.user_info
    return wit.AdmissionRequest(
        uid=r.uid,
        kind=_kind(r.kind),
        operation=wit.Operation[Operation(r.operation).name],
        sub_resource=r.sub_resource,
        namespace=r.namespace,
        name=r.name,
        object=None if r.object is None else json.dumps(r.object),
        old_object=None if r.old_object is None else json.dumps(r.old_object),
        user_info=wit.UserInfo(
            username=u.username, uid=u.uid, groups=list(u.groups), extra=[(k, list(v)) for k, v in u.extra.items()]
        ),
        dry_run=r.dry_run,
        options=json.dumps(r.options),
        now=r.now_rfc3339,
        config=json.dumps(r.config),
    )


def default(plugin: Any, request: Any) -> Any:
    """The plugin's ``default(request)`` as the contract's ``defaulted`` record; a
    :class:`Denial` (or :class:`Error`) it raises is raised as ``Err(Denial)``. A plugin
    without ``default`` changes nothing; one that changes ``request.object`` in place and
    returns nothing stores the object as it left it. Any other exception traps the call."""
    wit, err = _wit()
    try:
        req = admission_request_from_wit(request)
        if not callable(getattr(plugin, "default", None)):
            return wit.Defaulted(mutation=wit.Mutation_Unchanged(), warnings=[])
        before = None if req.object is None else to_json("object", req.object)
        answer = plugin.default(req)
        if answer is None:
            after = None if req.object is None else to_json("defaulted object", req.object)
            changed = after is not None and after != before
            return wit.Defaulted(mutation=wit.Mutation_Object(after) if changed else wit.Mutation_Unchanged(), warnings=[])
        if not isinstance(answer, Defaulted):
            raise TypeError(f"default returned {type(answer).__name__}, not a kubewasm.Defaulted (or None)")
        if answer.object is not None and answer.patch is not None:
            raise TypeError("default returned a Defaulted with both an object and a patch: give one")
        if answer.object is not None:
            mutation = wit.Mutation_Object(to_json("defaulted object", answer.object))
        elif answer.patch is not None:
            mutation = wit.Mutation_Patch(to_json("patch", answer.patch))
        else:
            mutation = wit.Mutation_Unchanged()
        return wit.Defaulted(mutation=mutation, warnings=[str(w) for w in answer.warnings])
    except (Denial, Error) as e:
        raise err(_denial_to_wit(_denied(e))) from None


def validate(plugin: Any, request: Any) -> Any:
    """The plugin's ``validate(request)`` as the contract's ``verdict`` record: what it
    returned (a :class:`Verdict`, or ``None``: allowed) or the :class:`Denial` it raised.
    A plugin without ``validate`` allows everything. Any other exception traps the call."""
    wit, _ = _wit()
    try:
        req = admission_request_from_wit(request)
        if not callable(getattr(plugin, "validate", None)):
            return wit.Verdict(denied=None, warnings=[])
        answer = plugin.validate(req)
        if answer is None:
            answer = Verdict.allow()
        if not isinstance(answer, Verdict):
            raise TypeError(f"validate returned {type(answer).__name__}, not a kubewasm.Verdict (or None)")
        denied = None if answer.denied is None else _denial_to_wit(_denied(answer.denied))
        return wit.Verdict(denied=denied, warnings=[str(w) for w in answer.warnings])
    except (Denial, Error) as e:
        return wit.Verdict(denied=_denial_to_wit(_denied(e)), warnings=[])


def convert(plugin: Any, request: Any) -> list[str]:
    """Each object through the plugin's ``convert(object, desired_api_version)``, in
    order; a :class:`Denial` or :class:`Error` it raises (or an answer that is no object)
    is raised as ``Err(text)`` naming the object. Any other exception traps the call."""
    _, err = _wit()
    out = []
    for i, text in enumerate(request.objects):
        try:
            value = json.loads(text)
        except ValueError as e:
            raise err(f"object #{i} is not JSON: {e}") from None
        if not isinstance(value, dict):
            raise err(f"object #{i} is not a JSON object")
        obj = Object(value)
        where = f"object #{i} ({obj.get('kind', '')} {json.dumps(obj.name)})"
        if not callable(getattr(plugin, "convert", None)):
            raise err(f"{where}: this plugin converts no objects, and was asked to convert a {obj.get('kind', '')}")
        try:
            converted = plugin.convert(obj, request.desired_api_version)
            if not isinstance(converted, dict):
                raise PermanentError(f"convert returned {type(converted).__name__}, not a dict")
            out.append(to_json("converted object", converted))
        except (Denial, Error) as e:
            raise err(f"{where}: {_denied(e)}") from None
    return out
