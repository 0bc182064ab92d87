"""Source feeds a controller's work queue: it observes objects and enqueues Requests for them.

``Kind`` watches one kind through a cache's shared informer; its events pass the predicates, then
an EventHandler maps them to Requests. Initial-list and resync events are enqueued with low priority
so that live changes are handled first after a restart. ``Channel`` turns objects sent on an anyio
memory stream into generic events, for triggers that are not Kubernetes watches (a timer, another
cluster, a webhook). ``start`` never blocks; ``wait_for_sync`` waits for the initial list.
An async event handler (``EnqueueRequestsFromAsyncMapFunc``) is awaited by a task the source
starts in the controller's task group, fed through an unbounded stream: the informer hands the
event over and goes on.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import anyio
import structlog
from anyio.abc import ObjectReceiveStream, TaskGroup
from anyio.streams.memory import MemoryObjectSendStream

from reconcile.cache.cache import Cache
from reconcile.cache.informer import HandlerRegistration, SharedInformer
from reconcile.event import Event, EventType
from reconcile.gvk import GVK
from reconcile.handler import AsyncEventHandler, EventHandler, is_async_handler
from reconcile.objects import Obj
from reconcile.predicate import Predicate
from reconcile.reconciler import Request
from reconcile.workqueue import DEFAULT_PRIORITY, LOW_PRIORITY, WorkQueue

__all__ = ["Channel", "Kind", "Source"]

log = structlog.get_logger("reconcile.source")


class Source(Protocol):
    """Something a controller watches."""

    async def start(self, queue: WorkQueue[Request], task_group: TaskGroup) -> None:
        """Begin enqueueing into ``queue``; long-running work goes into ``task_group``."""
        ...

    async def wait_for_sync(self, timeout: float) -> None:
        """Wait until the source delivered its initial state; raise with the cause if it cannot."""
        ...


@dataclass
class _Dispatch:
    """Runs predicates and the handler for one source and enqueues the result."""

    handler: EventHandler | AsyncEventHandler
    predicates: tuple[Predicate, ...]
    queue: WorkQueue[Request]
    _pending: MemoryObjectSendStream[tuple[Event, int]] | None = field(default=None, init=False)

    def start(self, task_group: TaskGroup) -> _Dispatch:
        """Start the task that awaits an async handler (nothing to start for a sync one)."""
        if is_async_handler(self.handler):
            send, receive = anyio.create_memory_object_stream[tuple[Event, int]](math.inf)
            self._pending = send
            task_group.start_soon(self._map, receive, name=f"map {self.handler!r}")
        return self

    def __call__(self, event: Event, *, low_priority: bool = False) -> None:
        if not all(predicate(event) for predicate in self.predicates):
            return
        priority = LOW_PRIORITY if low_priority else DEFAULT_PRIORITY
        if self._pending is not None:
            # Unbounded, so this never blocks; once the source stopped, no one reconciles here.
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._pending.send_nowait((event, priority))
            return
        for request in cast(EventHandler, self.handler).requests(event):
            self.queue.add(request, priority=priority)

    async def _map(self, receive: ObjectReceiveStream[tuple[Event, int]]) -> None:
        handler = cast(AsyncEventHandler, self.handler)
        async with receive:
            async for event, priority in receive:
                try:
                    requests = await handler.requests(event)
                except Exception:  # as an informer handler's: logged, the others go on
                    log.exception("event handler failed", handler=repr(handler))
                    continue
                for request in requests:
                    self.queue.add(request, priority=priority)


@dataclass
class _InformerAdapter:
    """The informer-side handler that turns notifications into Events."""

    dispatch: _Dispatch
    cluster: str

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        event = Event(EventType.CREATE, obj, initial=is_in_initial_list, cluster=self.cluster)
        self.dispatch(event, low_priority=is_in_initial_list)

    def on_update(self, old: Obj, new: Obj) -> None:
        resync = old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion")
        event = Event(EventType.UPDATE, new, old, initial=resync, cluster=self.cluster)
        self.dispatch(event, low_priority=resync)

    def on_delete(self, obj: Obj) -> None:
        self.dispatch(Event(EventType.DELETE, obj, cluster=self.cluster))


@dataclass
class Kind:
    """Objects of one kind, from a cache's shared informer.

    Args:
        cache: the cluster's cache.
        gvk: the kind to watch.
        handler: maps events to requests.
        predicates: all must pass for an event to reach the handler.
        cluster: the cluster name put into events (and so into Requests).
        metadata_only: watch the kind's metadata-only informer: events carry
            PartialObjectMetadata objects (metadata only), and the cache holds no more.
    """

    cache: Cache
    gvk: GVK[Any]
    handler: EventHandler | AsyncEventHandler
    predicates: tuple[Predicate, ...] = ()
    cluster: str = ""
    metadata_only: bool = False
    _informers: list[SharedInformer] = field(default_factory=list, init=False, repr=False)
    _registrations: list[HandlerRegistration] = field(default_factory=list, init=False, repr=False)

    async def start(self, queue: WorkQueue[Request], task_group: TaskGroup) -> None:
        """Register on the kind's shared informers in its configured scope (one per cached
        namespace, or one), creating and starting them if needed."""
        self._informers = self.cache.get_informers(self.gvk, metadata_only=self.metadata_only)
        dispatch = _Dispatch(self.handler, self.predicates, queue).start(task_group)
        adapter = _InformerAdapter(dispatch, self.cluster)
        self._registrations = [informer.add_event_handler(adapter) for informer in self._informers]

    def stop(self) -> None:
        """Unregister from the informers: no further event reaches the queue (they keep running
        for the cache's other users)."""
        registrations, self._registrations = self._registrations, []
        for registration in registrations:
            with contextlib.suppress(ValueError):  # removed already
                registration.informer.remove_event_handler(registration)

    async def wait_for_sync(self, timeout: float) -> None:
        """Wait for the informer's initial list to reach this source's handler.

        Raises:
            CacheSyncError: the informer cannot sync (403, unknown kind) or ``timeout`` passed.
            RuntimeError: start() was not called.
        """
        if not self._informers or not self._registrations:
            raise RuntimeError(f"source for {self.gvk} was not started")
        deadline = anyio.current_time() + timeout  # one deadline for all, as for one informer
        for informer in self._informers:
            left = max(0.0, deadline - anyio.current_time())
            await self.cache.wait_for_informer(informer, left)

    def __str__(self) -> str:
        view = " (metadata only)" if self.metadata_only else ""
        return f"kind source: {self.gvk}{view}"


@dataclass
class Channel:
    """Generic events for objects received from a memory stream (closed stream: source ends)."""

    stream: ObjectReceiveStream[Obj]
    handler: EventHandler | AsyncEventHandler
    predicates: tuple[Predicate, ...] = ()
    cluster: str = ""

    async def start(self, queue: WorkQueue[Request], task_group: TaskGroup) -> None:
        """Start forwarding received objects as generic events."""
        dispatch = _Dispatch(self.handler, self.predicates, queue).start(task_group)
        task_group.start_soon(self._forward, dispatch)

    async def _forward(self, dispatch: _Dispatch) -> None:
        async with self.stream:
            async for obj in self.stream:
                dispatch(Event(EventType.GENERIC, obj, cluster=self.cluster))

    async def wait_for_sync(self, timeout: float) -> None:
        """A channel has no initial state: synced at once."""
        await anyio.lowlevel.checkpoint()

    def __str__(self) -> str:
        return "channel source"
