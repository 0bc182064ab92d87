"""Conditions decides which taints ClusterTaintPolicies want on a Cluster, from its conditions.

Karmada's ClusterTaintPolicy controller semantics: policies are applied oldest first (by
creationTimestamp, then name), each only to the Clusters its ``targetClusters`` selects (none: all);
when every ``addOnConditions`` match holds its taints are added (key and effect identify a taint,
``timeAdded`` is set), then when every ``removeOnConditions`` match holds they are removed. An
empty list of matches never holds; a match on a condition type the Cluster lacks does not hold.
Taints no policy names are left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from controllers.api import (
    MatchCondition,
    Taint,
    cluster_spec,
    cluster_taint_policy_spec,
)
from controllers.cluster.taints import update_taints
from controllers.scheduler.filter import cluster_matches
from reconcile import Condition, name_of

__all__ = ["condition_matches", "policy_order", "wanted_taints"]


def _holds(match: MatchCondition, conditions: Iterable[Condition]) -> bool:
    values = set(match.get("statusValues") or ())
    operator = match.get("operator")
    for condition in conditions:
        if condition.get("type") != match.get("conditionType"):
            continue
        if operator == "In":
            return condition.get("status") in values
        if operator == "NotIn":
            return condition.get("status") not in values
        return False
    return False


def condition_matches(conditions: Sequence[Condition], matches: Sequence[MatchCondition]) -> bool:
    """Whether every match holds for ``conditions`` (ANDed; an empty list never holds)."""
    return bool(matches) and all(_holds(match, conditions) for match in matches)


def policy_order(policy: Mapping[str, Any]) -> tuple[str, str]:
    """Sort key of policies: oldest first, then by name, for one stable outcome of conflicts."""
    created = (policy.get("metadata") or {}).get("creationTimestamp") or ""
    return (str(created), name_of(policy))


def wanted_taints(
    cluster: Mapping[str, Any],
    policies: Iterable[Mapping[str, Any]],
    *,
    now: datetime | None = None,
) -> list[Taint]:
    """The Cluster's ``spec.taints`` once every policy has been applied to it."""
    taints: list[Taint] = list(cluster_spec(cluster).get("taints") or [])
    conditions = (cluster.get("status") or {}).get("conditions") or []
    for policy in sorted(policies, key=policy_order):
        spec = cluster_taint_policy_spec(policy)
        target = spec.get("targetClusters")
        if target is not None and not cluster_matches(cluster, target):
            continue
        managed: list[Taint] = [Taint(**t) for t in spec.get("taints") or []]  # type: ignore[typeddict-item]
        if condition_matches(conditions, spec.get("addOnConditions") or []):
            taints = update_taints(taints, add=managed, now=now)
        if condition_matches(conditions, spec.get("removeOnConditions") or []):
            taints = update_taints(taints, remove=managed)
    return taints
