"""cluster holds the member-cluster side of the controllers: engagement, namespaces, health."""

from controllers.cluster.connection import (
    INSECURE_ENDPOINT,
    INVALID_ENDPOINT,
    INVALID_KUBECONFIG,
    INVALID_SECRET,
    SECRET_NOT_BOUND,
    SECRET_NOT_FOUND,
    SECRET_REF_NOT_ALLOWED,
    MemberConfigError,
    MemberOptions,
    member_credentials,
    member_endpoint,
    member_spec,
    secret_reference,
)
from controllers.cluster.controller import (
    MEMBER_CONFIG_INVALID,
    ClusterController,
    setup_cluster_controller,
)
from controllers.cluster.health import ClusterHealthOptions
from controllers.cluster.members import MemberChanges, Members
from controllers.cluster.provider import ClusterProvider
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
    "SECRET_REF_NOT_ALLOWED",
    "ClusterController",
    "ClusterProvider",
    "ClusterHealthOptions",
    "ClusterStatusController",
    "ClusterStatusOptions",
    "Health",
    "MemberConfigError",
    "MemberChanges",
    "MemberOptions",
    "Members",
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
