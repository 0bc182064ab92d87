"""Spread constraints: which feasible clusters a binding goes to, by cluster and by region/label."""

from __future__ import annotations

from typing import Any

import pytest

from controllers.api import Placement, SpreadConstraint
from controllers.scheduler import (
    ClusterCandidate,
    SpreadError,
    select_clusters,
    spread_ignored,
    validate_spread_constraints,
)

DYNAMIC: dict[str, Any] = {
    "replicaSchedulingType": "Divided",
    "replicaDivisionPreference": "Weighted",
    "weightPreference": {"dynamicWeight": "AvailableReplicas"},
}
STATIC: dict[str, Any] = {
    "replicaSchedulingType": "Divided",
    "replicaDivisionPreference": "Weighted",
    "weightPreference": {"staticWeightList": [{"targetCluster": {}, "weight": 1}]},
}


def candidate(
    name: str,
    available: int,
    *,
    score: int = 0,
    region: str = "",
    labels: dict[str, str] | None = None,
) -> ClusterCandidate:
    cluster = {"metadata": {"name": name, "labels": labels or {}}, "spec": {"region": region}}
    return ClusterCandidate(name=name, cluster=cluster, score=score, available_replicas=available)


def placement(
    *constraints: SpreadConstraint, scheduling: dict[str, Any] | None = None
) -> Placement:
    result: dict[str, Any] = {"spreadConstraints": list(constraints)}
    if scheduling is not None:
        result["replicaScheduling"] = scheduling
    return result  # type: ignore[return-value]


def names(selected: list[ClusterCandidate]) -> list[str]:
    return [c.name for c in selected]


A, B, C = candidate("a", 8), candidate("b", 5), candidate("c", 3)


def test_without_constraints_every_candidate_is_selected() -> None:
    assert names(select_clusters([A, B, C], {}, 10)) == ["a", "b", "c"]


def test_static_weights_ignore_spread_constraints() -> None:
    chosen = placement({"spreadByField": "cluster", "maxGroups": 1}, scheduling=STATIC)
    assert spread_ignored(chosen)
    assert names(select_clusters([A, B, C], chosen, 10)) == ["a", "b", "c"]


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        pytest.param(
            {"spreadByField": "cluster", "maxGroups": 2},
            ["a", "b"],
            id="the two clusters with the most room are taken",
        ),
        pytest.param(
            {"spreadByField": "cluster", "minGroups": 1},
            ["a", "b", "c"],
            id="without a maximum every cluster is taken",
        ),
        pytest.param(
            {"spreadByField": "cluster", "maxGroups": 9},
            ["a", "b", "c"],
            id="a maximum above the cluster count takes every cluster",
        ),
    ],
)
def test_duplicated_cluster_spread_takes_the_best_ranked_clusters(
    constraint: SpreadConstraint, expected: list[str]
) -> None:
    assert names(select_clusters([A, B, C], placement(constraint), 10)) == expected


def test_too_few_clusters_for_min_groups_is_an_error() -> None:
    with pytest.raises(
        SpreadError, match=r"feasible clusters \(3\) is less than .*minGroups \(4\)"
    ):
        select_clusters([A, B, C], placement({"spreadByField": "cluster", "minGroups": 4}), 1)


@pytest.mark.parametrize(
    ("replicas", "maximum", "scheduled_on", "expected"),
    [
        pytest.param(10, 2, None, ["a", "b"], id="the pair with the most room that covers 10"),
        pytest.param(8, 2, None, ["a"], id="one cluster is enough when it covers the replicas"),
        pytest.param(10, 2, "c", ["a", "c"], id="a cluster already scheduled to outweighs room"),
        pytest.param(16, 3, None, ["a", "b", "c"], id="all three are needed for 16"),
    ],
)
def test_divided_cluster_spread_covers_the_replicas(
    replicas: int, maximum: int, scheduled_on: str | None, expected: list[str]
) -> None:
    candidates = [
        candidate(c.name, c.available_replicas, score=100 if c.name == scheduled_on else 0)
        for c in (A, B, C)
    ]
    chosen = placement({"spreadByField": "cluster", "maxGroups": maximum}, scheduling=DYNAMIC)
    assert sorted(names(select_clusters(candidates, chosen, replicas))) == expected


def test_divided_cluster_spread_fails_without_enough_room() -> None:
    chosen = placement({"spreadByField": "cluster", "maxGroups": 1}, scheduling=DYNAMIC)
    with pytest.raises(SpreadError, match="have room for 10 replicas"):
        select_clusters([A, B, C], chosen, 10)


def test_replicas_already_assigned_count_as_room() -> None:
    chosen = placement({"spreadByField": "cluster", "maxGroups": 1}, scheduling=DYNAMIC)
    assert names(select_clusters([A, B, C], chosen, 10, {"c": 7})) == ["c"]


REGIONS = [
    candidate("a", 10, region="r1"),
    candidate("b", 5, region="r1"),
    candidate("c", 7, region="r2"),
    candidate("d", 1, region="r3"),
]


@pytest.mark.parametrize(
    ("region", "cluster", "expected"),
    [
        pytest.param(
            {"minGroups": 2, "maxGroups": 2},
            {"minGroups": 2, "maxGroups": 3},
            ["a", "c", "b"],
            id="two regions: the best of each, then the rest up to the cluster maximum",
        ),
        pytest.param(
            {"minGroups": 2, "maxGroups": 2},
            {"minGroups": 2, "maxGroups": 2},
            ["a", "c"],
            id="the cluster maximum stops after one cluster per region",
        ),
        pytest.param(
            {"minGroups": 1, "maxGroups": 1},
            {"minGroups": 2, "maxGroups": 2},
            ["a", "b"],
            id="one region holding two clusters satisfies the cluster minimum",
        ),
        pytest.param(
            {"minGroups": 3, "maxGroups": 3},
            {"minGroups": 1, "maxGroups": 3},
            ["a", "c", "d"],
            id="three regions give one cluster each",
        ),
    ],
)
def test_region_spread_with_cluster_bounds(
    region: dict[str, int], cluster: dict[str, int], expected: list[str]
) -> None:
    chosen = placement(
        {"spreadByField": "region", **region},  # type: ignore[typeddict-item]
        {"spreadByField": "cluster", **cluster},  # type: ignore[typeddict-item]
        scheduling=DYNAMIC,
    )
    assert names(select_clusters(REGIONS, chosen, 6)) == expected


def test_region_spread_fails_with_too_few_regions() -> None:
    chosen = placement(
        {"spreadByField": "region", "minGroups": 4}, {"spreadByField": "cluster", "minGroups": 1}
    )
    with pytest.raises(SpreadError, match=r"region groups \(3\) is less than .*minGroups \(4\)"):
        select_clusters(REGIONS, chosen, 1)


def test_region_spread_fails_when_regions_lack_clusters() -> None:
    chosen = placement(
        {"spreadByField": "region", "minGroups": 1, "maxGroups": 1},
        {"spreadByField": "cluster", "minGroups": 3},
    )
    with pytest.raises(SpreadError, match=r"hold spreadConstraint\.minGroups"):
        select_clusters(REGIONS, chosen, 1)


def test_label_spread_groups_by_label_value() -> None:
    teams = [
        candidate("x1", 4, labels={"team": "x"}),
        candidate("x2", 9, labels={"team": "x"}),
        candidate("y1", 2, labels={"team": "y"}),
    ]
    chosen = placement(
        {"spreadByLabel": "team", "minGroups": 2, "maxGroups": 2},
        {"spreadByField": "cluster", "minGroups": 2, "maxGroups": 2},
    )
    assert names(select_clusters(teams, chosen, 1)) == ["x2", "y1"]


@pytest.mark.parametrize(
    ("constraints", "problem"),
    [
        pytest.param(
            [{"spreadByField": "cluster", "minGroups": 1}], None, id="a cluster constraint is valid"
        ),
        pytest.param(
            [{"spreadByField": "region", "minGroups": 1}],
            "a spread constraint by region requires a spread constraint by cluster",
            id="a region constraint alone is invalid",
        ),
        pytest.param(
            [{"spreadByLabel": "team"}],
            "a spread constraint by label team requires a spread constraint by cluster",
            id="a label constraint alone is invalid",
        ),
        pytest.param(
            [{"spreadByField": "cluster", "minGroups": 3, "maxGroups": 2}],
            "maxGroups 2 is lower than minGroups 3",
            id="maxGroups below minGroups is invalid",
        ),
        pytest.param(
            [{"spreadByField": "cluster", "spreadByLabel": "team"}],
            "spreadByField and spreadByLabel cannot both be set",
            id="field and label together are invalid",
        ),
    ],
)
def test_spread_constraint_validation(
    constraints: list[SpreadConstraint], problem: str | None
) -> None:
    assert validate_spread_constraints(constraints) == problem


def test_invalid_constraints_are_reported_by_select_clusters() -> None:
    with pytest.raises(SpreadError, match="invalid spreadConstraints"):
        select_clusters(REGIONS, placement({"spreadByField": "region", "minGroups": 1}), 1)


def test_the_group_search_stays_bounded_with_many_small_clusters() -> None:
    many = [candidate(f"c{i:02}", 1) for i in range(30)]
    chosen = placement({"spreadByField": "cluster", "minGroups": 1}, scheduling=DYNAMIC)
    assert len(select_clusters(many, chosen, 20)) == 20
