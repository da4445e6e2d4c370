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
    )
    try:
        response = validate(manifest, parent, response)
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


__all__ = ["Handled", "HostWouldRefuse", "Outcome", "Reply", "bindings", "describe", "handle", "related", "reconcile"]
