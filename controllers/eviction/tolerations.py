"""Tolerations decides whether a binding may stay on a member with NoExecute taints, and how long.

Kubernetes' taint-manager semantics as Karmada applies them to clusters: only NoExecute taints
count; if one is tolerated by none of the placement's ``clusterTolerations`` the binding is
evicted now; otherwise it may stay for the shortest ``tolerationSeconds`` among the tolerations
used, counted from each taint's ``timeAdded`` (a toleration without seconds tolerates forever,
zero or less means not at all).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from controllers.api import Taint, Toleration
from controllers.scheduler.filter import tolerates

__all__ = ["Verdict", "no_execute_verdict"]


@dataclass(frozen=True)
class Verdict:
    """Evict now (``evict``), after ``after`` seconds, or never (``after`` None, not ``evict``)."""

    evict: bool
    after: float | None = None
    taint: Taint | None = None


def _added(taint: Taint, now: datetime) -> datetime:
    text = taint.get("timeAdded")
    if not text:
        return now  # not recorded: the seconds count from now
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return now


def no_execute_verdict(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], *, now: datetime | None = None
) -> Verdict:
    """Whether a binding tolerating ``tolerations`` must leave a cluster tainted ``taints``."""
    now = now or datetime.now(UTC)
    remaining: float | None = None
    for taint in taints:
        if taint.get("effect") != "NoExecute":
            continue
        used = [t for t in tolerations if tolerates(t, taint)]
        if not used:
            return Verdict(evict=True, taint=taint)
        seconds = [t["tolerationSeconds"] for t in used if t.get("tolerationSeconds") is not None]
        if not seconds:
            continue  # tolerated forever
        left = (_added(taint, now) - now).total_seconds() + max(0, min(seconds))
        if left <= 0:
            return Verdict(evict=True, taint=taint)
        remaining = left if remaining is None else min(remaining, left)
    return Verdict(evict=False, after=remaining)
