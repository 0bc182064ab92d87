"""SchedulerController runs the scheduling algorithm on bindings: placement → ``spec.clusters``.

It is Karmada's scheduler as a controller over ResourceBindings and ClusterResourceBindings (one
queue: a Request with a namespace is a ResourceBinding, without one a ClusterResourceBinding).
Only bindings a propagation policy claims (or ``binding.karmada.io/managed-by`` labels) and whose
``schedulerName`` is ``default-scheduler`` are scheduled; scheduling is suspended by
``spec.suspension.scheduling``. A binding is (re)scheduled when it was never scheduled or its last
attempt failed, its placement changed (``policy.karmada.io/applied-placement``), its replicas
changed, a reschedule was requested (``spec.rescheduleTriggeredAt``), a target cluster is gone or
being deleted, and — as in Karmada — always when it is Duplicated or has no replicas (a new
cluster may fit). The result is written only when it differs: ``spec.clusters`` and the
applied-placement annotation, then the status (condition Scheduled, schedulerObservedGeneration,
lastScheduledTime, schedulerObservingAffinityName). A failure keeps the previous clusters, sets
Scheduled False (NoClusterFit with each cluster's reason, or Unschedulable), records an Event and
is retried when Clusters change, or after ``UNSCHEDULABLE_RETRY`` seconds. A binding whose fields
lack the CRD's types is Unschedulable naming them (a status of the wrong type is replaced).

Cluster changes that can matter (labels, spec, deletion, API enablements, readiness) re-enqueue the
bindings that are not scheduled, that target the cluster, or that are Duplicated / replica-less.

The result's spec write is a generation change, so it enqueues the binding again; a reconcile that
finds in the cache exactly the version that write returned knows the status write that followed
it is not in the cache yet: it looks again shortly, rather than schedule that stale view again and
have its status write refused (a Conflict, then a live read: 0.23 of each per template at 1,000
templates on 2 members, docs/benchmarks.md).
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

import structlog

from controllers.api import (
    APPLIED_PLACEMENT_ANNOTATION,
    CLUSTER_GVK,
    CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL,
    CLUSTER_RESOURCE_BINDING_GVK,
    DUPLICATED,
    PROPAGATION_POLICY_PERMANENT_ID_LABEL,
    READY_CONDITION,
    RESOURCE_BINDING_GVK,
    SCHEDULED_CONDITION,
    binding_spec,
    replica_scheduling_type_of,
    target_cluster_names,
    target_clusters,
)
from controllers.context import BINDINGS, Context
from controllers.rbac import Permissions, Rule, cache
from controllers.scheduler.assign import reschedule_requested
from controllers.scheduler.scheduler import (
    ScheduleResult,
    applied_placement,
    binding_problems,
    placement_changed,
    replicas_changed,
    schedule,
    scheduled_condition,
)
from reconcile import (
    GVK,
    CachedClient,
    Conflict,
    EnqueueRequestForObject,
    EnqueueRequestsFromMapFunc,
    Event,
    EventRecorder,
    EventType,
    NotFound,
    Obj,
    Reader,
    Request,
    Result,
    SharedInformer,
    controller_managed_by,
    generation_changed,
    generation_of,
    get_condition,
    is_being_deleted,
    is_condition_true,
    labels_changed,
    labels_of,
    name_of,
    or_,
    resource_version_of,
    set_condition,
    uid_of,
)

__all__ = [
    "PERMISSIONS",
    "CONFLICT_RETRY",
    "DEFAULT_SCHEDULER_NAME",
    "DEFAULT_WORKERS",
    "MANAGED_BY_LABEL",
    "MAX_LISTED_CLUSTERS",
    "SCHEDULER_NAME",
    "SchedulerController",
    "UNSCHEDULABLE_RETRY",
    "cluster_changed",
    "condition_message",
    "is_ours",
    "schedule_reason",
    "setup",
]

PERMISSIONS: Final = Permissions(
    rules=(
        cache("work.karmada.io", "resourcebindings", "clusterresourcebindings"),
        Rule(
            ("work.karmada.io",),
            ("resourcebindings", "clusterresourcebindings"),
            ("get",),
            "a live read after a conflict",
        ),
        Rule(
            ("work.karmada.io",),
            ("resourcebindings", "clusterresourcebindings"),
            ("update",),
            "spec.clusters",
        ),
        Rule(
            ("work.karmada.io",),
            ("resourcebindings/status", "clusterresourcebindings/status"),
            ("update",),
            "Scheduled, observed generation",
        ),
        cache("cluster.karmada.io", "clusters"),
    )
)
"""What the scheduler does on the host (see controllers.rbac)."""

SCHEDULER_NAME: Final = "scheduler"
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
MANAGED_BY_LABEL: Final = "binding.karmada.io/managed-by"
UNSCHEDULABLE_RETRY: Final = 60.0
"""Seconds before a binding that could not be scheduled is tried again without any change."""
CONFLICT_RETRY: Final = 0.2
"""Seconds before a binding whose write hit a conflict again after a live read is retried."""
DEFAULT_WORKERS: Final = 5
"""Bindings scheduled in parallel. Each waits on two writes (spec, then status); one worker would
cap a burst of new bindings at the apiserver's write latency (Karmada's syncs default to 5)."""
MAX_LISTED_CLUSTERS: Final = 20
"""Refused clusters named, with their reason, in a failed Scheduled condition."""

log = structlog.get_logger("controllers.scheduler")


def _gvk(request: Request) -> GVK:
    return RESOURCE_BINDING_GVK if request.namespace else CLUSTER_RESOURCE_BINDING_GVK


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def is_ours(binding: Mapping[str, Any]) -> bool:
    """Whether this scheduler schedules ``binding``: claimed, ours by name, not suspended."""
    labels = labels_of(binding)
    claimed = any(
        labels.get(key)
        for key in (
            PROPAGATION_POLICY_PERMANENT_ID_LABEL,
            CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL,
            MANAGED_BY_LABEL,
        )
    )
    spec = binding_spec(binding)
    name = spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME
    suspension = spec.get("suspension")
    # A suspension of the wrong type suspends nothing; schedule() reports the binding invalid.
    suspended = isinstance(suspension, Mapping) and bool(suspension.get("scheduling"))
    return claimed and name == DEFAULT_SCHEDULER_NAME and not suspended


def _gone_targets(binding: Mapping[str, Any], clusters: Iterable[Mapping[str, Any]]) -> list[str]:
    present = {name_of(c) for c in clusters if not is_being_deleted(c)}
    return [t.get("name", "") for t in target_clusters(binding) if t.get("name") not in present]


def schedule_reason(
    binding: Mapping[str, Any], clusters: Iterable[Mapping[str, Any]]
) -> str | None:
    """Why ``binding`` must be scheduled now, None when its current result stands."""
    spec = binding_spec(binding)
    if binding_problems(binding):
        # The checks below read these fields; schedule() reports them.
        return "invalid binding"
    if not is_condition_true(binding, SCHEDULED_CONDITION):
        return "not scheduled yet"
    if placement_changed(binding):
        return "placement changed"
    if replicas_changed(binding):
        return "replicas changed"
    if reschedule_requested(binding):
        return "reschedule requested"
    gone = _gone_targets(binding, clusters)
    if gone:
        return f"target clusters gone: {', '.join(gone)}"
    if not spec.get("replicas") or replica_scheduling_type_of(spec.get("placement")) == DUPLICATED:
        return "duplicated"
    return None


def _with_result(binding: Obj, result: ScheduleResult) -> Obj:
    """A copy of ``binding`` with the scheduling result in spec and annotations."""
    updated = copy.deepcopy(binding)
    updated["spec"]["clusters"] = [dict(t) for t in result.clusters]
    annotations = updated["metadata"].setdefault("annotations", {})
    annotations[APPLIED_PLACEMENT_ANNOTATION] = applied_placement(
        binding_spec(binding).get("placement") or {}
    )
    return updated


def condition_message(result: ScheduleResult) -> str:
    """The Scheduled condition's message: on failure, also each refused cluster's reason."""
    message = scheduled_condition(result).get("message", "")
    if result.scheduled or not result.rejected:
        return message
    refused = sorted(result.rejected.items())
    shown = "; ".join(f"{cluster}: {why}" for cluster, why in refused[:MAX_LISTED_CLUSTERS])
    more = len(refused) - MAX_LISTED_CLUSTERS
    return f"{message} Refused: {shown}" + (f"; and {more} more" if more > 0 else "")


def _repair_status(binding: Obj) -> None:
    # A status or conditions of the wrong type (binding_problems reports it) is replaced, so the
    # Scheduled condition can still be written; the status is the controllers' own.
    if not isinstance(binding.get("status"), dict):
        binding["status"] = {}
    conditions = binding["status"].get("conditions")
    if conditions is not None and not (
        isinstance(conditions, list) and all(isinstance(c, dict) for c in conditions)
    ):
        binding["status"]["conditions"] = []


def _with_status(binding: Obj, result: ScheduleResult, spec_written: bool) -> Obj:
    """A copy of ``binding`` with the status for ``result`` (lastScheduledTime only on writes and
    requested reschedules)."""
    updated = copy.deepcopy(binding)
    _repair_status(updated)
    condition = scheduled_condition(result)
    set_condition(
        updated,
        SCHEDULED_CONDITION,
        condition["status"],
        condition.get("reason", ""),
        condition_message(result),
    )
    status = updated.setdefault("status", {})
    if result.scheduled:
        status["schedulerObservedGeneration"] = generation_of(updated)
        # A requested reschedule is done even when its result is the current one (Karmada sets
        # lastScheduledTime on every successful scheduling).
        if spec_written or not status.get("lastScheduledTime") or reschedule_requested(binding):
            status["lastScheduledTime"] = _now()
        if result.affinity_name:
            status["schedulerObservingAffinityName"] = result.affinity_name
        else:
            status.pop("schedulerObservingAffinityName", None)
    return updated


REMEMBERED_RESULTS: Final = 4096
"""Bindings whose spec and status writes the cache may not have seen yet, remembered at most."""


class WrittenResults:
    """The version each binding's result spec write returned, when its status write followed.

    A cached binding at exactly that version is the moment between our two writes: the status is
    written already, the cache has not seen it yet. Any other version forgets the entry.
    """

    def __init__(self, size: int = REMEMBERED_RESULTS) -> None:
        self.size = size
        self._versions: OrderedDict[str, str] = OrderedDict()

    def __len__(self) -> int:
        return len(self._versions)

    def note(self, spec_written: Obj) -> None:
        """Remember ``spec_written`` (what the spec write returned) once its status is written."""
        self._versions[uid_of(spec_written)] = resource_version_of(spec_written)
        self._versions.move_to_end(uid_of(spec_written))
        while len(self._versions) > self.size:
            self._versions.popitem(last=False)

    def between_writes(self, cached: Obj) -> bool:
        """Whether ``cached`` is the version a spec write of ours returned before its status
        write; forgets the binding otherwise (the cache is past it, or never saw it)."""
        version = self._versions.pop(uid_of(cached), None)
        if version is not None and version == resource_version_of(cached):
            self._versions[uid_of(cached)] = version  # until the cache moves on
            return True
        return False


class SchedulerController:
    """Schedules ResourceBindings and ClusterResourceBindings (see the module docstring)."""

    def __init__(self, client: CachedClient, recorder: EventRecorder) -> None:
        self.client = client
        self.recorder = recorder
        self.written = WrittenResults()

    async def reconcile(self, request: Request) -> Result | None:
        """Schedule one binding if it needs it and write the result.

        Raises:
            ApiError: a read or write failed (e.g. Conflict); retried with backoff.
        """
        try:
            return await self._reconcile(request, self.client)
        except Conflict:
            # Written meanwhile, most often by our own previous write that the cache has not seen
            # yet (a reconcile triggered by our own spec write): once more from a live read, at
            # once, rather than after a delay on the critical path of a new binding.
            log.debug("conflict, reading live")
        try:
            return await self._reconcile(request, self.client.live)
        except Conflict:
            log.debug("conflict again, retrying later")
            return Result(requeue_after=CONFLICT_RETRY)

    async def _reconcile(self, request: Request, reader: Reader) -> Result | None:
        gvk = _gvk(request)
        try:
            binding = await reader.get(gvk, request.name, namespace=request.namespace or None)
        except NotFound:
            return None
        if is_being_deleted(binding) or not is_ours(binding):
            return None
        if reader is self.client and self.written.between_writes(binding):
            # Nothing to write from this view; looked at again once the cache has the status
            # (whatever enqueued it, e.g. a Cluster's change, is then judged on the whole binding).
            log.debug("the cache is between our spec and status writes")
            return Result(requeue_after=CONFLICT_RETRY)
        return await self._schedule(binding)

    async def _schedule(self, binding: Obj) -> Result | None:
        clusters = await self.client.list_all(CLUSTER_GVK)
        reason = schedule_reason(binding, clusters)
        if reason is None:
            await self._observe(binding)
            return None
        log.debug("scheduling", reason=reason)
        result = schedule(binding, clusters)
        if not result.scheduled:
            return await self._failed(binding, result)
        await self._succeeded(binding, result, reason)
        return None

    async def _observe(self, binding: Obj) -> None:
        # Nothing to redo for this generation: say the scheduler has seen it.
        status = binding.get("status") or {}
        if status.get("schedulerObservedGeneration") != generation_of(binding):
            updated = copy.deepcopy(binding)
            updated.setdefault("status", {})["schedulerObservedGeneration"] = generation_of(binding)
            await self.client.update_status(updated)

    async def _succeeded(self, binding: Obj, result: ScheduleResult, reason: str) -> None:
        written = False
        wanted = _with_result(binding, result)
        if wanted != binding:
            binding = await self.client.update(wanted)
            written = True
            targets = ", ".join(f"{t.get('name')}:{t.get('replicas', 0)}" for t in result.clusters)
            log.info("scheduled", reason=reason, clusters=targets)
            message = f"Binding has been scheduled to {targets}"
            self.recorder.event(binding, "Normal", "ScheduleBindingSucceed", message)
        status = _with_status(binding, result, written)
        if status != binding:
            await self.client.update_status(status)
            if written:
                self.written.note(binding)

    async def _failed(self, binding: Obj, result: ScheduleResult) -> Result:
        previous = get_condition(binding, SCHEDULED_CONDITION) or {}
        message = condition_message(result)
        if previous.get("message") != message:
            self.recorder.event(binding, "Warning", "ScheduleBindingFailed", message)
        status = _with_status(binding, result, spec_written=False)
        if status != binding:
            await self.client.update_status(status)
        return Result(requeue_after=UNSCHEDULABLE_RETRY)


def _projection(cluster: Mapping[str, Any]) -> tuple[Any, ...]:
    """What of a Cluster can change a scheduling result (not heartbeats or resource usage)."""
    meta = cluster.get("metadata") or {}
    status = cluster.get("status") or {}
    ready = (get_condition(cluster, READY_CONDITION) or {}).get("status")
    return (
        meta.get("labels"),
        meta.get("deletionTimestamp"),
        cluster.get("spec"),
        status.get("apiEnablements"),
        ready,
    )


def cluster_changed(event: Event) -> bool:
    """Pass Cluster creations, deletions and updates that can change scheduling."""
    if event.type is not EventType.UPDATE or event.old is None:
        return True
    return _projection(event.old) != _projection(event.obj)


AFFECTED_BY_CLUSTER_INDEX: Final = "scheduler.affectedByCluster"
"""Bindings by the Clusters whose change may reschedule them: their targets, or ``*`` (any
Cluster) for one not yet scheduled or placed whole on each cluster (Duplicated, no replicas)."""
ANY_CLUSTER: Final = "*"


def _affected_by(binding: Obj) -> list[str]:
    if not is_ours(binding):
        return []
    if not is_condition_true(binding, SCHEDULED_CONDITION):
        return [ANY_CLUSTER]
    spec = binding_spec(binding)
    if not spec.get("replicas") or replica_scheduling_type_of(spec.get("placement")) == DUPLICATED:
        return [ANY_CLUSTER]
    return target_cluster_names(binding)


class _ClusterMapper:
    """Maps a Cluster to the bindings its change may reschedule: two index lookups."""

    def __init__(self, informers: Iterable[SharedInformer]) -> None:
        self.informers = list(informers)

    def __call__(self, cluster: Obj) -> list[Request]:
        found = []
        for informer in self.informers:
            for value in (name_of(cluster), ANY_CLUSTER):
                keys = informer.indexer.index_keys(AFFECTED_BY_CLUSTER_INDEX, value)
                found += [Request.from_key(key) for key in keys]
        return found


def setup(context: Context) -> None:
    """Register the scheduler with ``context.manager`` (controller name ``scheduler``)."""
    manager = context.manager
    reconciler = SchedulerController(manager.client, context.recorder(SCHEDULER_NAME))
    kinds = (RESOURCE_BINDING_GVK, CLUSTER_RESOURCE_BINDING_GVK)
    for gvk in kinds:
        manager.cache.index_field(gvk, AFFECTED_BY_CLUSTER_INDEX, _affected_by)
    mapper = _ClusterMapper(manager.cache.get_informer(gvk) for gvk in kinds)
    # Status writes (ours and the status controller's) do not change the generation; a claim
    # added or removed (labels) decides whether the binding is scheduled at all.
    relevant = or_(generation_changed, labels_changed)
    builder = (
        controller_managed_by(manager)
        .named(SCHEDULER_NAME)
        .for_(RESOURCE_BINDING_GVK, relevant)
        .watches(CLUSTER_RESOURCE_BINDING_GVK, EnqueueRequestForObject(), relevant)
        .watches(CLUSTER_GVK, EnqueueRequestsFromMapFunc(mapper), cluster_changed)
    )
    context.complete(builder, reconciler, sharded_by=BINDINGS, workers=DEFAULT_WORKERS)
