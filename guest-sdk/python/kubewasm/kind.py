"""A Kubernetes kind and the REST resource that serves it.

``KindRef`` names a kind in a manifest (the parent, the children a plugin may own, the
kinds it reads) and in related queries. The built-in kinds are in :mod:`kubewasm.kinds`
by name: ``kinds.Deployment``, ``kinds.Service``...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class KindRef:
    """A Kubernetes kind and its REST resource (``plural``, for RBAC and paths).

    ``KindRef("example.com", "v1", "Echo", "echoes")`` is namespaced; pass
    ``namespaced=False`` for a cluster-scoped kind.
    """

    group: str
    """API group; empty for the core group (Pods, Services, ConfigMaps...)."""
    version: str
    kind: str
    plural: str
    namespaced: bool = True
    """Whether objects of this kind live in a namespace (``False``: cluster-scoped)."""

    @property
    def api_version(self) -> str:
        """``group/version``, or just ``version`` for the core group, as in ``apiVersion``."""
        return f"{self.group}/{self.version}" if self.group else self.version

    def matches(self, obj: Any) -> bool:
        """Whether ``obj`` (a JSON object) is of this kind."""
        return (
            isinstance(obj, Mapping)
            and obj.get("kind") == self.kind
            and obj.get("apiVersion") == self.api_version
        )

    def __str__(self) -> str:
        return f"{self.api_version} {self.kind}"

