"""Export a plugin class as the component's implementation of the contract.

``@kubewasm.plugin`` on a class with ``describe`` and ``reconcile`` (and optionally
``related``) is all a plugin module needs: it defines the module's ``PluginInfo``,
``Reconciler`` and ``Handler``, the classes componentize-py exports for the WIT
interfaces ``plugin-info``, ``reconciler`` and ``handler``. The functions below
are the glue between the WIT records and the SDK's types: decode the request, call the
plugin, encode the answer. ``kubewasm.testing`` calls the same functions natively, with
the same generated WIT records, so tests exercise the path a WebAssembly call takes.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from datetime import timedelta
from typing import Any, TypeVar

from .errors import Error, PermanentError
from .kind import KindRef
from .manifest import Manifest
from .objects import Object
from .query import LabelOperator, Query
from .request import Request
from .response import EventType, Response

EXPORT_NAMES = ("PluginInfo", "Reconciler", "Handler")
"""The module attributes componentize-py looks for: the WIT interfaces' names."""

T = TypeVar("T", bound=type)


def plugin(cls: T) -> T:
    """Export ``cls`` as the plugin of the module that defines it.

    ``cls`` needs ``describe(self) -> Manifest`` and ``reconcile(self, request) ->
    Response``, and may have ``related(self, parent) -> list[Query]`` (default: no
    related objects). Each call gets a fresh instance, as the host runs each call in a
    fresh component instance: nothing survives between calls.
    """
    for method in ("describe", "reconcile"):
        if not callable(getattr(cls, method, None)):
            raise TypeError(f"{cls.__qualname__} needs a method `{method}` to be a kubewasm plugin")
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
            return no_handler(event)

    classes = {"PluginInfo": PluginInfo, "Reconciler": Reconciler, "Handler": Handler}
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
        parent=_kind(m.parent),
        children=[_kind(k) for k in m.children],
        related=[_kind(k) for k in m.related],
        finalizer=bool(m.finalizer),
        crds=list(m.crds),
        limits=wit.Limits(deadline_ms=m.limits.deadline_ms, memory_mib=m.limits.memory_mib),
        watches=[],
        outbound=[],
    )


def _kind(k: KindRef) -> Any:
    wit, _ = _wit()
    return wit.KindRef(group=k.group, version=k.version, kind=k.kind, plural=k.plural, namespaced=k.namespaced)


# ---- related -------------------------------------------------------------------


def related(plugin: Any, parent: str) -> list[Any]:
    if not callable(getattr(plugin, "related", None)):
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


def no_handler(event: Any) -> Any:
    """The ``handle`` of a plugin without a handler: its manifest declares no watches, so
    the host never calls it."""
    wit, err = _wit()
    raise err(wit.ReconcileError(message="this plugin handles no events: its manifest declares no watches", retryable=False))


# ---- reconcile -----------------------------------------------------------------


def reconcile(plugin: Any, request: Any) -> Any:
    """The plugin's answer as WIT records; raises ``Err(ReconcileError)`` for an error
    the plugin raised (or a request or answer that is not JSON). Any other exception
    propagates: the call traps, and the host shows the traceback."""
    wit, err = _wit()
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
    )

