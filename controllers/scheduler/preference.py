"""Preference is KubeFed's ReplicaSchedulingPreference: replicas split by weights and bounds.

A preference spec names ``totalReplicas`` and, per cluster (``"*"`` for any other cluster),
``minReplicas``, ``maxReplicas`` and ``weight``. As KubeFed's planner does, clusters are ordered by
weight (descending; ties by an FNV-32 hash of cluster name + workload key), each first gets its
minimum, then the rest is handed out in proportion to weight, rounding up, in rounds until every
replica is placed or no cluster can take more. With ``rebalance`` off, clusters keep the replicas
they currently run (within their bounds) before the proportional rounds. Replicas no cluster can
take are reported, not dropped silently.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from controllers.api import TargetCluster

__all__ = [
    "ANY_CLUSTER",
    "ClusterPreference",
    "PreferencePlan",
    "plan_by_preferences",
    "preferences_from_spec",
]

ANY_CLUSTER: Final = "*"
"""The preference key that applies to every cluster without its own entry."""


@dataclass(frozen=True)
class ClusterPreference:
    """The bounds and weight of one cluster; ``max_replicas`` None means unbounded."""

    min_replicas: int = 0
    max_replicas: int | None = None
    weight: int = 0


@dataclass(frozen=True)
class PreferencePlan:
    """Replicas per cluster (zeros dropped, by name) and how many found no cluster."""

    targets: list[TargetCluster] = field(default_factory=list)
    unassigned: int = 0


def _fnv32(text: str) -> int:
    # KubeFed orders equal weights by FNV-1 (not 1a) of cluster name + workload key.
    value = 0x811C9DC5
    for byte in text.encode():
        value = (value * 0x01000193 & 0xFFFFFFFF) ^ byte
    return value


def preferences_from_spec(spec: Mapping[str, Any]) -> dict[str, ClusterPreference]:
    """The per-cluster preferences of a ReplicaSchedulingPreference spec (``spec.clusters``)."""
    return {
        name: ClusterPreference(
            min_replicas=int(entry.get("minReplicas") or 0),
            max_replicas=None if entry.get("maxReplicas") is None else int(entry["maxReplicas"]),
            weight=int(entry.get("weight") or 0),
        )
        for name, entry in (spec.get("clusters") or {}).items()
    }


def _ordered(
    clusters: Sequence[str], preferences: Mapping[str, ClusterPreference], key: str
) -> list[tuple[str, ClusterPreference]]:
    named = [
        (name, preferences.get(name) or preferences[ANY_CLUSTER])
        for name in clusters
        if name in preferences or ANY_CLUSTER in preferences
    ]
    return sorted(named, key=lambda item: (-item[1].weight, _fnv32(item[0] + key)))


def _cap(preference: ClusterPreference, capacity: int | None) -> int | None:
    bounds = [b for b in (preference.max_replicas, capacity) if b is not None]
    return min(bounds) if bounds else None


def _distribute(
    remaining: int,
    ordered: list[tuple[str, ClusterPreference]],
    plan: dict[str, int],
    caps: Mapping[str, int | None],
    kept: dict[str, int],
) -> int:
    # Rounds of proportional shares, rounded up; a share first uses up replicas a cluster kept
    # (rebalance off) before adding any, and clusters pushed past their cap leave the next rounds.
    open_, progressed = list(ordered), True
    while remaining > 0 and open_ and progressed:
        weight_sum = sum(p.weight for _, p in open_)
        if weight_sum <= 0:
            break
        budget, progressed, still_open = remaining, False, []
        for name, preference in open_:
            share = min(-(-budget * preference.weight // weight_sum), remaining)
            used = min(share, kept.get(name, 0))
            kept[name] = kept.get(name, 0) - used
            total, cap = plan[name] + share - used, caps[name]
            if cap is not None and total > cap:
                total = cap
            else:
                still_open.append((name, preference))
            progressed |= used > 0 or total > plan[name]
            remaining -= total - plan[name]
            plan[name] = total
        open_ = still_open
    return remaining


def _bounded(value: int, cap: int | None) -> int:
    return value if cap is None else min(value, cap)


def plan_by_preferences(
    total_replicas: int,
    clusters: Sequence[str],
    preferences: Mapping[str, ClusterPreference],
    *,
    current: Mapping[str, int] | None = None,
    capacity: Mapping[str, int] | None = None,
    rebalance: bool = True,
    key: str = "",
) -> PreferencePlan:
    """Split ``total_replicas`` over ``clusters`` by their preferences (KubeFed's planner).

    ``capacity`` caps clusters like ``maxReplicas``; ``current`` is what clusters run now, kept
    when ``rebalance`` is False; ``key`` (e.g. the workload's namespace/name) varies tie-breaks.
    Clusters without a preference (and no ``"*"`` entry) get nothing.
    """
    ordered = _ordered(clusters, preferences, key)
    caps = {name: _cap(p, (capacity or {}).get(name)) for name, p in ordered}
    plan: dict[str, int] = {}
    kept: dict[str, int] = {}
    remaining = total_replicas
    # Minimums first, in order, so heavier clusters get theirs when replicas run short.
    for name, preference in ordered:
        plan[name] = _bounded(min(preference.min_replicas, remaining), caps[name])
        remaining -= plan[name]
    for name, _ in ordered if not rebalance else ():
        wanted = _bounded((current or {}).get(name, 0), caps[name])
        kept[name] = max(0, min(wanted - plan[name], remaining))
        plan[name] += kept[name]
        remaining -= kept[name]
    remaining = _distribute(remaining, ordered, plan, caps, kept)
    targets = [TargetCluster(name=n, replicas=r) for n, r in sorted(plan.items()) if r > 0]
    return PreferencePlan(targets=targets, unassigned=remaining)
