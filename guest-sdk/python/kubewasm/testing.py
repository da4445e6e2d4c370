"""Native tests of a plugin with pytest: no WebAssembly, no host.

:func:`reconcile` encodes the request as the host does, runs the same export glue as the
component with the same WIT records (generated from the contract by componentize-py,
which must be installed), decodes the answer and checks it with a port of the host's
own validation: an answer the host would refuse fails the test with the host's reasons.

>>> out = testing.reconcile(MyPlugin, parent, children=[observed_deployment])
>>> out.child(kinds.Service, "web")["spec"]["type"]
'ClusterIP'

:func:`handle` delivers one change of a watched object to the plugin's handler the same
way. Both answer the plugin's HTTP requests from canned :class:`Reply`s, in the order
given, and record every request made (``Outcome.requests``, ``Handled.requests``).
The plugin's error, raised as the host would receive it, carries what the call sent and
logged before it failed (``error.requests``, ``error.logs``):

>>> out = testing.handle(MyPlugin, "added", pod, http=[testing.Reply(200)])
>>> out.requests[0].json()["text"]
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from . import export, http, log
from .admission import AdmissionRequest, Defaulted, Denial, FieldCause, Operation, Verdict
from ._paths import WIT, WORLD
from .errors import Error, PermanentError, RetryableError
from .event import Change, ObjectEvent, delivery_id_of
from .kind import KindRef
from .manifest import Manifest, ManifestError
from .objects import Object
from .query import Query
from .request import Request
from .response import Event, EventType, Response
from .validate import Refusal, validate

NOW = "2026-01-01T00:00:00Z"
"""The time a test request carries unless it says otherwise."""


class HostWouldRefuse(AssertionError):
    """The host would refuse this plugin's manifest or answer; the message says why."""


@dataclass
class Reply:
    """A canned answer to one of the plugin's HTTP requests: the first request whose
    method and URL match, among those no earlier reply answered.

    ``url`` is the URL, where ``*`` stands for any text (``https://hooks.slack.com/*``);
    ``method`` any method when ``None``. The answer is a response (``status``,
    ``headers``, ``body``: bytes, text, or any other value sent as JSON), or, when
    ``error`` is set, that reason of the host's for having none
    (``http.Timeout("https://x.example: no response within 10s")``).
    """

    status: int = 200
    body: Any = b""
    headers: Any = ()
    url: str = "*"
    method: Optional[str] = None
    error: Optional[http.RequestError] = None

    def matches(self, request: Any) -> bool:
        if self.method is not None and self.method.upper() != request.method.upper():
            return False
        pattern = ".*".join(re.escape(part) for part in self.url.split("*"))
        return re.fullmatch(pattern, request.url, re.DOTALL) is not None

    def answer(self) -> Any:
        """The WIT response, or ``Err`` of the WIT error."""
        from componentize_py_types import Err
        from wit_world.imports import http as wit

        if self.error is not None:
            raise Err(http.error_to_wit(self.error))
        if isinstance(self.body, (bytes, bytearray)):
            body = bytes(self.body)
        elif isinstance(self.body, str):
            body = self.body.encode()
        else:
            body = json.dumps(self.body).encode()
        headers = self.headers.items() if isinstance(self.headers, dict) else self.headers
        return wit.HttpResponse(status=self.status, headers=[(str(k).lower(), str(v)) for k, v in headers], body=body)


class _Canned:
    """The host's ``http.send`` for one call: each request recorded, answered by the
    first unused reply that matches it, or denied."""

    def __init__(self, replies: Sequence[Reply]):
        self.unused = list(replies)
        self.requests: list[http.Request] = []

    def __call__(self, request: Any) -> Any:
        from componentize_py_types import Err
        from wit_world.imports import http as wit

        self.requests.append(
            http.Request(request.method, request.url, list(request.headers), bytes(request.body), request.timeout_ms)
        )
        for reply in self.unused:
            if reply.matches(request):
                self.unused.remove(reply)
                return reply.answer()
        raise Err(wit.HttpError_Denied(f"{request.method} {request.url}: no canned reply for this request"))

    def __enter__(self) -> _Canned:
        self.previous = http.transport
        http.transport = self
        return self

    def __exit__(self, *exc: Any) -> None:
        http.transport = self.previous


def _uid(obj: Any) -> Any:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta.get("uid") if isinstance(meta, dict) else None


def _calling(replies: Sequence[Reply], call: Callable[[], Any]) -> tuple[Any, list[http.Request], list[log.Line]]:
    """Runs the export ``call`` with the plugin's requests answered from ``replies``: what
    it returned, the requests it sent and the lines it logged. Its error record is raised
    as the SDK's error the host would receive, carrying those requests and lines."""
    from componentize_py_types import Err

    canned = _Canned(replies)
    failed: Optional[Error] = None
    log._captured.clear()
    try:
        with canned:
            value = call()
    except Err as e:
        failed = (RetryableError if e.value.retryable else PermanentError)(e.value.message)
    finally:
        logs = list(log._captured)
        log._captured.clear()
    if failed is not None:
        failed.requests = canned.requests
        failed.logs = logs
        raise failed
    return value, canned.requests, logs


@dataclass
class Handled:
    """What an event handler did with one change."""

    requests: list[http.Request] = field(default_factory=list)
    """The HTTP requests the plugin sent, in order, as the host would receive them."""
    logs: list[log.Line] = field(default_factory=list)
    """Lines the plugin logged during the call: level, message, fields."""


@dataclass
class Outcome:
    """What the plugin answered, decoded from the wire form and checked."""

    children: list[Object]
    status: Optional[dict]
    labels: dict[str, str]
    annotations: dict[str, str]
    requeue_after: Optional[timedelta]
    events: list[Event]
    finalized: bool
    deleted: list[Object] = field(default_factory=list)
    """The observed children the answer deletes by uid (:meth:`Response.delete_child`)."""
    logs: list[log.Line] = field(default_factory=list)
    """Lines the plugin logged during the call: level, message, fields."""
    requests: list[http.Request] = field(default_factory=list)
    """The HTTP requests the plugin sent, in order, as the host would receive them."""

    def children_of(self, kind: KindRef) -> list[Object]:
        return [c for c in self.children if kind.matches(c)]

    def child(self, kind: KindRef, name: str) -> Object:
        """The desired child of ``kind`` named ``name``; fails the test when absent."""
        for c in self.children:
            if kind.matches(c) and c.name == name:
                return c
        desired = ", ".join(c.describe() for c in self.children) or "none"
        raise AssertionError(f"no desired {kind} named {name!r} (desired: {desired})")

    def warnings(self) -> list[Event]:
        return [e for e in self.events if e.type is EventType.WARNING]


def bindings() -> Path:
    """The contract's Python bindings, generated once per contract and componentize-py
    version into the temporary directory, and put on ``sys.path``."""
    try:
        import componentize_py
    except ImportError:
        raise ImportError(
            "kubewasm.testing runs plugins through the WIT bindings componentize-py generates: "
            "pip install componentize-py (the version kubewasm's pyproject.toml names)"
        ) from None
    from importlib.metadata import version

    wit = (WIT / "reconciler.wit").read_bytes()
    key = hashlib.sha256(wit + version("componentize-py").encode()).hexdigest()[:16]
    out = Path(tempfile.gettempdir()) / f"kubewasm-bindings-{key}"
    if not (out / "wit_world").is_dir():
        staging = Path(tempfile.mkdtemp(prefix="kubewasm-bindings-"))
        componentize_py.generate_bindings(
            wit_path=[str(WIT)],
            worlds=[WORLD],
            features=[],
            all_features=False,
            world_module=None,
            output_dir=str(staging),
            import_interface_names=[],
            export_interface_names=[],
            full_names=False,
        )
        try:
            os.rename(staging, out)
        except OSError:
            pass  # another process got there first: its bindings are the same
    if str(out) not in sys.path:
        sys.path.insert(0, str(out))
    return out


def describe(plugin: type) -> Manifest:
    """The plugin's manifest, through the export glue, checked as the host checks it at
    load; raises :class:`HostWouldRefuse` when the host would not load the plugin."""
    bindings()
    export.describe(plugin())
    manifest = plugin().describe()
    try:
        manifest.check()
    except ManifestError as e:
        raise HostWouldRefuse(f"the host would refuse to load this plugin: {e}") from None
    return manifest


def related(plugin: type, parent: dict) -> list[Query]:
    """The plugin's related queries for ``parent`` (also run through the export glue)."""
    bindings()
    export.related(plugin(), json.dumps(parent))
    queries = getattr(plugin(), "related", None)
    return list(queries(Object(parent)) or []) if queries else []


def reconcile(
    plugin: type,
    parent: dict,
    *,
    children: Sequence[dict] = (),
    related: Sequence[dict] = (),
    finalizing: bool = False,
    now: str = NOW,
    config: Any = None,
    http: Sequence[Reply] = (),
    **fields: Any,
) -> Outcome:
    """Run one reconcile of ``plugin`` natively, through the export glue, and check the
    answer exactly as the host does before it writes anything.

    ``children`` are observed children (the host only sends those the parent controls),
    ``related`` what the plugin's queries selected; any other field of
    :class:`~kubewasm.Request` goes by its name in ``fields``. ``http`` answers the
    plugin's HTTP requests (see :class:`Reply`). Raises the plugin's own
    :class:`~kubewasm.Error` as the host would receive it (with the call's ``requests``
    and ``logs``), and :class:`HostWouldRefuse` when the host would refuse the answer,
    listing every problem as the host's ``ResponseRefused`` event does.
    """
    manifest = describe(plugin)
    request = export.request_to_wit(
        Request(
            parent=Object(parent),
            children=[Object(c) for c in children],
            related=[Object(r) for r in related],
            finalizing=finalizing,
            now_rfc3339=now,
            config=config,
            **fields,
        )
    )
    answer, requests, logs = _calling(http, lambda: export.reconcile(plugin(), request))
    response = Response(
        children=[json.loads(c) for c in answer.children],
        status=None if answer.status is None else json.loads(answer.status),
        labels=dict(answer.labels),
        annotations=dict(answer.annotations),
        requeue_after=None if answer.requeue_after_ms is None else timedelta(milliseconds=answer.requeue_after_ms),
        events=[Event(EventType[e.type.name], e.reason, e.message) for e in answer.events],
        finalized=answer.finalized,
        delete=list(answer.delete),
    )
    try:
        response = validate(manifest, parent, response, children)
    except Refusal as refusal:
        raise HostWouldRefuse(f"the host would refuse this answer: {refusal}") from None
    return Outcome(
        children=[Object(c) for c in response.children],
        status=response.status,
        labels=response.labels,
        annotations=response.annotations,
        requeue_after=response.requeue_after,
        events=response.events,
        finalized=response.finalized,
        # Validation found each uid among the observed children.
        deleted=[Object(c) for c in children if _uid(c) in response.delete],
        logs=logs,
        requests=requests,
    )


def handle(
    plugin: type,
    change: Change | str,
    object: dict,
    *,
    old_object: Optional[dict] = None,
    kind: Optional[KindRef] = None,
    initial: bool = False,
    final_state_unknown: bool = False,
    delivery_id: Optional[str] = None,
    attempt: int = 1,
    now: str = NOW,
    config: Any = None,
    http: Sequence[Reply] = (),
    **fields: Any,
) -> Handled:
    """Deliver one change of a watched object to ``plugin``'s handler natively, through
    the export glue, as the host does.

    ``change`` is ``"added"``, ``"updated"`` or ``"deleted"`` (or a :class:`Change`);
    ``kind`` is the watch of the manifest that selects ``object`` unless given (the
    host delivers changes of watched kinds only, so an object no watch selects fails the
    test); ``delivery_id`` is the host's (``<uid>:<resourceVersion>:<change>``) unless
    given; any other field of :class:`~kubewasm.ObjectEvent` goes by its name in
    ``fields``. ``http`` answers the plugin's HTTP requests (see :class:`Reply`).
    Raises the plugin's own :class:`~kubewasm.Error` as the host would receive it, with
    the call's ``requests`` and ``logs``.
    """
    manifest = describe(plugin)
    change = Change(change) if isinstance(change, str) else change
    if kind is None:
        watched = [w.kind for w in manifest.watches]
        kind = next((k for k in watched if k.matches(object)), None)
        if kind is None:
            shown = ", ".join(str(k) for k in watched) or "nothing"
            raise HostWouldRefuse(
                f"the host delivers changes of watched kinds only: the manifest watches {shown}, "
                f"not {object.get('apiVersion')} {object.get('kind')}"
            )
    event = export.event_to_wit(
        ObjectEvent(
            change=change,
            kind=kind,
            object=Object(object),
            old_object=None if old_object is None else Object(old_object),
            initial=initial,
            final_state_unknown=final_state_unknown,
            delivery_id=delivery_id if delivery_id is not None else delivery_id_of(object, change),
            attempt=attempt,
            now_rfc3339=now,
            config=config,
            **fields,
        )
    )
    _, requests, logs = _calling(http, lambda: export.handle(plugin(), event))
    return Handled(requests=requests, logs=logs)


# ---- admission -----------------------------------------------------------------


@dataclass
class DefaultedWrite:
    """What ``default`` did to a write."""

    object: Object
    """The object as the API server would store it."""
    mutation: Defaulted
    """What the plugin answered (its warnings included)."""
    logs: list[log.Line] = field(default_factory=list)

    @property
    def warnings(self) -> list[str]:
        return self.mutation.warnings


def _rule_kind(manifest: Manifest, which: str, obj: Optional[dict], operation: Operation) -> KindRef:
    """The kind of the manifest's rule in ``which`` that selects ``operation`` of ``obj``;
    :class:`HostWouldRefuse` naming what they select when none does: the host asks only
    about those writes."""
    rules = getattr(manifest, which)
    for r in rules:
        if r.kind.matches(obj) and operation in r.effective_operations:
            return r.kind
    shown = ", ".join(f"{'/'.join(o.value for o in r.effective_operations)} of {r.kind}" for r in rules) or "nothing"
    of = f"{(obj or {}).get('apiVersion')} {(obj or {}).get('kind')}"
    raise HostWouldRefuse(
        f"the host asks about the writes the manifest's {which} select: {shown}, not {operation.value} of {of}"
    )


def _admission_request(
    plugin: type,
    which: str,
    obj: dict,
    *,
    operation: Optional[Operation | str] = None,
    old_object: Optional[dict] = None,
    kind: Optional[KindRef] = None,
    now: str = NOW,
    config: Any = None,
    **fields: Any,
) -> Any:
    """The contract's record of a write of ``obj``, as the host sends it to ``plugin``'s
    export for its manifest's rules ``which`` (``defaults``, ``validates``).

    ``operation`` is CREATE unless ``old_object`` is given (then UPDATE); for DELETE,
    ``obj`` is the stored object. ``kind`` is the rule's that selects the write unless
    given: :class:`HostWouldRefuse` when none does. Any other field of
    :class:`~kubewasm.AdmissionRequest` goes by its name (``user_info``, ``dry_run``,
    ``options``...).
    """
    manifest = describe(plugin)
    op = Operation(operation) if operation is not None else (Operation.CREATE if old_object is None else Operation.UPDATE)
    deleting = op is Operation.DELETE
    subject = (old_object or obj) if deleting else obj
    of = kind if kind is not None else _rule_kind(manifest, which, subject, op)
    meta = (subject or {}).get("metadata", {})
    fields.setdefault("name", meta.get("name", ""))
    fields.setdefault("namespace", meta.get("namespace"))
    return export.admission_request_to_wit(
        AdmissionRequest(
            kind=of,
            operation=op,
            object=None if deleting else Object(obj),
            old_object=Object(subject) if deleting else (None if old_object is None else Object(old_object)),
            now_rfc3339=now,
            config=config,
            **fields,
        )
    )


def _denial_from_wit(d: Any) -> Denial:
    return Denial(d.message, [FieldCause(c.field, c.message, c.reason) for c in d.causes])


def _admitting(call: Callable[[], Any]) -> tuple[Any, list[log.Line]]:
    """Calls an admission export: what it returned and logged; its ``Err(Denial)`` is
    raised as a :class:`~kubewasm.Denial` carrying those lines (``logs``)."""
    from componentize_py_types import Err

    log._captured.clear()
    denial: Optional[Denial] = None
    try:
        value = call()
    except Err as e:
        denial = _denial_from_wit(e.value)
    finally:
        logs = list(log._captured)
        log._captured.clear()
    if denial is not None:
        denial.logs = logs  # type: ignore[attr-defined]
        raise denial
    return value, logs


def defaulted(plugin: type, object: dict, **write: Any) -> DefaultedWrite:
    """Run ``plugin``'s ``default`` natively, through the export glue, for a write of
    ``object`` the manifest's ``defaults`` select, and return the object as the API server
    would store it (the plugin's object, or the written one with its JSON patch applied).

    ``write`` says more of the write: ``operation`` (CREATE unless ``old_object`` is given,
    then UPDATE), ``old_object``, ``kind``, ``now``, ``config`` and any other field of
    :class:`~kubewasm.AdmissionRequest` by its name (``user_info``, ``dry_run``,
    ``options``...). Raises the plugin's :class:`~kubewasm.Denial` when it refuses the
    write, and :class:`HostWouldRefuse` when the manifest does not select the write or the
    patch does not apply.
    """
    import jsonpatch

    request = _admission_request(plugin, "defaults", object, **write)
    answer, logs = _admitting(lambda: export.default(plugin(), request))
    wit, _ = export._wit()
    stored = json.loads(json.dumps(object))
    mutation = Defaulted(warnings=list(answer.warnings))
    if isinstance(answer.mutation, wit.Mutation_Object):
        stored = json.loads(answer.mutation.value)
        mutation.object = stored
    elif isinstance(answer.mutation, wit.Mutation_Patch):
        mutation.patch = json.loads(answer.mutation.value)
        try:
            stored = jsonpatch.apply_patch(stored, mutation.patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
            raise HostWouldRefuse(f"the API server would refuse the defaulting patch: {e}") from None
    return DefaultedWrite(object=Object(stored), mutation=mutation, logs=logs)


@dataclass
class Validated(Verdict):
    """The plugin's verdict on a write, with what it logged."""

    logs: list[log.Line] = field(default_factory=list)


def validated(plugin: type, object: dict, **write: Any) -> Validated:
    """Run ``plugin``'s ``validate`` natively, through the export glue, for a write of
    ``object`` the manifest's ``validates`` select (for DELETE, ``object`` is the stored
    object), and return its verdict. ``write`` as for :func:`defaulted`."""
    request = _admission_request(plugin, "validates", object, **write)
    answer, logs = _admitting(lambda: export.validate(plugin(), request))
    denied = None if answer.denied is None else _denial_from_wit(answer.denied)
    return Validated(denied=denied, warnings=list(answer.warnings), logs=logs)


def converted(plugin: type, objects: Sequence[dict], desired_api_version: str, *, now: str = NOW, config: Any = None) -> list[Object]:
    """Convert ``objects`` to ``desired_api_version`` (``group/version``) with
    ``plugin``'s ``convert`` natively, through the export glue, and return them as the API
    server keeps them: checked as it checks a conversion webhook's answer (the desired
    ``apiVersion``, the same kind, name, namespace and UID) and with every field of
    ``metadata`` but labels and annotations restored. Raises the plugin's error as a
    :class:`~kubewasm.PermanentError`, and :class:`HostWouldRefuse` when the manifest does
    not convert or the API server would refuse the answer."""
    from componentize_py_types import Err

    manifest = describe(plugin)
    if not manifest.converts:
        raise HostWouldRefuse("the host converts only for a plugin whose manifest says it converts")
    wit, _ = export._wit()
    request = wit.ConversionRequest(
        objects=[json.dumps(o) for o in objects], desired_api_version=desired_api_version, now=now, config=json.dumps(config)
    )
    try:
        answer = export.convert(plugin(), request)
    except Err as e:
        raise PermanentError(e.value) from None
    if len(answer) != len(objects):
        raise HostWouldRefuse(f"the API server would refuse the conversion: {len(answer)} objects for {len(objects)}")
    out = []
    for i, (text, before) in enumerate(zip(answer, objects)):
        after = json.loads(text)
        problem = None
        if after.get("apiVersion") != desired_api_version:
            problem = f"invalid apiVersion: expected {desired_api_version!r}, got {after.get('apiVersion')!r}"
        else:
            meta_before, meta_after = before.get("metadata", {}), after.get("metadata") or {}
            for name, a, b in [
                ("kind", before.get("kind"), after.get("kind")),
                ("name", meta_before.get("name"), meta_after.get("name")),
                ("namespace", meta_before.get("namespace"), meta_after.get("namespace")),
                ("UID", meta_before.get("uid"), meta_after.get("uid")),
            ]:
                if a != b:
                    problem = f"must have the same {name}: {a} != {b}"
                    break
        if problem is not None:
            raise HostWouldRefuse(f"the API server would refuse converted object #{i}: {problem}")
        metadata = json.loads(json.dumps(before.get("metadata", {})))
        for f in ("labels", "annotations"):
            if (after.get("metadata") or {}).get(f) is None:
                metadata.pop(f, None)
            else:
                metadata[f] = after["metadata"][f]
        out.append(Object({**after, "metadata": metadata}))
    return out


__all__ = [
    "DefaultedWrite",
    "Handled",
    "HostWouldRefuse",
    "Outcome",
    "Reply",
    "Validated",
    "bindings",
    "converted",
    "defaulted",
    "describe",
    "handle",
    "related",
    "reconcile",
    "validated",
]
