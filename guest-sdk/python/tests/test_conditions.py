"""The conditions helper against the table every SDK's helper is held to
(guest-sdk/tests/conditions_cases.json: apimachinery's SetStatusCondition and its
siblings), and a plugin that keeps lastTransitionTime across reconciles with it."""

import copy
import json
from pathlib import Path

import pytest

import kubewasm
from kubewasm import KindRef, Manifest, PermanentError, Request, Response, conditions, testing

TABLE = json.loads((Path(__file__).resolve().parents[2] / "tests" / "conditions_cases.json").read_text(encoding="utf-8"))


def arguments(condition: dict) -> dict:
    """The case's condition as keyword arguments of ``conditions.set``."""
    return {
        "type": condition["type"],
        "status": condition["status"],
        "reason": condition["reason"],
        "message": condition["message"],
        "observed_generation": condition.get("observedGeneration"),
        "last_transition_time": condition.get("lastTransitionTime"),
    }


@pytest.mark.parametrize("case", TABLE["set"], ids=lambda c: c["name"])
def test_set_does_what_set_status_condition_does(case):
    listed = copy.deepcopy(case["before"])
    changed = conditions.set(listed, **arguments(case["condition"]), now=TABLE["now"])
    assert listed == case["after"]
    assert changed == case["changed"]


@pytest.mark.parametrize("case", TABLE["remove"], ids=lambda c: c["name"])
def test_remove_drops_the_type_and_keeps_the_order(case):
    listed = copy.deepcopy(case["before"])
    assert conditions.remove(listed, case["type"]) == case["removed"]
    assert listed == case["after"]


@pytest.mark.parametrize("case", TABLE["query"], ids=lambda c: c["name"])
def test_find_is_true_and_is_false_read_the_list(case):
    listed, type_ = case["conditions"], case["type"]
    assert (conditions.find(listed, type_) is not None) == case["found"]
    assert conditions.is_true(listed, type_) == case["isTrue"]
    assert conditions.is_false(listed, type_) == case["isFalse"]


@pytest.mark.parametrize("case", TABLE["invalid"], ids=lambda c: c["name"])
def test_what_the_api_server_would_refuse_is_an_error_naming_it_and_changes_nothing(case):
    listed: list = []
    with pytest.raises(PermanentError) as refused:
        conditions.set(listed, **arguments(case["condition"]), now=TABLE["now"])
    for part in case["error"]:
        assert part in refused.value.message
    assert listed == []


@pytest.mark.parametrize("case", TABLE["valid"], ids=lambda c: c["name"])
def test_what_the_api_server_accepts_is_set(case):
    listed: list = []
    assert conditions.set(listed, **arguments(case["condition"]), now=TABLE["now"])


def test_a_bool_is_true_or_false_and_a_datetime_is_written_to_the_second():
    listed: list = []
    conditions.set(listed, type="Ready", status=False, reason="Waiting", now=testing.NOW)
    assert listed[0]["status"] == "False"
    conditions.set(listed, type="Ready", status=True, reason="Available",
                   now=Request(parent={}, now_rfc3339="2026-05-06T07:08:09.123456Z").now)
    assert listed[0] == {"type": "Ready", "status": "True", "reason": "Available", "message": "",
                         "lastTransitionTime": "2026-05-06T07:08:09Z"}


def test_a_missing_now_is_said_not_read_as_a_time():
    with pytest.raises(TypeError, match="now must be a datetime or RFC 3339 text"):
        conditions.set([], type="Ready", status=True, reason="Available", now=None)


def test_from_status_copies_the_observed_list_and_names_what_is_not_one():
    observed = {"conditions": [{"type": "Ready", "status": "True"}]}
    listed = conditions.from_status(observed)
    listed[0]["status"] = "False"
    assert observed["conditions"][0]["status"] == "True", "the observed parent is left as it is"
    assert conditions.from_status(None) == [] and conditions.from_status({}) == []
    with pytest.raises(PermanentError, match=r"status\.conditions\[1\]"):
        conditions.from_status({"conditions": [{}, "Ready"]})
    with pytest.raises(PermanentError, match=r"status\.conditions is not a list"):
        conditions.from_status({"conditions": {"Ready": True}})


@kubewasm.plugin
class Gauge:
    """Ready when the spec says so: a status written from the observed one."""

    def describe(self) -> Manifest:
        return Manifest("gauge", KindRef("example.com", "v1", "Gauge", "gauges"))

    def reconcile(self, request: Request) -> Response:
        parent = request.parent
        ready = parent.field("spec.ready", bool)
        listed = conditions.from_status(parent.status)
        conditions.set(listed, type="Ready", status=ready, reason="Available" if ready else "Waiting",
                       observed_generation=parent.generation, now=request.now)
        return Response(status={"conditions": listed})


def test_a_plugin_keeps_the_transition_time_until_the_status_changes():
    def at(now: str, ready: bool, generation: int, status) -> dict:
        parent = {"apiVersion": "example.com/v1", "kind": "Gauge", "spec": {"ready": ready}, "status": status,
                  "metadata": {"name": "g", "namespace": "default", "uid": "u1", "generation": generation}}
        return testing.reconcile(Gauge, parent, now=now).status

    first = at("2026-01-01T00:00:00Z", False, 1, None)
    assert first["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    again = at("2026-01-02T00:00:00Z", False, 2, first)
    assert again["conditions"][0]["lastTransitionTime"] == "2026-01-01T00:00:00Z"
    assert again["conditions"][0]["observedGeneration"] == 2
    ready = at("2026-01-03T00:00:00Z", True, 3, again)
    assert ready["conditions"][0] == {"type": "Ready", "status": "True", "reason": "Available", "message": "",
                                      "observedGeneration": 3, "lastTransitionTime": "2026-01-03T00:00:00Z"}
