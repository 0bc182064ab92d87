"""KubeFed's ReplicaSchedulingPreference mode: weights with per-cluster minimum and maximum."""

from __future__ import annotations

import pytest

from controllers.scheduler import (
    ANY_CLUSTER,
    ClusterPreference,
    PreferencePlan,
    plan_by_preferences,
    preferences_from_spec,
)

P = ClusterPreference


def split(plan: PreferencePlan) -> dict[str, int]:
    return {t["name"]: t["replicas"] for t in plan.targets}


@pytest.mark.parametrize(
    ("total", "clusters", "preferences", "expected", "unassigned"),
    [
        pytest.param(
            10,
            ["a", "b"],
            {"a": P(weight=1), "b": P(weight=1)},
            {"a": 5, "b": 5},
            0,
            id="equal weights split evenly",
        ),
        pytest.param(
            10,
            ["a", "b"],
            {"a": P(min_replicas=4, weight=1), "b": P(weight=1)},
            {"a": 7, "b": 3},
            0,
            id="minimums first, then the rest by weight",
        ),
        pytest.param(
            10,
            ["a", "b"],
            {"a": P(max_replicas=2, weight=3), "b": P(weight=1)},
            {"a": 2, "b": 8},
            0,
            id="a maximum caps a heavy cluster and the rest flows to the others",
        ),
        pytest.param(
            10,
            ["a", "b"],
            {"a": P(max_replicas=3, weight=1), "b": P(max_replicas=2, weight=1)},
            {"a": 3, "b": 2},
            5,
            id="replicas no cluster can take are reported",
        ),
        pytest.param(
            8,
            ["x", "y", "z"],
            {ANY_CLUSTER: P(weight=1), "z": P(weight=2)},
            {"x": 2, "y": 2, "z": 4},
            0,
            id="the wildcard applies to clusters without their own entry",
        ),
        pytest.param(
            3,
            ["x", "y"],
            {"x": P(weight=1)},
            {"x": 3},
            0,
            id="clusters without a preference get nothing",
        ),
        pytest.param(
            3,
            ["a", "b"],
            {"a": P(min_replicas=2, weight=2), "b": P(min_replicas=2, weight=1)},
            {"a": 2, "b": 1},
            0,
            id="short of replicas the heavier cluster gets its minimum first",
        ),
        pytest.param(
            5,
            ["a", "b"],
            {"a": P(min_replicas=1), "b": P()},
            {"a": 1},
            4,
            id="weight zero clusters only get their minimum",
        ),
    ],
)
def test_plan_by_preferences(
    total: int,
    clusters: list[str],
    preferences: dict[str, ClusterPreference],
    expected: dict[str, int],
    unassigned: int,
) -> None:
    plan = plan_by_preferences(total, clusters, preferences)
    assert split(plan) == expected
    assert plan.unassigned == unassigned


def test_capacity_caps_like_a_maximum() -> None:
    plan = plan_by_preferences(
        10, ["a", "b"], {"a": P(weight=1), "b": P(weight=1)}, capacity={"a": 2}
    )
    assert split(plan) == {"a": 2, "b": 8}


@pytest.mark.parametrize(
    ("rebalance", "expected"),
    [
        pytest.param(True, {"a": 5, "b": 5}, id="rebalance moves replicas to match the weights"),
        pytest.param(False, {"a": 6, "b": 4}, id="without rebalance current replicas stay"),
    ],
)
def test_rebalance(rebalance: bool, expected: dict[str, int]) -> None:
    preferences = {"a": P(weight=1), "b": P(weight=1)}
    plan = plan_by_preferences(10, ["a", "b"], preferences, current={"a": 6}, rebalance=rebalance)
    assert split(plan) == expected


def test_the_workload_key_varies_which_equal_cluster_gets_the_odd_replica() -> None:
    preferences = {"a": P(weight=1), "b": P(weight=1)}
    winners = {
        next(iter(split(plan_by_preferences(1, ["a", "b"], preferences, key=f"ns/w{i}"))))
        for i in range(20)
    }
    assert winners == {"a", "b"}


def test_preferences_are_read_from_a_spec() -> None:
    spec = {
        "totalReplicas": 9,
        "clusters": {"a": {"minReplicas": 1, "maxReplicas": 4, "weight": 2}, "*": {"weight": 1}},
    }
    assert preferences_from_spec(spec) == {
        "a": P(min_replicas=1, max_replicas=4, weight=2),
        "*": P(weight=1),
    }
