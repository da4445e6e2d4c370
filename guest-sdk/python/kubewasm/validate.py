"""The host's check of a plugin's answer, before anything is written: a refused answer
writes nothing at all.

A port of ``kubewasm_contract::validate`` (wit/contract/src/validate.rs), kept in
step with it by a table of cases both test suites read
(wit/contract/tests/validate_cases.json): same verdict, same messages.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from typing import Any, Sequence

from ._names import byte_len, debug, is_dns_subdomain, is_label_value, is_qualified_name
from .manifest import Manifest
from .response import Response

MAX_OBJECT_BYTES = 1 << 20
"""Largest object a plugin may return (the API server's own limit is 1.5 MiB)."""
MAX_RESPONSE_BYTES = 16 << 20
"""Largest whole response."""


class Refusal(Exception):
    """A response the host refuses; ``problems`` lists every reason, not only the first."""

    def __init__(self, plugin: str, problems: list[str]):
        self.plugin = plugin
        self.problems = problems
        super().__init__(f"response of plugin {plugin} refused: {'; '.join(problems)}")


def validate(manifest: Manifest, parent: Any, response: Response, observed: Sequence[Any] = ()) -> Response:
    """Checks ``response`` (its children and status as the host parsed them from JSON)
    against what the plugin declared and the parent it answers for, and returns it with
    each namespaced child's namespace filled in from a namespaced parent.

    Every child must be of a declared kind, named, in the parent's namespace (for a
    namespaced parent), unique and within size limits. Every uid in ``delete`` must be
    that of one of the ``observed`` children (those the request shows), and that child
    neither returned nor kept. Raises :class:`Refusal` listing every problem found.
    """
    problems: list[str] = []
    parent_ns = None
    if manifest.parent.namespaced:
        ns = _get(_get(parent, "metadata"), "namespace")
        parent_ns = ns if isinstance(ns, str) else None
    seen: set[tuple[str, str, str, str]] = set()
    total = 0
    children = copy.deepcopy(response.children)

    for i, child in enumerate(children):
        size = json_size(child)
        total += size
        meta = _get(child, "metadata")
        if not isinstance(meta, dict):
            problems.append(f"child #{i} has no metadata")
            continue
        name = _str(meta.get("name"))
        namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else None
        api_version = _get(child, "apiVersion")
        kind_name = _get(child, "kind")
        what = "child #{} ({} {} {})".format(
            i,
            api_version if isinstance(api_version, str) else "<no apiVersion>",
            kind_name if isinstance(kind_name, str) else "<no kind>",
            debug(name),
        )
        kind = next((k for k in manifest.children if k.matches(child)), None)
        if kind is None:
            declared = ", ".join(str(k) for k in manifest.children) or "none"
            problems.append(
                f"{what} is of a kind the plugin did not declare in `children` (declared: {declared})"
            )
            continue
        if not is_dns_subdomain(name):
            problems.append(f"{what} needs metadata.name, a DNS subdomain")
        if kind.namespaced and parent_ns is not None and namespace is None:
            meta["namespace"] = parent_ns
        elif kind.namespaced and parent_ns is not None and namespace != parent_ns:
            problems.append(
                f"{what} is in namespace {debug(namespace)}, outside its parent's namespace {debug(parent_ns)}"
            )
        elif kind.namespaced and parent_ns is None and namespace is None:
            problems.append(f"{what} needs metadata.namespace (the parent is cluster-scoped)")
        elif not kind.namespaced and parent_ns is not None:
            problems.append(f"{what} is cluster-scoped and cannot be owned by a namespaced parent")
        elif not kind.namespaced and parent_ns is None and namespace is not None:
            problems.append(f"{what} is cluster-scoped but sets metadata.namespace")
        if size > MAX_OBJECT_BYTES:
            problems.append(f"{what} is {size} bytes, over the limit of {MAX_OBJECT_BYTES}")
        key = (kind.kind, kind.group, _str(meta.get("namespace")), name)
        if key in seen:
            problems.append(f"{what} appears more than once")
        seen.add(key)
    kept = {_get(_get(c, "metadata"), "uid") for c in children}
    for i, uid in enumerate(response.delete):
        observed_child = next((o for o in observed if uid != "" and _get(_get(o, "metadata"), "uid") == uid), None)
        if observed_child is None:
            problems.append(f"delete #{i} ({debug(uid)}) is not the metadata.uid of an observed child the parent controls")
            continue
        meta = _get(observed_child, "metadata")
        kind_name = _get(observed_child, "kind")
        name = _str(_get(meta, "name"))
        what = f"delete #{i} ({kind_name if isinstance(kind_name, str) else '<no kind>'} {debug(name)})"
        kind = next((k for k in manifest.children if k.matches(observed_child)), None)
        returned = kind is not None and (kind.kind, kind.group, _str(_get(meta, "namespace")), name) in seen
        if returned or uid in kept:
            problems.append(f"{what} is also among the children: an answer returns or deletes a child, not both")

    if response.status is not None:
        size = json_size(response.status)
        total += size
        if not isinstance(response.status, dict):
            problems.append("status must be a JSON object")
        if size > MAX_OBJECT_BYTES:
            problems.append(f"status is {size} bytes, over the limit of {MAX_OBJECT_BYTES}")
    for key, value in sorted(response.labels.items()):
        if not is_qualified_name(key) or not is_label_value(value):
            problems.append(f"label {key}={debug(value)} is not a valid Kubernetes label")
    for key, value in sorted(response.annotations.items()):
        total += byte_len(key) + byte_len(value)
        if not is_qualified_name(key):
            problems.append(f"annotation key {debug(key)} is not a valid Kubernetes key")
    for event in response.events:
        if not event.reason:
            problems.append(f"event {debug(event.message)} has no reason")
    if total > MAX_RESPONSE_BYTES:
        problems.append(f"response is {total} bytes, over the limit of {MAX_RESPONSE_BYTES}")

    if problems:
        raise Refusal(manifest.name, problems)
    return replace(response, children=children)


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact JSON, as the host measures it (serde_json); the
    two differ only in how a float with an exponent is written (``1e+20``, ``1e20``)."""
    return byte_len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, dict) else None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""
