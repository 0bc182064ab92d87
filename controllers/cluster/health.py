"""Health is the cluster controller's monitor: Ready turns Unknown when nobody reports on a member.

Karmada's monitorClusterHealth: every ``monitor_period`` (``--cluster-monitor-period``, 5 s) each
Cluster's Ready condition and Lease (``lease``) are compared with what was last seen; when
neither moved for ``grace_period`` (``--cluster-monitor-grace-period``, 40 s; for a Cluster that
never had a Ready condition ``startup_grace_period``, ``--cluster-startup-grace-period``, 60 s,
counted from its creation), Ready is set Unknown with reason ``ClusterStatusUnknown`` (or added
as ``ClusterStatusNeverUpdated``). The cluster controller then swaps its NoSchedule taint to
``cluster.karmada.io/unreachable``. Times are this process's monotonic clock, never the
timestamps other processes wrote, as in Karmada. Karmada applies the timeout to Pull clusters
only (in Push mode its status controller shares the process); here the cluster-status controller
may be run apart or stopped (``--controllers``), so every Cluster is watched.
"""

from __future__ import annotations

import argparse
import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, Self

import anyio
import structlog

from controllers.api import CLUSTER_GVK, READY_CONDITION
from controllers.cluster.lease import cluster_lease_renew_time
from controllers.duration import parse_duration
from controllers.flags import FlagSet
from reconcile import Condition, Conflict, Manager, NotFound, get_condition, set_condition

__all__ = [
    "CLUSTER_STATUS_NEVER_UPDATED_REASON",
    "CLUSTER_STATUS_UNKNOWN_REASON",
    "ClusterHealthOptions",
    "HealthMonitor",
    "stale_condition",
]

CLUSTER_STATUS_UNKNOWN_REASON: Final = "ClusterStatusUnknown"
CLUSTER_STATUS_NEVER_UPDATED_REASON: Final = "ClusterStatusNeverUpdated"
DEFAULT_MONITOR_PERIOD: Final = 5.0
DEFAULT_MONITOR_GRACE_PERIOD: Final = 40.0
DEFAULT_STARTUP_GRACE_PERIOD: Final = 60.0

log = structlog.get_logger("controllers.cluster.health")


@dataclass(frozen=True)
class ClusterHealthOptions:
    """How often the monitor looks, and how long a silent member keeps its Ready condition.

    All in seconds; Karmada's defaults.

    Raises:
        ValueError: a period is not positive.
    """

    monitor_period: float = DEFAULT_MONITOR_PERIOD
    grace_period: float = DEFAULT_MONITOR_GRACE_PERIOD
    startup_grace_period: float = DEFAULT_STARTUP_GRACE_PERIOD

    def __post_init__(self) -> None:
        for name in ("monitor_period", "grace_period", "startup_grace_period"):
            if getattr(self, name) <= 0:
                raise ValueError(f"cluster {name.replace('_', ' ')} must be positive")

    @classmethod
    def add_flags(cls, flags: FlagSet) -> None:
        """Register karmada-controller-manager's ``--cluster-monitor-*`` and
        ``--cluster-startup-grace-period``, with its defaults."""
        defaults = cls()
        flags.add_argument(
            "--cluster-monitor-period",
            type=parse_duration,
            default=defaults.monitor_period,
            help="how often the cluster controller checks that members are reported on "
            "(default 5s)",
        )
        flags.add_argument(
            "--cluster-monitor-grace-period",
            type=parse_duration,
            default=defaults.grace_period,
            help="how long a member's status and Lease may stand still before Ready is Unknown "
            "(default 40s)",
        )
        flags.add_argument(
            "--cluster-startup-grace-period",
            type=parse_duration,
            default=defaults.startup_grace_period,
            help="the same for a Cluster that never had a Ready condition, from its creation "
            "(default 1m)",
        )

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Self:
        """The options ``add_flags``' flags set.

        Raises:
            ValueError: as the constructor.
        """
        return cls(
            monitor_period=args.cluster_monitor_period,
            grace_period=args.cluster_monitor_grace_period,
            startup_grace_period=args.cluster_startup_grace_period,
        )


def stale_condition(current: Condition | None) -> Condition:
    """The Ready condition the monitor writes for a member nobody reports on."""
    if current is None:
        return Condition(
            type=READY_CONDITION,
            status="Unknown",
            reason=CLUSTER_STATUS_NEVER_UPDATED_REASON,
            message="Cluster status controller never posted cluster status.",
        )
    return Condition(
        type=READY_CONDITION,
        status="Unknown",
        reason=CLUSTER_STATUS_UNKNOWN_REASON,
        message="Cluster status controller stopped posting cluster status.",
    )


@dataclass
class _Seen:
    condition: Condition | None
    renewed: str | None
    probed: float  # monotonic time the condition or the Lease last moved


def _age(cluster: Mapping[str, Any], wall: Callable[[], datetime]) -> float:
    created = (cluster.get("metadata") or {}).get("creationTimestamp")
    if not created:
        return 0.0
    try:
        then = datetime.fromisoformat(str(created).replace("Z", "+00:00"))
    except ValueError:
        return 0.0
    return max(0.0, (wall() - then).total_seconds())


class HealthMonitor:
    """Marks Ready Unknown on Clusters whose status and Lease stopped moving (module docstring)."""

    def __init__(
        self,
        manager: Manager,
        options: ClusterHealthOptions,
        lease_namespace: str,
        *,
        clock: Callable[[], float] = anyio.current_time,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.manager, self.options, self.lease_namespace = manager, options, lease_namespace
        self.clock, self.wall = clock, wall
        self._seen: dict[str, _Seen] = {}

    async def run(self) -> None:
        """Check every Cluster each monitor period, until cancelled (leader only)."""
        while True:
            await self.check_all()
            await anyio.sleep(self.options.monitor_period)

    async def check_all(self) -> None:
        """One pass over every Cluster; a failure on one is logged and the others go on."""
        clusters = await self.manager.client.list_all(CLUSTER_GVK)
        names = set()
        for cluster in clusters:
            name = str(cluster["metadata"]["name"])
            names.add(name)
            try:
                await self.check(cluster)
            except (Conflict, NotFound):
                pass  # changed or gone meanwhile: the next pass sees the new state
            except Exception as error:  # the monitor must keep watching the other members
                log.warning("cluster health check failed", cluster=name, error=str(error))
        for gone in set(self._seen) - names:
            del self._seen[gone]

    async def check(self, cluster: Mapping[str, Any]) -> bool:
        """Check one Cluster; returns whether its Ready condition was set Unknown."""
        name = str(cluster["metadata"]["name"])
        current = get_condition(cluster, READY_CONDITION)
        renewed = await cluster_lease_renew_time(
            self.manager.api_reader, name, self.lease_namespace
        )
        now = self.clock()
        seen = self._seen.get(name)
        if seen is None:
            # New to this process: a Cluster never reported on counts from its creation.
            probed = now - _age(cluster, self.wall) if current is None else now
            seen = self._seen[name] = _Seen(current, renewed, probed)
        if seen.condition != current or (renewed is not None and renewed != seen.renewed):
            seen.condition, seen.renewed, seen.probed = current, renewed, now
        grace = self.options.startup_grace_period if current is None else self.options.grace_period
        if now - seen.probed <= grace:
            return False
        if current is not None and current.get("status") == "Unknown":
            return False
        return await self._mark_unknown(cluster, current)

    async def _mark_unknown(self, cluster: Mapping[str, Any], current: Condition | None) -> bool:
        wanted = stale_condition(current)
        updated = copy.deepcopy(dict(cluster))
        if not isinstance(updated.get("status"), dict):
            updated["status"] = {}
        set_condition(
            updated, READY_CONDITION, "Unknown", wanted["reason"], wanted.get("message", "")
        )
        log.info("cluster status is stale", cluster=updated["metadata"]["name"])
        await self.manager.client.update_status(updated)
        return True
