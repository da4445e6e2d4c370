"""Related objects a plugin asks for, and which objects a query selects.

Return queries from ``related(parent)``; the host serves the objects they select from
its caches in ``request.related``, and reconciles the parent again whenever one of them
changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable, Mapping, Optional

from .kind import KindRef


class LabelOperator(Enum):
    """How a label requirement compares a label's value."""

    IN = "In"
    """The label's value is one of ``values``."""
    NOT_IN = "NotIn"
    """The label is absent or its value is none of ``values``."""
    EXISTS = "Exists"
    """The label is present, whatever its value."""
    DOES_NOT_EXIST = "DoesNotExist"
    """The label is absent."""


@dataclass(frozen=True)
class Requirement:
    """One requirement of a label selector."""

    key: str
    operator: LabelOperator
    values: tuple[str, ...] = ()
    """For ``IN`` and ``NOT_IN``; empty otherwise."""

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.key)
        listed = value is not None and value in self.values
        if self.operator is LabelOperator.IN:
            return listed
        if self.operator is LabelOperator.NOT_IN:
            return not listed
        if self.operator is LabelOperator.EXISTS:
            return value is not None
        return value is None


@dataclass(frozen=True)
class Selector:
    """Which objects of a kind a :class:`Query` selects: all of them
    (:meth:`Selector.all`), those with given names (:meth:`Selector.named`), or those
    whose labels meet every requirement (:meth:`Selector.labelled`)."""

    names: Optional[tuple[str, ...]] = None
    requirements: Optional[tuple[Requirement, ...]] = None

    def __post_init__(self) -> None:
        if self.names is not None and self.requirements is not None:
            raise ValueError("a selector selects by names or by labels, not both")

    @classmethod
    def all(cls) -> Selector:
        return cls()

    @classmethod
    def named(cls, names: Iterable[str]) -> Selector:
        return cls(names=tuple(names))

    @classmethod
    def labelled(cls, requirements: Iterable[Requirement]) -> Selector:
        return cls(requirements=tuple(requirements))


@dataclass(frozen=True)
class Query:
    """Related objects wanted for one parent: objects of ``kind`` in ``namespace``
    (``None``: all namespaces, or a cluster-scoped kind) that ``selector`` selects."""

    kind: KindRef
    namespace: Optional[str] = None
    selector: Selector = field(default_factory=Selector.all)

    @classmethod
    def all(cls, kind: KindRef, namespace: Optional[str] = None) -> Query:
        """Every object of ``kind`` in ``namespace``."""
        return cls(kind, namespace, Selector.all())

    @classmethod
    def named(cls, kind: KindRef, namespace: Optional[str], names: Iterable[str]) -> Query:
        """The objects of ``kind`` named ``names`` in ``namespace``."""
        return cls(kind, namespace, Selector.named(names))

    @classmethod
    def labelled(cls, kind: KindRef, namespace: Optional[str], labels: Mapping[str, str]) -> Query:
        """The objects of ``kind`` in ``namespace`` carrying every label of ``labels``."""
        requirements = [Requirement(k, LabelOperator.IN, (v,)) for k, v in labels.items()]
        return cls(kind, namespace, Selector.labelled(requirements))

    def matches(self, obj: Any) -> bool:
        """Whether ``obj`` (JSON) is one this query selects, as the host decides it."""
        if not self.kind.matches(obj):
            return False
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return False
        if self.selector.names is not None:
            return meta.get("name") in self.selector.names
        if self.selector.requirements is not None:
            labels = meta.get("labels")
            labels = labels if isinstance(labels, dict) else {}
            return all(r.matches(labels) for r in self.selector.requirements)
        return True
