"""SharedInformer keeps an indexed store of one collection and tells event handlers what changed.

A reflector feeds it; it applies each change to its Indexer and then calls every registered handler
in order: ``on_add(obj, is_in_initial_list)``, ``on_update(old, new)`` (old and new with equal
resourceVersion is a resync) and ``on_delete(obj)`` (the object's final state). Handlers are plain
synchronous callables that must not block (they usually enqueue a key); one raising is logged and
does not stop the others.

A handler added after the informer synced first receives every stored object as an add, so late
registrations see the same world as early ones. Each registration has its own ``has_synced``: true
once the informer synced and the initial events reached that handler. Objects pass through a
transform before they are stored; the default drops ``metadata.managedFields``, which is often the
largest part of an object and never needed by controllers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Protocol

import anyio
import structlog

from reconcile.cache.reflector import (
    DEFAULT_INACTIVITY_TIMEOUT,
    DEFAULT_MIN_WATCH_TIMEOUT,
    Backoff,
    Reflector,
    StateSignal,
)
from reconcile.cache.store import Indexer, IndexFunc, decode, encode
from reconcile.client.interfaces import ListerWatcher
from reconcile.objects import Obj, object_key

__all__ = [
    "ResourceEventHandler",
    "FuncHandler",
    "HandlerRegistration",
    "SharedInformer",
    "Transform",
    "strip_managed_fields",
]

log = structlog.get_logger("reconcile.cache.informer")

Transform = Callable[[Obj], Obj]

DEFAULT_RESYNC_CHECK: Final = 1.0


def strip_managed_fields(obj: Obj) -> Obj:
    """The default transform: drop ``metadata.managedFields`` (server-side apply bookkeeping)."""
    obj.get("metadata", {}).pop("managedFields", None)
    return obj


class ResourceEventHandler(Protocol):
    """Receives an informer's notifications; every method must return quickly."""

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        """An object appeared (or was listed at start)."""

    def on_update(self, old: Obj, new: Obj) -> None:
        """An object changed; equal resourceVersions mean a periodic resync."""

    def on_delete(self, obj: Obj) -> None:
        """An object disappeared; ``obj`` is its last known state."""


@dataclass(frozen=True)
class FuncHandler:
    """A ResourceEventHandler made of optional functions."""

    add: Callable[[Obj, bool], None] | None = None
    update: Callable[[Obj, Obj], None] | None = None
    delete: Callable[[Obj], None] | None = None

    def on_add(self, obj: Obj, is_in_initial_list: bool) -> None:
        """Call ``add`` if given."""
        if self.add:
            self.add(obj, is_in_initial_list)

    def on_update(self, old: Obj, new: Obj) -> None:
        """Call ``update`` if given."""
        if self.update:
            self.update(old, new)

    def on_delete(self, obj: Obj) -> None:
        """Call ``delete`` if given."""
        if self.delete:
            self.delete(obj)


class HandlerRegistration:
    """One handler's registration on an informer; ask it whether that handler has synced."""

    def __init__(
        self, informer: SharedInformer, handler: ResourceEventHandler, resync: float | None
    ):
        self.informer = informer
        self.handler = handler
        self.resync_period = resync
        self.next_resync = 0.0
        self._delivered_initial = False

    def _initial_delivered(self) -> None:
        # client-go resyncs a handler one period after it got the initial list, not at once.
        self._delivered_initial = True
        if self.resync_period:
            self.next_resync = anyio.current_time() + self.resync_period

    def has_synced(self) -> bool:
        """Whether the informer synced and this handler received the initial list."""
        return self.informer.has_synced() and self._delivered_initial


class SharedInformer:
    """An Indexer kept equal to one collection, with handlers told about every change.

    Args:
        lister_watcher: the collection (see ``Client.lister_watcher``).
        name: for logs, e.g. the GVK and scope.
        indexers: extra indexes besides ``namespace``.
        transform: applied to each object before it is stored; default strip_managed_fields.
        resync_period: default seconds between resync notifications (None: never).
        backoff, inactivity_timeout, min_watch_timeout: passed to the Reflector.
        compress: keep the store's objects deflated against a dictionary (``Indexer``).

    Attributes:
        indexer: the ``Indexer`` the informer keeps: ``get(key)``, ``values()``,
            ``by_index(name, value)``, ``index_keys(name, value)``; synchronous, each object
            decoded afresh. Through a Cache, prefer ``Cache.by_index`` (every informer of the
            kind's scope) or the awaited ``Cache.list(..., index=...)`` (waits for sync).
    """

    def __init__(
        self,
        lister_watcher: ListerWatcher,
        *,
        name: str,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = strip_managed_fields,
        resync_period: float | None = None,
        backoff: Backoff | None = None,
        inactivity_timeout: float = DEFAULT_INACTIVITY_TIMEOUT,
        min_watch_timeout: int = DEFAULT_MIN_WATCH_TIMEOUT,
        compress: bool = False,
    ) -> None:
        self.name = name
        self.indexer = Indexer(indexers, compress=compress)
        self._transform = transform
        self._resync_period = resync_period
        self._registrations: list[HandlerRegistration] = []
        self.state = StateSignal()
        self.reflector = Reflector(
            lister_watcher,
            self,
            name=name,
            backoff=backoff,
            inactivity_timeout=inactivity_timeout,
            min_watch_timeout=min_watch_timeout,
            on_state=self.state.notify,
        )
        self._synced = False
        self.started = False

    # --- reading -------------------------------------------------------------------------------

    def has_synced(self) -> bool:
        """Whether the first list reached the store."""
        return self._synced

    @property
    def last_error(self) -> BaseException | None:
        """The reflector's most recent list/watch failure, cleared by the next successful list."""
        return self.reflector.last_error

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes; objects already stored are filed at once."""
        self.indexer.add_indexers(indexers)

    # --- handlers --------------------------------------------------------------------------------

    def add_event_handler(
        self, handler: ResourceEventHandler, *, resync_period: float | None = None
    ) -> HandlerRegistration:
        """Register ``handler``; after sync it first receives the whole store as adds."""
        registration = HandlerRegistration(self, handler, resync_period or self._resync_period)
        self._registrations.append(registration)
        if self._synced:
            for obj in self.indexer.values():
                _safely(handler.on_add, obj, True)
            registration._initial_delivered()
        return registration

    def remove_event_handler(self, registration: HandlerRegistration) -> None:
        """Stop notifying a handler."""
        self._registrations.remove(registration)

    # --- the reflector's sink --------------------------------------------------------------------

    def replace(self, items: list[Obj], resource_version: str) -> None:
        """Make the store equal ``items``: adds, updates, and deletes for what is gone."""
        initial = not self._synced
        # Nothing of the list is freed until every object is stored: what a transform drops from
        # an object or its metadata (managedFields, by default) stays referenced here, so the
        # keys and encodings made meanwhile are laid out after the list instead of in its holes,
        # and the list's memory can be returned whole once the reflector drops it.
        held: list[object] = []
        for item in items:
            held += item.values()
            held += (item.get("metadata") or {}).values()
        incoming = {}
        for item in items:
            obj = self._transformed(item)
            incoming[object_key(obj)] = obj
        self._delete_missing(incoming)
        for key, obj in incoming.items():
            self._notify_upsert(self.indexer.upsert_encoded(key, encode(obj), obj), obj, initial)
        del held
        self._replaced(initial)

    def stage(self, obj: Obj) -> bytes:
        """``obj`` as the store will keep it (transformed, encoded), for ``replace_encoded``.

        A reflector stages a watch-list's objects as they arrive, so that until its bookmark it
        holds their encodings rather than thousands of decoded objects.
        """
        return encode(self._transformed(obj))

    def replace_encoded(self, items: Mapping[str, bytes], resource_version: str) -> None:
        """``replace`` for objects given by key in the form ``stage`` made: the same adds,
        updates, deletes and sync, each object decoded only for the handlers (if any)."""
        initial = not self._synced
        self._delete_missing(items)
        for key, encoded in items.items():
            # One decoded object at a time, dropped before the next: nothing to fragment the heap.
            obj = decode(encoded) if self._registrations else None
            previous = self.indexer.upsert_encoded(key, encoded, obj)
            if obj is not None:
                self._notify_upsert(previous, obj, initial)
        self._replaced(initial)

    def _delete_missing(self, incoming: Mapping[str, object]) -> None:
        for key in self.indexer.keys():  # noqa: SIM118 - a copy: deleting while iterating
            if key not in incoming:
                old = self.indexer.delete(key)
                if old is not None:
                    self._notify_delete(old)

    def _replaced(self, initial: bool) -> None:
        if initial:
            self._synced = True
            for registration in self._registrations:
                registration._initial_delivered()

    def _notify_upsert(self, previous: Obj | None, obj: Obj, initial: bool) -> None:
        if previous is None:
            self._notify_add(obj, initial)
        else:
            self._notify_update(previous, obj)

    def apply(self, event_type: str, obj: Obj) -> None:
        """Apply one watch event and notify."""
        obj = self._transformed(obj)
        if event_type == "DELETED":
            # The event carries the object's final state, fresher than what the store held.
            self.indexer.delete(object_key(obj))
            self._notify_delete(obj)
            return
        self._notify_upsert(self.indexer.upsert(obj), obj, False)

    def _transformed(self, obj: Obj) -> Obj:
        return self._transform(obj) if self._transform else obj

    def _notify_add(self, obj: Obj, initial: bool) -> None:
        for registration in list(self._registrations):
            _safely(registration.handler.on_add, obj, initial)

    def _notify_update(self, old: Obj, new: Obj) -> None:
        for registration in list(self._registrations):
            _safely(registration.handler.on_update, old, new)

    def _notify_delete(self, obj: Obj) -> None:
        for registration in list(self._registrations):
            _safely(registration.handler.on_delete, obj)

    # --- running -------------------------------------------------------------------------------

    async def run(self) -> None:
        """Run the reflector (and the resync clock) until cancelled."""
        self.started = True
        self.state.notify()
        async with anyio.create_task_group() as group:
            group.start_soon(self._resync_loop)
            await self.reflector.run()

    async def wait_for_sync(self) -> None:
        """Wait until the first list reached the store (no timeout; wrap in one)."""
        while not self._synced:
            await self.state.wait()

    async def _resync_loop(self) -> None:
        while True:
            periods = [r.resync_period for r in self._registrations if r.resync_period]
            await anyio.sleep(min([DEFAULT_RESYNC_CHECK, *periods]))
            now = anyio.current_time()
            for registration in list(self._registrations):
                period = registration.resync_period
                if not period or not self._synced or now < registration.next_resync:
                    continue
                registration.next_resync = now + period
                for obj in self.indexer.values():
                    _safely(registration.handler.on_update, obj, obj)


def _safely(callback: Callable[..., None], *args: object) -> None:
    try:
        callback(*args)
    except Exception:  # one broken handler must not starve the others
        log.exception("event handler failed", handler=getattr(callback, "__qualname__", "?"))
