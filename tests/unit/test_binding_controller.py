"""How the binding controller merges Works and which events reach it."""

from __future__ import annotations

import copy
from typing import Any

from controllers.binding.controller import binding_changed, merged_work, work_changed
from reconcile import Event, EventType


def work(
    annotations: dict[str, str], labels: dict[str, str], spec: dict[str, Any]
) -> dict[str, Any]:
    return {
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {
            "name": "nginx-687f7fb96f",
            "namespace": "karmada-es-member1",
            "resourceVersion": "5",
            "labels": labels,
            "annotations": annotations,
            "finalizers": ["karmada.io/execution-controller"],
        },
        "spec": spec,
        "status": {"conditions": [{"type": "Applied", "status": "True"}]},
    }


def test_a_merged_work_keeps_what_others_set_and_drops_overrides_no_longer_applied() -> None:
    existing = work(
        {"policy.karmada.io/applied-overrides": "[...]", "someone/else": "kept"},
        {"resourcebinding.karmada.io/permanent-id": "rb", "team": "a"},
        {"workload": {"manifests": [{"kind": "Deployment", "spec": {"replicas": 1}}]}},
    )
    desired = work(
        {"resourcebinding.karmada.io/name": "nginx-deployment"},
        {"resourcebinding.karmada.io/permanent-id": "rb"},
        {"workload": {"manifests": [{"kind": "Deployment", "spec": {"replicas": 2}}]}},
    )
    merged = merged_work(existing, desired)
    assert merged["metadata"]["annotations"] == {
        "someone/else": "kept",
        "resourcebinding.karmada.io/name": "nginx-deployment",
    }
    assert merged["metadata"]["labels"]["team"] == "a"
    assert merged["metadata"]["resourceVersion"] == "5", "the update is conditional on it"
    assert merged["spec"] == desired["spec"]
    assert merged["status"] == existing["status"]
    assert merged_work(merged, desired) == merged, "merging again changes nothing"


def test_a_merge_changes_neither_the_existing_work_nor_the_desired_one() -> None:
    existing = work({"policy.karmada.io/applied-overrides": "[...]"}, {"team": "a"}, {"a": 1})
    existing["metadata"]["finalizers"] = ["someone/else"]
    desired = work({"resourcebinding.karmada.io/name": "n"}, {"team": "b"}, {"a": 2})
    desired["metadata"]["finalizers"] = ["karmada.io/execution-controller"]
    before, wanted = copy.deepcopy(existing), copy.deepcopy(desired)
    merged = merged_work(existing, desired)
    assert existing == before, "the cache's object is not written to"
    assert desired == wanted
    assert merged["metadata"]["finalizers"] == ["someone/else", "karmada.io/execution-controller"]
    assert merged["metadata"]["labels"] == {"team": "b"}


def test_status_writes_do_not_wake_the_binding_controller() -> None:
    old = work({}, {}, {})
    new = work({}, {}, {})
    new["status"] = {"manifestStatuses": []}
    assert not work_changed(Event(EventType.UPDATE, new, old))
    deleted = work({}, {}, {})
    deleted["metadata"]["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    assert work_changed(Event(EventType.UPDATE, deleted, old))
    assert work_changed(Event(EventType.DELETE, old))

    binding: dict[str, Any] = {"metadata": {"generation": 1}, "status": {}}
    aggregated = {"metadata": {"generation": 1}, "status": {"aggregatedStatus": []}}
    assert not binding_changed(Event(EventType.UPDATE, aggregated, binding))
    scheduled = {
        "metadata": {"generation": 1},
        "status": {"conditions": [{"type": "Scheduled", "status": "True"}]},
    }
    assert binding_changed(Event(EventType.UPDATE, scheduled, binding))


def test_a_work_created_does_not_wake_the_binding_controller() -> None:
    # Its own creation (or the informer's first list, when every binding is reconciled anyway).
    assert not work_changed(Event(EventType.CREATE, work({}, {}, {})))
