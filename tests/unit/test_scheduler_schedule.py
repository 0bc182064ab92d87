"""The whole scheduling pass: filter, score, spread, assign, affinity groups and the helpers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controllers.api import APPLIED_PLACEMENT_ANNOTATION, Placement
from controllers.scheduler import (
    SCHEDULE_SUCCESS_MESSAGE,
    ScheduleResult,
    applied_placement,
    placement_changed,
    replicas_changed,
    schedule,
    scheduled_condition,
)

APIS = [
    {"groupVersion": "apps/v1", "resources": [{"name": "deployments", "kind": "Deployment"}]},
    {"groupVersion": "v1", "resources": [{"name": "configmaps", "kind": "ConfigMap"}]},
]
STATIC_2_1: dict[str, Any] = {
    "replicaSchedulingType": "Divided",
    "replicaDivisionPreference": "Weighted",
    "weightPreference": {
        "staticWeightList": [
            {"targetCluster": {"clusterNames": ["member1"]}, "weight": 2},
            {"targetCluster": {"clusterNames": ["member2"]}, "weight": 1},
        ]
    },
}
DYNAMIC: dict[str, Any] = {
    "replicaSchedulingType": "Divided",
    "replicaDivisionPreference": "Weighted",
    "weightPreference": {"dynamicWeight": "AvailableReplicas"},
}


def cluster(
    name: str,
    *,
    pods: int = 100,
    labels: dict[str, str] | None = None,
    apis: list[dict[str, Any]] | None = None,
    deleting: bool = False,
    **spec: Any,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": labels or {}}
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    summary = {"allocatable": {"pods": str(pods)}, "allocated": {"pods": "0"}}
    return {
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": metadata,
        "spec": spec,
        "status": {"apiEnablements": APIS if apis is None else apis, "resourceSummary": summary},
    }


def binding(
    placement: Placement | dict[str, Any],
    replicas: int,
    *,
    kind: str = "Deployment",
    clusters: dict[str, int] | None = None,
    status: dict[str, Any] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    api_version = "apps/v1" if kind == "Deployment" else "v1"
    resource = {"apiVersion": api_version, "kind": kind, "namespace": "default", "name": "web"}
    return {
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "web", "namespace": "default", "annotations": annotations or {}},
        "spec": {
            "resource": {**resource, "uid": "", "resourceVersion": "1"},
            "replicas": replicas,
            "placement": placement,
            "clusters": [{"name": n, "replicas": r} for n, r in (clusters or {}).items()],
        },
        "status": status or {},
    }


def split(result: ScheduleResult) -> dict[str, int]:
    return {t["name"]: t["replicas"] for t in result.clusters}


MEMBERS = [cluster("member1"), cluster("member2")]


@pytest.mark.parametrize(
    ("replicas", "previous", "expected"),
    [
        pytest.param(
            3,
            None,
            {"member1": 2, "member2": 1},
            id="3 replicas at member1:2 member2:1 give 2 and 1",
        ),
        pytest.param(
            9,
            {"member1": 2, "member2": 1},
            {"member1": 6, "member2": 3},
            id="scaled to 9 they give 6 and 3",
        ),
    ],
)
def test_the_demo_case_end_to_end(
    replicas: int, previous: dict[str, int] | None, expected: dict[str, int]
) -> None:
    placement = {
        "clusterAffinity": {"clusterNames": ["member1", "member2"]},
        "replicaScheduling": STATIC_2_1,
    }
    result = schedule(binding(placement, replicas, clusters=previous), MEMBERS)
    assert result.scheduled
    assert split(result) == expected
    assert scheduled_condition(result) == {
        "type": "Scheduled",
        "status": "True",
        "reason": "Success",
        "message": SCHEDULE_SUCCESS_MESSAGE,
    }


def test_duplicated_propagation_to_the_matching_clusters() -> None:
    clusters = [
        cluster("member1", labels={"env": "prod"}),
        cluster("member2", labels={"env": "prod"}),
        cluster("member3", labels={"env": "dev"}),
    ]
    placement = {"clusterAffinity": {"labelSelector": {"matchLabels": {"env": "prod"}}}}
    result = schedule(binding(placement, 2), clusters)
    assert split(result) == {"member1": 2, "member2": 2}
    assert result.rejected == {
        "member3": "cluster(s) did not match the placement cluster affinity constraint"
    }


def test_a_non_workload_goes_everywhere_with_zero_replicas() -> None:
    result = schedule(binding({}, 0, kind="ConfigMap"), [cluster("b", pods=0), cluster("a")])
    assert result.clusters == [{"name": "a", "replicas": 0}, {"name": "b", "replicas": 0}]


def test_no_cluster_fit_explains_every_refusal() -> None:
    clusters = [
        cluster("member1", apis=[]),
        cluster("member2"),
        cluster("member3", taints=[{"key": "maintenance", "effect": "NoExecute"}]),
        cluster("member4", deleting=True),
    ]
    placement = {"clusterAffinity": {"exclude": ["member2"]}}
    result = schedule(binding(placement, 1), clusters)
    assert not result.scheduled
    assert result.reason == "NoClusterFit"
    assert result.clusters == []
    assert result.message == (
        "0/4 clusters are available: 1 cluster(s) did not have the API resource, "
        "1 cluster(s) did not match the placement cluster affinity constraint, "
        "1 cluster(s) had untolerated taint {maintenance:NoExecute}, "
        "1 cluster(s) is being deleted."
    )
    assert set(result.rejected) == {"member1", "member2", "member3", "member4"}
    condition = scheduled_condition(result)
    assert (condition["status"], condition["reason"]) == ("False", "NoClusterFit")


def test_no_clusters_at_all_is_no_cluster_fit() -> None:
    result = schedule(binding({}, 1), [])
    assert (result.reason, result.message) == ("NoClusterFit", "0/0 clusters are available.")


def test_clusters_already_scheduled_keep_passing_taint_and_api_checks() -> None:
    clusters = [
        cluster("member1", apis=[], taints=[{"key": "new", "effect": "NoSchedule"}]),
        cluster("member2"),
    ]
    result = schedule(binding({}, 1, clusters={"member1": 1}), clusters)
    assert split(result) == {"member1": 1, "member2": 1}


def test_not_enough_room_is_unschedulable() -> None:
    clusters = [cluster("member1", pods=2), cluster("member2", pods=1)]
    result = schedule(binding({"replicaScheduling": DYNAMIC}, 5), clusters)
    assert result.reason == "Unschedulable"
    assert "available replicas 3 are not enough to schedule 5" in result.message
    assert scheduled_condition(result)["status"] == "False"


def test_dynamic_weight_uses_the_clusters_free_pod_slots() -> None:
    clusters = [cluster("member1", pods=10), cluster("member2", pods=30)]
    result = schedule(binding({"replicaScheduling": DYNAMIC}, 8), clusters)
    assert split(result) == {"member1": 2, "member2": 6}


def test_unsatisfiable_spread_is_unschedulable() -> None:
    placement = {
        "spreadConstraints": [
            {"spreadByField": "region", "minGroups": 3},
            {"spreadByField": "cluster", "minGroups": 3},
        ]
    }
    clusters = [cluster("member1", region="r1"), cluster("member2", region="r2")]
    result = schedule(binding(placement, 1), clusters)
    assert result.reason == "Unschedulable"
    assert "is less than spreadConstraint.minGroups (3)" in result.message


def test_region_spread_end_to_end() -> None:
    placement = {
        "spreadConstraints": [
            {"spreadByField": "region", "minGroups": 2, "maxGroups": 2},
            {"spreadByField": "cluster", "minGroups": 2, "maxGroups": 2},
        ]
    }
    clusters = [
        cluster("east-big", region="east", pods=50),
        cluster("east-small", region="east", pods=5),
        cluster("west", region="west", pods=20),
        cluster("nowhere"),
    ]
    result = schedule(binding(placement, 3), clusters)
    assert split(result) == {"east-big": 3, "west": 3}
    assert result.rejected == {"nowhere": "cluster(s) did not have region property"}


AFFINITY_GROUPS: list[dict[str, Any]] = [
    {"affinityName": "primary", "clusterNames": ["member1"]},
    {"affinityName": "backup", "clusterNames": ["member2"]},
]


def test_affinity_groups_fall_through_when_a_group_has_no_feasible_cluster() -> None:
    clusters = [
        cluster("member1", taints=[{"key": "down", "effect": "NoSchedule"}]),
        cluster("member2"),
    ]
    result = schedule(binding({"clusterAffinities": AFFINITY_GROUPS}, 2), clusters)
    assert result.scheduled
    assert result.affinity_name == "backup"
    assert split(result) == {"member2": 2}


def test_affinity_groups_fall_through_when_a_group_lacks_room() -> None:
    placement = {"clusterAffinities": AFFINITY_GROUPS, "replicaScheduling": DYNAMIC}
    clusters = [cluster("member1", pods=1), cluster("member2", pods=10)]
    result = schedule(binding(placement, 4), clusters)
    assert (result.affinity_name, split(result)) == ("backup", {"member2": 4})


def test_the_first_group_that_fits_wins() -> None:
    result = schedule(binding({"clusterAffinities": AFFINITY_GROUPS}, 1), MEMBERS)
    assert (result.affinity_name, split(result)) == ("primary", {"member1": 1})


def test_scheduling_resumes_at_the_observed_affinity_group() -> None:
    observed = {"schedulerObservingAffinityName": "backup"}
    result = schedule(binding({"clusterAffinities": AFFINITY_GROUPS}, 1, status=observed), MEMBERS)
    assert (result.affinity_name, split(result)) == ("backup", {"member2": 1})


def test_all_affinity_groups_failing_is_no_cluster_fit_with_each_groups_reason() -> None:
    clusters = [cluster("member1", apis=[]), cluster("member2", deleting=True)]
    result = schedule(binding({"clusterAffinities": AFFINITY_GROUPS}, 1), clusters)
    assert result.reason == "NoClusterFit"
    assert "affinity group 'primary': 0/2 clusters are available" in result.message
    assert "affinity group 'backup': 0/2 clusters are available" in result.message
    assert result.rejected["member2"] == (
        "[primary] cluster(s) is being deleted; [backup] cluster(s) is being deleted"
    )
    assert result.affinity_name is None


def test_locality_keeps_aggregated_replicas_where_they_run() -> None:
    aggregated = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}
    clusters = [cluster("member1", pods=50), cluster("member2", pods=10)]
    fresh = schedule(binding({"replicaScheduling": aggregated}, 4), clusters)
    assert split(fresh) == {"member1": 4}
    scaled = schedule(
        binding({"replicaScheduling": aggregated}, 6, clusters={"member2": 2}), clusters
    )
    assert split(scaled) == {"member2": 6}


def test_the_applied_placement_annotation_round_trips() -> None:
    placement = {"replicaScheduling": DYNAMIC, "clusterAffinity": {"clusterNames": ["member1"]}}
    text = applied_placement(placement)
    assert json.loads(text) == placement
    assert " " not in text
    assert text == applied_placement(dict(reversed(list(placement.items()))))
    unchanged = binding(placement, 1, annotations={APPLIED_PLACEMENT_ANNOTATION: text})
    assert not placement_changed(unchanged)
    edited = binding(
        {"replicaScheduling": DYNAMIC}, 1, annotations={APPLIED_PLACEMENT_ANNOTATION: text}
    )
    assert placement_changed(edited)
    assert placement_changed(binding(placement, 1))
    assert placement_changed(binding(placement, 1, annotations={APPLIED_PLACEMENT_ANNOTATION: "{"}))


@pytest.mark.parametrize(
    ("placement", "replicas", "clusters", "expected"),
    [
        pytest.param(
            {}, 3, {"a": 3, "b": 3}, False, id="duplicated counts that match need nothing"
        ),
        pytest.param(
            {}, 4, {"a": 3, "b": 3}, True, id="duplicated counts after a scale need rescheduling"
        ),
        pytest.param(
            {"replicaScheduling": DYNAMIC},
            6,
            {"a": 4, "b": 2},
            False,
            id="divided sums that match need nothing",
        ),
        pytest.param(
            {"replicaScheduling": DYNAMIC},
            9,
            {"a": 4, "b": 2},
            True,
            id="divided sums after a scale need rescheduling",
        ),
        pytest.param({}, 3, {}, False, id="an unscheduled binding has nothing to compare"),
        pytest.param(
            {"replicaScheduling": DYNAMIC},
            1,
            {},
            True,
            id="divided with every target evicted needs rescheduling",
        ),
    ],
)
def test_replicas_changed(
    placement: dict[str, Any], replicas: int, clusters: dict[str, int], expected: bool
) -> None:
    assert replicas_changed(binding(placement, replicas, clusters=clusters)) is expected


def test_schedule_does_not_modify_its_inputs() -> None:
    placement = {"clusterAffinities": AFFINITY_GROUPS, "replicaScheduling": STATIC_2_1}
    subject = binding(placement, 3, clusters={"member1": 1})
    before = json.dumps(subject, sort_keys=True), json.dumps(MEMBERS, sort_keys=True)
    schedule(subject, MEMBERS)
    assert (json.dumps(subject, sort_keys=True), json.dumps(MEMBERS, sort_keys=True)) == before


# Found by tests/fuzz/test_fuzz_scheduler.py; each raised AttributeError, TypeError or
# QuantityError out of schedule(), which the scheduler controller does not catch.
@pytest.mark.parametrize(
    ("placement", "spec", "expected"),
    [
        pytest.param(
            {"clusterAffinity": 9}, {}, "spec.placement.clusterAffinity: Invalid value: "
            '"integer": must be of type object', id="affinity of the wrong type",
        ),
        pytest.param(
            {"clusterTolerations": [None]}, {}, "spec.placement.clusterTolerations[0]: Invalid "
            'value: "null"', id="a null toleration",
        ),
        pytest.param(
            {}, {"replicaRequirements": {"resourceRequest": {"cpu": "7K!"}}},
            "spec.replicaRequirements.resourceRequest[cpu]: Invalid value: '7K!'",
            id="a request that is no quantity",
        ),
    ],
)  # fmt: skip
def test_a_malformed_binding_is_unschedulable_naming_the_field(
    placement: dict[str, Any], spec: dict[str, Any], expected: str
) -> None:
    malformed = binding(placement, 3)
    malformed["spec"].update(spec)
    result = schedule(malformed, MEMBERS)
    assert result.reason == "Unschedulable"
    assert result.message.startswith(f"the binding is invalid: {expected}")


def test_a_cluster_of_the_wrong_shape_is_refused_and_one_with_bad_quantities_has_no_room() -> None:
    malformed = cluster("member1")
    malformed["status"]["resourceSummary"] = float("nan")
    unreadable = cluster("member2")
    unreadable["status"]["resourceSummary"]["allocatable"]["pods"] = "lots"
    result = schedule(binding({"replicaScheduling": DYNAMIC}, 3), [malformed, unreadable])
    assert result.reason == "Unschedulable"
    assert result.rejected == {"member1": "cluster(s) had a spec or status of the wrong shape"}
    assert "available replicas 0" in result.message
