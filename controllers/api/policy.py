"""Policy is the policy.karmada.io/v1alpha1 API: propagation and override policies as typed dicts.

PropagationPolicy and ClusterPropagationPolicy say which resource templates go to which member
clusters; OverridePolicy and ClusterOverridePolicy say how they change per cluster. Objects stay
the JSON the apiserver sent; the TypedDicts below name the fields the controllers read, and the
accessors return them with Karmada's defaults applied where the apiserver does not apply them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypedDict, cast

from controllers.api.shape import object_field
from reconcile import GVK, Resource

__all__ = [
    "ABORT",
    "AGGREGATED",
    "CLUSTER_OVERRIDE_POLICIES",
    "CLUSTER_OVERRIDE_POLICY_GVK",
    "CLUSTER_PROPAGATION_POLICIES",
    "CLUSTER_PROPAGATION_POLICY_GVK",
    "ClusterAffinity",
    "ClusterAffinityTerm",
    "ClusterPreferences",
    "CommandArgsOverrider",
    "ConflictResolution",
    "DIVIDED",
    "DUPLICATED",
    "FieldOverrider",
    "FieldSelector",
    "FieldSelectorRequirement",
    "ImageComponent",
    "ImageOverrider",
    "ImagePredicate",
    "LabelAnnotationOverrider",
    "LabelSelector",
    "LabelSelectorRequirement",
    "OVERRIDE_POLICIES",
    "OVERRIDE_POLICY_GVK",
    "OVERWRITE",
    "OverrideRule",
    "OverrideSpec",
    "OverriderOperator",
    "Overriders",
    "POLICY_GROUP",
    "PROPAGATION_POLICIES",
    "PROPAGATION_POLICY_GVK",
    "PatchOperation",
    "Placement",
    "PlaintextOverrider",
    "PreemptionBehavior",
    "PropagationSpec",
    "ReplicaDivisionPreference",
    "ReplicaSchedulingStrategy",
    "ReplicaSchedulingType",
    "ResourceSelector",
    "SpreadByField",
    "SpreadConstraint",
    "StaticClusterWeight",
    "SuspendClusters",
    "Suspension",
    "Toleration",
    "WEIGHTED",
    "conflict_resolution_of",
    "division_preference_of",
    "override_spec",
    "preemption_of",
    "priority_of",
    "propagation_spec",
    "replica_scheduling_type_of",
]

POLICY_GROUP: Final = "policy.karmada.io"

PROPAGATION_POLICY_GVK: Final = GVK(POLICY_GROUP, "v1alpha1", "PropagationPolicy")
CLUSTER_PROPAGATION_POLICY_GVK: Final = GVK(POLICY_GROUP, "v1alpha1", "ClusterPropagationPolicy")
OVERRIDE_POLICY_GVK: Final = GVK(POLICY_GROUP, "v1alpha1", "OverridePolicy")
CLUSTER_OVERRIDE_POLICY_GVK: Final = GVK(POLICY_GROUP, "v1alpha1", "ClusterOverridePolicy")

PROPAGATION_POLICIES: Final = Resource(PROPAGATION_POLICY_GVK, "propagationpolicies", True)
CLUSTER_PROPAGATION_POLICIES: Final = Resource(
    CLUSTER_PROPAGATION_POLICY_GVK, "clusterpropagationpolicies", False
)
OVERRIDE_POLICIES: Final = Resource(OVERRIDE_POLICY_GVK, "overridepolicies", True)
CLUSTER_OVERRIDE_POLICIES: Final = Resource(
    CLUSTER_OVERRIDE_POLICY_GVK, "clusteroverridepolicies", False
)

ReplicaSchedulingType = Literal["Duplicated", "Divided"]
ReplicaDivisionPreference = Literal["Aggregated", "Weighted"]
ConflictResolution = Literal["Abort", "Overwrite"]
PreemptionBehavior = Literal["Always", "Never"]
SpreadByField = Literal["cluster", "region", "zone", "provider"]
OverriderOperator = Literal["add", "remove", "replace"]
ImageComponent = Literal["Registry", "Repository", "Tag"]

DUPLICATED: Final = "Duplicated"
DIVIDED: Final = "Divided"
AGGREGATED: Final = "Aggregated"
WEIGHTED: Final = "Weighted"
ABORT: Final = "Abort"
OVERWRITE: Final = "Overwrite"


class LabelSelectorRequirement(TypedDict, total=False):
    """One ``matchExpressions`` entry of a label selector (metav1.LabelSelectorRequirement)."""

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str]


class LabelSelector(TypedDict, total=False):
    """A label query (metav1.LabelSelector); every requirement must hold."""

    matchLabels: dict[str, str]
    matchExpressions: list[LabelSelectorRequirement]


class FieldSelectorRequirement(TypedDict, total=False):
    """A requirement on the Cluster field provider, region or zone (In/NotIn)."""

    key: Literal["provider", "region", "zone"]
    operator: Literal["In", "NotIn"]
    values: list[str]


class FieldSelector(TypedDict, total=False):
    """Selects member clusters by Cluster spec fields; every requirement must hold."""

    matchExpressions: list[FieldSelectorRequirement]


class ResourceSelector(TypedDict, total=False):
    """Selects resource templates by apiVersion and kind, then by name or labels.

    A non-empty ``name`` makes ``labelSelector`` ignored; an empty ``namespace`` means the policy's
    own namespace (PropagationPolicy) or every namespace (ClusterPropagationPolicy).
    """

    apiVersion: str
    kind: str
    namespace: str
    name: str
    labelSelector: LabelSelector


class ClusterAffinity(TypedDict, total=False):
    """A filter over member clusters: exclude first, then every non-empty criterion must match."""

    labelSelector: LabelSelector
    fieldSelector: FieldSelector
    clusterNames: list[str]
    exclude: list[str]


class ClusterAffinityTerm(ClusterAffinity, total=False):
    """A named group of clusters in ``placement.clusterAffinities``."""

    affinityName: str


class Toleration(TypedDict, total=False):
    """A toleration of cluster taints (core/v1 Toleration)."""

    key: str
    operator: Literal["Exists", "Equal"]
    value: str
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
    tolerationSeconds: int


class SpreadConstraint(TypedDict, total=False):
    """Spreads a resource over groups of clusters formed by a Cluster field or label."""

    spreadByField: SpreadByField
    spreadByLabel: str
    maxGroups: int
    minGroups: int


class StaticClusterWeight(TypedDict, total=False):
    """The weight of the clusters ``targetCluster`` selects (at least 1)."""

    targetCluster: ClusterAffinity
    weight: int


class ClusterPreferences(TypedDict, total=False):
    """Weights for Divided/Weighted scheduling; ``dynamicWeight`` wins over the static list."""

    staticWeightList: list[StaticClusterWeight]
    dynamicWeight: Literal["AvailableReplicas"]


class ReplicaSchedulingStrategy(TypedDict, total=False):
    """How replicas are assigned to the selected clusters."""

    replicaSchedulingType: ReplicaSchedulingType
    replicaDivisionPreference: ReplicaDivisionPreference
    weightPreference: ClusterPreferences


class Placement(TypedDict, total=False):
    """Which clusters receive a resource and how its replicas are split."""

    clusterAffinity: ClusterAffinity
    clusterAffinities: list[ClusterAffinityTerm]
    clusterTolerations: list[Toleration]
    spreadConstraints: list[SpreadConstraint]
    replicaScheduling: ReplicaSchedulingStrategy


class SuspendClusters(TypedDict, total=False):
    """The clusters to which dispatching is suspended."""

    clusterNames: list[str]


class Suspension(TypedDict, total=False):
    """Suspends dispatching to every cluster or to some."""

    dispatching: bool
    dispatchingOnClusters: SuspendClusters


class PropagationSpec(TypedDict, total=False):
    """The spec of a PropagationPolicy or ClusterPropagationPolicy."""

    resourceSelectors: list[ResourceSelector]
    association: bool
    propagateDeps: bool
    placement: Placement
    priority: int
    preemption: PreemptionBehavior
    dependentOverrides: list[str]
    schedulerName: str
    failover: dict[str, Any]
    conflictResolution: ConflictResolution
    activationPreference: Literal["Lazy"]
    suspension: Suspension
    preserveResourcesOnDeletion: bool
    schedulePriority: dict[str, Any]


class ImagePredicate(TypedDict, total=False):
    """Which image field an imageOverrider changes (a JSON pointer)."""

    path: str


class ImageOverrider(TypedDict, total=False):
    """Adds, removes or replaces the registry, repository or tag of images."""

    predicate: ImagePredicate
    component: ImageComponent
    operator: OverriderOperator
    value: str


class CommandArgsOverrider(TypedDict, total=False):
    """Appends or removes entries of a container's command or args."""

    containerName: str
    operator: Literal["add", "remove"]
    value: list[str]


class LabelAnnotationOverrider(TypedDict, total=False):
    """Adds, removes or replaces labels or annotations."""

    operator: OverriderOperator
    value: dict[str, str]


class PlaintextOverrider(TypedDict, total=False):
    """An RFC 6902 operation on the JSON pointer ``path``; ``value`` is any JSON value."""

    path: str
    operator: OverriderOperator
    value: Any


class PatchOperation(TypedDict, total=False):
    """An operation inside the JSON or YAML document a fieldOverrider edits."""

    subPath: str
    operator: OverriderOperator
    value: Any


class FieldOverrider(TypedDict, total=False):
    """Edits a JSON or YAML document held in the string field at ``fieldPath``."""

    fieldPath: str
    json: list[PatchOperation]
    yaml: list[PatchOperation]


class Overriders(TypedDict, total=False):
    """A rule's overriders, applied image, command, args, labels, annotations, field, plaintext."""

    plaintext: list[PlaintextOverrider]
    imageOverrider: list[ImageOverrider]
    commandOverrider: list[CommandArgsOverrider]
    argsOverrider: list[CommandArgsOverrider]
    labelsOverrider: list[LabelAnnotationOverrider]
    annotationsOverrider: list[LabelAnnotationOverrider]
    fieldOverrider: list[FieldOverrider]


class OverrideRule(TypedDict, total=False):
    """Overriders for the clusters ``targetCluster`` selects (unset: every cluster)."""

    targetCluster: ClusterAffinity
    overriders: Overriders


class OverrideSpec(TypedDict, total=False):
    """The spec of an OverridePolicy or ClusterOverridePolicy.

    Empty ``resourceSelectors`` select every resource. ``targetCluster`` and ``overriders`` are
    Karmada's deprecated single-rule form of ``overrideRules``.
    """

    resourceSelectors: list[ResourceSelector]
    overrideRules: list[OverrideRule]
    targetCluster: ClusterAffinity
    overriders: Overriders


def propagation_spec(policy: Mapping[str, Any]) -> PropagationSpec:
    """A (Cluster)PropagationPolicy's spec (empty if missing or not an object)."""
    return cast(PropagationSpec, object_field(policy, "spec"))


def override_spec(policy: Mapping[str, Any]) -> OverrideSpec:
    """A (Cluster)OverridePolicy's spec (empty if missing or not an object)."""
    return cast(OverrideSpec, object_field(policy, "spec"))


def priority_of(spec: PropagationSpec) -> int:
    """The explicit priority of a propagation policy; defaults to 0."""
    return int(spec.get("priority") or 0)


def preemption_of(spec: PropagationSpec) -> PreemptionBehavior:
    """Whether a propagation policy preempts lower-priority claims; defaults to Never."""
    return spec.get("preemption") or "Never"


def conflict_resolution_of(spec: Mapping[str, Any]) -> ConflictResolution:
    """The conflict resolution of a policy or binding spec; defaults to Abort."""
    value = spec.get("conflictResolution")
    return "Overwrite" if value == OVERWRITE else "Abort"


def replica_scheduling_type_of(placement: Placement | None) -> ReplicaSchedulingType:
    """The replica scheduling type of a placement.

    No ``replicaScheduling`` means Duplicated; a ``replicaScheduling`` without a type means Divided
    (the apiserver defaults it so too).
    """
    strategy = (placement or {}).get("replicaScheduling")
    if strategy is None:
        return "Duplicated"
    return strategy.get("replicaSchedulingType") or "Divided"


def division_preference_of(placement: Placement | None) -> ReplicaDivisionPreference | None:
    """How Divided replicas are split: Aggregated or Weighted (the default); None if Duplicated."""
    if replica_scheduling_type_of(placement) != DIVIDED:
        return None
    strategy = (placement or {}).get("replicaScheduling") or {}
    return strategy.get("replicaDivisionPreference") or "Weighted"
