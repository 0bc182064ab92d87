"""Unit tests of controllers.eviction.task: moving a cluster into a GracefulEvictionTask."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import pytest

from controllers.api import ResourceBindingSpec
from controllers.eviction import (
    EVICTION_PRODUCER_TAINT_MANAGER,
    EVICTION_REASON_TAINT_UNTOLERATED,
    evict,
)

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def spec(**fields: Any) -> ResourceBindingSpec:
    targets = [{"name": "m1", "replicas": 2}, {"name": "m2", "replicas": 1}]
    base: dict[str, Any] = {"clusters": targets}
    return cast(ResourceBindingSpec, {**base, **fields})


def test_the_cluster_moves_from_the_result_into_a_task_with_its_replicas() -> None:
    binding = spec()
    changed = evict(
        binding,
        "m2",
        reason=EVICTION_REASON_TAINT_UNTOLERATED,
        producer=EVICTION_PRODUCER_TAINT_MANAGER,
        message="taint",
        now=NOW,
    )
    assert changed
    assert binding["clusters"] == [{"name": "m1", "replicas": 2}]
    assert binding["gracefulEvictionTasks"] == [
        {
            "fromCluster": "m2",
            "purgeMode": "Gracefully",
            "reason": "TaintUntolerated",
            "producer": "TaintManager",
            "creationTimestamp": "2025-01-02T03:04:05Z",
            "replicas": 1,
            "message": "taint",
        }
    ]


def test_a_cluster_that_is_no_target_changes_nothing() -> None:
    binding = spec()
    assert not evict(binding, "m3", reason="r", producer="p")
    assert binding == spec()


def test_a_cluster_already_being_evicted_keeps_its_first_task() -> None:
    first = {"fromCluster": "m2", "reason": "first", "creationTimestamp": "2024-01-01T00:00:00Z"}
    binding = spec(gracefulEvictionTasks=[first])
    assert evict(binding, "m2", reason="second", producer="p", now=NOW)
    assert binding["clusters"] == [{"name": "m1", "replicas": 2}]
    assert binding["gracefulEvictionTasks"] == [first]


def test_a_cluster_without_replicas_gets_a_task_without_them() -> None:
    binding = spec(clusters=[{"name": "m1"}])
    evict(binding, "m1", reason="r", producer="p", purge_mode="Directly", grace_period_seconds=30)
    task = binding["gracefulEvictionTasks"][0]
    assert "replicas" not in task
    assert task["purgeMode"] == "Directly"
    assert task["gracePeriodSeconds"] == 30
    assert binding["clusters"] == []


def test_failover_details_are_recorded() -> None:
    binding = spec()
    evict(
        binding,
        "m1",
        reason="ApplicationFailure",
        producer="resource-binding-application-failover-controller",
        purge_mode="Never",
        suppress_deletion=True,
        preserved_label_state={"app": "x"},
        clusters_before_failover=["m1", "m2"],
    )
    task = binding["gracefulEvictionTasks"][0]
    assert task["suppressDeletion"] is True
    assert task["preservedLabelState"] == {"app": "x"}
    assert task["clustersBeforeFailover"] == ["m1", "m2"]


def test_an_unknown_purge_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="purge mode must be one of"):
        evict(spec(), "m1", reason="r", producer="p", purge_mode="Later")  # type: ignore[arg-type]
