"""Builder wires a Reconciler into a Manager: what it is for, what it owns, what else it watches.

``controller_managed_by(mgr).for_(GVK(...)).owns(GVK(...)).complete(reconciler)`` records every call
and validates at ``complete``: a controller needs ``for_`` (or a ``named`` one with ``watches``),
``owns`` needs ``for_`` before it, names are unique per manager (they label metrics and logs), and
the reconciler must be a Reconciler or an async function. Every method returns the builder.
The name defaults to the lowercase kind of ``for_``. ``owns`` enqueues the controller owner of the
owned objects; ``with_event_filter`` predicates apply to every watch.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from anyio.abc import TaskGroup

from reconcile.controller import Controller, ControllerOptions
from reconcile.gvk import GVK
from reconcile.handler import (
    AsyncEventHandler,
    EnqueueRequestForObject,
    EnqueueRequestForOwner,
    EventHandler,
)
from reconcile.predicate import Predicate
from reconcile.reconciler import Reconciler, ReconcilerFunc, Request
from reconcile.source import Kind, Source
from reconcile.workqueue import WorkQueue

if TYPE_CHECKING:
    from reconcile.manager import Manager

__all__ = ["Builder", "BuilderError", "controller_managed_by"]


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
    cluster: str
    owned: bool = False
    metadata_only: bool = False


class _OwnsSource:
    """A Kind source whose owner handler learns the owner kind's scope when it starts."""

    def __init__(self, manager: Manager, owner: GVK[Any], kind: Kind) -> None:
        self._manager, self._owner, self._kind = manager, owner, kind

    async def start(self, queue: WorkQueue[Request], task_group: TaskGroup) -> None:
        resource = await self._manager.api_reader.resource_for(self._owner)
        handler = EnqueueRequestForOwner(self._owner, owner_namespaced=resource.namespaced)
        self._kind.handler = handler
        await self._kind.start(queue, task_group)

    async def wait_for_sync(self, timeout: float) -> None:
        await self._kind.wait_for_sync(timeout)

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

    def for_(self, gvk: GVK[Any], *predicates: Predicate, cluster: str = "") -> Builder:
        """Reconcile objects of ``gvk``: each event enqueues the object itself."""
        if self._for is not None:
            self._errors.append(f"for_() was called twice ({self._for.gvk} and {gvk})")
        self._for = _Watch(gvk, EnqueueRequestForObject(), predicates, cluster)
        return self

    def owns(
        self, gvk: GVK[Any], *predicates: Predicate, cluster: str = "", metadata_only: bool = False
    ) -> Builder:
        """Also watch ``gvk`` objects and enqueue their controller owner of the for_ kind.

        ``metadata_only``: watch (and cache) only their metadata, as PartialObjectMetadata
        (controller-runtime's ``builder.OnlyMetadata``); read them back with
        ``client.get(gvk, ..., metadata_only=True)``.
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
        cluster: str = "",
        metadata_only: bool = False,
    ) -> Builder:
        """Also watch a kind (through ``handler``) or any Source; ``metadata_only`` as in owns()."""
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
        for source in self._build_sources():
            controller.watch(source)
        self._manager.controller_names.add(name)
        self._manager.add(controller)
        return controller

    def _build_sources(self) -> list[Source]:
        filters = tuple(self._filters)
        sources: list[Source] = []
        for watch in [w for w in (self._for, *self._watches) if w is not None]:
            cache = self._manager.get_cluster(watch.cluster).cache
            predicates = (*filters, *watch.predicates)
            handler = watch.handler or EnqueueRequestForObject()
            kind = Kind(cache, watch.gvk, handler, predicates, watch.cluster, watch.metadata_only)
            if watch.owned and self._for is not None:
                sources.append(_OwnsSource(self._manager, self._for.gvk, kind))
            else:
                sources.append(kind)
        return [*sources, *self._sources]
