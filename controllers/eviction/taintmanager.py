"""TaintManager evicts bindings from members with NoExecute taints their placement won't tolerate.

Karmada's NoExecuteTaintManager, on only with ``--enable-no-execute-taint-eviction`` (default
false). It reconciles Clusters that carry a NoExecute taint: every ResourceBinding and
ClusterResourceBinding scheduled there is checked against the ``clusterTolerations`` of the
placement it was scheduled with (the ``policy.karmada.io/applied-placement`` annotation, else
``spec.placement``); one that does not tolerate a taint, or whose ``tolerationSeconds`` ran out,
is evicted with ``task.evict`` (reason ``TaintUntolerated``, producer ``TaintManager``, purge
mode from the binding's ``spec.failover.cluster`` when set — its ``purgeMode``, default
Gracefully, and ``preservedLabelState`` from its ``statePreservation`` rules against the cluster's
collected status — else from ``--no-execute-taint-eviction-purge-mode``) and gets a Normal Event
``EvictWorkloadFromClusterSucceed`` (Warning ``EvictWorkloadFromClusterFailed`` when the write
fails, or the state to preserve cannot be extracted). The Cluster is looked at again when the
shortest toleration left runs out, and every ``RETRY_FREQUENCY`` seconds while it stays tainted,
as Karmada's does.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any, Final

import structlog

from controllers.api import (
    APPLIED_PLACEMENT_ANNOTATION,
    CLUSTER_GVK,
    CLUSTER_RESOURCE_BINDING_GVK,
    RESOURCE_BINDING_GVK,
    TARGET_CLUSTER_INDEX,
    Toleration,
    binding_spec,
    binding_status,
    cluster_spec,
    target_cluster_names,
)
from controllers.context import Context
from controllers.eviction.options import FailoverOptions
from controllers.eviction.preservation import StatePreservationError, preserved_label_state
from controllers.eviction.task import (
    EVICTION_PRODUCER_TAINT_MANAGER,
    EVICTION_REASON_TAINT_UNTOLERATED,
    PURGE_MODE_GRACEFULLY,
    PURGE_MODES,
    PurgeMode,
    evict,
)
from controllers.eviction.tolerations import no_execute_verdict
from controllers.rbac import Permissions, Rule, cache
from controllers.scheduler.filter import taint_text
from reconcile import (
    GVK,
    ApiError,
    CachedClient,
    EventRecorder,
    NotFound,
    Obj,
    Request,
    Result,
    SharedInformer,
    annotations_of,
    controller_managed_by,
    is_being_deleted,
)

__all__ = [
    "CONTROLLER_NAME",
    "PERMISSIONS",
    "RETRY_FREQUENCY",
    "TaintManager",
    "cluster_failover_of",
    "purge_mode_for",
    "setup",
]

CONTROLLER_NAME: Final = "taint-manager"
RETRY_FREQUENCY: Final = 10.0
"""Seconds between passes over a Cluster that stays NoExecute-tainted (Karmada's default)."""
PERMISSIONS: Final = Permissions(
    rules=(
        cache("cluster.karmada.io", "clusters"),
        cache("work.karmada.io", "resourcebindings", "clusterresourcebindings"),
        Rule(
            ("work.karmada.io",),
            ("resourcebindings", "clusterresourcebindings"),
            ("update",),
            "evictions: spec.clusters into spec.gracefulEvictionTasks",
        ),
    )
)
"""What the taint manager does on the host (see controllers.rbac)."""

log = structlog.get_logger("controllers.eviction.taintmanager")


def tolerations_of(binding: Mapping[str, Any]) -> list[Toleration]:
    """The clusterTolerations of the placement the binding was scheduled with."""
    recorded = annotations_of(binding).get(APPLIED_PLACEMENT_ANNOTATION)
    placement: Any = None
    if recorded:
        try:
            placement = json.loads(recorded)
        except ValueError:
            placement = None
    if not isinstance(placement, Mapping):
        placement = binding_spec(binding).get("placement") or {}
    tolerations = placement.get("clusterTolerations") or []
    return [t for t in tolerations if isinstance(t, Mapping)]  # type: ignore[misc]


def cluster_failover_of(binding: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The binding's ``spec.failover.cluster`` (Karmada's ClusterFailoverBehavior), None when
    unset."""
    behavior = (binding_spec(binding).get("failover") or {}).get("cluster")
    return behavior if isinstance(behavior, Mapping) else None


def purge_mode_for(binding: Mapping[str, Any], default: PurgeMode) -> PurgeMode:
    """The purge mode of a taint eviction: ``spec.failover.cluster.purgeMode`` when the binding
    has one (unset: Gracefully), else ``default`` (the flag), as Karmada's getPurgeMode."""
    behavior = cluster_failover_of(binding)
    if behavior is None:
        return default
    mode = behavior.get("purgeMode")
    return mode if mode in PURGE_MODES else PURGE_MODE_GRACEFULLY


class TaintManager:
    """Evicts bindings from one NoExecute-tainted Cluster (see the module docstring)."""

    def __init__(
        self,
        client: CachedClient,
        recorder: EventRecorder,
        options: FailoverOptions,
        informers: Mapping[GVK, SharedInformer],
    ) -> None:
        self.client, self.recorder, self.options = client, recorder, options
        self.informers = informers

    async def reconcile(self, request: Request) -> Result | None:
        """Evict what must leave the Cluster now; come back when the next toleration ends.

        Raises:
            ApiError: a binding update failed (e.g. Conflict); retried with backoff.
        """
        try:
            cluster = await self.client.get(CLUSTER_GVK, request.name)
        except NotFound:
            return None
        taints = cluster_spec(cluster).get("taints") or []
        if not any(t.get("effect") == "NoExecute" for t in taints):
            return None
        next_check = RETRY_FREQUENCY
        for gvk, informer in self.informers.items():
            for key in informer.indexer.index_keys(TARGET_CLUSTER_INDEX, request.name):
                after = await self._sync(gvk, Request.from_key(key), request.name, taints)
                if after is not None:
                    next_check = min(next_check, after)
        return Result(requeue_after=next_check)

    async def _sync(self, gvk: GVK, key: Request, cluster: str, taints: list[Any]) -> float | None:
        try:
            binding = await self.client.get(gvk, key.name, namespace=key.namespace or None)
        except NotFound:
            return None
        if is_being_deleted(binding) or cluster not in target_cluster_names(binding):
            return None
        verdict = no_execute_verdict(taints, tolerations_of(binding))
        if not verdict.evict:
            return verdict.after
        await self._evict(binding, cluster, taint_text(verdict.taint or {}))
        return None

    def _preserved(self, binding: Obj, cluster: str) -> dict[str, str] | None:
        behavior = cluster_failover_of(binding) or {}
        aggregated = binding_status(binding).get("aggregatedStatus") or []
        try:
            return preserved_label_state(behavior.get("statePreservation"), aggregated, cluster)
        except StatePreservationError as error:
            text = f"Evict from cluster {cluster} failed: {error}"
            self.recorder.event(binding, "Warning", "EvictWorkloadFromClusterFailed", text)
            return None

    async def _evict(self, binding: Obj, cluster: str, taint: str) -> None:
        state = self._preserved(binding, cluster)
        if state is None:
            return  # the next pass (RETRY_FREQUENCY) tries again
        updated = copy.deepcopy(binding)
        message = f"cluster {cluster} has taint {{{taint}}} the placement does not tolerate"
        evict(
            updated["spec"],
            cluster,
            reason=EVICTION_REASON_TAINT_UNTOLERATED,
            producer=EVICTION_PRODUCER_TAINT_MANAGER,
            purge_mode=purge_mode_for(binding, self.options.no_execute_taint_eviction_purge_mode),
            message=message,
            preserved_label_state=state,
            clusters_before_failover=target_cluster_names(binding) if state else None,
        )
        try:
            await self.client.update(updated)
        except ApiError as error:
            text = f"Evict from cluster {cluster} failed: {error}"
            self.recorder.event(binding, "Warning", "EvictWorkloadFromClusterFailed", text)
            raise
        log.info("evicted", cluster=cluster, taint=taint)
        text = f"Evict from cluster {cluster} succeed: {message}"
        self.recorder.event(updated, "Normal", "EvictWorkloadFromClusterSucceed", text)


def setup(context: Context) -> None:
    """Register the taint manager with ``context.manager`` when NoExecute eviction is enabled."""
    if not context.failover.enable_no_execute_taint_eviction:
        return
    manager = context.manager
    kinds = (RESOURCE_BINDING_GVK, CLUSTER_RESOURCE_BINDING_GVK)
    for gvk in kinds:
        manager.cache.index_field(gvk, TARGET_CLUSTER_INDEX, target_cluster_names)
    informers = {gvk: manager.cache.get_informer(gvk) for gvk in kinds}
    recorder = context.recorder(CONTROLLER_NAME)
    reconciler = TaintManager(manager.client, recorder, context.failover, informers)
    # Sharded, every replica evicts the bindings of its own shard (its binding informers).
    builder = controller_managed_by(manager).named(CONTROLLER_NAME).for_(CLUSTER_GVK)
    context.complete(builder, reconciler, sharded_by=None)
