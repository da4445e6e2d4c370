"""DemoApplication's CRD (plugins/demo-application/crd.yaml) from Python dataclasses:
prints it for the end-to-end test."""

from dataclasses import dataclass, field
from typing import Annotated, Optional

from kubewasm.crd import CustomResource, Int32, Maximum, MinLength, Minimum, PrinterColumn


@dataclass
class Port:
    port: Annotated[Int32, Minimum(1), Maximum(65535)]
    target_port: Optional[Annotated[Int32, Minimum(1), Maximum(65535)]] = None
    node_port: Optional[Annotated[Int32, Minimum(30000), Maximum(32767)]] = None


@dataclass
class DemoApplicationSpec:
    image: Annotated[str, MinLength(1)]
    replica: Annotated[Int32, Minimum(0)] = 1
    ports: list[Port] = field(default_factory=list)


@dataclass
class DemoApplicationStatus:
    available_replicas: Optional[Int32] = None


DEMO = CustomResource(
    "paas.cmft.com",
    "v1beta1",
    "DemoApplication",
    spec=DemoApplicationSpec,
    status=DemoApplicationStatus,
    short_names=["demoapp"],
    printer_columns=[
        PrinterColumn("Image", "string", ".spec.image"),
        PrinterColumn("Replicas", "integer", ".spec.replica"),
        PrinterColumn("Available", "integer", ".status.availableReplicas"),
    ],
)

print(DEMO.crd())
