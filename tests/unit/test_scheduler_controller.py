"""When the scheduler controller schedules a binding, which bindings it owns, what re-enqueues."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controllers.scheduler import ScheduleResult, schedule
from controllers.scheduler.controller import (
    _with_status,
    cluster_changed,
    condition_message,
    is_ours,
    schedule_reason,
)
from reconcile import Event, EventType

PLACEMENT: dict[str, Any] = {
    "clusterAffinity": {"clusterNames": ["member1", "member2"]},
    "replicaScheduling": {"replicaSchedulingType": "Divided"},
}


def cluster(
    name: str, *, deleting: bool = False, labels: dict[str, str] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": labels or {}}
    if deleting:
        metadata["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    return {"metadata": metadata, "spec": {}, "status": {}}


CLUSTERS = [cluster("member1"), cluster("member2")]


def binding(
    *,
    replicas: int = 3,
    placement: dict[str, Any] | None = None,
    applied: dict[str, Any] | None = None,
    clusters: dict[str, int] | None = None,
    scheduled: str = "True",
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    placement = PLACEMENT if placement is None else placement
    annotations = {"policy.karmada.io/applied-placement": json.dumps(applied or placement)}
    targets = [
        {"name": n, "replicas": r} for n, r in (clusters or {"member1": 2, "member2": 1}).items()
    ]
    return {
        "metadata": {
            "name": "nginx-deployment",
            "namespace": "default",
            "generation": 2,
            "labels": {"propagationpolicy.karmada.io/permanent-id": "id"}
            if labels is None
            else labels,
            "annotations": annotations,
        },
        "spec": {"replicas": replicas, "placement": placement, "clusters": targets, **spec},
        "status": {"conditions": [{"type": "Scheduled", "status": scheduled}]},
    }


@pytest.mark.parametrize(
    ("obj", "clusters", "reason"),
    [
        pytest.param(binding(), CLUSTERS, None, id="scheduled and unchanged"),
        pytest.param(binding(scheduled="False"), CLUSTERS, "not scheduled yet", id="last failed"),
        pytest.param(
            binding(applied={"clusterAffinity": {}}), CLUSTERS, "placement changed", id="placement"
        ),
        pytest.param(binding(replicas=9), CLUSTERS, "replicas changed", id="scaled"),
        pytest.param(
            binding(), [cluster("member1")], "target clusters gone: member2", id="cluster gone"
        ),
        pytest.param(
            binding(),
            [cluster("member1"), cluster("member2", deleting=True)],
            "target clusters gone: member2",
            id="cluster being deleted",
        ),
        pytest.param(
            binding(placement={}, clusters={"member1": 3, "member2": 3}),
            CLUSTERS,
            "duplicated",
            id="duplicated always looks again",
        ),
        pytest.param(
            binding(
                rescheduleTriggeredAt="2024-02-01T00:00:00Z",
                clusters={"member1": 2, "member2": 1},
            )
            | {
                "status": {
                    "conditions": [{"type": "Scheduled", "status": "True"}],
                    "lastScheduledTime": "2024-01-01T00:00:00Z",
                }
            },
            CLUSTERS,
            "reschedule requested",
            id="reschedule requested",
        ),
    ],
)
def test_schedule_reason(
    obj: dict[str, Any], clusters: list[dict[str, Any]], reason: str | None
) -> None:
    assert schedule_reason(obj, clusters) == reason


def test_only_claimed_default_scheduler_unsuspended_bindings_are_ours() -> None:
    assert is_ours(binding())
    assert is_ours(binding(labels={"clusterpropagationpolicy.karmada.io/permanent-id": "x"}))
    assert is_ours(binding(labels={"binding.karmada.io/managed-by": "someone"}))
    assert not is_ours(binding(labels={})), "claims removed with the policy: left alone"
    assert not is_ours(binding(schedulerName="other-scheduler"))
    assert is_ours(binding(schedulerName="default-scheduler"))
    assert not is_ours(binding(suspension={"scheduling": True}))


def test_cluster_heartbeats_do_not_reschedule_but_labels_and_apis_do() -> None:
    old = cluster("member1")
    heartbeat = cluster("member1")
    heartbeat["status"] = {"resourceSummary": {"allocated": {"pods": "3"}}}
    assert not cluster_changed(Event(EventType.UPDATE, heartbeat, old))
    relabelled = cluster("member1", labels={"env": "prod"})
    assert cluster_changed(Event(EventType.UPDATE, relabelled, old))
    apis = cluster("member1")
    apis["status"] = {"apiEnablements": [{"groupVersion": "apps/v1"}]}
    assert cluster_changed(Event(EventType.UPDATE, apis, old))
    assert cluster_changed(Event(EventType.DELETE, old))


def test_a_failed_condition_names_each_refused_cluster() -> None:
    rejected = {f"m{i:02}": "cluster(s) did not have the API resource" for i in range(22)}
    result = ScheduleResult(
        reason="NoClusterFit",
        message="0/22 clusters are available: 22 cluster(s) did not have the API resource.",
        rejected=rejected,
    )
    message = condition_message(result)
    assert message.startswith("0/22 clusters are available")
    assert "m00: cluster(s) did not have the API resource" in message
    assert "m19:" in message
    assert "m20:" not in message
    assert message.endswith("; and 2 more")
    assert condition_message(ScheduleResult()) == "Binding has been scheduled successfully."


def test_a_malformed_binding_is_scheduled_to_report_it() -> None:
    # Found by tests/fuzz/test_fuzz_scheduler.py: suspension "x" raised AttributeError.
    malformed = binding(suspension="x")
    assert is_ours(malformed)
    assert schedule_reason(malformed, CLUSTERS) == "invalid binding"


@pytest.mark.parametrize("status", ["x", {"conditions": 5}, {"conditions": [None]}])
def test_a_malformed_status_is_replaced_by_the_scheduled_condition(status: Any) -> None:
    malformed = {**binding(), "status": status}
    result = schedule(malformed, CLUSTERS)
    assert result.reason == "Unschedulable"
    updated = _with_status(malformed, result, spec_written=False)
    (condition,) = updated["status"]["conditions"]
    assert condition["reason"] == "Unschedulable"
    assert condition["message"].startswith("the binding is invalid: status")


def test_a_reschedule_with_an_unchanged_result_is_recorded_as_done() -> None:
    # Karmada sets lastScheduledTime on every successful scheduling; were it kept when the fresh
    # result equals the current one, rescheduleTriggeredAt would stay later and every later
    # reconcile would reschedule afresh again.
    requested = binding(rescheduleTriggeredAt="2024-02-01T00:00:00Z") | {
        "status": {
            "conditions": [{"type": "Scheduled", "status": "True"}],
            "lastScheduledTime": "2024-01-01T00:00:00Z",
        }
    }
    assert schedule_reason(requested, CLUSTERS) == "reschedule requested"
    result = ScheduleResult(clusters=[{"name": "member1", "replicas": 2}])
    updated = _with_status(requested, result, spec_written=False)
    assert updated["status"]["lastScheduledTime"] > "2024-02-01T00:00:00Z"
    assert schedule_reason(updated, CLUSTERS) is None
