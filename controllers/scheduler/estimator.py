"""Estimator computes how many more replicas of a binding fit in a member cluster.

It is Karmada's general estimator, reading the Cluster's ``status.resourceSummary``: for each
resource a replica requests, free = allocatable - allocated - allocating, and the answer is the
smallest quotient free / request over those resources and the free pod slots. A cluster that
reports no resource summary fits nothing, nor does one whose quantities do not parse. CPU is
compared in millicores, everything else in whole
units rounded up, like ``resource.Quantity``'s ``MilliValue``/``Value``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from controllers.api import ReplicaRequirements, cluster_status
from reconcile import Quantity

__all__ = ["available_replicas"]


def _units(resource: str, amount: Quantity) -> int:
    # Karmada divides CPU in millicores and everything else in whole units, both rounded up.
    return amount.milli_value() if resource == "cpu" else amount.value()


def _free(summary: Mapping[str, Any], resource: str) -> Quantity | None:
    allocatable = (summary.get("allocatable") or {}).get(resource)
    if allocatable is None:
        return None
    try:
        free = Quantity.parse(allocatable)
        for used in ("allocated", "allocating"):
            taken = (summary.get(used) or {}).get(resource)
            if taken is not None:
                free -= Quantity.parse(taken)
    except ValueError:
        # QuantityError, or int()'s digit limit: a summary we cannot read offers no room.
        return None
    return free


def _pod_slots(summary: Mapping[str, Any]) -> int:
    free = _free(summary, "pods")
    return max(0, free.value()) if free is not None else 0


def available_replicas(
    cluster: Mapping[str, Any], requirements: ReplicaRequirements | None = None
) -> int:
    """How many replicas with ``requirements`` the cluster can still run (0 without a summary).

    Raises:
        ValueError: a requested quantity does not parse (``binding_problems`` reports that).
    """
    summary = cluster_status(cluster).get("resourceSummary")
    if not summary:
        return 0
    fits = _pod_slots(summary)
    if fits == 0 or not requirements:
        return fits
    for resource, quantity in (requirements.get("resourceRequest") or {}).items():
        request = Quantity.parse(quantity)
        if request.value() <= 0:
            continue
        free = _free(summary, resource)
        # An unknown resource, or none left of it, means the replica cannot run there at all.
        if free is None or free.value() <= 0:
            return 0
        fits = min(fits, _units(resource, free) // _units(resource, request))
    return fits
