"""Work is the work.karmada.io API: ResourceBindings (v1alpha2) and Works (v1alpha1) as typed dicts.

A ResourceBinding (ClusterResourceBinding for cluster-scoped templates) ties one resource template
to its policy's placement; the scheduler fills in ``spec.clusters``. The binding controller turns
it into one Work per target cluster, in the namespace ``karmada-es-<cluster>``, holding the
manifests to apply there; status flows back from Works to the binding's ``aggregatedStatus``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypedDict, cast

from controllers.api.policy import ConflictResolution, Placement, Toleration
from controllers.api.shape import object_field
from reconcile import GVK, Condition, Resource

__all__ = [
    "APPLIED_FAILED_REASON",
    "APPLIED_SUCCESSFUL_REASON",
    "AggregatedStatusItem",
    "BINDING_RESOURCE_INDEX",
    "BindingSnapshot",
    "CLUSTER_RESOURCE_BINDINGS",
    "CLUSTER_RESOURCE_BINDING_GVK",
    "FULLY_APPLIED_CONDITION",
    "FULLY_APPLIED_FAILED_REASON",
    "FULLY_APPLIED_SUCCESS_REASON",
    "GracefulEvictionTask",
    "ManifestStatus",
    "NO_CLUSTER_FIT_REASON",
    "NodeClaim",
    "ObjectReference",
    "RESOURCE_BINDINGS",
    "RESOURCE_BINDING_GVK",
    "ReplicaRequirements",
    "ResourceBindingSpec",
    "ResourceBindingStatus",
    "ResourceHealth",
    "ResourceIdentifier",
    "SCHEDULED_CONDITION",
    "SCHEDULER_ERROR_REASON",
    "SCHEDULE_SUCCESS_REASON",
    "TARGET_CLUSTER_INDEX",
    "TargetCluster",
    "UNSCHEDULABLE_REASON",
    "WORKS",
    "WORK_APPLIED_CONDITION",
    "WORK_GROUP",
    "WORK_GVK",
    "WorkSpec",
    "WorkStatus",
    "WorkloadTemplate",
    "binding_resource_kind",
    "binding_spec",
    "binding_status",
    "manifests_of",
    "target_cluster_names",
    "target_clusters",
    "work_spec",
    "work_status",
    "work_target_clusters",
]

WORK_GROUP: Final = "work.karmada.io"

RESOURCE_BINDING_GVK: Final = GVK(WORK_GROUP, "v1alpha2", "ResourceBinding")
CLUSTER_RESOURCE_BINDING_GVK: Final = GVK(WORK_GROUP, "v1alpha2", "ClusterResourceBinding")
WORK_GVK: Final = GVK(WORK_GROUP, "v1alpha1", "Work")

_STATUS: Final = frozenset({"status"})
RESOURCE_BINDINGS: Final = Resource(RESOURCE_BINDING_GVK, "resourcebindings", True, _STATUS)
CLUSTER_RESOURCE_BINDINGS: Final = Resource(
    CLUSTER_RESOURCE_BINDING_GVK, "clusterresourcebindings", False, _STATUS
)
WORKS: Final = Resource(WORK_GVK, "works", True, _STATUS)

# Conditions of bindings and Works, and their reasons.
SCHEDULED_CONDITION: Final = "Scheduled"
SCHEDULE_SUCCESS_REASON: Final = "Success"
NO_CLUSTER_FIT_REASON: Final = "NoClusterFit"
UNSCHEDULABLE_REASON: Final = "Unschedulable"
SCHEDULER_ERROR_REASON: Final = "SchedulerError"
FULLY_APPLIED_CONDITION: Final = "FullyApplied"
FULLY_APPLIED_SUCCESS_REASON: Final = "FullyAppliedSuccess"
FULLY_APPLIED_FAILED_REASON: Final = "FullyAppliedFailed"
WORK_APPLIED_CONDITION: Final = "Applied"
APPLIED_SUCCESSFUL_REASON: Final = "AppliedSuccessful"
APPLIED_FAILED_REASON: Final = "AppliedFailed"

ResourceHealth = Literal["Healthy", "Unhealthy", "Unknown"]


class ObjectReference(TypedDict, total=False):
    """The resource template a binding propagates (namespace empty when cluster-scoped)."""

    apiVersion: str
    kind: str
    namespace: str
    name: str
    uid: str
    resourceVersion: str


class NodeClaim(TypedDict, total=False):
    """The node constraints each replica carries."""

    hardNodeAffinity: dict[str, Any]
    nodeSelector: dict[str, str]
    tolerations: list[Toleration]


class ReplicaRequirements(TypedDict, total=False):
    """What each replica needs: resources (quantities as strings or ints) and node constraints."""

    nodeClaim: NodeClaim
    resourceRequest: dict[str, str | int]
    namespace: str
    priorityClassName: str


class TargetCluster(TypedDict, total=False):
    """A cluster the binding is scheduled to, with its share of the replicas."""

    name: str
    replicas: int


class GracefulEvictionTask(TypedDict, total=False):
    """An eviction from a cluster waiting for the replacement to become healthy."""

    fromCluster: str
    purgeMode: str
    replicas: int
    reason: str
    message: str
    producer: str
    gracePeriodSeconds: int
    suppressDeletion: bool
    preservedLabelState: dict[str, str]
    clustersBeforeFailover: list[str]
    creationTimestamp: str


class BindingSnapshot(TypedDict, total=False):
    """A binding that depends on this one, with its scheduling result."""

    namespace: str
    name: str
    clusters: list[TargetCluster]


class ResourceBindingSpec(TypedDict, total=False):
    """The spec of a ResourceBinding or ClusterResourceBinding.

    The detector writes resource, replicas, replicaRequirements, placement and the fields copied
    from the policy; the scheduler writes clusters.
    """

    resource: ObjectReference
    propagateDeps: bool
    replicaRequirements: ReplicaRequirements
    replicas: int
    components: list[dict[str, Any]]
    clusters: list[TargetCluster]
    placement: Placement
    gracefulEvictionTasks: list[GracefulEvictionTask]
    requiredBy: list[BindingSnapshot]
    schedulerName: str
    failover: dict[str, Any]
    conflictResolution: ConflictResolution
    rescheduleTriggeredAt: str
    suspension: dict[str, Any]
    preserveResourcesOnDeletion: bool
    schedulePriority: dict[str, Any]


class AggregatedStatusItem(TypedDict, total=False):
    """The resource's state in one member cluster; ``status`` is whatever was collected there."""

    clusterName: str
    status: dict[str, Any]
    applied: bool
    appliedMessage: str
    health: ResourceHealth


class ResourceBindingStatus(TypedDict, total=False):
    """The status of a ResourceBinding or ClusterResourceBinding."""

    schedulerObservedGeneration: int
    schedulerObservingAffinityName: str
    lastScheduledTime: str
    conditions: list[Condition]
    aggregatedStatus: list[AggregatedStatusItem]


class WorkloadTemplate(TypedDict, total=False):
    """The manifests a Work applies: whole objects."""

    manifests: list[dict[str, Any]]


class WorkSpec(TypedDict, total=False):
    """The spec of a Work."""

    workload: WorkloadTemplate
    suspendDispatching: bool
    preserveResourcesOnDeletion: bool


class ResourceIdentifier(TypedDict, total=False):
    """Which manifest of a Work a status is about: its index and its identity."""

    ordinal: int
    group: str
    version: str
    kind: str
    resource: str
    namespace: str
    name: str


class ManifestStatus(TypedDict, total=False):
    """The state of one manifest in the member cluster."""

    identifier: ResourceIdentifier
    status: dict[str, Any]
    health: ResourceHealth


class WorkStatus(TypedDict, total=False):
    """The status of a Work: the Applied condition and each manifest's state."""

    conditions: list[Condition]
    manifestStatuses: list[ManifestStatus]


def binding_spec(binding: Mapping[str, Any]) -> ResourceBindingSpec:
    """A (Cluster)ResourceBinding's spec (empty if missing or not an object)."""
    return cast(ResourceBindingSpec, object_field(binding, "spec"))


def binding_status(binding: Mapping[str, Any]) -> ResourceBindingStatus:
    """A (Cluster)ResourceBinding's status (empty if missing or not an object)."""
    return cast(ResourceBindingStatus, object_field(binding, "status"))


TARGET_CLUSTER_INDEX: Final = "spec.clusters.name"
"""The cache index of bindings by the clusters they are scheduled to (``target_cluster_names``):
the bindings a Cluster's change concerns are a lookup, not a walk over every binding."""
BINDING_RESOURCE_INDEX: Final = "spec.resource.kind"
"""The cache index of bindings by their template's ``<apiVersion>/<kind>``
(``binding_resource_kind``)."""


def target_cluster_names(binding: Mapping[str, Any]) -> list[str]:
    """The names of the clusters a binding is scheduled to; the ``TARGET_CLUSTER_INDEX``."""
    return [target.get("name", "") for target in target_clusters(binding)]


def binding_resource_kind(binding: Mapping[str, Any]) -> list[str]:
    """``<apiVersion>/<kind>`` of the binding's template (none when it names no kind); the
    ``BINDING_RESOURCE_INDEX``. ``GVK.from_api_version(*value.rsplit("/", 1))`` reads it back."""
    resource = binding_spec(binding).get("resource") or {}
    api_version, kind = resource.get("apiVersion", ""), resource.get("kind", "")
    return [f"{api_version}/{kind}"] if api_version and kind else []


def target_clusters(binding: Mapping[str, Any]) -> list[TargetCluster]:
    """The clusters a binding is scheduled to (``spec.clusters``), empty before scheduling.

    A cluster listed more than once counts once, with its first entry: each target becomes one
    Work, and the schema does not make the names unique.
    """
    seen: set[str] = set()
    targets: list[TargetCluster] = []
    for target in binding_spec(binding).get("clusters") or []:
        name = target.get("name", "")
        if name not in seen:
            seen.add(name)
            targets.append(target)
    return targets


def work_target_clusters(binding: Mapping[str, Any]) -> list[TargetCluster]:
    """The clusters a binding's Works go to: ``spec.clusters``, then the clusters of every
    binding in ``spec.requiredBy`` not already there (an attached binding follows what requires
    it: Karmada's mergeTargetClusters). Each cluster once, with its first entry."""
    targets = target_clusters(binding)
    seen = {target.get("name", "") for target in targets}
    for snapshot in binding_spec(binding).get("requiredBy") or []:
        for target in snapshot.get("clusters") or []:
            name = target.get("name", "")
            if name and name not in seen:
                seen.add(name)
                targets.append(TargetCluster(name=name))
    return targets


def work_spec(work: Mapping[str, Any]) -> WorkSpec:
    """The spec of a Work (empty if missing or not an object)."""
    return cast(WorkSpec, object_field(work, "spec"))


def work_status(work: Mapping[str, Any]) -> WorkStatus:
    """The status of a Work (empty if missing or not an object)."""
    return cast(WorkStatus, object_field(work, "status"))


def manifests_of(work: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The manifests a Work applies (``spec.workload.manifests``)."""
    return (work_spec(work).get("workload") or {}).get("manifests") or []
