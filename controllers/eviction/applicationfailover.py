"""ApplicationFailover evicts bindings from clusters where their application stays unhealthy.

Karmada's application failover controllers (pkg/controllers/applicationfailover: one for
ResourceBindings, one for ClusterResourceBindings; here one controller, ``application-failover``,
over both). It looks at bindings whose ``spec.failover.application`` is set (copied from the
policy by the detector), that have an aggregated status and whose kind has an InterpretHealth
rule (without one every copy counts Healthy). ``UnhealthyTracker`` decides: a target cluster
whose copy stayed Unhealthy for ``decisionConditions.tolerationSeconds`` (default 300) is evicted
with ``task.evict`` — reason ``ApplicationFailure``, producer Karmada's controller name
(``resource-binding-application-failover-controller``, ``cluster-resource-binding-...``), the
policy's ``purgeMode`` (default Graciously; Graciously/Gracefully also carry
``gracePeriodSeconds``, Never sets ``suppressDeletion``), ``preservedLabelState`` from the
``statePreservation`` rules against the failed cluster's collected status, and
``clustersBeforeFailover``. The scheduler then places the replicas elsewhere and the
graceful-eviction controller removes the task. A Normal Event ``EvictWorkloadFromClusterSucceed``
(Warning ``EvictWorkloadFromClusterFailed``) tells the binding's owner; state that cannot be
extracted (status not collected yet, a bad jsonPath) is a Warning Event and the eviction waits.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

import structlog

from controllers.api import (
    CLUSTER_RESOURCE_BINDING_GVK,
    RESOURCE_BINDING_GVK,
    binding_spec,
    binding_status,
    target_cluster_names,
)
from controllers.context import BINDINGS, Context
from controllers.eviction.preservation import StatePreservationError, preserved_label_state
from controllers.eviction.task import (
    EVICTION_REASON_APPLICATION_FAILURE,
    PURGE_MODE_GRACEFULLY,
    PURGE_MODE_GRACIOUSLY,
    PURGE_MODE_NEVER,
    TASK_PURGE_MODES,
    evict,
)
from controllers.eviction.unhealthy import UnhealthyTracker, toleration_of
from controllers.interpreter import Interpreter, Operation
from controllers.rbac import Permissions, Rule, cache
from reconcile import (
    GVK,
    ApiError,
    CachedClient,
    EnqueueRequestForObject,
    Event,
    EventRecorder,
    NotFound,
    Obj,
    Request,
    Result,
    controller_managed_by,
    is_being_deleted,
    namespace_of,
)

__all__ = [
    "CLUSTER_RESOURCE_BINDING_PRODUCER",
    "CONTROLLER_NAME",
    "PERMISSIONS",
    "PRESERVATION_RETRY",
    "RESOURCE_BINDING_PRODUCER",
    "ApplicationFailoverController",
    "application_failover_of",
    "setup",
    "task_options",
    "with_application_failover",
]

CONTROLLER_NAME: Final = "application-failover"
RESOURCE_BINDING_PRODUCER: Final = "resource-binding-application-failover-controller"
CLUSTER_RESOURCE_BINDING_PRODUCER: Final = (
    "cluster-resource-binding-application-failover-controller"
)
PRESERVATION_RETRY: Final = 5.0
"""Seconds before an eviction whose state could not be extracted is tried again."""
DEFAULT_PURGE_MODE: Final = PURGE_MODE_GRACIOUSLY
"""The purge mode of a policy that sets none (Karmada's CRD default)."""
PERMISSIONS: Final = Permissions(
    rules=(
        cache("work.karmada.io", "resourcebindings", "clusterresourcebindings"),
        Rule(
            ("work.karmada.io",),
            ("resourcebindings", "clusterresourcebindings"),
            ("update",),
            "evictions: spec.clusters into spec.gracefulEvictionTasks",
        ),
    )
)
"""What the application-failover controller does on the host (see controllers.rbac)."""

log = structlog.get_logger("controllers.eviction.applicationfailover")


def application_failover_of(binding: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The binding's ``spec.failover.application``, None when unset."""
    application = (binding_spec(binding).get("failover") or {}).get("application")
    return application if isinstance(application, Mapping) else None


def task_options(application: Mapping[str, Any]) -> dict[str, Any]:
    """The purge mode, grace period and suppression an application failover's tasks get
    (Karmada's buildTaskOptions)."""
    mode = application.get("purgeMode") or DEFAULT_PURGE_MODE
    options: dict[str, Any] = {
        "purge_mode": mode if mode in TASK_PURGE_MODES else DEFAULT_PURGE_MODE
    }
    if mode in (PURGE_MODE_GRACIOUSLY, PURGE_MODE_GRACEFULLY):
        seconds = application.get("gracePeriodSeconds")
        options["grace_period_seconds"] = None if seconds is None else int(seconds)
    elif mode == PURGE_MODE_NEVER:
        options["suppress_deletion"] = True
    return options


def _gvk(request: Request) -> GVK:
    return RESOURCE_BINDING_GVK if request.namespace else CLUSTER_RESOURCE_BINDING_GVK


def _key(request: Request) -> str:
    return f"{request.namespace}/{request.name}" if request.namespace else request.name


class ApplicationFailoverController:
    """Evicts bindings from clusters whose copy stays unhealthy (see the module docstring)."""

    def __init__(
        self,
        client: CachedClient,
        recorder: EventRecorder,
        interpreter: Interpreter,
        tracker: UnhealthyTracker | None = None,
    ) -> None:
        self.client, self.recorder, self.interpreter = client, recorder, interpreter
        self.tracker = tracker or UnhealthyTracker()

    def _applies(self, binding: Obj) -> bool:
        if is_being_deleted(binding) or application_failover_of(binding) is None:
            return False
        if not binding_status(binding).get("aggregatedStatus"):
            return False
        resource = binding_spec(binding).get("resource") or {}
        try:
            gvk = GVK.from_api_version(resource.get("apiVersion", ""), resource.get("kind", ""))
        except ValueError:
            return False
        return self.interpreter.handles(gvk, Operation.INTERPRET_HEALTH)

    async def reconcile(self, request: Request) -> Result | None:
        """Record the binding's unhealthy copies; evict those past their toleration.

        Raises:
            ApiError: the binding update failed (e.g. Conflict); retried with backoff.
        """
        key = _key(request)
        try:
            binding = await self.client.get(
                _gvk(request), request.name, namespace=request.namespace or None
            )
        except NotFound:
            self.tracker.forget(key)
            return None
        application = application_failover_of(binding)
        if application is None or not self._applies(binding):
            self.tracker.forget(key)
            return None
        aggregated = binding_status(binding).get("aggregatedStatus") or []
        decision = self.tracker.detect(
            key, binding_spec(binding), aggregated, toleration_of(application)
        )
        retry = decision.retry
        if decision.evict and not await self._evict(binding, application, decision.evict):
            retry = PRESERVATION_RETRY if retry is None else min(retry, PRESERVATION_RETRY)
        return None if retry is None else Result(requeue_after=max(retry, 0.1))

    def _tasks(
        self, binding: Obj, application: Mapping[str, Any], clusters: list[str]
    ) -> Obj | None:
        """A copy of ``binding`` with ``clusters`` evicted; None (and an Event) when the state
        to preserve cannot be extracted."""
        updated = copy.deepcopy(binding)
        before = target_cluster_names(binding)
        aggregated = binding_status(binding).get("aggregatedStatus") or []
        producer = (
            RESOURCE_BINDING_PRODUCER
            if namespace_of(binding)
            else CLUSTER_RESOURCE_BINDING_PRODUCER
        )
        options = task_options(application)
        seconds = int(toleration_of(application))
        for cluster in clusters:
            try:
                state = preserved_label_state(
                    application.get("statePreservation"), aggregated, cluster
                )
            except StatePreservationError as error:
                text = f"Evict from cluster {cluster} failed: {error}"
                self.recorder.event(binding, "Warning", "EvictWorkloadFromClusterFailed", text)
                return None
            evict(
                updated["spec"],
                cluster,
                reason=EVICTION_REASON_APPLICATION_FAILURE,
                producer=producer,
                message=f"the application has been unhealthy in cluster {cluster} for "
                f"{seconds}s or more",
                preserved_label_state=state,
                clusters_before_failover=before if state else None,
                **options,
            )
        return updated

    async def _evict(
        self, binding: Obj, application: Mapping[str, Any], clusters: list[str]
    ) -> bool:
        """Write the evictions; False when they wait for the state to preserve."""
        updated = self._tasks(binding, application, clusters)
        if updated is None:
            return False
        try:
            await self.client.update(updated)
        except ApiError as error:
            for cluster in clusters:
                text = f"Evict from cluster {cluster} failed: {error}"
                self.recorder.event(binding, "Warning", "EvictWorkloadFromClusterFailed", text)
            raise
        for cluster in clusters:
            log.info("evicted: application unhealthy", cluster=cluster)
            text = f"Evict from cluster {cluster} succeed: the application is unhealthy there"
            self.recorder.event(updated, "Normal", "EvictWorkloadFromClusterSucceed", text)
        return True


def with_application_failover(event: Event) -> bool:
    """Pass bindings that have (or had) ``spec.failover.application`` (Karmada's predicate)."""
    if application_failover_of(event.obj) is not None:
        return True
    return event.old is not None and application_failover_of(event.old) is not None


def setup(context: Context) -> None:
    """Register the application-failover controller with ``context.manager``."""
    manager = context.manager
    recorder = context.recorder(CONTROLLER_NAME)
    reconciler = ApplicationFailoverController(manager.client, recorder, context.interpreter)
    builder = (
        controller_managed_by(manager)
        .named(CONTROLLER_NAME)
        .for_(RESOURCE_BINDING_GVK, with_application_failover)
        .watches(CLUSTER_RESOURCE_BINDING_GVK, EnqueueRequestForObject(), with_application_failover)
    )
    context.complete(builder, reconciler, sharded_by=BINDINGS)
