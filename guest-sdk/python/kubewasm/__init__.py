"""Write kubewasm reconciler plugins in Python.

A plugin is one class with ``describe`` and ``reconcile`` under ``@kubewasm.plugin``.
Build it with ``python -m kubewasm build app.py -o app.wasm`` and drop the ``.wasm`` file
into the host's plugin directory. Test it natively with :mod:`kubewasm.testing`: the
same decoding, reconcile and encoding code runs there as in the component, and the
answer is checked with the host's own rules.

    import kubewasm
    from kubewasm import Event, KindRef, Manifest, Request, Response, kinds

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
"""

from . import kinds, log
from .errors import Error, PermanentError, RetryableError
from .export import plugin
from .kind import KindRef
from .manifest import Limits, Manifest, ManifestError
from .objects import Object
from .query import LabelOperator, Query, Requirement, Selector
from .request import Request
from .response import Event, EventType, Response
from .validate import Refusal, validate

__all__ = [
    "Error",
    "Event",
    "EventType",
    "KindRef",
    "LabelOperator",
    "Limits",
    "Manifest",
    "ManifestError",
    "Object",
    "PermanentError",
    "Query",
    "Refusal",
    "Request",
    "Requirement",
    "Response",
    "RetryableError",
    "Selector",
    "kinds",
    "log",
    "plugin",
    "validate",
]
