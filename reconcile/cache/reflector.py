"""Reflector keeps a sink (an informer's store) equal to one apiserver collection: sync, then watch.

The loop, as in client-go's reflector. Sync, by default through a WatchList (client-go's default
since 1.35): one watch with sendInitialEvents=true and resourceVersionMatch=NotOlderThan streams
the current objects as ADDED events and ends them with a BOOKMARK annotated
``k8s.io/initial-events-end``; the events collected until then reach the sink as one replace, and
the same stream goes on as the watch. A sink that stages (an informer) gets each object as it
arrives and returns the form it will store (the encoding), so the reflector never holds the
decoded objects until the bookmark. A server that refuses it (400/422: the WatchList feature off,
or older than 1.27) or whose stream ends before that bookmark (it ignored sendInitialEvents) gets
list+watch from then on; any other failure of a watch-list falls back to a list for that round.

The list: first with resourceVersion "0" (the watch cache), later from the last seen
resourceVersion, or a quorum read ("") when that version is unavailable (410 Gone, or 504
ResourceVersionTooLarge from an apiserver behind it). "0" and "" are paginated; the watch cache
answers "0" whole, but with the watch cache off the apiserver pages it, and then relists stay paged
too (client-go's paginatedResult). A continue token that expires mid-list falls back to one full
list at the same version (client-go's pager, FullListIfExpired).

Then watch from the synced resourceVersion with bookmarks and a random server timeout, applying
each event, and re-watch from the last seen resourceVersion when the stream ends. A 410 Gone
(compacted history) ends the round and relists; a refused connection or a 429 backs off and
re-watches. Every new round waits for the backoff manager first (exponential from 0.8 s to 30 s
with jitter, back to the start after 2 minutes without a backoff, as client-go), so repeated 410s
or failures never become a relist loop.

Where it does better than client-go: a client-side inactivity timeout (a watch that delivers
nothing, not even a bookmark, for ``inactivity_timeout`` seconds is reconnected: Python clients have
been seen hanging forever there), and the last error is kept for callers that wait for sync (a 403
reaches the user instead of an endless wait)."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, runtime_checkable

import aiohttp
import anyio
import structlog

from reconcile.cache.store import release_heap
from reconcile.client.interfaces import DEFAULT_PAGE_SIZE, ListerWatcher
from reconcile.errors import (
    ApiError,
    BadRequest,
    Gone,
    Invalid,
    ServerTimeout,
    TooManyRequests,
    api_error,
)
from reconcile.objects import Obj, object_key

__all__ = [
    "INITIAL_EVENTS_END",
    "WATCH_LIST_ENV",
    "Backoff",
    "BackoffManager",
    "Reflector",
    "ReflectorSink",
    "StagingSink",
    "StateSignal",
    "is_resource_version_too_large",
    "watch_list_default",
]

log = structlog.get_logger("reconcile.cache.reflector")

RELEASE_HEAP_AFTER: Final = 1000
"""Objects in a list after which the reflector returns the list's freed memory to the system."""
DEFAULT_INACTIVITY_TIMEOUT: Final = 70.0
DEFAULT_MIN_WATCH_TIMEOUT: Final = 300
INACTIVITY_SLACK: Final = 1.0
"""How often a watch's inactivity deadline moves on: it may count as inactive this much early."""
INITIAL_EVENTS_END: Final = "k8s.io/initial-events-end"
"""The annotation on the BOOKMARK that ends a watch-list's initial events."""
WATCH_LIST_ENV: Final = "KUBE_FEATURE_WatchListClient"
"""client-go's switch for its WatchListClient feature: ``false`` makes reflectors list+watch."""
TOO_LARGE_CAUSE: Final = "ResourceVersionTooLarge"
TOO_LARGE_MESSAGE: Final = "Too large resource version"


def watch_list_default() -> bool:
    """Whether reflectors sync through a WatchList unless told: yes, unless ``WATCH_LIST_ENV`` is
    ``false`` (as client-go reads its feature gates from ``KUBE_FEATURE_<name>``)."""
    return os.environ.get(WATCH_LIST_ENV, "").strip().lower() != "false"


def is_resource_version_too_large(error: BaseException) -> bool:
    """Whether ``error`` says the apiserver has not reached the requested resourceVersion.

    Current servers answer 504 with the cause ``ResourceVersionTooLarge``; 1.17 to 1.18.5 sent only
    the message, in a cause or in the Status itself (client-go checks all three).
    """
    if not isinstance(error, ApiError):
        return False
    causes = error.details.get("causes") or []
    if any(cause.get("reason") == TOO_LARGE_CAUSE for cause in causes):
        return True
    if not isinstance(error, ServerTimeout):
        return False
    return TOO_LARGE_MESSAGE in error.message or any(
        cause.get("message") == TOO_LARGE_MESSAGE for cause in causes
    )


def _unavailable(error: BaseException) -> bool:
    """The requested resourceVersion cannot be served: compacted away, or not reached yet."""
    return isinstance(error, Gone) or is_resource_version_too_large(error)


class ReflectorSink(Protocol):
    """Where a reflector delivers what it lists and watches."""

    def replace(self, items: list[Obj], resource_version: str) -> None:
        """The full content of the collection at ``resource_version``.

        The reflector empties ``items`` afterwards, to free the decoded list at once: keep the
        objects, not the list.
        """

    def apply(self, event_type: str, obj: Obj) -> None:
        """One ADDED, MODIFIED or DELETED event."""


@runtime_checkable
class StagingSink(ReflectorSink, Protocol):
    """A sink that takes a watch-list's initial objects in its stored form as they arrive.

    Until the initial-events-end bookmark the reflector keeps what ``stage`` made of each object
    instead of the decoded object (an informer's encoding is a fraction of its size, and the
    decoded event is freed at once), then hands them over as one ``replace_encoded``.
    """

    def stage(self, obj: Obj) -> bytes:
        """``obj`` in the form the sink stores it; must not change the sink."""

    def replace_encoded(self, items: Mapping[str, bytes], resource_version: str) -> None:
        """As ``replace``, for staged objects by key (``object_key``); the reflector empties
        ``items`` afterwards."""


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter; client-go's reflector defaults.

    ``reset_after``: a ``BackoffManager`` starts again from ``initial`` when this many seconds
    passed since it last backed off.
    """

    initial: float = 0.8
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 1.0
    reset_after: float = 120.0

    def delay(self, failures: int) -> float:
        """Seconds to wait after ``failures`` consecutive failures (≥ 1)."""
        base = min(self.initial * self.factor ** max(failures - 1, 0), self.maximum)
        return base * (1 + random.random() * self.jitter)


class BackoffManager:
    """Delays that grow with each backoff and reset after a quiet period (client-go's
    ``wait.NewExponentialBackoffManager``, which its reflector shares between relists and
    re-watches: 0.8 s, 1.6 s, ... up to [30, 60) s, back to 0.8 s after 2 minutes without one).

    Args:
        backoff: the delays.
        clock: seconds, monotonic (``anyio.current_time`` unless a test injects one).
    """

    def __init__(self, backoff: Backoff, clock: Callable[[], float] = anyio.current_time) -> None:
        self._backoff = backoff
        self._clock = clock
        self._steps = 0
        self._last: float | None = None

    def next_delay(self) -> float:
        """The next delay; counts as a backoff taken now."""
        now = self._clock()
        if self._last is not None and now - self._last > self._backoff.reset_after:
            self._steps = 0
        self._last = now
        self._steps += 1
        return self._backoff.delay(self._steps)

    async def wait(self) -> None:
        """Sleep for the next delay."""
        await anyio.sleep(self.next_delay())


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


class _WatchListFailed(Exception):
    # Control flow only: never escapes the reflector.
    """A watch-list could not sync; ``refused`` when the server does not do watch-lists at all."""

    def __init__(self, cause: BaseException | None, *, refused: bool) -> None:
        super().__init__(str(cause) if cause else "the stream ended before its initial-events-end")
        self.refused = refused


_RETRIABLE: Final = (TooManyRequests, OSError, TimeoutError, aiohttp.ClientError)
"""Watch failures after which the server is asked again from the same place, after a backoff."""


class Reflector:
    """Syncs and watches one collection into a sink until cancelled.

    Args:
        lister_watcher: the collection.
        sink: receives replace() after each sync and apply() for each watch event.
        name: used in logs (e.g. ``v1, Kind=ConfigMap``).
        page_size: list page size for the reads that are paginated.
        backoff: delays between failed attempts and between rounds.
        min_watch_timeout: watches ask the server to end after a random 1-2x this many seconds.
        inactivity_timeout: reconnect a watch that delivered nothing for this long.
        on_state: called when synced or last_error change.
        clock: monotonic seconds, for the backoff's quiet period.
        use_watch_list: sync through a WatchList; None: ``watch_list_default()``. Turned off by
            the reflector itself when the server refuses watch-lists.

    Attributes:
        last_sync_via: how the last sync came: ``"watch-list"`` or ``"list"`` (None before).
        relists: syncs so far, by either way.
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
        use_watch_list: bool | None = None,
    ) -> None:
        self._lw = lister_watcher
        self._sink = sink
        self.name = name
        self._page_size = page_size
        self._backoffs = BackoffManager(backoff or Backoff(), clock)
        self._min_watch_timeout = min_watch_timeout
        self._inactivity_timeout = inactivity_timeout
        self._on_state = on_state or (lambda: None)
        self.use_watch_list = watch_list_default() if use_watch_list is None else use_watch_list
        self.last_sync_resource_version = ""
        self._rv_unavailable = False
        self._paginated = False
        self._staging = sink if isinstance(sink, StagingSink) else None
        # The objects a watch-list streamed so far, until its initial-events-end bookmark: by key,
        # as the sink staged them (bytes), or decoded for a sink that does not stage.
        self._initial: dict[str, Any] | None = None
        self.last_error: BaseException | None = None
        self.last_sync_via: Literal["list", "watch-list"] | None = None
        self.synced = False
        self.relists = 0

    async def run(self) -> None:
        """Sync and watch until cancelled; failures are retried, never raised."""
        while True:
            try:
                await self._sync_and_watch()
            except Exception as error:  # every failure is retried, and surfaced
                self._fail(error)
            # Between rounds always, as client-go's BackoffUntil: a relist after a 410 too.
            await self._backoffs.wait()

    async def _sync_and_watch(self) -> None:
        """One round: sync the sink, then watch until the watch cannot go on."""
        if self.use_watch_list:
            try:
                await self._watch(watch_list=True)
                return
            except _WatchListFailed as failed:
                self._fall_back(failed)
        await self._list()
        await self._watch(watch_list=False)

    def _fall_back(self, failed: _WatchListFailed) -> None:
        if failed.refused:
            # The server will refuse the next one too: do not ask on every relist.
            self.use_watch_list = False
            log.info("no watch-list from this server, using list+watch", reflector=self.name)
        else:
            log.warning("watch-list failed, listing", reflector=self.name, error=str(failed))

    def _fail(self, error: BaseException) -> None:
        self.last_error = error
        log.warning("list/watch failed", reflector=self.name, error=str(error))
        self._on_state()

    def _list_resource_version(self) -> str:
        if self._rv_unavailable:
            return ""  # a quorum read: the last version is gone from (or not yet in) the server
        return self.last_sync_resource_version or "0"

    def _rewatch_resource_version(self) -> str:
        # A watch-list at "" is a consistent read of the latest state, streamed.
        return "" if self._rv_unavailable else self.last_sync_resource_version

    async def _list(self) -> None:
        resource_version = self._list_resource_version()
        try:
            items, list_rv = await self._list_all(resource_version)
        except ApiError as error:
            if resource_version == "" or not _unavailable(error):
                raise
            self._rv_unavailable = True
            items, list_rv = await self._list_all("")
        listed = len(items)
        self._sink.replace(items, list_rv)
        items.clear()  # the decoded objects are garbage now (unless stored), most in the C heap
        self._synced(listed, list_rv, "list")

    def _initial_synced(self, initial: dict[str, Any], resource_version: str) -> None:
        count = len(initial)
        if self._staging is not None:
            self._staging.replace_encoded(initial, resource_version)
        else:
            self._sink.replace(list(initial.values()), resource_version)
        initial.clear()
        self._synced(count, resource_version, "watch-list")

    def _synced(
        self, count: int, resource_version: str, via: Literal["list", "watch-list"]
    ) -> None:
        if count >= RELEASE_HEAP_AFTER:
            release_heap()
        self.relists += 1
        self.last_sync_resource_version = resource_version
        self.last_sync_via = via
        self._rv_unavailable = False
        self.last_error = None
        self.synced = True
        self._on_state()

    async def _list_all(self, resource_version: str) -> tuple[list[Obj], str]:
        # As client-go: "0" and "" are paginated (the watch cache ignores the limit on "0"; without
        # it the server pages). A versioned read is left whole for the watch cache to serve, no
        # older than the version: a limit there would send it to etcd, unless the server already
        # paged a "0" list (no watch cache for this resource), and then it pages as well.
        paginate = self._paginated or resource_version in ("", "0")
        match = "NotOlderThan" if resource_version not in ("", "0") else None
        items: list[Obj] = []
        token: str | None = None
        while True:
            try:
                page = await self._lw.list(
                    resource_version=resource_version if token is None else None,
                    resource_version_match=match if token is None else None,
                    limit=self._page_size if paginate else None,
                    continue_=token,
                )
            except Gone:
                if token is None:
                    raise
                # The token outlived etcd's history: read the same version again in one answer
                # (client-go's pager, FullListIfExpired), so the result stays one snapshot.
                log.info("continue token expired, listing whole", reflector=self.name)
                page = await self._lw.list(
                    resource_version=resource_version,
                    resource_version_match=match,
                    limit=None,
                    continue_=None,
                )
                return _typed_items(page), str(page["metadata"]["resourceVersion"])
            items += _typed_items(page)
            token = page.get("metadata", {}).get("continue") or None
            if token is None:
                return items, str(page["metadata"]["resourceVersion"])
            if resource_version == "0":
                self._paginated = True

    async def _watch(self, *, watch_list: bool) -> None:
        """Watch (the first stream a watch-list that syncs the sink), re-watching from the last
        seen version, until the history is gone (return: relist).

        Raises:
            _WatchListFailed: the watch-list could not sync the sink.
        """
        self._initial = {} if watch_list else None
        while True:
            if self._initial is not None:
                self._initial = {}  # a new attempt streams everything again
            try:
                await self._watch_once()
            except _RETRIABLE as error:
                # Throttled, or the server is away or dropped the stream: keep our place, re-watch.
                self._fail(error)
                await self._backoffs.wait()
                continue
            except ApiError as error:
                if self._initial is not None:
                    self._watch_list_failed(error)
                    continue
                if isinstance(error, Gone):
                    log.info("watch expired, relisting", reflector=self.name, error=str(error))
                    return
                raise
            if self._initial is not None:
                # The server ended a watch-list without saying the initial state is complete: it
                # ignored sendInitialEvents, and what it sent cannot be told apart from changes.
                self._initial = None
                raise _WatchListFailed(None, refused=True)

    def _watch_list_failed(self, error: ApiError) -> None:
        """Stream again from the latest state (the version asked for is unavailable) or raise."""
        if _unavailable(error) and self._rewatch_resource_version() != "":
            log.info("watch-list version unavailable, streaming the latest", reflector=self.name)
            self._rv_unavailable = True
            return
        self._initial = None
        raise _WatchListFailed(error, refused=isinstance(error, BadRequest | Invalid)) from error

    async def _watch_once(self) -> None:
        timeout = random.randint(self._min_watch_timeout, 2 * self._min_watch_timeout)
        initial = self._initial is not None
        resource_version = (
            self._rewatch_resource_version() if initial else self.last_sync_resource_version
        )
        stream = self._lw.watch(
            resource_version=resource_version,
            timeout_seconds=timeout,
            send_initial_events=initial,
        )
        async with stream as events:
            # One scope whose deadline moves on at most once a second: entering a scope per event
            # is a visible share of a watch-list's sync, which is 10,000 events in a burst.
            with anyio.CancelScope() as scope:
                # time.monotonic per event: anyio.current_time() looks the backend up each call.
                refreshed = time.monotonic()
                scope.deadline = anyio.current_time() + self._inactivity_timeout
                async for event in events:
                    self._handle(event)
                    if time.monotonic() - refreshed >= INACTIVITY_SLACK:
                        refreshed = time.monotonic()
                        scope.deadline = anyio.current_time() + self._inactivity_timeout
                return  # the server ended the watch (its timeout): re-watch
            # Routine for a kind nobody writes: the apiserver's bookmarks do not always come
            # within the timeout. A new watch from the same resourceVersion loses nothing.
            log.debug("watch inactive, reconnecting", reflector=self.name)

    def _handle(self, event: dict[str, Any]) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            raise api_error(int(obj.get("code") or 500), obj)
        if kind not in ("ADDED", "MODIFIED", "DELETED", "BOOKMARK"):
            raise ApiError({"code": 500, "message": f"unknown watch event type {kind!r}"})
        if self._initial is not None:
            self._handle_initial(kind, obj)
            return
        if kind != "BOOKMARK":
            self._sink.apply(kind, obj)
        rv = obj.get("metadata", {}).get("resourceVersion")
        if rv:
            self.last_sync_resource_version = rv

    def _handle_initial(self, kind: str, obj: Obj) -> None:
        # As client-go's temporary store: nothing reaches the sink, and the version stays where
        # it was, until the bookmark says the state is complete (a failed attempt starts over).
        assert self._initial is not None
        metadata = obj.get("metadata") or {}
        if kind == "BOOKMARK":
            if (metadata.get("annotations") or {}).get(INITIAL_EVENTS_END) == "true":
                initial, self._initial = self._initial, None
                self._initial_synced(initial, str(metadata.get("resourceVersion") or ""))
        elif kind == "DELETED":
            self._initial.pop(object_key(obj), None)
        elif self._staging is not None:
            # Staged now, the decoded event is garbage at once: the next one reuses its memory,
            # and what is kept (key, encoding) is laid out densely instead of among 10,000
            # decoded objects freed together at the bookmark.
            self._initial[object_key(obj)] = self._staging.stage(obj)
        else:
            self._initial[object_key(obj)] = obj


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
