"""ClusterController gives each member Cluster its execution namespace and its connection.

For every Cluster: the finalizer ``karmada.io/cluster-controller`` and the namespace
``karmada-es-<name>`` that holds its Works. When a Cluster is deleted: its Works are deleted (the
execution controller then removes their member objects), and once none is left the namespace and
the finalizer go; the member, engaged until then, is disengaged once the Cluster is gone.

Members are engaged by the ``ClusterProvider`` (``members``), on every replica, not by this
controller: a standby holds the members' clients and caches before it leads, so a takeover applies
Works at once instead of first connecting to every member (#15 item 5). A Cluster the provider
refuses (an http endpoint, a Secret outside the cluster namespace, a missing Secret, a token that
is not UTF-8, ...: the rules of ``connection``) gets a Warning Event ``MemberConfigInvalid``
saying why (the cluster-status controller says it in Ready too) and is not retried: the provider
looks at it again when the Cluster or a Secret it references changes, and its verdict enqueues
the Cluster here (``Members.changes``), since retrying a configuration nobody changed cannot
succeed.

Health: the controller keeps the NoSchedule taints ``cluster.karmada.io/not-ready`` (Ready False,
or no Ready yet) and ``cluster.karmada.io/unreachable`` (Ready Unknown) on ``spec.taints`` and
removes them once Ready is True (``taints``), touching no other taint; its health monitor
(``health``) turns Ready Unknown when the cluster-status controller stops reporting on a member.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, Final

from controllers.api import (
    CLUSTER_CONTROLLER_FINALIZER,
    CLUSTER_GVK,
    KARMADA_CLUSTER_NAMESPACE,
    READY_CONDITION,
    WORK_GVK,
    cluster_spec,
    execution_namespace,
)
from controllers.cluster.health import ClusterHealthOptions, HealthMonitor
from controllers.cluster.members import MemberProvider, Members
from controllers.cluster.taints import condition_taints, update_taints
from controllers.rbac import Permissions, Rule, cache
from reconcile import (
    GVK,
    AlreadyExists,
    Manager,
    NotFound,
    Request,
    Result,
    add_finalizer,
    controller_managed_by,
    deep_copy,
    get_condition,
    is_being_deleted,
    remove_finalizer,
)

if TYPE_CHECKING:
    # Only for the setup's signature: Context imports this package's options.
    from controllers.context import Context

__all__ = [
    "MEMBER_CONFIG_INVALID",
    "MEMBER_SECRETS",
    "PERMISSIONS",
    "ClusterController",
    "setup",
    "setup_cluster_controller",
]

NAMESPACE: Final = GVK("", "v1", "Namespace")
DELETION_POLL: Final = 2.0
MEMBER_CONFIG_INVALID: Final = "MemberConfigInvalid"
"""Reason of the Warning Event on a Cluster whose member cannot be connected to as configured."""

MEMBER_SECRETS: Final = Rule(
    ("",),
    ("secrets",),
    ("get", "list", "watch"),
    "member provider: each member's token and CA, from its watch of the Secrets of the cluster "
    "namespace (a changed Secret re-engages its member); cluster namespace only",
    namespace=KARMADA_CLUSTER_NAMESPACE,
)
PERMISSIONS: Final = Permissions(
    rules=(
        cache("cluster.karmada.io", "clusters"),
        Rule(
            ("cluster.karmada.io",),
            ("clusters",),
            ("update",),
            "its finalizer, the not-ready and unreachable taints",
        ),
        Rule(
            ("cluster.karmada.io",),
            ("clusters/status",),
            ("update",),
            "health monitor: Ready Unknown when the status goes stale",
        ),
        Rule(
            ("coordination.k8s.io",),
            ("leases",),
            ("get",),
            "health monitor: each member's heartbeat Lease (a live read); cluster namespace only",
            namespace=KARMADA_CLUSTER_NAMESPACE,
        ),
        cache("", "namespaces", why="an execution namespace that exists is not created again"),
        Rule(("",), ("namespaces",), ("create", "delete"), "execution namespaces karmada-es-*"),
        Rule(
            ("work.karmada.io",),
            ("works",),
            ("list", "deletecollection"),
            "a deleted Cluster's Works: a live list, then delete them all",
        ),
        MEMBER_SECRETS,
    )
)
"""What the cluster controller does on the host (see controllers.rbac)."""


class ClusterController:
    """Reconciles Cluster objects: finalizer, execution namespace, taints, member problems."""

    def __init__(self, manager: Manager, members: Members[MemberProvider]) -> None:
        self.client = manager.client
        self.members = members
        self.recorder = manager.event_recorder("reconcile-cluster")

    async def reconcile(self, request: Request) -> Result | None:
        """Bring one Cluster's namespace and taints in line with the object; say why its member
        is not engaged, if it breaks a rule."""
        try:
            cluster = await self.client.get(CLUSTER_GVK, request.name)
        except NotFound:
            return None
        if is_being_deleted(cluster):
            return await self._delete(cluster)
        if add_finalizer(cluster, CLUSTER_CONTROLLER_FINALIZER):
            cluster = await self.client.update(cluster)
        await self._ensure_namespace(execution_namespace(request.name))
        cluster = await self._taint_by_condition(cluster)
        problem = self.members.problem(request.name)
        if problem is not None:
            # The status controller reports it in Ready too. No retry: the provider's next
            # verdict (a change of the Cluster or of its Secret) enqueues the Cluster again.
            self.recorder.event(cluster, "Warning", MEMBER_CONFIG_INVALID, str(problem))
        return None

    async def _taint_by_condition(self, cluster: dict[str, Any]) -> dict[str, Any]:
        """Karmada's taintClusterByCondition: the NoSchedule taints that follow Ready."""
        ready = (get_condition(cluster, READY_CONDITION) or {}).get("status")
        add, remove = condition_taints(ready)
        taints = cluster_spec(cluster).get("taints") or []
        wanted = update_taints(taints, add=add, remove=remove)
        if wanted == taints:
            return cluster
        updated = deep_copy(cluster)
        updated.setdefault("spec", {})["taints"] = wanted
        return await self.client.update(updated)

    async def _ensure_namespace(self, name: str) -> None:
        # Read first, as Karmada's createExecutionSpace does: every reconcile of every Cluster
        # (each takeover, each re-list) would otherwise send a create refused as AlreadyExists.
        with contextlib.suppress(NotFound):
            await self.client.get(NAMESPACE, name)
            return
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        with contextlib.suppress(AlreadyExists):
            await self.client.create(body)

    async def _delete(self, cluster: dict[str, Any]) -> Result | None:
        name = str(cluster["metadata"]["name"])
        namespace = execution_namespace(name)
        # A live read: the cache may still hold Works whose deletion already finished.
        remaining = (await self.client.live.list(WORK_GVK, namespace=namespace))["items"]
        if remaining:
            await self.client.delete_all_of(WORK_GVK, namespace=namespace)
            return Result(requeue_after=DELETION_POLL)
        with contextlib.suppress(NotFound):
            await self.client.delete(NAMESPACE, namespace)
        if remove_finalizer(cluster, CLUSTER_CONTROLLER_FINALIZER):
            await self.client.update(cluster)
        return None


def setup_cluster_controller(
    manager: Manager, members: Members[MemberProvider], health: ClusterHealthOptions | None = None
) -> ClusterController:
    """Register the cluster controller and its health monitor (leader only) with ``manager``,
    and have ``members`` served (default ``health``: Karmada's periods)."""
    reconciler = ClusterController(manager, members)
    monitor = HealthMonitor(
        manager, health or ClusterHealthOptions(), members.options.cluster_namespace
    )
    manager.add(monitor.run, leader_only=True)
    builder = controller_managed_by(manager).for_(CLUSTER_GVK).named("cluster")
    builder.watches(members.changes()).complete(reconciler)
    return reconciler


def setup(context: Context) -> None:
    """Set up the cluster controller (the controller-manager's entry point)."""
    setup_cluster_controller(context.manager, context.members, context.cluster_health)
