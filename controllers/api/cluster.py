"""Cluster is the cluster.karmada.io/v1alpha1 API: member clusters as typed dicts.

A Cluster says how to reach a member kube-apiserver (``apiEndpoint`` and a Secret with ``token`` and
``caBundle``), where it is (provider, region, zones) and its taints; the cluster controller reports
its health (condition Ready), version, APIs and resources in the status. Karmada serves Cluster
from an aggregated apiserver; here it is a CRD with the same schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypedDict, cast

from controllers.api.shape import object_field
from reconcile import GVK, Condition, Resource, is_condition_true

__all__ = [
    "APIEnablement",
    "APIResource",
    "CLUSTERS",
    "CLUSTER_GROUP",
    "CLUSTER_GVK",
    "CLUSTER_NOT_REACHABLE_REASON",
    "CLUSTER_NOT_READY_REASON",
    "CLUSTER_READY_REASON",
    "ClusterSpec",
    "ClusterStatus",
    "LocalSecretReference",
    "NodeSummary",
    "READY_CONDITION",
    "ResourceSummary",
    "SECRET_CA_BUNDLE_KEY",
    "SECRET_TOKEN_KEY",
    "SYNC_MODE_PULL",
    "SYNC_MODE_PUSH",
    "SyncMode",
    "Taint",
    "cluster_spec",
    "cluster_status",
    "is_cluster_ready",
    "sync_mode",
]

CLUSTER_GROUP: Final = "cluster.karmada.io"
CLUSTER_GVK: Final = GVK(CLUSTER_GROUP, "v1alpha1", "Cluster")
CLUSTERS: Final = Resource(CLUSTER_GVK, "clusters", False, frozenset({"status"}))

READY_CONDITION: Final = "Ready"
CLUSTER_READY_REASON: Final = "ClusterReady"
CLUSTER_NOT_READY_REASON: Final = "ClusterNotReady"
CLUSTER_NOT_REACHABLE_REASON: Final = "ClusterNotReachable"

SECRET_TOKEN_KEY: Final = "token"
SECRET_CA_BUNDLE_KEY: Final = "caBundle"

SyncMode = Literal["Push", "Pull"]
SYNC_MODE_PUSH: Final = "Push"
"""The control plane reaches the member with credentials kept on the host (``karmadactl join``)."""
SYNC_MODE_PULL: Final = "Pull"
"""An agent in the member reaches the host; the host holds no member credentials."""


class LocalSecretReference(TypedDict, total=False):
    """A Secret by namespace and name."""

    namespace: str
    name: str


class Taint(TypedDict, total=False):
    """A taint of a member cluster (core/v1 Taint)."""

    key: str
    value: str
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    timeAdded: str


class ClusterSpec(TypedDict, total=False):
    """The spec of a Cluster."""

    id: str
    syncMode: SyncMode
    apiEndpoint: str
    secretRef: LocalSecretReference
    impersonatorSecretRef: LocalSecretReference
    insecureSkipTLSVerification: bool
    proxyURL: str
    proxyHeader: dict[str, str]
    provider: str
    region: str
    zone: str
    zones: list[str]
    taints: list[Taint]
    resourceModels: list[dict[str, Any]]


class APIResource(TypedDict, total=False):
    """A resource a member cluster serves: plural name and kind."""

    name: str
    kind: str


class APIEnablement(TypedDict, total=False):
    """The resources a member cluster serves in one group version."""

    groupVersion: str
    resources: list[APIResource]


class NodeSummary(TypedDict, total=False):
    """How many nodes a member cluster has, and how many are ready."""

    totalNum: int
    readyNum: int


class ResourceSummary(TypedDict, total=False):
    """Resources of a member cluster; quantities as the apiserver writes them (strings or ints)."""

    allocatable: dict[str, str | int]
    allocating: dict[str, str | int]
    allocated: dict[str, str | int]
    allocatableModelings: list[dict[str, int]]


class ClusterStatus(TypedDict, total=False):
    """The status of a Cluster."""

    kubernetesVersion: str
    apiEnablements: list[APIEnablement]
    conditions: list[Condition]
    nodeSummary: NodeSummary
    resourceSummary: ResourceSummary
    remedyActions: list[str]


def cluster_spec(cluster: Mapping[str, Any]) -> ClusterSpec:
    """The spec of a Cluster (empty if missing or not an object)."""
    return cast(ClusterSpec, object_field(cluster, "spec"))


def cluster_status(cluster: Mapping[str, Any]) -> ClusterStatus:
    """The status of a Cluster (empty if missing or not an object)."""
    return cast(ClusterStatus, object_field(cluster, "status"))


def is_cluster_ready(cluster: Mapping[str, Any]) -> bool:
    """Whether the Cluster's Ready condition is True."""
    return is_condition_true(cluster, READY_CONDITION)


def sync_mode(cluster: Mapping[str, Any]) -> SyncMode:
    """The Cluster's ``spec.syncMode``: Pull only when it says so; anything else (missing
    included) is Push, the mode every Cluster had before Pull existed here."""
    return (
        SYNC_MODE_PULL
        if cluster_spec(cluster).get("syncMode") == SYNC_MODE_PULL
        else SYNC_MODE_PUSH
    )
