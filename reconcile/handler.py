"""Handler turns the events a controller watches into the Requests it reconciles.

controller-runtime's three, by the same names: ``EnqueueRequestForObject`` (the object itself),
``EnqueueRequestForOwner`` (the owner named in its ownerReferences — with ``controller_only``, the
controller owner; this is what ``Builder.owns`` uses) and ``EnqueueRequestsFromMapFunc`` (anything a
function computes). On updates both the old and the new object are mapped, so a change of owner or
of a mapped field enqueues both sides; duplicates are dropped here and, again, by the queue.

A map function that needs to read (the cached client, an indexed list: "which objects refer to
this Secret?") is async: ``EnqueueRequestsFromAsyncMapFunc(map_func)``, or any
``AsyncEventHandler`` (its ``requests`` is ``async def``). The source awaits it in a task of its
own, one event after the other, never in the informer's event handler, so a slow lookup delays
only this source's requests, not the informer or other controllers. A synchronous map function
may still look the cache up without waiting: ``Cache.by_index``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from reconcile.event import Event
from reconcile.gvk import GVK
from reconcile.objects import Obj
from reconcile.reconciler import Request

__all__ = [
    "AsyncEventHandler",
    "AsyncMapFunc",
    "EnqueueRequestForObject",
    "EnqueueRequestForOwner",
    "EnqueueRequestsFromAsyncMapFunc",
    "EnqueueRequestsFromMapFunc",
    "EventHandler",
    "MapFunc",
    "is_async_handler",
]

MapFunc = Callable[[Obj], Iterable[Request]]
AsyncMapFunc = Callable[[Obj], Awaitable[Iterable[Request]]]


class EventHandler(Protocol):
    """Maps one event to the requests it should cause."""

    def requests(self, event: Event) -> Iterable[Request]:
        """The requests for ``event`` (may be empty)."""
        ...


class AsyncEventHandler(Protocol):
    """Maps one event to the requests it should cause, and may await (read the cache) to."""

    async def requests(self, event: Event) -> Iterable[Request]:
        """The requests for ``event`` (may be empty)."""
        ...


def is_async_handler(handler: EventHandler | AsyncEventHandler) -> bool:
    """Whether ``handler.requests`` must be awaited."""
    return inspect.iscoroutinefunction(handler.requests)


def _objects(event: Event) -> Iterator[Obj]:
    if event.old is not None:
        yield event.old
    yield event.obj


def _unique(requests: Iterable[Request]) -> list[Request]:
    return list(dict.fromkeys(requests))


@dataclass(frozen=True)
class EnqueueRequestForObject:
    """Enqueue the object the event is about."""

    def requests(self, event: Event) -> Iterable[Request]:
        """One request for the event's object."""
        meta = event.obj["metadata"]
        return [Request(meta["name"], meta.get("namespace", ""), event.cluster)]


@dataclass(frozen=True)
class EnqueueRequestForOwner:
    """Enqueue the owner of kind ``owner`` (any version) named in the object's ownerReferences."""

    owner: GVK[Any]
    controller_only: bool = True
    owner_namespaced: bool = True

    def _matches(self, reference: dict[str, Any]) -> bool:
        group = str(reference.get("apiVersion", "")).rpartition("/")[0]
        if (group, reference.get("kind")) != (self.owner.group, self.owner.kind):
            return False
        return bool(reference.get("controller")) or not self.controller_only

    def requests(self, event: Event) -> Iterable[Request]:
        """Requests for the matching owners of the old and new object."""
        found = []
        for obj in _objects(event):
            meta = obj.get("metadata", {})
            namespace = meta.get("namespace", "") if self.owner_namespaced else ""
            for reference in meta.get("ownerReferences") or []:
                if self._matches(reference):
                    found.append(Request(reference["name"], namespace, event.cluster))
        return _unique(found)


@dataclass(frozen=True)
class EnqueueRequestsFromMapFunc:
    """Enqueue whatever ``map_func`` returns for the old and new object."""

    map_func: MapFunc

    def __post_init__(self) -> None:
        if inspect.iscoroutinefunction(self.map_func):
            raise TypeError(
                f"map function {self.map_func.__qualname__} is async: "
                "use EnqueueRequestsFromAsyncMapFunc"
            )

    def requests(self, event: Event) -> Iterable[Request]:
        """The mapped requests, without duplicates."""
        return _unique(r for obj in _objects(event) for r in self.map_func(obj))


@dataclass(frozen=True)
class EnqueueRequestsFromAsyncMapFunc:
    """Enqueue whatever the async ``map_func`` returns for the old and new object.

    ``map_func`` may read the cached client (``await client.list(KIND, namespace=ns,
    field_selector="spec.secretName=x")``, answered by a ``field:spec.secretName`` index of the
    cache) or the API; what it raises is logged and the event dropped, as for a sync map function.
    """

    map_func: AsyncMapFunc

    async def requests(self, event: Event) -> Iterable[Request]:
        """The mapped requests, without duplicates."""
        found: list[Request] = []
        for obj in _objects(event):
            found += await self.map_func(obj)
        return _unique(found)
