"""What a plugin answers: the desired children, status, parent metadata, events."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import timedelta
from enum import Enum
from typing import Any, Mapping, Optional

from .objects import Object

APPLIED_HASH = "kubewasm.io/applied-hash"
"""The annotation the host stamps on each child it applies."""

# What the API server and the host set on an object, and a kept child does without.
_SERVER_METADATA = (
    "resourceVersion",
    "managedFields",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
    "ownerReferences",
)


class EventType(Enum):
    NORMAL = "Normal"
    WARNING = "Warning"


@dataclass
class Event:
    """A Kubernetes Event the host records on the parent."""

    type: EventType
    reason: str
    """UpperCamelCase machine-readable cause, e.g. ``DeploymentExists``."""
    message: str

    @classmethod
    def normal(cls, reason: str, message: str) -> Event:
        return cls(EventType.NORMAL, reason, message)

    @classmethod
    def warning(cls, reason: str, message: str) -> Event:
        return cls(EventType.WARNING, reason, message)


@dataclass
class Response:
    """The plugin's decision for one parent.

    ``children`` is the FULL desired set: an observed child the parent controls that is
    missing from it is deleted by the host. Likewise labels and annotations set by an
    earlier response and missing from this one are removed from the parent. Set the
    fields, or add with the methods, which return the response so that they chain:
    ``Response(status={...}).child(deployment).event(Event.normal(...))``.
    """

    children: list[dict] = field(default_factory=list)
    status: Optional[dict] = None
    """The desired ``.status`` of the parent; ``None`` leaves it alone."""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    requeue_after: Optional[timedelta] = None
    """Reconcile again after this long, even if nothing changes."""
    events: list[Event] = field(default_factory=list)
    finalized: bool = False
    """When finalizing: cleanup is done, let the parent go."""
    delete: list[str] = field(default_factory=list)
    """The ``metadata.uid``s of observed children to delete, of any kind."""

    def child(self, obj: Mapping[str, Any]) -> Response:
        """Add a desired child: a dict with ``apiVersion``, ``kind`` and ``metadata.name``
        (:meth:`Object.child_meta` gives the metadata)."""
        self.children.append(dict(obj))
        return self

    def keep(self, observed: Object) -> Response:
        """Keep an observed child as it is: the host neither prunes nor writes it, so
        what others changed in it stays. The child is returned with its ``metadata.uid``,
        which marks it as kept, and without what the API server and the host set."""
        child = copy.deepcopy(dict(observed))
        meta = child.get("metadata")
        if isinstance(meta, dict):
            for name in _SERVER_METADATA:
                meta.pop(name, None)
            annotations = meta.get("annotations")
            if isinstance(annotations, dict):
                annotations.pop(APPLIED_HASH, None)
                if not annotations:
                    del meta["annotations"]
        child.pop("status", None)
        self.children.append(child)
        return self

    def delete_child(self, observed: Object) -> Response:
        """Delete an observed child, whatever its kind: how a plugin whose manifest keeps a
        kind unlisted still deletes the children it means to (a CronJob's finished Jobs
        beyond its history limit). The child goes by its ``metadata.uid``; one also
        returned or kept is refused."""
        meta = observed.get("metadata")
        self.delete.append(str(meta.get("uid", "")) if isinstance(meta, dict) else "")
        return self

    def label(self, key: str, value: str) -> Response:
        self.labels[key] = value
        return self

    def annotation(self, key: str, value: str) -> Response:
        self.annotations[key] = value
        return self

    def event(self, event: Event) -> Response:
        self.events.append(event)
        return self
