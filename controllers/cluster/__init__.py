"""cluster holds the member-cluster side of the controllers: connections, namespaces, health."""

from controllers.cluster.controller import (
    MEMBER_CONFIG_INVALID,
    ClusterController,
    setup_cluster_controller,
)
from controllers.cluster.registry import MemberConfigError, MemberRegistry
from controllers.cluster.status import (
    ClusterStatusController,
    ClusterStatusOptions,
    Health,
    clusters_ready,
    probe,
    setup_cluster_status_controller,
)

__all__ = [
    "ClusterController",
    "ClusterStatusController",
    "ClusterStatusOptions",
    "Health",
    "MEMBER_CONFIG_INVALID",
    "MemberConfigError",
    "MemberRegistry",
    "clusters_ready",
    "probe",
    "setup_cluster_controller",
    "setup_cluster_status_controller",
]
