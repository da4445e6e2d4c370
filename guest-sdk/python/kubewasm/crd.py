"""CustomResourceDefinitions generated from the plugin's dataclasses, as Kubebuilder
generates them from Go types.

A spec (and a status) is a dataclass; a field's validation is an ``Annotated`` marker,
Kubebuilder's under the same names; a field with a default (not ``None``) is defaulted by
the API server; one without is required::

    from dataclasses import dataclass, field
    from typing import Annotated, Literal, Optional
    from kubewasm.crd import CustomResource, Int32, Maximum, MinLength, Minimum, PrinterColumn

    @dataclass
    class Port:
        port: Annotated[Int32, Minimum(1), Maximum(65535)]
        protocol: Literal["TCP", "UDP"] = "TCP"

    @dataclass
    class AppSpec:
        image: Annotated[str, MinLength(1)]
        replicas: Annotated[Int32, Minimum(0)] = 1
        ports: list[Port] = field(default_factory=list)

    @dataclass
    class AppStatus:
        available_replicas: Optional[Int32] = None

    APP = CustomResource("example.com", "v1", "App", spec=AppSpec, status=AppStatus,
                         short_names=["app"],
                         printer_columns=[PrinterColumn("Image", "string", ".spec.image")])

    Manifest("apps", APP.kind_ref, crds=[APP.crd()])

Field names are written in camelCase (``available_replicas`` is ``availableReplicas``),
or as ``Name("...")`` says. Several versions of one kind are :func:`crd` of their
``CustomResource``s and the storage version's name.

Types map as Kubebuilder maps Go's: ``str`` to string, ``int`` to integer (``Int32`` and
``Int64`` add the format), ``float`` to number, ``bool`` to boolean, ``list[X]`` to an
array, ``dict[str, X]`` to an object of ``X`` values, a dataclass to an object,
``Literal[...]`` and an ``enum.Enum`` to an enum, ``Optional[X]`` to an optional ``X``,
``Any`` to a field the API server keeps whatever it holds.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Optional, Union

from .kind import KindRef

__all__ = [
    "CrdError",
    "CustomResource",
    "Default",
    "Description",
    "Enum",
    "ExclusiveMaximum",
    "ExclusiveMinimum",
    "Format",
    "Int32",
    "Int64",
    "MaxItems",
    "MaxLength",
    "Maximum",
    "MinItems",
    "MinLength",
    "Minimum",
    "Name",
    "Pattern",
    "PreserveUnknownFields",
    "PrinterColumn",
    "crd",
    "schema_of",
]


class CrdError(TypeError):
    """A type the generator cannot express as a structural schema; names the field."""


@dataclass(frozen=True)
class _Marker:
    """A validation marker: sets one schema keyword."""

    keyword = ""
    value: Any

    def apply(self, schema: dict[str, Any]) -> None:
        schema[self.keyword] = self.value


def _keyword(name: str, keyword: str, doc: str) -> type[_Marker]:
    """A marker class that sets ``keyword`` to its value."""
    return type(name, (_Marker,), {"keyword": keyword, "__doc__": doc, "__module__": __name__})


Minimum = _keyword("Minimum", "minimum", "``+kubebuilder:validation:Minimum``: the smallest number allowed.")
Maximum = _keyword("Maximum", "maximum", "``+kubebuilder:validation:Maximum``: the largest number allowed.")
MinLength = _keyword("MinLength", "minLength", "``+kubebuilder:validation:MinLength``.")
MaxLength = _keyword("MaxLength", "maxLength", "``+kubebuilder:validation:MaxLength``.")
Pattern = _keyword("Pattern", "pattern", "``+kubebuilder:validation:Pattern``: a regular expression the string matches.")
MinItems = _keyword("MinItems", "minItems", "``+kubebuilder:validation:MinItems``.")
MaxItems = _keyword("MaxItems", "maxItems", "``+kubebuilder:validation:MaxItems``.")
Format = _keyword("Format", "format", "``+kubebuilder:validation:Format`` (``int32``, ``date-time``, ``byte``...).")
Description = _keyword("Description", "description", "The field's description, which ``kubectl explain`` shows.")
Default = _keyword(
    "Default",
    "default",
    "``+kubebuilder:default``: what the API server sets when the field is absent, where the dataclass "
    "default cannot say it (a field with a ``default_factory``).",
)


class ExclusiveMinimum(_Marker):
    """A number greater than this one."""

    def apply(self, schema: dict[str, Any]) -> None:
        schema.update(minimum=self.value, exclusiveMinimum=True)


class ExclusiveMaximum(_Marker):
    """A number less than this one."""

    def apply(self, schema: dict[str, Any]) -> None:
        schema.update(maximum=self.value, exclusiveMaximum=True)


class Enum(_Marker):
    """``+kubebuilder:validation:Enum``: the values allowed."""

    keyword = "enum"

    def __init__(self, *values: Any):
        object.__setattr__(self, "value", list(values))


class Name(_Marker):
    """The field's name in the object, where camelCase of the Python name is not it."""

    keyword = ""

    def apply(self, schema: dict[str, Any]) -> None:
        pass


@dataclass(frozen=True)
class _PreserveUnknownFields:
    def apply(self, schema: dict[str, Any]) -> None:
        schema["x-kubernetes-preserve-unknown-fields"] = True


PreserveUnknownFields = _PreserveUnknownFields()
"""``+kubebuilder:pruning:PreserveUnknownFields``: keep fields the schema does not list."""

Int32 = Annotated[int, Format("int32")]
"""An ``int`` the schema says is 32 bits (Go's ``int32``)."""
Int64 = Annotated[int, Format("int64")]
"""An ``int`` the schema says is 64 bits (Go's ``int64``)."""


@dataclass(frozen=True)
class PrinterColumn:
    """``+kubebuilder:printcolumn``: a column ``kubectl get`` shows."""

    name: str
    type: str
    """``string``, ``integer``, ``number``, ``boolean`` or ``date``."""
    json_path: str
    description: Optional[str] = None
    priority: Optional[int] = None
    format: Optional[str] = None

    def to_json(self) -> dict[str, Any]:
        column: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        for key, value in (("description", self.description), ("priority", self.priority), ("format", self.format)):
            if value is not None:
                column[key] = value
        return column


@dataclass(frozen=True)
class CustomResource:
    """One version of a custom kind, its schema from the ``spec`` and ``status``
    dataclasses. ``plural`` is the lower-cased kind plus ``s`` unless given."""

    group: str
    version: str
    kind: str
    spec: type
    status: Optional[type] = None
    plural: Optional[str] = None
    namespaced: bool = True
    short_names: tuple[str, ...] | list[str] = ()
    categories: tuple[str, ...] | list[str] = ()
    printer_columns: tuple[PrinterColumn, ...] | list[PrinterColumn] = ()
    served: bool = True
    deprecated: bool = False

    @property
    def resource(self) -> str:
        return self.plural or f"{self.kind.lower()}s"

    @property
    def kind_ref(self) -> KindRef:
        """The kind, for a manifest's ``parent``."""
        return KindRef(self.group, self.version, self.kind, self.resource, self.namespaced)

    def schema(self) -> dict[str, Any]:
        """The version's ``openAPIV3Schema``."""
        properties = {"spec": schema_of(self.spec, f"{self.kind}.spec")}
        if self.status is not None:
            properties["status"] = schema_of(self.status, f"{self.kind}.status")
        return {"type": "object", "properties": properties}

    def version_json(self, storage: bool) -> dict[str, Any]:
        version: dict[str, Any] = {
            "name": self.version,
            "served": self.served,
            "storage": storage,
            "schema": {"openAPIV3Schema": self.schema()},
        }
        if self.deprecated:
            version["deprecated"] = True
        if self.status is not None:
            version["subresources"] = {"status": {}}
        if self.printer_columns:
            version["additionalPrinterColumns"] = [c.to_json() for c in self.printer_columns]
        return version

    def crd(self) -> str:
        """The CRD of this one version, as JSON text for a manifest's ``crds``."""
        return crd(self)


def crd(*versions: CustomResource, storage: Optional[str] = None) -> str:
    """The CRD of one kind in several versions (``storage`` names the stored one; with
    one version, it is that one), as JSON text for a manifest's ``crds``."""
    if not versions:
        raise CrdError("crd: no version given")
    first = versions[0]
    for v in versions[1:]:
        if (v.group, v.kind, v.resource, v.namespaced) != (first.group, first.kind, first.resource, first.namespaced):
            raise CrdError(f"crd: version {v.version} is not of {first.kind}.{first.group}")
    names = [v.version for v in versions]
    if len(set(names)) != len(names):
        raise CrdError(f"crd: a version is given twice in {names}")
    if storage is None and len(versions) == 1:
        storage = first.version
    if storage not in names:
        raise CrdError(f"crd: the storage version {storage!r} is not among {names}")
    spec_names: dict[str, Any] = {
        "kind": first.kind,
        "listKind": f"{first.kind}List",
        "plural": first.resource,
        "singular": first.kind.lower(),
    }
    short_names = [s for v in versions for s in v.short_names]
    if short_names:
        spec_names["shortNames"] = list(dict.fromkeys(short_names))
    categories = [c for v in versions for c in v.categories]
    if categories:
        spec_names["categories"] = list(dict.fromkeys(categories))
    document = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{first.resource}.{first.group}"},
        "spec": {
            "group": first.group,
            "names": spec_names,
            "scope": "Namespaced" if first.namespaced else "Cluster",
            "versions": [v.version_json(v.version == storage) for v in versions],
        },
    }
    return json.dumps(document)


def camel(name: str) -> str:
    """``available_replicas`` as Kubernetes writes it: ``availableReplicas``."""
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def schema_of(cls: type, path: str = "") -> dict[str, Any]:
    """The structural schema of a dataclass: its fields' types and markers."""
    if not dataclasses.is_dataclass(cls):
        raise CrdError(f"{path or cls!r}: {cls!r} is not a dataclass")
    hints = typing.get_type_hints(cls, include_extras=True)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        markers = _markers(hint, f"{path}.{f.name}")
        name = next((m.value for m in markers if isinstance(m, Name)), None) or camel(f.name)
        field_path = f"{path}.{name}" if path else name
        schema = _schema(hint, field_path)
        if f.default is not dataclasses.MISSING and f.default is not None:
            schema["default"] = _json_value(f.default, field_path)
        for marker in markers:
            marker.apply(schema)
        properties[name] = schema
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and not _optional(hint):
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _markers(hint: Any, path: str) -> list[Any]:
    """The markers of an ``Annotated`` hint, outermost last, through ``Optional``."""
    if typing.get_origin(hint) is Annotated:
        inner, *extras = typing.get_args(hint)
        return _markers(inner, path) + [e for e in extras if hasattr(e, "apply")]
    if _optional(hint):
        return _markers(_strip_none(hint, path), path)
    return []


def _optional(hint: Any) -> bool:
    if typing.get_origin(hint) is Annotated:
        return _optional(typing.get_args(hint)[0])
    return typing.get_origin(hint) in (Union, types.UnionType) and type(None) in typing.get_args(hint)


def _strip_none(hint: Any, path: str) -> Any:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if len(args) != 1:
        raise CrdError(f"{path}: a union of {args} has no structural schema")
    return args[0]


def _schema(hint: Any, path: str) -> dict[str, Any]:
    """The schema of a type, without the markers (the caller applies them)."""
    origin = typing.get_origin(hint)
    if origin is Annotated:
        return _schema(typing.get_args(hint)[0], path)
    if _optional(hint):
        return _schema(_strip_none(hint, path), path)
    if hint is Any:
        return {"x-kubernetes-preserve-unknown-fields": True}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint is str:
        return {"type": "string"}
    if origin is Literal:
        values = list(typing.get_args(hint))
        return {"type": _json_type(values, path), "enum": values}
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [m.value for m in hint]
        return {"type": _json_type(values, path), "enum": values}
    if origin is list or hint is list:
        args = typing.get_args(hint)
        if not args:
            raise CrdError(f"{path}: a list needs its item type, e.g. list[str]")
        items = _schema(args[0], f"{path}[]")
        for marker in _markers(args[0], f"{path}[]"):
            marker.apply(items)
        return {"type": "array", "items": items}
    if origin is dict or hint is dict:
        args = typing.get_args(hint)
        if not args:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        if args[0] is not str:
            raise CrdError(f"{path}: an object's keys are strings, not {args[0]!r}")
        values = _schema(args[1], f"{path}[*]")
        for marker in _markers(args[1], f"{path}[*]"):
            marker.apply(values)
        return {"type": "object", "additionalProperties": values}
    if dataclasses.is_dataclass(hint):
        return schema_of(hint, path)
    raise CrdError(f"{path}: no schema for the type {hint!r}")


def _json_type(values: list[Any], path: str) -> str:
    kinds = {type(v) for v in values}
    for python, json_type in ((str, "string"), (bool, "boolean"), (int, "integer"), (float, "number")):
        if kinds == {python}:
            return json_type
    raise CrdError(f"{path}: the enum's values {values} are not all strings or all numbers")


def _json_value(value: Any, path: str) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {camel(k): _json_value(v, path) for k, v in dataclasses.asdict(value).items() if v is not None}
    try:
        json.dumps(value)
    except TypeError:
        raise CrdError(f"{path}: the default {value!r} is not JSON") from None
    return value
