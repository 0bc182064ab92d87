"""Attached bindings: Karmada's names, merging and releasing of requiredBy, de-duplication."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.api import work_target_clusters
from controllers.dependencies import (
    DEPENDED_BY_LABEL_PREFIX,
    attached_binding,
    binding_event_filter,
    binding_reference_key,
    depended_by_label,
    matches,
    merged_attached,
    recorded_dependencies,
    released,
    unique_dependencies,
)
from controllers.dependencies.attached import DEPENDENCIES_ANNOTATION, dependencies_json
from controllers.interpreter import DependentObjectReference
from controllers.namespacesync import (
    DEFAULT_SKIPPED_PROPAGATING_NAMESPACES,
    should_sync,
    skipped_patterns,
)
from reconcile import Event, EventType


def _parent(name: str = "web-deployment", clusters: tuple[str, ...] = ("member1",)) -> Any:
    return {
        "metadata": {
            "name": name,
            "namespace": "ns",
            "labels": {"resourcebinding.karmada.io/permanent-id": f"id-{name}"},
        },
        "spec": {
            "propagateDeps": True,
            "clusters": [{"name": c} for c in clusters],
            "conflictResolution": "Overwrite",
        },
    }


CONFIG: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "cfg", "namespace": "ns", "uid": "u1", "resourceVersion": "7"},
}


def test_the_reference_key_is_a_safe_encoded_decimal_hash_and_differs_by_namespace() -> None:
    key = binding_reference_key("ns", "web-deployment")
    assert key
    assert set(key) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert key != binding_reference_key("other", "web-deployment")
    assert depended_by_label("ns", "web-deployment") == DEPENDED_BY_LABEL_PREFIX + key


def test_an_attached_binding_is_named_owned_labelled_and_required_by_its_parent() -> None:
    attached = attached_binding(_parent(), CONFIG)
    assert attached["metadata"]["name"] == "cfg-configmap"
    assert attached["metadata"]["ownerReferences"][0]["uid"] == "u1"
    assert attached["metadata"]["labels"] == {
        depended_by_label("ns", "web-deployment"): "id-web-deployment"
    }
    assert attached["spec"]["requiredBy"] == [
        {"namespace": "ns", "name": "web-deployment", "clusters": [{"name": "member1"}]}
    ]
    assert attached["spec"]["conflictResolution"] == "Overwrite"
    assert attached["spec"]["resource"]["resourceVersion"] == "7"


def test_two_parents_are_merged_and_the_union_of_their_clusters_is_targeted() -> None:
    first = attached_binding(_parent("a", ("member1",)), CONFIG)
    both = merged_attached(first, attached_binding(_parent("b", ("member2",)), CONFIG))
    assert [s["name"] for s in both["spec"]["requiredBy"]] == ["a", "b"]
    assert [t["name"] for t in work_target_clusters(both)] == ["member1", "member2"]
    moved = merged_attached(both, attached_binding(_parent("a", ("member2",)), CONFIG))
    assert [t["name"] for t in work_target_clusters(moved)] == ["member2"]

    left = released(moved, "ns", "a")
    assert [s["name"] for s in left["spec"]["requiredBy"]] == ["b"]
    assert depended_by_label("ns", "a") not in left["metadata"]["labels"]
    assert released(left, "ns", "b")["spec"]["requiredBy"] == []


def test_dependencies_are_deduplicated_sorted_and_recorded() -> None:
    cfg = DependentObjectReference("v1", "ConfigMap", "ns", "cfg")
    secret = DependentObjectReference("v1", "Secret", "ns", "s")
    unique = unique_dependencies([secret, cfg, secret, cfg])
    assert unique == [cfg, secret]
    parent = {"metadata": {"annotations": {DEPENDENCIES_ANNOTATION: dependencies_json(unique)}}}
    assert recorded_dependencies(parent) == unique
    assert (
        recorded_dependencies({"metadata": {"annotations": {DEPENDENCIES_ANNOTATION: "{"}}}) == []
    )


def test_a_selector_dependency_matches_by_labels_in_its_namespace() -> None:
    ref = DependentObjectReference("v1", "ConfigMap", "ns", "", {"matchLabels": {"app": "web"}})
    labelled = {**CONFIG, "metadata": {**CONFIG["metadata"], "labels": {"app": "web"}}}
    assert matches(ref, labelled)
    assert not matches(ref, CONFIG)
    assert not matches(ref, {**labelled, "metadata": {**labelled["metadata"], "namespace": "x"}})


@pytest.mark.parametrize(
    ("event", "passes"),
    [
        (Event(EventType.CREATE, _parent()), True),
        (Event(EventType.CREATE, {"spec": {"propagateDeps": True}}), False),
        (Event(EventType.CREATE, {"spec": {"clusters": [{"name": "m"}]}}), False),
        (Event(EventType.DELETE, _parent()), True),
    ],
    ids=["scheduled", "not scheduled", "no propagateDeps", "deleted"],
)
def test_binding_events_pass_as_karmadas_predicate(event: Event, passes: bool) -> None:
    assert binding_event_filter(event) is passes


@pytest.mark.parametrize(
    ("name", "synced"),
    [
        ("team-a", True),
        ("default", False),
        ("kube-system", False),
        ("kube-anything", False),
        ("karmada-system", False),
        ("karmada-cluster", False),
        ("karmada-es-member1", False),
        ("kubernetes", True),
    ],
)
def test_reserved_default_and_skipped_namespaces_are_not_synced(name: str, synced: bool) -> None:
    assert should_sync(name, skipped_patterns(DEFAULT_SKIPPED_PROPAGATING_NAMESPACES)) is synced


def test_skipped_patterns_are_anchored_and_bad_ones_refused() -> None:
    assert not should_sync("team", skipped_patterns(["team"]))
    assert should_sync("my-team-x", skipped_patterns(["team"]))
    with pytest.raises(ValueError, match="skipped-propagating-namespaces"):
        skipped_patterns(["("])
