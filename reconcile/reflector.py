"""Reflector keeps a sink (an informer's store) equal to one apiserver collection: list, then watch.

The loop, as in client-go: list (first from the watch cache with resourceVersion "0", later from
the last seen resourceVersion, or a quorum read after a 410), paginated; hand the items to the sink
as a replace; then watch from the list's resourceVersion with bookmarks and a random server
timeout, applying each event, and re-watch from the last seen resourceVersion when the stream ends.
A 410 Gone (compacted history) goes back to listing; a refused connection or a 429 backs off and
re-watches; other failures back off (exponential with jitter, reset after a healthy stretch) and
relist.

Where it does better than client-go: a client-side inactivity timeout (a watch that delivers
nothing, not even a bookmark, for ``inactivity_timeout`` seconds is reconnected: Python clients have
been seen hanging forever there), and the last error is kept for callers that wait for sync (a 403
reaches the user instead of an endless wait)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

import aiohttp
import anyio
import structlog

from reconcile.client import DEFAULT_PAGE_SIZE, ListerWatcher
from reconcile.errors import ApiError, Gone, TooManyRequests, api_error
from reconcile.store import Obj, release_heap

__all__ = ["Backoff", "Reflector", "ReflectorSink", "StateSignal"]

log = structlog.get_logger("reconcile.reflector")

RELEASE_HEAP_AFTER: Final = 1000
"""Objects in a list after which the reflector returns the list's freed memory to the system."""
DEFAULT_INACTIVITY_TIMEOUT: Final = 70.0
DEFAULT_MIN_WATCH_TIMEOUT: Final = 300


class ReflectorSink(Protocol):
    """Where a reflector delivers what it lists and watches."""

    def replace(self, items: list[Obj], resource_version: str) -> None:
        """The full content of the collection at ``resource_version``."""

    def apply(self, event_type: str, obj: Obj) -> None:
        """One ADDED, MODIFIED or DELETED event."""


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter; client-go's reflector defaults."""

    initial: float = 0.8
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 1.0
    reset_after: float = 120.0

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` consecutive failures (≥ 1)."""
        base = min(self.initial * self.factor ** max(failures - 1, 0), self.maximum)
        return base * (1 + random.random() * self.jitter)


class StateSignal:
    """Wakes every waiter whenever some state changed; waiters then re-check what they need."""

    def __init__(self) -> None:
        self._event = anyio.Event()

    def notify(self) -> None:
        """Wake the current waiters."""
        self._event.set()
        self._event = anyio.Event()

    def current(self) -> anyio.Event:
        """The event the next notify() sets; take it before checking, wait on it after."""
        return self._event

    async def wait(self) -> None:
        """Wait for the next notify()."""
        await self._event.wait()


class _Relist(Exception):
    # Control flow only: never escapes the reflector.
    """The watch cannot continue from the last resourceVersion: list again."""


class Reflector:
    """Lists and watches one collection into a sink until cancelled.

    Args:
        lister_watcher: the collection.
        sink: receives replace() after each list and apply() for each watch event.
        name: used in logs (e.g. ``v1, Kind=ConfigMap``).
        page_size: list page size for reads that are not served from the watch cache.
        backoff: delays between failed attempts.
        min_watch_timeout: watches ask the server to end after a random 1-2x this many seconds.
        inactivity_timeout: reconnect a watch that delivered nothing for this long.
        on_state: called when synced or last_error change.
    """

    def __init__(
        self,
        lister_watcher: ListerWatcher,
        sink: ReflectorSink,
        *,
        name: str,
        page_size: int = DEFAULT_PAGE_SIZE,
        backoff: Backoff | None = None,
        min_watch_timeout: int = DEFAULT_MIN_WATCH_TIMEOUT,
        inactivity_timeout: float = DEFAULT_INACTIVITY_TIMEOUT,
        on_state: Callable[[], None] | None = None,
        clock: Callable[[], float] = anyio.current_time,
    ) -> None:
        self._lw = lister_watcher
        self._sink = sink
        self.name = name
        self._page_size = page_size
        self._backoff = backoff or Backoff()
        self._min_watch_timeout = min_watch_timeout
        self._inactivity_timeout = inactivity_timeout
        self._on_state = on_state or (lambda: None)
        self._clock = clock
        self.last_sync_resource_version = ""
        self._rv_unavailable = False
        self.last_error: BaseException | None = None
        self.synced = False
        self.relists = 0

    async def run(self) -> None:
        """List and watch until cancelled; failures are retried, never raised."""
        failures = 0
        while True:
            started = self._clock()
            try:
                await self._list()
                await self._watch_until_relist()
            except _Relist:
                failures = 0
                continue
            except Exception as error:  # every failure is retried, and surfaced
                self._fail(error)
            if self._clock() - started >= self._backoff.reset_after:
                failures = 0
            failures += 1
            await anyio.sleep(self._backoff.delay(failures))

    def _fail(self, error: BaseException) -> None:
        self.last_error = error
        log.warning("list/watch failed", reflector=self.name, error=str(error))
        self._on_state()

    def _list_resource_version(self) -> str:
        if self._rv_unavailable:
            return ""  # a quorum read: the last version is gone from the server's history
        return self.last_sync_resource_version or "0"

    async def _list(self) -> None:
        resource_version = self._list_resource_version()
        try:
            items, list_rv = await self._list_all(resource_version)
        except Gone:
            if resource_version == "":
                raise
            self._rv_unavailable = True
            items, list_rv = await self._list_all("")
        listed = len(items)
        self._sink.replace(items, list_rv)
        del items  # the decoded list is garbage now, most of it in the C heap
        if listed >= RELEASE_HEAP_AFTER:
            release_heap()
        self.relists += 1
        self.last_sync_resource_version = list_rv
        self._rv_unavailable = False
        self.last_error = None
        self.synced = True
        self._on_state()

    async def _list_all(self, resource_version: str) -> tuple[list[Obj], str]:
        # As client-go: only a quorum read ("") is paginated. With a version the watch cache
        # answers whole, no older than it; a limit there would turn it into an exact read from
        # etcd, whose answer at the old version sends the next watch straight into a 410 again.
        paginate = resource_version == ""
        match = "NotOlderThan" if resource_version not in ("", "0") else None
        items: list[Obj] = []
        token: str | None = None
        while True:
            page = await self._lw.list(
                resource_version=resource_version if token is None else None,
                resource_version_match=match if token is None else None,
                limit=self._page_size if paginate else None,
                continue_=token,
            )
            items += _typed_items(page)
            token = page.get("metadata", {}).get("continue") or None
            if token is None:
                return items, str(page["metadata"]["resourceVersion"])

    async def _watch_until_relist(self) -> None:
        failures = 0
        while True:
            try:
                await self._watch_once()
                failures = 0
            except (TooManyRequests, OSError, TimeoutError, aiohttp.ClientError) as error:
                # Throttled, or the server is away or dropped the stream: keep our place, re-watch.
                self._fail(error)
                failures += 1
                await anyio.sleep(self._backoff.delay(failures))
            except Gone as error:
                log.info("watch expired, relisting", reflector=self.name, error=str(error))
                raise _Relist from error

    async def _watch_once(self) -> None:
        timeout = random.randint(self._min_watch_timeout, 2 * self._min_watch_timeout)
        stream = self._lw.watch(
            resource_version=self.last_sync_resource_version, timeout_seconds=timeout
        )
        async with stream as events:
            while True:
                with anyio.move_on_after(self._inactivity_timeout):
                    event = await anext(events, None)
                    if event is None:
                        return  # the server ended the watch (its timeout): re-watch
                    self._handle(event)
                    continue
                # Routine for a kind nobody writes: the apiserver's bookmarks do not always come
                # within the timeout. A new watch from the same resourceVersion loses nothing.
                log.debug("watch inactive, reconnecting", reflector=self.name)
                return

    def _handle(self, event: dict[str, Any]) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            raise api_error(int(obj.get("code") or 500), obj)
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            self._sink.apply(kind, obj)
        elif kind != "BOOKMARK":
            raise ApiError({"code": 500, "message": f"unknown watch event type {kind!r}"})
        rv = obj.get("metadata", {}).get("resourceVersion")
        if rv:
            self.last_sync_resource_version = rv


def _typed_items(page: dict[str, Any]) -> list[Obj]:
    """List items omit apiVersion/kind for built-in types; cached objects carry them."""
    api_version = page.get("apiVersion", "")
    list_kind = str(page.get("kind", ""))
    kind = list_kind.removesuffix("List")
    items: list[Obj] = page.get("items") or []
    for item in items:
        item.setdefault("apiVersion", api_version)
        item.setdefault("kind", kind)
    return items
