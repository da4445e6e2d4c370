"""Native tests of a plugin with pytest: no WebAssembly, no host.

:func:`reconcile` encodes the request as the host does, runs the same export glue as the
component with the same WIT records (generated from the contract by componentize-py,
which must be installed), decodes the answer and checks it with a port of the host's
own validation: an answer the host would refuse fails the test with the host's reasons.

>>> out = testing.reconcile(MyPlugin, parent, children=[observed_deployment])
>>> out.child(kinds.Service, "web")["spec"]["type"]
'ClusterIP'
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Optional, Sequence

from . import export, log
from ._paths import WIT, WORLD
from .errors import PermanentError, RetryableError
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
    **fields: Any,
) -> Outcome:
    """Run one reconcile of ``plugin`` natively, through the export glue, and check the
    answer exactly as the host does before it writes anything.

    ``children`` are observed children (the host only sends those the parent controls),
    ``related`` what the plugin's queries selected; any other field of
    :class:`~kubewasm.Request` goes by its name in ``fields``. Raises the plugin's own
    :class:`~kubewasm.Error` as the host would receive it, and
    :class:`HostWouldRefuse` when the host would refuse the answer, listing every
    problem as the host's ``ResponseRefused`` event does.
    """
    manifest = describe(plugin)
    from componentize_py_types import Err

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
    log._captured.clear()
    try:
        answer = export.reconcile(plugin(), request)
    except Err as e:
        error = RetryableError if e.value.retryable else PermanentError
        raise error(e.value.message) from None
    finally:
        logs = list(log._captured)
        log._captured.clear()
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
    )


__all__ = ["Outcome", "HostWouldRefuse", "bindings", "describe", "related", "reconcile"]
