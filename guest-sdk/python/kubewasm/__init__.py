"""Write kubewasm plugins in Python.

A plugin is one class with ``describe`` and ``reconcile`` (a reconciler), or ``handle``
(an event handler), or both, under ``@kubewasm.plugin``; :mod:`kubewasm.http` sends the
HTTP requests the operator granted.

Build it with ``python -m kubewasm build app.py -o app.wasm`` and drop the ``.wasm`` file
into the host's plugin directory. Test it natively with :mod:`kubewasm.testing`: the
same decoding, reconcile and encoding code runs there as in the component, and the
answer is checked with the host's own rules.

    import kubewasm
    from kubewasm import KindRef, Manifest, ObjectEvent, Request, Response, Watch, http, kinds

    @kubewasm.plugin
    class Echo:
        def describe(self) -> Manifest:
            return Manifest("echo", KindRef("example.com", "v1", "Echo", "echoes"),
                            children=[kinds.ConfigMap])

        def reconcile(self, request: Request) -> Response:
            parent = request.parent
            said = parent.field("spec.say", str)
            config_map = {"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": parent.child_meta(parent.name), "data": {"said": said}}
            # The FULL desired set: a child the parent controls that is not returned is deleted.
            return Response().child(config_map)

    @kubewasm.plugin
    class Notify:
        def describe(self) -> Manifest:
            return Manifest.handler("notify", watches=[Watch(kinds.Pod)], outbound=["https://hooks.example.com"])

        def handle(self, event: ObjectEvent) -> None:
            http.post("https://hooks.example.com/pods", json={"pod": event.object.name, "change": event.change.value})
"""

from . import conditions, http, kinds, log
from .admission import (
    AdmissionRequest,
    AdmissionRule,
    Defaulted,
    Denial,
    FieldCause,
    Operation,
    UserInfo,
    Verdict,
)
from .errors import Error, PermanentError, RetryableError
from .event import Change, ObjectEvent
from .export import plugin
from .kind import KindRef
from .manifest import Limits, Manifest, ManifestError, Watch
from .objects import Object
from .query import LabelOperator, Query, Requirement, Selector
from .request import Request
from .response import Event, EventType, Response
from .validate import Refusal, validate

__all__ = [
    "AdmissionRequest",
    "AdmissionRule",
    "Defaulted",
    "Denial",
    "FieldCause",
    "Operation",
    "UserInfo",
    "Verdict",
    "Change",
    "Error",
    "Event",
    "EventType",
    "KindRef",
    "LabelOperator",
    "Limits",
    "Manifest",
    "ManifestError",
    "Object",
    "ObjectEvent",
    "PermanentError",
    "Query",
    "Refusal",
    "Request",
    "Requirement",
    "Response",
    "RetryableError",
    "Selector",
    "Watch",
    "conditions",
    "http",
    "kinds",
    "log",
    "plugin",
    "validate",
]
