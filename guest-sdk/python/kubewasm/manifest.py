"""The plugin's self-description: parent, owned children, related kinds, CRDs, limits,
the kinds whose changes it handles and the URLs it needs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from ._names import debug, is_dns_label
from .admission import AdmissionRule, Operation
from .kind import KindRef

_U32 = 2**32 - 1


class ManifestError(ValueError):
    """A manifest the host would refuse to load; the message names the field."""


@dataclass
class Limits:
    """Default sandbox limits; the operator's configuration may lower them, never raise them."""

    deadline_ms: int | None = None
    """CPU deadline for one call, in milliseconds (the host's default is 1000)."""
    memory_mib: int | None = None
    """Largest memory the plugin may grow to, in MiB (the host's default is 64)."""


@dataclass(frozen=True)
class Watch:
    """A kind whose changes the plugin's ``handle`` receives, object by object: every
    object of ``kind``, or those the selectors (Kubernetes' text form) select."""

    kind: KindRef
    label_selector: Optional[str] = None
    """Only objects whose labels match, e.g. ``app=web,tier notin (db)``."""
    field_selector: Optional[str] = None
    """Only objects whose fields match, e.g. ``metadata.name=web``."""


@dataclass
class Manifest:
    """What a plugin reconciles, owns, reads, handles and reaches: returned by
    ``describe``.

    A reconciler names its ``parent``; an event handler its ``watches`` (each change of
    an object they select goes to ``handle``); a plugin may be both, and
    :meth:`Manifest.handler` makes one that only handles events. ``children`` is an
    allow-list: an answer holding any other kind is refused and nothing is written.
    ``outbound`` lists the URLs the plugin needs to reach (Spin's
    ``allowed_outbound_hosts`` syntax: ``https://hooks.slack.com``,
    ``http://*.svc.cluster.local:8080``); the operator grants them, or fewer. ``crds``
    holds CustomResourceDefinitions as YAML or JSON text; read them at import time
    (``CRD = Path(__file__).with_name("crd.yaml").read_text()`` at module level): the
    component is snapshotted after import and has no filesystem when it runs.
    """

    name: str
    """A DNS label; the host's field manager is ``kubewasm.<name>``."""
    parent: Optional[KindRef] = None
    """The kind it reconciles; ``None`` for a plugin that only handles events."""
    children: list[KindRef] = field(default_factory=list)
    related: list[KindRef] = field(default_factory=list)
    finalizer: bool = False
    """Ask for a last reconcile (``request.finalizing``) before the parent is deleted."""
    crds: list[str] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)
    watches: list[Watch] = field(default_factory=list)
    """Kinds whose added, updated and deleted objects ``handle`` receives."""
    outbound: list[str] = field(default_factory=list)
    """URLs the plugin needs to reach; the operator must grant them too."""
    keep_unlisted: list[KindRef] = field(default_factory=list)
    """Child kinds whose observed children an answer may leave out: those it omits are
    kept, not deleted (a CronJob's running Jobs). Each must be among ``children``."""
    defaults: list[AdmissionRule] = field(default_factory=list)
    """The writes ``default`` may change before they are stored (a mutating webhook)."""
    validates: list[AdmissionRule] = field(default_factory=list)
    """The writes ``validate`` may refuse (a validating webhook)."""
    converts: bool = False
    """Whether ``convert`` converts the parent between the versions its CRD serves."""

    @classmethod
    def handler(cls, name: str, **fields: Any) -> Manifest:
        """A plugin named ``name`` that reconciles nothing: it handles the changes of the
        kinds it ``watches``, or admits the writes it ``defaults`` and ``validates``."""
        return cls(name, None, **fields)

    @property
    def field_manager(self) -> str:
        return f"kubewasm.{self.name}"

    @property
    def finalizer_name(self) -> str:
        return f"kubewasm.io/{self.name}"

    def check(self) -> None:
        """What the host checks at load (but parsing the CRDs).

        Raises :class:`ManifestError` naming the field.
        """
        self._check_types()
        if not is_dns_label(self.name):
            raise ManifestError(
                f"name {debug(self.name)} must be a DNS label (lower-case letters, digits and '-', at most 63)"
            )
        if self.parent is None:
            if not self.watches and not self.defaults and not self.validates:
                raise ManifestError(
                    "a plugin needs a parent to reconcile, watches to handle or writes to admit (defaults, validates)"
                )
            if self.children or self.related or self.finalizer:
                raise ManifestError("children, related and finalizer belong to a reconciler: they need a parent")
            if self.converts:
                raise ManifestError("converts: only a parent the plugin defines can be converted")
        kinds = [("parent", self.parent)] if self.parent is not None else []
        kinds += [("children", k) for k in self.children]
        kinds += [("related", k) for k in self.related]
        kinds += [("watches", w.kind) for w in self.watches]
        kinds += [("keepUnlisted", k) for k in self.keep_unlisted]
        kinds += [("defaults", r.kind) for r in self.defaults]
        kinds += [("validates", r.kind) for r in self.validates]
        for where, k in kinds:
            if not k.version or not k.kind or not k.plural:
                raise ManifestError(f"{where}: {k} needs a version, a kind and a plural")
        for k in self.keep_unlisted:
            if k not in self.children:
                raise ManifestError(f"keepUnlisted: {k} is not among the plugin's children")
        if self.converts and not self.crds:
            raise ManifestError(
                "converts: the plugin converts its parent between its CRD's versions, but defines no CRD"
            )
        for pattern in self.outbound:
            if not pattern.strip():
                raise ManifestError(f"outbound: {debug(pattern)} is empty; give scheme://host[:port]")
        if self.limits.deadline_ms == 0 or self.limits.memory_mib == 0:
            raise ManifestError("limits: a deadline or memory limit of 0 leaves nothing to run")

    def _check_types(self) -> None:
        """What Rust's types guarantee and Python's do not: each field has the type the
        WIT record needs, so a mistake is named here rather than trapping at the boundary."""
        if not isinstance(self.name, str):
            raise ManifestError(f"name: expected a string, found {self.name!r}")
        if self.parent is not None and not isinstance(self.parent, KindRef):
            raise ManifestError(f"parent: expected a KindRef or None, found {self.parent!r}")
        for where in ("children", "related", "keep_unlisted"):
            for i, k in enumerate(getattr(self, where)):
                if not isinstance(k, KindRef):
                    raise ManifestError(f"{where}[{i}]: expected a KindRef, found {k!r}")
        for i, w in enumerate(self.watches):
            if not isinstance(w, Watch) or not isinstance(w.kind, KindRef):
                raise ManifestError(f"watches[{i}]: expected a Watch of a KindRef, found {w!r}")
            for selector in ("label_selector", "field_selector"):
                value = getattr(w, selector)
                if value is not None and not isinstance(value, str):
                    raise ManifestError(f"watches[{i}].{selector}: expected a string or None, found {value!r}")
        for where in ("defaults", "validates"):
            for i, r in enumerate(getattr(self, where)):
                if not isinstance(r, AdmissionRule) or not isinstance(r.kind, KindRef):
                    raise ManifestError(f"{where}[{i}]: expected an AdmissionRule of a KindRef, found {r!r}")
                for op in r.operations:
                    if op not in list(Operation):
                        raise ManifestError(f"{where}[{i}].operations: {op!r} is none of CREATE, UPDATE, DELETE, CONNECT")
        if not isinstance(self.converts, bool):
            raise ManifestError(f"converts: expected True or False, found {self.converts!r}")
        for i, pattern in enumerate(self.outbound):
            if not isinstance(pattern, str):
                raise ManifestError(f"outbound[{i}]: expected a URL pattern (a string), found {pattern!r}")
        for i, crd in enumerate(self.crds):
            if not isinstance(crd, str):
                raise ManifestError(f"crds[{i}]: expected YAML or JSON text, found {type(crd).__name__}")
        for limit in ("deadline_ms", "memory_mib"):
            value = getattr(self.limits, limit)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= _U32):
                raise ManifestError(f"limits.{limit}: expected a whole number from 0 to {_U32}, found {value!r}")
