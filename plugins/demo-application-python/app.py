"""DemoApplication: one image, a replica count and some ports become a Deployment and,
when there are ports, a Service in front of it. The same plugin as
plugins/demo-application, in Python.

The plugin only decides. The host applies both children, deletes the Service when the
ports go away, reverts hand edits and writes the status.
"""

from dataclasses import dataclass, field
from typing import Annotated, Optional

import kubewasm
from kubewasm import Manifest, Object, Request, Response, kinds
from kubewasm.crd import CustomResource, Int32, Maximum, MinLength, Minimum, PrinterColumn


@dataclass
class DemoPort:
    port: Annotated[Int32, Minimum(1), Maximum(65535)]
    target_port: Optional[Annotated[Int32, Minimum(1), Maximum(65535)]] = None
    node_port: Optional[Annotated[Int32, Minimum(30000), Maximum(32767)]] = None


@dataclass
class DemoApplicationSpec:
    """The spec the CRD's schema comes from: the API server validates and defaults it."""

    image: Annotated[str, MinLength(1)]
    replica: Annotated[Int32, Minimum(0)] = 1
    ports: list[DemoPort] = field(default_factory=list)


@dataclass
class DemoApplicationStatus:
    available_replicas: Optional[Int32] = None


RESOURCE = CustomResource(
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


@kubewasm.plugin
class DemoApplication:
    def describe(self) -> Manifest:
        return Manifest(
            "demo-application-python",
            RESOURCE.kind_ref,
            children=[kinds.Deployment, kinds.Service],
            crds=[RESOURCE.crd()],
        )

    def reconcile(self, request: Request) -> Response:
        app = request.parent
        spec = Spec(app)
        labels = {"app": app.name}

        response = Response().child(deployment(app, spec, labels))
        # No ports, no Service: leaving it out is what makes the host delete an old one.
        if spec.ports:
            response.child(service(app, spec, labels))

        observed = request.child(kinds.Deployment, app.name)
        available = (observed.status or {}).get("availableReplicas", 0) if observed else 0
        response.status = {"availableReplicas": available}
        return response


class Spec:
    """The parent's spec as this plugin reads it; a field that is missing or of the
    wrong type is a permanent error naming it."""

    def __init__(self, app: Object):
        self.image: str = app.field("spec.image", str)
        # The CRD defaults it too; this covers objects stored before the default existed.
        self.replica: int = app.field("spec.replica", int, default=1)
        self.ports = [Port(app, i) for i in range(len(app.field("spec.ports", list, default=[])))]


class Port:
    def __init__(self, app: Object, i: int):
        self.port: int = app.field(f"spec.ports[{i}].port", int)
        # Defaults to `port`, as a Service's targetPort does.
        self.target: int = app.field(f"spec.ports[{i}].targetPort", int, default=self.port)
        # Setting it on any port turns the Service into a NodePort Service.
        self.node_port: int | None = app.field(f"spec.ports[{i}].nodePort", int, default=None)


def meta(app: Object, labels: dict) -> dict:
    """Child metadata: the parent's labels, then `app: <name>`, which the selectors rely on."""
    meta = app.child_meta(app.name)
    meta["labels"] = {**meta.get("labels", {}), **labels}
    return meta


def deployment(app: Object, spec: Spec, labels: dict) -> dict:
    container = {"name": "app", "image": spec.image}
    if spec.ports:
        container["ports"] = [{"containerPort": p.target, "protocol": "TCP"} for p in spec.ports]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(app, labels),
        "spec": {
            "replicas": spec.replica,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }


def service(app: Object, spec: Spec, labels: dict) -> dict:
    node_port = any(p.node_port is not None for p in spec.ports)
    ports = []
    for p in spec.ports:
        port = {"name": f"port-{p.port}", "protocol": "TCP", "port": p.port, "targetPort": p.target}
        if p.node_port is not None:
            port["nodePort"] = p.node_port
        ports.append(port)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta(app, labels),
        "spec": {"type": "NodePort" if node_port else "ClusterIP", "selector": labels, "ports": ports},
    }
