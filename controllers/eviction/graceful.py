"""GracefulEviction removes a binding's eviction tasks once the new placement no longer needs them.

Karmada's graceful-eviction controllers (one for ResourceBindings, one for ClusterResourceBindings;
here one controller over both). A binding is looked at only once the scheduler has seen its latest
generation (``status.schedulerObservedGeneration``), so a task is never judged against a placement
that is not the new one yet. Each task (``assess_tasks``) is dropped when its ``suppressDeletion``
is false, when its time is up (``gracePeriodSeconds``, else ``--graceful-eviction-timeout``,
counted from ``creationTimestamp``), or when every cluster of ``spec.clusters`` (not empty: no
new placement yet is not a healthy one) reports the resource Healthy in
``status.aggregatedStatus``; it is kept while ``suppressDeletion`` is true or
its purge mode is Never. Dropping the task lets the binding controller delete the old cluster's
Work. A task without ``creationTimestamp`` gets one. The binding is looked at again when the
next task times out (at most a tenth of the timeout later), and on every status change.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import structlog

from controllers.api import (
    CLUSTER_RESOURCE_BINDING_GVK,
    RESOURCE_BINDING_GVK,
    AggregatedStatusItem,
    GracefulEvictionTask,
    binding_spec,
    binding_status,
)
from controllers.context import BINDINGS, Context
from controllers.eviction.task import PURGE_MODE_NEVER, timestamp
from controllers.rbac import Permissions, Rule, cache
from reconcile import (
    GVK,
    CachedClient,
    EnqueueRequestForObject,
    Event,
    NotFound,
    Request,
    Result,
    controller_managed_by,
    generation_of,
    is_being_deleted,
)

__all__ = [
    "CONTROLLER_NAME",
    "PERMISSIONS",
    "Assessment",
    "GracefulEvictionController",
    "assess_tasks",
    "setup",
]

CONTROLLER_NAME: Final = "graceful-eviction"
PERMISSIONS: Final = Permissions(
    rules=(
        cache("work.karmada.io", "resourcebindings", "clusterresourcebindings"),
        Rule(
            ("work.karmada.io",),
            ("resourcebindings", "clusterresourcebindings"),
            ("update",),
            "spec.gracefulEvictionTasks",
        ),
    )
)
"""What the graceful-eviction controller does on the host (see controllers.rbac)."""

log = structlog.get_logger("controllers.eviction.graceful")


@dataclass(frozen=True)
class Assessment:
    """The tasks to keep, the clusters whose tasks end, and when to look again (None: never)."""

    kept: list[GracefulEvictionTask] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)
    retry: float | None = None


def _parse(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _all_healthy(spec: Mapping[str, Any], items: Sequence[AggregatedStatusItem]) -> bool:
    health = {item.get("clusterName"): item.get("health") for item in items}
    targets = spec.get("clusters") or []
    # No new placement (nowhere left to go, or not scheduled yet) is not a healthy one.
    return bool(targets) and all(health.get(t.get("name")) == "Healthy" for t in targets)


def _held(task: GracefulEvictionTask) -> bool | None:
    """True: kept whatever happens; False: dropped at once; None: judged by time and health."""
    suppress = task.get("suppressDeletion")
    if suppress is not None:
        return bool(suppress)
    return True if task.get("purgeMode") == PURGE_MODE_NEVER else None


def assess_tasks(
    spec: Mapping[str, Any],
    aggregated: Sequence[AggregatedStatusItem],
    timeout: float,
    *,
    now: datetime | None = None,
) -> Assessment:
    """Which of ``spec.gracefulEvictionTasks`` stay (see the module docstring)."""
    now = now or datetime.now(UTC)
    healthy = _all_healthy(spec, aggregated)
    kept: list[GracefulEvictionTask] = []
    evicted: list[str] = []
    retry: float | None = None
    for task in spec.get("gracefulEvictionTasks") or []:
        created = _parse(task.get("creationTimestamp"))
        if created is None:
            stamped = copy.deepcopy(task)
            stamped["creationTimestamp"] = timestamp(now)
            kept.append(stamped)
            retry = timeout if retry is None else min(retry, timeout)
            continue
        held = _held(task)
        seconds = task.get("gracePeriodSeconds")
        limit = float(seconds) if seconds is not None else timeout
        left = (created - now).total_seconds() + limit
        if held is True or (held is None and left > 0 and not healthy):
            kept.append(task)
            if held is None:
                retry = min(left, timeout / 10) if retry is None else min(retry, left)
        else:
            evicted.append(str(task.get("fromCluster", "")))
    return Assessment(kept=kept, evicted=evicted, retry=retry)


def _gvk(request: Request) -> GVK:
    return RESOURCE_BINDING_GVK if request.namespace else CLUSTER_RESOURCE_BINDING_GVK


class GracefulEvictionController:
    """Drops finished GracefulEvictionTasks of bindings (see the module docstring)."""

    def __init__(self, client: CachedClient, timeout: float) -> None:
        self.client, self.timeout = client, timeout

    async def reconcile(self, request: Request) -> Result | None:
        """Assess one binding's eviction tasks and write the ones that stay.

        Raises:
            ApiError: the update failed (e.g. Conflict); retried with backoff.
        """
        try:
            binding = await self.client.get(
                _gvk(request), request.name, namespace=request.namespace or None
            )
        except NotFound:
            return None
        spec = binding_spec(binding)
        if is_being_deleted(binding) or not spec.get("gracefulEvictionTasks"):
            return None
        status = binding_status(binding)
        if status.get("schedulerObservedGeneration") != generation_of(binding):
            return None  # the scheduler's write brings it back
        result = assess_tasks(spec, status.get("aggregatedStatus") or [], self.timeout)
        if result.kept != spec.get("gracefulEvictionTasks"):
            updated = copy.deepcopy(binding)
            updated["spec"]["gracefulEvictionTasks"] = result.kept
            await self.client.update(updated)
            if result.evicted:
                log.info("eviction tasks done", clusters=", ".join(result.evicted))
        return None if result.retry is None else Result(requeue_after=max(result.retry, 0.1))


def evicting(event: Event) -> bool:
    """Pass bindings that have eviction tasks (Karmada's predicate; the generation is checked in
    reconcile, so an event that comes too early is not lost)."""
    return bool(binding_spec(event.obj).get("gracefulEvictionTasks"))


def setup(context: Context) -> None:
    """Register the graceful-eviction controller with ``context.manager``."""
    manager = context.manager
    reconciler = GracefulEvictionController(
        manager.client, context.failover.graceful_eviction_timeout
    )
    builder = (
        controller_managed_by(manager)
        .named(CONTROLLER_NAME)
        .for_(RESOURCE_BINDING_GVK, evicting)
        .watches(CLUSTER_RESOURCE_BINDING_GVK, EnqueueRequestForObject(), evicting)
    )
    context.complete(builder, reconciler, sharded_by=BINDINGS)
