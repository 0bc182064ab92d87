"""ManagedObjects is a Source of the member objects Karmada manages, of one kind in one member.

It watches through a label-scoped informer (``karmada.io/managed=true``) of the member's cache, so
a member's other objects of that kind are never listed nor held in memory: the kind is scoped so
in the member cache (``Cache.configure``), and reads through the member's cached client use that
informer too (a list must then select the managed label). A sharded replica narrows the scope to
the objects labelled with its shard (``managed_scope``), which its execution controller puts on
the objects of its Works: each replica then holds only its own part of every member.

It maps every event back to the Work that owns the object, named by its
``work.karmada.io/namespace`` and ``work.karmada.io/name`` annotations. An object that claims a
Work of another member's execution namespace is ignored: a member can only report on its own
Works.

It follows ``reconcile.Kind``, with its own handler: ``start`` registers a handler and never blocks,
``wait_for_sync`` waits for the informer's initial list, initial-list events get low priority,
``stop`` removes the handler.

``MemberObjects`` is the source of one engaged member: a ``ManagedObjects`` per kind the Works of
that member apply, kinds added as Works name them (they are learnt at run time). The execution
controller watches it in every engaged member (``reconcile.multicluster.EngagedSource``), so a
member's watches start when it is engaged and stop when it is disengaged; starting, it enqueues
that member's Works, so a new engagement (a new cache, whose informers start empty) has every
Work looked at again without waiting for one to change.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

import anyio
from anyio.abc import TaskGroup

from controllers.api import (
    MANAGED_LABEL,
    MANAGED_LABEL_VALUE,
    WORK_NAME_ANNOTATION,
    WORK_NAMESPACE_ANNOTATION,
    execution_namespace,
)
from reconcile import (
    DEFAULT_PRIORITY,
    GVK,
    LOW_PRIORITY,
    ByObject,
    Cache,
    HandlerRegistration,
    Obj,
    Request,
    SharedInformer,
    WorkQueue,
    annotations_of,
)

__all__ = [
    "MANAGED_SCOPE",
    "MANAGED_SELECTOR",
    "ManagedObjects",
    "MemberObjects",
    "managed_informer",
    "managed_scope",
    "work_request",
]

MANAGED_SELECTOR: Final = f"{MANAGED_LABEL}={MANAGED_LABEL_VALUE}"
"""The label selector of every member informer the execution controller opens."""


MANAGED_SCOPE: Final = ByObject(label_selector=MANAGED_SELECTOR)
"""How a member cache holds every kind the execution controller applies: managed objects only."""


def managed_scope(labels: Mapping[str, str]) -> ByObject:
    """``MANAGED_SCOPE`` narrowed to the managed objects that also carry ``labels``."""
    if not labels:
        return MANAGED_SCOPE
    narrowed = ",".join(f"{key}={value}" for key, value in sorted(labels.items()))
    return ByObject(label_selector=f"{MANAGED_SELECTOR},{narrowed}")


def managed_informer(cache: Cache, gvk: GVK, scope: ByObject = MANAGED_SCOPE) -> SharedInformer:
    """The member cache's shared informer for the managed objects of ``gvk`` (started if new).

    The kind is scoped to ``scope`` first, so that every read of it through the member's cache,
    the cached client's included, uses this informer and never opens a cluster-wide one.
    """
    cache.configure(gvk, scope)
    return cache.get_informer(gvk)


def work_request(obj: Obj, cluster: str) -> Request | None:
    """The Work owning a member object of ``cluster``; None when it names none of its Works."""
    annotations = annotations_of(obj)
    name = annotations.get(WORK_NAME_ANNOTATION)
    namespace = annotations.get(WORK_NAMESPACE_ANNOTATION)
    if not name or namespace != execution_namespace(cluster):
        return None
    return Request(name, namespace)


@dataclass
class _Enqueue:
    """The informer-side handler: every notification enqueues the owning Work (on the host)."""

    queue: WorkQueue[Request]
    cluster: str

    def _add(self, obj: Obj, *, low_priority: bool = False) -> None:
        request = work_request(obj, self.cluster)
        if request is not None:
            self.queue.add(request, priority=LOW_PRIORITY if low_priority else DEFAULT_PRIORITY)

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        self._add(obj, low_priority=is_in_initial_list)

    def on_update(self, old: Obj, new: Obj) -> None:
        resync = old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion")
        # Both sides: an edited annotation may move the object from one Work to another.
        self._add(old, low_priority=resync)
        self._add(new, low_priority=resync)

    def on_delete(self, obj: Obj) -> None:
        self._add(obj)


@dataclass
class ManagedObjects:
    """Managed objects of one kind in one member cluster; events enqueue their Works.

    Args:
        cache: the member cluster's cache.
        gvk: the kind to watch.
        cluster: the member's name (the Works live in ``karmada-es-<cluster>``).
        scope: which of them the member cache holds (``managed_scope``).
    """

    cache: Cache
    gvk: GVK
    cluster: str
    scope: ByObject = MANAGED_SCOPE
    _informer: SharedInformer | None = field(default=None, init=False, repr=False)
    _registration: HandlerRegistration | None = field(default=None, init=False, repr=False)

    async def start(self, queue: WorkQueue[Request], task_group: TaskGroup) -> None:
        """Register on the label-scoped informer (creating and starting it if needed)."""
        self.register(queue)
        await anyio.lowlevel.checkpoint()

    def register(self, queue: WorkQueue[Request]) -> None:
        """``start``, without awaiting: for a source started from an informer handler."""
        self.stop()
        self._informer = managed_informer(self.cache, self.gvk, self.scope)
        self._registration = self._informer.add_event_handler(_Enqueue(queue, self.cluster))

    def stop(self) -> None:
        """Stop enqueuing (idempotent); the informer is the member cache's, stopped with it."""
        registration, self._registration = self._registration, None
        if registration is not None and self._informer is not None:
            self._informer.remove_event_handler(registration)

    async def wait_for_sync(self, timeout: float) -> None:
        """Wait for the informer's initial list.

        Raises:
            CacheSyncError: the informer cannot sync (403, kind unknown to the member) in time.
            RuntimeError: start() was not called.
        """
        if self._informer is None:
            raise RuntimeError(f"source for managed {self.gvk} in {self.cluster} was not started")
        await self.cache.wait_for_informer(self._informer, timeout)

    def __str__(self) -> str:
        return f"managed objects source: {self.gvk} in {self.cluster}"


class MemberObjects:
    """The managed objects of every kind the Works of one member apply; events enqueue Works.

    Args:
        cache: the member cluster's cache.
        cluster: the member's name.
        scope: which of them the member cache holds (``managed_scope``).
        works: the Works of the member, enqueued when the source starts.
        on_stop: called once the source stopped (to forget it).
    """

    def __init__(
        self,
        cache: Cache,
        cluster: str,
        scope: ByObject,
        works: Callable[[], Iterable[Request]],
        on_stop: Callable[[MemberObjects], None] | None = None,
    ) -> None:
        self.cache = cache
        self.cluster = cluster
        self.scope = scope
        self._works = works
        self._on_stop = on_stop
        self._kinds: dict[GVK, ManagedObjects] = {}
        self._queue: WorkQueue[Request] | None = None
        self.stopped = False

    @property
    def kinds(self) -> frozenset[GVK]:
        """The kinds watched (or to be watched once started)."""
        return frozenset(self._kinds)

    def add(self, gvk: GVK) -> None:
        """Watch ``gvk`` too (at once if started); never blocks."""
        if gvk in self._kinds or self.stopped:
            return
        source = self._kinds[gvk] = ManagedObjects(self.cache, gvk, self.cluster, self.scope)
        if self._queue is not None:
            source.register(self._queue)

    async def start(self, queue: WorkQueue[Request], task_group: TaskGroup) -> None:
        """Register on the informer of every kind added so far, then enqueue the member's Works."""
        self._queue = queue
        for source in list(self._kinds.values()):
            source.register(queue)
        for request in self._works():
            queue.add(request)
        await anyio.lowlevel.checkpoint()

    async def wait_for_sync(self, timeout: float) -> None:
        """Wait (``timeout`` in all) for the initial list of every kind added so far.

        Raises:
            CacheSyncError: an informer cannot sync (403, kind unknown to the member) in time.
        """
        with anyio.fail_after(timeout):
            for source in list(self._kinds.values()):
                await source.wait_for_sync(timeout)

    def stop(self) -> None:
        """Stop enqueuing, for every kind (idempotent)."""
        if self.stopped:
            return
        self.stopped = True
        self._queue = None
        for source in self._kinds.values():
            source.stop()
        if self._on_stop is not None:
            self._on_stop(self)

    def __str__(self) -> str:
        return f"managed objects source in {self.cluster}"
