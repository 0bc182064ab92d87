"""Builder wires a Reconciler into a Manager: what it is for, what it owns, what else it watches.

``controller_managed_by(mgr).for_(GVK(...)).owns(GVK(...)).complete(reconciler)`` records every call
and validates at ``complete``: a controller needs ``for_`` (or a ``named`` one with ``watches``),
``owns`` needs ``for_`` before it, names are unique per manager (they label metrics and logs), and
the reconciler must be a Reconciler or an async function. Every method returns the builder.
The name defaults to the lowercase kind of ``for_``. ``owns`` enqueues the controller owner of the
owned objects; ``with_event_filter`` predicates apply to every watch.

``cluster=`` picks where a watch runs: a cluster's name ("" the manager's own, the default), or an
``Engaged`` selector (``reconcile.multicluster``: ``ENGAGED`` is every cluster a provider engaged)
for a watch in each engaged cluster, started and stopped as clusters come and go; its Requests
carry the cluster's name (a map function's Requests without one get it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from anyio.abc import TaskGroup

from reconcile.cluster import Cluster
from reconcile.controller import Controller, ControllerOptions
from reconcile.gvk import GVK
from reconcile.handler import (
    AsyncEventHandler,
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EventHandler,
)
from reconcile.multicluster.engaged import Engaged
from reconcile.multicluster.source import EngagedSource, in_cluster
from reconcile.predicate import Predicate
from reconcile.reconciler import Reconciler, ReconcilerFunc, Request
from reconcile.source import Kind, Source
from reconcile.workqueue import WorkQueue

if TYPE_CHECKING:
    from reconcile.manager import Manager

__all__ = ["Builder", "BuilderError", "ClusterChoice", "controller_managed_by"]

ClusterChoice = str | Engaged
"""Where a watch runs: one cluster by name ("" the manager's own), or the engaged ones."""


class BuilderError(ValueError):
    """The builder was used wrongly; the message says how to fix it."""


def controller_managed_by(manager: Manager) -> Builder:
    """Start building a controller that ``manager`` will run."""
    return Builder(manager)


@dataclass
class _Watch:
    gvk: GVK[Any]
    handler: EventHandler | AsyncEventHandler | None
    predicates: tuple[Predicate, ...]
    cluster: ClusterChoice
    owned: bool = False
    metadata_only: bool = False


class _OwnsSource:
    """A Kind source whose owner handler learns the owner kind's scope when it starts."""

    def __init__(self, cluster: Cluster, owner: GVK[Any], kind: Kind) -> None:
        self._cluster, self._owner, self._kind = cluster, owner, kind

    async def start(self, queue: WorkQueue[Request], task_group: TaskGroup) -> None:
        # The owner lives in the owned object's cluster: its scope is that cluster's answer.
        resource = await self._cluster.api_reader.resource_for(self._owner)
        handler = EnqueueRequestForOwner(self._owner, owner_namespaced=resource.namespaced)
        self._kind.handler = handler
        await self._kind.start(queue, task_group)

    async def wait_for_sync(self, timeout: float) -> None:
        await self._kind.wait_for_sync(timeout)

    def stop(self) -> None:
        self._kind.stop()

    def __str__(self) -> str:
        return f"owned {self._kind}"


class Builder:
    """Records a controller's configuration; ``complete()`` validates and registers it."""

    def __init__(self, manager: Manager) -> None:
        self._manager = manager
        self._for: _Watch | None = None
        self._watches: list[_Watch] = []
        self._sources: list[Source] = []
        self._filters: list[Predicate] = []
        self._name: str | None = None
        self._options: ControllerOptions | None = None
        self._errors: list[str] = []

    def for_(self, gvk: GVK[Any], *predicates: Predicate, cluster: ClusterChoice = "") -> Builder:
        """Reconcile objects of ``gvk``: each event enqueues the object itself.

        ``cluster``: the cluster to watch ("" the manager's own), or ``ENGAGED`` / an ``Engaged``
        selector to watch every engaged cluster (Requests carry the cluster's name).
        """
        if self._for is not None:
            self._errors.append(f"for_() was called twice ({self._for.gvk} and {gvk})")
        self._for = _Watch(gvk, EnqueueRequestForObject(), predicates, cluster)
        return self

    def owns(
        self,
        gvk: GVK[Any],
        *predicates: Predicate,
        cluster: ClusterChoice = "",
        metadata_only: bool = False,
    ) -> Builder:
        """Also watch ``gvk`` objects and enqueue their controller owner of the for_ kind.

        ``metadata_only``: watch (and cache) only their metadata, as PartialObjectMetadata
        (controller-runtime's ``builder.OnlyMetadata``); read them back with
        ``client.get(gvk, ..., metadata_only=True)``. ``cluster`` as in for_(); the owner is
        enqueued in the owned object's cluster.
        """
        if self._for is None:
            self._errors.append(f"owns({gvk}) was called before for_(): say what owns it first")
        self._watches.append(_Watch(gvk, None, predicates, cluster, True, metadata_only))
        return self

    def watches(
        self,
        target: GVK[Any] | Source,
        handler: EventHandler | AsyncEventHandler | None = None,
        *predicates: Predicate,
        cluster: ClusterChoice = "",
        metadata_only: bool = False,
    ) -> Builder:
        """Also watch a kind (through ``handler``) or any Source; ``metadata_only`` and
        ``cluster`` as in owns() (a Source watches where it was made to)."""
        if isinstance(target, GVK):
            if handler is None:
                self._errors.append(f"watches({target}) needs an event handler")
            self._watches.append(_Watch(target, handler, predicates, cluster, False, metadata_only))
        else:
            if metadata_only:
                self._errors.append(f"watches({target}, metadata_only=True) needs a kind")
            self._sources.append(target)
        return self

    def with_event_filter(self, predicate: Predicate) -> Builder:
        """Filter every watched event through ``predicate``."""
        self._filters.append(predicate)
        return self

    def named(self, name: str) -> Builder:
        """Name the controller (metrics, logs). Defaults to the lowercase for_ kind."""
        self._name = name
        return self

    def with_options(self, options: ControllerOptions) -> Builder:
        """Set the controller's options (workers, rate limiter, timeouts)."""
        self._options = options
        return self

    def _validated_name(self, reconciler: object) -> str:
        errors = list(self._errors)
        if self._for is None and (self._name is None or not (self._watches or self._sources)):
            errors.append("call for_(kind), or named(...) together with watches(...)")
        if not (callable(reconciler) or isinstance(reconciler, Reconciler)):
            errors.append(f"complete() needs a Reconciler or an async function, got {reconciler!r}")
        name = self._name or (self._for.gvk.kind.lower() if self._for else "")
        if name in self._manager.controller_names:
            errors.append(f"a controller named {name!r} exists already: pick another with named()")
        if errors:
            raise BuilderError("; ".join(errors))
        return name

    def complete(self, reconciler: Reconciler | ReconcilerFunc) -> Controller:
        """Validate, build the controller and add it to the manager.

        Its workers run on the leader only unless ``ControllerOptions.need_leader_election`` is
        False; its sources warm up on every replica.

        Raises:
            BuilderError: every misuse found, in one message.
        """
        name = self._validated_name(reconciler)
        options = self._options or ControllerOptions()
        graceful = self._manager.options.graceful_shutdown_timeout
        options = replace(options, graceful_shutdown_timeout=graceful)
        controller = Controller(name, reconciler, options=options, registry=self._manager.registry)
        for source in self._build_sources(options.cache_sync_timeout):
            controller.watch(source)
        self._manager.controller_names.add(name)
        self._manager.add(controller)
        return controller

    def _build_sources(self, sync_timeout: float) -> list[Source]:
        filters = tuple(self._filters)
        sources: list[Source] = []
        for watch in [w for w in (self._for, *self._watches) if w is not None]:
            predicates = (*filters, *watch.predicates)
            if isinstance(watch.cluster, Engaged):
                sources.append(self._engaged_source(watch, predicates, sync_timeout))
            else:
                cluster = self._manager.get_cluster(watch.cluster)
                sources.append(self._source_in(watch, predicates, watch.cluster, cluster))
        return [*sources, *self._sources]

    def _source_in(
        self, watch: _Watch, predicates: tuple[Predicate, ...], name: str, cluster: Cluster
    ) -> Source:
        handler = watch.handler or EnqueueRequestForObject()
        if isinstance(watch.cluster, Engaged):
            handler = in_cluster(handler, name)
        kind = Kind(cluster.cache, watch.gvk, handler, predicates, name, watch.metadata_only)
        if watch.owned and self._for is not None:
            return _OwnsSource(cluster, self._for.gvk, kind)
        return kind

    def _engaged_source(
        self, watch: _Watch, predicates: tuple[Predicate, ...], sync_timeout: float
    ) -> EngagedSource:
        assert isinstance(watch.cluster, Engaged)
        manager = self._manager

        def clusters() -> dict[str, Cluster]:
            return {"": manager.cluster, **manager.engaged()}

        def make(name: str, cluster: Cluster) -> Source:
            return self._source_in(watch, predicates, name, cluster)

        owned = "owned " if watch.owned else ""
        return EngagedSource(
            watch.cluster,
            make,
            clusters,
            description=f"{owned}kind source: {watch.gvk}",
            sync_timeout=sync_timeout,
        )
