"""Task builds GracefulEvictionTasks: a cluster moved out of a binding's result, kept until safe.

``evict`` is Karmada's ``ResourceBindingSpec.GracefulEvictCluster``: the cluster leaves
``spec.clusters`` and, unless already being evicted, a task naming it (with the replicas it had,
why, who asked and how to purge) is appended to ``spec.gracefulEvictionTasks``. The scheduler then
places the replicas elsewhere (it skips clusters in eviction tasks), the binding controller keeps
the old cluster's Work while the task lasts (not for purge mode Directly), and the
graceful-eviction controller removes the task once the new placement is healthy or its time is
up. The taint manager uses it, and so does application failover.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final, Literal

from controllers.api import GracefulEvictionTask, ResourceBindingSpec

__all__ = [
    "EVICTION_PRODUCER_TAINT_MANAGER",
    "EVICTION_REASON_APPLICATION_FAILURE",
    "EVICTION_REASON_TAINT_UNTOLERATED",
    "PURGE_MODES",
    "PURGE_MODE_DIRECTLY",
    "PURGE_MODE_GRACEFULLY",
    "PURGE_MODE_GRACIOUSLY",
    "PURGE_MODE_IMMEDIATELY",
    "PURGE_MODE_NEVER",
    "TASK_PURGE_MODES",
    "PurgeMode",
    "evict",
    "evicting_clusters",
    "purges_at_once",
    "timestamp",
]

PurgeMode = Literal["Directly", "Gracefully", "Never", "Immediately", "Graciously"]
PURGE_MODE_DIRECTLY: Final = "Directly"
"""The old copy goes at once: its Work is deleted without waiting for the new placement."""
PURGE_MODE_GRACEFULLY: Final = "Gracefully"
"""The old copy stays until the new placement is healthy or the task times out (default)."""
PURGE_MODE_NEVER: Final = "Never"
"""The old copy stays until someone sets the task's ``suppressDeletion`` to false."""
PURGE_MODES: Final = (PURGE_MODE_DIRECTLY, PURGE_MODE_GRACEFULLY, PURGE_MODE_NEVER)
PURGE_MODE_IMMEDIATELY: Final = "Immediately"
"""Karmada's name for Directly in application failover (the policy's ``purgeMode``)."""
PURGE_MODE_GRACIOUSLY: Final = "Graciously"
"""Karmada's name for Gracefully in application failover (its default there)."""
TASK_PURGE_MODES: Final = (*PURGE_MODES, PURGE_MODE_IMMEDIATELY, PURGE_MODE_GRACIOUSLY)
"""Every purge mode a task may carry: the binding CRD accepts both spellings, as Karmada's does."""

# Karmada's names (pkg/apis/work/v1alpha2 well-known constants).
EVICTION_REASON_TAINT_UNTOLERATED: Final = "TaintUntolerated"
EVICTION_REASON_APPLICATION_FAILURE: Final = "ApplicationFailure"
EVICTION_PRODUCER_TAINT_MANAGER: Final = "TaintManager"


def timestamp(now: datetime | None = None) -> str:
    """An RFC 3339 timestamp in UTC at second precision, as metav1.Time serialises."""
    return (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def evicting_clusters(spec: Mapping[str, Any]) -> set[str]:
    """The clusters a binding spec has eviction tasks for."""
    tasks = spec.get("gracefulEvictionTasks") or []
    return {str(task.get("fromCluster", "")) for task in tasks if isinstance(task, Mapping)}


def purges_at_once(mode: object) -> bool:
    """Whether a task's purge mode deletes the old copy without waiting (Directly, Immediately)."""
    return mode in (PURGE_MODE_DIRECTLY, PURGE_MODE_IMMEDIATELY)


def evict(
    spec: ResourceBindingSpec,
    cluster: str,
    *,
    reason: str,
    producer: str,
    purge_mode: PurgeMode = PURGE_MODE_GRACEFULLY,
    message: str = "",
    grace_period_seconds: int | None = None,
    suppress_deletion: bool | None = None,
    preserved_label_state: Mapping[str, str] | None = None,
    clusters_before_failover: list[str] | None = None,
    now: datetime | None = None,
) -> bool:
    """Move ``cluster`` from ``spec.clusters`` into a new task of ``spec.gracefulEvictionTasks``.

    ``spec`` is changed in place (pass a copy of a cached object). A cluster that is not a
    target is left alone; one already being evicted only leaves ``spec.clusters`` (its first
    task stands, as in Karmada). The task's ``creationTimestamp`` is ``now`` (default: the
    current time), from which its grace period and ``--graceful-eviction-timeout`` count.

    Returns:
        Whether ``spec`` changed.

    Raises:
        ValueError: ``purge_mode`` is not one of ``TASK_PURGE_MODES``.
    """
    if purge_mode not in TASK_PURGE_MODES:
        known = ", ".join(TASK_PURGE_MODES)
        raise ValueError(f"purge mode must be one of {known}, got {purge_mode!r}")
    targets = list(spec.get("clusters") or [])
    evicted = next((t for t in targets if t.get("name") == cluster), None)
    if evicted is None:
        return False
    spec["clusters"] = [t for t in targets if t is not evicted]
    if cluster in evicting_clusters(spec):
        return True
    task = GracefulEvictionTask(
        fromCluster=cluster,
        purgeMode=purge_mode,
        reason=reason,
        producer=producer,
        creationTimestamp=timestamp(now),
    )
    if evicted.get("replicas"):
        task["replicas"] = int(evicted.get("replicas", 0))
    if message:
        task["message"] = message
    if grace_period_seconds is not None:
        task["gracePeriodSeconds"] = grace_period_seconds
    if suppress_deletion is not None:
        task["suppressDeletion"] = suppress_deletion
    if preserved_label_state:
        task["preservedLabelState"] = dict(preserved_label_state)
    if clusters_before_failover:
        task["clustersBeforeFailover"] = list(clusters_before_failover)
    spec["gracefulEvictionTasks"] = [*(spec.get("gracefulEvictionTasks") or []), task]
    return True
