"""The bindings a Cluster, an override policy or an interpreter change concerns are found through
the binding informers' indexes: only the matching bindings are decoded, never every binding."""

from __future__ import annotations

from typing import Any

import pytest

import reconcile.cache.store
from controllers.api import (
    BINDING_RESOURCE_INDEX,
    TARGET_CLUSTER_INDEX,
    binding_resource_kind,
    target_cluster_names,
)
from controllers.binding.controller import _BindingIndex
from controllers.scheduler.controller import (
    AFFECTED_BY_CLUSTER_INDEX,
    _affected_by,
    _ClusterMapper,
)
from reconcile import GVK, Obj, Request, SharedInformer
from tests.unit.scripted import Script

COUNT = 2000


def _binding(index: int, *, kind: str = "Deployment", clusters: tuple[str, ...] = ()) -> Obj:
    conditions = [{"type": "Scheduled", "status": "True"}] if clusters else []
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {
            "name": f"b{index}",
            "namespace": "ns" if index % 2 else "other",
            "labels": {"propagationpolicy.karmada.io/permanent-id": "p"},
        },
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": kind, "name": f"t{index}"},
            "replicas": 2,
            "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided"}},
            "clusters": [{"name": c, "replicas": 1} for c in clusters],
        },
        "status": {"conditions": conditions},
    }


@pytest.fixture
def informer() -> SharedInformer:
    indexers = {
        TARGET_CLUSTER_INDEX: target_cluster_names,
        BINDING_RESOURCE_INDEX: binding_resource_kind,
        AFFECTED_BY_CLUSTER_INDEX: _affected_by,
    }
    shared = SharedInformer(Script([], []), name="bindings", indexers=indexers)
    for index in range(COUNT):
        shared.indexer.upsert(_binding(index, clusters=("member1", "member2")))
    shared.indexer.upsert(_binding(COUNT, kind="StatefulSet", clusters=("member3",)))
    shared.indexer.upsert(_binding(COUNT + 1))  # not scheduled: any Cluster may place it
    return shared


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the stored objects decoded."""
    calls: list[int] = []
    decode = reconcile.cache.store.decode

    def counting(encoded: bytes) -> Any:
        calls.append(1)
        return decode(encoded)

    monkeypatch.setattr(reconcile.cache.store, "decode", counting)
    return calls


def _cluster(name: str) -> Obj:
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
    }


def test_a_clusters_bindings_are_a_lookup(informer: SharedInformer, decoded: list[int]) -> None:
    index = _BindingIndex([informer])
    assert index.for_cluster(_cluster("member3")) == [Request(f"b{COUNT}", "other")]
    assert len(index.for_cluster(_cluster("member1"))) == COUNT
    assert index.for_cluster(_cluster("member9")) == []
    assert decoded == []


def test_the_scheduler_maps_a_cluster_to_its_bindings_and_the_unscheduled_ones(
    informer: SharedInformer, decoded: list[int]
) -> None:
    mapper = _ClusterMapper([informer])
    assert sorted(mapper(_cluster("member3"))) == sorted(
        [Request(f"b{COUNT}", "other"), Request(f"b{COUNT + 1}", "ns")]
    )
    assert mapper(_cluster("member9")) == [Request(f"b{COUNT + 1}", "ns")]
    assert decoded == []


def test_an_interpreter_change_maps_to_the_bindings_of_its_kinds(
    informer: SharedInformer, decoded: list[int]
) -> None:
    index = _BindingIndex([informer])
    found = index.for_kinds(lambda gvk: gvk == GVK("apps", "v1", "StatefulSet"))
    assert found == [Request(f"b{COUNT}", "other")]
    assert decoded == []


def test_an_override_policy_decodes_only_the_bindings_of_the_kinds_it_selects(
    informer: SharedInformer, decoded: list[int]
) -> None:
    policy: dict[str, Any] = {
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "OverridePolicy",
        "metadata": {"name": "o", "namespace": "other"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "StatefulSet"}]},
    }
    assert _BindingIndex([informer]).for_policy(policy) == [Request(f"b{COUNT}", "other")]
    assert len(decoded) == 1
    del policy["spec"]["resourceSelectors"]  # every binding of its namespace, no decoding
    assert len(_BindingIndex([informer]).for_policy(policy)) == COUNT // 2 + 1
    assert len(decoded) == 1


def test_indexes_follow_a_reschedule(informer: SharedInformer) -> None:
    informer.indexer.upsert(_binding(COUNT, kind="StatefulSet", clusters=("member4",)))
    index = _BindingIndex([informer])
    assert index.for_cluster(_cluster("member3")) == []
    assert index.for_cluster(_cluster("member4")) == [Request(f"b{COUNT}", "other")]
