"""Controller is Karmada's workload-rebalancer: WorkloadRebalancers → bindings rescheduled afresh.

For each workload of a WorkloadRebalancer not yet done (``observed.observed_workloads``), its
ResourceBinding (namespaced workload) or ClusterResourceBinding gets ``spec.rescheduleTriggeredAt``
set to the rebalancer's creation time unless it already holds a later one; the scheduler then
schedules the binding afresh (it does so while ``rescheduleTriggeredAt`` is after
``status.lastScheduledTime``). The workload is then Successful; without a binding it is Failed
with reason ``ReferencedBindingNotFound``; any other error leaves it open and the rebalancer is
retried with backoff. The status (observedWorkloads, observedGeneration) is written when it
changes, with ``finishTime`` once no workload is left open. A rebalancer with
``ttlSecondsAfterFinished`` is deleted that long after its finishTime (at its resourceVersion, so
a change made meanwhile is not lost). Only creations and spec changes are reconciled, as in
Karmada: a rebalancer is a one-off request.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import structlog

from controllers.api import (
    CLUSTER_RESOURCE_BINDING_GVK,
    REBALANCE_FAILED,
    REBALANCE_SUCCESSFUL,
    REFERENCED_BINDING_NOT_FOUND,
    RESOURCE_BINDING_GVK,
    WORKLOAD_REBALANCER_GVK,
    ObservedWorkload,
    rebalancer_status,
)
from controllers.binding import binding_name
from controllers.context import Context
from controllers.rbac import Permissions, Rule, cache
from controllers.workloadrebalancer.observed import needs_trigger, observed_workloads, time_left
from reconcile import (
    ApiError,
    CachedClient,
    Conflict,
    NotFound,
    Obj,
    Preconditions,
    Request,
    Result,
    controller_managed_by,
    generation_changed,
    generation_of,
    name_of,
)

__all__ = ["PERMISSIONS", "REBALANCER_NAME", "RebalanceIncomplete", "RebalancerController", "setup"]

REBALANCER_NAME: Final = "workload-rebalancer"

_BINDINGS: Final = ("resourcebindings", "clusterresourcebindings")
_APPS: Final = ("apps.karmada.io",)

PERMISSIONS: Final = Permissions(
    rules=(
        cache("apps.karmada.io", "workloadrebalancers"),
        Rule(_APPS, ("workloadrebalancers",), ("delete",), "ttlSecondsAfterFinished"),
        Rule(_APPS, ("workloadrebalancers/status",), ("update",), "observedWorkloads, finishTime"),
        cache("work.karmada.io", *_BINDINGS),
        Rule(("work.karmada.io",), _BINDINGS, ("get",), "a binding the cache has not seen yet"),
        Rule(("work.karmada.io",), _BINDINGS, ("update",), "spec.rescheduleTriggeredAt"),
    )
)
"""What the workload-rebalancer does on the host (see controllers.rbac)."""

log = structlog.get_logger("controllers.workloadrebalancer")

Clock = Callable[[], datetime]


class RebalanceIncomplete(RuntimeError):
    """Some workloads' bindings could not be triggered yet; the rebalancer is retried."""


def _now() -> datetime:
    return datetime.now(UTC)


def _timestamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class RebalancerController:
    """Reconciles WorkloadRebalancers (see the module docstring)."""

    def __init__(self, client: CachedClient, *, clock: Clock = _now) -> None:
        self.client = client
        self.clock = clock

    async def reconcile(self, request: Request) -> Result | None:
        """Trigger the workloads' rescheduling, record the outcome, delete after the TTL.

        Raises:
            RebalanceIncomplete: a binding could not be read or updated (retried with backoff).
            ApiError: the status write or the deletion failed.
        """
        try:
            rebalancer = await self.client.get(WORKLOAD_REBALANCER_GVK, request.name)
        except NotFound:
            return None
        observed = observed_workloads(rebalancer)
        created = str(rebalancer["metadata"].get("creationTimestamp", ""))
        pending = 0
        for item in observed:
            if item.get("result") in (REBALANCE_SUCCESSFUL, REBALANCE_FAILED):
                continue
            if not await self._trigger(item, created):
                pending += 1
        rebalancer = await self._write_status(rebalancer, observed, finished=pending == 0)
        if pending:
            raise RebalanceIncomplete(f"{pending} workloads' bindings not triggered yet")
        return await self._expire(rebalancer)

    async def _binding(self, workload: Mapping[str, Any]) -> Obj:
        namespace = str(workload.get("namespace") or "")
        gvk = RESOURCE_BINDING_GVK if namespace else CLUSTER_RESOURCE_BINDING_GVK
        name = binding_name(str(workload.get("kind", "")), str(workload.get("name", "")))
        try:
            return await self.client.get(gvk, name, namespace=namespace or None)
        except NotFound:
            # Missing is final (Failed): make sure it is not just the cache lagging behind.
            return await self.client.live.get(gvk, name, namespace=namespace or None)

    async def _trigger(self, item: ObservedWorkload, created: str) -> bool:
        """Set the workload's binding's rescheduleTriggeredAt; whether the workload is done."""
        workload = item.get("workload") or {}
        try:
            binding = await self._binding(workload)
            spec = binding.setdefault("spec", {})
            if needs_trigger(created, spec.get("rescheduleTriggeredAt")):
                spec["rescheduleTriggeredAt"] = created
                await self.client.update(binding)
        except NotFound:
            item["result"], item["reason"] = REBALANCE_FAILED, REFERENCED_BINDING_NOT_FOUND
            return True
        except (Conflict, ApiError) as error:
            log.info("cannot trigger the rescheduling yet", workload=workload, error=str(error))
            return False
        item["result"] = REBALANCE_SUCCESSFUL
        item.pop("reason", None)
        return True

    async def _write_status(
        self, rebalancer: Obj, observed: list[ObservedWorkload], *, finished: bool
    ) -> Obj:
        status = rebalancer_status(rebalancer)
        wanted: dict[str, Any] = {
            "observedWorkloads": observed,
            "observedGeneration": generation_of(rebalancer),
        }
        if status.get("finishTime"):
            wanted["finishTime"] = status["finishTime"]
        if wanted == dict(status):
            return rebalancer
        if finished:
            # A new outcome: the rebalancer finished (again) now.
            wanted["finishTime"] = _timestamp(self.clock())
        updated = copy.deepcopy(rebalancer)
        updated["status"] = wanted
        return await self.client.update_status(updated)

    async def _expire(self, rebalancer: Obj) -> Result | None:
        remaining = time_left(rebalancer, self.clock())
        if remaining is None:
            return None
        if remaining.total_seconds() > 0:
            return Result(requeue_after=remaining.total_seconds())
        log.info("deleting a finished rebalancer", rebalancer=name_of(rebalancer))
        try:
            await self.client.delete(rebalancer, preconditions=Preconditions.of(rebalancer))
        except NotFound:
            return None
        return None


def setup(context: Context) -> None:
    """Register the workload-rebalancer with ``context.manager``."""
    manager = context.manager
    (
        controller_managed_by(manager)
        .named(REBALANCER_NAME)
        # Creations and spec changes only (Karmada's predicate): status writes are our own.
        .for_(WORKLOAD_REBALANCER_GVK, generation_changed)
        .complete(RebalancerController(manager.client))
    )
