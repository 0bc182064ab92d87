"""Context is what every multi-cluster controller is set up with: the manager, members, interpreter.

``controllers.controllermanager`` builds one Context and passes it to each controller's
``setup(context)``; controllers use nothing else to reach clusters: ``context.manager`` for the
host (``manager.client`` reads from the cache, ``manager.api_reader`` reads live),
``context.members`` for member clusters (``members.get(name)`` → the engaged member's
``reconcile.Cluster`` with ``client``, ``cache`` and ``api_reader``, or None while it is not
engaged; ``controllers.cluster.members``; ``context.scope`` is which Clusters this process serves,
every Push Cluster for the controller-manager), and
``context.interpreter`` for every question about a kind (replicas, revise, retain, status, health,
dependencies). ``context.cluster_status`` holds the probe frequency and the Ready thresholds of the
cluster-status controller, ``context.cluster_health`` the cluster controller's health monitor
periods, ``context.failover`` the taint-eviction and graceful-eviction settings.
``context.permitted_kinds`` is which kinds RBAC lets this process use as templates, as the
detector's discovery last found (``controllers.permittedkinds``). ``context.sharding`` is this
replica's shard when the controller-manager runs sharded (``--shards``, ``controllers.sharding``):
controllers that run on every replica finish their builder with ``context.complete(builder,
reconciler, sharded_by=...)``, which runs their workers on every replica and guards their
requests by the shard together; unsharded, it changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from controllers.cluster.health import ClusterHealthOptions
from controllers.cluster.members import MemberProvider, Members
from controllers.cluster.status import ClusterStatusOptions
from controllers.clusterscope import ClusterScope
from controllers.eviction.options import FailoverOptions
from controllers.interpreter.facade import Interpreter
from controllers.permittedkinds import PermittedKinds
from reconcile import (
    GVK,
    Builder,
    Controller,
    ControllerOptions,
    EventRecorder,
    Manager,
    Reconciler,
    ReconcilerFunc,
)

if TYPE_CHECKING:
    from controllers.sharding import Sharding

__all__ = ["BINDINGS", "TEMPLATES", "Context", "ShardKey"]

TEMPLATES: Final = "templates"
"""The detector's queue: resource templates and policies, each keyed by its template's binding."""
BINDINGS: Final = "bindings"
"""A queue of ResourceBindings (namespaced requests) and ClusterResourceBindings."""
ShardKey: TypeAlias = GVK | Literal["templates", "bindings"]
"""What a sharded controller's requests are keyed by (``Context.complete``)."""


@dataclass
class Context:
    """The shared parts the controllers of one controller-manager are built on."""

    manager: Manager
    members: Members[MemberProvider]
    interpreter: Interpreter = field(default_factory=Interpreter)
    cluster_status: ClusterStatusOptions = field(default_factory=ClusterStatusOptions)
    cluster_health: ClusterHealthOptions = field(default_factory=ClusterHealthOptions)
    failover: FailoverOptions = field(default_factory=FailoverOptions)
    permitted_kinds: PermittedKinds = field(default_factory=PermittedKinds)
    sharding: Sharding | None = None

    def complete(
        self,
        builder: Builder,
        reconciler: Reconciler | ReconcilerFunc,
        *,
        sharded_by: ShardKey | None,
        workers: int | None = None,
    ) -> Controller:
        """Finish ``builder`` for a controller that runs on every replica when sharded.

        Sharded, its workers run on every replica (not only the leader's) and ``reconciler`` is
        put behind this replica's shard guard for requests keyed by ``sharded_by``: objects of a
        kind (a GVK), the detector's ``TEMPLATES`` (templates and policies in one queue), or
        ``BINDINGS`` (ResourceBindings and ClusterResourceBindings in one queue). None: nothing to
        guard (its informers hold only the shard's objects, or every replica needs all of it).
        Unsharded, neither changes anything. ``workers`` is ``max_concurrent_reconciles``
        (default: ``ControllerOptions``').
        """
        options = ControllerOptions()
        if workers is not None:
            options = ControllerOptions(max_concurrent_reconciles=workers)
        if self.sharding is None:
            return builder.with_options(options).complete(reconciler)
        # Both or neither: workers on every replica without the guard would reconcile the
        # other replicas' keys too; the guard on leader-only workers would leave keys unserved.
        every_replica = replace(options, need_leader_election=False)
        return builder.with_options(every_replica).complete(
            _guarded(self.sharding, sharded_by, reconciler)
        )

    @property
    def scope(self) -> ClusterScope:
        """Which Clusters this process serves: their members, their Works, their status (the
        members' scope, so the two never disagree; ``controllers.clusterscope``)."""
        return self.members.scope

    def recorder(self, controller: str) -> EventRecorder:
        """An EventRecorder for ``controller`` (events on templates, bindings, Works, Clusters)."""
        return self.manager.event_recorder(f"reconcile-{controller}")


def _guarded(
    sharding: Sharding, key: ShardKey | None, reconciler: Reconciler | ReconcilerFunc
) -> Reconciler | ReconcilerFunc:
    """``reconciler`` behind ``sharding``'s guard for requests keyed by ``key``."""
    if key is None:
        return reconciler
    if isinstance(key, GVK):
        return sharding.guard(key, reconciler)
    if key == TEMPLATES:
        return sharding.guard_templates(reconciler)
    return sharding.guard_bindings(reconciler)
