"""Apps is the apps.karmada.io/v1alpha1 API: WorkloadRebalancers as typed dicts.

A WorkloadRebalancer (cluster-scoped) names workloads whose bindings are to be rescheduled afresh:
the workload-rebalancer controller sets each binding's ``spec.rescheduleTriggeredAt`` to the
rebalancer's creation time, and the scheduler then divides the replicas as if for the first time
instead of keeping the current split. The status says, per workload, whether that was done.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypedDict, cast

from controllers.api.shape import object_field
from reconcile import GVK, Resource

__all__ = [
    "APPS_GROUP",
    "ObservedWorkload",
    "REBALANCE_FAILED",
    "REBALANCE_SUCCESSFUL",
    "REFERENCED_BINDING_NOT_FOUND",
    "RebalanceResult",
    "WORKLOAD_REBALANCERS",
    "WORKLOAD_REBALANCER_GVK",
    "WorkloadRebalancerSpec",
    "WorkloadRebalancerStatus",
    "WorkloadReference",
    "rebalancer_spec",
    "rebalancer_status",
]

APPS_GROUP: Final = "apps.karmada.io"
WORKLOAD_REBALANCER_GVK: Final = GVK(APPS_GROUP, "v1alpha1", "WorkloadRebalancer")
WORKLOAD_REBALANCERS: Final = Resource(
    WORKLOAD_REBALANCER_GVK, "workloadrebalancers", False, frozenset({"status"})
)

RebalanceResult = Literal["Successful", "Failed"]
REBALANCE_SUCCESSFUL: Final = "Successful"
REBALANCE_FAILED: Final = "Failed"
REFERENCED_BINDING_NOT_FOUND: Final = "ReferencedBindingNotFound"
"""Reason of a Failed workload: it has no (Cluster)ResourceBinding (Karmada's
RebalanceObjectNotFound)."""


class WorkloadReference(TypedDict, total=False):
    """A workload to rebalance; an empty ``namespace`` means a cluster-scoped one."""

    apiVersion: str
    kind: str
    name: str
    namespace: str


class WorkloadRebalancerSpec(TypedDict, total=False):
    """The workloads to rebalance, and how long the finished rebalancer is kept (unset: always)."""

    workloads: list[WorkloadReference]
    ttlSecondsAfterFinished: int


class ObservedWorkload(TypedDict, total=False):
    """One workload's outcome: Successful, or Failed with a reason (unset: not done yet)."""

    workload: WorkloadReference
    result: RebalanceResult
    reason: str


class WorkloadRebalancerStatus(TypedDict, total=False):
    """Per-workload outcomes, the generation they answer and when every workload was done."""

    observedWorkloads: list[ObservedWorkload]
    observedGeneration: int
    finishTime: str


def rebalancer_spec(rebalancer: Mapping[str, Any]) -> WorkloadRebalancerSpec:
    """A WorkloadRebalancer's spec (empty if missing or not an object)."""
    return cast(WorkloadRebalancerSpec, object_field(rebalancer, "spec"))


def rebalancer_status(rebalancer: Mapping[str, Any]) -> WorkloadRebalancerStatus:
    """A WorkloadRebalancer's status (empty if missing or not an object)."""
    return cast(WorkloadRebalancerStatus, object_field(rebalancer, "status"))
