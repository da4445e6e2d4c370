"""Objects as plugins read them, related queries, and keeping an observed child."""

import pytest

from kubewasm import LabelOperator, Object, PermanentError, Query, Requirement, Response, Selector, kinds


def app(**spec) -> Object:
    return Object(
        {
            "apiVersion": "example.com/v1",
            "kind": "App",
            "metadata": {"name": "web", "namespace": "shop", "uid": "u-1", "labels": {"team": "a"}},
            "spec": spec,
        }
    )


def test_accessors_read_metadata_and_tolerate_what_is_missing():
    parent = app(image="nginx")
    assert (parent.name, parent.namespace, parent.uid, parent.labels) == ("web", "shop", "u-1", {"team": "a"})
    assert parent.describe() == "App shop/web"
    empty = Object({})
    assert (empty.name, empty.namespace, empty.labels, empty.spec, empty.generation) == ("", None, {}, None, None)
    assert Object({"kind": "Namespace", "metadata": {"name": "n"}}).describe() == "Namespace n"


def test_child_meta_copies_name_namespace_and_labels_and_leaves_owners_to_the_host():
    parent = app()
    assert parent.child_meta("web-config") == {"labels": {"team": "a"}, "name": "web-config", "namespace": "shop"}
    meta = parent.child_meta("x")
    meta["labels"]["app"] = "x"
    assert parent.labels == {"team": "a"}, "the child's labels are a copy"
    tenant = Object({"kind": "Tenant", "metadata": {"name": "t"}})
    assert tenant.child_meta("t") == {"name": "t"}
    assert tenant.child_meta_in("t", "default") == {"name": "t", "namespace": "default"}


def test_field_returns_the_value_or_a_permanent_error_naming_the_object_and_path():
    parent = app(image="nginx", replica=2, ports=[{"port": 80}], enabled=True)
    assert parent.field("spec.image", str) == "nginx"
    assert parent.field("spec.ports[0].port", int) == 80
    assert parent.field("spec.replica", int, default=1) == 2
    assert parent.field("spec.missing", int, default=1) == 1
    with pytest.raises(PermanentError, match=r"^App shop/web: spec\.tag: missing field$"):
        parent.field("spec.tag", str)
    with pytest.raises(PermanentError, match=r"spec\.ports\[3\]: missing field"):
        parent.field("spec.ports[3].port", int)
    with pytest.raises(PermanentError, match=r"spec\.image: expected an integer, found a string"):
        parent.field("spec.image", int)
    with pytest.raises(PermanentError, match=r"spec\.enabled: expected an integer, found a boolean"):
        parent.field("spec.enabled", int)


def test_controller_and_timestamps():
    child = Object(
        {
            "metadata": {
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "ownerReferences": [{"uid": "other"}, {"uid": "u-1", "controller": True}],
            }
        }
    )
    assert child.controller_uid == "u-1"
    assert child.is_controlled_by(app())
    assert not child.is_controlled_by(Object({}))
    assert child.creation_timestamp.year == 2026
    assert child.deletion_timestamp is None


def service(ns: str, name: str, labels: dict) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns, "labels": labels}}


def test_a_query_matches_kind_namespace_and_labels():
    q = Query(
        kinds.Service,
        "a",
        Selector.labelled(
            [
                Requirement("tier", LabelOperator.IN, ("web", "api")),
                Requirement("legacy", LabelOperator.DOES_NOT_EXIST),
                Requirement("env", LabelOperator.NOT_IN, ("prod",)),
            ]
        ),
    )
    assert q.matches(service("a", "s", {"tier": "web"}))
    assert q.matches(service("a", "s", {"tier": "api", "env": "dev"}))
    assert not q.matches(service("b", "s", {"tier": "web"})), "other namespace"
    assert not q.matches(service("a", "s", {"tier": "db"}))
    assert not q.matches(service("a", "s", {"tier": "web", "legacy": "y"}))
    assert not q.matches(service("a", "s", {"tier": "web", "env": "prod"}))
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "s", "namespace": "a", "labels": {"tier": "web"}}}
    assert not q.matches(pod), "other kind"


def test_queries_by_names_labels_and_all_namespaces():
    named = Query.named(kinds.Service, None, ["x"])
    assert named.matches(service("a", "x", {})) and named.matches(service("b", "x", {}))
    assert not named.matches(service("a", "y", {}))
    labelled = Query.labelled(kinds.Service, "a", {"app": "web"})
    assert labelled.matches(service("a", "s", {"app": "web", "x": "y"}))
    assert not labelled.matches(service("a", "s", {"app": "api"}))
    assert Query.all(kinds.Service).matches(service("z", "s", {}))
    with pytest.raises(ValueError):
        Selector(names=("a",), requirements=())


def test_keep_returns_the_observed_child_without_what_the_server_and_host_set():
    observed = Object(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "run-1",
                "namespace": "shop",
                "uid": "j-1",
                "resourceVersion": "7",
                "generation": 1,
                "managedFields": [{}],
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "ownerReferences": [{"uid": "u-1", "controller": True}],
                "annotations": {"kubewasm.io/applied-hash": "abc"},
                "labels": {"app": "web"},
            },
            "spec": {"parallelism": 1},
            "status": {"succeeded": 1},
        }
    )
    kept = Response().keep(observed).children[0]
    assert kept == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "run-1", "namespace": "shop", "uid": "j-1", "labels": {"app": "web"}},
        "spec": {"parallelism": 1},
    }
    assert observed["metadata"]["resourceVersion"] == "7", "the observed object is left as it was"
