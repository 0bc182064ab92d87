"""Unit tests of the pure failover rules: controller taints, NoExecute tolerations, condition
matches of ClusterTaintPolicies, and the assessment of graceful eviction tasks."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from controllers.api import AggregatedStatusItem, Taint, Toleration
from controllers.cluster.taints import (
    NOT_READY_TAINT,
    UNREACHABLE_TAINT,
    condition_taints,
    update_taints,
)
from controllers.eviction.graceful import assess_tasks
from controllers.eviction.tolerations import no_execute_verdict
from controllers.taint import condition_matches, wanted_taints
from reconcile import Condition

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


def ago(seconds: float) -> str:
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


OPERATOR_TAINT = Taint(key="cluster.karmada.io/unschedulable", effect="NoSchedule")


@pytest.mark.parametrize(
    ("ready", "present"),
    [
        ("True", []),
        ("False", [NOT_READY_TAINT]),
        ("Unknown", [UNREACHABLE_TAINT]),
        # Karmada only adds not-ready to a Cluster never reported on.
        (None, [NOT_READY_TAINT, UNREACHABLE_TAINT]),
    ],
    ids=["ready", "not-ready", "unknown", "no-condition-yet"],
)
def test_the_controller_taints_follow_ready_and_leave_others(
    ready: str | None, present: list[Taint]
) -> None:
    start = [OPERATOR_TAINT, NOT_READY_TAINT, UNREACHABLE_TAINT]
    add, remove = condition_taints(ready)
    result = update_taints(start, add=add, remove=remove, now=NOW)
    keys = [(t["key"], t["effect"]) for t in result]
    assert keys[0] == (OPERATOR_TAINT["key"], "NoSchedule")
    assert keys[1:] == [(t["key"], t["effect"]) for t in present]


def test_an_added_taint_gets_time_added_and_an_existing_one_keeps_it() -> None:
    kept = Taint(key="a", effect="NoExecute", timeAdded=ago(60))
    result = update_taints(
        [kept], add=[Taint(key="a", effect="NoExecute"), NOT_READY_TAINT], now=NOW
    )
    assert result[0]["timeAdded"] == ago(60)
    assert result[1]["timeAdded"] == "2025-01-01T12:00:00Z"


def test_same_key_with_another_effect_is_another_taint() -> None:
    result = update_taints(
        [Taint(key="cluster.karmada.io/not-ready", effect="NoExecute")], remove=[NOT_READY_TAINT]
    )
    assert result == [{"key": "cluster.karmada.io/not-ready", "effect": "NoExecute"}]


NO_EXECUTE = Taint(key="k", effect="NoExecute", timeAdded=ago(30))


@pytest.mark.parametrize(
    ("tolerations", "evict", "after"),
    [
        ([], True, None),
        ([Toleration(key="other", operator="Exists")], True, None),
        ([Toleration(key="k", operator="Exists")], False, None),
        ([Toleration(key="k", operator="Exists", tolerationSeconds=100)], False, 70.0),
        ([Toleration(key="k", operator="Exists", tolerationSeconds=10)], True, None),
        ([Toleration(key="k", operator="Exists", tolerationSeconds=0)], True, None),
        ([Toleration(operator="Exists", effect="NoSchedule")], True, None),
        (
            [
                Toleration(key="k", operator="Exists", tolerationSeconds=300),
                Toleration(operator="Exists", tolerationSeconds=60),
            ],
            False,
            30.0,
        ),
    ],
    ids=[
        "none",
        "other-key",
        "forever",
        "seconds-left",
        "seconds-ran-out",
        "zero-seconds",
        "wrong-effect",
        "shortest-counts",
    ],
)
def test_no_execute_tolerations_and_their_seconds(
    tolerations: list[Toleration], evict: bool, after: float | None
) -> None:
    taints = [Taint(key="s", effect="NoSchedule"), NO_EXECUTE]
    verdict = no_execute_verdict(taints, tolerations, now=NOW)
    assert verdict.evict is evict
    assert verdict.after == after


def test_no_schedule_taints_never_evict() -> None:
    verdict = no_execute_verdict([Taint(key="s", effect="NoSchedule")], [], now=NOW)
    assert not verdict.evict
    assert verdict.after is None


READY_FALSE = [Condition(type="Ready", status="False")]


@pytest.mark.parametrize(
    ("matches", "expected"),
    [
        ([], False),
        (
            [{"conditionType": "Ready", "operator": "In", "statusValues": ["False", "Unknown"]}],
            True,
        ),
        ([{"conditionType": "Ready", "operator": "In", "statusValues": ["True"]}], False),
        ([{"conditionType": "Ready", "operator": "NotIn", "statusValues": ["True"]}], True),
        ([{"conditionType": "Ready", "operator": "NotIn", "statusValues": ["False"]}], False),
        ([{"conditionType": "NetworkOK", "operator": "NotIn", "statusValues": ["True"]}], False),
        (
            [
                {"conditionType": "Ready", "operator": "In", "statusValues": ["False"]},
                {"conditionType": "Other", "operator": "In", "statusValues": ["False"]},
            ],
            False,
        ),
        ([{"conditionType": "Ready", "operator": "Gt", "statusValues": ["False"]}], False),
    ],
    ids=[
        "empty-never",
        "in",
        "not-in-values",
        "not-in",
        "not-in-but-is",
        "missing-condition",
        "anded",
        "unknown-operator",
    ],
)
def test_condition_matches(matches: list[Any], expected: bool) -> None:
    assert condition_matches(READY_FALSE, matches) is expected


def policy(name: str, created: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": spec}


NOT_READY_NO_EXECUTE = {
    "addOnConditions": [{"conditionType": "Ready", "operator": "NotIn", "statusValues": ["True"]}],
    "removeOnConditions": [{"conditionType": "Ready", "operator": "In", "statusValues": ["True"]}],
    "taints": [{"key": "cluster.karmada.io/not-ready", "effect": "NoExecute"}],
}


def cluster(status: str, taints: list[Any], **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "m2", "labels": labels},
        "spec": {"taints": taints},
        "status": {"conditions": [{"type": "Ready", "status": status}]},
    }


def test_a_policy_adds_its_taint_when_its_conditions_hold_and_removes_only_its_own() -> None:
    policies = [policy("p", ago(10), **NOT_READY_NO_EXECUTE)]
    down = wanted_taints(cluster("False", [OPERATOR_TAINT]), policies, now=NOW)
    assert down == [
        OPERATOR_TAINT,
        {"key": "cluster.karmada.io/not-ready", "effect": "NoExecute", "timeAdded": ago(0)},
    ]
    assert wanted_taints(cluster("True", down), policies) == [OPERATOR_TAINT]


def test_a_policy_leaves_clusters_outside_its_targets() -> None:
    targeted = {**NOT_READY_NO_EXECUTE, "targetClusters": {"clusterNames": ["m1"]}}
    assert wanted_taints(cluster("False", []), [policy("p", ago(1), **targeted)]) == []
    by_label = {
        **NOT_READY_NO_EXECUTE,
        "targetClusters": {"labelSelector": {"matchLabels": {"a": "b"}}},
    }
    assert wanted_taints(cluster("False", [], a="b"), [policy("p", ago(1), **by_label)])


def test_conflicting_policies_apply_oldest_first() -> None:
    remover = {
        "removeOnConditions": [
            {"conditionType": "Ready", "operator": "In", "statusValues": ["False"]}
        ],
        "taints": NOT_READY_NO_EXECUTE["taints"],
    }
    older_adds = [policy("b", ago(20), **NOT_READY_NO_EXECUTE), policy("a", ago(10), **remover)]
    assert wanted_taints(cluster("False", []), older_adds) == []
    older_removes = [policy("b", ago(10), **NOT_READY_NO_EXECUTE), policy("a", ago(20), **remover)]
    assert len(wanted_taints(cluster("False", []), older_removes)) == 1


def healthy(*clusters: str, health: str = "Healthy") -> list[AggregatedStatusItem]:
    return [cast(AggregatedStatusItem, {"clusterName": c, "health": health}) for c in clusters]


def spec(*tasks: dict[str, Any]) -> dict[str, Any]:
    return {"clusters": [{"name": "m1", "replicas": 3}], "gracefulEvictionTasks": list(tasks)}


def test_a_task_waits_until_the_new_placement_is_healthy() -> None:
    task = {"fromCluster": "m2", "creationTimestamp": ago(60)}
    waiting = assess_tasks(spec(task), healthy("m1", health="Unhealthy"), 600, now=NOW)
    assert waiting.kept == [task]
    assert waiting.evicted == []
    assert waiting.retry == 60.0  # a tenth of the timeout at most
    done = assess_tasks(spec(task), healthy("m1"), 600, now=NOW)
    assert done.kept == []
    assert done.evicted == ["m2"]
    assert done.retry is None


def test_a_task_without_status_of_the_new_cluster_waits() -> None:
    task = {"fromCluster": "m2", "creationTimestamp": ago(1)}
    assert assess_tasks(spec(task), healthy("m2"), 600, now=NOW).kept == [task]


def test_a_task_without_a_new_placement_waits() -> None:
    # Every target evicted and nothing rescheduled yet (or nowhere to go): not healthy.
    task = {"fromCluster": "m1", "creationTimestamp": ago(1)}
    alone = {"clusters": [], "gracefulEvictionTasks": [task]}
    assert assess_tasks(alone, healthy("m1"), 600, now=NOW).kept == [task]


@pytest.mark.parametrize(
    ("task", "kept"),
    [
        ({"creationTimestamp": ago(601)}, False),
        ({"creationTimestamp": ago(599)}, True),
        ({"creationTimestamp": ago(31), "gracePeriodSeconds": 30}, False),
        ({"creationTimestamp": ago(9999), "suppressDeletion": True}, True),
        ({"creationTimestamp": ago(1), "suppressDeletion": False}, False),
        ({"creationTimestamp": ago(9999), "purgeMode": "Never"}, True),
    ],
    ids=["timed-out", "in-time", "grace-period", "suppressed", "released", "never"],
)
def test_timeouts_and_suppression(task: dict[str, Any], kept: bool) -> None:
    full = {"fromCluster": "m2", **task}
    result = assess_tasks(spec(full), healthy("m1", health="Unhealthy"), 600, now=NOW)
    assert (result.kept == [full]) is kept


def test_a_task_without_creation_time_gets_one() -> None:
    result = assess_tasks(spec({"fromCluster": "m2"}), healthy("m1"), 600, now=NOW)
    assert result.kept == [{"fromCluster": "m2", "creationTimestamp": "2025-01-01T12:00:00Z"}]


@pytest.mark.parametrize(
    ("purge_mode", "kept"),
    [
        ("Gracefully", True),
        ("Graciously", True),
        ("Never", True),
        (None, True),
        ("Directly", False),
        ("Immediately", False),
    ],
    ids=["gracefully", "graciously", "never", "unset", "directly", "immediately"],
)
def test_the_old_work_stays_during_an_eviction_unless_purged_directly(
    purge_mode: str | None, kept: bool
) -> None:
    from controllers.binding.controller import _kept_clusters

    task: dict[str, Any] = {"fromCluster": "m2"}
    if purge_mode:
        task["purgeMode"] = purge_mode
    assert ("m2" in _kept_clusters({"spec": spec(task)})) is kept
