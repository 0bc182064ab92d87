"""ClusterTaintPolicyController keeps ClusterTaintPolicies' taints on the Clusters they target.

It reconciles Clusters: on a change of a Cluster's status conditions, and for every Cluster when a
policy is created or its spec changes (a deleted policy changes nothing: its taints stay, as in
Karmada). The taints ``conditions.wanted_taints`` computes are written with an update of the
Cluster (a conflict retries), followed by a Normal Event ``TaintClusterSucceed`` listing them;
a failed write gets a Warning ``TaintClusterFailed``.
"""

from __future__ import annotations

from typing import Any, Final

import structlog

from controllers.api import CLUSTER_GVK, CLUSTER_TAINT_POLICY_GVK, cluster_spec
from controllers.context import Context
from controllers.rbac import Permissions, Rule, cache
from controllers.scheduler.filter import taint_text
from controllers.taint.conditions import wanted_taints
from reconcile import (
    ApiError,
    CachedClient,
    EnqueueRequestsFromMapFunc,
    Event,
    EventRecorder,
    EventType,
    NotFound,
    Obj,
    Request,
    Result,
    controller_managed_by,
    deep_copy,
)

__all__ = ["CONTROLLER_NAME", "PERMISSIONS", "ClusterTaintPolicyController", "setup"]

CONTROLLER_NAME: Final = "cluster-taint-policy"
PERMISSIONS: Final = Permissions(
    rules=(
        cache("cluster.karmada.io", "clusters"),
        Rule(("cluster.karmada.io",), ("clusters",), ("update",), "the policies' taints"),
        cache("policy.karmada.io", "clustertaintpolicies"),
    )
)
"""What the cluster-taint-policy controller does on the host (see controllers.rbac)."""

log = structlog.get_logger("controllers.taint")


class ClusterTaintPolicyController:
    """Reconciles one Cluster's taints against every ClusterTaintPolicy."""

    def __init__(self, client: CachedClient, recorder: EventRecorder) -> None:
        self.client = client
        self.recorder = recorder

    async def reconcile(self, request: Request) -> Result | None:
        """Add and remove the policies' taints on one Cluster.

        Raises:
            ApiError: the update failed (e.g. Conflict); retried with backoff.
        """
        try:
            cluster = await self.client.get(CLUSTER_GVK, request.name)
        except NotFound:
            return None
        policies = await self.client.list_all(CLUSTER_TAINT_POLICY_GVK)
        taints = cluster_spec(cluster).get("taints") or []
        wanted = wanted_taints(cluster, policies)
        if wanted == taints:
            return None
        updated = deep_copy(cluster)
        updated.setdefault("spec", {})["taints"] = wanted
        try:
            updated = await self.client.update(updated)
        except ApiError as error:
            self.recorder.event(cluster, "Warning", "TaintClusterFailed", str(error))
            raise
        shown = ", ".join(taint_text(t) for t in wanted) or "none"
        log.info("cluster taints updated", cluster=request.name, taints=shown)
        message = f"Update Cluster({request.name}) with taints({shown}) succeed"
        self.recorder.event(updated, "Normal", "TaintClusterSucceed", message)
        return None


def _conditions(obj: Obj | None) -> Any:
    return ((obj or {}).get("status") or {}).get("conditions")


def conditions_changed(event: Event) -> bool:
    """Pass Cluster creations and updates of their status conditions (Karmada's predicate)."""
    if event.type is EventType.DELETE:
        return False
    if event.type is not EventType.UPDATE or event.old is None:
        return True
    return bool(_conditions(event.old) != _conditions(event.obj))


def policy_changed(event: Event) -> bool:
    """Pass policy creations and spec changes; a deleted policy leaves its taints."""
    if event.type is EventType.DELETE:
        return False
    if event.type is not EventType.UPDATE or event.old is None:
        return True
    return bool(event.old.get("spec") != event.obj.get("spec"))


def setup(context: Context) -> None:
    """Register the cluster-taint-policy controller with ``context.manager``."""
    manager = context.manager
    reconciler = ClusterTaintPolicyController(manager.client, context.recorder(CONTROLLER_NAME))
    informer = manager.cache.get_informer(CLUSTER_GVK)

    def every_cluster(policy: Obj) -> list[Request]:
        # Matching is done in reconcile; a policy's targets are few and Clusters are cached.
        return [Request.from_key(key) for key in informer.indexer.keys()]  # noqa: SIM118

    (
        controller_managed_by(manager)
        .named(CONTROLLER_NAME)
        .for_(CLUSTER_GVK, conditions_changed)
        .watches(
            CLUSTER_TAINT_POLICY_GVK, EnqueueRequestsFromMapFunc(every_cluster), policy_changed
        )
        .complete(reconciler)
    )
