"""Spread picks the clusters a binding goes to when its placement has spread constraints.

A constraint groups clusters by a field (cluster, region, zone, provider) or a label and bounds
how many groups are used (minGroups..maxGroups); a field or label constraint needs a cluster
constraint beside it. As in Karmada, region-like grouping first chooses groups with enough
clusters for the cluster minimum, takes the best cluster of each chosen group, then fills up to
the cluster maximum by free room; cluster-only spreading chooses the best-scored set of clusters
whose capacity covers the replicas. Static-weight placements ignore spread constraints, and
Duplicated placements do not weigh capacity.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from controllers.api import (
    DIVIDED,
    DUPLICATED,
    WEIGHTED,
    Placement,
    SpreadConstraint,
    division_preference_of,
    replica_scheduling_type_of,
)
from controllers.scheduler.filter import spread_value
from controllers.scheduler.score import ClusterCandidate

__all__ = [
    "SpreadError",
    "select_clusters",
    "spread_ignored",
    "validate_spread_constraints",
]

# Karmada scores a group by how much of the target it covers first, then by its clusters' scores.
_WEIGHT_UNIT: Final = 1000
# When several grouping constraints are given, the broadest one decides (Karmada: region first).
_GROUPING_ORDER: Final = ("region", "zone", "provider")
# Combinations explored before the group search settles for the sets found so far.
_SEARCH_BUDGET: Final = 20_000


class SpreadError(Exception):
    """No set of feasible clusters satisfies the spread constraints."""


@dataclass(frozen=True)
class _Group:
    name: str
    value: int
    weight: int


@dataclass(frozen=True)
class _Path:
    groups: tuple[_Group, ...]
    order: int

    @property
    def weight(self) -> int:
        return sum(g.weight for g in self.groups)

    @property
    def value(self) -> int:
        return sum(g.value for g in self.groups)

    def extends(self, other: _Path) -> bool:
        """Whether ``other`` is a strict prefix of this path (both in weight-then-name order)."""
        prefix = [g.name for g in self.groups[: len(other.groups)]]
        shorter = len(other.groups) < len(self.groups)
        return shorter and prefix == [g.name for g in other.groups]


def _sorted_path(groups: Sequence[_Group], order: int) -> _Path:
    return _Path(tuple(sorted(groups, key=lambda g: (-g.weight, g.name))), order)


def _feasible_paths(
    groups: Sequence[_Group], minimum: int, maximum: int, target: int
) -> list[_Path]:
    # Depth-first over combinations, smallest values first; a path stops growing once it covers
    # the target within the length bounds, so only minimal combinations are kept. The search is
    # exponential, so it gives up exploring after _SEARCH_BUDGET steps and keeps what it found.
    ordered = sorted(groups, key=lambda g: (g.value, -g.weight, g.name))
    if sum(g.value for g in ordered) < target:
        return []
    paths: list[_Path] = []
    path: list[_Group] = []
    steps = 0

    def visit(total: int, begin: int) -> None:
        nonlocal steps
        steps += 1
        if total >= target and minimum <= len(path) <= maximum:
            paths.append(_sorted_path(path, len(paths)))
            return
        if len(path) >= maximum or steps > _SEARCH_BUDGET:
            return
        for index in range(begin, len(ordered)):
            path.append(ordered[index])
            visit(total + ordered[index].value, index + 1)
            path.pop()

    visit(0, 0)
    return paths


def _select_groups(
    groups: Sequence[_Group], minimum: int, maximum: int, target: int
) -> list[_Group]:
    """The best set of ``minimum``..``maximum`` groups whose values sum to at least ``target``.

    Best is the highest total weight, then the highest total value, then the first found; a
    shorter path that the best one merely extends wins (fewer groups for the same choice).
    Empty when no set qualifies.
    """
    paths = _feasible_paths(groups, minimum, maximum, target)
    if not paths:
        return []
    ranked = sorted(paths, key=lambda p: (-p.weight, -p.value, p.order))
    best = ranked[0]
    for path in ranked[1:]:
        if best.extends(path):
            best = path
    return list(best.groups)


def spread_ignored(placement: Placement) -> bool:
    """Whether spread constraints are ignored: Divided/Weighted by a static weight list."""
    if replica_scheduling_type_of(placement) != DIVIDED:
        return False
    if division_preference_of(placement) != WEIGHTED:
        return False
    preference = (placement.get("replicaScheduling") or {}).get("weightPreference")
    if preference is None:
        return True
    return bool(preference.get("staticWeightList")) and not preference.get("dynamicWeight")


def _grouping(constraint: SpreadConstraint) -> str:
    label = constraint.get("spreadByLabel")
    return f"label {label}" if label else constraint.get("spreadByField") or "cluster"


def validate_spread_constraints(constraints: Sequence[SpreadConstraint]) -> str | None:
    """Why the constraints are invalid, or None (the checks of Karmada's validating webhook)."""
    for constraint in constraints:
        if constraint.get("spreadByField") and constraint.get("spreadByLabel"):
            return "spreadByField and spreadByLabel cannot both be set"
        minimum, maximum = constraint.get("minGroups", 1), constraint.get("maxGroups", 0)
        if maximum and maximum < minimum:
            return f"maxGroups {maximum} is lower than minGroups {minimum}"
    kinds = [_grouping(c) for c in constraints]
    others = [kind for kind in kinds if kind != "cluster"]
    if others and "cluster" not in kinds:
        return f"a spread constraint by {others[0]} requires a spread constraint by cluster"
    return None


def _bounds(constraint: SpreadConstraint | None, count: int) -> tuple[int, int]:
    # minGroups defaults to 1 (Karmada's defaulting); maxGroups unset means no upper bound.
    if constraint is None:
        return 1, count
    return max(1, constraint.get("minGroups") or 1), constraint.get("maxGroups") or count


def _grouping_constraint(constraints: Sequence[SpreadConstraint]) -> SpreadConstraint | None:
    for field in _GROUPING_ORDER:
        for constraint in constraints:
            if constraint.get("spreadByField") == field:
                return constraint
    return next((c for c in constraints if c.get("spreadByLabel")), None)


def _group_score(
    members: Sequence[ClusterCandidate],
    capacity: Mapping[str, int],
    replicas: int,
    duplicated: bool,
    min_groups: int,
) -> int:
    if duplicated:
        # Every replica lands in every cluster: count the clusters that can hold them all.
        valid = [c for c in members if capacity[c.name] >= replicas]
        if not valid:
            return 0
        return len(valid) * _WEIGHT_UNIT + sum(c.score for c in valid) // len(valid)
    target = replicas // min_groups + 1
    covered = score = used = 0
    for member in members:
        covered, score, used = covered + capacity[member.name], score + member.score, used + 1
        if covered >= target:
            return target * _WEIGHT_UNIT + score // used
    return covered * _WEIGHT_UNIT + score // len(members)


def _by_group(
    ordered: Sequence[ClusterCandidate],
    grouping: SpreadConstraint,
    cluster_constraint: SpreadConstraint | None,
    capacity: Mapping[str, int],
    placement: Placement,
    replicas: int,
) -> list[ClusterCandidate]:
    by_field, by_label = grouping.get("spreadByField", ""), grouping.get("spreadByLabel", "")
    members: dict[str, list[ClusterCandidate]] = {}
    for candidate in ordered:
        value = spread_value(candidate.cluster, by_field=by_field, by_label=by_label)
        if value:
            members.setdefault(value, []).append(candidate)
    group_min, group_max = _bounds(grouping, len(members))
    if len(members) < group_min:
        raise SpreadError(
            f"the number of feasible {_grouping(grouping)} groups ({len(members)}) "
            f"is less than spreadConstraint.minGroups ({group_min})"
        )
    duplicated = replica_scheduling_type_of(placement) == DUPLICATED
    groups = [
        _Group(
            name, len(clusters), _group_score(clusters, capacity, replicas, duplicated, group_min)
        )
        for name, clusters in members.items()
    ]
    cluster_min, cluster_max = _bounds(cluster_constraint, len(ordered))
    chosen = _select_groups(groups, group_min, group_max, cluster_min)
    if not chosen:
        raise SpreadError(
            f"no {group_min}..{group_max} {_grouping(grouping)} groups hold "
            f"spreadConstraint.minGroups ({cluster_min}) clusters"
        )
    # The best cluster of each chosen group first, then the rest by score and free room.
    selected = [members[group.name][0] for group in chosen]
    rest = [c for group in chosen for c in members[group.name][1:]]
    rest.sort(key=lambda c: (-c.score, -capacity[c.name], c.name))
    room = min(cluster_max, len(selected) + len(rest)) - len(selected)
    return selected + rest[: max(0, room)]


def _by_cluster(
    ordered: Sequence[ClusterCandidate],
    constraint: SpreadConstraint | None,
    capacity: Mapping[str, int],
    need: int | None,
) -> list[ClusterCandidate]:
    minimum, maximum = _bounds(constraint, len(ordered))
    if len(ordered) < minimum:
        raise SpreadError(
            f"the number of feasible clusters ({len(ordered)}) "
            f"is less than spreadConstraint.minGroups ({minimum})"
        )
    if need is None:
        return list(ordered[: min(maximum, len(ordered))])
    groups = [_Group(c.name, capacity[c.name], c.score) for c in ordered]
    chosen = {group.name for group in _select_groups(groups, minimum, maximum, need)}
    if not chosen:
        raise SpreadError(
            f"no {minimum}..{min(maximum, len(ordered))} clusters have room for {need} replicas"
        )
    return [c for c in ordered if c.name in chosen]


def select_clusters(
    candidates: Sequence[ClusterCandidate],
    placement: Placement,
    replicas: int,
    assigned: Mapping[str, int] | None = None,
) -> list[ClusterCandidate]:
    """The candidates that satisfy ``placement.spreadConstraints`` (all of them without any).

    ``assigned`` holds the replicas each cluster already runs; they count towards its capacity.

    Raises:
        SpreadError: the constraints are invalid or no choice of clusters satisfies them.
    """
    constraints = placement.get("spreadConstraints") or []
    if not constraints or spread_ignored(placement):
        return list(candidates)
    problem = validate_spread_constraints(constraints)
    if problem is not None:
        raise SpreadError(f"invalid spreadConstraints: {problem}")
    given = assigned or {}
    capacity = {c.name: c.available_replicas + given.get(c.name, 0) for c in candidates}
    ordered = sorted(candidates, key=lambda c: (-c.score, -capacity[c.name], c.name))
    cluster_constraint = next((c for c in constraints if _grouping(c) == "cluster"), None)
    grouping = _grouping_constraint(constraints)
    if grouping is not None:
        return _by_group(ordered, grouping, cluster_constraint, capacity, placement, replicas)
    duplicated = replica_scheduling_type_of(placement) == DUPLICATED
    return _by_cluster(ordered, cluster_constraint, capacity, None if duplicated else replicas)
