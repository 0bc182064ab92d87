"""Estimator computes how many more replicas of a binding fit in a member cluster.

It is Karmada's general estimator, reading the Cluster's ``status.resourceSummary``: for each
resource a replica requests, free = allocatable - allocated - allocating, and the answer is the
smallest quotient free / request over those resources and the free pod slots. A cluster that
reports no resource summary fits nothing. CPU is compared in millicores, everything else in whole
units rounded up, like ``resource.Quantity``'s ``MilliValue``/``Value``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Final

from controllers.api import ReplicaRequirements, cluster_status

__all__ = ["available_replicas", "parse_quantity"]

_BINARY: Final = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL: Final = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
_QUANTITY: Final = re.compile(r"([+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+))([eE][+-]?[0-9]+|[a-zA-Z]*)")


def parse_quantity(value: str | int | float) -> Fraction:
    """The exact value of a Kubernetes quantity such as ``"500m"``, ``"1.5Gi"`` or ``"2e3"``.

    Raises:
        ValueError: the value is not a quantity.
    """
    text = str(value).strip()
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError(f"invalid quantity {text!r}")
    number, suffix = Fraction(match.group(1)), match.group(2)
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * Fraction(10) ** _DECIMAL[suffix]
    if suffix[:1] in ("e", "E"):
        return number * Fraction(10) ** int(suffix[1:])
    raise ValueError(f"invalid quantity suffix in {text!r}")


def _units(resource: str, amount: Fraction) -> int:
    # Karmada divides CPU in millicores and everything else in whole units, both rounded up.
    scaled = amount * 1000 if resource == "cpu" else amount
    return math.ceil(scaled)


def _free(summary: Mapping[str, Any], resource: str) -> Fraction | None:
    allocatable = (summary.get("allocatable") or {}).get(resource)
    if allocatable is None:
        return None
    free = parse_quantity(allocatable)
    for used in ("allocated", "allocating"):
        taken = (summary.get(used) or {}).get(resource)
        if taken is not None:
            free -= parse_quantity(taken)
    return free


def _pod_slots(summary: Mapping[str, Any]) -> int:
    free = _free(summary, "pods")
    return max(0, math.ceil(free)) if free is not None else 0


def available_replicas(
    cluster: Mapping[str, Any], requirements: ReplicaRequirements | None = None
) -> int:
    """How many replicas with ``requirements`` the cluster can still run (0 without a summary)."""
    summary = cluster_status(cluster).get("resourceSummary")
    if not summary:
        return 0
    fits = _pod_slots(summary)
    if fits == 0 or not requirements:
        return fits
    for resource, quantity in (requirements.get("resourceRequest") or {}).items():
        request = parse_quantity(quantity)
        if math.ceil(request) <= 0:
            continue
        free = _free(summary, resource)
        # An unknown resource, or none left of it, means the replica cannot run there at all.
        if free is None or math.ceil(free) <= 0:
            return 0
        fits = min(fits, _units(resource, free) // _units(resource, request))
    return fits
