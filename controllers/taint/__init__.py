"""Taint holds the ClusterTaintPolicy controller: taints on Clusters from their conditions."""

from controllers.taint.conditions import condition_matches, policy_order, wanted_taints
from controllers.taint.controller import (
    CONTROLLER_NAME,
    PERMISSIONS,
    ClusterTaintPolicyController,
    setup,
)

__all__ = [
    "CONTROLLER_NAME",
    "PERMISSIONS",
    "ClusterTaintPolicyController",
    "condition_matches",
    "policy_order",
    "setup",
    "wanted_taints",
]
