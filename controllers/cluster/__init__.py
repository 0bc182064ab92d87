"""cluster holds the member-cluster side of the controllers: connections, namespaces, health."""

from controllers.cluster.controller import (
    MEMBER_CONFIG_INVALID,
    ClusterController,
    setup_cluster_controller,
)
from controllers.cluster.health import ClusterHealthOptions
from controllers.cluster.provider import ClusterProvider
from controllers.cluster.registry import (
    INSECURE_ENDPOINT,
    INVALID_ENDPOINT,
    INVALID_KUBECONFIG,
    INVALID_SECRET,
    SECRET_NOT_BOUND,
    SECRET_NOT_FOUND,
    SECRET_NOT_READABLE,
    SECRET_REF_NOT_ALLOWED,
    MemberConfigError,
    MemberOptions,
    MemberRegistry,
    member_credentials,
    member_endpoint,
    member_spec,
    secret_reference,
)
from controllers.cluster.status import (
    ClusterStatusController,
    ClusterStatusOptions,
    Health,
    cluster_schedulable,
    clusters_ready,
    probe,
    setup_cluster_status_controller,
)

__all__ = [
    "INSECURE_ENDPOINT",
    "INVALID_ENDPOINT",
    "INVALID_KUBECONFIG",
    "INVALID_SECRET",
    "MEMBER_CONFIG_INVALID",
    "SECRET_NOT_BOUND",
    "SECRET_NOT_FOUND",
    "SECRET_NOT_READABLE",
    "SECRET_REF_NOT_ALLOWED",
    "ClusterController",
    "ClusterProvider",
    "ClusterHealthOptions",
    "ClusterStatusController",
    "ClusterStatusOptions",
    "Health",
    "MemberConfigError",
    "MemberOptions",
    "MemberRegistry",
    "cluster_schedulable",
    "clusters_ready",
    "member_credentials",
    "member_endpoint",
    "member_spec",
    "probe",
    "secret_reference",
    "setup_cluster_controller",
    "setup_cluster_status_controller",
]
