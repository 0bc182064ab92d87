"""Replica assignment: Duplicated, static and dynamic weights, Aggregated, non-workloads."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.api import StaticClusterWeight, TargetCluster
from controllers.scheduler import (
    AssignError,
    ClusterCandidate,
    assign_replicas,
    fnv32a,
    reschedule_requested,
    static_weights,
)

DYNAMIC: dict[str, Any] = {
    "replicaSchedulingType": "Divided",
    "replicaDivisionPreference": "Weighted",
    "weightPreference": {"dynamicWeight": "AvailableReplicas"},
}
AGGREGATED: dict[str, Any] = {
    "replicaSchedulingType": "Divided",
    "replicaDivisionPreference": "Aggregated",
}


def candidate(
    name: str, available: int = 0, labels: dict[str, str] | None = None
) -> ClusterCandidate:
    cluster = {"metadata": {"name": name, "labels": labels or {}}, "spec": {}}
    return ClusterCandidate(name=name, cluster=cluster, score=0, available_replicas=available)


def binding(
    scheduling: dict[str, Any] | None,
    replicas: int,
    *,
    uid: str = "",
    clusters: dict[str, int] | None = None,
    spec: dict[str, Any] | None = None,
    status: dict[str, Any] | None = None,
) -> dict[str, Any]:
    placement = {} if scheduling is None else {"replicaScheduling": scheduling}
    body: dict[str, Any] = {
        "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": uid},
        "replicas": replicas,
        "placement": placement,
        "clusters": [{"name": n, "replicas": r} for n, r in (clusters or {}).items()],
        **(spec or {}),
    }
    return {"metadata": {"name": "web-deployment"}, "spec": body, "status": status or {}}


def static(*rules: tuple[list[str], int]) -> dict[str, Any]:
    weights = [{"targetCluster": {"clusterNames": names}, "weight": w} for names, w in rules]
    return {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {"staticWeightList": weights},
    }


def as_dict(targets: list[TargetCluster]) -> dict[str, int]:
    return {t["name"]: t["replicas"] for t in targets}


def uid_with_parity(odd: bool) -> str:
    return next(uid for i in range(1000) if fnv32a(uid := f"uid-{i}") % 2 == int(odd))


ABC = [candidate("c", 18), candidate("a", 6), candidate("b", 12)]


@pytest.mark.parametrize(
    "scheduling",
    [
        pytest.param(None, id="it happens without replicaScheduling"),
        pytest.param({"replicaSchedulingType": "Duplicated"}, id="it happens when Duplicated"),
        pytest.param(DYNAMIC, id="it happens when Divided by dynamic weight"),
        pytest.param(static((["a"], 1)), id="it happens when Divided by static weight"),
    ],
)
def test_a_non_workload_goes_to_every_cluster_with_zero_replicas(
    scheduling: dict[str, Any] | None,
) -> None:
    targets = assign_replicas(ABC, binding(scheduling, 0))
    assert targets == [
        {"name": "a", "replicas": 0},
        {"name": "b", "replicas": 0},
        {"name": "c", "replicas": 0},
    ]


@pytest.mark.parametrize(
    "scheduling",
    [
        pytest.param(None, id="no replicaScheduling means Duplicated"),
        pytest.param(
            {"replicaSchedulingType": "Duplicated"}, id="explicit Duplicated does the same"
        ),
    ],
)
def test_duplicated_gives_every_cluster_all_replicas(scheduling: dict[str, Any] | None) -> None:
    assert as_dict(assign_replicas(ABC, binding(scheduling, 5))) == {"a": 5, "b": 5, "c": 5}


@pytest.mark.parametrize(
    ("scheduling", "replicas", "expected"),
    [
        pytest.param(static((["a"], 1), (["b"], 2)), 9, {"a": 3, "b": 6}, id="9 at 1:2 gives 3:6"),
        pytest.param(static((["a"], 1), (["b"], 3)), 9, {"a": 2, "b": 7}, id="9 at 1:3 gives 2:7"),
        pytest.param(
            static((["a"], 18), (["b"], 12), (["c"], 6)),
            12,
            {"a": 6, "b": 4, "c": 2},
            id="12 at 18:12:6 gives 6:4:2",
        ),
        pytest.param(
            static((["a", "b"], 2), (["a"], 5)),
            7,
            {"a": 5, "b": 2},
            id="overlapping rules give a cluster the largest weight and unmatched ones nothing",
        ),
        pytest.param(
            static((["a", "b"], 1), (["c"], 0)),
            4,
            {"a": 2, "b": 2},
            id="a weight-0 cluster is dropped",
        ),
        pytest.param(
            static((["a", "b", "c"], 0)),
            3,
            {"a": 1, "b": 1, "c": 1},
            id="all weights zero means one each",
        ),
        pytest.param(
            {"replicaSchedulingType": "Divided"},
            6,
            {"a": 2, "b": 2, "c": 2},
            id="Divided without a preference weighs clusters equally",
        ),
        pytest.param(
            static((["a"], 1), (["b"], 1), (["c"], 100)),
            2,
            {"c": 2},
            id="clusters left with zero replicas are dropped",
        ),
    ],
)
def test_static_weights(
    scheduling: dict[str, Any], replicas: int, expected: dict[str, int]
) -> None:
    targets = assign_replicas(ABC, binding(scheduling, replicas))
    assert as_dict(targets) == expected
    assert [t["name"] for t in targets] == sorted(expected)


def test_static_weights_by_label_take_the_largest_matching_rule() -> None:
    clusters = [
        candidate("p1", labels={"env": "prod"}).cluster,
        candidate("p2", labels={"env": "prod", "tier": "gold"}).cluster,
        candidate("d1", labels={"env": "dev"}).cluster,
    ]
    rules: list[StaticClusterWeight] = [
        {"targetCluster": {"labelSelector": {"matchLabels": {"env": "prod"}}}, "weight": 2},
        {"targetCluster": {"labelSelector": {"matchLabels": {"tier": "gold"}}}, "weight": 3},
    ]
    assert static_weights(clusters, rules) == {"p1": 2, "p2": 3}


@pytest.mark.parametrize(
    ("odd", "expected"),
    [
        pytest.param(False, {"a": 2, "b": 1}, id="an even uid hash gives the odd replica to a"),
        pytest.param(True, {"a": 1, "b": 2}, id="an odd uid hash gives the odd replica to b"),
    ],
)
def test_static_weight_ties_follow_the_uid(odd: bool, expected: dict[str, int]) -> None:
    scheduling = static((["a", "b"], 1))
    uid = uid_with_parity(odd)
    assert as_dict(assign_replicas(ABC[1:], binding(scheduling, 3, uid=uid))) == expected


@pytest.mark.parametrize(
    ("replicas", "expected"),
    [
        pytest.param(3, {"member1": 2, "member2": 1}, id="3 replicas at 2:1 give 2 and 1"),
        pytest.param(9, {"member1": 6, "member2": 3}, id="scaled to 9 they give 6 and 3"),
    ],
)
def test_the_demo_case(replicas: int, expected: dict[str, int]) -> None:
    scheduling = static((["member1"], 2), (["member2"], 1))
    members = [candidate("member1"), candidate("member2")]
    previous = {"member1": 2, "member2": 1} if replicas == 9 else None
    assert (
        as_dict(assign_replicas(members, binding(scheduling, replicas, clusters=previous)))
        == expected
    )


def test_dynamic_weight_divides_by_available_replicas() -> None:
    # Karmada's documented example: room 6:12:18 for 12 replicas gives 2:4:6.
    assert as_dict(assign_replicas(ABC, binding(DYNAMIC, 12))) == {"a": 2, "b": 4, "c": 6}


@pytest.mark.parametrize(
    ("previous", "available", "replicas", "expected"),
    [
        pytest.param(
            {"m1": 2, "m2": 1},
            {"m1": 10, "m2": 30},
            7,
            {"m1": 3, "m2": 4},
            id="scaling up places only the new replicas and never shrinks a cluster",
        ),
        pytest.param(
            {"a": 2, "b": 4, "c": 6},
            {"a": 30, "b": 0, "c": 0},
            15,
            {"a": 5, "b": 4, "c": 6},
            id="scaling up into one roomy cluster keeps the others as they are",
        ),
        pytest.param(
            {"a": 2, "b": 4, "c": 6},
            {"a": 100, "b": 0, "c": 0},
            6,
            {"a": 1, "b": 2, "c": 3},
            id="scaling down shrinks in proportion to the current result, ignoring room",
        ),
        pytest.param(
            {"a": 12},
            {"a": 0, "b": 12},
            12,
            {"a": 12},
            id="an unchanged replica count keeps the current result",
        ),
        pytest.param(
            {"a": 3, "gone": 3},
            {"a": 10, "b": 10},
            6,
            {"a": 5, "b": 1},
            id="replicas of a cluster that is no longer a candidate are placed again",
        ),
    ],
)
def test_dynamic_weight_is_steady(
    previous: dict[str, int], available: dict[str, int], replicas: int, expected: dict[str, int]
) -> None:
    candidates = [candidate(name, room) for name, room in available.items()]
    result = assign_replicas(candidates, binding(DYNAMIC, replicas, clusters=previous))
    assert as_dict(result) == expected


def test_a_requested_reschedule_divides_afresh() -> None:
    candidates = [candidate("a", 0), candidate("b", 12)]
    triggered = binding(
        DYNAMIC,
        12,
        clusters={"a": 12},
        spec={"rescheduleTriggeredAt": "2024-05-02T00:00:00Z"},
        status={"lastScheduledTime": "2024-05-01T00:00:00Z"},
    )
    # The replicas a cluster runs count as its room, so a (12 running) and b (12 free) split.
    assert as_dict(assign_replicas(candidates, triggered)) == {"a": 6, "b": 6}


@pytest.mark.parametrize(
    ("spec", "status", "expected"),
    [
        pytest.param(
            {},
            {"lastScheduledTime": "2024-05-01T00:00:00Z"},
            False,
            id="a reschedule never requested is not pending",
        ),
        pytest.param(
            {"rescheduleTriggeredAt": "2024-05-02T00:00:00Z"},
            {"lastScheduledTime": "2024-05-01T00:00:00Z"},
            True,
            id="a request after the last schedule is pending",
        ),
        pytest.param(
            {"rescheduleTriggeredAt": "2024-04-30T00:00:00Z"},
            {"lastScheduledTime": "2024-05-01T00:00:00Z"},
            False,
            id="a request before the last schedule was already served",
        ),
        pytest.param(
            {"rescheduleTriggeredAt": "2024-05-02T00:00:00Z"},
            {},
            False,
            id="a binding never scheduled has nothing to redo",
        ),
    ],
)
def test_reschedule_requested(spec: dict[str, Any], status: dict[str, Any], expected: bool) -> None:
    assert reschedule_requested(binding(DYNAMIC, 1, spec=spec, status=status)) is expected


def test_dynamic_weight_fails_without_enough_room() -> None:
    with pytest.raises(AssignError, match="available replicas 2 are not enough to schedule 5"):
        assign_replicas([candidate("a", 1), candidate("b", 1)], binding(DYNAMIC, 5))


@pytest.mark.parametrize(
    ("previous", "available", "replicas", "expected"),
    [
        pytest.param(
            None,
            {"a": 5, "b": 10, "c": 3},
            12,
            {"a": 4, "b": 8},
            id="the fewest clusters with the most room, divided by room",
        ),
        pytest.param(
            None,
            {"a": 5, "b": 10, "c": 3},
            10,
            {"b": 10},
            id="one cluster when it has room for all",
        ),
        pytest.param(
            {"c": 2},
            {"a": 5, "b": 10, "c": 3},
            5,
            {"c": 5},
            id="clusters already used come first when scaling up",
        ),
        pytest.param(
            {"a": 6, "b": 4},
            {"a": 0, "b": 0},
            5,
            {"a": 5},
            id="scaling down consolidates into the largest current clusters",
        ),
    ],
)
def test_aggregated(
    previous: dict[str, int] | None,
    available: dict[str, int],
    replicas: int,
    expected: dict[str, int],
) -> None:
    candidates = [candidate(name, room) for name, room in available.items()]
    result = assign_replicas(candidates, binding(AGGREGATED, replicas, clusters=previous))
    assert as_dict(result) == expected


def test_aggregated_fails_without_enough_room() -> None:
    with pytest.raises(AssignError, match="available replicas 18 are not enough to schedule 20"):
        assign_replicas(
            [candidate("a", 5), candidate("b", 10), candidate("c", 3)], binding(AGGREGATED, 20)
        )


def test_no_candidates_is_an_error() -> None:
    with pytest.raises(AssignError, match="no clusters available"):
        assign_replicas([], binding(None, 1))
