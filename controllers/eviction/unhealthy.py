"""Unhealthy decides which clusters an application failover evicts a binding from, and when.

Karmada's workloadUnhealthyMap and detectFailure (pkg/controllers/applicationfailover): per
binding, the time each target cluster's copy was first seen Unhealthy in
``status.aggregatedStatus[].health``. A cluster whose copy stays Unhealthy for
``decisionConditions.tolerationSeconds`` is evicted; one that turns Healthy, or leaves the
binding's ``spec.clusters``, loses its timer (the next Unhealthy starts from zero); Unknown
(status not collected, e.g. the member is unreachable) keeps the timer running, as in Karmada
since a transient gap must not restart the count. Clusters already being evicted are skipped.
The record lives in memory: a restarted controller-manager counts again from its first look.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from controllers.api import AggregatedStatusItem
from controllers.eviction.task import evicting_clusters

__all__ = ["DEFAULT_TOLERATION_SECONDS", "Decision", "UnhealthyTracker", "toleration_of"]

DEFAULT_TOLERATION_SECONDS: Final = 300
"""decisionConditions.tolerationSeconds when unset (Karmada's default)."""


@dataclass(frozen=True)
class Decision:
    """The clusters to evict now, and in how many seconds to look again (None: no need)."""

    evict: list[str] = field(default_factory=list)
    retry: float | None = None


def toleration_of(application: Mapping[str, Any]) -> float:
    """``decisionConditions.tolerationSeconds`` of an ApplicationFailoverBehavior (default 300)."""
    seconds = (application.get("decisionConditions") or {}).get("tolerationSeconds")
    return float(DEFAULT_TOLERATION_SECONDS if seconds is None else max(0, int(seconds)))


def _by_health(
    spec: Mapping[str, Any], aggregated: Sequence[AggregatedStatusItem]
) -> tuple[list[str], set[str]]:
    targets = {str(t.get("name", "")) for t in spec.get("clusters") or []}
    evicting = evicting_clusters(spec)
    unhealthy, healthy = [], set()
    for item in aggregated:
        cluster, health = str(item.get("clusterName", "")), item.get("health")
        if health == "Unhealthy" and cluster in targets and cluster not in evicting:
            unhealthy.append(cluster)
        elif health == "Healthy":
            healthy.add(cluster)
    return unhealthy, healthy


@dataclass
class UnhealthyTracker:
    """When each binding's copies turned Unhealthy (keys: the binding's namespace/name)."""

    clock: Callable[[], float] = time.monotonic
    _since: dict[str, dict[str, float]] = field(default_factory=dict)

    def forget(self, key: str) -> None:
        """Drop a binding's record (deleted, or no application failover any more)."""
        self._since.pop(key, None)

    def since(self, key: str) -> dict[str, float]:
        """A copy of the binding's record: cluster → when its copy was first seen Unhealthy."""
        return dict(self._since.get(key, {}))

    def detect(
        self,
        key: str,
        spec: Mapping[str, Any],
        aggregated: Sequence[AggregatedStatusItem],
        toleration: float,
    ) -> Decision:
        """Record what ``aggregated`` says and decide (see the module docstring)."""
        now = self.clock()
        record = self._since.setdefault(key, {})
        unhealthy, healthy = _by_health(spec, aggregated)
        evict: list[str] = []
        retry: float | None = None
        for cluster in unhealthy:
            left = record.setdefault(cluster, now) + toleration - now
            if left <= 0:
                evict.append(cluster)
            else:
                retry = left if retry is None else min(retry, left)
        targets = {str(t.get("name", "")) for t in spec.get("clusters") or []}
        for cluster in list(record):
            # An evicted cluster keeps its time until the eviction is written: a failed write
            # evicts again on the next look instead of counting afresh.
            if cluster in healthy or cluster not in targets:
                del record[cluster]
        if not record:
            del self._since[key]
        return Decision(evict=evict, retry=retry)
