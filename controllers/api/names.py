"""Names are the well-known labels, annotations, finalizers and namespaces of the Karmada API.

The controllers write these onto resource templates, bindings, Works and member objects exactly as
Karmada does, so that objects made by either system are recognised by the other.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "APPLIED_CLUSTER_OVERRIDES_ANNOTATION",
    "APPLIED_OVERRIDES_ANNOTATION",
    "APPLIED_PLACEMENT_ANNOTATION",
    "BINDING_CONTROLLER_FINALIZER",
    "CLUSTER_CONTROLLER_FINALIZER",
    "CLUSTER_PROPAGATION_POLICY_NAME_ANNOTATION",
    "CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL",
    "CLUSTER_RESOURCE_BINDING_CONTROLLER_FINALIZER",
    "CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION",
    "CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL",
    "CONFLICT_RESOLUTION_ABORT",
    "CONFLICT_RESOLUTION_ANNOTATION",
    "CONFLICT_RESOLUTION_OVERWRITE",
    "EXECUTION_CONTROLLER_FINALIZER",
    "EXECUTION_SPACE_PREFIX",
    "KARMADA_CLUSTER_NAMESPACE",
    "KARMADA_SYSTEM_NAMESPACE",
    "MANAGED_ANNOTATIONS_ANNOTATION",
    "MANAGED_LABEL",
    "MANAGED_LABELS_ANNOTATION",
    "MANAGED_LABEL_VALUE",
    "NAMESPACE_SKIP_AUTO_PROPAGATION_LABEL",
    "PROPAGATION_POLICY_NAMESPACE_ANNOTATION",
    "PROPAGATION_POLICY_NAME_ANNOTATION",
    "PROPAGATION_POLICY_PERMANENT_ID_LABEL",
    "RESOURCE_BINDING_NAMESPACE_ANNOTATION",
    "RESOURCE_BINDING_NAME_ANNOTATION",
    "RESOURCE_BINDING_PERMANENT_ID_LABEL",
    "RESOURCE_TEMPLATE_GENERATION_ANNOTATION",
    "RESOURCE_TEMPLATE_UID_ANNOTATION",
    "RETAIN_REPLICAS_LABEL",
    "WORK_NAMESPACE_ANNOTATION",
    "WORK_NAME_ANNOTATION",
    "cluster_of_execution_namespace",
    "execution_namespace",
    "is_reserved_namespace",
]

# Claims: a resource template records the policy that propagates it.
PROPAGATION_POLICY_PERMANENT_ID_LABEL: Final = "propagationpolicy.karmada.io/permanent-id"
PROPAGATION_POLICY_NAMESPACE_ANNOTATION: Final = "propagationpolicy.karmada.io/namespace"
PROPAGATION_POLICY_NAME_ANNOTATION: Final = "propagationpolicy.karmada.io/name"
CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL: Final = (
    "clusterpropagationpolicy.karmada.io/permanent-id"
)
CLUSTER_PROPAGATION_POLICY_NAME_ANNOTATION: Final = "clusterpropagationpolicy.karmada.io/name"
NAMESPACE_SKIP_AUTO_PROPAGATION_LABEL: Final = "namespace.karmada.io/skip-auto-propagation"

# Bindings: their identity on Works and member objects, and what was applied to them.
RESOURCE_BINDING_PERMANENT_ID_LABEL: Final = "resourcebinding.karmada.io/permanent-id"
RESOURCE_BINDING_NAMESPACE_ANNOTATION: Final = "resourcebinding.karmada.io/namespace"
RESOURCE_BINDING_NAME_ANNOTATION: Final = "resourcebinding.karmada.io/name"
CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL: Final = (
    "clusterresourcebinding.karmada.io/permanent-id"
)
CLUSTER_RESOURCE_BINDING_NAME_ANNOTATION: Final = "clusterresourcebinding.karmada.io/name"
APPLIED_PLACEMENT_ANNOTATION: Final = "policy.karmada.io/applied-placement"
APPLIED_OVERRIDES_ANNOTATION: Final = "policy.karmada.io/applied-overrides"
APPLIED_CLUSTER_OVERRIDES_ANNOTATION: Final = "policy.karmada.io/applied-cluster-overrides"

# Member objects: what Karmada manages there and where it came from.
MANAGED_LABEL: Final = "karmada.io/managed"
MANAGED_LABEL_VALUE: Final = "true"
WORK_NAME_ANNOTATION: Final = "work.karmada.io/name"
WORK_NAMESPACE_ANNOTATION: Final = "work.karmada.io/namespace"
RESOURCE_TEMPLATE_UID_ANNOTATION: Final = "resourcetemplate.karmada.io/uid"
RESOURCE_TEMPLATE_GENERATION_ANNOTATION: Final = "resourcetemplate.karmada.io/generation"
MANAGED_LABELS_ANNOTATION: Final = "resourcetemplate.karmada.io/managed-labels"
MANAGED_ANNOTATIONS_ANNOTATION: Final = "resourcetemplate.karmada.io/managed-annotations"
RETAIN_REPLICAS_LABEL: Final = "resourcetemplate.karmada.io/retain-replicas"
CONFLICT_RESOLUTION_ANNOTATION: Final = "work.karmada.io/conflict-resolution"
CONFLICT_RESOLUTION_OVERWRITE: Final = "overwrite"
CONFLICT_RESOLUTION_ABORT: Final = "abort"

# Finalizers.
EXECUTION_CONTROLLER_FINALIZER: Final = "karmada.io/execution-controller"
BINDING_CONTROLLER_FINALIZER: Final = "karmada.io/binding-controller"
CLUSTER_RESOURCE_BINDING_CONTROLLER_FINALIZER: Final = (
    "karmada.io/cluster-resource-binding-controller"
)
CLUSTER_CONTROLLER_FINALIZER: Final = "karmada.io/cluster-controller"

# Namespaces.
KARMADA_SYSTEM_NAMESPACE: Final = "karmada-system"
KARMADA_CLUSTER_NAMESPACE: Final = "karmada-cluster"
EXECUTION_SPACE_PREFIX: Final = "karmada-es-"


def execution_namespace(cluster: str) -> str:
    """The namespace holding the Works for ``cluster``: ``karmada-es-<cluster>``."""
    return EXECUTION_SPACE_PREFIX + cluster


def cluster_of_execution_namespace(namespace: str) -> str | None:
    """The member cluster an execution namespace belongs to, or None for any other namespace."""
    if not namespace.startswith(EXECUTION_SPACE_PREFIX):
        return None
    return namespace.removeprefix(EXECUTION_SPACE_PREFIX) or None


def is_reserved_namespace(namespace: str) -> bool:
    """Whether resources in ``namespace`` are never propagated.

    Reserved are karmada-system, karmada-cluster, the execution namespaces (karmada-es-*) and the
    Kubernetes system namespaces (kube-*).
    """
    return namespace in (
        KARMADA_SYSTEM_NAMESPACE,
        KARMADA_CLUSTER_NAMESPACE,
    ) or namespace.startswith((EXECUTION_SPACE_PREFIX, "kube-"))
