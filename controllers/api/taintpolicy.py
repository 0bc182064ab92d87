"""Taintpolicy is the policy.karmada.io/v1alpha1 ClusterTaintPolicy API: taints from conditions.

A ClusterTaintPolicy (cluster-scoped) names target clusters (a ClusterAffinity; none: all), the
taints it manages (any effect, NoExecute included), and two lists of condition matches: when every
``addOnConditions`` match holds for a Cluster's status conditions its taints are added, when every
``removeOnConditions`` match holds they are removed. Taints stay when the policy is deleted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypedDict, cast

from controllers.api.policy import POLICY_GROUP, ClusterAffinity
from controllers.api.shape import object_field
from reconcile import GVK, Resource

__all__ = [
    "CLUSTER_TAINT_POLICIES",
    "CLUSTER_TAINT_POLICY_GVK",
    "ClusterTaintPolicySpec",
    "MatchCondition",
    "PolicyTaint",
    "cluster_taint_policy_spec",
]

CLUSTER_TAINT_POLICY_GVK: Final = GVK(POLICY_GROUP, "v1alpha1", "ClusterTaintPolicy")
CLUSTER_TAINT_POLICIES: Final = Resource(CLUSTER_TAINT_POLICY_GVK, "clustertaintpolicies", False)


class MatchCondition(TypedDict, total=False):
    """A test of one status condition of a Cluster: its status In / NotIn the values."""

    conditionType: str
    operator: Literal["In", "NotIn"]
    statusValues: list[str]


class PolicyTaint(TypedDict, total=False):
    """A taint the policy adds or removes (timeAdded is set when it is added)."""

    key: str
    value: str
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class ClusterTaintPolicySpec(TypedDict, total=False):
    """The spec of a ClusterTaintPolicy."""

    targetClusters: ClusterAffinity
    addOnConditions: list[MatchCondition]
    removeOnConditions: list[MatchCondition]
    taints: list[PolicyTaint]


def cluster_taint_policy_spec(policy: Mapping[str, Any]) -> ClusterTaintPolicySpec:
    """The spec of a ClusterTaintPolicy (empty if missing or not an object)."""
    return cast(ClusterTaintPolicySpec, object_field(policy, "spec"))
