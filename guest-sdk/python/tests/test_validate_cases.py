"""The host's checks, ported to Python, against the table of cases the Rust contract
crate is tested with (wit/contract/tests/validate_cases.json)."""

import json
from datetime import timedelta
from pathlib import Path

import pytest

from kubewasm import (
    AdmissionRule,
    Event,
    EventType,
    KindRef,
    Limits,
    Manifest,
    ManifestError,
    Operation,
    Refusal,
    Response,
    Watch,
    validate,
)

CASES = Path(__file__).resolve().parents[3] / "wit" / "contract" / "tests" / "validate_cases.json"


def expand(value):
    """Replaces each ``{"$repeat": [[text, n], ...]}`` with the string it stands for."""
    if isinstance(value, dict):
        if list(value) == ["$repeat"]:
            return "".join(text * n for text, n in value["$repeat"])
        return {k: expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v) for v in value]
    return value


TABLE = expand(json.loads(CASES.read_text(encoding="utf-8")))


def kind(v: dict) -> KindRef:
    return KindRef(v["group"], v["version"], v["kind"], v["plural"], v["namespaced"])


def manifest(v: dict) -> Manifest:
    limits = v.get("limits", {})
    return Manifest(
        name=v["name"],
        parent=kind(v["parent"]) if "parent" in v else None,
        children=[kind(k) for k in v.get("children", [])],
        related=[kind(k) for k in v.get("related", [])],
        finalizer=v.get("finalizer", False),
        limits=Limits(deadline_ms=limits.get("deadlineMs"), memory_mib=limits.get("memoryMib")),
        watches=[Watch(kind(w["kind"]), w.get("labelSelector"), w.get("fieldSelector")) for w in v.get("watches", [])],
        outbound=list(v.get("outbound", [])),
        crds=list(v.get("crds", [])),
        keep_unlisted=[kind(k) for k in v.get("keepUnlisted", [])],
        defaults=[rule(r) for r in v.get("defaults", [])],
        validates=[rule(r) for r in v.get("validates", [])],
        converts=v.get("converts", False),
    )


def rule(v: dict) -> AdmissionRule:
    return AdmissionRule(kind(v["kind"]), tuple(Operation(o) for o in v.get("operations", [])))


def response(v: dict) -> Response:
    after = v.get("requeueAfterMs")
    return Response(
        children=v.get("children", []),
        status=v.get("status"),
        labels=v.get("labels", {}),
        annotations=v.get("annotations", {}),
        requeue_after=None if after is None else timedelta(milliseconds=after),
        events=[Event(EventType(e["type"]), e["reason"], e["message"]) for e in v.get("events", [])],
        finalized=v.get("finalized", False),
        delete=v.get("delete", []),
    )


def wire(r: Response) -> dict:
    """The wire form of a response, as the cases write it: only what is set."""
    out: dict = {}
    if r.children:
        out["children"] = r.children
    if r.status is not None:
        out["status"] = r.status
    if r.labels:
        out["labels"] = r.labels
    if r.annotations:
        out["annotations"] = r.annotations
    if r.events:
        out["events"] = [{"type": e.type.value, "reason": e.reason, "message": e.message} for e in r.events]
    if r.requeue_after is not None:
        out["requeueAfterMs"] = r.requeue_after // timedelta(milliseconds=1)
    if r.finalized:
        out["finalized"] = True
    if r.delete:
        out["delete"] = r.delete
    return out


def test_the_table_has_cases():
    assert len(TABLE["manifests"]) > 5 and len(TABLE["responses"]) > 20


@pytest.mark.parametrize("case", TABLE["manifests"], ids=lambda c: c["name"])
def test_manifests_are_checked_as_the_cases_say(case):
    try:
        manifest(case["manifest"]).check()
        error = None
    except ManifestError as e:
        error = str(e)
    assert error == case["error"]


@pytest.mark.parametrize("case", TABLE["responses"], ids=lambda c: c["name"])
def test_responses_are_validated_as_the_cases_say(case):
    m = manifest(case.get("manifest", TABLE["defaults"]["manifest"]))
    parent = case.get("parent", TABLE["defaults"]["parent"])
    observed = case.get("observed", [])
    given = response(case["response"])
    if "accepted" in case:
        accepted = validate(m, parent, given, observed)
        assert wire(accepted) == case["accepted"]
    else:
        with pytest.raises(Refusal) as refused:
            validate(m, parent, given, observed)
        assert refused.value.problems == case["problems"]
        assert refused.value.plugin == m.name
