"""Admission and conversion of the plugin's kinds: what Kubebuilder's defaulting,
validating and conversion webhooks do, for the writes the manifest names in ``defaults``
and ``validates`` and the versions of its parent when it ``converts``.

A plugin class implements what its manifest declares, each optional:

* ``default(self, request: AdmissionRequest) -> Defaulted | None``: complete a write
  before it is stored. Change ``request.object`` in place and return nothing (as
  Kubebuilder's defaulter does), or return :meth:`Defaulted.with_object` or
  :meth:`Defaulted.with_patch` (with warnings). Raise a :class:`Denial` to refuse the write.
* ``validate(self, request: AdmissionRequest) -> Verdict | None``: allow (return
  nothing, or a :class:`Verdict` with warnings) or refuse (raise a :class:`Denial`, or
  return :meth:`Verdict.deny`).
* ``convert(self, object: Object, desired_api_version: str) -> dict``: one object of the
  parent's kind in the version ``desired_api_version`` (``group/version``); raise an
  :class:`~kubewasm.Error` (or a :class:`Denial`) when it cannot be converted.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Optional

from .kind import KindRef
from .objects import Object
from .request import time_of


class Operation(str, enum.Enum):
    """A write the API server asks about, as ``AdmissionReview`` and webhook rules spell it."""

    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    CONNECT = "CONNECT"
    """``kubectl exec``, ``attach``, ``port-forward`` and proxy requests."""


@dataclass(frozen=True)
class AdmissionRule:
    """The writes of one kind an admission export is asked about: ``operations`` of
    ``kind`` (default: creates and updates)."""

    kind: KindRef
    operations: tuple[Operation, ...] = ()

    @property
    def effective_operations(self) -> tuple[Operation, ...]:
        """The operations this rule asks about, the default filled in."""
        return self.operations or (Operation.CREATE, Operation.UPDATE)

    def selects(self, kind: KindRef, operation: Operation) -> bool:
        """Whether the rule selects ``operation`` of an object of ``kind``."""
        k = self.kind
        same = (k.group, k.version, k.kind) == (kind.group, kind.version, kind.kind)
        return same and operation in self.effective_operations


@dataclass
class UserInfo:
    """Who asks for a write, as the API server authenticated them."""

    username: str = ""
    uid: str = ""
    groups: list[str] = field(default_factory=list)
    extra: dict[str, list[str]] = field(default_factory=dict)
    """Extra attributes of the authenticator (scopes...), with their values."""


@dataclass
class AdmissionRequest:
    """One write the API server asks about: every field of the contract's record, the
    objects and settings parsed from JSON, the time as ``now_rfc3339``."""

    kind: KindRef
    """The object's kind, in the version the rule names."""
    operation: Operation
    object: Optional[Object] = None
    """The object as it would be stored; ``None`` on delete."""
    old_object: Optional[Object] = None
    """The stored object: update and delete."""
    uid: str = ""
    """The AdmissionReview's uid: the same for every webhook one write calls."""
    sub_resource: Optional[str] = None
    """``status``, ``scale``...; ``None`` for the object itself."""
    namespace: Optional[str] = None
    name: str = ""
    """Empty on a create whose name the server generates."""
    user_info: UserInfo = field(default_factory=UserInfo)
    dry_run: bool = False
    options: Any = None
    """``CreateOptions``, ``UpdateOptions`` or ``DeleteOptions``; ``None`` if none."""
    now_rfc3339: str = "1970-01-01T00:00:00Z"
    config: Any = None
    """The plugin's settings (``None`` if none)."""

    @property
    def now(self) -> datetime:
        """The host's current time (the sandbox has no clock)."""
        return time_of(self.now_rfc3339)


@dataclass
class FieldCause:
    """One field a denial blames, as the API server's ``Invalid`` errors list them."""

    field: str
    """``spec.schedule``, ``metadata.name``."""
    message: str
    reason: str = "FieldValueInvalid"
    """Kubernetes' cause type: ``FieldValueInvalid``, ``FieldValueRequired``..."""


class Denial(Exception):
    """Why a write is refused: raise one from ``default`` or ``validate``.

    With field causes the API server answers 422 Invalid naming the fields, as for a
    schema violation; without, 403 Forbidden with the message.
    """

    def __init__(self, message: str = "", causes: Optional[list[FieldCause]] = None):
        self.message = message
        self.causes: list[FieldCause] = list(causes or [])
        super().__init__(message)

    @classmethod
    def invalid(cls, field: str, message: str) -> Denial:
        """A refusal blaming ``field`` (``spec.schedule``); ``message`` says why."""
        return cls().field(field, message)

    def field(self, field: str, message: str) -> Denial:
        """Blame ``field`` too (``FieldValueInvalid``)."""
        return self.cause(field, "FieldValueInvalid", message)

    def cause(self, field: str, reason: str, message: str) -> Denial:
        """Blame ``field`` with Kubernetes' cause type ``reason`` (``FieldValueRequired``...)."""
        self.causes.append(FieldCause(field, message, reason))
        return self

    def __str__(self) -> str:
        """The denial as the API server lists it: the message, then ``field: message``."""
        return ", ".join(p for p in [self.message, *(f"{c.field}: {c.message}" for c in self.causes)] if p)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Denial) and (self.message, self.causes) == (other.message, other.causes)

    __hash__ = None  # type: ignore[assignment]


@dataclass
class Verdict:
    """What validation decided about a write, with warnings for the client (``kubectl``
    prints them as ``Warning: ...``)."""

    denied: Optional[Denial] = None
    """``None``: allowed."""
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def allow(cls) -> Verdict:
        return cls()

    @classmethod
    def deny(cls, denial: Denial | str) -> Verdict:
        return cls(denial if isinstance(denial, Denial) else Denial(str(denial)))

    def warning(self, warning: str) -> Verdict:
        """Show ``warning`` to the client."""
        self.warnings.append(str(warning))
        return self

    @property
    def allowed(self) -> bool:
        return self.denied is None


@dataclass
class Defaulted:
    """What defaulting did to a written object: one of ``object`` (the whole object to
    store; the host sends the API server the patch to it) and ``patch`` (an RFC 6902 JSON
    patch to the written object), or neither (unchanged); with warnings for the client."""

    object: Optional[dict] = None
    patch: Optional[list] = None
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def unchanged(cls) -> Defaulted:
        return cls()

    @classmethod
    def with_object(cls, object: dict) -> Defaulted:
        """Store ``object`` instead of the written one."""
        return cls(object=dict(object))

    @classmethod
    def with_patch(cls, patch: list) -> Defaulted:
        """Apply the RFC 6902 JSON ``patch`` (a list of operations) to the written object."""
        return cls(patch=list(patch))

    def warning(self, warning: str) -> Defaulted:
        self.warnings.append(str(warning))
        return self

    @property
    def is_unchanged(self) -> bool:
        return self.object is None and self.patch is None
