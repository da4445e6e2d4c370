"""A Kubernetes object as the host hands it over: a ``dict`` parsed from JSON, with
accessors for what plugins read most.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Optional

from .errors import PermanentError

_MISSING: Any = object()


class Object(dict):
    """Any Kubernetes object: a ``dict`` (``obj["spec"]["image"]``) with accessors.

    Every accessor tolerates a missing field (``name`` is then ``""``, ``labels`` ``{}``),
    as the host always sends whole objects but a hand-made test input may not.
    """

    @property
    def api_version(self) -> str:
        return _str(self.get("apiVersion"))

    @property
    def kind(self) -> str:
        return _str(self.get("kind"))

    @property
    def metadata(self) -> dict:
        meta = self.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def name(self) -> str:
        return _str(self.metadata.get("name"))

    @property
    def namespace(self) -> Optional[str]:
        ns = self.metadata.get("namespace")
        return ns if isinstance(ns, str) else None

    @property
    def uid(self) -> str:
        return _str(self.metadata.get("uid"))

    @property
    def labels(self) -> dict[str, str]:
        return _string_map(self.metadata.get("labels"))

    @property
    def annotations(self) -> dict[str, str]:
        return _string_map(self.metadata.get("annotations"))

    @property
    def spec(self) -> Any:
        """``.spec``, or ``None`` when absent."""
        return self.get("spec")

    @property
    def status(self) -> Any:
        """``.status``, or ``None`` when absent."""
        return self.get("status")

    @property
    def generation(self) -> Optional[int]:
        """``metadata.generation``: bumped by the API server on each change of the spec."""
        generation = self.metadata.get("generation")
        return generation if isinstance(generation, int) else None

    @property
    def creation_timestamp(self) -> Optional[datetime]:
        return _timestamp(self.metadata.get("creationTimestamp"))

    @property
    def deletion_timestamp(self) -> Optional[datetime]:
        """Set once the object is being deleted."""
        return _timestamp(self.metadata.get("deletionTimestamp"))

    def describe(self) -> str:
        """``"Kind namespace/name"``, for messages."""
        if self.namespace is not None:
            return f"{self.kind} {self.namespace}/{self.name}"
        return f"{self.kind} {self.name}"

    def field(self, path: str, kind: type | tuple[type, ...] = object, default: Any = _MISSING) -> Any:
        """The value at ``path`` (``"spec.ports[0].port"``), checked to be a ``kind``.

        A missing field returns ``default`` when one is given. Otherwise a missing field,
        or one of another type, raises a :class:`~kubewasm.PermanentError` naming the
        object and the path: the parent is wrong, and retrying will not help until it
        changes. ``None`` (JSON ``null``) counts as missing.
        """
        value: Any = self
        walked = ""
        for step in _steps(path):
            if isinstance(step, int):
                walked += f"[{step}]"
                value = value[step] if isinstance(value, list) and -len(value) <= step < len(value) else None
            else:
                walked += f".{step}" if walked else step
                value = value.get(step) if isinstance(value, dict) else None
            if value is None:
                if default is not _MISSING:
                    return default
                raise PermanentError(f"{self.describe()}: {walked}: missing field")
        # bool is an int in Python; JSON's true is not a number.
        wrong_bool = isinstance(value, bool) and not _accepts_bool(kind)
        if not isinstance(value, kind) or wrong_bool:
            raise PermanentError(
                f"{self.describe()}: {walked}: expected {_type_names(kind)}, found {_json_type(value)}"
            )
        return value

    @property
    def controller_uid(self) -> Optional[str]:
        """The uid in the ownerReference with ``controller: true``."""
        refs = self.metadata.get("ownerReferences")
        for ref in refs if isinstance(refs, list) else []:
            if isinstance(ref, dict) and ref.get("controller") is True:
                uid = ref.get("uid")
                return uid if isinstance(uid, str) else None
        return None

    def is_controlled_by(self, owner: Object) -> bool:
        """Whether ``owner`` is this object's controller."""
        return bool(owner.uid) and self.controller_uid == owner.uid

    def child_meta(self, name: str) -> dict:
        """Metadata for a child of this object: ``name``, this object's namespace and a
        copy of its labels. The host adds the controller ownerReference when it applies
        the child; the plugin need not.
        """
        meta: dict[str, Any] = {}
        labels = self.labels
        if labels:
            meta["labels"] = labels
        meta["name"] = name
        if self.namespace is not None:
            meta["namespace"] = self.namespace
        return meta

    def child_meta_in(self, name: str, namespace: str) -> dict:
        """Metadata for a child in ``namespace``: what a cluster-scoped parent needs for
        its namespaced children (a namespaced parent's children stay in its namespace).
        """
        return {**self.child_meta(name), "namespace": namespace}

    def object_reference(self) -> dict:
        """A reference to this object, as events and a CronJob's ``status.active`` hold them."""
        ref = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "resourceVersion": self.metadata.get("resourceVersion"),
            "uid": self.uid,
        }
        return {k: v for k, v in ref.items() if v}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _string_map(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(v, str)}


def _timestamp(value: Any) -> Optional[datetime]:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _steps(path: str) -> list[str | int]:
    steps: list[str | int] = []
    for part in path.split("."):
        name, _, rest = part.partition("[")
        if name:
            steps.append(name)
        while rest:
            index, _, rest = rest.partition("]")
            steps.append(int(index))
            rest = rest.removeprefix("[")
    return steps


def _accepts_bool(kind: type | tuple[type, ...]) -> bool:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return bool in kinds or object in kinds


def _type_names(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(_JSON_NAMES.get(k, k.__name__) for k in kinds)


_JSON_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean", list: "a list", dict: "an object"}


def _json_type(value: Any) -> str:
    return _JSON_NAMES.get(type(value), type(value).__name__)
