"""Observed computes a WorkloadRebalancer's status from its spec, as Karmada's controller does.

``observed_workloads`` merges the spec's workloads into the previous ``status.observedWorkloads``:
a workload still listed keeps its outcome (it is not rebalanced twice), one no longer listed is
kept only if it was Successful, a new one starts without a result; the list is sorted by
apiVersion, kind, namespace, name. ``needs_trigger`` says whether a binding's
``spec.rescheduleTriggeredAt`` predates the rebalancer; ``time_left`` how long a finished
rebalancer with ``ttlSecondsAfterFinished`` lives on. Everything here is pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any, cast

from controllers.api import (
    ObservedWorkload,
    WorkloadReference,
    rebalancer_spec,
    rebalancer_status,
)

__all__ = ["needs_trigger", "observed_workloads", "parse_time", "time_left", "workload_key"]

_FIELDS = ("apiVersion", "kind", "namespace", "name")


def workload_key(workload: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """A workload reference as a comparable value (apiVersion, kind, namespace, name)."""
    api_version, kind, namespace, name = (str(workload.get(f) or "") for f in _FIELDS)
    return api_version, kind, namespace, name


def _reference(workload: Mapping[str, Any]) -> WorkloadReference:
    reference = {field: str(workload[field]) for field in _FIELDS if workload.get(field)}
    return cast(WorkloadReference, reference)


def observed_workloads(rebalancer: Mapping[str, Any]) -> list[ObservedWorkload]:
    """The status list the rebalancer's current spec calls for (see the module docstring)."""
    wanted = {workload_key(w): w for w in rebalancer_spec(rebalancer).get("workloads") or []}
    observed: dict[tuple[str, str, str, str], ObservedWorkload] = {}
    for item in rebalancer_status(rebalancer).get("observedWorkloads") or []:
        key = workload_key(item.get("workload") or {})
        if key in wanted or item.get("result") == "Successful":
            observed[key] = item
    for key, workload in wanted.items():
        observed.setdefault(key, ObservedWorkload(workload=_reference(workload)))
    return [observed[key] for key in sorted(observed)]


def parse_time(value: str) -> datetime:
    """A metav1.Time (RFC 3339, ``Z`` or an offset) as an aware datetime.

    Raises:
        ValueError: not a timestamp.
    """
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def needs_trigger(created: str, triggered_at: str | None) -> bool:
    """Whether a binding last triggered at ``triggered_at`` must be triggered again by a
    rebalancer created at ``created`` (Karmada: never triggered, or triggered before it)."""
    if not triggered_at:
        return True
    try:
        return parse_time(created) > parse_time(triggered_at)
    except ValueError:
        # A value the scheduler cannot read either: replace it with ours.
        return True


def time_left(rebalancer: Mapping[str, Any], now: datetime) -> timedelta | None:
    """How long a finished rebalancer is kept before deletion; None: kept for good (no
    ``ttlSecondsAfterFinished``, or not finished)."""
    ttl = rebalancer_spec(rebalancer).get("ttlSecondsAfterFinished")
    finished = rebalancer_status(rebalancer).get("finishTime")
    if ttl is None or not finished:
        return None
    return parse_time(finished) + timedelta(seconds=int(ttl)) - now
