"""What an event handler receives: one change of one watched object."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Optional

from .kind import KindRef
from .objects import Object
from .request import time_of


class Change(Enum):
    """What happened to a watched object."""

    ADDED = "added"
    """The object appeared: created, or first seen."""
    UPDATED = "updated"
    """The object changed (a new resourceVersion)."""
    DELETED = "deleted"
    """The object is gone."""


@dataclass
class ObjectEvent:
    """One change of one watched object, as ``handle`` receives it.

    Changes of one object arrive in order, one at a time: the next is delivered once the
    handler has returned from this one. Raise :class:`kubewasm.RetryableError` to have
    this one delivered again with backoff (the object's later changes wait behind it), or
    :class:`kubewasm.PermanentError` to drop it.
    """

    change: Change
    kind: KindRef
    """The object's kind, as the manifest's watch names it."""
    object: Object
    """The object now (added, updated) or as last known (deleted)."""
    old_object: Optional[Object] = None
    """Updated: the object before the change; after a host restart only its metadata."""
    initial: bool = False
    """The object existed before the plugin was first loaded (delivered only when its
    settings ask for initial objects)."""
    final_state_unknown: bool = False
    """Deleted: noticed by a relist or a restart, not the watch; ``object`` may be stale."""
    delivery_id: str = ""
    """``<uid>:<resourceVersion>:<change>``: the same on every retry and after restarts,
    so that a receiver can drop duplicates."""
    attempt: int = 1
    """1 on the first delivery, counting up on retries."""
    now_rfc3339: str = "1970-01-01T00:00:00Z"
    """The host's current time as it was sent, RFC 3339."""
    config: Any = None
    """The plugin's settings (``None`` if none), Secret references resolved."""

    @property
    def now(self) -> datetime:
        """The host's current time (the sandbox has no clock), timezone-aware; a hand-made
        test time that does not parse reads as the Unix epoch."""
        return time_of(self.now_rfc3339)


def delivery_id_of(obj: Any, change: Change) -> str:
    """The delivery id the host gives ``change`` of ``obj``: its uid, resourceVersion and
    the change."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    return f"{meta.get('uid', '')}:{meta.get('resourceVersion', '')}:{change.value}"
