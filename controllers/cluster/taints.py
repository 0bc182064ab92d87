"""Taints are the cluster.karmada.io taints controllers keep on Clusters, and edits of taint lists.

The cluster controller owns two NoSchedule taints and keeps them in line with the Ready condition
(Karmada's taintClusterByCondition): ``cluster.karmada.io/not-ready`` while Ready is False (or a
new Cluster has no Ready condition yet), ``cluster.karmada.io/unreachable`` while it is Unknown,
neither once it is True. ``update_taints`` adds and removes taints by key and effect, the identity
Karmada uses, and leaves every other taint (an operator's ``cluster.karmada.io/unschedulable``, a
ClusterTaintPolicy's) as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Final

from controllers.api import Taint
from controllers.eviction.task import timestamp

__all__ = [
    "NOT_READY_TAINT",
    "TAINT_CLUSTER_NOT_READY",
    "TAINT_CLUSTER_UNREACHABLE",
    "TAINT_CLUSTER_UNSCHEDULABLE",
    "UNREACHABLE_TAINT",
    "condition_taints",
    "has_taint",
    "update_taints",
]

TAINT_CLUSTER_NOT_READY: Final = "cluster.karmada.io/not-ready"
TAINT_CLUSTER_UNREACHABLE: Final = "cluster.karmada.io/unreachable"
TAINT_CLUSTER_UNSCHEDULABLE: Final = "cluster.karmada.io/unschedulable"
"""An operator's cordon (``reconcile cordon``); no controller adds or removes it."""

NOT_READY_TAINT: Final = Taint(key=TAINT_CLUSTER_NOT_READY, effect="NoSchedule")
UNREACHABLE_TAINT: Final = Taint(key=TAINT_CLUSTER_UNREACHABLE, effect="NoSchedule")


def _same(a: Taint, b: Taint) -> bool:
    return a.get("key") == b.get("key") and a.get("effect") == b.get("effect")


def has_taint(taints: Iterable[Taint], taint: Taint) -> bool:
    """Whether ``taints`` holds a taint with ``taint``'s key and effect."""
    return any(_same(t, taint) for t in taints)


def update_taints(
    taints: Sequence[Taint],
    *,
    add: Iterable[Taint] = (),
    remove: Iterable[Taint] = (),
    now: datetime | None = None,
) -> list[Taint]:
    """``taints`` with ``remove`` taken out and ``add`` appended where missing (key and effect).

    Added taints get ``timeAdded`` (``now``, default the current time) when they have none;
    taints already there keep theirs, so a tolerationSeconds counts from the first addition.
    """
    removed = list(remove)
    kept = [dict(t) for t in taints if not any(_same(t, r) for r in removed)]
    result: list[Taint] = [Taint(**t) for t in kept]  # type: ignore[typeddict-item]
    for taint in add:
        if not has_taint(result, taint):
            added = Taint(**taint)
            added.setdefault("timeAdded", timestamp(now))
            result.append(added)
    return result


def condition_taints(ready: str | None) -> tuple[list[Taint], list[Taint]]:
    """The taints to add and to remove for a Ready condition status (None: no condition yet)."""
    if ready == "True":
        return [], [NOT_READY_TAINT, UNREACHABLE_TAINT]
    if ready == "Unknown":
        return [UNREACHABLE_TAINT], [NOT_READY_TAINT]
    if ready == "False":
        return [NOT_READY_TAINT], [UNREACHABLE_TAINT]
    return [NOT_READY_TAINT], []
