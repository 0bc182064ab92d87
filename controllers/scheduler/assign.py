"""Assign divides a binding's replicas among the clusters the scheduler selected.

The placement's ``replicaScheduling`` picks the strategy, as in Karmada:

- not a workload (``spec.replicas`` 0): every cluster, with 0 replicas;
- Duplicated (also no ``replicaScheduling``): every cluster runs ``spec.replicas``;
- Divided/Weighted with static weights: a cluster weighs the most of the rules it matches, weight-0
  clusters drop out (all zero: 1 each), and Webster divides the replicas;
- Divided/Weighted with ``dynamicWeight: AvailableReplicas``: the weights are the clusters' free
  room; Divided/Aggregated: the fewest clusters (previous ones first) whose room covers the
  replicas. Both are steady: scaling up divides only the new replicas and adds them to the current
  result, scaling down divides the new total in proportion to the current result, so existing
  replicas do not move. A requested reschedule (``spec.rescheduleTriggeredAt`` after
  ``status.lastScheduledTime``) divides afresh.

Clusters left with 0 replicas are dropped; results are sorted by cluster name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from controllers.api import (
    AGGREGATED,
    DUPLICATED,
    StaticClusterWeight,
    TargetCluster,
    binding_spec,
    binding_status,
    division_preference_of,
    replica_scheduling_type_of,
    target_clusters,
)
from controllers.scheduler.filter import cluster_matches
from controllers.scheduler.score import ClusterCandidate
from controllers.scheduler.webster import webster
from reconcile import name_of

__all__ = [
    "AssignError",
    "assign_dynamic",
    "assign_replicas",
    "assign_static_weighted",
    "reschedule_requested",
    "static_weights",
]


class AssignError(Exception):
    """The replicas cannot be assigned, e.g. the clusters lack room for them."""


def _targets(replicas: Mapping[str, int], *, keep_zero: bool = False) -> list[TargetCluster]:
    return [
        TargetCluster(name=name, replicas=count)
        for name, count in sorted(replicas.items())
        if keep_zero or count > 0
    ]


def static_weights(
    clusters: Iterable[Mapping[str, Any]], rules: Sequence[StaticClusterWeight]
) -> dict[str, int]:
    """Each cluster's weight: the largest weight of the rules whose ``targetCluster`` it matches.

    Clusters of weight 0 are left out; when every cluster would be, each weighs 1.
    """
    clusters = list(clusters)
    weights: dict[str, int] = {}
    for cluster in clusters:
        matched = [
            r.get("weight", 0)
            for r in rules
            if cluster_matches(cluster, r.get("targetCluster") or {})
        ]
        if max(matched, default=0) > 0:
            weights[name_of(cluster)] = max(matched)
    return weights or {name_of(cluster): 1 for cluster in clusters}


def assign_static_weighted(
    clusters: Sequence[Mapping[str, Any]],
    rules: Sequence[StaticClusterWeight],
    replicas: int,
    *,
    uid: str = "",
) -> list[TargetCluster]:
    """Divide ``replicas`` by static weights with Webster (``uid`` sets the tie-break)."""
    return _targets(webster(replicas, static_weights(clusters, rules), uid=uid))


def reschedule_requested(binding: Mapping[str, Any]) -> bool:
    """Whether ``spec.rescheduleTriggeredAt`` is later than ``status.lastScheduledTime``.

    Before the first successful schedule there is nothing to redo, so the answer is False.
    """
    triggered = binding_spec(binding).get("rescheduleTriggeredAt")
    last = binding_status(binding).get("lastScheduledTime")
    if not triggered or not last:
        return False
    return datetime.fromisoformat(triggered) > datetime.fromisoformat(last)


def _by_room(weights: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    # Stable: equal room keeps the candidates' ranking order.
    return sorted(weights, key=lambda item: -item[1])


def _fewest(
    weights: Sequence[tuple[str, int]], target: int, running: Mapping[str, int]
) -> list[tuple[str, int]]:
    # Clusters already running replicas first, then the shortest prefix whose room fits.
    ordered = sorted(weights, key=lambda item: running.get(item[0], 0) <= 0)
    chosen: list[tuple[str, int]] = []
    for item in ordered:
        chosen.append(item)
        if sum(weight for _, weight in chosen) >= target:
            break
    return chosen


def _divide(
    target: int,
    weights: Sequence[tuple[str, int]],
    *,
    aggregated: bool,
    initial: Mapping[str, int],
    uid: str,
) -> dict[str, int]:
    room = sum(weight for _, weight in weights)
    if room < target:
        raise AssignError(
            f"clusters available replicas {room} are not enough to schedule {target} replicas"
        )
    if aggregated:
        weights = _fewest(weights, target, initial)
    shares = webster(target, dict(weights), uid=uid)
    names = set(shares) | set(initial)
    return {name: shares.get(name, 0) + initial.get(name, 0) for name in names}


def assign_dynamic(
    candidates: Sequence[ClusterCandidate], binding: Mapping[str, Any], *, aggregated: bool
) -> list[TargetCluster]:
    """Divide by available replicas (Aggregated: into the fewest clusters), steadily.

    Raises:
        AssignError: the clusters' room is smaller than the replicas to place.
    """
    spec = binding_spec(binding)
    replicas, uid = spec.get("replicas", 0), (spec.get("resource") or {}).get("uid", "")
    names = {c.name for c in candidates}
    # Replicas in clusters that are no longer candidates count as new ones to place elsewhere.
    scheduled = {
        t.get("name", ""): t.get("replicas", 0)
        for t in target_clusters(binding)
        if t.get("name") in names
    }
    assigned = sum(scheduled.values())
    if reschedule_requested(binding):
        weights = _by_room(
            (c.name, c.available_replicas + scheduled.get(c.name, 0)) for c in candidates
        )
        result = _divide(replicas, weights, aggregated=aggregated, initial={}, uid=uid)
    elif assigned > replicas:
        # Scale down in proportion to the current result; no cluster gains replicas.
        weights = _by_room(scheduled.items())
        result = _divide(replicas, weights, aggregated=aggregated, initial={}, uid=uid)
    elif assigned < replicas:
        # Scale up (or first schedule): place only the new replicas, keep the existing ones.
        weights = _by_room((c.name, c.available_replicas) for c in candidates)
        result = _divide(
            replicas - assigned, weights, aggregated=aggregated, initial=scheduled, uid=uid
        )
    else:
        result = scheduled
    return _targets(result)


def assign_replicas(
    candidates: Sequence[ClusterCandidate], binding: Mapping[str, Any]
) -> list[TargetCluster]:
    """The target clusters with their replicas for the binding's placement strategy.

    Raises:
        AssignError: no candidates, or not enough room for a dynamic or Aggregated division.
    """
    if not candidates:
        raise AssignError("no clusters available to schedule")
    spec = binding_spec(binding)
    replicas = spec.get("replicas", 0)
    if replicas <= 0:
        return _targets({c.name: 0 for c in candidates}, keep_zero=True)
    placement = spec.get("placement") or {}
    if replica_scheduling_type_of(placement) == DUPLICATED:
        return _targets({c.name: replicas for c in candidates})
    if division_preference_of(placement) == AGGREGATED:
        return assign_dynamic(candidates, binding, aggregated=True)
    preference = (placement.get("replicaScheduling") or {}).get("weightPreference") or {}
    if preference.get("dynamicWeight"):
        return assign_dynamic(candidates, binding, aggregated=False)
    uid = (spec.get("resource") or {}).get("uid", "")
    clusters = [c.cluster for c in candidates]
    return assign_static_weighted(
        clusters, preference.get("staticWeightList") or [], replicas, uid=uid
    )
