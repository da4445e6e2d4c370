"""The plugin's self-description: parent, owned children, related kinds, CRDs, limits."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._names import debug, is_dns_label
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


@dataclass
class Manifest:
    """What a plugin reconciles, owns and reads: returned by ``describe``.

    ``children`` is an allow-list: an answer holding any other kind is refused and
    nothing is written. ``crds`` holds CustomResourceDefinitions as YAML or JSON text;
    read them at import time (``CRD = Path(__file__).with_name("crd.yaml").read_text()``
    at module level): the component is snapshotted after import and has no filesystem
    when it runs.
    """

    name: str
    """A DNS label; the host's field manager is ``kubewasm.<name>``."""
    parent: KindRef
    children: list[KindRef] = field(default_factory=list)
    related: list[KindRef] = field(default_factory=list)
    finalizer: bool = False
    """Ask for a last reconcile (``request.finalizing``) before the parent is deleted."""
    crds: list[str] = field(default_factory=list)
    limits: Limits = field(default_factory=Limits)

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
        kinds = [("parent", self.parent)]
        kinds += [("children", k) for k in self.children]
        kinds += [("related", k) for k in self.related]
        for where, k in kinds:
            if not k.version or not k.kind or not k.plural:
                raise ManifestError(f"{where}: {k} needs a version, a kind and a plural")
        if self.limits.deadline_ms == 0 or self.limits.memory_mib == 0:
            raise ManifestError("limits: a deadline or memory limit of 0 leaves nothing to run")

    def _check_types(self) -> None:
        """What Rust's types guarantee and Python's do not: each field has the type the
        WIT record needs, so a mistake is named here rather than trapping at the boundary."""
        if not isinstance(self.name, str):
            raise ManifestError(f"name: expected a string, found {self.name!r}")
        if not isinstance(self.parent, KindRef):
            raise ManifestError(f"parent: expected a KindRef, found {self.parent!r}")
        for where in ("children", "related"):
            for i, k in enumerate(getattr(self, where)):
                if not isinstance(k, KindRef):
                    raise ManifestError(f"{where}[{i}]: expected a KindRef, found {k!r}")
        for i, crd in enumerate(self.crds):
            if not isinstance(crd, str):
                raise ManifestError(f"crds[{i}]: expected YAML or JSON text, found {type(crd).__name__}")
        for limit in ("deadline_ms", "memory_mib"):
            value = getattr(self.limits, limit)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= _U32):
                raise ManifestError(f"limits.{limit}: expected a whole number from 0 to {_U32}, found {value!r}")
