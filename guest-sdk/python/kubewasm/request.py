"""What the host hands a plugin for one parent."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Optional

from .kind import KindRef
from .objects import Object

_ANY: Any = object()


@dataclass
class Request:
    """Everything a plugin needs to decide, for one parent."""

    parent: Object
    """The object being reconciled."""
    children: list[Object] = field(default_factory=list)
    """Children that exist now and are controlled by the parent, all kinds."""
    related: list[Object] = field(default_factory=list)
    """Objects selected by the plugin's related queries."""
    finalizing: bool = False
    """The parent is being deleted and waits on this plugin's finalizer: clean up, then
    answer with ``Response(finalized=True)``."""
    now_rfc3339: str = "1970-01-01T00:00:00Z"
    """The host's current time as it was sent, RFC 3339."""
    config: Any = None
    """The plugin's settings from the operator's configuration (``None`` if none)."""

    @property
    def now(self) -> datetime:
        """The host's current time (the same for the whole reconcile; the sandbox has no
        clock), timezone-aware. A hand-made test time that does not parse reads as the
        Unix epoch."""
        return time_of(self.now_rfc3339)

    def children_of(self, kind: KindRef) -> list[Object]:
        """Observed children of ``kind``."""
        return [o for o in self.children if kind.matches(o)]

    def child(self, kind: KindRef, name: str) -> Optional[Object]:
        """The observed child of ``kind`` named ``name``, if it exists."""
        return next((o for o in self.children if kind.matches(o) and o.name == name), None)

    def related_of(self, kind: KindRef) -> list[Object]:
        """Related objects of ``kind``."""
        return [o for o in self.related if kind.matches(o)]

    def find_related(self, kind: KindRef, name: str, namespace: Optional[str] = _ANY) -> Optional[Object]:
        """The related object of ``kind`` named ``name``; pass ``namespace`` (``None`` for a
        cluster-scoped kind) when the queries span namespaces and a name is ambiguous."""
        for o in self.related:
            if kind.matches(o) and o.name == name and (namespace is _ANY or o.namespace == namespace):
                return o
        return None


def time_of(rfc3339: str) -> datetime:
    """The time ``rfc3339`` says, timezone-aware; one that does not parse reads as the
    Unix epoch."""
    try:
        return datetime.fromisoformat(rfc3339.replace("Z", "+00:00"))
    except ValueError:
        return datetime.fromtimestamp(0, timezone.utc)
