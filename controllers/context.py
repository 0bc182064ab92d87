"""Context is what every multi-cluster controller is set up with: the manager, members, interpreter.

``controllers.controllermanager`` builds one Context and passes it to each controller's
``setup(context)``; controllers use nothing else to reach clusters: ``context.manager`` for the
host (``manager.client`` reads from the cache, ``manager.api_reader`` reads live),
``context.members`` for member clusters (``members.get(name)`` → a ``reconcile.Cluster`` with
``client``, ``cache`` and ``api_reader``, or None while the member is not connected), and
``context.interpreter`` for every question about a kind (replicas, revise, retain, status, health,
dependencies). ``context.cluster_status`` holds the probe frequency and the Ready thresholds of the
cluster-status controller, ``context.cluster_health`` the cluster controller's health monitor
periods, ``context.failover`` the taint-eviction and graceful-eviction settings.
``context.permitted_kinds`` is which kinds RBAC lets this process use as templates, as the
detector's discovery last found (``controllers.permittedkinds``). ``context.sharding`` is this
replica's shard when the controller-manager runs sharded (``--shards``, ``controllers.sharding``):
controllers of sharded kinds wrap their reconcilers with ``context.guard(...)`` and run their
workers on every replica (``context.workers(options)``); unsharded, both change nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from controllers.cluster.health import ClusterHealthOptions
from controllers.cluster.registry import MemberRegistry
from controllers.cluster.status import ClusterStatusOptions
from controllers.eviction.options import FailoverOptions
from controllers.interpreter.facade import Interpreter
from controllers.permittedkinds import PermittedKinds
from reconcile import GVK, ControllerOptions, EventRecorder, Manager, Reconciler, ReconcilerFunc

if TYPE_CHECKING:
    from controllers.sharding import Sharding

__all__ = ["Context"]


@dataclass
class Context:
    """The shared parts the controllers of one controller-manager are built on."""

    manager: Manager
    members: MemberRegistry
    interpreter: Interpreter = field(default_factory=Interpreter)
    cluster_status: ClusterStatusOptions = field(default_factory=ClusterStatusOptions)
    cluster_health: ClusterHealthOptions = field(default_factory=ClusterHealthOptions)
    failover: FailoverOptions = field(default_factory=FailoverOptions)
    permitted_kinds: PermittedKinds = field(default_factory=PermittedKinds)
    sharding: Sharding | None = None

    def guard(
        self, gvk: GVK, reconciler: Reconciler | ReconcilerFunc
    ) -> Reconciler | ReconcilerFunc:
        """``reconciler`` behind this replica's shard guard for ``gvk`` requests (sharded)."""
        return self.sharding.guard(gvk, reconciler) if self.sharding else reconciler

    def guard_templates(
        self, reconciler: Reconciler | ReconcilerFunc
    ) -> Reconciler | ReconcilerFunc:
        """The detector's ``reconciler`` (templates and policies in one queue), guarded."""
        return self.sharding.guard_templates(reconciler) if self.sharding else reconciler

    def guard_bindings(
        self, reconciler: Reconciler | ReconcilerFunc
    ) -> Reconciler | ReconcilerFunc:
        """``reconciler`` of a ResourceBinding + ClusterResourceBinding queue, guarded (sharded)."""
        return self.sharding.guard_bindings(reconciler) if self.sharding else reconciler

    def workers(self, options: ControllerOptions | None = None) -> ControllerOptions:
        """``options``, with workers on every replica when sharded (each on its own shard)."""
        chosen = options or ControllerOptions()
        return replace(chosen, need_leader_election=False) if self.sharding else chosen

    def recorder(self, controller: str) -> EventRecorder:
        """An EventRecorder for ``controller`` (events on templates, bindings, Works, Clusters)."""
        return self.manager.event_recorder(f"reconcile-{controller}")
