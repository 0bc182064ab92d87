"""Members is how the controllers reach member clusters: the clusters a ``ClusterProvider`` engaged.

The controller-manager runs one ``ClusterProvider`` (on every replica, as ``reconcile``'s Manager
runs providers), which engages the member of each Karmada ``Cluster`` of the host: each engaged
member has its own client and cache in the manager (``manager.get_cluster(name)``), started
before the multi-cluster controllers' sources there, stopped when the Cluster goes or its
connection details change (then engaged anew). ``Members`` is the controllers' view of it:

- ``get(name)``: the engaged member's ``reconcile.Cluster``, None while it is not engaged;
- ``problem(name)``: the rule a Cluster breaks (``MemberConfigError``, whose reason the
  cluster-status controller puts in Ready and the cluster controller in a Warning Event);
- ``token_lifetime(name)``: when the engaged member's token expires (``TokenExpiring``);
- ``scope``: which Clusters this process serves (``controllers.clusterscope``): only those are
  engaged, and only those have a problem;
- ``changes()``: a Source that enqueues a Cluster each time its outcome changes (engaged,
  refused, disengaged), so controllers that report on Clusters hear of it without polling.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Generic, Protocol, TypeVar

import anyio
from anyio.abc import TaskGroup

from controllers.cluster.connection import MemberConfigError, MemberOptions
from controllers.cluster.expiry import TokenLifetime
from controllers.cluster.provider import ClusterProvider
from controllers.clusterscope import ClusterScope
from reconcile import Cluster, Manager, Request, WorkQueue
from reconcile.multicluster import Provider

__all__ = ["MemberChanges", "MemberProvider", "Members"]


class MemberProvider(Provider, Protocol):
    """What ``Members`` reads of the provider engaging members: ``ClusterProvider`` in the
    controller-manager, the agent's one member in ``reconcile agent``."""

    @property
    def options(self) -> MemberOptions:
        """Which member connections Clusters may ask for (the cluster namespace above all)."""
        ...

    @property
    def scope(self) -> ClusterScope:
        """Which Clusters it engages (the others are served elsewhere)."""
        ...

    @property
    def engaged(self) -> frozenset[str]:
        """The names of the clusters it engaged."""
        ...

    def problem(self, name: str) -> MemberConfigError | None:
        """Why the Cluster ``name`` is not engaged; None if it breaks no rule."""
        ...

    def token_lifetime(self, name: str) -> TokenLifetime | None:
        """When the token member ``name`` is engaged with expires; None if unknown."""
        ...

    def on_change(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(name)`` on each change of a Cluster's outcome; returns the remover."""
        ...


P = TypeVar("P", bound=MemberProvider, covariant=True)


class Members(Generic[P]):
    """The member clusters engaged by ``provider`` in ``manager``.

    Args:
        manager: the manager the provider engages clusters in.
        provider: the provider of the members (added to the manager by ``serve``).
    """

    def __init__(self, manager: Manager, provider: P) -> None:
        self.manager = manager
        self.provider = provider
        self._served = False

    @classmethod
    def of(
        cls,
        manager: Manager,
        *,
        options: MemberOptions | None = None,
        kubeconfigs: Mapping[str, Path] | None = None,
        temp_dir: Path | None = None,
        scope: ClusterScope | None = None,
    ) -> Members[ClusterProvider]:
        """Members over a ``ClusterProvider`` of the manager's host (not serving yet).

        ``options`` bound what Clusters may ask for; ``kubeconfigs`` give a kubeconfig file per
        cluster name instead (``--member-kubeconfig``); ``temp_dir`` is where a client key is
        written for the instant ``ssl`` loads it; ``scope`` is which Clusters are engaged
        (default: every Push Cluster).
        """
        provider = ClusterProvider(
            manager.api_reader,
            options=options,
            kubeconfigs=kubeconfigs,
            temp_dir=temp_dir,
            scope=scope,
        )
        return Members(manager, provider)

    def serve(self) -> Members[P]:
        """Have the manager run the provider (once, however often called): what each
        controller that reaches members calls in its setup, so a process running none of them
        engages no member."""
        if not self._served:
            self._served = True
            self.manager.add_provider(self.provider)
        return self

    @property
    def options(self) -> MemberOptions:
        """Which member connections Clusters may ask for."""
        return self.provider.options

    @property
    def scope(self) -> ClusterScope:
        """Which Clusters this process serves (the others are never engaged)."""
        return self.provider.scope

    def get(self, name: str) -> Cluster | None:
        """The member called ``name``, or None while it is not engaged."""
        if name not in self.provider.engaged:
            return None
        return self.manager.clusters.get(name)

    def names(self) -> list[str]:
        """The engaged members, sorted."""
        return sorted(self.provider.engaged)

    def problem(self, name: str) -> MemberConfigError | None:
        """Why the Cluster ``name`` is not engaged (the rule it breaks); None if it breaks none."""
        return self.provider.problem(name)

    def token_lifetime(self, name: str) -> TokenLifetime | None:
        """When the token member ``name`` is engaged with expires; None when not engaged or
        unknown (a kubeconfig file, a token that is no JWT)."""
        return self.provider.token_lifetime(name)

    def changes(self) -> MemberChanges:
        """A Source enqueuing the Cluster whose member was engaged, refused or disengaged
        (serving the members)."""
        return MemberChanges(self.serve().provider)


class MemberChanges:
    """A Source: each change of a Cluster's outcome in the provider enqueues that Cluster."""

    def __init__(self, provider: MemberProvider) -> None:
        self.provider = provider
        self._remove: Callable[[], None] | None = None

    async def start(self, queue: WorkQueue[Request], task_group: TaskGroup) -> None:
        """Listen to the provider; never blocks."""
        self.stop()
        self._remove = self.provider.on_change(lambda name: queue.add(Request(name)))
        await anyio.lowlevel.checkpoint()

    def stop(self) -> None:
        """Stop listening (idempotent)."""
        remove, self._remove = self._remove, None
        if remove is not None:
            remove()

    async def wait_for_sync(self, timeout: float) -> None:
        """Changes have no initial state: synced at once."""
        await anyio.lowlevel.checkpoint()

    def __str__(self) -> str:
        return "member changes source"
