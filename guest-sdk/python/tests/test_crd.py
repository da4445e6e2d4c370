"""CRDs generated from dataclasses: what the API server reads of them, for each
Kubebuilder marker, and the errors that name the field the generator cannot express."""

import enum
import json
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Optional

import pytest

from kubewasm import KindRef, Manifest
from kubewasm.crd import (
    CrdError,
    CustomResource,
    Default,
    Enum,
    Int32,
    MaxItems,
    MaxLength,
    Maximum,
    MinLength,
    Minimum,
    Name,
    Pattern,
    PreserveUnknownFields,
    PrinterColumn,
    crd,
)


class Engine(enum.Enum):
    POSTGRES = "postgres"
    MYSQL = "mysql"


@dataclass
class Port:
    port: Annotated[Int32, Minimum(1), Maximum(65535)]
    protocol: Literal["TCP", "UDP"] = "TCP"
    node_port: Optional[Annotated[Int32, Minimum(30000), Maximum(32767)]] = None


@dataclass
class DatabaseSpec:
    owner: Annotated[str, MinLength(1), MaxLength(63), Pattern("^[a-z][a-z0-9-]*$")]
    engine: Engine
    replicas: Annotated[int, Minimum(1), Maximum(9)] = 1
    ports: Annotated[list[Port], MaxItems(4)] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    tier: Annotated[str, Enum("gold", "silver"), Name("storageTier")] = "silver"
    extensions: Annotated[list[str], Default(["base"])] = field(default_factory=list)
    raw: Annotated[dict[str, Any], PreserveUnknownFields] = field(default_factory=dict)


@dataclass
class DatabaseStatus:
    ready: bool = False
    ready_replicas: Optional[Int32] = None


DATABASE = CustomResource(
    "example.com",
    "v1",
    "Database",
    spec=DatabaseSpec,
    status=DatabaseStatus,
    short_names=["db"],
    categories=["all"],
    printer_columns=[PrinterColumn("Engine", "string", ".spec.engine")],
)


@dataclass
class DatabaseSpecV2:
    instances: int


def parsed(text: str) -> dict:
    return json.loads(text)


def test_the_kind_is_the_resources():
    assert DATABASE.kind_ref == KindRef("example.com", "v1", "Database", "databases")
    zone = CustomResource("example.com", "v1", "Zone", spec=DatabaseSpecV2, namespaced=False, plural="zonez")
    assert zone.kind_ref == KindRef("example.com", "v1", "Zone", "zonez", namespaced=False)


def test_names_scope_columns_and_status_subresource():
    document = parsed(DATABASE.crd())
    assert document["apiVersion"] == "apiextensions.k8s.io/v1"
    assert document["kind"] == "CustomResourceDefinition"
    assert document["metadata"]["name"] == "databases.example.com"
    spec = document["spec"]
    assert spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": "Database",
        "listKind": "DatabaseList",
        "plural": "databases",
        "singular": "database",
        "shortNames": ["db"],
        "categories": ["all"],
    }
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1", True, True)
    assert version["subresources"] == {"status": {}}
    assert version["additionalPrinterColumns"] == [{"name": "Engine", "type": "string", "jsonPath": ".spec.engine"}]
    assert Manifest("db", DATABASE.kind_ref, crds=[DATABASE.crd()]).crds == [DATABASE.crd()]


def test_markers_become_the_schema_the_api_server_validates():
    root = parsed(DATABASE.crd())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    spec = root["properties"]["spec"]
    assert spec["type"] == "object"
    assert spec["required"] == ["owner", "engine"]
    fields = spec["properties"]
    assert fields["owner"] == {"type": "string", "minLength": 1, "maxLength": 63, "pattern": "^[a-z][a-z0-9-]*$"}
    assert fields["engine"] == {"type": "string", "enum": ["postgres", "mysql"]}
    assert fields["replicas"] == {"type": "integer", "default": 1, "minimum": 1, "maximum": 9}
    assert fields["ports"]["maxItems"] == 4
    assert "default" not in fields["ports"], "a default_factory is no default without Default(...)"
    assert fields["ports"]["items"] == {
        "type": "object",
        "properties": {
            "port": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 65535},
            "protocol": {"type": "string", "enum": ["TCP", "UDP"], "default": "TCP"},
            "nodePort": {"type": "integer", "format": "int32", "minimum": 30000, "maximum": 32767},
        },
        "required": ["port"],
    }
    assert fields["labels"] == {"type": "object", "additionalProperties": {"type": "string"}}
    assert fields["storageTier"] == {"type": "string", "default": "silver", "enum": ["gold", "silver"]}
    assert fields["extensions"] == {"type": "array", "items": {"type": "string"}, "default": ["base"]}
    assert fields["raw"]["x-kubernetes-preserve-unknown-fields"] is True
    status = root["properties"]["status"]
    assert status["properties"] == {
        "ready": {"type": "boolean", "default": False},
        "readyReplicas": {"type": "integer", "format": "int32"},
    }
    assert "required" not in status


def test_the_schema_is_structural():
    """Every node has a type or keeps unknown fields; nothing the API server refuses."""

    def check(path: str, node: dict) -> None:
        assert not {"$ref", "$schema", "definitions", "anyOf", "oneOf"} & node.keys(), path
        assert "type" in node or node.get("x-kubernetes-preserve-unknown-fields"), path
        for name, child in node.get("properties", {}).items():
            check(f"{path}.{name}", child)
        if "items" in node:
            check(f"{path}[]", node["items"])
        if isinstance(node.get("additionalProperties"), dict):
            check(f"{path}[*]", node["additionalProperties"])

    check("root", parsed(DATABASE.crd())["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def test_several_versions_one_storage_version():
    v2 = CustomResource("example.com", "v2", "Database", spec=DatabaseSpecV2, short_names=["db"])
    document = parsed(crd(DATABASE, v2, storage="v2"))
    versions = document["spec"]["versions"]
    assert [(v["name"], v["storage"]) for v in versions] == [("v1", False), ("v2", True)]
    assert versions[1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"] == ["instances"]
    assert "subresources" not in versions[1]
    assert document["spec"]["names"]["shortNames"] == ["db"]


def test_versions_that_do_not_fit_together_are_refused():
    v2 = CustomResource("example.com", "v2", "Database", spec=DatabaseSpecV2)
    with pytest.raises(CrdError, match="storage version 'v3' is not among"):
        crd(DATABASE, v2, storage="v3")
    with pytest.raises(CrdError, match="storage version None"):
        crd(DATABASE, v2)
    other = CustomResource("example.com", "v2", "Table", spec=DatabaseSpecV2)
    with pytest.raises(CrdError, match="version v2 is not of Database.example.com"):
        crd(DATABASE, other, storage="v1")


def test_a_type_without_a_structural_schema_names_the_field():
    @dataclass
    class Bad:
        choice: Optional[int | str] = None

    with pytest.raises(CrdError, match=r"Bad\.spec\.choice"):
        CustomResource("example.com", "v1", "Bad", spec=Bad).crd()

    @dataclass
    class Keys:
        by_number: dict[int, str]

    with pytest.raises(CrdError, match=r"Keys\.spec\.byNumber: an object's keys are strings"):
        CustomResource("example.com", "v1", "Keys", spec=Keys).crd()
